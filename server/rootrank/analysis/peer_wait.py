"""A timeout raised while a rank waited for data its peers send.

Communication libraries that move data between ranks outside the collectives of the process
group (DeepEP and its ports for expert-parallel all-to-all, over NVSHMEM) poll counters the
peers fill and raise when their own timeout fires: DeepEP's host side raises ``DeepEP
error: timeout (dispatch CPU)`` after printing its receive counters. A signature marks such a
wait with the capture :data:`AWAITED_CAPTURE` (what the rank waited for). The process that
raises is only the first whose timeout fired: every rank in the same call waits alike
(heldout r24d: the counters of all eight ranks of a node still at -1, the spawn launcher
naming the first process that exited), so the report names no rank unless another rank
shows a fault of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rootrank.analysis.initiator import Case

#: The capture a signature gives what the rank waited for from its peers when it timed out.
AWAITED_CAPTURE = "awaited"


def awaited_from_peers(case: Case) -> str | None:
    """What the root waited for from its peers when it timed out (its ``awaited`` capture,
    e.g. ``timeout (dispatch CPU)``), or ``None`` when the root is no such wait."""
    value = case.root.captures.get(AWAITED_CAPTURE, "").strip()
    return value or None


def own_fault_elsewhere(case: Case, rank: int) -> bool:
    """Whether a rank other than ``rank`` shows a failure of its own in the log: a cause or
    hardware finding that is no report about a peer (:meth:`Context.peer_report`). A timeout
    while waiting is then that rank's collateral, and other strategies may name it."""
    ctx = case.ctx
    for f in ctx.findings:
        if f is case.root or f.rank is None or f.rank == rank:
            continue
        if f.signature == case.root.signature:
            continue  # the same wait on another rank: no fault of its own
        if ctx.kind(f) in ("cause", "hardware") and not ctx.peer_report(f):
            return True
    return False
