"""Held-out r20b kinds (the set's MISSES.md), each on a fixture written from what the tools
print: a warning the run trained past is not the root cause; a load-time advisory beside the
exception that ended the run; a Ray worker that vanished (SYSTEM_ERROR, no Python error) was
killed; a launcher that received SIGINT was stopped from outside; a command that was never
found is the cause, srun's exit lines its collateral; EDQUOT is checked with quota, not df; a
Hydra app's rerun keeps its overrides, and .item() on a batch is named as such."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.scan import hydra_overrides

HERE = Path(__file__).parent / "r20b"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def test_a_warning_the_run_trained_past_is_not_the_cause_of_a_later_error():
    # NumPy's failed-init warning at import, five steps, then a KeyError: the steps show the
    # warning stopped nothing, so the exception is the root, not the warning before it
    d = _diag("warning_then_steps_then_error.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.evidence[0].line == 14
    assert "numpy-init-failed-warning" in {g.signature for g in d.collateral}


def test_a_load_time_flash_attention_advisory_is_not_the_cause_of_a_cpu_collective_error():
    d = _diag("ray_advisory_then_cpu_tensor.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-cpu-tensor"
    assert d.root_cause.evidence[0].line == 14
    # the CPU tensor is a library helper's: the group needs a Gloo backend for CPU tensors
    assert "cpu:gloo,cuda:nccl" in d.root_cause.fix.steps[0]
    assert "actor_rollout_ref.rollout.name=sglang" in d.root_cause.verify


def test_a_ray_worker_that_vanished_with_system_error_was_killed():
    d = _diag("ray_worker_vanished.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "ray-worker-killed"
    # no OOM killer or memory-monitor line in the log: a death of unknown cause (r24 "left")
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.root_cause.evidence[0].line == 19
    assert d.initiating_rank is None
    # the driver's ActorDiedError is its consequence, the advisory before 4 steps collateral
    assert "ray-actor-died" in {g.signature for g in d.collateral}
    assert "dmesg" in " ".join(d.root_cause.fix.steps)
    assert "param_offload=True" in d.root_cause.verify


def test_a_deepspeed_launcher_that_received_sigint_was_stopped_from_outside():
    d = _diag("deepspeed_ctrl_c.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.root_cause.signature == "deepspeed-launcher-received-signal"
    assert d.root_cause.evidence[0].line == 11
    assert d.root_cause.captures.get("signal") == "SIGINT"
    assert "Ctrl-C" in d.root_cause.fix.steps[0]


def test_a_command_the_container_could_not_find_is_the_cause_not_srun_exit():
    d = _diag("apptainer_entry_missing.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "command-not-found"
    assert d.root_cause.failure_class == "config-error"
    assert d.root_cause.evidence[0].line == 2
    assert d.root_cause.captures.get("command") == "train-cli"
    assert "command -v train-cli" in d.root_cause.verify
    assert "elastic-child-failed" in {g.signature for g in d.collateral}


def test_disk_quota_exceeded_is_verified_with_quota_not_df():
    d = _diag("quota_exceeded.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "disk-full"
    assert d.root_cause.verify.startswith("quota -s")
    assert "df --output" not in d.root_cause.verify


def test_item_on_a_batch_is_named_and_the_rerun_keeps_the_hydra_overrides():
    d = _diag("hydra_item_on_batch.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "tensor-to-scalar-multi-element"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.evidence[0].line == 6
    assert ".tolist()" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith(
        "python score.py +data=librispeech eval.batch_size=8 model.ckpt=/scratch/u/ckpt/last.pt"
    )


def test_hydra_overrides_are_read_only_from_a_whole_list_of_strings():
    assert hydra_overrides("Error executing job with overrides: ['+a=1', 'b.c=[1,2]']") == (
        "+a=1",
        "b.c=[1,2]",
    )
    assert hydra_overrides("Error executing job with overrides: []") == ()
    assert hydra_overrides("Error executing job with overrides: ['+a=1', 'b") is None
    assert hydra_overrides("Error executing job with overrides: [1, 2]") is None


def test_a_syntax_error_printed_without_a_traceback_header_is_the_scripts_error():
    # Python prints a SyntaxError of the main script as its location (no ", in <func>"),
    # the source line, a caret and the exception line: no "Traceback" header above it
    d = _diag("syntax_error_no_header.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.captures.get("exc_type") == "SyntaxError"
    assert d.root_cause.evidence[0].line == 6
    assert "finetune_lora.py:118" in d.root_cause.fix.steps[0]
    assert "py_compile finetune_lora.py" in d.root_cause.verify
