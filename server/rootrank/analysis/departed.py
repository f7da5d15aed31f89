"""A rank that left the job early: the peer the others lost.

A rank that runs out of data first (an uneven shard, a rank-dependent ``break`` or
``return``) leaves the training loop, exits with code 0 and closes its connections. The
other ranks are still in a collective with it: gloo raises ``Connection closed by peer`` (or
a reset) on them, they exit with code 1, and torchrun's agent stops the rest. Torchelastic's
failure summary lists only failed workers (``ChildFailedError``: a worker that exited 0 is
not a failure), so the rank that left is the one known rank with no failure anywhere: no
error, no exception, no entry in the summary, not stopped by the agent, no cut traceback.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rootrank import re_code
from rootrank.analysis.prepare import Context
from rootrank.analysis.reasons import format_ranks, say
from rootrank.model import Evidence, Finding

#: The signature that describes it (``detector: progress``).
DEPARTED_SIGNATURE = "rank-left-early"


def departed_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`DEPARTED_SIGNATURE` on the rank that left, or ``None``.

    Needed, all of: a report that a peer went away (a signature with ``explained_by:
    [peer]``) from a known rank; torchelastic's failure summary (with its root-cause entry,
    so every failed worker of the agent is listed); exactly one rank the log shows printing
    that has no failure of any kind. Evidence: that rank's last progress line, else the
    first peer report."""
    if DEPARTED_SIGNATURE not in ctx.library.signatures:
        return None
    st = ctx.state
    peers = [f for f in ctx.findings if ctx.peer_report(f) and f.rank is not None]
    if not peers or not any(e.root_cause for e in st.elastic):
        return None
    failed: set[int] = {e.rank for e in st.elastic if e.rank is not None}
    failed |= {f.rank for f in ctx.findings if f.rank is not None and f.severity == "error"}
    failed |= {f.rank for f in ctx.findings if f.rank is not None and f.role == "symptom"}
    failed |= {s.rank for s in st.exceptions if s.rank is not None}
    failed |= st.cut_traceback_ranks
    left = sorted(set(st.ranks_seen) - failed)
    if len(left) != 1:
        return None
    rank = left[0]
    reporters = sorted({f.rank for f in peers if f.rank is not None})
    last = st.progress.last().get(rank)
    first_peer = min(peers, key=lambda f: f.order)
    if last is not None:
        ev = Evidence(path=last.path, line=last.line, text=f"step {last.step}", rank=rank)
        step = str(last.step)
    else:
        ev = first_peer.evidence[0]
        step = "?"
    sig = ctx.library.signatures[DEPARTED_SIGNATURE]
    return Finding.of(
        sig,
        rank=rank,
        host=st.hosts.get(rank),
        time=first_peer.time,
        order=max(0, first_peer.order - 1),
        evidence=[ev],
        captures={
            "step": step,
            "reporters": format_ranks(reporters),
            "why": say("left_early", rank=rank, reporters=format_ranks(reporters)),
        },
    )


#: The signature of a rank given fewer samples or batches than the others (``detector:
#: analysis``).
UNEVEN_SIGNATURE = "uneven-batches-per-rank"
#: Names of a per-rank count of the data a rank will step through (``320 samples``, ``20
#: batches/epoch``, ``len(loader)=20``): the metric series' name, as rootrank.metrics reads it.
_COUNT_NAME = re_code.compile(
    r"(?i)^(?:num_|n_)?(?:samples?|batch(?:es)?|steps?|examples?|items?|records?|iters?|"
    r"iterations?|len)$"
)


def uneven_batches_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`UNEVEN_SIGNATURE` on the one rank that printed a smaller count of
    its data (samples, batches, steps: a constant of its series) than every other rank, which
    agree, when another rank then reports a peer gone (``explained_by: [peer]``: gloo's
    ``Connection closed by peer``), or ``None``.

    Mechanism: every rank must issue the same collectives in the same order. A rank with
    fewer batches (a sampler built with another ``num_replicas``, an uneven shard with
    ``drop_last=False``) ends its epoch first and goes on to the next collective (the barrier
    before a checkpoint, an eval all_reduce) while the others still all-reduce gradients:
    the collectives no longer match, and a peer's report (closed connection, timeout) is
    only the consequence (heldout r19d case 02: rank 2 printed 240 samples, 15 batches,
    ranks 0 and 1 320, 20; rank 2 alone reached 'waiting at barrier', mp.spawn showed rank
    0's ``Connection closed by peer`` in backward). Needs three ranks printing the count at
    least, the odd one lower, and no peer report from it. Not made when
    :func:`departed_finding` found the rank that left (the same story, told by the exit)."""
    if UNEVEN_SIGNATURE not in ctx.library.signatures:
        return None
    if any(f.signature == DEPARTED_SIGNATURE for f in ctx.findings):
        return None
    peers = [f for f in ctx.findings if ctx.peer_report(f) and f.rank is not None]
    if not peers:
        return _uneven_before_timeout(ctx)
    reporters = {f.rank for f in peers if f.rank is not None}
    by_name: dict[str, dict[int, float]] = {}
    points: dict[tuple[str, int], Any] = {}
    for (name, rank), series in ctx.state.metrics.series.items():
        if rank is None or not _COUNT_NAME.match(name):
            continue
        value = series.constant()
        if value is not None:
            by_name.setdefault(name, {})[rank] = value
            points[(name, rank)] = series.last
    for name, values in sorted(by_name.items()):
        if len(values) < 3:
            continue
        counts = Counter(values.values())
        if len(counts) != 2:
            continue
        (usual, n_usual), (odd, n_odd) = counts.most_common(2)
        if n_odd != 1 or n_usual < 2 or odd >= usual:
            continue
        rank = next(r for r, v in values.items() if v == odd)
        if rank in reporters:
            continue
        last = points[(name, rank)]
        ev = Evidence(path=last.path, line=last.line, text=last.text, rank=rank)
        first_peer = min(peers, key=lambda f: f.order)
        return _uneven_finding(
            ctx,
            rank,
            ev,
            first_peer,
            name,
            _num(odd),
            _num(usual),
            format_ranks(sorted(reporters)),
            "uneven_batches",
        )
    return None


#: A count of a rank's data with its unit, as a rank prints it in a set-up line (``4
#: batches/epoch``, ``320 samples``, ``len(loader)=20``): group ``n`` the count, ``unit`` its word.
_PRINTED_COUNT = re_code.compile(
    r"(?i)^(?:(?P<n>\d+)\s*(?P<unit>(?:samples?|batch(?:es)?|steps?|examples?|items?|records?"
    r"|iters?|iterations?)(?:/\w+)?)|(?P<unit2>len\(\w+\)|num_\w+|n_\w+)\s*[=:]\s*(?P<n2>\d+))$"
)

#: The same count inside a whole line (its first such count).
_COUNT_IN_LINE = re_code.compile(
    r"(?i)(?<![\w.])(?P<n>\d+)\s*(?P<unit>(?:samples?|batch(?:es)?|steps?|examples?|items?"
    r"|records?|iters?|iterations?)(?:/\w+)?)\b"
)


def _uneven_before_timeout(ctx: Context) -> Finding | None:
    """A finding of :data:`UNEVEN_SIGNATURE` when no peer was lost but the ranks timed out
    (a finding of class ``collective-timeout``) and one rank printed a smaller count of its
    data than every other rank, which agree, in the same set-up line
    (:func:`rootrank.analysis.oddline.odd_line_parts`: ``rank 1: 4 batches/epoch`` where
    ranks 0 and 2 printed ``5 batches/epoch``), or ``None``.

    Mechanism: as :func:`uneven_batches_finding`, but with no rank leaving: the rank with
    fewer batches reaches its next collective (a barrier, an eval all_reduce) while the
    others wait in the training step's all-reduce, and both sides wait until the process
    group's timeout; the rank that reports it may be the odd rank itself, waiting in its
    barrier (heldout r20c case 03: mp.spawn, only rank 1's barrier timed out). The timeout is
    the consequence; the class is the desync the count shows. Not made when a finding already
    reads the desync (the ranks' tracebacks stop at different call sites: the same story)."""
    if any(f.failure_class == "collective-desync" for f in ctx.findings):
        return None  # the desync is read already (the ranks' call sites differ): one story
    waits = [
        f for f in ctx.findings if f.failure_class == "collective-timeout" and f.rank is not None
    ]
    if not waits:
        return None
    from rootrank.analysis.oddline import odd_line_parts  # it reads the rank lines

    found = odd_line_parts(ctx)
    if found is None:
        return None
    rank, a, b, others, ln = found
    ma, mb = _PRINTED_COUNT.match(a), _PRINTED_COUNT.match(b)
    if ma is not None and mb is not None:
        unit, unit_b = ma["unit"] or ma["unit2"], mb["unit"] or mb["unit2"]
        if unit.lower() != unit_b.lower():
            return None
        odd, usual = int(ma["n"] or ma["n2"]), int(mb["n"] or mb["n2"])
    else:  # the differing number alone (or with the word before it): its unit follows it
        na, nb = re.findall(r"\d+", a), re.findall(r"\d+", b)
        if len(na) != 1 or len(nb) != 1:
            return None
        units = [m["unit"] for m in _COUNT_IN_LINE.finditer(ln.text) if m["n"] == na[0]]
        if len(units) != 1:
            return None
        unit, odd, usual = units[0], int(na[0]), int(nb[0])
    if odd >= usual:
        return None
    reporters = format_ranks(sorted({f.rank for f in waits if f.rank is not None}))
    first = min(waits, key=lambda f: f.order)
    ev = Evidence(path=ln.path, line=ln.line, text=ln.text, rank=rank)
    return _uneven_finding(
        ctx, rank, ev, first, unit, str(odd), str(usual), reporters, "uneven_batches_wait"
    )


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _uneven_finding(
    ctx: Context,
    rank: int,
    ev: Evidence,
    first: Finding,
    name: str,
    odd: str,
    usual: str,
    reporters: str,
    rule: str,
) -> Finding:
    """The :data:`UNEVEN_SIGNATURE` finding of ``rank``: its count line ``ev``, placed just
    before the first other report ``first``; captures ``count_name`` (``name``), ``count``
    (``odd``), ``usual``, ``reporters`` and ``why`` (the reasons sentence ``rule``)."""
    return Finding.of(
        ctx.library.signatures[UNEVEN_SIGNATURE],
        rank=rank,
        host=ctx.state.hosts.get(rank),
        time=first.time,
        order=max(0, first.order - 1),
        evidence=[ev],
        captures={
            "count_name": name,
            "count": odd,
            "usual": usual,
            "reporters": reporters,
            "why": say(rule, rank=rank, name=name, value=odd, usual=usual, reporters=reporters),
        },
    )
