"""faulthandler's watchdog dumps of every rank, one of them stopped elsewhere (round 17
trial finding 3).

Each rank's ``faulthandler.dump_traceback_later`` fires ("Timeout (0:00:08)!" and its
"Thread 0x... (most recent call first):" stack). Ranks 0 and 2 wait in ``all_reduce`` at
train.py:18; rank 1 sits in ``load_batch`` at train.py:13. Before: the reader kept one stack
per stream (each new dump replaced the one before), the report quoted whichever came last
(train.py:18, a victim's wait, in the unprefixed log), the fix said the stack "ends in a
torch.distributed collective", and the initiating rank was unknown. Now the stalled stack's
frame is the root's location and its fix's line (rootrank.entry.frames.odd_watchdog_stack),
and its rank the initiating rank when the log names it (torchrun's ``[default1]:`` local
rank, mapped by its failure summary: rootrank.analysis.initiator.odd_watchdog_rank).

Fixtures: tests/data/watchdog_stacks/ (README.md there: real runs of train.py there).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.tracebacks import TracebackReader

DATA = Path(__file__).parent / "data" / "watchdog_stacks"


def test_each_dump_of_an_unprefixed_log_is_its_own_stack() -> None:
    reader = TracebackReader()
    stacks = []
    lines = (DATA / "plain-one-stalled.log").read_text().splitlines()
    for n, line in enumerate(lines, 1):
        reader.feed(line, n)
        got = reader.take_fault_stack()
        if got is not None:
            stacks.append(got)
    got = reader.take_fault_stack(end=True)
    if got is not None:
        stacks.append(got)
    inner = [(line, [f.line for f in frames if f.user][-1]) for line, frames in stacks]
    assert inner == [(12, 13), (17, 18), (24, 18)]


def test_the_stalled_rank_and_its_line_are_named_under_local_rank_prefixes() -> None:
    d = diagnose_paths([str(DATA / "tee-rank1-stalled.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "faulthandler-watchdog-timeout"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "odd_watchdog_rank"
    assert rc.user_frame is not None
    assert (rc.user_frame.file, rc.user_frame.line, rc.user_frame.func) == (
        "/home/user/proj/train.py",
        13,
        "load_batch",
    )
    step = rc.fix.steps[0]
    assert "train.py:13 (in load_batch) is where this process sat" in step
    assert "waited at train.py:18 (in train_step)" in step
    assert "ends in a torch.distributed collective" not in step


def test_the_stalled_line_is_quoted_when_no_line_names_a_rank() -> None:
    d = diagnose_paths([str(DATA / "plain-one-stalled.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "faulthandler-watchdog-timeout"
    assert d.initiating_rank is None  # three unprefixed dumps: whose is which, the log does not say
    assert rc.user_frame is not None and (rc.user_frame.line, rc.user_frame.func) == (
        13,
        "load_batch",
    )
    assert "train.py:13 (in load_batch) is where this process sat" in rc.fix.steps[0]
