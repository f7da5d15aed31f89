"""Held-out r23b kinds (the set's MISSES.md), each on the fixtures written from real runs
beside their signatures: a stop after the output went silent ends a hang whose cause is the
rank that logged a handled error and went on; a signal's name says who sent it (SIGALRM: the
process's own timer); a worker's SIGTERM right after it said it was stopping a child, with
the agent never signalling its pid, is its own process-group kill; a view of a file's bytes
that comes out short is a cut file, and the earlier appended attempt's kill says why; DDP's
check against process 0 reported alike by every other rank makes rank 0 the odd one, and
the fix never compares a rank with itself."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry import reference_rank

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_stop_after_silence_is_the_handled_error_rank_one_step_behind():
    # rank 2 caught a bad sample at step 9 and went on; progress to step 36, 14 s of silence,
    # then `timeout`'s SIGTERM to the agent (before: preemption-sigterm, no rank)
    d = _diag("collective/handled-error-skipped-collective.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 9
    assert _variant(d) == "silent-until-stopped"
    assert d.root_cause.captures["silent"]
    # the printed command is used once, not its wrapper twice
    assert d.root_cause.verify.startswith("timeout 40 torchrun --nproc-per-node=3 train.py  #")


def test_stop_while_progress_still_prints_stays_a_stop_from_outside():
    d = _diag("collective/handled-error-skipped-collective.near-miss-2.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.initiating_rank is None


def test_sigalrm_is_the_workers_own_timer_on_the_named_process():
    # mp.spawn: "process 2 terminated with signal SIGALRM" (before: elastic-child-failed, no
    # rank, and a torchrun rerun for a python train.py job)
    d = _diag("process/worker-own-timer-signal.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-own-timer-signal"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 19
    assert "signal.alarm" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith("python train.py  #")


def test_sigterm_after_the_rank_said_it_was_killing_its_child_is_its_own():
    d = _diag("process/worker-killed-own-process-group.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-killed-own-process-group"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 8
    assert "killing it" in d.root_cause.captures["last_line"]
    assert "start_new_session=True" in d.root_cause.fix.steps[0]


def test_sigterm_of_a_rank_whose_last_line_is_ordinary_stays_an_outside_stop():
    # rank 0 printed "killing it" but survived (its pid got the agent's SIGTERM); rank 1,
    # killed from another shell, last printed "tokenizer server ready"
    d = _diag("process/worker-killed-own-process-group.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-sigterm-exit"
    assert d.initiating_rank == 1


def test_short_view_of_a_cache_after_the_earlier_attempt_killed_its_writer():
    d = _diag("data/file-read-shorter-than-expected.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 98
    assert d.root_cause.captures["expected"] == "256000"
    assert d.root_cause.captures["percent"] == "50"
    assert "encoded 2000/4000 rows" in d.root_cause.captures["earlier_kill"]
    assert _variant(d) == "killed-mid-write"
    assert "os.replace" in " ".join(d.root_cause.fix.steps)


def test_view_larger_than_its_shape_stays_a_shape_error():
    d = _diag("data/file-read-shorter-than-expected.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shape-mismatch"


def test_every_other_rank_against_process_zero_makes_rank_zero_the_odd_one():
    # ranks 1 and 2 both report params[2] [3, 32] against process 0 (before: rank 1, the
    # earliest reporter)
    d = _diag("collective/ddp-param-shape-mismatch.positive-2.log")
    assert d.root_cause is not None
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "against_reference"
    steps = " ".join(d.root_cause.fix.steps)
    assert "rank 0 and rank 1" in steps
    assert "rank 0 and rank 0" not in steps


def test_reference_rank_is_never_the_initiating_rank():
    assert reference_rank("0", 2, 2) == 0
    assert reference_rank("0", 0, 3) == 3
    assert reference_rank("0", 0, None) == 1
    assert reference_rank(None, 4, 4) == 0
