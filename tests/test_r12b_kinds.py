"""The kinds of miss heldout-r12b showed, each on text written here in the tools' real shape
(Megatron-LM's iteration lines, DeepSpeed's logger, Slurm's slurmstepd lines, CUDA errors
raised by ProcessGroupNCCL's watchdog thread):

A. progress lines that carry no timestamp (Megatron-LM's ``iteration N/ M |``) after the
   last timestamped one (DeepSpeed's ``step=0``) are progress: a slow run that reached its
   time limit is no hang;
B. fp16's dynamic loss scale falling during the first iterations and then holding, with the
   skipped-iteration count frozen, is the scaler's start-up calibration, not a collapse;
C. a CUDA 'unknown error' raised in a running process (the NCCL watchdog's event query) is a
   device fault (``gpu-hardware-xid-ecc``); at start-up it stays ``gpu-unavailable``;
D. a running average that starts from zero (MLPerf SSD's ``Average Loss``) rising over the
   first steps is no loss spike.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).parent

# -- A ------------------------------------------------------------------------------------


def _megatron_ds_timelimit(iterations: int) -> str:
    """A Megatron-DeepSpeed job under Slurm: DeepSpeed's timestamped start-up (its
    ``step=0``), then ``iterations`` Megatron iteration lines (no timestamp, ~128 s apart in
    reality), then Slurm's time limit 10 minutes after the last timestamp."""
    head = [
        "+ srun --jobid 2207718 bash -c 'python -u -m torch.distributed.launch --nproc_per_node 4 pretrain_gpt.py --deepspeed'",
        "[2022-03-02 10:14:05,511] [INFO] [engine.py:509:_configure_lr_scheduler] DeepSpeed using client LR scheduler",
        "[2022-03-02 10:14:05,511] [INFO] [logging.py:60:log_dist] [Rank 0] step=0, skipped=0, lr=[0.0, 0.0], mom=[(0.9, 0.999), (0.9, 0.999)]",
        "[2022-03-02 10:14:05,512] [INFO] [config.py:900:print] DeepSpeedEngine configuration:",
        "time (ms) | model-and-optimizer-setup: 5121.33 | train/valid/test-data-iterators-setup: 901.27",
        "training ...",
    ]
    its = [
        f" iteration {i:>8d}/    1000 | elapsed time per iteration (ms): {127000 + 311 * i:.1f} | "
        f"learning rate: {1.875e-05 * i:.3E} | lm loss: 1.25{i}221E+01 | loss scale: 1024.0 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |"
        for i in range(1, iterations + 1)
    ]
    tail = [
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.",
        "slurmstepd: error: *** STEP 2207718.0 ON node07 CANCELLED AT 2022-03-02T10:24:06 DUE TO TIME LIMIT ***",
        "slurmstepd: error: *** JOB 2207718 ON node07 CANCELLED AT 2022-03-02T10:24:06 DUE TO TIME LIMIT ***",
        "Main process received SIGTERM, exiting",
    ]
    return "\n".join(head + its + tail) + "\n"


def test_untimed_iterations_after_the_last_timestamp_are_progress_up_to_the_time_limit():
    d = diagnose_text(_megatron_ds_timelimit(4), "slurm-2207718.out", mask=False)
    assert d.root_cause.signature == "slurm-time-limit"
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.root_cause.evidence[0].line == 12
    assert d.initiator.rank is None


def test_a_job_silent_after_its_last_timed_step_is_still_a_hang():
    # no iteration after DeepSpeed's step=0: the 10 minutes before the limit are a real stall
    d = diagnose_text(_megatron_ds_timelimit(0), "slurm-2207718.out", mask=False)
    assert d.root_cause.signature == "progress-stalled"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 3


# -- B and E ------------------------------------------------------------------------------


def _megatron_fp16(scales: list[float], skipped: list[int], tail: list[str]) -> str:
    """Megatron-LM fp16 iteration lines every 10 iterations (loss scale and the skipped
    count as Megatron prints them), then ``tail``."""
    its = [
        f" iteration {10 * (i + 1):>8d}/    1000 | consumed samples: {40 * (i + 1):>12d} | "
        f"elapsed time per iteration (ms): 1616.{i % 10} | learning rate: 1.405E-04 | "
        f"global batch size:     4 | lm loss: {7.9 - 0.01 * i:.6E} | loss scale: {s:.1f} | "
        f"grad norm: 2.{i % 10}98 | number of skipped iterations: {k:>3d} | "
        "number of nan iterations:   0 |"
        for i, (s, k) in enumerate(zip(scales, skipped, strict=True))
    ]
    return "\n".join(["training ...", *its, *tail]) + "\n"


SCANCEL = [
    "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.",
    "Killing subprocess 50083",
    "slurmstepd: error: *** STEP 1809562.0 ON node03 CANCELLED AT 2021-05-23T08:29:53 ***",
    "Main process received SIGTERM, exiting",
    "slurmstepd: error: *** JOB 1809562 ON node03 CANCELLED AT 2021-05-23T08:29:53 ***",
]


def test_the_loss_scale_warm_up_then_a_hold_is_no_collapse():
    # 2^23 after the first ten iterations (all skipped), 2^15, then 2^14 held with no skips
    scales = [8388608.0, 32768.0] + [16384.0] * 18
    skipped = [10, 8, 1] + [0] * 17
    d = diagnose_text(_megatron_fp16(scales, skipped, SCANCEL), "meg.out", mask=False)
    assert "loss-scale-collapse" not in {f.signature for f in d.findings}
    assert d.root_cause.signature == "slurm-preemption"
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.root_cause.evidence[0].line == 24
    assert d.initiator.rank is None


def test_a_fall_after_the_scale_settled_is_measured_from_where_it_settled():
    # warm-up to 2^14, held, then halved every logged step down to 8: a collapse from 16384
    scales = [8388608.0, 32768.0, 16384.0, 16384.0, 16384.0, 2048.0, 256.0, 32.0, 8.0]
    skipped = [10, 8, 0, 0, 0, 3, 6, 9, 10]
    d = diagnose_text(_megatron_fp16(scales, skipped, []), "meg.out", mask=False)
    collapse = next(f for f in d.findings if f.signature == "loss-scale-collapse")
    # the run of halvings starts at the last hold (16384 at iteration 50), not at 2^23
    assert collapse.captures["step"] == "50"
    assert collapse.captures["value"] == "1.638e+04"
    assert collapse.evidence[0].line == 6


def test_a_cancellation_after_a_failed_task_stays_the_teardown():
    tail = [
        "Traceback (most recent call last):",
        '  File "pretrain_gpt.py", line 215, in <module>',
        "    main()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "srun: error: node05: task 3: Exited with exit code 1",
        *SCANCEL,
    ]
    d = diagnose_text(_megatron_fp16([16384.0] * 5, [0] * 5, tail), "meg.out", mask=False)
    assert d.root_cause.signature != "slurm-preemption"
    assert d.root_cause.failure_class == "cuda-illegal-memory-access"


# -- C ------------------------------------------------------------------------------------

LIB = "/gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/lib"


def test_cuda_unknown_error_in_the_nccl_watchdog_of_a_running_job_is_a_device_fault():
    # torch.distributed.run's --tee tags ([default3]) are local worker indices, not ranks
    log = "\n".join(
        [
            "[default0]: iteration     5124/  115311 | consumed samples:      2359296 | lm loss: 2.712E+00 |",
            "[default3]:terminate called after throwing an instance of 'c10::CUDAError'",
            "[default3]:  what():  CUDA error: unknown error",
            "[default3]:Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):",
            f"[default3]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x1518a06137d2 in {LIB}/libc10.so)",
            f"[default3]:frame #1: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x11a (0x15190c6c29ea in {LIB}/libtorch_cuda_cpp.so)",
            f"[default3]:frame #2: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x50 (0x15190c6c4fd0 in {LIB}/libtorch_cuda_cpp.so)",
            f"[default3]:frame #3: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x145 (0x15190c6c6265 in {LIB}/libtorch_cuda_cpp.so)",
        ]
    )
    d = diagnose_text(log + "\n", "tr11.out", mask=False)
    assert d.root_cause.signature == "cuda-error-unknown"
    assert d.root_cause.failure_class == "gpu-hardware-xid-ecc"
    assert d.root_cause.evidence[0].line == 3


# -- D ------------------------------------------------------------------------------------


def _ssd_lines(losses: list[float]) -> str:
    """MLPerf SSD's line at iteration 0 and every 20 iterations, printed by each of 8
    processes with no rank prefix: the step's loss ("Loss function") and its running average
    ("Average Loss": avg = 0.999 * avg + 0.001 * loss from 0, so 0.001 x the loss at 0)."""
    avg, out = 0.0, []
    for i, loss in enumerate(losses):
        for _ in range(20 if i else 1):  # the average moves every iteration
            avg = 0.999 * avg + 0.001 * loss
        for proc in range(8):
            out.append(
                f"Iteration: {20 * i:>6d}, Loss function: {loss + 0.1 * proc:.3f}, "
                f"Average Loss: {avg:.3f}, avg. samples / sec: {10150 + proc:.2f}"
            )
    return "\n".join(out) + "\n"


def test_a_running_average_filling_from_zero_is_no_loss_spike():
    losses = [22.6 - 0.02 * i for i in range(120)]  # the loss itself falls steadily
    d = diagnose_text(_ssd_lines(losses), "result_0.txt", mask=False)
    assert d.root_cause is None
    assert "loss-spike" not in {f.signature for f in d.findings}


def test_a_spike_in_the_loss_printed_beside_its_running_average_is_still_found():
    losses = [2.3 - 0.001 * i for i in range(60)]
    losses[40] = 41.0
    log = "".join(
        f"epoch 1 step {i} loss {loss:.3f} avg loss {2.31 - 0.0005 * i:.3f} lr 0.001\n"
        for i, loss in enumerate(losses)
    )
    d = diagnose_text(log, "train.log", mask=False)
    spike = next(f for f in d.findings if f.signature == "loss-spike")
    assert spike.evidence[0].line == 41
    assert spike.captures["metric"] == "loss"


# -- F ------------------------------------------------------------------------------------

VENV = "/home/user/vit_env/lib/python3.8/site-packages"


def _conv_trace(rank: int, message: str) -> str:
    p = f"[rank{rank}]:"
    return "\n".join(
        [
            f"{p} Traceback (most recent call last):",
            f'{p}   File "/home/user/vit/run_distributed_training.py", line 108, in <module>',
            f"{p}     outputs = model_engine(inputs)",
            f'{p}   File "{VENV}/torch/nn/modules/conv.py", line 454, in _conv_forward',
            f"{p}     return F.conv2d(input, weight, bias, self.stride,",
            f"{p} RuntimeError: {message}",
        ]
    )


def test_one_ranks_copy_of_an_input_against_parameter_dtype_mismatch_names_no_rank():
    log = _conv_trace(4, "Input type (c10::Half) and bias type (float) should be the same")
    d = diagnose_text(log + "\n", "CURRENT_ERROR.txt", mask=False)
    assert d.root_cause.failure_class == "dtype-mismatch"
    assert d.root_cause.captures["param"] == "bias"
    assert d.root_cause.evidence[0].line == 6
    assert d.initiator.rank is None
    assert d.initiator.strategy == "named_by_root"


def test_a_data_dtype_mismatch_on_one_rank_still_names_it():
    # not a parameter: a batch of another dtype can be that rank's own shard
    log = _conv_trace(4, "expected scalar type Float but found Double")
    d = diagnose_text(log + "\n", "CURRENT_ERROR.txt", mask=False)
    assert d.root_cause.failure_class == "dtype-mismatch"
    assert d.initiator.rank == 4


# -- G ------------------------------------------------------------------------------------

ELASTIC = "torch/distributed/elastic/multiprocessing/api.py"


def _two_jobs_on_one_node(agents: tuple[int, int]) -> str:
    """``srun torchrun --standalone --nproc_per_node=2`` under ``--ntasks-per-node=2``: two
    agents (``agents``), each with workers 0 and 1; the first agent's rank 0 runs out of memory
    on GPU 0 where the second agent's rank 0 (pid 51001) holds 68.7 GiB."""
    a, b = agents
    return "\n".join(
        [
            "Starting inference with arguments: Namespace(num_steps=196, bf16=False)",
            "Starting inference with arguments: Namespace(num_steps=196, bf16=False)",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/home/user/infer.py", line 102, in infer',
            "[rank0]:     preds = model(batch)",
            "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.43 GiB. "
            "GPU 0 has a total capacity of 93.11 GiB of which 4.06 GiB is free. Process 51001 has "
            "68.70 GiB memory in use. Including non-PyTorch memory, this process has 20.33 GiB "
            "memory in use.",
            f"W0710 17:01:46.645000 {a} {ELASTIC}:897] Sending process 50002 closing signal SIGTERM",
            f"E0710 17:01:47.013000 {a} {ELASTIC}:869] failed (exitcode: 1) local_rank: 0 (pid: 50001) of binary: /usr/bin/python3",
            "srun: error: node01: task 1: Exited with exit code 1",
            "srun: Terminating StepId=13102226.0",
            f"W0710 17:01:47.709000 {b} torch/distributed/elastic/agent/server/api.py:704] Received 15 death signal, shutting down workers",
            f"W0710 17:01:47.710000 {b} {ELASTIC}:897] Sending process 51001 closing signal SIGTERM",
            f"W0710 17:01:47.711000 {b} {ELASTIC}:897] Sending process 51002 closing signal SIGTERM",
            "slurmstepd: error: *** STEP 13102226.0 ON node01 CANCELLED AT 2025-07-10T17:01:47 ***",
        ]
    )


def test_two_torchrun_agents_on_one_node_select_the_one_launcher_per_node_fix():
    d = diagnose_text(_two_jobs_on_one_node((40001, 40002)) + "\n", "13102226.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.fix.variant.id == "launcher-started-twice"
    assert d.root_cause.evidence[0].line == 6
    assert d.initiator.rank == 0


def test_one_agent_with_two_workers_on_a_gpu_keeps_the_device_placement_fix():
    d = diagnose_text(_two_jobs_on_one_node((40001, 40001)) + "\n", "13102226.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.fix.variant.id == "ranks-share-a-gpu"


# -- H ------------------------------------------------------------------------------------


def test_cuda_out_of_memory_in_the_first_barrier_points_at_the_device_not_the_batch():
    # CUDA's own error (no "Tried to allocate") while NCCL sets up the first collective
    log = (HERE / "fix_variants/cuda-oom/no-allocation-at-first-collective.log").read_text()
    d = diagnose_text(log, "tr1-13B.out", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.fix.variant.id == "no-allocation-at-first-collective"
    assert d.root_cause.evidence[0].line == 19
    assert "exclude that node" in d.root_cause.fix.steps[0]
    assert d.initiator.rank is None


def _two_agents_one_segfault() -> str:
    """Two torchrun agents (7001, 7002) on one node; agent 7001's local rank 1 dies by
    SIGSEGV with no Python traceback, and Slurm then stops the other agent."""
    return "\n".join(
        [
            "Model loaded and frozen.",
            "Model loaded and frozen.",
            "Batch [2/50]:  22%|##2       | 44/196 [01:24<04:54,  1.94s/it]",
            f"W0710 17:09:46.971000 7001 {ELASTIC}:897] Sending process 7101 closing signal SIGTERM",
            f"E0710 17:09:47.840000 7001 {ELASTIC}:869] failed (exitcode: -11) local_rank: 1 (pid: 7102) of binary: /usr/bin/python3.11",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2025-07-10_17:09:46",
            "  host      : gpu-12",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : -11 (pid: 7102)",
            "  error_file: <N/A>",
            "  traceback : Signal 11 (SIGSEGV) received by PID 7102",
            "srun: error: gpu-12: task 1: Exited with exit code 1",
            "slurmstepd: error: *** STEP 13102222.0 ON gpu-12 CANCELLED AT 2025-07-10T17:09:48 ***",
            "W0710 17:09:48.725000 7002 torch/distributed/elastic/agent/server/api.py:704] Received 15 death signal, shutting down workers",
            f"W0710 17:09:48.726000 7002 {ELASTIC}:897] Sending process 7201 closing signal SIGTERM",
        ]
    )


def test_a_segfault_in_a_job_launched_twice_on_one_node_selects_the_one_launcher_fix():
    d = diagnose_text(_two_agents_one_segfault() + "\n", "13102222.log", mask=False)
    assert d.root_cause.failure_class == "segfault"
    assert d.root_cause.fix.variant.id == "launcher-started-twice"
    assert d.initiator.rank == 1
