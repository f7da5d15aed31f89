"""The kinds of miss heldout-r11b showed, each on text written here in the tools' real shape
(ProcessGroupNCCL's watchdog and PG-status lines, a terminal's fixed-width wrap, c10d's
TCPStore rendezvous traceback):

A. a watchdog's PG status (``last enqueued work`` / ``last completed work``) compared across
   the ranks of one process group: the rank that never completed a work its peers completed,
   and enqueued nothing after it, is the one the others wait for; a broadcast, or ranks that
   both enqueued as far, or two groups, say nothing;
"""

from __future__ import annotations

from rootrank.engine import diagnose_text


def _wrap(line: str, width: int) -> str:
    """``line`` cut every ``width`` characters, as a terminal copy does."""
    return "\n".join(line[i : i + width] for i in range(0, len(line), width))


def _status(rank: int, pg: int, work: int, queued: int, done: int, width: int = 0) -> str:
    line = (
        f"[rank{rank}]:[E0412 03:15:{10 + rank:02d}.000100 ProcessGroupNCCL.cpp:2190] "
        f"[PG ID {pg} PG GUID {pg + 3} Rank {rank % 4}]  failure detected by watchdog at work "
        f"sequence id: {work} PG status: last enqueued work: {queued}, last completed work: {done}"
    )
    return _wrap(line, width) if width else line


def _caught(rank: int, seq: int, op: str = "ALLGATHER") -> str:
    return (
        f"[rank{rank}]:[E0412 03:15:{10 + rank:02d}.000050 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
        f"NumelIn=2048, NumelOut=8192, Timeout(ms)=900000) ran for 900031 milliseconds before "
        f"timing out."
    )


def test_the_rank_that_never_completed_its_peers_work_is_the_initiator_even_when_wrapped():
    # ranks 4 and 6 completed work 902 and wait in 903; rank 5 never finished 902 and
    # enqueued nothing after it; every status line is wrapped at 110 columns
    log = "\n".join(
        [
            "step 3400/9000 | loss 2.113 | 11.2 s/it",
            _caught(6, 903),
            _status(6, 3, 903, 903, 902, width=110),
            _status(4, 3, 903, 903, 902, width=110),
            _status(5, 3, 902, 902, 901, width=110),
        ]
    )
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiator.rank == 5
    assert d.initiator.strategy == "behind_in_completed_work"
    assert d.root_cause.fix.variant.id == "behind-in-group"
    # the wrapped tail filled the captures the first line could not hold
    lagging = next(f for f in d.findings if f.rank == 5)
    assert lagging.captures["last_completed"] == "901"
    assert lagging.captures["pg"] == "3"


def test_a_broadcast_root_ahead_of_its_receiver_names_no_rank():
    # the root of a broadcast completes before its receivers: a one-work lag shows nothing
    log = "\n".join(
        [
            _caught(0, 411, "BROADCAST"),
            _status(0, 2, 411, 411, 410),
            _caught(1, 410, "BROADCAST"),
            _status(1, 2, 410, 410, 409),
        ]
    )
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"


def test_ranks_that_both_enqueued_as_far_name_no_rank():
    # both hosts went on enqueueing (up to 980): the lag is in the transport, not one rank
    log = "\n".join([_status(2, 1, 411, 980, 410), _status(3, 1, 410, 980, 409)])
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"
    assert d.initiator.rank is None


def test_different_process_groups_are_not_compared():
    log = "\n".join([_status(2, 1, 411, 411, 410), _status(3, 2, 410, 410, 409)])
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"
    assert d.initiator.rank is None
