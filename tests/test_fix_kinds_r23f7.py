"""Held-out r23e kinds (the set's MISSES.md), each on fixtures written from real runs beside
their signatures: a wrapper's clock stamps measure the silence before a time limit's stop,
and the rank missing from the last round of progress began the hang (the wrapper's exit code
is not a rank's); a user signal (SIGUSR1/SIGUSR2) is the script's own; in gloo's size-check
abort the rank that logged a skip before it began the desync, not the aborting receiver, and
sizes many times apart are two different collectives (collective-desync);
Optimizer.load_state_dict's param-group check is a checkpoint mismatch on the rank whose
per-rank file is stale."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.stamped_stall import _clock
from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def test_time_limit_after_stamped_silence_names_the_rank_missing_from_the_last_round():
    # ranks 0 and 1 printed iter 10, rank 2's last is iter 9; 21 s of stamped silence, then
    # `timeout`'s SIGTERM to the agent and "status 124" (before: preemption-sigterm)
    d = _diag("training/progress-stalled.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "progress-stalled"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 33
    assert d.root_cause.captures["silent"] == "21 s"


def test_stop_while_stamped_progress_still_prints_stays_a_stop_from_outside():
    d = _diag("training/progress-stalled.near-miss-2.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.initiating_rank is None


def test_clock_stamp_reader():
    assert _clock("10:33:51 rank=2 iter 9") == 10 * 3600 + 33 * 60 + 51
    assert _clock("[2026-01-02 07:00:05] x") == 7 * 3600 + 5
    assert _clock("rank=2 iter 9 at 10:33:51") is None
    assert _clock("99:00:00 x") is None


def test_sigusr2_without_a_handler_is_the_scripts_own_signal():
    d = _diag("process/worker-own-user-signal.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-own-user-signal"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 38
    # an mp.spawn script: the verify is its own launch, not torchrun
    assert d.root_cause.verify.startswith("python train.py  #")
    assert "torchrun" not in " ".join(d.root_cause.fix.steps)


def test_handler_on_every_rank_is_no_signal_death():
    d = _diag("process/worker-own-user-signal.near-miss.log")
    assert d.root_cause is None or d.root_cause.signature != "worker-own-user-signal"


def test_size_abort_names_the_rank_that_skipped_not_the_aborting_receiver():
    # rank 2 logs "accuracy skipped" and leaves out the metric all_reduce; rank 1 aborts
    # (before: collective-shape-mismatch on rank 1, from the elastic summary's SIGABRT)
    d = _diag("collective/handled-error-skipped-collective.positive-3.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 10
    assert d.root_cause.captures["waiters"] == "0, 1"


def test_sizes_many_times_apart_are_two_different_collectives():
    d = _diag("collective/gloo-size-collectives-apart.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-size-collectives-apart"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 2


def test_sizes_close_stay_a_shape_mismatch():
    d = _diag("collective/gloo-size-collectives-apart.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"


def test_optimizer_param_groups_check_is_a_stale_per_rank_checkpoint():
    # rank 3's state/adam_3.pt has one param group, the optimizer two; ranks 0-2 resumed
    d = _diag("checkpoint/optimizer-param-groups-mismatch.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "optimizer-param-groups-mismatch"
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == 21
    assert "rank 3's optimizer file" in d.root_cause.fix.steps[0]
