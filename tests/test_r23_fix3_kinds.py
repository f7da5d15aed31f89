"""Kinds of miss the held-out r23a set showed, on logs of real runs of this project's own
(torch 2.13 CPU, gloo, torchrun; the scripts and packages in ``/tmp`` named in each log):

- a Slurm cancellation with no task failing before it, the run printing steps up to it and a
  warning it went on training past (DeepSpeed ZeRO-3's ``allocator cache flushes`` line, as
  its logger prints it): a stop from outside (``preemption-sigterm``), not srun's teardown;
- slurmstepd's cancellation line in its other real formats (src/slurmd/slurmstepd/req.c,
  ``_handle_signal_container``, Slurm 25.05+: ``DUE to SIGNAL Terminated`` for a signal sent
  to the job, ``DUE TO TASK FAILURE`` for the teardown; the log prefix of a daemon with a
  timestamp format, ``[<time>] error:``, or ``slurmstepd-<node>: error:``). The torchrun
  output is a real run's; the slurmstepd line is written from req.c's format string;
- a run of world size 1 whose failure is ``[rank0]:``'s: rank 0 is the initiating rank;
- an assertion raised in a framework's own set-up check (an installed package's
  ``_do_optimizer_sanity_check``) whose message names a configuration key and its value:
  config-error, the fix naming the key and the value; the same assertion in the user's own
  function stays the user's exception;
- a full temp dir (TMPDIR on a small tmpfs) under the DataLoader's tensor sharing: the path
  is multiprocessing's pymp-* directory, so the fix and verify are about the temp dir, not a
  checkpoint;
- an OOM in DeepSpeed ZeRO-1/2's optimizer ``step`` (stage_1_and_2.py) is the optimizer state's:
  shard or offload it, not a smaller micro-batch (written in the tool's traceback shape);
- an undefined symbol in an extension module inside an installed package
  (``site-packages/<package>/...``, a real ``.so`` built here that lacks a c10 symbol): the fix
  rebuilds that package, and the verify loads that very file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text

HERE = Path(__file__).parent / "r23f3"


def _diagnose(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def test_a_plain_cancellation_after_steady_steps_and_a_passed_warning_is_a_stop_from_outside():
    d = _diagnose("scancel-after-steps.log")
    rc = d.root_cause
    assert rc.signature == "slurm-preemption"
    assert rc.failure_class == "preemption-sigterm"
    assert rc.evidence[0].line == 37
    assert d.initiator.rank is None
    assert "sacct -j 51234" in rc.fix.steps[0]


def test_a_cancellation_due_to_signal_with_a_timestamp_prefix_is_read_as_a_stop_from_outside():
    d = _diagnose("scancel-signal-timestamp.log")
    rc = d.root_cause
    assert rc.signature == "slurm-preemption"
    assert rc.failure_class == "preemption-sigterm"
    assert rc.evidence[0].line == 37
    assert rc.captures["signal"] == "Terminated"
    assert "SIGNAL Terminated" in rc.fix.steps[0]
    assert d.initiator.rank is None


def test_a_cancellation_due_to_task_failure_stays_the_teardown_of_the_failed_task():
    d = _diagnose("task-failure-teardown.log")
    rc = d.root_cause
    assert rc.failure_class == "user-code-exception"
    assert rc.evidence[0].line == 10
    cancel = next(f for f in d.findings if f.signature == "slurm-step-cancelled")
    assert cancel.captures["reason"] == "DUE TO TASK FAILURE"


@pytest.mark.parametrize(
    "line",
    [
        "slurmstepd: error: *** JOB 77 ON n1 CANCELLED AT 2026-12-05T10:00:00 DUE to SIGNAL Killed ***",
        "slurmstepd-n1: error: *** STEP 77.0 ON n1 CANCELLED AT 2026-12-05T10:00:00 ***",
        "[2026-12-05T10:00:00.118] error: *** JOB 77 ON n1 CANCELLED AT 2026-12-05T10:00:00 ***",
    ],
)
def test_slurmstepd_cancellation_formats_alone_after_steps_are_a_stop_from_outside(line):
    text = "".join(f"[Step {s}/100] Loss: 4.{s:02d}\n" for s in range(1, 6)) + line + "\n"
    d = diagnose_text(text, "slurm-77.out", mask=False)
    assert d.root_cause.signature == "slurm-preemption"
    assert d.root_cause.evidence[0].line == 6


def test_time_limit_in_lower_case_is_still_the_time_limit():
    text = (
        "[Step 5/100] Loss: 4.05\n"
        "slurmstepd: error: *** JOB 77 ON n1 CANCELLED AT 2026-12-05T10:00:00 due to time limit ***\n"
    )
    d = diagnose_text(text, "slurm-77.out", mask=False)
    assert d.root_cause.signature == "slurm-time-limit"


def test_the_only_rank_of_a_world_of_one_is_the_initiating_rank():
    d = _diagnose("world1-setup-error.log")
    assert d.root_cause.failure_class == "unsupported-shape-or-dtype"
    assert d.root_cause.evidence[0].line == 7
    assert d.initiator.rank == 0


def test_a_framework_setup_check_naming_a_config_key_is_a_config_error():
    d = _diagnose("framework-check-config-key.log")
    rc = d.root_cause
    assert rc.signature == "library-argument-check-failed"
    assert rc.failure_class == "config-error"
    assert rc.captures["config_key"] == "allow_untested_optimizer"
    assert rc.captures["config_value"] == "true"
    assert 'AssertionError: Set "allow_untested_optimizer": true in the ' in rc.fix.steps[0]
    assert rc.user_frame is not None
    assert (rc.user_frame.file, rc.user_frame.line) == ("/tmp/f3run/train_cfg.py", 8)


def test_the_same_assertion_in_the_users_own_check_stays_the_users_exception():
    d = _diagnose("user-check-config-key.log")
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.evidence[0].line == 10


def test_an_undefined_symbol_in_an_installed_packages_extension_rebuilds_that_package():
    d = _diagnose("extension-undefined-symbol.log")
    rc = d.root_cause
    assert rc.signature == "undefined-symbol"
    assert rc.evidence[0].line == 9
    assert rc.captures["package"] == "fusedops"
    assert rc.captures["stem"] == "fused_adam_op"
    assert "--force-reinstall fusedops" in rc.fix.steps[0]
    assert "flash" not in " ".join(rc.fix.steps).lower()
    assert rc.verify.startswith('python -c "import torch, importlib.util as u; s = u.spec_')
    assert "'fused_adam_op', '/tmp/f3run/sp/lib/python3.11/site-packages/fusedops/ops/adam/" in (
        rc.verify
    )


def test_a_full_temp_dir_under_dataloader_tensor_sharing_is_named_as_the_temp_dir():
    # TMPDIR on a small tmpfs, filled between two epochs: the second epoch's DataLoader
    # workers cannot create multiprocessing's pymp-* directory to hand their batches over
    d = _diagnose("dataloader-temp-dir-full.log")
    rc = d.root_cause
    assert rc.signature == "disk-full"
    assert rc.fix.variant is not None and rc.fix.variant.id == "temp-dir"
    assert rc.evidence[0].line == 78
    assert rc.captures["path"].startswith("/tmp/f3small/pymp-")
    assert "checkpoint" not in rc.summary.split("No checkpoint")[0]
    assert "TMPDIR" in rc.fix.steps[0]
    assert rc.verify.startswith(
        'python -c "import multiprocessing.util as u; print(u.get_temp_dir())"'
    )


def test_an_oom_in_a_zero_1_or_2_optimizer_step_is_fixed_by_sharding_the_optimizer_state():
    # DeepSpeed's ZeRO stage 1/2 optimizer (runtime/zero/stage_1_and_2.py) names its update
    # ``step``: an OOM there is the optimizer state's, not the micro-batch's
    site = "/opt/conda/lib/python3.11/site-packages"
    text = "\n".join(
        [
            "[Step 1/100] Loss: 5.1000",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/home/me/run/train.py", line 45, in train_step',
            "[rank0]:     engine.step()",
            f'[rank0]:   File "{site}/deepspeed/runtime/engine.py", line 2436, in step',
            "[rank0]:     self._take_model_step(lr_kwargs)",
            f'[rank0]:   File "{site}/deepspeed/runtime/engine.py", line 2336, in _take_model_step',
            "[rank0]:     self.optimizer.step()",
            f'[rank0]:   File "{site}/deepspeed/runtime/zero/stage_1_and_2.py", line 2006, in step',
            "[rank0]:     int(self.partition_size[i])).to(self.single_partition_of_fp32_groups[i].dtype)",
            "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 "
            "has a total capacity of 79.10 GiB of which 1.10 GiB is free. Of the allocated memory "
            "77.20 GiB is allocated by PyTorch, and 50.00 MiB is reserved by PyTorch but unallocated.",
        ]
    )
    d = diagnose_text(text + "\n", "ds.log", mask=False)
    rc = d.root_cause
    assert rc.signature == "cuda-oom"
    assert rc.evidence[0].line == 11
    assert rc.fix.variant is not None and rc.fix.variant.id == "optimizer-step"
    assert "offload_optimizer" in rc.fix.steps[0]
    assert "a smaller micro-batch does not change this peak" in rc.fix.steps[0]
