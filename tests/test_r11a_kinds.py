"""The kinds of miss heldout-r11a showed, each on text written here in the tools' real shape
(ROCr's hardware-exception line, c10d's watchdog lines, HIP's error strings, Lightning's
subprocess launcher, a CI shell's ``Killed``):

A. a ROCm runtime hardware exception (the AMD counterpart of an Xid) is the root cause of
   the collective timeouts that follow it;
B. the class of a wrapped accelerator error comes from the error it carries: HIP's "invalid
   kernel file" is a missing code object for the GPU's architecture, not a kernel fault;
C. a lead of a few nanoseconds among ranks reporting one asynchronous CUDA error is a tie;
D. a SIGKILL printed after a launcher said it terminates all other processes is the
   launcher's kill, collateral of the child that failed, not the OOM killer.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------

ROCM_HANG = """\
+ torchrun --nproc-per-node=4 pretrain.py --config cfg/7b.yaml
[2025-07-14 03:10:02] iter 880 | loss 2.31 | 412 TFLOP/s
[2025-07-14 03:11:40] iter 890 | loss 2.30 | 409 TFLOP/s
HW Exception by GPU node-2 (Agent handle: 0x55e3c1d20a10) reason :GPU Hang
HW Exception by GPU node-2 (Agent handle: 0x5581aa0b3c20) reason :GPU Hang
[rank1]:[E714 03:21:44.018224410 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90121, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank3]:[E714 03:21:44.021981003 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90121, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.
[rank2]:[E714 03:21:44.030412872 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90121, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
"""


def test_a_rocm_hardware_exception_explains_the_watchdog_timeouts_after_it():
    d = diagnose_text(ROCM_HANG, "job.log", mask=False)
    assert d.root_cause.signature == "rocm-hw-exception"
    assert d.root_cause.failure_class == "gpu-hardware-xid-ecc"
    assert d.root_cause.evidence[0].line == 4
    assert d.root_cause.captures["reason"] == "GPU Hang"
    collateral = {g.signature for g in d.collateral}
    assert "nccl-watchdog-timeout" in collateral or "fsdp-collective-watchdog-timeout" in collateral
    assert "Drain the node" in d.root_cause.fix.steps[0]


def test_a_rocm_line_that_only_mentions_hw_exceptions_is_no_hardware_fault():
    text = ROCM_HANG.replace(
        "HW Exception by GPU node-2 (Agent handle: 0x55e3c1d20a10) reason :GPU Hang\n", ""
    )
    text = text.replace(
        "HW Exception by GPU node-2 (Agent handle: 0x5581aa0b3c20) reason :GPU Hang\n",
        "HW Exception handler installed for GPU node-2\n",
    )
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.failure_class != "gpu-hardware-xid-ecc"


# -- B ------------------------------------------------------------------------------------

HIP_NO_CODE_OBJECT = """\
(Worker_TP1 pid=4410) INFO 03-02 10:00:01 [parallel_state.py:1102] world_size=2 rank=1 local_rank=1 backend=nccl
(Worker_TP1 pid=4410) ERROR 03-02 10:00:04 [multiproc_executor.py:596] Traceback (most recent call last):
(Worker_TP1 pid=4410) ERROR 03-02 10:00:04 [multiproc_executor.py:596]   File "/opt/venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/pynccl.py", line 131, in __init__
(Worker_TP1 pid=4410) ERROR 03-02 10:00:04 [multiproc_executor.py:596]     data = torch.zeros(1, device=device)
(Worker_TP1 pid=4410) ERROR 03-02 10:00:04 [multiproc_executor.py:596] torch.AcceleratorError: HIP error: invalid kernel file
(Worker_TP1 pid=4410) ERROR 03-02 10:00:04 [multiproc_executor.py:596] Search for `hipErrorInvalidKernelFile' in https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more information.
"""


def test_a_hip_invalid_kernel_file_is_an_architecture_mismatch():
    d = diagnose_text(HIP_NO_CODE_OBJECT, "serve.log", mask=False)
    assert d.root_cause.signature == "rocm-no-binary-for-gpu"
    assert d.root_cause.failure_class == "cuda-driver-or-arch-mismatch"
    assert d.root_cause.evidence[0].line == 5
    assert any("RCCL" in step for step in d.root_cause.fix.steps)


def test_another_accelerator_error_stays_with_the_wrapper_signature():
    text = HIP_NO_CODE_OBJECT.replace(
        "HIP error: invalid kernel file", "HIP error: unspecified launch failure"
    ).replace("hipErrorInvalidKernelFile", "hipErrorLaunchFailure")
    d = diagnose_text(text, "serve.log", mask=False)
    assert d.root_cause.signature == "accelerator-error"


# -- C ------------------------------------------------------------------------------------


def _async_fault(times: dict[int, str]) -> str:
    lines = []
    for rank, t in times.items():
        lines.append(
            f"[rank{rank}]:[E305 11:42:17.{t} ProcessGroupNCCL.cpp:1895] [PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL_GROUP) Rank {rank}] "
            "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"
        )
        lines.append(
            f"[rank{rank}]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."
        )
    return "\n".join(lines) + "\n"


def test_a_nanosecond_lead_among_ranks_polling_one_async_error_names_no_rank():
    d = diagnose_text(
        _async_fault({2: "731200488", 0: "731200395", 1: "731200431"}), "job.log", mask=False
    )
    assert d.root_cause.signature == "cuda-illegal-memory-access"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "earliest_time"
    assert d.initiator.candidates == [0, 1, 2]


def test_a_clear_lead_in_time_still_names_the_first_rank():
    d = diagnose_text(
        _async_fault({2: "912000000", 0: "731200395", 1: "733900431"}), "job.log", mask=False
    )
    assert d.initiating_rank == 0
    assert d.initiator.strategy == "earliest_time"


# -- D ------------------------------------------------------------------------------------

LAUNCHER_KILL = """\
============================= test session starts ==============================
tests/test_fit.py::test_fit_two_processes
INFO     lightning.fabric.utilities.distributed:distributed.py:282 Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/3
INFO     lightning.fabric.strategies.launchers.subprocess_script:subprocess_script.py:224 [rank: 2] Child process with PID 7131 terminated with code 2. Forcefully terminating all other processes to avoid zombies 🧟
/tmp/ci/job.sh: line 3:  7040 Killed                  python -m pytest tests/test_fit.py
"""


def test_a_kill_after_the_launcher_said_it_terminates_the_rest_is_collateral():
    d = diagnose_text(LAUNCHER_KILL, "ci.log", mask=False)
    assert d.root_cause.signature == "elastic-child-failed"
    assert d.initiating_rank == 2
    assert "worker-sigkill-exit" in {g.signature for g in d.collateral}
    assert any(e.rule == "launcher_kills_the_rest" for e in d.explanations)


def test_a_kill_printed_before_any_launcher_report_is_still_the_cause():
    lines = LAUNCHER_KILL.splitlines(keepends=True)
    text = "".join(lines[:3] + [lines[4], lines[3]])
    d = diagnose_text(text, "ci.log", mask=False)
    assert d.root_cause.signature == "worker-sigkill-exit"


# -- E ------------------------------------------------------------------------------------

HANDLED_THEN_FINAL = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/opt/venv/lib/python3.10/site-packages/safetensors/cache.py", line 40, in lookup
[rank1]:     return self._open[key]
[rank1]: AttributeError: 'NoneType' object has no attribute 'handle'
[rank1]:
[rank1]: During handling of the above exception, another exception occurred:
[rank1]:
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/user/lm/finetune.py", line 301, in <module>
[rank1]:     trainer.save_shard(step)
[rank1]:   File "/home/user/lm/finetune.py", line 244, in save_shard
[rank1]:     torch.save(state, out)
[rank1]:   File "/opt/venv/lib/python3.10/site-packages/torch/serialization.py", line 651, in save
[rank1]:     with _open_zipfile_writer(f) as opened_zipfile:
[rank1]:   File "fastio/_writer.pyx", line 88, in fastio._writer.open_for_write
[rank1]: OSError: [Errno 28] No space left on device: '/scratch/ckpt/shard-1.pt'
"""


def test_the_final_exception_of_a_chain_beats_a_generic_one_it_was_handling():
    d = diagnose_text(HANDLED_THEN_FINAL, "job.log", mask=False)
    assert d.root_cause.failure_class == "disk-full"
    assert d.root_cause.evidence[0].line == 16
    assert any(e.rule == "final_exception_ends_the_chain" for e in d.explanations)
    # the compiled extension's relative .pyx path is no user code: the user's line is named
    assert (d.root_cause.user_frame.file, d.root_cause.user_frame.line) == (
        "/home/user/lm/finetune.py",
        244,
    )


def test_a_specific_handled_exception_is_not_overruled_by_a_generic_final_one():
    text = HANDLED_THEN_FINAL.replace(
        "[rank1]: AttributeError: 'NoneType' object has no attribute 'handle'",
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
    ).replace(
        "[rank1]: OSError: [Errno 28] No space left on device: '/scratch/ckpt/shard-1.pt'",
        "[rank1]: NameError: name 'fallback_state' is not defined",
    )
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 4


# -- F ------------------------------------------------------------------------------------

AGENT = "/usr/local/lib/python3.11/dist-packages/torch/distributed"


def _summary_entry(i: int, rank: int, pid: int, code: int) -> str:
    name = {-6: "SIGABRT", -15: "SIGTERM", -9: "SIGKILL"}[code]
    return (
        f"[{i}]:\n  time      : 2025-11-03_17:40:12\n  host      : gpu-b\n"
        f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: {pid})\n"
        f"  error_file: <N/A>\n  traceback : Signal {-code} ({name}) received by PID {pid}\n"
    )


def _census(codes: dict[int, int]) -> str:
    pids = {r: 6100 + r for r in codes}
    first = next(r for r, c in codes.items() if c == -6)
    lines = []
    for r in (1, 3):
        lines.append(
            f"[rank{r}]:[E1103 17:30:11.{r}20000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            f"Timeout(ms)=600000) ran for 600{r}21 milliseconds before timing out.\n"
        )
    for r, pid in pids.items():
        if r != first:
            lines.append(
                f"W1103 17:40:10.5{r}0000 6001 {AGENT}/elastic/multiprocessing/api.py:897] Sending process {pid} closing signal SIGTERM\n"
            )
    lines.append(
        f"E1103 17:40:12.100000 6001 {AGENT}/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: {first} (pid: {pids[first]}) of binary: /usr/bin/python3\n"
    )
    lines.append("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n")
    lines.append(
        "============================================================\ntrain_mt.py FAILED\n"
    )
    lines.append("------------------------------------------------------------\nFailures:\n")
    others = [r for r in codes if r != first]
    for i, r in enumerate(others, 1):
        lines.append(_summary_entry(i, r, pids[r], codes[r]))
    lines.append(
        "------------------------------------------------------------\nRoot Cause (first observed failure):\n"
    )
    lines.append(_summary_entry(0, first, pids[first], -6))
    lines.append("============================================================\n")
    return "".join(lines)


def test_the_one_rank_the_agent_stopped_while_the_rest_aborted_is_the_one_they_waited_for():
    d = diagnose_text(_census({0: -6, 1: -6, 2: -15, 3: -6}), "job.log", mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2
    assert d.initiator.strategy == "missing_reporter"
    assert "failure table" in d.initiator.why


def test_two_ranks_stopped_by_the_agent_name_no_rank_from_the_table():
    d = diagnose_text(_census({0: -6, 1: -6, 2: -15, 3: -15}), "job.log", mask=False)
    assert d.initiating_rank is None


# -- G ------------------------------------------------------------------------------------


def test_an_oom_naming_another_worker_of_the_job_selects_one_gpu_per_process():
    from pathlib import Path

    text = (Path(__file__).parent / "fix_variants/cuda-oom/ranks-share-a-gpu.log").read_text()
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.fix.variant.id == "ranks-share-a-gpu"
    assert "process 3342" in d.root_cause.fix.variant.why
    # a process that is no worker of this job (another user's) is no evidence of shared GPUs
    other = text.replace("Process 3342 has", "Process 9120 has")
    d = diagnose_text(other, "job.log", mask=False)
    assert d.root_cause.fix.variant.id != "ranks-share-a-gpu"
    # a worker's stray CUDA context too small to matter (free + its 300 MiB < the 640 MiB
    # asked for) is not why this rank ran out of memory
    small = text.replace("Process 3342 has 11.90 GiB", "Process 3342 has 300.00 MiB")
    d = diagnose_text(small, "job.log", mask=False)
    assert d.root_cause.fix.variant.id != "ranks-share-a-gpu"


def test_deepspeeds_kill_list_names_the_jobs_workers():
    from pathlib import Path

    text = (Path(__file__).parent / "fix_variants/cuda-oom/ranks-share-a-gpu.log").read_text()
    lines = [line for line in text.splitlines(keepends=True) if "torch/distributed" not in line]
    lines += [
        "[2025-04-12 14:02:40,101] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 3341\n",
        "[2025-04-12 14:02:40,102] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 3342\n",
        "[2025-04-12 14:02:40,390] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', 'train_ctc.py', '--local_rank=0'] exits with return code = 1\n",
    ]
    d = diagnose_text("".join(lines), "job.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.fix.variant.id == "ranks-share-a-gpu"


# -- H ------------------------------------------------------------------------------------


def _launch(error_lines: list[str], pid: int, rank: int, minute: int = 15) -> str:
    tb = [
        "Traceback (most recent call last):\n",
        '  File "/home/user/seg/tools/train.py", line 12, in <module>\n',
        "    from seg.models import build_model\n",
    ] + error_lines
    return "".join(tb) + (
        f"E1020 08:{minute}:02.200000 {pid} /opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/api.py:869] "
        f"failed (exitcode: 1) local_rank: {rank} (pid: {pid + 7}) of binary: /opt/venv/bin/python\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "tools/train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        f"[0]:\n  time      : 2024-10-20_08:{minute}:03\n  host      : ws-3\n"
        f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : 1 (pid: {pid + 7})\n"
        "  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n"
    )


FIRST = [
    '  File "/home/user/seg/seg/models/__init__.py", line 4, in <module>\n',
    "    from .unet import UNet\n",
    "ModuleNotFoundError: No module named 'seg.models.unet'\n",
]
SECOND = [
    '  File "/home/user/seg/seg/models/head.py", line 41\n',
    "    return x.softmax(dim=1))\n",
    "                           ^\n",
    "SyntaxError: unmatched ')'\n",
]


def test_a_relaunch_appended_after_torchruns_summary_is_the_attempt_that_ended_the_job():
    d = diagnose_text(
        _launch(FIRST, 4100, 2) + _launch(SECOND, 4300, 1, minute=31), "run.log", mask=False
    )
    assert d.attempts == 2
    assert d.root_cause.evidence[0].text.startswith("SyntaxError")
    assert d.root_cause.user_frame.file.endswith("seg/models/head.py")
    assert d.root_cause.user_frame.line == 41


def test_a_wrappers_traceback_after_the_summary_is_the_same_run():
    wrapper = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/seg/launch_all.py", line 30, in <module>\n'
        "    subprocess.run(cmd, check=True)\n"
        "subprocess.CalledProcessError: Command '['torchrun', '--nproc-per-node=4', 'tools/train.py']' returned non-zero exit status 1.\n"
    )
    d = diagnose_text(_launch(FIRST, 4100, 2) + wrapper, "run.log", mask=False)
    assert d.attempts == 1
    assert d.root_cause.evidence[0].text.startswith("ModuleNotFoundError")


# -- I ------------------------------------------------------------------------------------


def test_the_abort_stacks_naming_transformer_engine_select_its_fix_even_interleaved():
    dump = (
        "Fatal Python error: Aborted\n"
        "Thread 0x00007f3aThread 0x00007f3b (most recent call first):\n"
        '  File "/opt/te-src/TransformerEngine/transformer_engine/pytorch/permutation.py"  File , line 412 in backward\n'
        "<no Python frame>\n"
    )
    text = _async_fault({2: "731200488", 0: "731200395"}) + dump
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "cuda-illegal-memory-access"
    assert d.root_cause.fix.variant.id == "transformer-engine"
    d = diagnose_text(
        text.replace("TransformerEngine/transformer_engine", "kernels/moe"), "job.log", mask=False
    )
    assert d.root_cause.fix.variant.id == "general"


# -- J ------------------------------------------------------------------------------------


def test_two_ranks_refused_the_same_file_select_one_writer_per_file():
    from pathlib import Path

    text = (
        Path(__file__).parent / "fix_variants/permission-denied/ranks-share-one-file.log"
    ).read_text()
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.fix.variant.id == "ranks-share-one-file"
    assert "1, 3" in d.root_cause.fix.variant.why
    # each rank refused its own file: a permissions problem, not a collision
    own = text.replace(
        "[rank3]: PermissionError: [Errno 13] Permission denied: '/mnt/team/reports/val_metrics.json'",
        "[rank3]: PermissionError: [Errno 13] Permission denied: '/mnt/team/reports/val_metrics_3.json'",
    )
    d = diagnose_text(own, "job.log", mask=False)
    assert d.root_cause.fix.variant.id == "general"
