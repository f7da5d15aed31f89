"""Round-16 set E kind: MPI_Init fails because the launch gives no MPI bootstrap
(held-out GitHub-issue logs scored blind at b8c6e93; see the set's MISSES.md).

Every log here is written for this test in the tools' own wording (Open MPI's fatal-error
banner from ompi/errhandler/errhandler_predefined.c and its "Local abort before MPI_INIT
completed" line, Open MPI's direct-launch help text, srun's task summary), never
copied from a held-out log.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

MPI_BANNER = """\
*** An error occurred in MPI_Init_thread
*** on a NULL communicator
*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,
***    and potentially your MPI job)
"""

# --- MPI_Init fails: the job asked for an MPI bootstrap its launch does not provide ----------

#: torchrun-started Megatron with TP communication overlap: Transformer Engine bootstraps
#: its userbuffers over MPI and MPI_Init aborts in every worker.
LOG_TORCHRUN_TP_OVERLAP = (
    "+ torchrun --nproc-per-node=4 pretrain_gpt.py --tensor-model-parallel-size 4 --sequence-parallel --tp-comm-overlap\n"
    "> initializing torch distributed ...\n"
    "> initialized tensor model parallel with size 4\n"
    + MPI_BANNER
    + "[dgx-a:5121] Local abort before MPI_INIT completed completed successfully, "
    "but am not able to aggregate error messages, and not able to guarantee that all other processes were killed!\n"
    + MPI_BANNER
    + "[dgx-a:5122] Local abort before MPI_INIT completed completed successfully, "
    "but am not able to aggregate error messages, and not able to guarantee that all other processes were killed!\n"
)


def test_mpi_init_failure_under_torchrun_is_a_bootstrap_config_error_with_the_nccl_bootstrap_fix():
    d = diagnose_text(LOG_TORCHRUN_TP_OVERLAP)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.signature, rc.evidence[0].line) == (
        "config-error",
        "mpi-init-failed",
        4,
    )
    assert d.initiating_rank is None  # every worker aborts in its own MPI_Init
    assert rc.fix.variant is not None and rc.fix.variant.id == "general"
    assert "--tp-comm-bootstrap-backend nccl" in rc.fix.steps[0]
    assert rc.verify.startswith("torchrun --nproc-per-node=4 pretrain_gpt.py")


#: srun direct launch against an Open MPI built without Slurm PMI: Open MPI's help text, the
#: banner, then srun's task summary.
LOG_SRUN_NO_PMI = (
    "--------------------------------------------------------------------------\n"
    'The application appears to have been direct launched using "srun",\n'
    "but OMPI was not built with SLURM's PMI support and therefore cannot\n"
    "execute. There are several options for building PMI support under\n"
    "SLURM, depending upon the SLURM version you are using:\n"
    "--------------------------------------------------------------------------\n"
    + MPI_BANNER
    + "[cn12:40711] Local abort before MPI_INIT completed completed successfully, "
    "but am not able to aggregate error messages, and not able to guarantee that all other processes were killed!\n"
    "srun: error: cn12: tasks 0-3: Exited with exit code 1\n"
)


def test_mpi_init_failure_under_srun_points_at_slurm_pmi():
    d = diagnose_text(LOG_SRUN_NO_PMI)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.signature, rc.evidence[0].line) == (
        "config-error",
        "mpi-init-failed",
        7,
    )
    assert d.initiating_rank is None
    assert rc.fix.variant is not None and rc.fix.variant.id == "srun-without-pmi"
    assert "srun --mpi=pmix" in rc.fix.steps[0]
    assert rc.verify.startswith("srun --mpi=pmix")


def test_a_line_that_only_mentions_mpi_init_is_not_a_failure():
    d = diagnose_text(
        "# hvd.init() calls MPI_Init_thread; if it fails Open MPI prints an error and aborts\n"
        "mpi4py: MPI_Init_thread returned provided=MPI_THREAD_MULTIPLE\nstep 1 loss 7.1\n"
    )
    assert d.root_cause is None
