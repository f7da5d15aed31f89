"""Fixes that would work (issue 15, round 23): the verification is the user's own launch as
the log shows it, the blanks the log fills are filled, and the headline fix is an action.

Fixtures (``tests/r23_fix1/``) are written from what the tools print:

- ``torchrun-node1-master-addr.log``: a real run (torch 2.13 CPU, gloo), two torchrun agents
  on one machine as two nodes (``LOGLEVEL=INFO torchrun --nproc-per-node=2 --nnodes=2
  --node-rank=1 --master-addr=127.0.0.1 --master-port=29631 train_cast.py``), rank 2 raising;
  the agent's config table prints ``rdzv_endpoint : 127.0.0.1:29631``, ``master_addr=``
  and ``master_port=``.
- ``pals-mpiexec-watchdog.log``: NCCL's watchdog lines, then HPE Cray PALS mpiexec's own
  report of each rank it lost (``<host>: rank 1 died from signal 6 and dumped core``).
- ``sglang-two-node-server.log``: SGLang's server arguments line (``server_args=ServerArgs(
  model_path=..., tp_size=16, nnodes=2, ..., dist_init_addr='10.20.0.11:5000')``) and a
  scheduler's "could finish the model loading" ValueError (sglang/srt/model_executor/
  model_runner.py).
- ``openrlhf-ray-actor-watchdog.log``: an OpenRLHF PPO actor's watchdog line under Ray's
  ``(ActorModelRayActor pid=N)`` prefix, and the driver's ``ActorDiedError``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rootrank.engine import diagnose_text
from rootrank.headline import ACTION_VERBS, headline
from rootrank.scan import LaunchFacts

HERE = Path(__file__).resolve().parent / "r23_fix1"
SIGNATURES = Path(__file__).resolve().parent.parent / "signatures"


def _rc(name: str):  # type: ignore[no-untyped-def]
    return diagnose_text((HERE / name).read_text(), name).root_cause


# --- kind 1: the verification is the user's own launch -------------------------------------


def test_a_pals_mpiexec_job_is_verified_with_mpiexec_ranks_and_ranks_per_node():
    rc = _rc("pals-mpiexec-watchdog.log")
    assert rc.signature == "nccl-watchdog-timeout"
    # 8 ranks (NCCL's nRanks), 4 per node (localRanks): PALS's own form, not torchrun
    assert "mpiexec -n 8 --ppn 4 python" in rc.verify
    assert "torchrun" not in rc.verify


def test_a_rank_line_without_a_host_first_is_no_pals_banner():
    facts = LaunchFacts()
    facts.read("worker rank 3 died from signal 9", 1)
    facts.read("x1000c0s1b0n0.hsn.cm.example.org: rank 3 exited with code 1 (see log)", 2)
    assert facts.launchers == {"pals"}
    other = LaunchFacts()
    other.read("worker rank 3 died from signal 9", 1)
    assert "pals" not in other.launchers


def test_an_sglang_server_is_verified_by_starting_the_server_on_every_node():
    rc = _rc("sglang-two-node-server.log")
    head, _, comment = rc.verify.partition("  # ")
    # the model and TP size its arguments printed, the node count, the rendezvous port
    assert head.startswith(
        "python -m sglang.launch_server --model-path /models/Qwen2.5-72B-Instruct --tp 16"
        " --nnodes 2 --node-rank <node rank> --dist-init-addr "
    )
    assert head.endswith(":5000")
    assert "on every node, the server prints 'The server is fired up and ready to roll!'" in comment
    assert "sgl.Engine" not in rc.verify and "<model>" not in rc.verify


def test_a_script_calling_the_offline_sglang_engine_keeps_the_engine_check():
    # the driver's own traceback runs through Engine.__init__ (sglang/srt/entrypoints/engine.py)
    log = (HERE / "sglang-two-node-server.log").read_text() + (
        "Traceback (most recent call last):\n"
        '  File "/home/u/run_batch.py", line 9, in <module>\n'
        "    llm = sgl.Engine(model_path=args.model, tp_size=16)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/engine.py",'
        " line 121, in __init__\n"
        "    tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/engine.py",'
        " line 830, in _launch_subprocesses\n"
        "    raise RuntimeError(\n"
        "RuntimeError: Initialization failed. Please see the error messages above.\n"
    )
    rc = diagnose_text(log).root_cause
    assert "sglang.launch_server" not in rc.verify
    assert "sgl.Engine(" in rc.verify


def test_an_openrlhf_ray_ppo_job_is_verified_with_its_own_entry_module():
    rc = _rc("openrlhf-ray-actor-watchdog.log")
    assert rc.verify is not None
    assert "python3 -m openrlhf.cli.train_ppo_ray <your arguments>" in rc.verify
    assert "torchrun" not in rc.verify


# --- kind 2: the rendezvous blanks the log fills --------------------------------------------


def test_the_rendezvous_the_agent_printed_fills_the_multi_node_verify():
    rc = _rc("torchrun-node1-master-addr.log")
    assert rc.signature == "user-code-exception" and rc.rank == 2
    assert "--rdzv-endpoint=127.0.0.1:29631 train_cast.py" in rc.verify
    assert "<master host>" not in rc.verify and "<port>" not in rc.verify


@pytest.mark.parametrize(
    ("lines", "want"),
    [
        (["  rdzv_endpoint            : node07:29500"], ("node07", "29500")),
        (
            ['dist.init_process_group("nccl", init_method="tcp://10.1.2.3:23456")'],
            ("10.1.2.3", "23456"),
        ),
        (["export MASTER_PORT=29411", "export MASTER_ADDR=gpu-a01"], ("gpu-a01", "29411")),
        (["--master_addr gpu-a01 --master_port=29411"], ("gpu-a01", "29411")),
        (["MASTER_ADDR=gpu-a01"], ("gpu-a01", None)),
        (["master_addr: None", "rdzv_endpoint : "], (None, None)),
    ],
)
def test_the_rendezvous_is_read_from_each_way_a_launch_prints_it(lines, want):
    facts = LaunchFacts()
    for n, line in enumerate(lines, 1):
        facts.read(line, n)
    assert facts.rendezvous() == want


def test_a_silent_log_keeps_the_rendezvous_blank():
    text = (HERE / "torchrun-node1-master-addr.log").read_text()
    silent = "\n".join(
        line
        for line in text.splitlines()
        if not re.search(r"master_(?:addr|port)|rdzv_endpoint", line)
    )
    rc = diagnose_text(silent).root_cause
    assert "--rdzv-endpoint=<master host>:<port>" in rc.verify


# --- kind 3: the headline fix is an action -------------------------------------------------

_CONDITION = re.compile(r"^(?:If|When|Unless|In case|Whether)\b")


def _first_steps():  # type: ignore[no-untyped-def]
    for path in sorted(SIGNATURES.glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text())
        fix = doc.get("fix") or {}
        if fix.get("steps"):
            yield f"{path.stem}", str(fix["steps"][0])
        for variant in fix.get("variants") or []:
            if variant.get("steps"):
                yield f"{path.stem}/{variant.get('id')}", str(variant["steps"][0])


def test_no_signature_opens_its_fix_with_a_condition_or_a_dangling_colon():
    bad = [
        f"{name}: {step[:80]}"
        for name, step in _first_steps()
        if _CONDITION.match(step) or step.rstrip().endswith(":")
    ]
    assert bad == []


def test_a_headline_never_ends_announcing_a_list():
    step = (
        "Read the first 'NCCL WARN' line before this error (rerun with NCCL_DEBUG=WARN if the log"
        " has none): it decides which of these it is, and one check tells each apart:"
    )
    assert headline(step) == (
        "Read the first 'NCCL WARN' line before this error (rerun with NCCL_DEBUG=WARN if the"
        " log has none): it decides which of these it is."
    )


def test_a_headline_keeps_a_shell_loop_whole_and_leads_with_the_action():
    rc = _rc("openrlhf-ray-actor-watchdog.log")
    fix = headline(rc.fix.steps[0])
    assert fix.split(" ", 1)[0] in ACTION_VERBS
    # the ``;`` inside the backticked loop is no clause end
    assert fix.count("`") % 2 == 0


def test_a_cause_clause_is_not_kept_without_its_action():
    rc = _rc("sglang-two-node-server.log")
    fix = headline(rc.fix.steps[0])
    assert fix.startswith("Open the output of the other ranks of the group")


def test_a_conditional_action_is_turned_to_lead_with_the_action():
    step = (
        "Python imported megatron and found no core in it: the package is installed or on the"
        " path, and the file core.py (or the subpackage) is missing from it, so there is nothing"
        " named megatron.core to pip install. One check tells the two cases apart: `python -c"
        ' "import megatron; print(megatron.__file__)"` in the job\'s environment. If it prints a'
        " path in your own project (not site-packages), the file is missing from your tree (not"
        " committed, not copied to this machine, renamed, another branch): restore it, or remove"
        " the import of core and every config entry that names its classes."
    )
    fix = headline(step)
    # the ``print`` inside the backticked command is no action of the user's
    assert fix.startswith("Restore it, or remove the import of core")
    assert ", if it prints a path in your own project" in fix


def test_pals_ranks_per_node_stay_a_blank_when_the_log_shows_one_node_only():
    text = (HERE / "pals-mpiexec-watchdog.log").read_text()
    # one node's lines, NCCL's "Init COMPLETE" line with the world size and no node count
    one_node = "\n".join(
        [
            "x1000c0s1b0n0:40213:40392 [2] NCCL INFO comm 0x55d1c0a2e200 rank 2 nranks 8 cudaDev 2"
            " nvmlDev 2 busId 85000 commId 0xfa38415269cf0cf7 - Init COMPLETE",
            *(line for line in text.splitlines() if "s1b1n0" not in line and "nNodes" not in line),
        ]
    )
    rc = diagnose_text(one_node).root_cause
    assert "mpiexec -n 8 --ppn <ranks per node> python" in rc.verify
