"""Kinds from the held-out r20d set, each with its own fixture.

Fixtures in ``tests/r20d/``, written in the formats the tools print (NCCL 2.2x ``NCCL INFO``
lines, torch 2.4+ ``ProcessGroupNCCL`` watchdog lines; hosts, pids, addresses and values are
made up for these tests):

- ``allreduce-vs-broadcast.log``: 2 ranks; rank 1 times out in a 1-element ALLREDUCE at SeqNum
  48213, rank 0 in a BROADCAST at 48214 with 48213 completed.
- ``first-broadcast-silent-rank.log``: 4 ranks (``nranks 4``); ranks 1-3 time out in the first
  BROADCAST; rank 2's watchdog measured ``600016 milliseconds`` where the others measured
  ``600000``; rank 0 prints nothing.
- ``restart-barrier-after-data-error.log``: torch 1.x torchrun output: a DataLoader worker's
  FileNotFoundError on local rank 1, the agent's restart lines, then the restarted attempt's
  store-based barrier timeout with ``world_size=2, worker_count=3``.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.oddline import normalize
from rootrank.engine import diagnose_text

HERE = Path(__file__).resolve().parent / "r20d"


def _diagnose(name: str):  # type: ignore[no-untyped-def]
    return diagnose_text((HERE / name).read_text(encoding="utf-8"), "job.log", mask=False)


def test_a_measured_duration_is_noise_not_another_branch():
    """Kind 1: a duration the process measured (``ran for N milliseconds``) differs between
    ranks by clock jitter; the odd-one-out comparison ignores it, and the rank that never
    reported the timeout is the one the others waited for."""
    assert normalize("ran for 1800013 milliseconds", 2) == normalize(
        "ran for 1800000 milliseconds", 1
    )
    assert normalize("waited 3 minutes", 1) == normalize("waited 4 minutes", 2)
    d = _diagnose("first-broadcast-silent-rank.log")
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0


def test_a_lower_seqnum_in_another_op_is_a_desync_not_a_straggler():
    """Kind 2: rank 1 waits in an ALLREDUCE at SeqNum N, rank 0 in a BROADCAST at N+1 having
    completed N: the symmetric call could not complete on rank 0 without rank 1, so rank 0
    ran another call under N; the streams diverged and the counters name no rank."""
    d = _diagnose("allreduce-vs-broadcast.log")
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.signature == "watchdog-optype-divergence"
    assert d.initiating_rank is None


def test_sizes_orders_of_magnitude_apart_are_two_calls_and_the_phase_line_names_the_rank():
    """Kind 3: one SeqNum, one OpType, 1 element against millions: two different calls (a
    desync), not a shape mismatch; the one rank whose own line says it entered evaluation
    left the training step first."""
    sigs = Path(__file__).resolve().parents[1] / "signatures" / "collective"
    text = (sigs / "watchdog-numel-scale-divergence.positive.log").read_text(encoding="utf-8")
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "watchdog-numel-scale-divergence"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1
    assert "watchdog-numel-divergence" not in {f.signature for f in d.findings}
    shifted = text.replace("rank 1\n", "rank 0\n")
    assert diagnose_text(shifted, "job.log", mask=False).initiating_rank == 0


def test_a_barrier_that_counted_a_restart_is_explained_by_the_first_attempts_fault():
    """Kind 4: a store-based barrier with more arrivals than the world size ran in a
    restarted attempt; the first attempt's data error is the cause, and the launcher line
    printed before the restart names its rank."""
    d = _diagnose("restart-barrier-after-data-error.log")
    # a sample's file missing under __getitem__ is a bad record: data-error (r21c)
    assert d.root_cause.failure_class == "data-error"
    assert d.root_cause.evidence[0].line == 20
    assert d.initiating_rank == 1
    rules = {(e.cause.signature, e.effect.signature): e.rule for e in d.explanations}
    assert rules[("dataset-sample-unreadable", "store-barrier-timeout")] == (
        "barrier_counted_a_restart"
    )
    assert d.root_cause.fix.variant.id == "restart-futile"


def test_a_cut_worker_exception_is_not_re_raised_by_a_later_barrier_and_restarts_are_futile():
    """Kind 4, as pasted without the worker's original traceback: the wrapper caught a
    FileNotFoundError, so the later RuntimeError is not what it re-raises; its fix says a
    restart cannot fix a data error and its verify checks the files."""
    lines = (HERE / "restart-barrier-after-data-error.log").read_text(encoding="utf-8").split("\n")
    text = "\n".join(lines[:14] + lines[20:])
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "dataloader-worker-exception"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert "restarting cannot fix it" in d.root_cause.fix.steps[0]
    assert "missing" in d.root_cause.verify and "--max-restarts=0" in d.root_cause.verify
