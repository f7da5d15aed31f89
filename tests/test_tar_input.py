"""A tar archive given as a log (trial r16 finding 1): its headers are mostly NUL padding (which
the binary test forgives as a crashed node's zero-filled block) and its members are text, so it
was read as one log: 20 jobs made one confident diagnosis from one of them, rc 0. ``diagnose``
and ``triage`` now refuse it with exit code 2 and one line saying to extract it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from rootrank.ingest import is_tar_header

HANG = ROOT / "examples" / "multi-rank-hang.log"
SAYS = "a tar archive, not a text log: extract it (tar xf) and pass its folder"


def _archive(tmp_path: Path, name: str, mode: str, fmt: int = tarfile.GNU_FORMAT) -> Path:
    jobs = tmp_path / "jobs"
    for j in range(3):
        (jobs / f"job-{j}").mkdir(parents=True)
        (jobs / f"job-{j}" / "train.log").write_bytes(HANG.read_bytes())
    out = tmp_path / name
    with tarfile.open(out, mode, format=fmt) as tar:
        tar.add(jobs, arcname="jobs")
    return out


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_a_tar_header_is_told_from_text(tmp_path: Path, fmt: int) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        info = tarfile.TarInfo("train.log")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"hi\n"))
    assert is_tar_header(buf.getvalue()[:512])
    # text with "ustar" where a header has it, but no valid checksum, is text
    text = (b"x" * 257 + b"ustar  loss 0.1\n").ljust(600, b"y")
    assert not is_tar_header(text)
    assert not is_tar_header(HANG.read_bytes())


@pytest.mark.parametrize(
    ("name", "mode"), [("a.tar", "w"), ("a.tar.gz", "w:gz"), ("a.tgz", "w:gz")]
)
def test_diagnose_refuses_a_tar_archive(tmp_path: Path, name: str, mode: str) -> None:
    path = _archive(tmp_path, name, mode)
    proc = run_cli("diagnose", str(path))
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode().strip() == f"rootrank: {path}: {SAYS}"
    piped = run_cli("diagnose", "-", stdin=path.read_bytes())
    assert piped.returncode == 2
    assert SAYS in piped.stderr.decode()


def test_triage_refuses_a_tar_archive(tmp_path: Path) -> None:
    path = _archive(tmp_path, "jobs.tar.gz", "w:gz")
    proc = run_cli("triage", str(path), timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip().splitlines()[-1] == f"rootrank: {path}: {SAYS}"
