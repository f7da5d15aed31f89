"""The live layer's parts: the line splitter, the step reader, the progress tracker (stall
and straggler), and the streaming scan that must give the same diagnosis as ``diagnose``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import CORPUS, ROOT

from rootrank.engine import diagnose_paths
from rootrank.live.feed import LiveScan
from rootrank.live.lines import LineSplitter
from rootrank.live.steps import read_step
from rootrank.live.tracker import MIN_DEFAULT_STALL, ProgressTracker
from rootrank.ranks import RankTagger

# -- lines -------------------------------------------------------------------------------


def test_splitter_gives_the_same_lines_whatever_the_chunks():
    data = b"a\nbb\r\n 10%|#  | 1/10\r 20%|## | 2/10\n\xff\xfe tail\nlast-no-newline"
    rng = random.Random(7)
    for _ in range(50):
        sp = LineSplitter()
        got: list[bytes] = []
        i = 0
        while i < len(data):
            n = rng.randint(1, 6)
            got += sp.feed(data[i : i + n])
            i += n
        rest = sp.flush()
        assert got + [rest] == data.split(b"\n")


def test_splitter_shows_the_progress_bar_frame_being_drawn():
    sp = LineSplitter()
    assert (
        sp.feed(
            b"Epoch 0:  10%|#   | 10/100 [00:01<00:09]\rEpoch 0:  20%|##  | 20/100 [00:02<00:08]\r"
        )
        == []
    )
    assert sp.frame() == b"Epoch 0:  20%|##  | 20/100 [00:02<00:08]"
    assert sp.frame() is None  # once per new frame
    sp.feed(b"Epoch 0:  30%|### | 30/100")  # not finished: no frame yet
    assert sp.frame() is None
    sp.feed(b" [00:03<00:07]\r")
    assert sp.frame() == b"Epoch 0:  30%|### | 30/100 [00:03<00:07]"


def test_splitter_memory_is_bounded_by_one_line():
    from rootrank.ingest import MAX_LINE_BYTES
    from rootrank.live.lines import Piece, joined

    sp = LineSplitter()
    got: list[bytes] = []
    for _ in range(40):
        got += sp.feed(b"x" * 65536)
        assert len(sp._partial) <= MAX_LINE_BYTES  # handed out in pieces as it grows
    got += sp.feed(b"yyy\nnext\n")
    # a 2.5 MiB line: whole, in pieces of at most 1 MiB (the scan's rule), then the next line
    assert all(isinstance(p, Piece) for p in got[:-1]) and got[-1] == b"next"
    assert [p.offset for p in got[:-1]] == [0, MAX_LINE_BYTES, 2 * MAX_LINE_BYTES]
    assert [p.last for p in got[:-1]] == [False, False, True]
    assert b"".join(got[:-1]) == b"x" * (40 * 65536) + b"yyy"
    assert joined(got) == b"x" * (40 * 65536) + b"yyy\nnext\n"  # written back unchanged
    bars = LineSplitter()
    for i in range(20000):
        bars.feed(f"\r{i}/20000 [".encode())
    assert len(bars._partial) < 70_000  # only the last frames are kept
    assert bars.feed(b"\n")[0].endswith(b"19999/20000 [")


# -- steps -------------------------------------------------------------------------------

STEP_LINES = [
    # (line, step, total, rank): the step as rootrank.progress reads it, the rank as the live layer does
    (" 45%|████▌     | 45/100 [00:05<00:06,  8.1it/s]", 45, 100, None),
    (
        "Epoch 2:  45%|████▌     | 45/100 [00:05<00:06, 8.1it/s, v_num=0, train_loss=1.2]",
        245,
        100,
        None,
    ),
    (
        " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 1.2",
        10,
        100,
        None,
    ),
    ("[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]", 10, None, 0),
    ("[rank3]: step:  10  loss:  7.9375  memory:  0.43GiB(1.37%)  tps: 2,019", 10, None, 3),
    ("2: Step 10/500 loss 1.2", 10, 500, 2),
    ("[default1]:step 7 loss 0.1", 7, None, 1),
    ("[default0]:[rank12]:iter 40 loss 3.1", 40, None, 12),
    ("rank 5: global_step=300 lr=1e-4", 300, None, 5),
    ("[1,3]<stdout>: step 8 loss 0.2", 8, None, 3),  # Open MPI --tag-output, through RankTagger
]


@pytest.mark.parametrize("line,step,total,rank", STEP_LINES)
def test_steps_from_what_frameworks_print(line, step, total, rank):
    got = read_step(line, RankTagger())
    assert got is not None
    assert (got.step, got.total, got.rank) == (step, total, rank)


@pytest.mark.parametrize(
    "line",
    [
        "optimizer.step() was skipped",
        "lr_scheduler.step()",
        "{'loss': 1.2, 'epoch': 0.5}",
        "Stepping into 2 GPUs",
        "NCCL INFO Channel 00/02 : 0 1",
        "Evaluating:  10%|####   | 512/5000 [08:32<01:01:52, 1.21it/s]",
    ],
)
def test_lines_that_are_not_steps(line):
    assert read_step(line, RankTagger()) is None


def test_rank_comes_from_the_file_path():
    tagger = RankTagger(path="logs/attempt_0/3/stdout.log", path_rank=3, path_rank_is_local=True)
    got = read_step("step 12 loss 0.5", tagger)
    assert got is not None and (got.step, got.rank) == (12, 3)


# -- tracker -----------------------------------------------------------------------------


def _train(tracker: ProgressTracker, ranks: range, steps: range, t0: float, dt: float) -> float:
    t = t0
    for s in steps:
        for r in ranks:
            tracker.update(r, s, None, None, t, "log", s)
        t += dt
    return t


def test_stall_names_the_rank_that_is_behind_once():
    tr = ProgressTracker(stall=10)
    t = _train(tr, range(4), range(5), 1000.0, 1.0)
    for r in (0, 1, 3):  # rank 2 never reaches step 5
        tr.update(r, 5, None, None, t, "log", 9)
    assert tr.check(t + 9) == []
    verdicts = tr.check(t + 10.5)
    assert [v.kind for v in verdicts] == ["stall"]
    v = verdicts[0]
    assert v.suspect_rank == 2
    assert "rank 2 is behind" in v.why and "step 4" in v.why
    assert {r["rank"]: r["step"] for r in v.ranks} == {0: 5, 1: 5, 2: 4, 3: 5}
    assert v.stalled == [0, 1, 2, 3]
    assert tr.check(t + 30) == []  # once per episode
    tr.update(2, 5, None, None, t + 31, "log", 10)  # rank 2 moves; the others are still stuck
    assert tr.check(t + 32) == []
    for r in range(4):
        tr.update(r, 6, None, None, t + 33, "log", 11)
    assert tr.check(t + 34) == []  # progress resumed: the episode is over
    assert [v.kind for v in tr.check(t + 44)] == ["stall"]  # a new one


def test_stall_names_the_rank_that_stopped_first():
    tr = ProgressTracker(stall=10)
    t = _train(tr, range(3), range(5), 0.0, 1.0)
    tr.update(0, 5, None, None, t + 4, "log", 1)
    tr.update(2, 5, None, None, t + 4, "log", 1)
    tr.update(1, 5, None, None, t, "log", 1)  # rank 1 reached step 5 four seconds earlier
    (v,) = tr.check(t + 10.5)
    assert v.suspect_rank == 1 and "stopped first" in v.why


def test_stall_without_a_suspect_when_every_rank_stopped_together():
    tr = ProgressTracker(stall=5)
    t = _train(tr, range(3), range(6), 0.0, 1.0)
    (v,) = tr.check(t + 6)
    assert v.suspect_rank is None and "same step" in v.why


def test_stall_of_a_job_that_names_no_rank_speaks_of_no_rank():
    # `rootrank run --stall 3 -- python3 hang.py`: one process prints "step 1" and hangs.
    tr = ProgressTracker(stall=3)
    tr.update(None, 1, None, None, 0.0, "log", 1)
    (v,) = tr.check(3.5)
    assert v.why == "no progress for 4 s (threshold 3 s)"
    named = ProgressTracker(stall=3)
    _train(named, range(2), range(3), 0.0, 1.0)
    (v,) = named.check(6.5)
    assert v.why.startswith("no progress on any rank for 4 s (threshold 3 s)")


def test_default_threshold_follows_the_step_interval_and_is_never_short():
    tr = ProgressTracker()
    _train(tr, range(2), range(10), 0.0, 1.0)
    assert tr.threshold() == MIN_DEFAULT_STALL
    slow = ProgressTracker()
    _train(slow, range(2), range(10), 0.0, 60.0)
    assert slow.threshold() == 600.0


def test_a_finished_bar_is_not_a_stall():
    tr = ProgressTracker(stall=5)
    tr.update(None, 100, 100, None, 0.0, "log", 1)
    assert tr.check(100.0) == []


def test_straggler_reported_once():
    tr = ProgressTracker(stall=1000)
    t = 0.0
    for s in range(12):
        for r in (0, 1, 3):
            tr.update(r, s, None, None, t + s * 1.0, "log", s)
        tr.update(2, s, None, None, t + s * 3.0, "log", s)  # three times slower
    verdicts = tr.check(40.0)
    assert [(v.kind, v.suspect_rank) for v in verdicts] == [("straggler", 2)]
    assert "3.00 s per step" in verdicts[0].why
    assert tr.check(41.0) == []


# -- the streaming scan gives the post-mortem diagnosis ----------------------------------


def _stream(path: Path, seed: int, max_chunk: int = 4096) -> dict:
    scan = LiveScan(ProgressTracker())
    src = scan.open(str(path))
    sp = LineSplitter()
    data = path.read_bytes()
    rng = random.Random(seed)
    i = 0
    while i < len(data):
        n = rng.randint(1, max_chunk)
        scan.feed(src, sp.feed(data[i : i + n]))
        i += n
        if rng.random() < 0.1:
            scan.snapshot()  # a mid-stream diagnosis must not disturb the scan
    rest = sp.flush()
    if rest is not None:
        scan.feed(src, [rest])
    return scan.finish().to_dict()


def test_an_error_at_the_end_of_a_20_mb_line_is_found_live_as_by_diagnose(tmp_path):
    """The live scan reads a line over 1 MiB whole, in pieces, under its own number (the
    scan's rule, rootrank.ingest): the error 20 MB into line 2 is found at line 2."""
    log = tmp_path / "long.log"
    log.write_bytes(
        b"[rank0]: step 1 loss 2.0\n"
        + b"x" * 20_000_000
        + b" RuntimeError: CUDA error: an illegal memory access was encountered\n"
        + b"[rank0]: step 2 loss 1.9\n"
    )
    want = diagnose_paths([str(log)]).to_dict()
    assert want["root_cause"]["signature"] == "cuda-illegal-memory-access"
    assert want["root_cause"]["evidence"][0]["line"] == 2
    got = _stream(log, 3, max_chunk=1 << 20)
    assert got["root_cause"]["signature"] == "cuda-illegal-memory-access"
    assert got["root_cause"]["evidence"][0]["line"] == 2
    # the column in the whole line (the pieces' offsets add up as the scan's do)
    assert got["root_cause"]["evidence"][0]["column_start"] == 20_000_027
    assert want["root_cause"]["evidence"][0]["column_start"] == 20_000_027
    assert got["lines_read"] == want["lines_read"] == 3


def _fixtures() -> list[Path]:
    logs = sorted((ROOT / "signatures").glob("*/*.positive.log"))
    return logs[::6] + sorted((ROOT / "tests" / "healthy").glob("*.log"))[:6]


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.name)
def test_streaming_scan_equals_diagnose(path):
    want = diagnose_paths([str(path)]).to_dict()
    assert _stream(path, 1) == want


def test_streaming_scan_equals_diagnose_on_the_corpus():
    logs = sorted(CORPUS.glob("*/input.log"))
    if not logs:
        pytest.skip(f"no shared corpus at {CORPUS}")
    differ = []
    for i, path in enumerate(logs):
        want = diagnose_paths([str(path)]).to_dict()
        if _stream(path, i) != want:
            differ.append(path.parent.name)
    assert differ == [], differ
    assert len(logs) >= 90


OOM_LINES = [
    b"[rank0]: step 3 loss 1.0",
    b"[rank1]: step 3 loss 1.0",
    b"[rank1]: Traceback (most recent call last):",
    b'[rank1]:   File "train.py", line 3, in <module>',
    b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    b"capacity of 79.15 GiB of which 1.2 GiB is free.",
]


def test_snapshot_names_the_failure_before_the_stream_ends(tmp_path):
    import time

    path = tmp_path / "out.log"
    path.write_bytes(b"\n".join(OOM_LINES) + b"\n")
    scan = LiveScan(ProgressTracker())
    src = scan.open(str(path))
    scan.feed(src, OOM_LINES[:2])
    scan.feed(src, OOM_LINES[2:])
    for _ in range(200):  # the scan thread takes the lines in its own time
        diag = scan.snapshot()
        if diag.root_cause:
            break
        time.sleep(0.01)
    assert diag.root_cause.failure_class == "cuda-oom"
    assert diag.initiating_rank == 1
    with scan.lock:
        assert {r["rank"]: r["step"] for r in scan.tracker.snapshot()} == {0: 3, 1: 3}
    assert scan.finish().to_dict() == diagnose_paths([str(path)]).to_dict()


def _cadence_run(tr: ProgressTracker, steps: int, slow_rank: int | None = None) -> list:
    """Rank 0 prints every step, ranks 1-3 every 10th (``if step % 10 == 0``), 0.5 s a step;
    ``slow_rank`` takes 3 s a step. Checks every second; returns the verdicts."""
    verdicts = []
    events = []
    for r in range(4):
        per = 3.0 if r == slow_rank else 0.5
        for s in range(steps):
            if r == 0 or s % 10 == 0:
                events.append((s * per, r, s))
    events.sort()
    now = 0.0
    for t, r, s in events:
        while now < t:
            verdicts += tr.check(now)
            now += 1.0
        tr.update(r, s, None, None, t, "log", s + 1)
    return verdicts


def test_ranks_printing_every_tenth_step_are_no_stragglers():
    """Trial r16 finding 3: ranks 1-3 print every 10th step, rank 0 every step; rank 1 showing
    step 10 while rank 0 is at 17 is level with it, and 5 s between its lines is 0.5 s a step."""
    tr = ProgressTracker(stall=1000)
    assert _cadence_run(tr, 60) == []
    assert tr.ranks[1].stride() == 10 and tr.ranks[0].stride() == 1
    assert tr.ranks[1].median_step_seconds() == 0.5


def test_a_rank_printing_every_tenth_step_is_still_a_straggler_when_slow():
    tr = ProgressTracker(stall=1000)
    verdicts = _cadence_run(tr, 60, slow_rank=2)
    assert [(v.kind, v.suspect_rank) for v in verdicts] == [("straggler", 2)]
    assert (
        "steps behind the leading rank" in verdicts[0].why or "3.00 s per step" in verdicts[0].why
    )


def test_a_stall_says_so_when_every_rank_has_stopped_after_the_first():
    """Trial r16 finding 10: rank 2 stops at step 9, the others a second later at step 10; the
    stall names rank 2 first, then says once that every rank has stopped (no new dump)."""
    tr = ProgressTracker(stall=5)
    t = _train(tr, range(4), range(10), 0.0, 1.0)  # steps 0-9, the last at t - 1
    for r in (0, 1, 3):
        tr.update(r, 10, None, None, t, "log", 20)
    (first,) = tr.check(t + 4.5)  # rank 2 is 5.5 s quiet, the others 4.5 s
    assert first.stalled == [2] and first.why.startswith("no progress on rank 2 for 6 s")
    assert not first.follow_up
    (later,) = tr.check(t + 5.5)
    assert later.kind == "stall" and later.follow_up and later.suspect_rank == 2
    assert later.stalled == [0, 1, 2, 3]
    assert later.why.startswith("no progress on any rank for 6 s now: every rank has stopped; ")
    assert "rank 2 is behind at step 9" in later.why
    assert tr.check(t + 30) == []


def test_two_ranks_unbuffered_writes_glued_on_one_line_are_two_steps(tmp_path):
    """``[rank2] step 6/12 loss 1.6776[rank1] step 6/12 loss 1.6776``: two processes writing
    unbuffered (PYTHONUNBUFFERED=1) to one terminal glue their lines (round 17's trial: rank 1
    then looked behind at step 5 and a stall named it). Each part is its rank's step
    (rootrank.ingest.split_glued), as the post-mortem scan reads it."""
    import time

    lines = [
        b"[rank0] step 5/12 loss 1.9",
        b"[rank1] step 5/12 loss 1.9",
        b"[rank2] step 5/12 loss 1.9",
        b"[rank0] step 6/12 loss 1.6776",
        b"[rank2] step 6/12 loss 1.6776[rank1] step 6/12 loss 1.6776",
    ]
    path = tmp_path / "out.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    scan = LiveScan(ProgressTracker())
    src = scan.open(str(path))
    scan.feed(src, lines)
    for _ in range(200):
        with scan.lock:
            steps = {r["rank"]: r["step"] for r in scan.tracker.snapshot()}
        if steps == {0: 6, 1: 6, 2: 6}:
            break
        time.sleep(0.01)
    assert steps == {0: 6, 1: 6, 2: 6}
    scan.finish()
