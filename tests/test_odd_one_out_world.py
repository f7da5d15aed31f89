"""Two reporters of a larger world are no majority (rootrank.analysis.compare.odd_one_out).

A SeqNum one behind the other reporter's marks the lagging rank only when the two are the
whole job; when the log shows other ranks (ranks 0..max beyond the two, or a printed world
size), those ranks may be at either value, so the comparison is left undecided. Logs below
are written in the watchdog's own wording (PyTorch 2.4 ProcessGroupNCCL).
"""

from __future__ import annotations

from rootrank.analysis.compare import odd_one_out
from rootrank.engine import diagnose_text
from rootrank.model import Finding


def _timeout(rank: int, seqnum: int) -> Finding:
    return Finding(
        signature="nccl-watchdog-timeout",
        failure_class="collective-timeout",
        title="t",
        role="symptom",
        severity="error",
        specificity=20,
        rank=rank,
        host=None,
        time=None,
        order=rank,
        captures={"seqnum": str(seqnum), "optype": "BROADCAST"},
    )


def test_two_reporters_that_are_the_whole_job_name_the_one_behind():
    odd = odd_one_out([_timeout(0, 12), _timeout(1, 11)], world=frozenset({0, 1}))
    assert odd.rank == 1 and not odd.undecided


def test_two_reporters_of_a_larger_world_are_undecided():
    odd = odd_one_out([_timeout(0, 5730), _timeout(3, 5729)], world=frozenset({0, 3}))
    assert odd.rank is None and odd.undecided
    assert "0 and 3" in odd.why


def test_three_reporters_still_name_the_single_lagging_rank():
    group = [_timeout(0, 12), _timeout(1, 11), _timeout(2, 12), _timeout(3, 12)]
    odd = odd_one_out(group, world=frozenset(range(8)))
    assert odd.rank == 1


LOG_TWO_OF_FOUR = """\
[rank0]:[E822 16:31:16.131931664 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=BROADCAST, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.
[rank3]:[E822 16:31:16.135435629 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=87, OpType=BROADCAST, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600008 milliseconds before timing out.
"""

LOG_TWO_OF_TWO = """\
[rank0]:[E822 16:31:16.131931664 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.
[rank1]:[E822 16:31:16.135435629 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=87, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600008 milliseconds before timing out.
"""


def test_diagnosis_names_no_rank_when_two_of_four_ranks_report():
    d = diagnose_text(LOG_TWO_OF_FOUR)
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None


def test_diagnosis_names_the_lagging_rank_of_a_two_rank_job():
    d = diagnose_text(LOG_TWO_OF_TWO)
    assert d.initiating_rank == 1


LOG_UNUSED_ONE_RANK = """\
[rank2]: RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss. You can enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by
[rank2]: making sure all `forward` function outputs participate in calculating loss.
[rank2]: Parameters which did not receive grad for rank 2: head.aux.bias, head.aux.weight
[rank2]: Parameter indices which did not receive grad for rank 2: 40 41
"""


def test_unused_parameters_reported_by_one_rank_name_no_initiator():
    """DDP's message names the rank that printed it; parameters the model never uses are
    unused on every rank, so one rank's copy in a log that shows no other rank names none."""
    d = diagnose_text(LOG_UNUSED_ONE_RANK)
    assert d.root_cause is not None and d.root_cause.failure_class == "ddp-unused-parameters"
    assert d.initiating_rank is None


def test_lone_submitter_is_the_rank_alone_in_its_own_collective():
    from rootrank.analysis.compare import lone_submitter

    sets = [frozenset({2}), frozenset({0, 1, 3}), frozenset({0, 1, 3})]
    assert lone_submitter(sets) == 2
    # overlapping ready sets (the same op ready on different subsets) single no one out
    assert lone_submitter([frozenset({0, 7, 3}), frozenset({0, 7, 3, 2})]) is None
    # one ready set only (ranks missing from it are handled by missing_from_ready itself)
    assert lone_submitter([frozenset({0, 1, 2, 4, 5, 6, 7})]) is None
    # two lone ranks on two ops: no single rank stands out
    assert lone_submitter([frozenset({2}), frozenset({3}), frozenset({0, 1})]) is None


LOG_HOROVOD_SPLIT = """\
[1,0]<stderr>:[2026-11-30 11:40:02.118230: W horovod/common/stall_inspector.cc:107] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: HorovodAllreduce_loss_0 [ready ranks: 1], HorovodAllreduce_gradients_conv1_0 [ready ranks: 0, 2, 3], HorovodAllreduce_gradients_conv2_0 [ready ranks: 2, 0, 3]
"""


def test_horovod_stall_with_complementary_ready_sets_names_the_lone_rank():
    d = diagnose_text(LOG_HOROVOD_SPLIT)
    # disjoint ready sets with one rank alone: a desync on that rank (horovod-stall-different-ops)
    assert d.root_cause is not None and d.root_cause.signature == "horovod-stall-different-ops"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1


LOG_RAY_DEATH_THEN_OWN_WATCHDOG = """\
2026-03-02 08:14:51,202 WARNING worker.py:2058 -- A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff2a91c0d7e1f3b2a601000000 Worker ID: 3fd2c1a9b8e7d6c5 Node ID: 7a6b5c4d3e2f1a0b Worker IP address: 10.0.0.12 Worker port: 40211 Worker PID: 48815 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.
(RayWorkerWrapper pid=48815) [rank1]:[E302 08:14:50.911802334 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
(RayWorkerWrapper pid=48815) [rank1]:[E302 08:14:50.912011857 ProcessGroupNCCL.cpp:683] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
"""


def test_a_ray_worker_death_printed_before_its_own_watchdog_abort_is_its_consequence():
    """Ray's driver reports a worker's death when it notices; the worker's forwarded stderr
    (its watchdog timeout and 'taking the entire process down') can come after it. The report
    is a terminal event explained by the fault, like torchrun's failed-child report."""
    d = diagnose_text(LOG_RAY_DEATH_THEN_OWN_WATCHDOG)
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-timeout"
