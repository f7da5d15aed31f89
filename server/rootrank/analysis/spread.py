"""When a comparison of ranks' counters or times orders nothing.

Two checks the initiating-rank strategies ask before naming a rank:

- :func:`seqnum_spread`: the SeqNums every watchdog report of the log gives (all
  signatures, not only the root's) are spread over many values, or one host's ranks hold
  the "majority" value alone. One rank lagging behind matched blocking collectives leaves
  the others at one SeqNum; several values (ranks far *ahead* of a peer in a collective
  that needs it) mean completion was local on some ranks (a broadcast's root, intra-node
  traffic) while the traffic between nodes stalled: a transport signature, not a rank.
- :func:`same_second`: two ranks' reports whose times are only known to the second (the
  stamp before a traceback has no fraction) and fall in the same second are a tie, not an
  order.
"""

from __future__ import annotations

from rootrank.analysis.reasons import format_ranks, say
from rootrank.model import Finding
from rootrank.ranks import parse_time

#: Distinct SeqNums among the reporting ranks from which the values are a spread, not one
#: rank against a majority (one odd value and the majority's make two).
SPREAD_VALUES = 3


def _lowest_seqnums(findings: list[Finding]) -> dict[int, int]:
    """Each rank's lowest ``seqnum`` capture (int) over ``findings``; ranks without one are
    left out."""
    out: dict[int, int] = {}
    for f in findings:
        value = f.captures.get("seqnum", "")
        if f.rank is None or not value.isdigit():
            continue
        out[f.rank] = min(out.get(f.rank, int(value)), int(value))
    return out


def seqnum_spread(findings: list[Finding], rank: int) -> str | None:
    """Why the lone SeqNum of ``rank`` names no initiator, or ``None`` when it may.

    ``findings`` are every finding of the log (the watchdog reports of every signature).
    A reason when the ranks' lowest SeqNums take :data:`SPREAD_VALUES` or more values, or
    when the ranks at the most common value are exactly the ranks of one host (host names
    from the findings' ``host``) and none of another: a node against a node."""
    seqnums = _lowest_seqnums(findings)
    if rank not in seqnums or len(seqnums) < 3:
        return None
    values = sorted(set(seqnums.values()))
    if len(values) >= SPREAD_VALUES:
        return say(
            "seqnum_spread",
            rank=rank,
            n=len(values),
            values=", ".join(map(str, values)),
        )
    hosts: dict[int, str] = {f.rank: f.host for f in findings if f.rank is not None and f.host}
    counts = {v: [r for r, s in seqnums.items() if s == v] for v in values}
    majority = max(counts.values(), key=len)
    majority_hosts = {hosts.get(r) for r in majority}
    if len(majority_hosts) != 1 or None in majority_hosts:
        return None
    host = next(iter(majority_hosts))
    on_host = {r for r, h in hosts.items() if h == host and r in seqnums}
    if on_host != set(majority) or len(set(hosts.values())) < 2:
        return None
    return say("seqnum_by_host", rank=rank, host=host, ranks=format_ranks(majority))


def own_stamp(finding: Finding, line: int) -> bool:
    """Whether ``finding``'s line ``line`` has a time of its own. A Python exception line
    (the finding kept its traceback's ``frames``) prints none, unless the evidence text
    itself starts with a timestamp (:func:`~rootrank.ranks.parse_time`: a logger that
    stamps the exception); every other line is taken as stamped (its evidence text has the
    log's header cut off, so the text alone cannot tell)."""
    if not finding.frames:
        return True
    texts = [e.text for e in finding.evidence if e.line == line] or [
        e.text for e in finding.evidence[:1]
    ]
    return any(parse_time(t) is not None for t in texts)


def same_second(first: float, other: float, first_own: bool, other_own: bool) -> bool:
    """Whether two report times (s, :func:`~rootrank.ranks.parse_time`'s clock) are a tie at
    the log's resolution: both lines lack a timestamp of their own (their times are the
    latest stamp printed before them, a lower bound: a traceback prints none) and they fall
    in the same whole second."""
    if first_own or other_own:
        return False
    return int(first) == int(other)
