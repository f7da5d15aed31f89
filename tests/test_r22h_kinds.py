"""Kinds left from the held-out r22a/b/c sets, each with a fixture captured from a real run of
this project's own (torch 2.13 CPU, gloo; ``tests/r22h``):

- a relaunch appended to the log that was cut before its first step (no failure, no end, no
  step of its own) leaves the failure of the run before it as the job's, while a relaunch
  that trained and printed nothing more (torchrun prints nothing on success) stays as it was
  (``relaunch_cut_before_first_step.log`` and ``relaunch_trained_silently.log``: a
  ``train_sig.py`` whose rank 1 kills itself with SIGBUS at step 25 under ``CRASH=1``, then
  the same command again);
- an mp.spawn worker runs ``tools/check_shard.py`` with ``subprocess.run(..., check=True)``:
  the child's unprefixed traceback is the job's own, not another launch, since the parent's
  CalledProcessError names its command (``mp_spawn_subprocess_child_traceback.log``);
- ``torchrun --max-restarts=1`` under ``ulimit -S -t 4``: rank 1 (1024x1024 matmuls) is
  killed by SIGXCPU (exit -24), known only by the agent's ``failed (exitcode: -24)`` line; the
  restart fails in gloo's connectFullMesh, which the first attempt's fault explains
  (``max_restarts_sigxcpu_then_regroup_refused.log``);
- a library's INFO-level probe of an optional backend (``INFO:...: Unable to initialize
  backend 'tpu': libtpu.so: cannot open shared object file``) is no missing library
  (``signatures/environment/shared-library-missing.near-miss-2.log``, logging.info of a real
  ``ctypes.CDLL("libtpu.so")`` failure);
- PALS/Cray ``mpiexec``'s ``<host>: rank N died from signal 15`` (PBS's walltime or qdel) is an
  outside stop with no rank of its own: a victim's line
  (``signatures/process/pals-rank-sigterm.{positive,near-miss}.log``: a real run's steps, then
  the line in PALS's format).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).resolve().parent / "r22h"
SIGNATURES = Path(__file__).resolve().parents[1] / "signatures"


def _diagnose(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_a_relaunch_cut_before_its_first_step_leaves_the_earlier_failure_as_the_jobs():
    d = _diagnose(HERE / "relaunch_cut_before_first_step.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "worker-sigbus-exit",
        "dataloader-worker-killed-or-shm",
    )
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 13  # the agent's 'failed (exitcode: -7) local_rank: 1'
    assert any("from line 52 begins like a new run" in r for r in d.reasoning)


def test_a_relaunch_that_trained_and_printed_nothing_more_is_not_given_the_earlier_failure():
    d = _diagnose(HERE / "relaunch_trained_silently.log")
    assert d.root_cause is None
    assert not any("begins like a new run" in r for r in d.reasoning)


def test_a_subprocess_childs_traceback_inside_a_job_is_not_another_launch():
    d = _diagnose(HERE / "mp_spawn_subprocess_child_traceback.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert rc.captures.get("exc_type", "").endswith("JSONDecodeError")
    assert rc.evidence[0].line == 18
    assert d.initiating_rank == 0
    assert not any("different runs" in r for r in d.reasoning)


def test_a_signal_killed_worker_of_the_first_attempt_explains_the_restarts_regroup_failure():
    d = _diagnose(HERE / "max_restarts_sigxcpu_then_regroup_refused.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "worker-cpu-time-limit",
        "preemption-sigterm",
    )
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 38
    assert "gloo-connect-full-mesh-failed" in {c.signature for c in d.collateral}


def test_an_info_level_probe_of_an_optional_backend_is_no_missing_library():
    d = _diagnose(SIGNATURES / "environment" / "shared-library-missing.near-miss-2.log")
    assert "shared-library-missing" not in {f.signature for f in d.findings}
    assert d.root_cause is None


def test_a_pals_rank_killed_by_sigterm_is_an_outside_stop_naming_no_rank():
    d = _diagnose(SIGNATURES / "process" / "pals-rank-sigterm.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "pals-rank-sigterm",
        "preemption-sigterm",
    )
    assert rc.evidence[0].line == 13
    assert d.initiating_rank is None


def test_a_pals_rank_crash_or_exit_code_is_not_an_outside_stop():
    d = _diagnose(SIGNATURES / "process" / "pals-rank-sigterm.near-miss.log")
    assert "pals-rank-sigterm" not in {f.signature for f in d.findings}
