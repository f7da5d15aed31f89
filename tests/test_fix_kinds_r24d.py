"""Held-out r24d kinds (the set's MISSES.md), each on a log written here in the tools' own
formats with new values (tests/r24d):

- a native kernel library's module-API launch failing with a handle/image error on every
  rank (``fail to call hipModuleLaunchKernel(...) ---> [HIP error](invalid resource handle)``)
  is a precompiled kernel built for another GPU, a failure even though the wrapper exits 0;
- an expert-parallel library's own timeout while waiting for its peers' data (DeepEP's
  ``timeout (dispatch CPU)`` after every rank's counters stayed -1) is the transport under it,
  and the spawned process that raised first is no initiator;
- after the run's end line, a collective timeout from one rank alone is that rank's extra
  collective in post-training code (a desync it initiated);
- PyTorch's own library missing an NVIDIA library's symbol is that library's copy, not an
  extension built for another torch;
- a time-limit kill of a step started into an existing allocation (``srun --jobid N``) is
  checked on that allocation's next step, not on a new job;
- a verification rebuilt from a traceback (the log shows no launch command) says to resubmit
  the job as it was started.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.commands import UNSHOWN_LAUNCH_NOTE

HERE = Path(__file__).parent / "r24d"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_module_launch_error_on_every_rank_is_a_kernel_built_for_another_gpu() -> None:
    d = _diag("rocm_module_launch_every_rank.log")
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == (
        "precompiled-kernel-launch-failed",
        "cuda-driver-or-arch-mismatch",
    )
    assert rc.evidence[0].line == 6
    assert d.initiating_rank is None
    # the printed srun command is the rerun
    assert rc.verify.startswith("srun --label python -u train_moe.py --attention-backend fused")


def test_ep_library_wait_timeout_is_the_fabric_and_names_no_rank() -> None:
    d = _diag("ep_combine_timeout_spawn.log")
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("ep-dispatch-recv-timeout", "network-fabric-error")
    assert rc.evidence[0].line == 32
    assert d.initiating_rank is None
    assert d.initiator is not None and "waiting for data its peers send" in d.initiator.why
    assert rc.verify.endswith(UNSHOWN_LAUNCH_NOTE)


def test_lone_timeout_after_the_run_ended_is_that_ranks_extra_collective() -> None:
    d = _diag("post_fit_rank0_barrier.log")
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("collective-after-run-end", "collective-desync")
    assert d.initiating_rank == 0
    assert rc.evidence[0].line == 5
    assert "is_global_zero" in rc.fix.steps[0]


def test_torch_library_missing_an_nccl_symbol_is_the_loaded_nccl() -> None:
    d = _diag("torch_lib_undefined_nccl.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "undefined-symbol"
    assert _variant(d) == "torch-dependency-library"
    assert "flash" not in " ".join(rc.fix.steps)
    assert rc.verify.startswith('python -c "import torch; print(torch.__version__')


def test_time_limit_of_a_step_in_an_allocation_checks_the_allocation() -> None:
    d = _diag("srun_step_in_allocation_time_limit.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "slurm-time-limit"
    assert _variant(d) == "job-step"
    assert rc.verify.startswith("sacct -j 90412 -n -o State | tail -n 1 | grep -q COMPLETED")


def test_a_batch_jobs_time_limit_keeps_the_new_job_check() -> None:
    sig = Path(__file__).parent.parent / "signatures" / "process" / "slurm-time-limit.positive.log"
    d = diagnose_paths([str(sig)], mask=False)
    assert _variant(d) != "job-step"
    assert d.root_cause is not None and "<new jobid>" in d.root_cause.verify


def test_a_launch_rebuilt_from_a_traceback_says_to_resubmit_the_job() -> None:
    d = _diag("torchrun_traceback_no_command.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "filesystem-permission"
    assert _variant(d) == "ranks-share-one-file"
    head, _, comment = rc.verify.partition("  # ")
    assert head == "torchrun --nproc-per-node=gpu export_fields.py"
    assert "no PermissionError" in comment and comment.endswith(UNSHOWN_LAUNCH_NOTE)
