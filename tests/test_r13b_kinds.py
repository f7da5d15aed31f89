"""Round-13 set B kinds (held-out logs scored blind at bad8d8e; see the set's MISSES.md).

Every log here is written for this test in the tools' own wording (PyTorch's
ProcessGroupNCCL watchdog, Horovod's stall_inspector.cc), never copied from a held-out log.
"""

from __future__ import annotations

from rootrank.analysis.compare import odd_one_out
from rootrank.engine import diagnose_text
from rootrank.model import Finding

# --- an OpType compared across different SeqNums ------------------------------------------

#: Ranks 1-2 wait in broadcast #7104; rank 0 completed it (and #7105) and waits in #7106, an
#: all-reduce of another size. Rank 3 is not in the paste.
LOG_RANK_AHEAD = """\
[rank1]:[E221 04:10:37.551028907 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7104, OpType=BROADCAST, NumelIn=2048000, NumelOut=2048000, Timeout(ms)=1800000) ran for 1800051 milliseconds before timing out.
[rank2]:[E221 04:10:37.551109231 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7104, OpType=BROADCAST, NumelIn=2048000, NumelOut=2048000, Timeout(ms)=1800000) ran for 1800049 milliseconds before timing out.
[rank0]:[E221 04:10:37.551307456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7106, OpType=ALLREDUCE, NumelIn=257, NumelOut=257, Timeout(ms)=1800000) ran for 1800040 milliseconds before timing out.
"""

#: The same ranks, but rank 0 waits in an all-reduce at the *same* SeqNum the others wait in
#: as a broadcast: a true desync, rank 0 the odd one out.
LOG_SAME_SEQNUM = LOG_RANK_AHEAD.replace("SeqNum=7106", "SeqNum=7104")


def _watchdog(rank: int, seqnum: int, optype: str) -> Finding:
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
        captures={"seqnum": str(seqnum), "optype": optype},
    )


def test_odd_optype_on_a_rank_ahead_in_sequence_names_no_one():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 52, "ALLGATHER"),
    ]
    odd = odd_one_out(group, world=frozenset({0, 1, 2}))
    assert odd.rank is None and odd.undecided and odd.key == "optype"
    assert "SeqNum 52" in odd.why and "not a divergence" in odd.why


def test_odd_optype_at_the_same_seqnum_still_names_the_minority():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 50, "ALLGATHER"),
    ]
    assert odd_one_out(group).rank == 0


def test_odd_optype_on_a_rank_behind_still_names_it():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 48, "ALLREDUCE"),
    ]
    assert odd_one_out(group).rank == 0


def test_rank_ahead_of_the_waiting_ranks_is_not_the_initiator():
    d = diagnose_text(LOG_RANK_AHEAD)
    assert d.root_cause is not None
    assert d.root_cause.failure_class in ("collective-desync", "collective-timeout")
    assert d.initiating_rank is None


def test_rank_in_another_collective_at_the_same_seqnum_is_still_the_initiator():
    d = diagnose_text(LOG_SAME_SEQNUM)
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 0
