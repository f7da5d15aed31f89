"""A job script started again into the same output file, with no launcher banner between its
runs (a requeue or a resubmission appending to one Slurm ``--output``): the script's own
header (``nvidia-smi``'s table) repeating starts a new attempt when the run before it failed,
or when the training steps after it start over; the last attempt is diagnosed, and a training
curve's onset in an earlier attempt is set aside with that attempt's faults.

Fixtures (``tests/job_restarts``) are real runs of this project's own (torch 2.13 CPU, one
process, no torchrun): a job script that prints ``date`` and nvidia-smi's header (its public
format: no GPU here), then ``python train.py`` (a Linear model on random data, ``Step N:
grad_norm=..., loss=...`` every 10 steps):

- ``three_attempts_no_launcher_banner.log``: attempt 1 raises ``ValueError`` (its norm stats
  file is missing); attempt 2 trains, its batch at step 60 scaled x40 (a loss spike), and is
  killed by ``timeout -s KILL`` with no word; attempt 3 trains from step 0 and is stopped by
  ``timeout -s TERM``, then slurmstepd's ``CANCELLED AT`` line in its format;
- ``monitor_header_mid_run.log``: one run (the same spike) while the script prints the header
  again 2.5 s in, as a monitor loop would; the steps go on past it: no new attempt.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).resolve().parent / "job_restarts"


def _diagnose(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def test_a_repeated_job_header_splits_attempts_and_the_last_ones_cancel_is_the_cause():
    d = _diagnose("three_attempts_no_launcher_banner.log")
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("slurm-preemption", "preemption-sigterm")
    assert rc.evidence[0].line == 110  # slurmstepd's CANCELLED AT line
    assert d.initiating_rank is None
    assert any("3 runs of the job" in r and "from line 69" in r for r in d.reasoning)


def test_an_earlier_attempts_loss_spike_is_set_aside_not_the_last_runs_cause():
    d = _diagnose("three_attempts_no_launcher_banner.log")
    found = {(f.signature, f.evidence[0].line) for f in [d.root_cause, *d.collateral] if f}
    assert not any(sig == "loss-spike" for sig, _ in found)
    assert not any(sig == "user-code-exception" for sig, _ in found)


def test_a_header_printed_again_while_the_steps_go_on_is_no_new_attempt():
    d = _diagnose("monitor_header_mid_run.log")
    assert not any("runs of the job" in r for r in d.reasoning)
    rc = d.root_cause
    assert rc is not None and rc.signature == "loss-spike"  # the run's own spike stays


# The same job script runs its program in stages (``stage_silent_timed.log``: one process per
# rank started by a shell loop with RANK/WORLD_SIZE, as mpiexec does, each line stamped with
# ``date``): stages 1 and 2 time all_reduce and finish; stage 3 starts two processes with
# WORLD_SIZE=3, both print their start-up line and wait in the rendezvous until ``timeout -s
# TERM`` stops them, then PALS's ``rank 0 died from signal 15`` line in its format. The
# untimed form and its near-miss are the signature's fixtures
# (``signatures/collective/stage-silent-after-start.*.log``).


def test_a_last_stage_that_started_and_printed_nothing_until_the_stop_hung():
    d = _diagnose("stage_silent_timed.log")
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("stage-silent-after-start", "collective-timeout")
    assert d.initiating_rank is None
    assert [e.line for e in rc.evidence] == [20, 19]  # the stage's start-up lines
    assert "stage 3: two nodes, 2 ranks per node" in rc.captures["stage"]
    assert rc.captures["silence"] == "for 9 s"  # 09:33:56 -> the stop at 09:34:05
    assert [c.signature for c in d.collateral] == ["pals-rank-sigterm"]
    assert any("[terminal_after_fault]" in r for r in d.reasoning)


def test_an_untimed_silent_stage_says_the_log_cannot_tell_how_long():
    sig = Path(__file__).resolve().parents[1] / "signatures" / "collective"
    d = diagnose_paths([str(sig / "stage-silent-after-start.positive.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "stage-silent-after-start"
    assert "no timestamps" in rc.captures["silence"]
    near = diagnose_paths([str(sig / "stage-silent-after-start.near-miss.log")], mask=False)
    assert near.root_cause is not None and near.root_cause.signature == "pals-rank-sigterm"
