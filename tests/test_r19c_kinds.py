"""Round-19c kinds of reasoning (held-out set /work/notes/heldout-r19c, now a development set).

The fixtures in ``tests/r19c/`` are real runs on this machine (torch 2.13 CPU, gloo,
torchrun, 2026-12-04) unless a test says otherwise; a ``-tail`` fixture is a contiguous cut
of the ``-whole`` one beside it (one rank's traceback only, as a paste in an issue holds).

B. c10d's monitoredBarrier raises ``[Rank 0]: Ranks 2 failed to pass monitoredBarrier`` with
   the plural "Ranks" even for a single missing rank (wait_all_ranks, and always under the
   TORCH_DISTRIBUTED_DEBUG=DETAIL ProcessGroupWrapper): the listed rank is the initiator, the
   printing rank 0 only the reporter. Script: 3 ranks, DETAIL, rank 2 sleeps 10 s before
   ``all_gather_into_tensor`` with a 4 s process-group timeout.

C. The reporting rank's own traceback after its barrier report ("Rank 1 successfully reached
   monitoredBarrier, but received errors ... from rank 0", then the same rank's ``[... TP1]
   Scheduler hit an exception: Traceback ...`` as SGLang logs it) is the consequence on that
   rank, not a second failure competing with the named rank 0. Script: 2 ranks, rank 0
   SIGKILLs itself while "loading", rank 1 waits in monitored_barrier inside a scheduler
   wrapper that logs ``traceback.format_exc()``; ``-head`` is the first 8 lines of its output
   after torchrun's banner (lines 5-12, the traceback cut inside torch's frame).

D. A point-to-point op that timed out (``WorkNCCL(..., OpType=RECV, ...)``) has one peer; in
   a job of two ranks (``torchrun --nnodes=2 --nproc_per_node=1``) that is the other rank
   (initiator.p2p_peer). A serving launch (``-m chitu``) waiting in that RECV is idle, not
   broken: the fix is a longer process-group timeout or a heartbeat. NCCL cannot run on this
   machine: ``11-two-node-recv-timeout-serving.log`` is lines 3, 8 and 13-15 of the set's case
   11 (the two posted torchrun commands and rank 1's watchdog lines, as the issue printed
   them); the two ``pipeline`` fixtures put rank 1's first two of those lines (the
   collector's time/host prefix dropped) under a training launch of 2 and of 4 ranks.

A. In a log of one process (no rank, no launcher), the last traceback ended it: the uncaught
   ``torch.OutOfMemoryError`` outranks the tokenizer's earlier "Token indices sequence length
   is longer ..." warning the run went past (graph._ended_processes). Its frames through
   ``torch/nn/parallel/data_parallel.py`` ("replica 0 on device 0") are nn.DataParallel: one
   process drives every GPU (cuda-oom variant ``data-parallel``), and oumi's CLI frames name
   the launch to verify with (frameworks.FRAMEWORK_ENTRY). CUDA cannot run here: the fixture
   is lines 9-135 of the set's case 03 (oumi's own output, cut before the first warning).

E. An embedding lookup's device-side assert (``srcIndex < srcSelectDimSize``) with no training
   progress before it is a vocabulary the model was built too small for, hit by every rank's
   first batches alike: the one rank whose traceback follows is not named
   (initiator.table_index_before_progress). ``-first-step`` is lines 4-7 of the set's case 14
   (ATen's kernel printf, then rank 0's traceback, cut); ``-after-progress`` puts a
   Megatron iteration line written in Megatron's format before the same lines.

F. Fix and verify from what the log shows: ColossalAI's per-step "CPU memory usage: ... MB"
   lines just before an exit -9 (worker-sigkill-exit variant ``colossalai-cpu-memory``; the
   record under rich's blank time column and torch 1.x's dotted
   ``torch.distributed.elastic...`` agent line are no longer passed over / taken as the work);
   a rank's own ``[rank0]:`` traceback (init_process_group's excepthook) with no launcher
   shown means a multi-process launch (verify with torchrun, not ``python``); a Kubeflow
   MPIJob's ``<job>-launcher:`` pod prefix means mpirun. Fixtures: lines 1-5 of the set's case
   06, the whole 6 lines of case 12 (both as their issues printed them).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

_DATA = Path(__file__).parent / "r19c"


def _read(name: str) -> str:
    return (_DATA / name).read_bytes().decode("utf-8")  # its \r progress frames kept


# B. "Ranks N" with one rank names N


def test_plural_ranks_with_one_rank_names_that_rank_not_the_reporter() -> None:
    d = diagnose_text(_read("09-ranks-2-monitoredbarrier-rank0-tail.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "monitored-barrier-rank-failed"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 19
    assert "Ranks 2 failed to pass monitoredBarrier" in d.root_cause.evidence[0].text


def test_whole_detail_run_names_the_late_rank() -> None:
    d = diagnose_text(_read("09-detail-allgather-rank2-late-whole.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2


# C. the reporter's follow-on traceback


def test_reporters_own_traceback_after_its_report_leaves_the_named_rank() -> None:
    d = diagnose_text(
        _read("10-reporter-rank1-scheduler-traceback-head.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "monitored-barrier-rank-failed"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank == 0


def test_reporter_whole_run_still_names_rank_zero() -> None:
    d = diagnose_text(
        _read("10-reporter-rank1-scheduler-traceback-whole.log"), "run.log", mask=False
    )
    assert d.initiating_rank == 0


# D. a timed-out RECV in a two-rank job names the sender; a serving loop is idle


def _fix_of(name: str) -> tuple[int | None, str, str, str]:
    d = diagnose_text(_read(name), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    fix = d.root_cause.fix
    variant = fix.variant.id if fix.variant else ""
    return d.initiating_rank, variant, fix.steps[0], d.root_cause.verify


def test_recv_timeout_in_two_rank_server_names_sender_and_says_idle() -> None:
    rank, variant, step, verify = _fix_of("11-two-node-recv-timeout-serving.log")
    assert rank == 0
    assert variant == "idle-server-p2p"
    assert step.startswith("Rank 1 waited in a point-to-point RECV (SeqNum 3313) for rank 0")
    assert "timeout=timedelta(hours=24)" in step and "heartbeat" in step
    # the verification keeps the log's own launch
    assert verify.startswith("torchrun --nnodes=2 --nproc_per_node=1")
    assert "-m chitu" in verify


def test_recv_timeout_in_two_rank_training_names_sender() -> None:
    rank, variant, step, _ = _fix_of("11-two-rank-recv-timeout-pipeline.log")
    assert rank == 0
    assert variant == "p2p-peer"
    assert "only peer in this two-rank job is rank 0" in step


def test_recv_timeout_with_four_ranks_names_no_rank() -> None:
    rank, variant, _, _ = _fix_of("11-four-rank-recv-timeout-pipeline.log")
    assert rank is None
    assert variant not in ("p2p-peer", "idle-server-p2p")


# A. the exception that ended the one process outranks a warning it ran past


def test_uncaught_oom_outranks_earlier_tokenizer_warning_and_reads_data_parallel() -> None:
    d = diagnose_text(
        _read("03-oumi-dataparallel-oom-after-token-warning.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 125
    assert d.initiating_rank is None
    fix = d.root_cause.fix
    assert fix.variant is not None and fix.variant.id == "data-parallel"
    assert "one Python process drives all the GPUs" in fix.steps[0]
    assert "under torchrun with as many processes per node as GPUs" in fix.steps[0]
    assert d.root_cause.verify.startswith("oumi distributed torchrun -m oumi train -c")


# E. a table-index assert before any progress is every rank's


def test_embedding_index_assert_before_progress_names_no_rank() -> None:
    d = diagnose_text(
        _read("14-embedding-index-assert-rank0-first-step.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-device-side-assert"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank is None


def test_embedding_index_assert_after_progress_keeps_the_rank() -> None:
    d = diagnose_text(
        _read("14-embedding-index-assert-rank0-after-progress.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-device-side-assert"
    assert d.initiating_rank == 0


# F. fix and verify from the log's own evidence


def test_colossalai_cpu_memory_lines_before_exit_9_name_gemini_placement() -> None:
    d = diagnose_text(_read("06-colossalai-cpu-memory-then-exit-9.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "host-oom-killed"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 5
    fix = d.root_cause.fix
    assert fix.variant is not None and fix.variant.id == "colossalai-cpu-memory"
    assert "CPU memory usage: 44097.03 MB" in fix.steps[0]
    assert "placement_policy" in fix.steps[0]
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=gpu ")


def test_rank_prefixed_traceback_verifies_with_torchrun() -> None:
    d = diagnose_text(
        _read("14-embedding-index-assert-rank0-first-step.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.verify.startswith(
        "CUDA_LAUNCH_BLOCKING=1 torchrun --nproc-per-node=gpu run_simple_mcore_train_loop.py"
    )


def test_mpijob_launcher_pod_prefix_verifies_with_mpirun() -> None:
    d = diagnose_text(_read("12-mpijob-launcher-pod-watchdog-rank2.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
    assert "mpirun -np <np> python" in d.root_cause.verify
    assert "torchrun" not in d.root_cause.verify
