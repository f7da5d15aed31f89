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
