"""A collective timeout where one rank waits at another call site: the ranks ran different collectives.

Mechanism: a collective timeout says only that no collective completed. When the ranks'
tracebacks stop at two call sites (the innermost user frame and the collective each waited
in: :func:`rootrank.entry.frames.call_sites`), one rank's alone and at least two others'
shared, that rank went down another branch: it issued a collective the others never reach
(an extra ``all_reduce`` in a loop over a per-rank count, a call only some ranks make) while
they waited in the next one of theirs. Nothing was slow: the collectives could never match,
so the class is ``collective-desync`` (the taxonomy keeps ``collective-timeout`` for a wait
with no deeper cause visible), and the fix is to make the sequence of collectives the same
on every rank, not a longer timeout (heldout r21b case 02: ``[rank 3] calibration: 5 cached
stat files`` against 4, rank 3 timed out in the calibration ``all_reduce`` while ranks 0-2
waited in DDP's constructor).

Needed, all of: the root is a collective's own timeout (:data:`FROM_SIGNATURES`); the initiator analysis named a
rank by the call sites (:data:`SITE_STRATEGY`), or by a line or value that rank printed
otherwise (:data:`PRINTED_STRATEGIES`) and the call sites show that same rank alone at its
own site, the other ranks with a traceback sharing one other site (at least two of them).
"""

from __future__ import annotations

from rootrank.analysis.initiator import Initiator
from rootrank.analysis.prepare import Context
from rootrank.model import Finding

#: The signature of the desync it becomes (``detector: analysis``).
SITE_SIGNATURE = "call-site-divergence"
#: The initiator strategy that compares the ranks' call sites itself.
SITE_STRATEGY = "odd_call_site"
#: Strategies that name the rank by what it printed otherwise (a count, a value); the call
#: sites must then confirm it (:func:`odd_site_rank`).
PRINTED_STRATEGIES = frozenset({"odd_line_out", "odd_printed_value"})
#: The roots it replaces: a collective's own timeout, which says no more than that the
#: collective did not complete (class collective-timeout). Not a timeout whose signature names
#: its own mechanism (a store key never written, a monitored barrier naming its rank, a DDP
#: straggler with no parameters): its fix already says why the call sites differ.
FROM_SIGNATURES = frozenset(
    {
        "gloo-collective-timeout",
        "nccl-watchdog-timeout",
        "nccl-heartbeat-monitor-timeout",
        "nccl-async-error-teardown",
        "fsdp-collective-watchdog-timeout",
        "fsdp-init-collective-watchdog-timeout",
        "npu-hccl-collective-failed",
    }
)


def odd_site_rank(ctx: Context, root: Finding) -> int | None:
    """The one rank whose call site (file, line, collective) no other rank shares, when the
    ranks' tracebacks of ``root`` stop at exactly two sites and at least two ranks share the
    other; ``None`` otherwise (one site, three or more, or no single odd rank)."""
    from rootrank.entry.frames import call_sites  # the fix's own comparison

    groups: dict[tuple[str, int, str | None], set[int]] = {}
    for s in call_sites(ctx.state, root):
        if s.rank is not None:
            groups.setdefault((s.file, s.line, s.collective), set()).add(s.rank)
    if len(groups) != 2:
        return None
    a, b = groups.values()
    if len(a) == 1 and len(b) >= 2:
        return next(iter(a))
    if len(b) == 1 and len(a) >= 2:
        return next(iter(b))
    return None


def callsite_desync_root(ctx: Context, root: Finding, initiator: Initiator) -> Finding | None:
    """A finding of :data:`SITE_SIGNATURE` in place of ``root`` (same rank, lines and
    captures) when the module's conditions hold, else ``None``."""
    if root.signature not in FROM_SIGNATURES or initiator.rank is None:
        return None
    if initiator.strategy != SITE_STRATEGY:
        if initiator.strategy not in PRINTED_STRATEGIES:
            return None
        if odd_site_rank(ctx, root) != initiator.rank:
            return None
    sig = ctx.library.signatures.get(SITE_SIGNATURE)
    if sig is None:
        return None
    return root.recast(sig)
