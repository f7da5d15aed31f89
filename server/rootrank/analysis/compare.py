"""Comparing what ranks report: the odd one out among their captures.

Used by inferred signatures (``inferred.from``/``differs`` in the YAML) and by the
``odd_value_out`` initiating-rank strategy.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rootrank import lazy_regex
from rootrank.analysis.reasons import say
from rootrank.model import Finding

#: Captures compared across ranks, most telling first.
COMPARE_KEYS = ("optype", "shape", "numel", "dtype", "seqnum", "collective")
#: Collectives whose root (or sender) completes before its peers (ProcessGroupNCCL's OpType
#: names): a peer past one of them proves nothing about the other ranks.
ROOTED_OPS = frozenset(
    {"BROADCAST", "REDUCE", "SCATTER", "GATHER", "SEND", "RECV", "RECVANYSOURCE"}
)
#: A rank this many collectives behind the others is lagging; further apart, the SeqNums
#: come from different process groups (old watchdog messages do not name the group).
MAX_SEQNUM_LAG = 8
#: Elements of a collective's payload above which no member can have completed it while
#: another member still waits inside it: NCCL's default staging buffer per connection
#: (``NCCL_BUFFSIZE``, 4 MiB) holds fewer bytes even at one byte per element, so a sender
#: finishes only as its peers drain that buffer. A smaller payload (a flag, a metric, a
#: small broadcast from its root) may be written whole into the buffers and completed on
#: the sender before a receiver reaches the call.
BUFFERED_NUMEL = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class OddOne:
    """The result of a comparison: ``rank`` (or ``None``), the reason, and ``undecided``
    when ranks differ but nothing tells which one diverged (two ranks, no SeqNum)."""

    rank: int | None
    why: str
    undecided: bool = False
    key: str = ""


def values_by_rank(group: list[Finding], key: str) -> dict[int, str]:
    """Each rank's ``key`` capture in ``group``; a peer's own report wins over what another
    rank said of it (``peer_rank`` with ``peer_<key>``, as TORCH_DISTRIBUTED_DEBUG=DETAIL's
    fingerprint reports do)."""
    values = {f.rank: f.captures[key] for f in group if f.rank is not None and f.captures.get(key)}
    for f in group:
        peer, value = f.captures.get("peer_rank"), f.captures.get(f"peer_{key}")
        if peer is not None and value and peer.isdigit() and int(peer) not in values:
            values[int(peer)] = value
    return values


def odd_one_out(
    group: list[Finding], keys: tuple[str, ...] = COMPARE_KEYS, world: frozenset[int] = frozenset()
) -> OddOne:
    """The rank whose capture differs from the others' in ``group``.

    With three or more ranks, the single rank in the minority; between two, the one that
    is behind (a lower SeqNum within :data:`MAX_SEQNUM_LAG`, or a BARRIER against a
    training collective). Returns ``OddOne(None, "")`` when all agree or nothing differs.

    ``world`` (int ranks, may be empty) is every rank the log shows exists. Two reporters of
    a larger world (ranks ``0..max`` beyond the two) are not a majority: a one-step SeqNum lag
    between them is left undecided, since the ranks that did not report may be at either
    value (and in a BROADCAST the root completes before its receivers).
    """
    seqnums = _int_values(values_by_rank(group, "seqnum"))
    if "seqnum" in keys and keys[0] != "seqnum" and len(set(seqnums.values())) > 1:
        # ranks at different SeqNums wait in different collectives, so their OpType, shape
        # or Numel differ because of the offset (a gradient all-reduce against the next
        # step's 1-element sync), not as a divergence: the SeqNum order decides first, and
        # the content keys only when it does not. Only a rank behind every other one is
        # taken here (a rank ahead completed what the others wait in: the content keys'
        # ahead-in-sequence reading decides it)
        by_order = odd_one_out(group, ("seqnum",), world)
        low = min(seqnums.values())
        diverged = _diverged(group, by_order.rank, seqnums)
        if diverged is not None:
            return diverged
        if (
            by_order.rank is not None
            and seqnums.get(by_order.rank) == low
            and list(seqnums.values()).count(low) == 1
        ):
            return by_order
    for key in keys:
        values = values_by_rank(group, key)
        if len(values) < 2 or len(set(values.values())) < 2:
            continue
        counts = Counter(values.values())
        if len(values) >= 3:
            least = min(counts.values())
            minority = [r for r, v in values.items() if counts[v] == least]
            if len(minority) == 1 and least < max(counts.values()):
                r = minority[0]
                majority = counts.most_common(1)[0][0]
                ahead = _ahead_of_all(r, values, seqnums) if key != "seqnum" else None
                stuck = _unbuffered_payload(group, r) if ahead is not None else None
                if ahead is not None and stuck is not None:
                    why = say(
                        "ahead_of_unbuffered",
                        rank=r,
                        value=values[r],
                        majority=majority,
                        numel=stuck,
                        **ahead,
                    )
                    return OddOne(r, why, key=key)
                if ahead is not None:
                    why = say("ahead_in_sequence", rank=r, value=values[r], key=key, **ahead)
                    return OddOne(None, why, True, key)
                kind = {"collective": "odd_collective", "optype": "odd_optype"}.get(
                    key, "odd_capture"
                )
                return OddOne(
                    r, say(kind, rank=r, value=values[r], majority=majority, key=key), key=key
                )
        if key == "seqnum":
            try:
                numeric = {r: int(v) for r, v in values.items()}
            except ValueError:
                continue
            low = min(numeric.values())
            behind = [r for r, v in numeric.items() if v == low]
            whole = set(range(max(world | set(numeric)) + 1)) <= set(numeric)
            if (
                len(behind) == 1
                and max(numeric.values()) - low <= MAX_SEQNUM_LAG
                and (len(numeric) >= 3 or whole)
            ):
                r = behind[0]
                return OddOne(
                    r, say("seqnum_behind", rank=r, low=low, high=max(numeric.values())), key=key
                )
        if key in ("optype", "collective") and len(values) == 2:
            barrier = [
                r for r, v in values.items() if v.upper() in ("BARRIER", "MONITORED_BARRIER")
            ]
            if len(barrier) == 1:
                r = barrier[0]
                other = next(v for rr, v in values.items() if rr != r)
                return OddOne(
                    r, say("barrier_early", rank=r, value=values[r], other=other), key=key
                )
        if len(values) == 2:
            a, b = sorted(values)
            return OddOne(
                None, say("two_disagree", a=a, b=b, key=key, va=values[a], vb=values[b]), True, key
            )
    return OddOne(None, "")


def _diverged(group: list[Finding], behind: int | None, seqnums: dict[int, int]) -> OddOne | None:
    """An undecided :class:`OddOne` when the rank ``behind`` the others (by SeqNum) waits in
    a symmetric collective (all-reduce, all-gather, reduce-scatter) and every other reporter
    waits in another operation (an ALLREDUCE against BROADCASTs). A symmetric collective
    completes on a rank only once every member issued it, so the ranks past that SeqNum did
    not run the same call under it: the streams diverged, and the SeqNum order does not say
    which rank branched. A lower SeqNum names a straggler only when the ranks wait in the
    same operation, or when the behind rank's is rooted (:data:`ROOTED_OPS`: a broadcast's
    root completes before its receivers). Only between exactly two reporters: with three or
    more, the ranks that agree (same SeqNum, same op) are the common stream and the lone rank
    behind them is named as before. ``None`` when the ops agree or are unknown."""
    ops = {r: v.upper().lstrip("_") for r, v in values_by_rank(group, "optype").items()}
    if behind is None or behind not in ops or len(ops) != 2 or ops[behind] in ROOTED_OPS:
        return None
    low = min(seqnums.values())
    if seqnums.get(behind) != low or list(seqnums.values()).count(low) != 1:
        return None  # not the one rank behind every other (a rank ahead is no straggler)
    others = {r: v for r, v in ops.items() if r != behind}
    if ops[behind] in others.values():
        return None
    ahead = sorted(others)
    why = say(
        "streams_diverged",
        rank=behind,
        op=ops[behind],
        low=seqnums.get(behind, "?"),
        others=", ".join(map(str, ahead)),
        other_op="/".join(sorted(set(others.values()))),
        high=max((seqnums[r] for r in ahead if r in seqnums), default="?"),
    )
    return OddOne(None, why, True, "optype")


def _unbuffered_payload(group: list[Finding], rank: int) -> int | None:
    """The element count (NumelIn) every rank of ``group`` other than ``rank`` reports for
    the collective it waits in, when they all report one and the same count of at least
    :data:`BUFFERED_NUMEL` elements; else ``None``.

    Mechanism: a rank whose oldest open work is past the others' completed the collective
    they wait in only if it could finish without them: its part fits the transport's
    buffers (a small broadcast from its root). A payload larger than the buffers completes
    on no member while another member is still inside it, so a rank past it, running
    another operation, did not run that collective: it issued a different sequence (it
    diverged; :func:`odd_one_out`)."""
    counts = {f.captures.get("numel", "") for f in group if f.rank is not None and f.rank != rank}
    if len(counts) != 1:
        return None
    raw = next(iter(counts))
    if not raw.isdigit() or int(raw) < BUFFERED_NUMEL:
        return None
    return int(raw)


def _int_values(values: dict[int, str]) -> dict[int, int]:
    """``values`` whose every value is an integer, as ints; empty when any is not."""
    try:
        return {r: int(v) for r, v in values.items()}
    except ValueError:
        return {}


def _ahead_of_all(
    rank: int, values: dict[int, str], seqnums: dict[int, int]
) -> dict[str, int] | None:
    """``{"ahead": S, "high": H}`` when ``rank``'s SeqNum ``S`` is above the SeqNum of every
    other rank in ``values`` (their highest is ``H``), else ``None``.

    Mechanism: a watchdog reports the oldest work a rank has not completed. A rank whose
    oldest open work is a later SeqNum than the others' completed the collective they still
    wait in (it took part in it) and went on to the next one; that next collective may be of
    another type or size, which is progress, not a divergence. Such a rank is the one
    reporter shown *not* to be stuck, so a different ``OpType``/size on it names no one.
    ``None`` also when any of these ranks has no SeqNum (older watchdogs print none).
    """
    if rank not in seqnums or any(r not in seqnums for r in values):
        return None
    others = [seqnums[r] for r in values if r != rank]
    if not others or seqnums[rank] <= max(others):
        return None
    return {"ahead": seqnums[rank], "high": max(others)}


def rank_ahead(group: list[Finding], rank: int) -> bool:
    """Whether ``rank``'s SeqNum in ``group`` is above every other reporting rank's (all of
    them print one): it completed the collective the others still wait in
    (:func:`_ahead_of_all`)."""
    seqnums = _int_values(values_by_rank(group, "seqnum"))
    reporters = {f.rank: "" for f in group if f.rank is not None}
    return _ahead_of_all(rank, reporters, seqnums) is not None


def split_groups(group: list[Finding], key: str) -> dict[str, list[int]]:
    """Ranks by their ``key`` capture: ``{"15170": [6, 7], "15173": [0, 1, 2, 3]}``."""
    out: dict[str, list[int]] = {}
    for rank, value in sorted(values_by_rank(group, key).items()):
        out.setdefault(value, []).append(rank)
    return out


def lacking_keys(group: list[Finding], key: str = "keys") -> OddOne:
    """The rank whose list of names (the comma-separated ``key`` capture: the loss keys each
    rank prints, mmdet's ``rank 1 len(log_vars): 3 keys: a,b,c``) lacks names that every
    other rank has, while the others all agree: a head, stage or term that produced nothing
    on that rank only. Two ranks suffice (a strict subset says which side lost entries);
    a list that differs otherwise (names of its own, or no single odd rank) tells nothing.
    Returns ``OddOne(None, "")`` when no rank stands out."""
    sets = {
        r: frozenset(x for x in v.split(",") if x) for r, v in values_by_rank(group, key).items()
    }
    if len(sets) < 2 or len(set(sets.values())) != 2:
        return OddOne(None, "")
    counts = Counter(sets.values())
    (common, n_common), (odd, n_odd) = counts.most_common(2)
    if n_odd == n_common:  # two ranks: the smaller set is the odd one when it is a subset
        common, odd = (common, odd) if len(common) > len(odd) else (odd, common)
    elif n_odd != 1:
        return OddOne(None, "")
    if not odd < common:
        return OddOne(None, "")
    rank = next(r for r, s in sets.items() if s == odd)
    missing = ", ".join(sorted(common - odd))
    why = say("lacking_keys", rank=rank, n=len(odd), m=len(common), missing=missing)
    return OddOne(rank, why, key=key)


def lone_submitter(ready_sets: list[frozenset[int]]) -> int | None:
    """The rank alone in its own collective in a stall report of per-op ready sets
    (Horovod's ``op [ready ranks: ...]``): when the ops' ready sets are pairwise disjoint
    (the ranks wait in *different* collectives) and exactly one rank stands alone — ready
    for an op no other rank submitted and missing from every other op — that rank left the
    common sequence. ``None`` when the sets overlap or no single rank stands alone."""
    distinct = list(dict.fromkeys(s for s in ready_sets if s))
    if len(distinct) < 2:
        return None
    for i, a in enumerate(distinct):
        for b in distinct[i + 1 :]:
            if a & b:
                return None
    lone = [next(iter(s)) for s in distinct if len(s) == 1]
    others = [s for s in distinct if len(s) > 1]
    if len(lone) == 1 and others:
        return lone[0]
    return None


#: A per-rank table as Python prints a dict keyed by rank: ``{0: -1.19, 1: -1.19, 3: -2.6}``
#: (int keys, scalar values: no nested braces, brackets or commas inside a value).
_RANK_TABLE = lazy_regex.compile(
    r"\{\s*(\d+\s*:\s*[^,{}\[\]\n]+(?:,\s*\d+\s*:\s*[^,{}\[\]\n]+)+)\s*\}"
)


#: A per-rank list after the words that make its index a rank (``differ across ranks:
#: checksums [4.66, 4.40, 4.40, 4.40]``, ``per rank: [..]``): numbers only, 3 to 64 of them.
_RANK_LIST = lazy_regex.compile(
    r"\b(?:across|per) ranks?\b[^\[\]\n]{0,80}\[(\s*-?[\d.eE+-]+(?:\s*,\s*-?[\d.eE+-]+){2,63})\s*\]"
)


def odd_in_table(text: str) -> tuple[int, str, str] | None:
    """``(rank, its value, the others' value)`` for the one rank whose entry differs in a
    per-rank table printed in ``text`` (a line that also says ``rank``), else ``None``.

    Mechanism: a script's own cross-rank check (all_gather a checksum, a count, a size,
    then raise when they differ) prints every rank's value and raises on the rank that
    checks (often rank 0 only). The raiser is the detector; the rank whose value stands
    alone in the table is the one that diverged. Needs at least three entries, one value
    held by a single rank and another by all the rest (two ranks, or a split, name no one).
    The table is a dict keyed by rank, or a list after ``across ranks`` / ``per rank``
    (``dist.all_gather_object`` fills its list in rank order: heldout r19d case 09,
    ``checksums [4.66, 4.40, 4.40, 4.40]`` names rank 0).
    """
    if "rank" not in text.lower():
        return None
    tables: list[dict[int, str]] = []
    for m in _RANK_TABLE.finditer(text):
        entries: dict[int, str] = {}
        for item in m.group(1).split(","):
            key, _, value = item.partition(":")
            entries[int(key.strip())] = value.strip()
        tables.append(entries)
    for m in _RANK_LIST.finditer(text):  # a list gathered in rank order: its index is the rank
        tables.append(dict(enumerate(v.strip() for v in m.group(1).split(","))))
    for entries in tables:
        if len(entries) < 3:
            continue
        counts = Counter(entries.values())
        if len(counts) != 2:
            continue
        (majority, _n), (odd, n_odd) = counts.most_common(2)
        if n_odd != 1:
            continue
        rank = next(r for r, v in entries.items() if v == odd)
        return rank, odd, majority
    return None
