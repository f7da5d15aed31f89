"""`rootrank run` on a command that prints a line over 1 MiB: the live scan reads it whole,
in 1 MiB pieces, by the scan's own rule (as `rootrank diagnose` does), so an error 20 MB into
the line is found; `--log` saves the line unchanged (the pieces are not split by newlines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")

ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_run_finds_an_error_at_the_end_of_a_20_mb_line_and_saves_it_whole(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(
            f"""
            import sys
            out = sys.stdout.buffer
            out.write(b"[rank0]: step 1 loss 2.0\\n")
            for _ in range(20):
                out.write(b"x" * 1_000_000)
                out.flush()
            out.write(b" {ERROR}\\n")
            out.write(b"[rank0]: step 2 loss 1.9\\n")
            sys.exit(1)
            """
        )
    )
    saved = tmp_path / "saved.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rootrank",
            "run",
            "--format",
            "json",
            "--log",
            str(saved),
            "--",
            sys.executable,
            str(job),
        ],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    events = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    final = next(e for e in events if e.get("event") == "failure" and e.get("final"))
    root = final["diagnosis"]["root_cause"]
    assert root["signature"] == "cuda-illegal-memory-access"
    assert root["evidence"][0]["line"] == 2  # the long line's own number
    assert root["evidence"][0]["column_start"] == 20_000_027  # "an illegal memory access"
    data = saved.read_bytes()
    assert data == (
        b"[rank0]: step 1 loss 2.0\n"
        + b"x" * 20_000_000
        + f" {ERROR}\n".encode()
        + b"[rank0]: step 2 loss 1.9\n"
    )
    # and `rootrank diagnose` of the saved log says the same
    from rootrank.engine import diagnose_paths

    want = diagnose_paths([str(saved)]).to_dict()["root_cause"]["evidence"][0]
    assert (want["line"], want["column_start"]) == (2, 20_000_027)
