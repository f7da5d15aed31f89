"""The scan as one ordered stream of typed events (rootrank.analysis.events): kinds, ranks,
pids, who sent a signal, times and order, on logs in the shapes torchrun, torchelastic and srun
really print."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from rootrank.analysis.events import (
    last_progress,
    launcher_exits,
    of_kind,
    signals_from_outside,
)
from rootrank.analysis.prepare import Context, prepare
from rootrank.engine import default_library, diagnose_paths, matcher_for
from rootrank.ingest import text_blocks
from rootrank.scan import Scanner

HERE = Path(__file__).resolve().parent / "events"
#: torchrun --max-restarts=1, four workers on one node: attempt 1 ends on rank 1's ValueError,
#: the agent restarts the group (line 21), and in attempt 2 rank 2 (pid 5202) is SIGKILLed by
#: no one the agent knows (its closing signals go to 5200, 5201, 5203).
RESTART_KILL = HERE / "torchrun-restart-then-outside-kill.log"


def _context(sources: list[tuple[str, str]]) -> Context:
    library = default_library()
    scanner = Scanner(matcher_for(library))
    for name, text in sources:
        scanner.scan_source(name, text_blocks(text))
    return prepare(scanner.state, library)


def _clock(month: int, day: int, h: int, m: int, s: int, us: int = 0) -> float:
    """The scan's clock: seconds since 2000-01-01 (rootrank.ranks.parse_time)."""
    return (dt.datetime(2000, month, day, h, m, s, us) - dt.datetime(2000, 1, 1)).total_seconds()


@pytest.fixture(scope="module")
def restart_kill() -> Context:
    return _context([(str(RESTART_KILL), RESTART_KILL.read_text())])


def test_the_stream_is_in_log_order_with_contiguous_orders(restart_kill):
    events = restart_kill.events
    assert [e.order for e in events] == list(range(len(events)))
    assert [e.line for e in events] == sorted(e.line for e in events)
    assert restart_kill.events is events  # built once per analysis
    assert [e.kind for e in events[:4]] == ["signal", "signal", "signal", "attempt"]
    assert [e.kind for e in events[-2:]] == ["summary", "finding"]


def test_the_agents_closing_signals_carry_pid_sender_time_and_the_summarys_rank(restart_kill):
    signals = of_kind(restart_kill.events, "signal")
    assert [(e.line, e.pid, e.rank) for e in signals] == [
        (17, 5100, None),  # attempt 1: the summary that maps pids to ranks is attempt 2's
        (18, 5102, None),
        (19, 5103, None),
        (28, 5200, 0),
        (29, 5201, 1),
        (30, 5203, 3),
    ]
    assert {e.sender for e in signals} == {"agent"}
    assert {(e.code, e.signal) for e in signals} == {(15, "SIGTERM")}
    assert signals[3].time == _clock(12, 1, 16, 58, 41, 120000)
    assert signals[3].local_rank == 0


def test_the_restart_is_an_attempt_boundary_after_the_first_failure(restart_kill):
    (attempt,) = of_kind(restart_kill.events, "attempt")
    assert attempt.line == 21  # the line after the agent's first "failed (exitcode: 1)"
    assert attempt.path == str(RESTART_KILL)
    first_after = [e for e in restart_kill.events if e.order > attempt.order]
    assert {e.kind for e in first_after} >= {"progress", "signal", "summary", "finding"}


def test_the_summary_entry_the_agent_never_signalled_was_killed_from_outside(restart_kill):
    summary = of_kind(restart_kill.events, "summary")
    assert [(e.rank, e.pid, e.code, e.sender) for e in summary] == [
        (0, 5200, -15, "agent"),
        (1, 5201, -15, "agent"),
        (3, 5203, -15, "agent"),
        (2, 5202, -9, "outside"),
    ]
    assert {e.host for e in summary} == {"gpu-node-07"}
    assert summary[-1].time == _clock(12, 1, 16, 58, 41)
    (outside,) = signals_from_outside(restart_kill.events)
    assert (outside.rank, outside.pid, outside.signal, outside.line) == (2, 5202, "SIGKILL", 65)


def test_the_agents_sigkill_line_is_rank_2s_finding_through_its_pid(restart_kill):
    killed = [
        e
        for e in of_kind(restart_kill.events, "finding")
        if e.ref.signature == "worker-sigkill-exit"
    ]
    assert [(e.rank, e.local_rank, e.pid, e.line) for e in killed] == [(2, 2, 5202, 69)]
    assert killed[0].time == _clock(12, 1, 16, 58, 41, 402000)
    (exc,) = of_kind(restart_kill.events, "exception")
    assert exc.ref.exc.type.endswith("ChildFailedError") and exc.rank is None
    assert exc.line == 37


def test_progress_is_each_ranks_last_step_and_rank_2_is_behind(restart_kill):
    last = last_progress(restart_kill.events)
    assert {r: (p.step, p.line) for r, p in last.items()} == {
        0: (2, 25),
        1: (2, 26),
        2: (1, 23),
        3: (2, 27),
    }
    steps = {e.rank: e.step for e in of_kind(restart_kill.events, "progress")}
    assert steps == {0: 2, 1: 2, 2: 1, 3: 2}


def test_the_diagnosis_names_the_rank_killed_from_outside():
    d = diagnose_paths([str(RESTART_KILL)], mask=False)
    assert d.root_cause.signature == "worker-sigkill-exit"
    assert d.initiating_rank == 2
    assert "signal_not_sent_by_agent" in d.initiator.agreeing
    assert d.attempts == 2


def test_without_closing_signals_the_log_cannot_tell_who_sent_a_signal():
    text = "\n".join(
        line for line in RESTART_KILL.read_text().splitlines() if "closing signal" not in line
    )
    ctx = _context([("node.log", text + "\n")])
    assert of_kind(ctx.events, "signal") == []
    summary = of_kind(ctx.events, "summary")
    assert [(e.rank, e.code, e.sender) for e in summary] == [
        (0, -15, None),
        (1, -15, None),
        (3, -15, None),
        (2, -9, None),
    ]
    assert signals_from_outside(ctx.events) == []


def test_sruns_task_list_is_one_exit_event_per_task():
    ctx = _context(
        [
            (
                "slurm-4242.out",
                "srun: error: gpu-node-03: tasks 2-3,5: Exited with exit code 1\n"
                "srun: error: gpu-node-01: tasks 0-1,4: Terminated\n",
            )
        ]
    )
    exits = of_kind(ctx.events, "exit")
    assert [(e.rank, e.code, e.line, e.sender) for e in exits] == [
        (2, 1, 1, None),
        (3, 1, 1, None),
        (5, 1, 1, None),
    ]
    assert {e.ref.signature for e in exits} == {"elastic-child-failed"}
    finding = of_kind(ctx.events, "finding")[0]
    assert finding.order < exits[0].order  # the finding before the exits read from its line
    assert launcher_exits(ctx.events) == {2: 1, 3: 1, 5: 1}


RANK0 = """\
[2026-12-01 10:00:01] step 10 loss 2.41
[2026-12-01 10:00:09] step 11 loss 2.40
Traceback (most recent call last):
  File "/home/user/project/train.py", line 5, in <module>
RuntimeError: CUDA error: an illegal memory access was encountered
"""
RANK1 = """\
[2026-12-01 10:00:02] step 10 loss 2.42
[2026-12-01 10:00:05] step 11 loss 2.39
Traceback (most recent call last):
  File "/home/user/project/train.py", line 9, in <module>
ValueError: shard-00007.csv record 3: expected 16 features, got 15
"""


def test_sources_merge_by_time_and_keep_their_own_line_order():
    ctx = _context([("logs/rank0.log", RANK0), ("logs/rank1.log", RANK1)])
    got = [(e.kind, e.rank, e.line, e.time) for e in ctx.events]
    assert got == [
        ("progress", 1, 2, _clock(12, 1, 10, 0, 5)),
        ("finding", 1, 5, _clock(12, 1, 10, 0, 5)),
        ("exception", 1, 5, _clock(12, 1, 10, 0, 5)),
        ("progress", 0, 2, _clock(12, 1, 10, 0, 9)),
        ("finding", 0, 5, _clock(12, 1, 10, 0, 9)),
        ("exception", 0, 5, _clock(12, 1, 10, 0, 9)),
    ]
    assert [e.path for e in ctx.events] == ["logs/rank1.log"] * 3 + ["logs/rank0.log"] * 3
    # scanned first, but rank 1's exception (10:00:05) came before rank 0's (10:00:09)
    exceptions = of_kind(ctx.events, "exception")
    assert [e.ref.exc.type for e in exceptions] == ["ValueError", "RuntimeError"]
