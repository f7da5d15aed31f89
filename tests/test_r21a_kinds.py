"""Kinds from the held-out r20f set (fix helper a), each with its own fixture.

Fixtures in ``tests/r21a/``, written in the formats the tools print (bash's ``bash: line N:
X: command not found``, Python's ``can't open file``, torch 2.x ``[rankN]:`` excepthook
prefixes, gloo's unbound_buffer.cc timeout, torchtune's ``INFO:torchtune.utils._logging:``
lines, submitit's ``submitit LEVEL (time) - ...`` and slurmstepd's ``CANCELLED AT``; paths,
hosts, pids and values are made up for these tests):

- ``setup-error-outlived-every-rank-import.log``: a pod start script's missing command, more
  set-up output, ``Launched rank N with PID ...`` lines, then four ranks each dying of
  ``ModuleNotFoundError``; ``setup-script-missing-then-ranks-launched.log`` the same with
  Python's ``can't open file`` (not a shell line) before the launcher's start lines.
  Near misses: ``setup-error-then-one-process.log`` (one traceback only) and
  ``setup-script-missing-no-launch-line.log`` (no start line between).
- ``save-checkpoint-barrier-gloo.log``: rank-0-only torchtune save lines, then rank 3's gloo
  timeout in ``save_checkpoint``'s barrier; ``main-process-first-barrier-gloo.log``: ranks
  1-3 in ``main_process_first``'s barrier; near miss ``epoch-end-barrier-gloo.log`` (a
  barrier from the training loop).
- ``pasted-error-on-top-requeue.log``: a store-barrier error with ``worker_count`` twice the
  world size pasted above a preemption and the requeued attempt's traceback; near miss
  ``pasted-error-on-top-no-later-failure.log`` (no failure after the preemption).

The variant fixtures are in ``tests/fix_variants/{gloo-collective-timeout,
nccl-watchdog-timeout}/guarded-work-past-timeout.log`` and
``tests/fix_variants/store-barrier-timeout/stale-store-check-ins.log``.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).resolve().parent / "r21a"
VARIANTS = Path(__file__).resolve().parent / "fix_variants"


def _diagnose(path: Path):  # type: ignore[no-untyped-def]
    return diagnose_text(path.read_text(encoding="utf-8"), "job.log", mask=False)


def test_an_error_the_job_went_on_after_is_not_what_every_rank_died_of():
    """Kind 1: a shell's missing command, then ranks launched that each die of the same
    import error: the import error is the root, the missing command collateral."""
    d = _diagnose(HERE / "setup-error-outlived-every-rank-import.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "module-not-found"
    assert d.root_cause.failure_class == "dependency-version-mismatch"
    assert d.root_cause.evidence[0].line == 19
    assert any(g.signature == "command-not-found" for g in d.collateral)


def test_a_launcher_starting_ranks_after_a_set_up_error_shows_it_was_outlived():
    """Kind 1, not a shell line: the launcher's ``Launched rank N`` lines after it."""
    d = _diagnose(HERE / "setup-script-missing-then-ranks-launched.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "module-not-found"


def test_a_set_up_error_nothing_visibly_outlived_stays_the_root():
    """Kind 1 near misses: one process dying after it, or no start line between."""
    for name in ("setup-error-then-one-process.log", "setup-script-missing-no-launch-line.log"):
        d = _diagnose(HERE / name)
        assert d.root_cause is not None, name
        assert d.root_cause.signature == "command-not-found", name
        assert d.root_cause.evidence[0].line == 3, name


def test_a_timeout_in_save_checkpoints_barrier_names_rank_zero():
    """Kinds 3 and 4: rank 3 timed out in the barrier of a save every rank calls while rank
    0 writes: rank 0 initiated it, and the fix is the timeout or the save, not uneven
    batches."""
    d = _diagnose(HERE / "save-checkpoint-barrier-gloo.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "guarded_work"
    text = " ".join(d.root_cause.fix.steps)
    assert "timeout" in text and "drop_last" not in text


def test_a_timeout_in_main_process_firsts_barrier_names_the_main_process():
    d = _diagnose(HERE / "main-process-first-barrier-gloo.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert "ddp_timeout" in " ".join(d.root_cause.fix.steps)


def test_a_barrier_in_the_training_loop_is_no_guarded_work():
    """Kinds 3 and 4 near miss: the uneven-batches reading stays."""
    d = _diagnose(HERE / "epoch-end-barrier-gloo.log")
    assert d.root_cause is not None
    assert d.initiating_rank is None
    assert "drop_last" in " ".join(d.root_cause.fix.steps)


def test_the_nccl_watchdog_in_accelerates_main_process_first_names_rank_zero():
    d = _diagnose(VARIANTS / "nccl-watchdog-timeout" / "guarded-work-past-timeout.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-watchdog-timeout"
    assert d.initiating_rank == 0


def test_more_check_ins_than_the_world_size_is_a_stale_store():
    """Kind 9: worker_count above world_size: a fresh rendezvous, not a longer timeout."""
    d = _diagnose(VARIANTS / "store-barrier-timeout" / "stale-store-check-ins.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-barrier-timeout"
    text = " ".join(d.root_cause.fix.steps)
    assert "12 check-ins for a world size of 8" in text
    assert "fresh rendezvous" in text
    d = _diagnose(VARIANTS / "store-barrier-timeout" / "general.log")
    assert d.root_cause is not None
    assert "fresh rendezvous" not in " ".join(d.root_cause.fix.steps)


def test_an_error_pasted_above_every_timestamp_is_not_before_a_timed_stop():
    """Kind 10: the store-barrier error quoted on top, the preemption at 05:40:02 and the
    requeued attempt's traceback at 06:22:19: the barrier did not precede the preemption."""
    d = _diagnose(HERE / "pasted-error-on-top-requeue.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-barrier-timeout"
    assert not any("terminal_after_fault" in r for r in d.reasoning)
    near = _diagnose(HERE / "pasted-error-on-top-no-later-failure.log")
    assert near.root_cause is not None
    assert near.root_cause.signature == "store-barrier-timeout"
    assert any("terminal_after_fault" in r for r in near.reasoning)


def test_a_same_named_subpackage_is_not_the_users_own_package():
    """Case 01's fix: ``No module named 'megatron.core'`` imported from
    ``nemo/.../common/megatron/transformer.py``, where ``common/__init__.py`` is a frame
    file too: that ``megatron`` directory is ``nemo...common.megatron``, not the top-level
    ``megatron`` package, so the module is not the user's missing file."""
    from rootrank.entry.variants import local_module_frame

    nested = [
        ("/opt/NeMo/nemo/collections/nlp/modules/common/__init__.py", 36),
        ("/opt/NeMo/nemo/collections/nlp/modules/common/megatron/transformer.py", 27),
    ]
    assert local_module_frame("megatron.core", nested) is None
    top = [("/work/proj/megatron/training.py", 12)]
    assert local_module_frame("megatron.core", top) == "megatron/training.py:12"
