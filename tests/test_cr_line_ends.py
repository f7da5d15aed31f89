"""A log whose lines end in ``\\r`` alone (a classic Mac OS tool, a terminal capture that kept
only the carriage returns) is read as if they ended in ``\\n``; ``\\r`` progress frames inside
``\\n`` lines (tqdm) stay frames of their line (``rootrank.ingest.read_blocks``)."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from conftest import ROOT, PipePieces, run_cli

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.ingest import _CrLineEnds, read_blocks

EXAMPLE = ROOT / "examples" / "multi-rank-hang.log"
OOM = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 3 "
    "has a total capacity of 79.14 GiB of which 1.20 GiB is free."
)


def _lines(data: bytes, block_bytes: int = 4 << 20) -> list[tuple[int, str]]:
    out = []
    for block in read_blocks(io.BytesIO(data), block_bytes=block_bytes):
        out += [(block.first_line + i, t) for i, t in enumerate(block.text.split("\n"))]
    return out


@pytest.mark.parametrize("end", [b"", b"\r", b"\n", b"\r\n"], ids=["none", "cr", "lf", "crlf"])
def test_a_cr_only_log_is_diagnosed_as_the_lf_log(tmp_path, end):
    body = EXAMPLE.read_bytes().rstrip(b"\n").replace(b"\n", b"\r") + end
    log = tmp_path / "train.log"
    log.write_bytes(body)
    got = diagnose_paths([str(log)], mask=False)
    want = diagnose_paths([str(EXAMPLE)], mask=False)
    assert got.root_cause is not None and want.root_cause is not None
    assert got.root_cause.signature == "timeout-call-site-divergence"
    assert got.initiating_rank == 2
    assert got.root_cause.evidence[0].line == 19
    assert got.root_cause.evidence[0].text == want.root_cause.evidence[0].text
    assert got.lines_read == want.lines_read == 109


def test_a_cr_only_log_on_stdin_and_gzipped():
    body = EXAMPLE.read_bytes().replace(b"\n", b"\r")
    for data in (body, gzip.compress(body)):
        proc = run_cli("diagnose", "-", "--format", "json", stdin=data)
        assert proc.returncode == 0, proc.stderr
        d = json.loads(proc.stdout)
        assert d["initiating_rank"] == 2
        assert d["root_cause"]["evidence"][0]["line"] == 19
        assert d["lines_read"] == 109


def test_cr_only_lines_keep_their_numbers_across_blocks():
    data = b"".join(b"[rank0]: step %d loss 0.5\r" % i for i in range(200)) + OOM.encode() + b"\r"
    lines = _lines(data, block_bytes=256)
    assert lines[0] == (1, "[rank0]: step 0 loss 0.5")
    assert lines[199] == (200, "[rank0]: step 199 loss 0.5")
    assert lines[-1] == (201, OOM)
    assert [n for n, _ in lines] == list(range(1, 202))


def test_a_crlf_cut_between_two_reads_is_one_line_end():
    rest = io.BufferedReader(PipePieces([b"b\r", b"\nc\r", b"\r", b"d"]))
    stream = io.BufferedReader(_CrLineEnds(b"a\r", rest))
    assert stream.read() == b"a\nb\nc\n\nd"
    stream = io.BufferedReader(_CrLineEnds(b"a\r", io.BufferedReader(PipePieces([]))))
    assert stream.read() == b"a\n"


def test_progress_frames_inside_lf_lines_stay_frames():
    frames = "".join(f"\r{i:3d}%|{'#' * (i // 10):10}| {i}/100" for i in range(101))
    data = f"[rank3]: step 1\n{frames}\r{OOM}\n[rank3]: exiting\n".encode()
    lines = _lines(data)
    assert [n for n, _ in lines] == [1, 2, 3]  # the frames and the error are line 2
    diag = diagnose_text(data.decode(), "train.log", mask=False)
    assert diag.root_cause is not None and diag.root_cause.signature == "cuda-oom"
    assert diag.root_cause.evidence[0].line == 2
    assert diag.initiating_rank == 3
    assert diag.lines_read == 3


def test_a_log_starting_with_frames_then_lf_lines_keeps_frames():
    # tqdm's first bar before the first "\n": one "\n" in the head keeps "\r" a frame
    frames = "".join(f"\r{i:3d}%|{'#' * (i // 10):10}| {i}/100" for i in range(101))
    data = f"{frames}\n[rank0]: step 1\n".encode()
    assert [n for n, _ in _lines(data)] == [1, 2]
