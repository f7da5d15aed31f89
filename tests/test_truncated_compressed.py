"""A compressed log that ends before its end-of-stream marker (``gzip -c x | head -c N``, a
copy stopped midway) is diagnosed from the lines it holds, with a warning in the report and
one note on stderr (round-12 trial, item 6: no warning at all). A whole file, or several
whole members, gets none."""

from __future__ import annotations

import gzip
import json
import lzma

import pytest
from conftest import ROOT, run_cli

from rootrank.engine import diagnose_paths
from rootrank.ingest import cut_short, open_log

#: 109 lines; rank 2's call-site divergence at line 19 (tests/test_triage_ingest.py).
EXAMPLE = ROOT / "examples" / "multi-rank-hang.log"


def _warning(name: str, what: str, lines: int) -> str:
    return (
        f"{name}: the {what} data ends early (cut short before its end marker): only its"
        f" first {lines} line(s) were read, and the log may go on past them"
    )


@pytest.mark.parametrize("suffix, compress", [("gz", gzip.compress), ("xz", lzma.compress)])
def test_a_file_cut_before_its_end_marker_is_diagnosed_with_a_warning(tmp_path, suffix, compress):
    packed = compress(EXAMPLE.read_bytes())
    # gzip: the 8-byte trailer (CRC, size) lost, every line decompresses; xz: the footer and
    # index lost, and with them the end of the block
    cut = tmp_path / f"cut.log.{suffix}"
    cut.write_bytes(packed[:-8] if suffix == "gz" else packed[: len(packed) * 2 // 3])
    with open_log(cut) as fh:
        text = fh.read()
        assert cut_short(fh) == ("gzip" if suffix == "gz" else "xz")
    lines = text.count(b"\n") + (0 if text.endswith(b"\n") else 1)  # a cut last line counts
    assert (lines == 109) if suffix == "gz" else (19 < lines < 109)

    proc = run_cli("diagnose", str(cut), "--format", "json", "--no-mask")
    assert proc.returncode == 0, proc.stderr.decode()
    d = json.loads(proc.stdout)
    note = _warning(str(cut), "gzip" if suffix == "gz" else "xz", lines)
    assert d["warnings"] == [note]
    assert proc.stderr.decode() == f"rootrank: warning: {note}\n"
    assert d["lines_read"] == lines
    assert d["root_cause"]["signature"] == "timeout-call-site-divergence"
    assert d["root_cause"]["evidence"][0]["line"] == 19


def test_a_cut_stream_on_standard_input_is_named_as_stdin(tmp_path):
    packed = gzip.compress(EXAMPLE.read_bytes())
    proc = run_cli("diagnose", "-", "--format", "json", stdin=packed[:-8])
    assert proc.returncode == 0, proc.stderr.decode()
    note = _warning("<stdin>", "gzip", 109)
    assert json.loads(proc.stdout)["warnings"] == [note]
    assert proc.stderr.decode() == f"rootrank: warning: {note}\n"


def test_whole_files_and_joined_members_get_no_warning(tmp_path):
    whole = tmp_path / "whole.log.gz"
    whole.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    joined = tmp_path / "joined.log.xz"
    joined.write_bytes(
        lzma.compress(b"[rank0]: step 1\n" * 50) + lzma.compress(EXAMPLE.read_bytes())
    )
    for path in (whole, joined):
        with open_log(path) as fh:
            fh.read()
            assert cut_short(fh) is None
        assert diagnose_paths([str(path)], mask=False).warnings == []
    proc = run_cli("diagnose", str(whole))
    assert proc.returncode == 0 and proc.stderr == b""


def test_a_cut_file_in_a_folder_is_named_in_the_warnings(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    packed = gzip.compress(EXAMPLE.read_bytes())
    (logs / "slurm-7.out.gz").write_bytes(packed[:-8])
    d = diagnose_paths([str(logs)], mask=False)
    assert d.warnings == [_warning(str(logs / "slurm-7.out.gz"), "gzip", 109)]
    assert d.root_cause is not None and d.initiating_rank == 2


def _bz2(data: bytes) -> bytes:
    import bz2

    return bz2.compress(data)


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard", reason="zstd needs the fleet extra")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("what, suffix, compress", [("bzip2", "bz2", _bz2), ("zstd", "zst", _zstd)])
def test_bzip2_and_zstd_are_read_and_a_cut_one_is_named(tmp_path, what, suffix, compress):
    # a log compressed in two parts (pbzip2/pzstd, or a file appended to), the second cut:
    # the first part's 60 lines are read, rank 2's divergence at line 19 among them; both
    # compressions decode whole blocks only, so the cut second part gives none
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    first, rest = b"".join(lines[:60]), b"".join(lines[60:])
    whole = tmp_path / f"whole.log.{suffix}"
    whole.write_bytes(compress(first) + compress(rest))
    d = diagnose_paths([str(whole)], mask=False)
    assert d.warnings == [] and d.lines_read == 109
    assert d.root_cause is not None and d.root_cause.signature == "timeout-call-site-divergence"
    assert d.initiating_rank == 2

    packed = compress(rest)
    cut = tmp_path / f"cut.log.{suffix}"
    cut.write_bytes(compress(first) + packed[: len(packed) * 2 // 3])
    with open_log(cut) as fh:
        assert fh.read() == first
        assert cut_short(fh) == what
    proc = run_cli("diagnose", str(cut), "--format", "json", "--no-mask")
    assert proc.returncode == 0, proc.stderr.decode()
    got = json.loads(proc.stdout)
    note = _warning(str(cut), what, 60)
    assert got["warnings"] == [note]
    assert proc.stderr.decode() == f"rootrank: warning: {note}\n"
    assert got["root_cause"]["evidence"][0]["line"] == 19 and got["initiating_rank"] == 2


def test_text_that_starts_with_bzh_is_no_bzip2(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"BZh9 is a bzip2 header; this is a text log\n" + EXAMPLE.read_bytes())
    d = diagnose_paths([str(log)], mask=False)
    assert d.lines_read == 110 and d.initiating_rank == 2
