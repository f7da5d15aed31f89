"""Kinds of reasoning the r19a held-out set showed missing (round 19, /work/notes/heldout-r19a).

Fixtures in ``tests/r19a/`` are lines cut from real logs, as the tools printed them:
09 from NVIDIA-NeMo/Speech#14883 (PyTorch 2.5+ ProcessGroupNCCL, torchrun's ``[rankN]:``
prefix; the last line is cut mid-sentence as the issue store keeps it); 01 the ``Launching on``
and store-barrier lines (grep of those two kinds, in file order) of loubnabnl/nanotron-smol-cluster
``logs/32n-2gbs-test-3619762.out`` (Megatron-DeepSpeed on LUMI, ``srun --label``, 256 ranks;
``tests/fix_variants/store-barrier-timeout/silent-node.log``); 02
lines 193-331 (contiguous) of elena-lyulina/Megatron-LM-Attention-Benchmark ``attn_bench/logs/2611382.err``
(Megatron-LM, ``srun -l``, 14 nodes x 4, NCCL 2.29.3); 11 hiyouga/LlamaFactory#7233 (the stored
chunk of the paste, which ends on rank 3's ``Traceback`` header); 06 the last 12 lines of the same
repository's ``attn_bench/logs/2403450.err`` (slurmstepd's STEP line under srun's `` 0: `` label); 04
line 113 (modelopt's UserWarning at import) and rank 30's ``30: ``-labelled lines from its
``Traceback`` to its ``StopIteration`` of the same repository's ``attn_bench/logs/2327229.err``; 03
lines 189-308 (rank 0's traceback to its OutOfMemoryError) of ``attn_bench/logs/2678584.err`` (kept as
``tests/fix_variants/cuda-oom/unfused-attention.log``); 05 lines 46-122 (rank 1's first traceback) of
``attn_bench/logs/2570257.err`` (``tests/fix_variants/stale-file-handle/compiler-cache.log``); 13
huggingface/trl#2923 as posted (``> `` quote markers;
``tests/fix_variants/monitored-barrier-rank-failed/stuck-creating-group.log``). ``run-2rank-file-not-
found-rank0-header-cut.log``: a real run on this machine (torch 2.13 CPU, gloo, ``torchrun
--nproc-per-node=2`` of a script that opens a missing ``data/train.json`` on every rank), its first 15
lines (the paste ends on rank 0's ``Traceback`` header).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).parent / "r19a"


#: r19a 01's fixture (kept with the fix variant it selects).
SILENT_NODE = HERE.parent / "fix_variants" / "store-barrier-timeout" / "silent-node.log"


def _read(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def test_one_more_enqueued_collective_than_the_dump_receivers_is_a_desync_on_that_rank():
    """Rank 3's watchdog: ``last enqueued work: 42, last completed work: 41``; rank 1, which
    only received rank 3's dump signal: ``Last enqueued NCCL work: 41, last completed NCCL
    work: 41``: work 42 is a collective rank 1 never issued."""
    diag = diagnose_text(_read("09-rank3-seqnum42-peer-dump-41.log"))
    rc = diag.root_cause
    assert rc.failure_class == "collective-desync"
    assert rc.signature == "watchdog-counters-crossed"
    assert diag.initiator.rank == 3
    assert "only rank 3 issued" in diag.initiator.why


def test_a_dump_receiver_with_work_outstanding_proves_no_extra_collective():
    text = _read("09-rank3-seqnum42-peer-dump-41.log").replace(
        "Last enqueued NCCL work: 41, last completed NCCL work: 41",
        "Last enqueued NCCL work: 42, last completed NCCL work: 41",
    )
    diag = diagnose_text(text)
    assert diag.root_cause.signature != "watchdog-counters-crossed"


def test_the_silent_block_of_a_store_barrier_timeout_is_the_node_that_never_joined():
    """246 ranks time out in the store-based barrier (world_size=256, worker_count=247);
    ranks 232-239 print no line at all: one node's tasks never started."""
    diag = diagnose_text(SILENT_NODE.read_text("utf-8"))
    assert diag.root_cause.failure_class == "rendezvous-failure"
    assert diag.root_cause.fix.variant is not None
    assert diag.root_cause.fix.variant.id == "silent-node"
    assert "from rank 232 on" in diag.root_cause.fix.steps[0]
    assert diag.initiator.rank == 232
    assert diag.initiator.strategy == "silent_block"
    assert "ranks 232-239 (8 of world size 256) print no line at all" in diag.initiator.why


def test_a_paste_of_a_few_reporters_names_no_silent_block():
    lines = SILENT_NODE.read_text("utf-8").splitlines()
    few = [ln for ln in lines if "store based barrier" in ln][:40]
    diag = diagnose_text("\n".join(few) + "\n")
    assert diag.initiator.strategy != "silent_block"
    assert diag.initiator.rank is None


def test_one_hosts_tasks_exiting_alone_under_srun_name_that_host_and_its_first_rank():
    """Ranks 32-35 (nid006742) raise ncclInvalidUsage with 'Last error: Failed to initialize
    any NET plugin'; srun: ``nid006742: tasks 32-33: Exited with exit code 1`` (and 34-35),
    every other task ``Killed``."""
    diag = diagnose_text(_read("02-node-32-35-net-plugin-srun-exited.log"), mask=False)
    rc = diag.root_cause
    assert rc.signature == "nccl-net-plugin-init-failed"
    assert rc.failure_class == "rank-environment-mismatch"
    assert diag.initiator.rank == 32
    assert diag.initiator.strategy == "one_host_exited"
    assert "all on nid006742" in diag.initiator.why
    steps = " ".join(rc.fix.steps)
    assert "--exclude=<node>" in steps
    assert "set_device" not in steps


def test_tasks_of_two_hosts_exiting_name_no_node():
    text = _read("02-node-32-35-net-plugin-srun-exited.log").replace(
        "srun: error: nid006742: tasks 34-35: Exited", "srun: error: nid006743: tasks 34-35: Exited"
    )
    diag = diagnose_text(text, mask=False)
    assert diag.initiator.strategy != "one_host_exited"


def test_a_bare_traceback_header_at_the_end_of_a_paste_is_no_competing_failure():
    diag = diagnose_text(_read("11-rank1-shm-segment-rank3-header-cut.log"))
    assert diag.root_cause.failure_class == "nccl-system-error"
    assert diag.initiator.rank == 1


def test_a_cut_traceback_with_a_collective_frame_still_leaves_the_order_open():
    frame = (
        '[rank3]:   File "/root/miniconda3/envs/llm_demo/lib/python3.10/site-packages/torch/'
        'distributed/distributed_c10d.py", line 4551, in barrier\n'
    )
    text = _read("11-rank1-shm-segment-rank3-header-cut.log") + frame
    assert diagnose_text(text).initiator.rank is None


def test_a_scheduler_kill_under_an_srun_label_has_no_initiating_rank():
    diag = diagnose_text(_read("06-srun-label-step-time-limit.log"))
    assert diag.root_cause.signature == "slurm-time-limit"
    assert diag.root_cause.failure_class == "preemption-sigterm"
    assert diag.initiator.rank is None
    assert diag.initiator.strategy == "scheduler_kill"


def test_an_import_error_caught_into_a_warning_is_no_failure_and_stopiteration_is_data_exhausted():
    diag = diagnose_text(_read("04-modelopt-warning-then-tp-src-stopiteration.log"))
    rc = diag.root_cause
    assert rc.signature == "data-iterator-exhausted"
    assert rc.failure_class == "config-error"
    assert "train_iters x global_batch_size" in " ".join(rc.fix.steps)
    assert all(f.signature != "package-version-incompatible" for f in diag.collateral)


def test_the_warning_alone_is_no_failure():
    warning = _read("04-modelopt-warning-then-tp-src-stopiteration.log").splitlines()[0]
    diag = diagnose_text(warning + "\n")
    assert diag.root_cause is None or diag.root_cause.signature != "package-version-incompatible"


def test_an_oom_in_unfused_attention_asks_for_a_fused_kernel_not_the_allocator_setting():
    """16 GiB asked with 5.48 GiB free and 1 GiB reserved-unallocated, in Transformer Engine's
    FusedScaleMaskSoftmax.forward_torch_softmax (the unfused path)."""
    text = (HERE.parent / "fix_variants" / "cuda-oom" / "unfused-attention.log").read_text("utf-8")
    rc = diagnose_text(text).root_cause
    assert rc.failure_class == "cuda-oom"
    assert rc.fix.variant is not None and rc.fix.variant.id == "unfused-attention"
    assert "--attention-backend flash" in rc.fix.steps[0]
    assert not rc.fix.steps[0].startswith("The message itself says it")


def test_a_stale_handle_in_the_triton_kernel_cache_moves_the_caches_to_local_disk():
    text = (HERE.parent / "fix_variants" / "stale-file-handle" / "compiler-cache.log").read_text(
        "utf-8"
    )
    diag = diagnose_text(text)
    rc = diag.root_cause
    assert rc.signature == "stale-file-handle"
    assert diag.initiator.rank == 1
    assert rc.fix.variant is not None and rc.fix.variant.id == "compiler-cache"
    assert "TRITON_CACHE_DIR=/tmp/" in rc.fix.steps[0]
    assert "TORCHINDUCTOR_CACHE_DIR" in rc.fix.steps[0]


def test_the_barrier_named_rank_stuck_creating_a_group_asks_for_one_new_group_order():
    name = "monitored-barrier-rank-failed"
    text = (HERE.parent / "fix_variants" / name / "stuck-creating-group.log").read_text("utf-8")
    diag = diagnose_text(text)
    rc = diag.root_cause
    assert rc.signature == name
    assert diag.initiator.rank == 0
    assert rc.fix.variant is not None and rc.fix.variant.id == "stuck-creating-group"
    assert "in the same order" in rc.fix.steps[0]
    assert not rc.fix.steps[0].startswith("Open rank")


def test_a_bare_header_beside_a_plain_unexplained_exception_is_that_ranks_own_copy():
    """Both ranks raised the same FileNotFoundError (the run shows it); cut after rank 0's
    header, the log cannot tell which came first."""
    diag = diagnose_text(_read("run-2rank-file-not-found-rank0-header-cut.log"))
    assert diag.root_cause.signature == "user-code-exception"
    assert diag.initiator.rank is None
