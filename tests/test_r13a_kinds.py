"""The kinds of miss heldout-r13a showed, each on text written here in the tools' real shape
(ProcessGroupNCCL's 2.3+ dump-signal lines, gloo's timeout in ``barrier``, torchelastic's
summary, DeepSpeed's launcher):

A. ProcessGroupNCCL's per-rank counters (``Last enqueued NCCL work: N, last completed NCCL
   work: M``): when every reporting rank but one is idle at the same work and that one rank
   completed the same work but enqueued more, it issued collectives nobody joined; it is the
   initiator, not the rank torchelastic saw exit first;
B. a launcher that reports one worker exiting by itself does not name the raiser of an
   unprefixed exception that several processes printed (torchelastic's
   ``<NO_OTHER_FAILURES>`` after it stopped the rest; DeepSpeed's ``sigkill_handler`` line).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------


def _gloo_barrier(rank: int, op: str, where: int) -> list[str]:
    """Rank ``rank``'s traceback: it waits in ``dist.barrier(group=control)`` (gloo) until
    the timeout."""
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/app/server.py", line 812, in <module>',
        f"{p}     main()",
        f'{p}   File "/srv/app/server.py", line 640, in warmup',
        f"{p}     dist.barrier(group=control_group)",
        f'{p}   File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 4635, in barrier',
        f"{p}     work.wait()",
        f"{p} RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:{where}]"
        f" Timed out waiting 1800000ms for {op} operation to complete",
    ]


def _dump_line(rank: int, source: str, queued: int, done: int) -> str:
    return (
        f"[rank{rank}]:[E703 17:54:18.88{rank}000000 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID"
        f" 0(default_pg) Rank {rank}] Received a dump signal due to a collective timeout from"
        f" {source} and we will try our best to dump the debug info. Last enqueued NCCL work:"
        f" {queued}, last completed NCCL work: {done}.This is most likely caused by incorrect"
        " usages of collectives, e.g., wrong sizes used across ranks."
    )


def _summary(first: int, world: int) -> list[str]:
    out = [
        f"E0703 17:54:25.355000 925 torch/distributed/elastic/multiprocessing/api.py:988] failed"
        f" (exitcode: 1) local_rank: {first} (pid: {1720 + first}) of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "app.server FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]
    n = 1
    for r in range(world):
        if r == first:
            continue
        out += [
            f"[{n}]:",
            "  time      : 2026-07-03_17:54:25",
            "  host      : gpu-node",
            f"  rank      : {r} (local_rank: {r})",
            f"  exitcode  : -15 (pid: {1720 + r})",
            "  error_file: <N/A>",
            f"  traceback : Signal 15 (SIGTERM) received by PID {1720 + r}",
        ]
        n += 1
    out += [
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-07-03_17:54:21",
        "  host      : gpu-node",
        f"  rank      : {first} (local_rank: {first})",
        f"  exitcode  : 1 (pid: {1720 + first})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return out


def _warmup_hang(counters: dict[int, tuple[str, int, int]]) -> str:
    lines = _gloo_barrier(3, "recv", 78) + _gloo_barrier(4, "send", 129)
    lines += [_dump_line(r, src, q, d) for r, (src, q, d) in sorted(counters.items())]
    return "\n".join(lines + _summary(5, 8)) + "\n"


def test_the_one_rank_with_nccl_work_outstanding_while_the_rest_are_idle_initiates():
    log = _warmup_hang(
        {
            0: ("rank 7", 56116, 56116),
            5: ("rank 7", 56116, 56116),
            7: ("this local rank", 56390, 56116),
        }
    )
    d = diagnose_text(log, "server.log", mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank == 7
    assert d.initiator.strategy == "ahead_in_enqueued_work"
    assert "enqueued up to 56390" in d.initiator.why


def test_ranks_that_all_have_work_outstanding_name_no_rank_this_way():
    # the usual hang: every waiting rank has the collective enqueued, none completed it
    log = _warmup_hang(
        {
            0: ("rank 7", 56117, 56116),
            5: ("rank 7", 56117, 56116),
            7: ("this local rank", 56390, 56116),
        }
    )
    d = diagnose_text(log, "server.log", mask=False)
    assert d.initiator.strategy != "ahead_in_enqueued_work"
    assert d.initiator.rank != 7


def test_two_reporting_ranks_are_no_majority():
    log = _warmup_hang({0: ("rank 7", 56116, 56116), 7: ("this local rank", 56390, 56116)})
    d = diagnose_text(log, "server.log", mask=False)
    assert d.initiator.strategy != "ahead_in_enqueued_work"


# -- B ------------------------------------------------------------------------------------


def _value_error_traceback() -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/work/proj/sft/train.py", line 114, in train',
        "    trainer = Trainer(args)",
        '  File "/work/proj/sft/trainer.py", line 73, in __init__',
        "    tracker.login(key=args.tracker_key)",
        "ValueError: API key must be 40 characters long, yours was 13",
    ]


def _torchrun_copies(copies: int) -> str:
    lines: list[str] = []
    for _ in range(copies):
        lines += _value_error_traceback()
    lines += [
        "W0802 03:43:22.101000 40470 torch/distributed/elastic/multiprocessing/api.py:897]"
        f" Sending process {40474 + r} closing signal SIGTERM"
        for r in range(3)
    ]
    lines += _summary(3, 4)[:1] + [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-08-02_03:43:23",
        "  host      : gpu-node",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 1723)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return "\n".join(lines) + "\n"


def test_one_unprefixed_traceback_belongs_to_the_worker_the_launcher_reports():
    d = diagnose_text(_torchrun_copies(1), "job.log", mask=False)
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank == 3
    assert d.initiator.strategy == "reported_by_launcher"


def test_several_unprefixed_copies_leave_the_raiser_unknown():
    d = diagnose_text(_torchrun_copies(4), "job.log", mask=False)
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank is None
    assert d.initiator.strategy == "reported_by_launcher"
    assert "4 processes printed the same exception" in d.initiator.why


def test_deepspeed_launcher_line_does_not_pick_one_of_two_copies():
    lines = _value_error_traceback() + _value_error_traceback()
    lines += [
        "[2024-08-02 03:43:23,037] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 40473",
        "[2024-08-02 03:43:23,037] [ERROR] [launch.py:325:sigkill_handler] ['/opt/conda/bin/python',"
        " '-u', '-m', 'sft.train', '--local_rank=0', '--zero_stage', '2'] exits with return code = 1",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank is None


# -- C ------------------------------------------------------------------------------------
# A ``-m`` launch: the verification reruns the module the launcher names, not a file of it.


def _module_oom_under_torchrun(title: str) -> str:
    """torchrun ran ``-m`` a module (runpy's ``_run_module_as_main`` frame); one worker's
    CUDA OOM, then torchelastic's summary titled ``title``."""
    lines = [
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "<frozen runpy>", line 198, in _run_module_as_main',
        '[rank2]:   File "<frozen runpy>", line 88, in _run_code',
        '[rank2]:   File "/srv/app/src/servepkg/server.py", line 910, in <module>',
        "[rank2]:     main()",
        '[rank2]:   File "/srv/app/src/servepkg/server.py", line 402, in load_weights',
        "[rank2]:     shard = shard.to(device)",
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2"
        " has a total capacity of 79.10 GiB of which 1.02 GiB is free. Including non-PyTorch"
        " memory, this process has 78.06 GiB memory in use.",
        "W0703 10:02:11.100000 77 torch/distributed/elastic/multiprocessing/api.py:1014]"
        " Sending process 101 closing signal SIGTERM",
        "E0703 10:02:12.200000 77 torch/distributed/elastic/multiprocessing/api.py:988] failed"
        " (exitcode: 1) local_rank: 2 (pid: 102) of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        f"{title} FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-07-03_10:02:11",
        "  host      : gpu-node",
        "  rank      : 2 (local_rank: 2)",
        "  exitcode  : 1 (pid: 102)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return "\n".join(lines) + "\n"


def test_a_module_launch_is_verified_with_the_module():
    d = diagnose_text(_module_oom_under_torchrun("servepkg.server"), "job.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank == 2
    assert " -m servepkg.server" in d.root_cause.verify
    assert "server.py" not in d.root_cause.verify.split("  # ")[0]


def test_a_script_title_still_names_the_script():
    d = diagnose_text(_module_oom_under_torchrun("serve_main.py"), "job.log", mask=False)
    assert "serve_main.py" in d.root_cause.verify
    assert " -m " not in d.root_cause.verify.split("  # ")[0]


def test_deepspeed_runs_a_module_with_its_module_flag():
    lines = _value_error_traceback() + [
        "[2024-08-02 03:43:23,037] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 40473",
        "[2024-08-02 03:43:23,037] [ERROR] [launch.py:325:sigkill_handler] ['/opt/conda/bin/python',"
        " '-u', '-m', 'sftpkg.cli.train_sft', '--local_rank=0', '--zero_stage', '2'] exits with"
        " return code = 1",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    head = d.root_cause.verify.split("  # ")[0]
    assert head.startswith("deepspeed ")
    assert "--module sftpkg.cli.train_sft" in head
    assert " -m " not in head


# -- D ------------------------------------------------------------------------------------
# An NCCL wrapper error whose "Last error:" names the InfiniBand verb that failed: the verb
# is the root cause even when a terminal wrapped the wrapper's first line, a label emptied
# before "[rankN]:" is peeled, and a memory registration every process of a node does alike
# names no rank from one rank's copy.


def _ib_reg_mr_paste(error: str) -> str:
    p = ": [rank18]:"
    lines = [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/data/src/train.py", line 28, in <module>',
        f"{p}     main()",
        f'{p}   File "/data/src/sft/workflow.py", line 47, in run_sft',
        f'{p}     with training_args.main_process_first(desc="load dataset"):',
        f'{p}   File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 4159, in barrier',
        f"{p}     work = group.barrier(opts=opts)",
        f"{p} torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), NC",
        "CL version 2.21.5",
        f"{p} ncclSystemError: System call (e.g. socket, malloc) or external library call failed"
        " or device error.",
        f"{p} Last error:",
        f"{p} Call to ibv_reg_mr failed with error {error}",
    ]
    return "\n".join(lines) + "\n"


def test_the_last_error_verb_explains_the_wrapped_system_error():
    d = diagnose_text(_ib_reg_mr_paste("Bad address"), "job.log", mask=False)
    assert d.root_cause.signature == "ib-verbs-call-failed"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.root_cause.evidence[0].line == 12
    assert d.root_cause.fix.variant.id == "reg-mr-gpu-memory"
    # one rank's copy of a registration every process does alike: no initiating rank
    assert d.initiator.rank is None
    assert 18 in d.initiator.candidates


def test_memlock_refusal_gets_the_memlock_fix():
    d = diagnose_text(_ib_reg_mr_paste("Cannot allocate memory"), "job.log", mask=False)
    assert d.root_cause.signature == "ib-verbs-call-failed"
    assert d.root_cause.fix.variant.id == "reg-mr-memlock"
    assert "memlock" in d.root_cause.fix.steps[0] or "memlock" in d.root_cause.fix.steps[1]


# -- E ------------------------------------------------------------------------------------
# NCCL's own "Cuda failure 2 'out of memory'" while it creates the communicator at the job's
# first collective (a barrier before the model is loaded) is its transport set-up failing
# (WSL2, containers), not memory pressure; at a parameter broadcast after the model was
# loaded it stays a memory fix.


def _nccl_cuda_failure(call: str, frame: str) -> str:
    p = "[rank1]:"
    return (
        "\n".join(
            [
                f"{p} Traceback (most recent call last):",
                f'{p}   File "/home/user/proj/train.py", line 58, in main',
                f"{p}     {frame}",
                f'{p}   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 4635, in {call}',
                f"{p}     work = group.{call}(opts=opts)",
                f"{p} torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
                "distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with"
                " NCCL_DEBUG=INFO for details), NCCL version 2.26.2",
                f"{p} ncclUnhandledCudaError: Call to CUDA function failed.",
                f"{p} Last error:",
                f"{p} Cuda failure 2 'out of memory'",
            ]
        )
        + "\n"
    )


def test_cuda_failure_in_nccl_at_the_first_barrier_gets_the_transport_fix():
    d = diagnose_text(_nccl_cuda_failure("barrier", "dist.barrier()"), "job.log", mask=False)
    assert d.root_cause.signature == "gpu-oom-driver-level"
    assert d.root_cause.evidence[0].line == 9
    assert d.initiator.rank == 1
    assert d.root_cause.fix.variant.id == "nccl-setup-first-collective"
    assert "NCCL_SHM_DISABLE=1" in " ".join(d.root_cause.fix.steps[:2])


def test_cuda_failure_in_a_parameter_broadcast_keeps_the_memory_fix():
    d = diagnose_text(
        _nccl_cuda_failure("broadcast", "engine = deepspeed.initialize(model=model)"),
        "job.log",
        mask=False,
    )
    assert d.root_cause.signature == "gpu-oom-driver-level"
    assert d.root_cause.fix.variant.id == "general"


# -- F ------------------------------------------------------------------------------------
# DeepSpeed's code in the user's tree (an editable clone, a vendored copy) is the library's:
# the user's frame named is the script's own line that called into it.


def test_vendored_deepspeed_frames_are_library_frames():
    from rootrank.tracebacks import is_user_frame

    assert not is_user_frame("/home/user/proj/_deepspeed_ref/deepspeed/runtime/zero/stage3.py")
    assert not is_user_frame("/home/user/DeepSpeed/deepspeed/runtime/engine.py")
    assert is_user_frame("/home/user/proj/mistral-deepspeed/sft_trainer.py")
    assert is_user_frame("/home/user/proj/experiments/train_gpt2.py")


def test_the_user_line_is_the_script_that_called_vendored_deepspeed():
    p = "[rank1]:"
    ds = "/home/user/proj/_deepspeed_ref/deepspeed/runtime"
    lines = [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/user/proj/train_gpt2.py", line 180, in <module>',
        f"{p}     main()",
        f'{p}   File "/home/user/proj/train_gpt2.py", line 135, in main',
        f"{p}     model_engine.step()",
        f'{p}   File "{ds}/engine.py", line 2822, in step',
        f"{p}     self._take_model_step(lr_kwargs)",
        f'{p}   File "{ds}/zero/stage3.py", line 1095, in step_with_gradscaler',
        f"{p}     optimizer.step()",
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.44 GiB. GPU 1 has a"
        " total capacity of 10.75 GiB of which 748.75 MiB is free.",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 10
    assert d.initiator.rank == 1
    frame = d.root_cause.user_frame
    assert frame is not None
    assert frame.file.endswith("train_gpt2.py") and frame.line == 135
