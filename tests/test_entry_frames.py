"""The user's own location in the root cause (issue 15): ``root_cause.user_frame``, the
ranks' ``call_sites`` for collectives, the fix's first step, and the CLI's ``file:line``."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.model import UserFrame
from rootrank.tracebacks import is_user_frame

BRANCH = (
    Path(__file__).resolve().parent
    / "fix_variants"
    / "timeout-call-site-divergence"
    / "rank-branch.log"
)
SP = "/home/user/venv/lib/python3.11/site-packages"


def test_call_sites_of_a_branch_desync_name_each_rank_line():
    rc = diagnose_paths([str(BRANCH)]).root_cause
    assert rc.user_frame == UserFrame(
        file="/home/user/project/branch_desync.py", line=15, func="main"
    )
    assert [(c.rank, c.line, c.collective) for c in rc.call_sites] == [
        (0, 17, "all_reduce"),
        (1, 15, "broadcast"),
        (2, 17, "all_reduce"),
    ]
    assert rc.fix.steps[0] == (
        "branch_desync.py:15: rank 1 calls broadcast here while ranks 0 and 2 call all_reduce at "
        "branch_desync.py:17: make every rank reach the same collectives in the same order from these lines."
    )
    assert rc.frames and all({"file", "line", "func", "user"} <= set(f) for f in rc.frames)
    assert [f["line"] for f in rc.frames if f["user"]] == [23, 15]


def test_the_cli_prints_the_user_line():
    out = run_cli("diagnose", str(BRANCH)).stdout.decode()
    assert "  in your code: /home/user/project/branch_desync.py:15 (main)\n" in out
    assert "Fix (for this log, because the ranks' tracebacks stop at different call sites):" in out


def _tb(rank: int, line: int, call: str, lib_line: int) -> str:
    p = f"[rank{rank}]: "
    return "".join(
        p + t + "\n"
        for t in (
            "Traceback (most recent call last):",
            '  File "/home/user/project/train.py", line 80, in <module>',
            "    main()",
            f'  File "/home/user/project/train.py", line {line}, in main',
            f"    dist.{call}(t)",
            f'  File "{SP}/torch/distributed/distributed_c10d.py", line {lib_line}, in {call}',
            "    work.wait()",
            "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
            "Timed out waiting 30000ms for recv operation to complete",
        )
    )


def test_a_victims_traceback_is_not_the_initiators_location():
    # ranks 0 and 1 time out in the same all_reduce; rank 2 (of 3) printed nothing: it is the
    # rank they waited for, and its own line is not in the log
    log = "world_size=3\n" + _tb(0, 41, "all_reduce", 3252) + _tb(1, 41, "all_reduce", 3252)
    d = diagnose_text(log)
    assert d.initiating_rank == 2
    assert d.root_cause.user_frame is None
    assert d.root_cause.frames == []
    assert d.root_cause.call_sites == []
    # the victims' one call site is named as theirs, never as rank 2's own location
    assert d.root_cause.fix.steps[0].startswith(
        "train.py:41: ranks 0 and 1 stopped in all_reduce here; rank 2 never reached this line"
        " (it printed no traceback)"
    )
    assert "where rank 2" not in d.root_cause.fix.steps[0]


def test_no_waiting_site_when_the_victims_stopped_at_two_lines():
    # ranks 0 and 1 stopped at different lines: a desync of their own, no one waiting line
    log = "world_size=3\n" + _tb(0, 41, "all_reduce", 3252) + _tb(1, 44, "all_reduce", 3252)
    d = diagnose_text(log)
    assert "stopped in all_reduce here" not in " ".join(d.root_cause.fix.steps)


def test_an_exception_names_the_innermost_user_frame_not_the_library():
    log = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/home/user/project/train.py", line 200, in <module>\n'
        "[rank3]:     main()\n"
        '[rank3]:   File "/home/user/project/data.py", line 57, in load_batch\n'
        "[rank3]:     return torch.load(path)\n"
        f'[rank3]:   File "{SP}/torch/serialization.py", line 1484, in load\n'
        "[rank3]:     with _open_file_like(f, 'rb') as opened_file:\n"
        "[rank3]: FileNotFoundError: [Errno 2] No such file or directory: '/data/shard_0007.pt'\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.user_frame == UserFrame(file="/home/user/project/data.py", line=57, func="load_batch")
    assert rc.fix.steps[0].startswith(
        "data.py:57 (in load_batch), where rank 3 raised FileNotFoundError: "
    )


def test_launcher_console_scripts_are_not_user_code():
    assert not is_user_frame("/home/user/venv/bin/torchrun")
    assert not is_user_frame("/usr/local/bin/deepspeed")
    assert not is_user_frame("C:\\Users\\me\\venv\\Scripts\\accelerate.exe")
    assert is_user_frame("/usr/local/bin/train_job.py")
    assert is_user_frame("/home/user/project/bin/train.py")


_PORT_CLASH_CUT = (
    "torchrun --standalone --nnodes=1 --nproc_per_node=2 pretrain.py --config cfg.yaml\n"
    "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29611 (errno: 98 - Address already in use).\n"
    "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.\n"
    "Traceback (most recent call last):\n"
    '  File "pretrain.py", line 212, in <module>\n'
    "    run(args)\n"
    '  File "pretrain.py", line 63, in run\n'
    "    dist.init_process_group(backend='nccl')\n"
    f'  File "{SP}/torch/distributed/distributed_c10d.py", line 602, in init_process_group\n'
    "    store, rank, world_size = next(rendezvous_iterator)\n"
)


def test_a_traceback_the_paste_cuts_before_its_exception_line_still_names_the_user_line():
    # the log ends inside the only traceback (no exception line): its user frame is the
    # fix's location all the same
    rc = diagnose_text(_PORT_CLASH_CUT).root_cause
    assert rc.failure_class == "port-in-use"
    assert rc.user_frame == UserFrame(file="pretrain.py", line=63, func="run")
    assert rc.fix.steps[0].startswith("pretrain.py:63 (in run), where ")


def test_unranked_tracebacks_that_disagree_name_no_line():
    # two rankless tracebacks stopping at different user lines: which one is the cause's is
    # not known, so none is named
    other = _PORT_CLASH_CUT.split("Traceback")[1].replace("line 63, in run", "line 71, in run")
    log = _PORT_CLASH_CUT.replace(
        "Traceback", "Traceback" + other.rsplit("\n", 3)[0] + "\nRuntimeError: stop\nTraceback", 1
    )
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "port-in-use"
    assert rc.user_frame is None


def test_interleaved_cut_tracebacks_name_no_line():
    # three processes' headers interleaved and cut: whose frames are whose cannot be told
    head = _PORT_CLASH_CUT.split("Traceback")[0]
    log = head + (
        "Traceback (most recent call last):\n"
        "Traceback (most recent call last):\n"
        '  File "pretrain.py", line 212, in <module>\n'
        "Traceback (most recent call last):\n"
        '  File "pretrain.py", line 212, in <module>\n'
    )
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "port-in-use"
    assert rc.user_frame is None


def test_a_console_script_wrapper_is_not_user_code():
    assert not is_user_frame("/opt/conda/bin/openllm")
    assert not is_user_frame("/home/user/.local/bin/my-tool")
    assert is_user_frame("/opt/conda/bin/run_train.py")


# A CUDA kernel assertion, then faulthandler's dump of the crashing thread (as
# Python/traceback.c writes it: innermost frame first, "line N in func", no comma), and
# another thread's stack that is not the crash's.
_KERNEL_ASSERT_FAULTHANDLER = (
    "/opt/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block:"
    " [12,0,0], thread: [5,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007f11c2ffd640 (most recent call first):\n"
    '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
    '  File "/home/user/tinylm/data_prefetch.py", line 40 in run\n'
    "\n"
    "Current thread 0x00007f12a0b52740 (most recent call first):\n"
    f'  File "{SP}/torch/nn/functional.py", line 2264 in embedding\n'
    '  File "/home/user/tinylm/model.py", line 88 in forward\n'
    '  File "/home/user/tinylm/pretrain.py", line 131 in train_step\n'
    '  File "/home/user/tinylm/pretrain.py", line 202 in <module>\n'
    "\n"
    "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n"
)


def test_faulthandler_stack_of_the_crashing_thread_names_the_user_line():
    rc = diagnose_text(_KERNEL_ASSERT_FAULTHANDLER).root_cause
    assert rc.signature == "cuda-device-assert-kernel"
    # the current thread's innermost user frame, not the other thread's
    assert rc.user_frame == UserFrame(file="/home/user/tinylm/model.py", line=88, func="forward")
    assert rc.fix.steps[0].startswith("model.py:88 (in forward), where ")


def test_a_faulthandler_stack_the_log_ends_inside_is_read():
    log = _KERNEL_ASSERT_FAULTHANDLER.split("\n\nExtension modules")[0]
    rc = diagnose_text(log).root_cause
    assert rc.user_frame == UserFrame(file="/home/user/tinylm/model.py", line=88, func="forward")


def test_a_notebook_cells_kernel_file_is_named_by_the_cell_not_its_hash():
    """ipykernel runs a cell as ``/tmp/ipykernel_<pid>/<hash>.py``: the fix points at the
    cell by the function it defines, and keeps the file name for the record."""
    from rootrank.entry.frames import location_step

    cell = UserFrame("/tmp/ipykernel_2231/3120925866.py", 21, "training_loop")
    assert location_step(cell, [], 1, "raised OutOfMemoryError") == (
        "the notebook cell that defines training_loop (line 21 of the cell; the kernel ran it "
        "as 3120925866.py), where rank 1 raised OutOfMemoryError:"
    )
    plain = UserFrame("/home/ana/nb/train_utils.py", 21, "training_loop")
    assert location_step(plain, [], 1, "raised OutOfMemoryError") == (
        "train_utils.py:21 (in training_loop), where rank 1 raised OutOfMemoryError:"
    )
