"""Kinds left from the held-out r21b set, each with a fixture captured from a real run of this
project's own (torch 2.13 CPU, gloo, torchrun or mp.spawn; the scripts' own names and values):

- a thread that died (``Exception in thread loader:`` under torchrun's ``[default1]:`` tee
  prefix) while its rank went on with the batches it had queued, then silence until a
  ``timeout`` wrapper's SIGTERM (``tests/r21d/thread-died-drained-timeout-stop.log``);
- one rank's warning about another unreadable item each time, until a ``timeout`` stop
  (``signatures/data/retry-loop-until-stopped.{positive,near-miss}.log``);
- mp.spawn's ``process 1 terminated with signal SIGBUS`` (a file truncated under its mapping:
  ``signatures/process/mapped-file-sigbus.positive-2.log``);
- one rank waiting in an extra ``all_reduce`` while the others were in DDP's constructor
  (``signatures/collective/call-site-divergence.{positive,near-miss}.log``);
- two torchrun agents behind a wrapper's per-line host prefix (``gpu-n01: ``), one worker
  SIGKILLed (``tests/r21d/two-nodes-host-prefix-sigkill.log``);
- ``logging.exception`` tracebacks on rank 0, then its ``...; training finished`` line
  (``tests/r21d/logged-exception-then-training-finished.log``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.report import to_text

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "r21d"
SIGNATURES = ROOT / "signatures"


def _diagnose(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_a_dead_thread_whose_rank_drained_its_queue_before_a_stop_is_the_cause():
    d = _diagnose(HERE / "thread-died-drained-timeout-stop.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 18  # rank 1's KeyError, not the agent's death signal
    collateral = {c.signature for c in d.collateral}
    assert "agent-received-signal" in collateral
    # its later steps were the queue draining: not survived
    assert "error_survived" not in to_text(d)


def test_a_warning_repeated_on_other_items_until_the_stop_is_a_retry_loop():
    d = _diagnose(SIGNATURES / "data" / "retry-loop-until-stopped.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "retry-loop-until-stopped",
        "data-error",
    )
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 7
    assert "rec_32.txt" in rc.fix.steps[0]


def test_retries_while_training_went_on_are_no_loop():
    d = _diagnose(SIGNATURES / "data" / "retry-loop-until-stopped.near-miss.log")
    assert d.root_cause is not None and d.root_cause.signature == "agent-received-signal"
    assert "retry-loop-until-stopped" not in {f.signature for f in d.findings}


def test_mp_spawn_signal_name_is_the_exit_code_of_that_process():
    d = _diagnose(SIGNATURES / "process" / "mapped-file-sigbus.positive-2.log")
    rc = d.root_cause
    # the signal read on process 1 (line 18); its own lines then narrow it (tests/test_r22a_kinds.py)
    assert rc is not None and rc.signature == "mapped-file-sigbus"
    assert d.initiating_rank == 1
    assert 18 in {e.line for e in rc.evidence}


def test_one_rank_at_its_own_call_site_is_a_desync_not_a_timeout():
    d = _diagnose(SIGNATURES / "collective" / "call-site-divergence.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "call-site-divergence",
        "collective-desync",
    )
    assert d.initiating_rank == 1
    assert rc.fix.steps[0].startswith("train.py:16: rank 1 calls all_reduce here")


def test_a_straggler_at_the_same_call_site_stays_a_timeout():
    d = _diagnose(SIGNATURES / "collective" / "call-site-divergence.near-miss.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "collective-timeout"
    assert d.initiating_rank == 1


def test_two_host_prefixed_agents_are_one_run_and_the_sigkilled_worker_is_first():
    d = _diagnose(HERE / "two-nodes-host-prefix-sigkill.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "worker-sigkill-exit",
        "host-oom-killed",
    )
    assert d.initiating_rank == 3  # the failure table under the host prefix: rank 3 (local 1)
    assert rc.evidence[0].line == 71
    text = to_text(d)
    assert "another node of the same run" in text and "2 runs of the job" not in text


def test_logged_exceptions_before_the_runs_own_finished_line_were_survived():
    d = _diagnose(HERE / "logged-exception-then-training-finished.log")
    assert d.root_cause is None
    assert "run_completed" in to_text(d)
