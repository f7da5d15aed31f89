"""Rank 0's copy of an error raised inside a collective call names no rank.

A collective is made by every member of its group: an error raised inside the call (a
synchronous NCCL error returned to the caller, not a peer's timeout) shows that the job had
other ranks, each making the same call. When rank 0 is the only rank the log shows, its
copy of the error is what rank-0-only output keeps (vLLM's engine process is TP rank 0 and
prints ``[rank0]:``; its TP workers make the same pynccl all-reduce; a launch script that
logs rank 0 alone), not evidence that rank 0 started it (``filtered_view``, rule
``only_visible_rank``).

Logs written here in vLLM 0.5's shape (``vllm/distributed/device_communicators/pynccl.py``
``all_reduce`` -> ``pynccl_wrapper.py`` ``NCCL_CHECK``: ``RuntimeError(f"NCCL error:
{error_str}")``) and torch.distributed's (``distributed_c10d.py`` ``all_reduce``).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

_VLLM = "/opt/venv/lib/python3.10/site-packages/vllm"
_TORCH = "/opt/venv/lib/python3.10/site-packages/torch"


def _pynccl_trace(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "{_VLLM}/worker/worker.py", line 179, in determine_num_available_blocks',
        f"{p}     self.model_runner.profile_run()",
        f'{p}   File "{_VLLM}/distributed/communication_op.py", line 11, in'
        " tensor_model_parallel_all_reduce",
        f"{p}     return get_tp_group().all_reduce(input_)",
        f'{p}   File "{_VLLM}/distributed/parallel_state.py", line 293, in all_reduce',
        f"{p}     pynccl_comm.all_reduce(input_)",
        f'{p}   File "{_VLLM}/distributed/device_communicators/pynccl.py", line 118, in all_reduce',
        f"{p}     self.nccl.ncclAllReduce(buffer_type(tensor.data_ptr()),",
        f'{p}   File "{_VLLM}/distributed/device_communicators/pynccl_wrapper.py", line 257, in'
        " ncclAllReduce",
        f'{p}     self.NCCL_CHECK(self._funcs["ncclAllReduce"](sendbuff, recvbuff, count,',
        f'{p}   File "{_VLLM}/distributed/device_communicators/pynccl_wrapper.py", line 223, in'
        " NCCL_CHECK",
        f'{p}     raise RuntimeError(f"NCCL error: {{error_str}}")',
        f"{p} RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
    ]


def _c10d_trace(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/job/train.py", line 71, in <module>',
        f"{p}     dist.all_reduce(flag)",
        f'{p}   File "{_TORCH}/distributed/c10d_logger.py", line 83, in wrapper',
        f"{p}     return func(*args, **kwargs)",
        f'{p}   File "{_TORCH}/distributed/distributed_c10d.py", line 2501, in all_reduce',
        f"{p}     work = group.allreduce([tensor], opts)",
        f"{p} torch.distributed.DistBackendError: NCCL error in:"
        " ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with"
        " NCCL_DEBUG=WARN for details), NCCL version 2.20.5",
    ]


def test_vllm_engine_rank0_in_pynccl_all_reduce_names_no_rank() -> None:
    d = diagnose_text("\n".join(_pynccl_trace(0)) + "\n", "serve.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-invalid-usage"
    assert d.initiating_rank is None
    assert any("[named_by_root]" in r and "collective all_reduce" in r for r in d.reasoning)


def test_rank0_alone_in_torch_all_reduce_names_no_rank() -> None:
    d = diagnose_text("\n".join(_c10d_trace(0)) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "nccl-internal-or-invalid-usage"
    assert d.initiating_rank is None


def test_another_rank_alone_keeps_its_rank() -> None:
    """Control: rank 3 alone is no rank-0-only view (the rule is for the rank such filters
    keep), so its own traceback still names it."""
    d = diagnose_text("\n".join(_c10d_trace(3)) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank == 3


def test_rank0_outside_a_collective_keeps_its_rank() -> None:
    """Control: rank 0's own error outside any collective, with nothing showing other
    ranks, is still rank 0's."""
    p = "[rank0]:"
    lines = [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/job/train.py", line 52, in <module>',
        f"{p}     batch = next(it)",
        f'{p}   File "/srv/job/data.py", line 30, in __next__',
        f'{p}     raise ValueError(f"record {{i}}: expected 16 features, got {{n}}")',
        f"{p} ValueError: record 2291: expected 16 features, got 15",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank == 0


def test_rank0_of_a_vllm_engine_with_two_tp_workers_names_no_rank() -> None:
    """vLLM's engine configuration line gives its layout: tensor_parallel_size=2 runs two
    worker processes, so the engine's ``[rank0]:`` traceback is one of two workers' copies
    (a profiling OOM every TP worker runs alike), not a proof that rank 0 started it."""
    lines = [
        "INFO 07-30 10:00:00 llm_engine.py:176] Initializing an LLM engine (v0.5.3.post1) with"
        " config: model='/models/llama-70b', dtype=torch.bfloat16, max_seq_len=8192,"
        " tensor_parallel_size=2, pipeline_parallel_size=1, disable_custom_all_reduce=False",
        "(VllmWorkerProcess pid=5012) INFO 07-30 10:00:12 multiproc_worker_utils.py:215] Worker"
        " ready; awaiting tasks",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/app/serve.py", line 9, in <module>',
        '[rank0]:     llm = LLM(model="/models/llama-70b", tensor_parallel_size=2)',
        f'[rank0]:   File "{_VLLM}/worker/model_runner.py", line 896, in profile_run',
        "[rank0]:     self.execute_model(model_input, kv_caches, intermediate_tensors)",
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0"
        " has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "serve.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank is None
    assert any("tensor_parallel_size=2" in r for r in d.reasoning)
    one = "\n".join(lines).replace("tensor_parallel_size=2", "tensor_parallel_size=1")
    d1 = diagnose_text(one + "\n", "serve.log", mask=False)
    assert not any("tensor_parallel_size" in r for r in d1.reasoning)


def test_vllm_engine_rank0_names_no_rank_whatever_its_layout() -> None:
    """vLLM initialises torch.distributed in the engine process even with one GPU, so a
    ``[rank0]:`` traceback through vLLM's worker code (a CUDA-graph capture OOM) is the
    engine process's, not a proof that rank 0 started it (rule ``engine_rank_zero``)."""
    p = "[rank0]:"
    lines = [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/app/serve.py", line 9, in <module>',
        f'{p}     llm = LLM(model="/models/m")',
        f'{p}   File "{_VLLM}/worker/model_runner.py", line 1173, in capture_model',
        f"{p}     graph_runner.capture(**capture_inputs)",
        f'{p}   File "{_TORCH}/cuda/graphs.py", line 82, in capture_end',
        f"{p}     super().capture_end()",
        f"{p} RuntimeError: CUDA error: out of memory",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "serve.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank is None
    assert any("vLLM's engine process" in r for r in d.reasoning)
    # Control: the same error in a training script's own traceback keeps rank 0.
    train = [x.replace(f"{_VLLM}/worker/model_runner.py", "/srv/job/model.py") for x in lines]
    d0 = diagnose_text("\n".join(train) + "\n", "train.log", mask=False)
    assert d0.initiating_rank == 0


def test_deepspeed_comm_names_the_collective_not_its_wrapper() -> None:
    """deepspeed.comm wraps each collective in ``log_wrapper``: the call is the frame below."""
    p = "[rank0]:"
    lines = [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/job/train.py", line 88, in <module>',
        f"{p}     engine.backward(loss)",
        '[rank0]:   File "/opt/venv/lib/python3.10/site-packages/deepspeed/comm/comm.py", line 117,'
        " in log_wrapper",
        f"{p}     return func(*args, **kwargs)",
        '[rank0]:   File "/opt/venv/lib/python3.10/site-packages/deepspeed/comm/comm.py", line 496,'
        " in all_reduce",
        f"{p}     return cdb.all_reduce(tensor, op, group, async_op)",
        f"{p} torch.distributed.DistBackendError: NCCL error in:"
        " ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with"
        " NCCL_DEBUG=WARN for details), NCCL version 2.20.5",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.initiating_rank is None
    assert any("collective all_reduce" in r for r in d.reasoning)
