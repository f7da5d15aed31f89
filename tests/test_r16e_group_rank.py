"""Round-16 set E kind: ProcessGroupNCCL's "[Rank M]" on a line torch prefixed "[rankN]:" is
the same process's rank inside a subgroup, not a second rank (held-out GitHub-issue log scored
blind at b8c6e93; see the set's MISSES.md).

The logs are written for this test in ProcessGroupNCCL's own wording (its logPrefix "[Rank M]"
/ "[PG ID g PG GUID u Rank M]" after torch's "[rankN]:[E...]" line prefix), never copied
from a held-out log.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.scan import captured_rank

#: Global rank 9 is rank 1 of process group 3 (a tensor-parallel group): both watchdog lines
#: are that one process's.
LOG_SUBGROUP_WATCHDOG = """\
[rank9]:[E0301 10:00:01.100000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLGATHER, NumelIn=1024, NumelOut=4096, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank9]:[E0301 10:00:01.100500 ProcessGroupNCCL.cpp:1785] [PG ID 3 PG GUID 5 Rank 1] Exception (either an error or timeout) detected by watchdog at work: 77, last enqueued NCCL work: 77, last completed NCCL work: 76.
"""


def test_a_subgroup_rank_in_the_watchdog_text_is_not_another_rank():
    d = diagnose_text(LOG_SUBGROUP_WATCHDOG)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.signature, rc.evidence[0].line) == (
        "collective-timeout",
        "nccl-watchdog-timeout",
        1,
    )
    assert rc.rank == 9  # the process's global rank, from torch's prefix
    assert d.initiating_rank is None  # a waiting side only
    assert 1 not in {f.rank for f in d.collateral}
    # the finding quotes the global rank; the subgroup's stays readable as group_rank
    assert rc.captures["rank"] == "9" and rc.captures["group_rank"] == "1"


def test_captured_rank_keeps_a_capture_that_is_not_the_group_log_prefix():
    # a message about another rank ("Rank 11: found NaN ...") keeps its own number
    assert captured_rank(3, {"rank": "11"}, "AssertionError: Rank 11: found NaN") == 11
    # ProcessGroupNCCL's prefix with a different number on a globally prefixed line
    assert captured_rank(12, {"rank": "4"}, "[Rank 4] Watchdog caught collective") == 12
    assert captured_rank(12, {"rank": "4"}, "[PG ID 1 PG GUID 2 Rank 4] Exception") == 12
    # the same number, or no global rank for the line: the capture stands
    assert captured_rank(4, {"rank": "4"}, "[Rank 4] Watchdog caught collective") == 4
    assert captured_rank(None, {"rank": "4"}, "[Rank 4] Watchdog caught collective") == 4
