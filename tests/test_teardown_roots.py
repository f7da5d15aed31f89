"""The root cause when the log otherwise names only teardown: a Python exception printed
with no ``Traceback`` header, srun's task reports, aws-ofi-nccl's completion error. Every log
here is written in the shape the tools print (srun, torchrun, NCCL's aws-ofi plugin, Python)."""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.tracebacks import TracebackReader


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
    assert (rc.failure_class, rc.signature) == ("user-code-exception", "user-code-exception")
    assert rc.evidence[0].line == 3
    assert d.initiating_rank == 1
    assert d.initiator.strategy == "reported_by_launcher"
    assert {g.signature for g in d.collateral} == {
        "elastic-child-failed",
        "slurm-step-cancelled",
    }


def test_an_unranked_exception_names_no_task_when_two_exited_by_themselves():
    text = SRUN_BARE.replace(
        "srun: error: gpu7: tasks 0,2-3: Terminated",
        "srun: error: gpu7: task 2: Exited with exit code 1\nsrun: error: gpu7: tasks 0,3: Terminated",
    )
    d = diagnose_text(text, "slurm-81234.out", mask=False)
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank is None


def test_an_unknown_exception_with_its_traceback_is_the_root_over_srun_teardown():
    text = SRUN_BARE.replace(
        "BlockingIOError:",
        'Traceback (most recent call last):\n  File "/home/u/prep.py", line 41, in build\n'
        "    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)\nBlockingIOError:",
    )
    d = diagnose_text(text, "slurm-81234.out", mask=False)
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.evidence[0].line == 6
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
    assert (rc.failure_class, rc.signature) == ("network-fabric-error", "efa-ofi-error")
    assert rc.evidence[0].line == 9
    assert rc.captures["rc"] == "113"
    # rank 0's traceback is cut before its error line: it may have failed first
    assert d.initiating_rank is None
