"""A log that ends inside a traceback (truncated, or the process killed while printing it),
with no exception line anywhere: a failure was under way, so it is no healthy run. It is
shown as unclassified (exit 3) with the user's innermost frame, a reasoning line and a
warning; no rank is named (round-12 trial b, finding 2: exit 1, "No known failure found")."""

from __future__ import annotations

import json

from conftest import run_cli

CUT = "\n".join(
    [
        "step 10 loss 2.31",
        "Traceback (most recent call last):",
        '  File "/home/u/proj/train.py", line 41, in <module>',
        "    main()",
        '  File "/home/u/proj/train.py", line 33, in main',
        "    out = model(batch)",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775,'
        " in _call_impl",
        "    return forward_call(*args, **kwargs)",
    ]
)


def test_a_log_cut_inside_a_traceback_is_an_unclassified_failure(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(CUT)
    proc = run_cli("diagnose", str(log), "--format", "json")
    assert proc.returncode == 3, proc.stderr.decode()
    d = json.loads(proc.stdout)
    assert d["root_cause"] is None and d["initiating_rank"] is None
    assert d["unclassified"]["title"] == (
        "The log ends inside a traceback: its exception line is cut off"
        " (in your code at /home/<user>/proj/train.py:33)"  # masked as shown
    )
    assert d["unclassified"]["evidence"][0]["line"] == 8
    assert any("the log ends inside a traceback" in w for w in d["warnings"])


def test_a_complete_traceback_is_not_called_cut(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(CUT + "\nRuntimeError: boom\nstep 11 loss 2.30\n")
    d = json.loads(run_cli("diagnose", str(log), "--format", "json").stdout)
    assert not any("ends inside a traceback" in w for w in d["warnings"])
