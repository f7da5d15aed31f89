"""Held-out r24b kinds (the set's MISSES.md), on fixtures written beside their signatures or
inline here with values of our own: bash's job report of a SIGBUS death is the run's failure
(shared memory); a TORCH_DISTRIBUTED_DEBUG fingerprint message cut before its head is still
a shape mismatch, and names no rank; NCCL's connect retries that last to the log's end are a
group that never formed (a few retries before 'Init COMPLETE' are not); NCCL's socket-layer
return-code trail is the first error before a communicator abort; and one rank's timeout in
its group's first collective with nothing completed names no silent peer."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_shell_reported_bus_error_is_the_runs_shared_memory_failure():
    d = _diag(SIGNATURES / "process/shell-job-sigbus.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shell-job-sigbus"
    assert d.root_cause.failure_class == "dataloader-worker-killed-or-shm"
    assert d.root_cause.evidence[0].line == 5
    assert d.initiating_rank is None
    assert "--shm-size" in " ".join(d.root_cause.fix.steps)


def test_bus_error_words_inside_other_lines_are_no_signal_death():
    d = _diag(SIGNATURES / "process/shell-job-sigbus.near-miss.log")
    assert "shell-job-sigbus" not in {f.signature for f in d.findings}


def test_fingerprint_message_without_its_head_is_a_shape_mismatch_of_no_rank():
    d = _diag(SIGNATURES / "collective/fingerprint-shape-mismatch.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "fingerprint-shape-mismatch"
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.root_cause.evidence[0].line == 4
    assert d.root_cause.captures["peer_rank"] == "0"
    assert d.root_cause.captures["shape"] == "31"
    # rank 2 raised the RuntimeError: the rank that compares first is no culprit
    assert d.initiating_rank is None


def test_nccl_connect_retries_to_the_end_are_a_group_that_never_formed():
    d = _diag(SIGNATURES / "network/nccl-connect-retry-loop.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-connect-retry-loop"
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.root_cause.evidence[0].line == 3
    assert d.root_cause.captures["count"] == "14"
    assert d.initiating_rank is None


def test_nccl_connect_retries_then_init_complete_are_no_failure():
    for rel in (
        "network/nccl-connect-retry-loop.near-miss.log",
        "network/nccl-connect-retry.positive.log",
    ):
        d = _diag(SIGNATURES / rel)
        assert d.root_cause is None, rel


def test_retry_loop_needs_repeats(tmp_path: Path):
    log = tmp_path / "few.log"
    log.write_text(
        "n1:90:91 [0] NCCL INFO Bootstrap : Using ib0:10.0.7.2<0>\n"
        + "n1:90:91 [0] NCCL INFO Call to connect returned Connection refused, retrying\n" * 2
    )
    assert _diag(log).root_cause is None


def test_nccl_socket_return_code_trail_is_the_first_error_before_the_abort():
    d = _diag(SIGNATURES / "network/nccl-socket-return-code.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-socket-return-code"
    assert d.root_cause.failure_class == "nccl-system-error"
    assert d.root_cause.evidence[0].line == 3
    assert d.initiating_rank is None
    assert "--nnodes=" in d.root_cause.verify  # a check that spans the nodes


_FIRST_WORK = """\
box-7:4410:4431 [0] NCCL INFO comm 0x55d1f00a rank 0 nranks 2 cudaDev 0 busId 21000 - Init START
box-7:4411:4432 [1] NCCL INFO comm 0x55d1f10b rank 1 nranks 2 cudaDev 1 busId 22000 - Init START
box-7:4410:4431 [0] NCCL INFO Channel 00/02 :    0   1
box-7:4411:4432 [1] NCCL INFO Trees [0] -1/-1/-1->1->0
[rank1]:[E310 08:15:02.118822874 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, \
Timeout(ms)=1800000) ran for 1800044 milliseconds before timing out.
[rank1]:[E310 08:15:02.119226529 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 1] \
failure detected by watchdog at work sequence id: 1 PG status: last enqueued work: 1, last \
completed work: -1
[rank1]:[E310 08:15:02.119275121 ProcessGroupNCCL.cpp:684] [Rank 1] Some NCCL operations have \
failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations \
might run on corrupted/incomplete data.
"""


def test_first_collective_timeout_with_nothing_completed_names_no_silent_rank(tmp_path: Path):
    log = tmp_path / "first.log"
    log.write_text(_FIRST_WORK)
    d = _diag(log)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 5
    assert d.initiating_rank is None


def test_later_collective_timeout_still_names_the_silent_rank(tmp_path: Path):
    log = tmp_path / "later.log"
    log.write_text(
        _FIRST_WORK.replace(
            "SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1",
            "SeqNum=4120, OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824",
        )
        .replace("sequence id: 1 PG", "sequence id: 4120 PG")
        .replace(
            "last enqueued work: 1, last completed work: -1",
            "last enqueued work: 4120, last completed work: 4119",
        )
    )
    d = _diag(log)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
