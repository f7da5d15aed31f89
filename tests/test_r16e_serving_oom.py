"""Round-16 set E kind: a serving engine's fragmented CUDA OOM (held-out GitHub-issue
logs scored blind at b8c6e93; see the set's MISSES.md).

Every log here is written for this test in the tools' own wording (vLLM 0.6's multiproc worker
prefix and PyTorch's allocator message), never copied from a held-out log.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# --- a serving engine's fragmented OOM gets the engine's levers, not a micro-batch -------------

#: vLLM 0.6 multiproc tensor-parallel workers: one worker's MoE forward runs out of memory at
#: start-up with a large reserved-but-unallocated remainder.
LOG_VLLM_WORKER_FRAGMENTED = (
    "INFO 10-02 08:15:02 config.py:887] Defaulting to use mp for distributed inference\n"
    "(VllmWorkerProcess pid=7311) INFO 10-02 08:15:20 multiproc_worker_utils.py:215] Worker ready; awaiting tasks\n"
    "(VllmWorkerProcess pid=7311) ERROR 10-02 08:16:41 multiproc_worker_utils.py:233] Exception in worker "
    "VllmWorkerProcess while processing method determine_num_available_blocks.\n"
    "(VllmWorkerProcess pid=7311) ERROR 10-02 08:16:41 multiproc_worker_utils.py:233] torch.OutOfMemoryError: "
    "CUDA out of memory. Tried to allocate 2.10 GiB. GPU 1 has a total capacity of 23.64 GiB of which 1.40 GiB is free. "
    "Including non-PyTorch memory, this process has 22.22 GiB memory in use. Of the allocated memory 19.80 GiB is "
    "allocated by PyTorch, and 1.91 GiB is reserved by PyTorch but unallocated.\n"
)


def test_a_vllm_worker_fragmented_oom_gets_engine_levers_not_a_micro_batch():
    d = diagnose_text(LOG_VLLM_WORKER_FRAGMENTED)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.signature, rc.evidence[0].line) == ("cuda-oom", "cuda-oom", 4)
    assert rc.fix.variant is not None and rc.fix.variant.id == "fragmentation-serving-engine"
    assert "expandable_segments:True" in rc.fix.steps[0]
    assert "--max-num-batched-tokens" in rc.fix.steps[1]
    assert not any(
        "micro-batch" in step or "gradient accumulation" in step for step in rc.fix.steps
    )


def test_a_fragmented_oom_after_training_steps_keeps_the_training_fallback_with_vllm_in_the_log():
    # an RL trainer beside vLLM rollouts: ranks printed training steps first
    log = (
        "INFO 03-04 11:02:10 [llm_engine.py:234] vLLM rollout engine ready\n"
        "[rank0]: step 10/500 loss 1.234\n"
        "[rank1]: step 10/500 loss 1.241\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
        "capacity of 79.10 GiB of which 1.01 GiB is free. Of the allocated memory 74.2 GiB is allocated by "
        "PyTorch, and 2.40 GiB is reserved by PyTorch but unallocated.\n"
    )
    d = diagnose_text(log)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "cuda-oom"
    assert d.initiating_rank == 1
    assert rc.fix.variant is not None and rc.fix.variant.id == "fragmentation"
