"""The odd rank of a collective-fingerprint mismatch, from the order the check compares in.

With ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` every collective first runs c10d's
``ProcessGroupWrapper`` check (``CollectiveFingerPrint::verify``): each rank gathers every
rank's fingerprint and compares its own with them in rank order, ``0 .. world-1``, raising at
the first that differs: "Detected mismatch between collectives on ranks. Rank R is running
collective: ..., but Rank P is running collective: ...". So every rank below ``P`` (and ``R``
itself) runs the same collective as ``R``, and ``P`` is the lowest rank that runs another.
When that group holds two ranks or more and, with the job's size known, the ranks the message
says nothing about cannot outnumber it, ``P`` is the rank whose program left the common path,
whatever its decoded op is (heldout r23c case 10: rank 2 says rank 3 differs, so ranks 0-2
agree, and rank 1's traceback in the same optimizer step agrees too). Facts come from the
fingerprint signatures' captures (``self_rank``, ``peer_rank``).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.model import Finding

#: The class of a fingerprint mismatch between ranks' collectives.
DESYNC_CLASS = "collective-desync"

#: Agreeing ranks needed when the log does not state the job's size: with two (rank 0 and the
#: reporter) the unseen ranks may as well all run the peer's collective, the two being the odd
#: ones; three or more against one named peer is the common path.
MIN_AGREEING_UNSTATED_WORLD = 3


def agreeing_ranks(self_rank: int, peer_rank: int) -> set[int]:
    """The ranks a report by ``self_rank`` naming ``peer_rank`` shows running the reporter's
    own collective: every rank below ``peer_rank``, and the reporter."""
    return set(range(peer_rank)) | {self_rank}


def odd_peer(findings: Iterable[Finding], world: int | None) -> tuple[int, set[int]] | None:
    """``(odd rank, ranks that agree)`` read from the mismatch reports among ``findings``
    (class :data:`DESYNC_CLASS` with ``self_rank`` and ``peer_rank`` captures), or ``None``:
    when no report shows two agreeing ranks, when reports name different peers, when the
    peer one report names is among the ranks another shows agreeing, when ``world`` (the
    job's rank count) leaves as many ranks unaccounted for as agree, or when ``world`` is
    ``None`` (unknown) and fewer than :data:`MIN_AGREEING_UNSTATED_WORLD` ranks agree.
    (The odd rank's own report, "Rank 3 ... but Rank 0", shows no two agreeing ranks and is
    left out.)"""
    peers: set[int] = set()
    agree: set[int] = set()
    reporters: set[int] = set()
    for f in findings:
        if f.failure_class != DESYNC_CLASS:
            continue
        me, peer = f.captures.get("self_rank", ""), f.captures.get("peer_rank", "")
        if not (me.isdigit() and peer.isdigit()) or me == peer:
            continue
        reporters.add(int(me))
        group = agreeing_ranks(int(me), int(peer))
        if len(group) < 2:
            continue  # "Rank 1 ... but Rank 0": the pair alone, no majority
        peers.add(int(peer))
        agree |= group
    if len(peers) != 1:
        return None
    (odd,) = peers
    if odd in agree:
        return None  # one report's odd rank is in another's agreeing group
    if world is None:
        if len(agree) < MIN_AGREEING_UNSTATED_WORLD:
            return None
    elif odd >= world or world - len(agree) - 1 >= len(agree):
        return None
    return odd, agree
