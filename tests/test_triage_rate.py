"""`rootrank triage` prints one rate: the progress line's final ``jobs/s`` and the closing
note's are the same figure (jobs per second of wall time once the workers are up; the
cluster's start-up is said apart)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT
from test_triage import ENV

pytest.importorskip("distributed", reason="rootrank triage needs Dask: pip install '.[fleet]'")


def test_progress_line_and_final_note_give_the_same_rate(tmp_path):
    src = (ROOT / "examples" / "multi-rank-hang.log").read_bytes()
    for i in range(12):
        job = tmp_path / f"job-{i:02d}"
        job.mkdir()
        (job / "train.log").write_bytes(src)
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "triage", str(tmp_path), "--workers", "1"],
        capture_output=True,
        env=ENV,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    bars = re.findall(r"triage: 12/12 jobs · ([\d.]+) jobs/s · ([\d.]+ [kM]B/s)", err)
    note = re.search(
        r"rootrank: 12 jobs in ([\d.]+) s \(([\d.]+) jobs/s, ([\d.]+ [kM]B/s)\) on 1 worker\(s\), "
        r"after ([\d.]+) s starting the workers",
        err,
    )
    assert bars and note, err
    assert bars[-1] == (note[2], note[3])  # one figure, one definition
    seconds, rate = float(note[1]), float(note[2])
    # the rate is the jobs over those seconds (printed to 0.1 s, the rate to 0.1 jobs/s)
    assert 12 / (seconds + 0.05) - 0.05 <= rate <= 12 / max(seconds - 0.05, 1e-3) + 0.05


def test_small_archives_read_in_kb_per_second_not_zero_mb():
    # trial r14: 59 small held-out logs (0.5 MB) in 16.8 s printed "0.0 MB/s"
    from rootrank.triage.progress import format_throughput

    assert format_throughput(519_161, 16.8) == "31 kB/s"
    assert format_throughput(0, 2.0) == "0 kB/s"
    assert format_throughput(98_000_000, 10.0) == "9.8 MB/s"
    assert format_throughput(60_000, 1.0) == "0.1 MB/s"
