"""``cat train.log | rootrank diagnose`` (no ``-``) says how to read the pipe (trial r15,
finding 7): still a usage error (exit 2, one line), now naming ``-``. With nothing on
standard input (``/dev/null``) the message is argparse's alone."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, run_cli


def test_missing_path_with_a_pipe_on_stdin_names_dash():
    proc = run_cli("diagnose", stdin=b"[rank0]: step 1\n")
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines() == [
        "rootrank: the following arguments are required: PATH; standard input is a pipe or a"
        " file: read it with - (... | rootrank diagnose -) (see 'rootrank diagnose --help')"
    ]
    assert proc.stdout == b""


def test_missing_path_with_nothing_on_stdin_is_the_plain_usage_error():
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "diagnose"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines() == [
        "rootrank: the following arguments are required: PATH (see 'rootrank diagnose --help')"
    ]
