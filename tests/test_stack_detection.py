"""The stack a log comes from (rootrank.frameworks), read from what real logs carry (worker
prefixes, frames' package paths, framework start-up lines), and the fix and verification
command that follow it (serving engines, Megatron, Lightning, accelerate + DeepSpeed,
multi-node jobs, shell substitutions, imports of libraries the log never loaded).

The logs here are written from what vLLM (its Ray actors RayWorker / RayWorkerWrapper, its
logger "LEVEL MM-DD HH:MM:SS file.py:N]"), verl (Ray actors of class WorkerDict), LMDeploy,
Lightning, Megatron-LM, accelerate and torch's watchdog print.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.entry.commands import Launch, fit, ready
from rootrank.frameworks import stacks_in, stacks_of_paths


def _watchdog(prefix: str, rank: int, op: str = "ALLREDUCE", seq: int = 1) -> str:
    return (
        f"{prefix}[E ProcessGroupNCCL.cpp:474] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=1800000) "
        "ran for 1800305 milliseconds before timing out.\n"
    )


_IMA = (
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
)


@pytest.mark.parametrize(
    "line, stack",
    [
        ("(RayWorker pid=1080651) INFO worker.py:88] init", "vllm"),
        (
            "(RayWorkerWrapper pid=4009, ip=10.0.0.2) INFO 11-29 13:00:20 model_runner.py:1072] ok",
            "vllm",
        ),
        (
            "(VllmWorkerProcess pid=381) INFO 11-29 13:00:20 multiproc_worker_utils.py:215] up",
            "vllm",
        ),
        (
            "(WorkerDict pid=93663) INFO 02-21 04:32:47 model_runner_base.py:120] Writing input",
            "verl",
        ),
        ("2026-11-29 13:00:01,000 - lmdeploy - INFO - turbomind.py:201 - tp=4", "lmdeploy"),
        ("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4", "lightning"),
        ("[after megatron is initialized] datetime: 2026-11-29 12:58:02", "megatron"),
    ],
)
def test_a_line_names_its_stack(line, stack):
    assert stack in stacks_in(line)


def test_a_ray_worker_of_another_class_is_not_vllm():
    # a Ray Train worker is Ray Train's (its launcher is the python driver), never vLLM's
    assert stacks_in("(RayTrainWorker pid=77) epoch 3 loss 0.1") == {"ray-train"}


def test_frames_package_paths_name_the_stack():
    assert stacks_of_paths(
        [
            "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py",
            "megatron/core/distributed/param_and_grad_buffer.py",
            "C:\\env\\Lib\\site-packages\\lightning\\pytorch\\trainer\\trainer.py",
            "/opt/venv/lib/python3.11/site-packages/torch/distributed/fsdp/_runtime_utils.py",
        ]
    ) == {"vllm", "megatron", "lightning", "fsdp"}
    # a user's own directory that merely contains the word is not the package
    assert stacks_of_paths(["/home/me/vllm_bench.py", "/home/me/megatron_notes/train.py"]) == set()


def test_vllm_under_a_plain_rayworker_prefix_gets_the_vllm_fix_and_engine_verify():
    log = "".join(_watchdog(f"(RayWorker pid={1080651 + r}) ", r) for r in (0, 1))
    d = diagnose_text(log)
    rc = d.root_cause
    assert "vllm" in d.stack
    assert rc.signature == "nccl-watchdog-timeout" and rc.rank == 0
    assert rc.fix.variant is not None and rc.fix.variant.id == "vllm"
    assert "torchrun" not in rc.verify and "train.py" not in rc.verify
    assert "from vllm import LLM" in rc.verify


def test_an_illegal_memory_access_in_vllm_workers_gets_the_engine_fix():
    log = "".join(
        f"(RayWorkerWrapper pid=2211) ERROR 11-29 13:04:41 worker_base.py:464] {line}\n"
        for line in _IMA.splitlines()
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "cuda-illegal-memory-access"
    assert rc.fix.variant.id == "serving-engine"
    assert "enforce" in rc.fix.steps[1] and "--disable-custom-all-reduce" in rc.fix.steps[1]
    assert rc.verify.startswith("python -c \"from vllm import LLM; LLM('<model>'")
    assert "train.py" not in rc.verify and "--max-steps" not in rc.verify


def test_verl_rollout_fault_is_verified_by_verl_not_a_training_script():
    log = "".join(
        f"(WorkerDict pid=93663) WARNING 02-21 04:32:47 model_runner_base.py:143] {line}\n"
        for line in _IMA.splitlines()
    )
    d = diagnose_text(log)
    assert "verl" in d.stack
    rc = d.root_cause
    assert rc.fix.variant.id == "serving-engine"
    assert "python3 -m verl.trainer.main_ppo <your config overrides>" in rc.verify
    assert "actor_rollout_ref.rollout.enforce_eager=True" in rc.fix.code["verl"]


def test_an_illegal_memory_access_in_a_training_job_keeps_the_general_fix():
    rc = diagnose_text("[rank3]: " + _IMA.replace("\n", "\n[rank3]: ")).root_cause
    assert rc.signature == "cuda-illegal-memory-access"
    assert rc.fix.variant.id == "general"
    assert "CUDA_LAUNCH_BLOCKING=1" in rc.verify and "train.py" in rc.verify


def test_megatron_reduce_scatter_is_not_given_fsdp_advice():
    head = "[after megatron is initialized] datetime: 2026-11-29 12:58:02\n"
    log = head + "".join(
        _watchdog(f"[rank{r}]:", r, "_REDUCE_SCATTER_BASE", 1559) for r in (64, 65, 66, 67)
    )
    d = diagnose_text(log)
    rc = d.root_cause
    assert rc.failure_class == "collective-timeout"
    assert rc.fix.variant.id == "megatron-distributed-optimizer"
    text = " ".join(rc.fix.steps)
    assert "drop_last" not in text and "synced_gpus" not in text
    assert "py-spy dump" in text and "all_reduce_perf" in text
    # 68 ranks: the rerun is multi-node, not one node's torchrun
    assert "--nnodes=<nodes>" in rc.verify


def test_a_reduce_scatter_with_no_stack_shown_is_not_called_fsdp():
    log = "".join(_watchdog(f"[rank{r}]:", r, "_REDUCE_SCATTER_BASE", 1559) for r in (0, 1))
    rc = diagnose_text(log).root_cause
    assert rc.fix.variant.id == "general"
    # the step leads with what to do (issue 15, round 23), the engine left open after it
    assert rc.fix.steps[0].startswith("Find which it is from every rank's Python stack")
    assert "the log does not show which sharded data-parallel engine" in rc.fix.steps[0]


def test_lightning_start_up_broadcast_gets_the_lightning_fix():
    log = (
        "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n"
        "All distributed processes registered. Starting with 4 processes\n"
        + _watchdog("[rank1]:", 1, "BROADCAST", 1).replace("NumelIn=1048576", "NumelIn=1")
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "fsdp-init-collective-watchdog-timeout"
    assert rc.fix.variant.id == "lightning"
    assert "--ntasks-per-node" in rc.fix.steps[0] and "NumelIn" not in rc.fix.steps[0]


def test_accelerate_with_deepspeed_is_rerun_with_accelerate_not_torchrun():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/accelerate/commands/launch.py", line 861, in deepspeed_launcher\n'
        "    distrib_run.run(args)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 909, in run\n'
        "    elastic_launch(\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "src/grpo.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-11-29_15:43:03\n"
        "  host      : node01\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : -9 (pid: 14750)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 14750\n"
        "============================================================\n"
    )
    rc = diagnose_text(log, mask=False).root_cause
    assert rc.rank == 0
    assert rc.verify.startswith("accelerate launch --config_file <accelerate config (DeepSpeed)>")
    assert "torchrun" not in rc.verify.split("  # ")[0]
    assert "src/grpo.py" in rc.verify


def test_a_rank_named_in_the_message_makes_the_job_multi_node():
    log = (
        "[rank0]:[E804 23:05:54.817424543 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "Received a dump signal due to a collective timeout from  rank 13 and we will try our best to dump "
        "the debug info. Last enqueued NCCL work: 1261, last completed NCCL work: 1259.\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.captures["timeout_from_rank"] == "13"
    # 14 ranks do not fit one node of 8: the rerun is one torchrun per node
    assert "--nproc-per-node=gpu --nnodes=<nodes> --node-rank=<node rank>" in rc.verify


def test_the_node_flags_never_go_inside_a_shell_substitution():
    multi = Launch("torchrun", None, "pretrain_gpt.py", None, 256, multi_node=True)
    sample = "torchrun --nproc-per-node=$(nvidia-smi -L | wc -l) pretrain_gpt.py ..."
    assert fit(sample, multi) == (
        "torchrun --nproc-per-node=$(nvidia-smi -L | wc -l) --nnodes=<nodes> --node-rank=<node rank>"
        " --rdzv-backend=c10d --rdzv-endpoint=<master host>:<port> pretrain_gpt.py ..."
    )


def test_an_import_of_a_library_the_log_never_loaded_is_a_blank():
    plain = Launch("torchrun", None, None, None, None)
    assert ready('python -c "import torch; import flash_attn"  # ok', plain) == (
        'python -c "import torch; import <flash_attn>"  # ok'
    )
    loaded = Launch("torchrun", None, None, None, None, libraries=frozenset({"flash_attn"}))
    assert ready('python -c "import torch; import flash_attn"', loaded) == (
        'python -c "import torch; import flash_attn"'
    )


def test_lmdeploy_is_verified_by_its_pipeline():
    engine = Launch(None, None, None, None, 4, engine="lmdeploy")
    out = fit("CUDA_LAUNCH_BLOCKING=1 python train.py --max-steps 100  # completes", engine)
    assert out == (
        'CUDA_LAUNCH_BLOCKING=1 python -c "from lmdeploy import pipeline, TurbomindEngineConfig; '
        "print(pipeline('<model>', backend_config=TurbomindEngineConfig(tp=4))('hello'))\"  # completes"
    )


def test_a_library_loaded_with_one_the_log_shows_may_be_imported():
    from rootrank.entry.commands import launch_of
    from rootrank.scan import ScanState

    state = ScanState()
    shown = ["/opt/venv/lib/python3.10/site-packages/transformers/tokenization_utils_fast.py"]
    launch = launch_of(state, None, shown)
    assert {"transformers", "tokenizers", "safetensors"} <= launch.libraries
    assert "flash_attn" not in launch.libraries
    assert ready('python -c "from tokenizers import Tokenizer"', launch) == (
        'python -c "from tokenizers import Tokenizer"'
    )
