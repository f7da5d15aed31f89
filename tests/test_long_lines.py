"""A line of 20 MB (megabytes of ``\\r`` progress frames, a minified JSON dump) is searched
whole, in pieces (``rootrank.ingest``): an error at its end is found on its own line number,
the lines after it keep their numbers, and no piece of the line is lost or read twice."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import run_cli

from rootrank.ingest import MAX_LINE_BYTES, logical_lines, read_blocks

LINE_BYTES = 20 * 1024 * 1024
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 3 has a "
    "total capacity of 79.14 GiB of which 1.20 GiB is free."
)
FRAME = "Epoch 3:  41%|████      | 4100/10000 [12:01<17:19,  5.67it/s, loss=0.231]"


def _progress_line() -> str:
    """20 MB of tqdm frames joined by \\r, the error as the last frame."""
    n = LINE_BYTES // (len(FRAME.encode()) + 1) + 1
    return "\r".join([FRAME] * n) + "\r[rank3]: " + OOM


def _json_line() -> str:
    """A minified JSON dump of 20 MB (no \\r, no space) with a traceback string at its end."""
    rec = json.dumps({"step": 1, "loss": 0.5}, separators=(",", ":"))
    body = "[" + ",".join([rec] * (LINE_BYTES // (len(rec) + 1))) + "]"
    tb = (
        "Traceback (most recent call last):\\n"
        '  File \\"train.py\\", line 10, in <module>\\n'
        "    x = torch.empty(1 << 40, device='cuda')\\n" + OOM + "\\n"
    )
    return '{"metrics":' + body + ',"error":"' + tb + '"}'


@pytest.mark.parametrize("make", [_progress_line, _json_line], ids=["progress-frames", "json"])
def test_an_error_at_the_end_of_a_20_mb_line_is_found(tmp_path: Path, make):
    line = make()
    assert len(line.encode()) > LINE_BYTES
    log = tmp_path / "train.log"
    log.write_text(
        "[rank3]: step 1 loss 0.5\n" + line + "\n[rank0]: Traceback (most recent call last):\n"
    )
    proc = run_cli("diagnose", str(log), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    diag = json.loads(proc.stdout)
    root = diag["root_cause"]
    assert root["signature"] == "cuda-oom"
    assert root["evidence"][0]["line"] == 2  # the long line's own number
    evidence = root["evidence"][0]
    assert "Tried to allocate 20.00 GiB" in evidence["text"]
    # columns index the whole physical line (as an editor shows it), not the piece
    start, end = evidence["column_start"], evidence["column_end"]
    assert len(line) - len(OOM) - 100 < start < end <= len(line)  # at the end of the line
    assert "Tried to allocate 20.00 GiB" in line[start:end] and line[start:end] in OOM
    assert not [w for w in diag["warnings"] if "line 2" in w]  # nothing was left unread


@pytest.mark.parametrize("make", [_progress_line, _json_line], ids=["progress-frames", "json"])
def test_the_pieces_of_a_long_line_cover_it_once_and_keep_numbering(make):
    line = make()
    data = ("first\n" + line + "\nthird\n").encode()
    blocks = list(read_blocks(io.BytesIO(data), block_bytes=4 << 20, sniff=False))
    # the long line (number 2) ends the first block; its other pieces continue it
    assert blocks[0].first_line == 1 and not blocks[0].continues
    pieces = [b for b in blocks if b.continues]
    assert pieces and {b.first_line for b in pieces} == {2}
    assert all(len(b.text.encode()) <= MAX_LINE_BYTES for b in pieces)
    after = blocks[blocks.index(pieces[-1]) + 1 :]
    assert [(b.first_line, b.text) for b in after] == [(3, "third")]
    # every byte of the line is in exactly one piece, in order
    head = blocks[0].text.split("\n", 1)[1]
    assert head + "".join(b.text for b in pieces) == line


def test_a_long_line_inside_a_block_is_split_not_cut():
    """A 3 MB line that a block holds whole: every piece is a logical line of number 7."""
    line = _json_line()[-3 * MAX_LINE_BYTES :]
    logical = logical_lines(7, line)
    assert len(logical) >= 3 and {r.number for r in logical} == {7}
    pieces: list[str] = []  # each piece's raw once (a piece may hold several logical lines)
    for r in logical:
        if not pieces or r.raw is not pieces[-1]:
            pieces.append(r.raw)
    assert "".join(pieces) == line and all(len(p) <= MAX_LINE_BYTES for p in pieces)
    assert any(OOM in r.text for r in logical)


@pytest.mark.parametrize(
    "head",
    ["x" * 20_000, "ab " * 400_000, "x" * (MAX_LINE_BYTES - 10)],
    ids=["20-kb-run", "1-mb-of-words", "error-across-a-piece-boundary"],
)
def test_an_error_deep_inside_a_line_is_found_at_its_column(tmp_path: Path, head: str):
    # within one piece, past the regex's window: the matcher opens a window at the literal
    line = head + " [rank3]: " + OOM
    log = tmp_path / "train.log"
    log.write_text("[rank3]: step 1 loss 0.5\n" + line + "\n")
    proc = run_cli("diagnose", str(log), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    evidence = json.loads(proc.stdout)["root_cause"]["evidence"][0]
    assert evidence["line"] == 2
    start, end = evidence["column_start"], evidence["column_end"]
    assert "Tried to allocate 20.00 GiB" in line[start:end]


ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _timeouts(ranks: range) -> str:
    """ProcessGroupNCCL's watchdog timeout (ProcessGroupNCCL.cpp, ``WorkNCCL::checkTimeout``)
    on the ranks that waited for the faulting one."""
    return "".join(
        f"[rank{r}]:[E1203 09:10:00.000000 {400 + r} ProcessGroupNCCL.cpp:632] [Rank {r}]"
        " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=50, OpType=ALLREDUCE,"
        " NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing"
        " out.\n"
        for r in ranks
    )


def _long_rank_line(body: str) -> str:
    """``[rank3]: `` once at the start, then ``body`` repeated past 3 MB, then the error: the
    launcher prefixes a line once, whatever its length."""
    return "[rank3]: " + body * (3 * MAX_LINE_BYTES // len(body) + 1) + " " + ILLEGAL


@pytest.mark.parametrize(
    "body",
    ["x", "  7%|#####| 7/100 [00:01<00:00]\r"],
    ids=["one-word", "progress-frames"],
)
def test_every_piece_of_a_long_line_belongs_to_the_rank_of_its_prefix(body: str):
    """The error at the end of a 3 MB ``[rank3]:`` line is rank 3's in every piece the line is
    read in (rootrank.scan.Scanner._line_rank), whether the pieces come as blocks of their own
    (a file, standard input) or inside one block."""
    from rootrank.engine import diagnose_blocks, diagnose_text
    from rootrank.ingest import Block

    steps = "".join(f"[rank{r}]: step {s}/1000\n" for s in range(1, 50) for r in range(4))
    head = steps + _long_rank_line(body) + "\n"
    log = head + _timeouts(range(3))
    line = head.count("\n")
    d = diagnose_text(log, "long.log", mask=False)
    assert d.root_cause.signature == "cuda-illegal-memory-access"
    assert d.root_cause.rank == 3 and d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == line and d.root_cause.evidence[0].rank == 3

    block = Block(log, log.encode().lower(), 1)  # the long line inside one block
    d = diagnose_blocks([("long.log", [block])], mask=False)
    assert d.root_cause.signature == "cuda-illegal-memory-access"
    assert d.root_cause.rank == 3 and d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == line
