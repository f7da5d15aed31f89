"""Round 18 kinds of reasoning from held-out set r18a.

E. A launch command a framework prints in its own words before it starts it (ms-swift's
   ``run sh: `<argv>``` from swift/cli/main.py) is the job's command: the verification reruns
   it whole, with every argument of the failed run.
A. An argument check reached from argument parsing (``parse_args_into_dataclasses`` ->
   ``__post_init__`` -> ``_check_*`` in ``*_args.py``), whose message speaks of options ("is not
   compatible with"), is a configuration error, even when the framework was installed from a
   checkout in the user's home (its frames read as the user's).

Fixture ``data/r18a/swift-fsdp2-args-check.log``: lines 1-35 and 64-71 of a real ms-swift run's
stdout (fyh2001/megatron-sft-recipes, experiments/gemma4_opt/p0_train_align/
run_20260425_121042_mirror_ds/stdout.log @d16a2d1), unchanged.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.scan import framework_command

DATA = Path(__file__).parent / "data" / "r18a"


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_a_swift_argument_check_is_a_config_error_and_its_run_sh_line_is_the_verify():
    d = diagnose_text(_read("swift-fsdp2-args-check.log"))
    rc = d.root_cause
    assert rc.failure_class == "config-error"
    assert rc.signature == "library-argument-check-failed"
    assert d.initiating_rank is None  # every rank parses the same arguments
    assert "sft_args.py:337" in rc.fix.steps[0]
    assert "save_only_model=False" in rc.fix.steps[0]
    # the printed launch, whole: the interpreter, torchrun's options, the script, its arguments
    assert rc.verify.startswith(
        "/usr/local/bin/python -m torch.distributed.run --nproc_per_node 8 --master_port 29501 "
    )
    assert "swift/cli/sft.py --model " in rc.verify
    assert "--save_only_model true --padding_free false --seed 42 --data_seed 42" in rc.verify


def test_framework_command_reads_run_sh_lines_that_launch_a_script():
    line = _read("swift-fsdp2-args-check.log").splitlines()[0]
    kind, command = framework_command(line) or ("", "")
    assert kind == "sh"
    assert command.startswith("/usr/local/bin/python -m torch.distributed.run --nproc_per_node 8")
    assert command.endswith("--seed 42 --data_seed 42")
    # a line that prints no launch of a script or module is no command
    assert framework_command("run sh: `ls -l /tmp`") is None
    assert framework_command("Setting OMP_NUM_THREADS environment variable") is None


def test_nccl_ib_async_error_event_port_error_is_a_fabric_fault_and_port_active_is_not():
    """B. NCCL 2.19+ logs the ibv async events it calls non-fatal as "NET/IB : <dev>:<port> Got
    async error event: <event>" (transport/net_ib.cc); "port error" is the link leaving Active.
    Lines of a real llm-d / vLLM pod log (llm-d/llm-d#191), kept as the signature's fixture."""
    sigs = Path(__file__).parent.parent / "signatures" / "network"
    d = diagnose_text((sigs / "ib-async-event.positive-2.log").read_text(encoding="utf-8"))
    rc = d.root_cause
    assert rc.failure_class == "network-fabric-error"
    assert rc.signature == "ib-async-event"
    assert d.initiating_rank is None  # [0] is NCCL's CUDA device, no rank
    assert rc.verify.startswith("ibstat mlx5_32 ")
    # the port coming back up, alone, is no failure
    back = diagnose_text((sigs / "ib-async-event.near-miss-2.log").read_text(encoding="utf-8"))
    assert back.root_cause is None or back.root_cause.signature != "ib-async-event"


def test_the_rank_in_an_object_size_broadcast_left_the_step_its_peer_is_in():
    """C. broadcast_object_list first broadcasts the objects' sizes (a Long tensor of shape
    [n]); a rank there while its peer all-reduces Float gradients left the common path.
    Fixture: the 4-line paste of speechbrain/speechbrain#2401 (TORCH_DISTRIBUTED_DEBUG=DETAIL)."""
    d = diagnose_text(_read("fingerprint-broadcast-long-vs-allreduce-float.log"))
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "object_broadcast_rank"


def test_an_object_size_broadcast_against_a_bucket_allreduce_names_the_broadcasting_rank():
    """The same reading on the fingerprint pair the branch-on-a-value fixture used to carry
    (ALLREDUCE Float [8388608] on rank 1, BROADCAST Long [1] on rank 0): rank 0 took the branch,
    and the fix names it (variant rank-branch)."""
    d = diagnose_text(_read("fingerprint-object-broadcast-vs-bucket-allreduce.log"))
    assert d.initiating_rank == 0
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "rank-branch"
    assert d.root_cause.fix.steps[0].startswith(
        "Rank 0 runs BROADCAST while the others run ALLREDUCE"
    )


def test_two_float_broadcasts_of_different_shapes_name_no_side():
    """Both sides in a BROADCAST of Float tensors (DDP's coalesced buffers, 24084544 vs 64
    elements: modelscope/ms-swift#10183): no object-size broadcast, so no side is named."""
    d = diagnose_text(_read("fingerprint-broadcast-shape-pair.log"))
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank is None


def test_a_file_one_host_loaded_and_another_hosts_rank_cannot_find_is_node_local_storage():
    """A (01). pdsh labels each line with its host: node 'localhost' loads the GPT index cache,
    a rank on 192.168.205.202 raises FileNotFoundError for the same path. Lines 1006-1008 and
    1013-1038 of a real Megatron-DeepSpeed 2-node log (stark-sim/megatron-deepspeed-lock-clock,
    .context/watch_and_launch_dual8_tp4pp1dp2_20260331.log @f3bf150), the signature's fixture."""
    sigs = Path(__file__).parent.parent / "signatures" / "data"
    d = diagnose_text(
        (sigs / "file-missing-on-other-node.positive.log").read_text(encoding="utf-8")
    )
    rc = d.root_cause
    assert rc.failure_class == "config-error"
    assert rc.signature == "file-missing-on-other-node"
    # a fault of one node's own: the rank that reports it is no copy of an every-rank error
    assert d.initiating_rank == 4
    assert rc.rank == 4 and rc.ranks == [4]
    assert [e.line for e in rc.evidence] == [29, 1]
    assert "on storage every node mounts" in rc.fix.steps[0]
    assert "--data-cache-path" in rc.fix.steps[0]
    assert rc.verify.startswith("ssh ")
    assert rc.verify.split("  # ")[0].endswith("8cbe547d3d2e5414d9e875127d540d2c_doc_idx.npy")
    # the same traceback with no other host's line naming the path stays a plain exception
    near = (sigs / "file-missing-on-other-node.near-miss.log").read_text(encoding="utf-8")
    assert diagnose_text(near).root_cause.signature == "user-code-exception"


def test_not_divisible_names_the_divisors_of_the_logged_dimension_and_reruns_with_one():
    """D. "28 is not divisible by 8" (Megatron's ensure_divisibility): the fix lists the sizes
    that divide 28 and names one that also divides 8; the verify reruns the printed launch with
    that size instead of the failing one. Lines 13 and 1498-1527 of a real Megatron-DeepSpeed
    log (stark-sim/megatron-deepspeed-lock-clock, experiments/_screen_boot/
    power_tp8dp2_baseline_20260312_1930.log @f3bf150)."""
    d = diagnose_text(_read("megatron-ds-tp8-28-heads.log"))
    rc = d.root_cause
    assert rc.failure_class == "config-error"
    assert rc.signature == "megatron-not-divisible"
    assert d.initiating_rank is None
    step = rc.fix.steps[0]
    assert "divides 28: 1, 2, 4, 7, 14, 28 do, 8 does not" in step
    assert "use 4" in step and "32 heads" not in step
    assert "--tensor-model-parallel-size 4 " in rc.verify
    assert "--tensor-model-parallel-size 8" not in rc.verify


def test_divisor_values_and_parallel_size_rewrite():
    from rootrank.entry.commands import divisor_values, with_parallel_size

    assert divisor_values("28", "8") == {"divisors": "1, 2, 4, 7, 14, 28", "fit_size": "4"}
    assert divisor_values("40", "3") == {"divisors": "1, 2, 4, 5, 8, 10, 20, 40", "fit_size": "1"}
    assert divisor_values("32", "8") == {}  # divisible: nothing to suggest
    assert divisor_values("151936", "7") == {}  # a vocabulary: no parallel size from it
    cmd = "deepspeed --num_gpus 16 pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8  # x"
    assert with_parallel_size(cmd, "8", "4") == cmd  # two options at 8: which failed is unknown
    one = "torchrun pretrain_gpt.py --tensor-model-parallel-size=8 --num-layers 8  # x"
    assert with_parallel_size(one, "8", "4") == (
        "torchrun pretrain_gpt.py --tensor-model-parallel-size=4 --num-layers 8  # x"
    )


def test_nccl_allocation_failure_while_groups_form_means_the_gpu_was_taken():
    """D. NCCL's 'Failed to CUDA calloc async 4 bytes' inside new_group, reached from
    Megatron's initialize_model_parallel, came before any model tensor existed: the GPU was
    held by something else (nvidia-smi, free GPUs), not filled by the job (no smaller batch).
    Lines 884-908 of a real Megatron-DeepSpeed 2-node log (stark-sim/megatron-deepspeed-lock-
    clock, .context/dual8_tp4pp1dp2_20260328_r2.log @f3bf150)."""
    fixture = Path(__file__).parent / "fix_variants" / "nccl-cuda-oom"
    d = diagnose_text((fixture / "occupied-at-group-creation.log").read_text(encoding="utf-8"))
    rc = d.root_cause
    assert rc.failure_class == "cuda-oom"
    assert rc.signature == "nccl-cuda-oom"
    assert rc.rank == 0
    assert rc.fix.variant is not None and rc.fix.variant.id == "occupied-at-group-creation"
    assert "nvidia-smi --query-compute-apps" in rc.fix.steps[0]
    assert "micro-batch" not in rc.fix.steps[0]
    assert "no other process on the job's GPUs" in rc.verify


def test_an_oom_of_gibs_in_cross_entropy_is_the_full_vocabulary_logits():
    """D (05). 'Tried to allocate 16.00 GiB' with F.cross_entropy the innermost frame: the
    loss over full-vocabulary logits; the fix chunks or fuses the loss before it speaks of
    fragmentation. Lines 60-93 of a real accelerate FSDP2 run's stdout (fyh2001/megatron-sft-
    recipes, experiments/gemma4_opt/p0_baseline_fsdp2_cp/run_20260424_192212_cp1_dp8/stdout.log
    @d16a2d1)."""
    fixture = Path(__file__).parent / "data" / "r18a"
    d = diagnose_text((fixture / "cuda-oom-cross-entropy.log").read_text(encoding="utf-8"))
    rc = d.root_cause
    assert rc.failure_class == "cuda-oom"
    assert rc.rank == 4
    assert rc.fix.variant is not None and rc.fix.variant.id == "loss-over-logits"
    assert "train_fsdp2_cp.py:197" in rc.fix.steps[0]
    assert "LigerFusedLinearCrossEntropyLoss" in rc.fix.steps[0]
    assert "the 16.00 GiB it asked for is made by cross_entropy over the logits" in rc.fix.steps[0]
