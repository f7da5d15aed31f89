"""``rootrank run -- python -c CODE`` (trial r21 finding 10, r20b finding 11): the command
has no script, and the verification said ``python <train.py>``; it is the command as typed
(shell-quoted), as for any launch ``rootrank run`` started itself."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from rootrank.scan import LaunchFacts

SERVER = str(Path(__file__).resolve().parents[1] / "server")
CODE = "d={'a': 1}; print(d['b'])"


def test_python_code_is_a_command_with_no_script():
    facts = LaunchFacts()
    assert facts.ran(shlex.join(["python3", "-X", "faulthandler", "-c", CODE]))
    assert facts.launched_here and facts.script is None and "python" in facts.launchers
    # a script's own -c option is not python's
    other = LaunchFacts()
    assert other.ran("python -u train.py -c cfg.yaml")
    assert other.script == "train.py"


def test_rootrank_run_verifies_with_the_command_as_typed(tmp_path):
    # --no-mask: the interpreter's path is the checkout's (/work/<folder>/... is masked as a
    # user's folder); this test is about the command's form, not masking
    argv = [sys.executable, "-c", CODE]
    env = {**os.environ, "PYTHONPATH": SERVER, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--no-mask", "-f", "json", "--", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    # the events are JSON lines on stderr, after the command's own output
    events = [json.loads(x) for x in out.stderr.splitlines() if x.startswith('{"event"')]
    failure = next(e for e in events if e["event"] == "failure")
    rc = failure["diagnosis"]["root_cause"]
    assert rc["failure_class"] == "user-code-exception"
    verify = rc["verify"]
    assert verify.startswith(shlex.join(argv) + "  # "), verify
    assert "<train.py>" not in verify
