"""Kinds of reasoning fault found on a held-out set (r6), each pinned on log text written
here in the shape the tools print (srun, torchrun, NCCL's aws-ofi plugin, Python).

- A Python exception printed with no ``Traceback`` header is still an exception; when the
  launcher's and scheduler's teardown lines are all the log otherwise names, it is the root
  cause, on the one task the launcher reports exiting by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli

from rootrank.engine import diagnose_text
from rootrank.tracebacks import TracebackReader
from rootrank.verify_check import cannot_fail


def _read(text: str):
    reader = TracebackReader()
    out = []
    for i, line in enumerate(text.split("\n")):
        exc = reader.feed(line, i + 1)
        if exc is not None:
            out.append(exc)
    return out


def test_an_exception_line_without_a_traceback_header_is_read():
    (exc,) = _read(
        "loading shard 3\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable: '/scratch/c/lock'\n"
        "srun: error: gpu7: task 1: Exited with exit code 1\n"
    )
    assert (exc.type, exc.log_line, exc.header, exc.frames) == ("BlockingIOError", 2, "bare", [])
    assert exc.message == "[Errno 11] Resource temporarily unavailable: '/scratch/c/lock'"


def test_lines_that_only_look_like_exceptions_are_not_read():
    assert (
        _read(
            "Error: no such option --foo\n"
            "INFO: starting epoch 2\n"
            "UserWarning: TypedStorage is deprecated\n"
            "    ValueError: quoted in an indented help text\n"
            "RuntimeError:\n"
        )
        == []
    )


def test_an_exception_printed_after_exception_ignored_is_ignored():
    (exc,) = _read(
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
        "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute 'workers'\n"
    )
    assert exc.ignored and exc.type == "AttributeError"


SRUN_BARE = """\
srun: launching StepId=81234.0 on host(s) gpu7
epoch 0: preparing cache in /scratch/run/cache
BlockingIOError: [Errno 11] Resource temporarily unavailable: '/scratch/run/cache/index.lock'
srun: error: gpu7: task 1: Exited with exit code 1
slurmstepd: error: *** STEP 81234.0 ON gpu7 CANCELLED AT 2026-03-04T09:15:02 ***
srun: error: gpu7: tasks 0,2-3: Terminated
"""


def test_a_bare_exception_before_srun_teardown_is_the_root_on_the_task_that_exited():
    d = diagnose_text(SRUN_BARE, "slurm-81234.out", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc["failure_class"], rc["signature"]) == ("user-code-exception", "user-code-exception")
    assert rc["evidence"][0]["line"] == 3
    assert d.initiating_rank == 1
    assert d.initiator["strategy"] == "reported_by_launcher"
    assert {g["signature"] for g in d.collateral} == {
        "elastic-child-failed",
        "slurm-step-cancelled",
    }


def test_an_unranked_exception_names_no_task_when_two_exited_by_themselves():
    text = SRUN_BARE.replace(
        "srun: error: gpu7: tasks 0,2-3: Terminated",
        "srun: error: gpu7: task 2: Exited with exit code 1\nsrun: error: gpu7: tasks 0,3: Terminated",
    )
    d = diagnose_text(text, "slurm-81234.out", mask=False)
    assert d.root_cause["failure_class"] == "user-code-exception"
    assert d.initiating_rank is None


def test_an_unknown_exception_with_its_traceback_is_the_root_over_srun_teardown():
    text = SRUN_BARE.replace(
        "BlockingIOError:",
        'Traceback (most recent call last):\n  File "/home/u/prep.py", line 41, in build\n'
        "    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)\nBlockingIOError:",
    )
    d = diagnose_text(text, "slurm-81234.out", mask=False)
    assert d.root_cause["failure_class"] == "user-code-exception"
    assert d.root_cause["evidence"][0]["line"] == 6
    assert d.initiating_rank == 1


def test_a_bare_exception_alone_stays_unclassified():
    d = diagnose_text(
        "epoch 0: preparing cache\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable: '/scratch/lock'\n",
        mask=False,
    )
    assert d.root_cause is None
    assert d.unclassified is not None and d.unclassified.title.startswith(
        "BlockingIOError: [Errno 11]"
    )
    assert d.unclassified.evidence[0].line == 2


# -- a network fabric error read from aws-ofi-nccl's completion error ------------------------

OFI_AT_INIT = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/scratch/proj/train_ddp.py", line 52, in <module>
[rank1]:     model = DDP(model, device_ids=[local_rank])
[rank1]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/utils.py", line 281, in _verify_param_shape_across_processes
[rank1]:     return dist._verify_params_across_processes(process_group, tensors, logger)
[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3690, remote process exited or there was a network error, NCCL version 2.27.3
[rank1]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
[rank1]: Last error:
[rank1]: NET/OFI Request 0x7f3a2c01d9e0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). Completed length: 0
[rank0]: Traceback (most recent call last):
[rank0]:   File "/scratch/proj/train_ddp.py", line 52, in <module>
[rank0]:     model = DDP(model, device_ids=[local_rank])
"""


def test_an_ofi_undeliverable_completion_is_a_fabric_error_and_a_cut_rank_names_no_rank():
    d = diagnose_text(OFI_AT_INIT, mask=False)
    rc = d.root_cause
    assert (rc["failure_class"], rc["signature"]) == ("network-fabric-error", "efa-ofi-error")
    assert rc["evidence"][0]["line"] == 9
    assert rc["captures"]["rc"] == "113"
    # rank 0's traceback is cut before its error line: it may have failed first
    assert d.initiating_rank is None


def test_missing_reporter_does_not_name_a_rank_whose_traceback_is_cut(library):
    from rootrank.analysis.initiator import Case, missing_reporter
    from rootrank.analysis.prepare import Context
    from rootrank.model import Evidence, Finding
    from rootrank.scan import ScanState

    sig = library.signatures["nccl-watchdog-timeout"]
    found = [
        Finding.of(
            sig,
            rank=r,
            host=None,
            time=None,
            order=r,
            evidence=[Evidence("job.log", 10 + r, "watchdog", r)],
            captures={"seqnum": "7", "optype": "ALLREDUCE"},
        )
        for r in (0, 1, 3)
    ]
    state = ScanState()
    state.ranks_seen = {0, 1, 2, 3}
    ctx = Context(state, library, found, True)
    assert missing_reporter(Case(ctx, found[0], found)).rank == 2
    state.cut_traceback_ranks = {2}
    v = missing_reporter(Case(ctx, found[0], found))
    assert v.rank is None and v.undecided and v.candidates == (2,)


# -- torchelastic's summary of a SIGABRT is not the initiator ------------------------------

SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
pretrain.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-02-10_04:12:55
  host      : gpu-a12
  rank      : 2 (local_rank: 2)
  exitcode  : {code} (pid: 41877)
  error_file: <N/A>
  traceback : {tb}
============================================================
"""


def test_a_summary_that_only_shows_a_sigabrt_names_no_rank():
    d = diagnose_text(
        SUMMARY.format(code=-6, tb="Signal 6 (SIGABRT) received by PID 41877"), mask=False
    )
    assert d.root_cause["failure_class"] == "elastic-child-failed"
    assert d.initiating_rank is None
    assert d.initiator["strategy"] == "elastic_summary" and d.initiator["candidates"] == [2]


def test_a_summary_that_shows_a_real_exit_code_names_its_rank():
    d = diagnose_text(
        SUMMARY.format(
            code=1,
            tb="To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        ),
        mask=False,
    )
    assert d.initiating_rank == 2


# -- a launcher agent is no training rank ---------------------------------------------------

AGENT_PORT = """\
W0302 08:00:01.100000 7001 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
Traceback (most recent call last):
  File "/opt/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main
    run(args)
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 528, in _rendezvous
    rdzv_info = spec.rdzv_handler.next_rendezvous()
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29511, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use
"""


def test_a_port_in_use_in_torchruns_own_agent_names_no_rank():
    d = diagnose_text(AGENT_PORT, mask=False)
    assert d.root_cause["failure_class"] == "port-in-use"
    assert d.initiating_rank is None
    assert d.initiator["strategy"] == "implied_rank"


def test_a_port_in_use_in_a_worker_is_rank_0_by_design():
    worker = (
        AGENT_PORT.replace(
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 528, in _rendezvous\n'
            "    rdzv_info = spec.rdzv_handler.next_rendezvous()\n"
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous\n',
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 189, in _create_c10d_store\n',
        )
        .replace('  File "/opt/venv/bin/torchrun", line 8, in <module>\n    sys.exit(main())\n', "")
        .replace(
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main\n    run(args)\n',
            '  File "/home/u/train.py", line 30, in main\n    dist.init_process_group("nccl")\n',
        )
    )
    assert "elastic" not in worker.split("\n", 1)[1] and "bin/torchrun" not in worker
    d = diagnose_text(worker, mask=False)
    assert d.root_cause["failure_class"] == "port-in-use"
    assert d.initiating_rank == 0


# -- a GPU-capability error is every rank's -------------------------------------------------


def test_a_gpu_capability_error_on_the_one_rank_pasted_names_no_rank():
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/u/sft.py", line 77, in forward\n'
        "[rank2]:     out = flash_attn_func(q, k, v, causal=True)\n"
        "[rank2]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause["signature"] == "flash-attention-unsupported"
    assert d.initiating_rank is None
    assert d.initiator["strategy"] == "named_by_root" and d.initiator["candidates"] == [2]


def test_a_shape_error_of_the_same_class_without_the_tag_still_names_its_rank():
    # loss-target-shape shares the class but is the rank's own batch: not every rank's
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/u/train.py", line 70, in train\n'
        "[rank2]:     loss = criterion(logits, target)\n"
        "[rank2]: RuntimeError: 0D or 1D target tensor expected, multi-target not supported\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause["failure_class"] == "unsupported-shape-or-dtype"
    assert d.initiating_rank == 2


# -- a paste that starts inside another trace's C++ frame list ------------------------------

IMA = (
    "[rank1]:[E302 10:00:05.120000000 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg)"
    " Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal"
    " memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the"
    " stacktrace below might be incorrect.\n"
    "\n"
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43"
    " (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7e8 in libc10.so)\n"
)


def test_a_paste_that_starts_inside_an_earlier_cpp_frame_list_names_no_rank():
    cut = "frame #7: <unknown function> + 0x129c6c (0x798ee1329c6c in /lib/x86_64-linux-gnu/libc.so.6)\n\n"
    d = diagnose_text(cut + IMA, mask=False)
    assert d.root_cause["failure_class"] == "cuda-illegal-memory-access"
    assert d.root_cause["evidence"][0]["line"] == 3
    assert d.initiating_rank is None
    assert "line 1" in d.initiator["why"]
    whole = diagnose_text(IMA, mask=False)  # the same error with nothing cut before it
    assert whole.initiating_rank == 1


# -- a message that compares two ranks ------------------------------------------------------

PARAM = (
    "RuntimeError: [3]: params[12] in this process with sizes [517, 384] appears not to match"
    " sizes of the same param in process 0.\n"
)


def test_a_two_rank_comparison_alone_names_no_rank():
    d = diagnose_text("python -m torch.distributed.launch --nproc_per_node=4 search.py\n" + PARAM)
    assert d.root_cause["signature"] == "ddp-param-shape-mismatch"
    assert d.root_cause["captures"]["peer_rank"] == "0"
    assert d.initiating_rank is None
    assert sorted(d.initiator["candidates"]) == [0, 3]


def test_the_comparison_names_its_rank_when_the_log_shows_the_others():
    others = "".join(f"[rank{r}]: building supernet with 24 blocks\n" for r in (0, 1, 2))
    d = diagnose_text(others + "[rank3]: " + PARAM, mask=False)
    assert d.initiating_rank == 3


# -- a verification command must be able to fail --------------------------------------------


@pytest.mark.parametrize(
    "command, program",
    [
        ("df -h /dev/shm  # several GB", "df"),
        ("sacct -j <jobid> -o State  # COMPLETED", "sacct"),
        ("dmesg -T | tail  # no new Xid", "tail"),
        ("nvidia-smi -L | wc -l", "wc"),
        ("torchrun --nproc-per-node=2 train.py 2>&1 | tee run.log", "tee"),
        ("torchrun train.py; echo done", "echo"),
        ("python train.py || true", "true"),
        ("sudo -E dmesg && free -g", "free"),
    ],
)
def test_commands_that_exit_0_whatever_happened_cannot_fail(command, program):
    why = cannot_fail(command)
    assert why is not None and f"'{program}'" in why


@pytest.mark.parametrize(
    "command",
    [
        "sacct -j <new jobid> -n -X -o State | grep -q COMPLETED",
        "! journalctl -k | grep -q oom_reaper  # nothing killed",
        'test "$(nvidia-smi -L | wc -l)" -eq 8',
        "df -h /data && python -c 'import torch; assert torch.cuda.is_available()'",
        "NCCL_DEBUG=WARN timeout 600 torchrun --nproc-per-node=2 train.py  # exit 0",
        "/usr/bin/time -v torchrun train.py 2>&1 | grep 'Maximum resident'",
    ],
)
def test_commands_whose_status_shows_a_failure_can_fail(command):
    assert cannot_fail(command) is None


def test_the_library_check_refuses_a_verify_that_cannot_fail(tmp_path):
    from rootrank.signatures import SignatureProblems, load_signature

    text = (ROOT / "signatures" / "io" / "disk-full.yaml").read_text(encoding="utf-8")
    lines = [
        'verify: "df -h <output_dir>  # enough free space"' if line.startswith("verify:") else line
        for line in text.split("\n")
    ]
    target = tmp_path / "io" / "disk-full.yaml"
    target.parent.mkdir()
    target.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises((SignatureProblems, ValueError)) as err:
        load_signature(target)
    assert "verify" in str(err.value) and "cannot fail" in str(err.value)


# -- rootrank run: a stall stays in the final summary ----------------------------------------


def _run(tmp_path, fmt: str):
    job = tmp_path / "hang.py"
    job.write_text(
        "import sys, time\n"
        "for step in range(3):\n"
        "    print(f'[rank0]: step {step} loss 2.0', flush=True)\n"
        "    print(f'[rank1]: step {step} loss 2.0', flush=True)\n"
        "    time.sleep(0.1)\n"
        "time.sleep(4)\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", fmt, "--stall", "1", "--"]
        + [sys.executable, str(job)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )


def test_the_final_summary_of_a_stalled_run_names_the_stall(tmp_path):
    proc = _run(tmp_path, "text")
    assert proc.returncode == 3
    err = proc.stderr.decode()
    assert "rootrank: stall:" in err
    final = err[err.index("Stalled: ") :]
    assert "rank 0 at step 2, rank 1 at step 2" in final.splitlines()[0]
    assert "No known failure found" not in err


def test_the_final_json_event_of_a_stalled_run_carries_the_stall(tmp_path):
    proc = _run(tmp_path, "json")
    evs = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    final = next(e for e in evs if e["event"] == "failure" and e["final"])
    assert final["diagnosis"]["root_cause"] is None
    assert {r["rank"]: r["step"] for r in final["stall"]["ranks"]} == {0: 2, 1: 2}
    assert final["stall"]["seconds"] >= 1


# -- an empty input is an input error ---------------------------------------------------------


def test_an_empty_stdin_is_an_input_error():
    done = run_cli("diagnose", "-", stdin=b"")
    assert done.returncode == 2
    assert b"<stdin>: empty input (0 bytes read)" in done.stderr


def test_an_empty_rank_file_beside_a_real_one_is_still_diagnosed(tmp_path):
    (tmp_path / "rank0.log").write_bytes(b"")
    (tmp_path / "rank1.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
        " total capacity of 79.11 GiB of which 1.02 GiB is free.\n",
        encoding="utf-8",
    )
    done = run_cli("diagnose", str(tmp_path), "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["root_cause"]["failure_class"] == "cuda-oom"


def test_a_parameter_marked_ready_twice_on_the_one_rank_pasted_names_no_rank():
    text = (
        "[rank5]: Traceback (most recent call last):\n"
        '[rank5]:   File "/home/u/grpo.py", line 211, in step\n'
        "[rank5]:     loss.backward()\n"
        "[rank5]: RuntimeError: Expected to mark a variable ready only once. This error is caused"
        " by one of the following reasons: 1) Use of a module parameter outside the `forward`"
        " function.\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause["failure_class"] == "ddp-marked-ready-twice"
    assert d.initiating_rank is None and d.initiator["candidates"] == [5]
