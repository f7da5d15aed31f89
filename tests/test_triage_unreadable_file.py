"""A triage job with one file that cannot be read (binary data beside a compressed log) is
diagnosed from the rest, as ``rootrank diagnose`` diagnoses the same paths, and names the
skipped file in its warnings and in the summary (round-12 trial, item 3: the whole job was
"unreadable")."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from conftest import ROOT, run_cli

from rootrank.triage.discover import discover
from rootrank.triage.summary import Summary
from rootrank.triage.work import Options, diagnose_job

pytest.importorskip("distributed", reason="rootrank triage needs Dask: pip install '.[fleet]'")

#: A cuda-oom log (rank 5 raises OutOfMemoryError), the signature's own fixture.
OOM = ROOT / "signatures" / "memory" / "cuda-oom.positive.log"


@pytest.fixture
def arch(tmp_path):
    job = tmp_path / "arch2" / "jobA"
    job.mkdir(parents=True)
    (job / "secret.log.gz").write_bytes(gzip.compress(OOM.read_bytes()))
    # bytes no text log holds (NUL, high bytes, no line breaks): check_log calls it binary
    (job / "junk.log").write_bytes(bytes(random.Random(7).randrange(256) for _ in range(3000)))
    return tmp_path / "arch2"


def test_the_job_is_diagnosed_from_its_readable_file_as_diagnose_does(arch):
    (job,) = list(discover([str(arch)]))
    assert job.kind == "folder" and len(job.paths) == 2
    got = diagnose_job(job, Options(mask="off"))
    junk = str(arch / "jobA" / "junk.log")
    assert got["error"] is None
    assert got["record"]["status"] == "failed"
    assert got["record"]["signature"] == "cuda-oom"
    assert got["record"]["not_read"] == [f"{junk}: binary data, not a text log"]
    assert f"not read: {junk}: binary data, not a text log" in got["diagnosis"]["warnings"]
    proc = run_cli("diagnose", *job.paths, "--format", "json", "--no-mask")
    assert proc.returncode == 0
    assert proc.stderr.decode() == f"rootrank: {junk}: binary data, not a text log\n"
    want = json.loads(proc.stdout)
    assert got["diagnosis"] == want
    assert want["root_cause"]["signature"] == "cuda-oom" and want["initiating_rank"] == 5


def test_a_job_of_binary_files_only_is_still_unreadable(tmp_path):
    job_dir = tmp_path / "arch" / "jobB"
    job_dir.mkdir(parents=True)
    for name in ("a.log", "b.log"):
        (job_dir / name).write_bytes(bytes(range(256)) * 8)
    (job,) = list(discover([str(tmp_path / "arch")]))
    got = diagnose_job(job, Options(mask="off"))
    assert got["diagnosis"] is None and got["record"]["status"] == "error"
    assert got["error"] == f"{job_dir / 'a.log'}: binary data, not a text log (and 1 more)"


def test_the_summary_and_the_text_report_name_the_skipped_file(arch):
    (job,) = list(discover([str(arch)]))
    summary = Summary()
    summary.add(diagnose_job(job, Options(mask="off"))["record"])
    s = summary.to_dict()
    junk = str(arch / "jobA" / "junk.log")
    assert (s["failed"], s["errors"], s["files_not_read"]) == (1, 0, 1)
    assert s["not_read_files"] == [
        {"job": "arch2/jobA", "error": f"{junk}: binary data, not a text log"}
    ]
    proc = run_cli("triage", str(arch), "-q", "--workers", "1", "--no-mask")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "1 jobs (3.7 kB): 1 failed with a known root cause" in out
    assert "0 unreadable" in out
    assert (
        f"Files skipped / read in part in jobs that were diagnosed (1)\n  arch2/jobA: {junk}:"
        " binary data,"
        " not a text log\n" in out
    )


def test_a_compressed_file_cut_short_is_named_with_the_skipped_ones(tmp_path):
    # one section for a file skipped and a file read in part (trial r12b #9: the .gz cut short
    # was in the JSON's warnings only)
    job = tmp_path / "arch3" / "j2"
    job.mkdir(parents=True)
    cut = job / "trunc.log.gz"
    whole = gzip.compress(OOM.read_bytes())
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    (found,) = list(discover([str(tmp_path / "arch3")]))
    got = diagnose_job(found, Options(mask="off"))
    assert got["record"]["status"] == "failed" and got["record"]["signature"] == "cuda-oom"
    (note,) = got["record"]["not_read"]
    assert note.startswith(f"{cut}: the gzip data ends early (cut short before its end marker)")
    proc = run_cli("triage", str(tmp_path / "arch3"), "-q", "--workers", "1", "--no-mask")
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    head = lines.index("Files skipped / read in part in jobs that were diagnosed (1)")
    assert lines[head + 1] == f"  arch3/j2: {note}"
