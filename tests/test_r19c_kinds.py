"""Round-19c kinds of reasoning (held-out set /work/notes/heldout-r19c, now a development set).

The fixtures in ``tests/r19c/`` are real runs on this machine (torch 2.13 CPU, gloo,
torchrun, 2026-12-04) unless a test says otherwise; a ``-tail`` fixture is a contiguous cut
of the ``-whole`` one beside it (one rank's traceback only, as a paste in an issue holds).

B. c10d's monitoredBarrier raises ``[Rank 0]: Ranks 2 failed to pass monitoredBarrier`` with
   the plural "Ranks" even for a single missing rank (wait_all_ranks, and always under the
   TORCH_DISTRIBUTED_DEBUG=DETAIL ProcessGroupWrapper): the listed rank is the initiator, the
   printing rank 0 only the reporter. Script: 3 ranks, DETAIL, rank 2 sleeps 10 s before
   ``all_gather_into_tensor`` with a 4 s process-group timeout.

C. The reporting rank's own traceback after its barrier report ("Rank 1 successfully reached
   monitoredBarrier, but received errors ... from rank 0", then the same rank's ``[... TP1]
   Scheduler hit an exception: Traceback ...`` as SGLang logs it) is the consequence on that
   rank, not a second failure competing with the named rank 0. Script: 2 ranks, rank 0
   SIGKILLs itself while "loading", rank 1 waits in monitored_barrier inside a scheduler
   wrapper that logs ``traceback.format_exc()``; ``-head`` is the first 8 lines of its output
   after torchrun's banner (lines 5-12, the traceback cut inside torch's frame).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

_DATA = Path(__file__).parent / "r19c"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# B. "Ranks N" with one rank names N


def test_plural_ranks_with_one_rank_names_that_rank_not_the_reporter() -> None:
    d = diagnose_text(_read("09-ranks-2-monitoredbarrier-rank0-tail.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "monitored-barrier-rank-failed"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 19
    assert "Ranks 2 failed to pass monitoredBarrier" in d.root_cause.evidence[0].text


def test_whole_detail_run_names_the_late_rank() -> None:
    d = diagnose_text(_read("09-detail-allgather-rank2-late-whole.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2


# C. the reporter's follow-on traceback


def test_reporters_own_traceback_after_its_report_leaves_the_named_rank() -> None:
    d = diagnose_text(
        _read("10-reporter-rank1-scheduler-traceback-head.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "monitored-barrier-rank-failed"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank == 0


def test_reporter_whole_run_still_names_rank_zero() -> None:
    d = diagnose_text(
        _read("10-reporter-rank1-scheduler-traceback-whole.log"), "run.log", mask=False
    )
    assert d.initiating_rank == 0
