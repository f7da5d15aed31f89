"""A run stopped by SIGINT (Ctrl-C, or torchrun forwarding it) ends on KeyboardInterrupt: the
job was stopped, nothing in the code at that line failed (trial r14, finding 2)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

FIXTURES = ROOT / "signatures" / "process"


def _diagnose(path: Path) -> tuple[int, dict]:
    proc = run_cli("diagnose", "--format", "json", str(path))
    return proc.returncode, json.loads(proc.stdout)


def test_one_process_interrupted_while_it_waited_is_a_stop_not_a_code_bug():
    # a real python3 run stopped with SIGINT during time.sleep (Python 3.11's traceback)
    rc, diag = _diagnose(FIXTURES / "keyboard-interrupt.positive.log")
    assert rc == 0
    root = diag["root_cause"]
    assert (root["signature"], root["failure_class"]) == (
        "keyboard-interrupt",
        "preemption-sigterm",
    )
    assert root["evidence"][0]["line"] == 10
    assert diag["initiating_rank"] is None
    first = root["fix"]["steps"][0]
    assert first.startswith(
        "train.py:4 (in <module>), where the failing process was when SIGINT stopped it:"
        " Nothing failed by itself"
    )
    assert "raised KeyboardInterrupt" not in first


def test_every_rank_of_a_log_dir_interrupted_names_no_rank():
    # the three workers' stderr.log of a real torchrun --log-dir run (torch 2.13, gloo) hung
    # at step 6 and stopped with Ctrl-C: torchrun forwarded SIGINT to every worker
    rc, diag = _diagnose(FIXTURES / "keyboard-interrupt.positive-2.log")
    assert rc == 0
    assert diag["root_cause"]["signature"] == "keyboard-interrupt"
    assert diag["initiating_rank"] is None
    assert "Ranks 0-2 all report it" in " ".join(diag["reasoning"])


def test_the_agent_that_got_the_ctrl_c_tells_it_first(tmp_path: Path):
    # torchrun's console in a real run: the agent logs the signal, then forwards it
    log = tmp_path / "console.log"
    log.write_text(
        "W1203 14:14:27.952000 13138 torch/distributed/elastic/agent/server/api.py:753]"
        " Received 2 death signal, shutting down workers\n"
        "W1203 14:14:27.953000 13138 torch/distributed/elastic/multiprocessing/api.py:1028]"
        " Sending process 14001 closing signal SIGINT\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/project/tr.py", line 13, in <module>\n'
        "[rank1]:     time.sleep(3600)\n"
        "[rank1]: KeyboardInterrupt\n",
        encoding="utf-8",
    )
    rc, diag = _diagnose(log)
    assert rc == 0
    assert diag["root_cause"]["signature"] == "agent-received-signal"
    assert diag["root_cause"]["evidence"][0]["line"] == 1
    collateral = {c["signature"]: c["ranks"] for c in diag["collateral"]}
    assert collateral.get("keyboard-interrupt") == [1]


def test_a_caught_interrupt_and_a_handler_line_are_no_failure():
    rc, diag = _diagnose(FIXTURES / "keyboard-interrupt.near-miss.log")
    assert rc == 1
    assert diag["root_cause"] is None
