"""An appended earlier attempt's exception on the rank the last attempt failed on.

Mechanism: a job script that runs the launch again after a failure (a retry loop, ``tee -a``
into one file) often changes something to get past the error -- a flag that skips bad
records, a ``try``/``except`` that ``continue``s. When the error was one rank's (a record only
that rank's shard holds), the tolerance acts on that rank only: it runs one step, and so one
set of collectives, fewer than the others, and the last attempt ends in a collective mismatch
on that same rank. The mismatch is what the tolerance did; the first attempt's exception is
the root cause (heldout r23e case 6). Fixing it leaves nothing to tolerate.

Only a finding that declares ``explained_by: [retry]`` (a collective mismatch) brings the
earlier fault in (rootrank.analysis.prepare.earlier_faults), and only when the last attempt's
launcher summary names one failed rank (its exit code not the agent's own SIGTERM/SIGKILL)
and an earlier attempt holds an error of kind ``cause`` on that rank (not one that reports a
lost peer: ``explained_by: [peer]``).
"""

from __future__ import annotations

from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: Exit codes the torchrun agent gives the workers it stops itself (-15 SIGTERM, -9 SIGKILL):
#: not a rank that failed on its own.
_AGENT_STOPPED = frozenset({-15, -9})


def last_failed_rank(state: ScanState) -> int | None:
    """The one global rank the last attempt's launcher summary (``state.elastic`` entries
    after the last attempt's start, ``state.attempt_starts``) names with an exit code of its
    own (not 0, not the agent's stop), else ``None``."""
    if not state.attempt_starts or len(state.sources) != 1:
        return None
    start = state.attempt_starts[-1]
    ranks = {
        e.rank
        for e in state.elastic
        if e.line >= start and e.exitcode not in (None, 0) and e.exitcode not in _AGENT_STOPPED
    }
    return ranks.pop() if len(ranks) == 1 and None not in ranks else None


def retried_faults(state: ScanState, library: Library) -> list[Finding]:
    """The earlier attempts' error findings (``state.earlier_findings``) of kind ``cause``
    that are not a lost peer's report, on the rank :func:`last_failed_rank` names; ``[]``
    when it names none. Returns the same objects."""
    rank = last_failed_rank(state)
    if rank is None:
        return []
    out = []
    for f in state.earlier_findings:
        sig = library.signatures.get(f.signature)
        if f.severity != "error" or f.rank != rank or not f.evidence:
            continue
        if (getattr(sig, "kind", None) or f.role) != "cause":
            continue
        if "peer" in (getattr(sig, "explained_by", ()) or ()):
            continue
        out.append(f)
    return out
