"""A hang every rank reports alike, over NCCL's network plugin, is the transport's.

When the root is a collective timeout (class ``collective-timeout``: the generic hang) and
no initiating rank was found (no rank failed or fell behind first), every rank was a victim
of a transfer that never completed. If NCCL's start-up lines show the inter-node traffic
going through a network plugin (the ``net-plugin`` stack of :mod:`rootrank.frameworks`:
aws-ofi-nccl over libfabric, another plugin NCCL loaded), that transfer was the plugin's:
the root is read as :data:`NET_PLUGIN_SIGNATURE` (class ``network-fabric-error``), whose
fix names the plugin's settings. A job on NCCL's own NET/IB or NET/Socket keeps the
generic hang.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootrank.model import Finding

if TYPE_CHECKING:
    from rootrank.analysis.initiator import Initiator
    from rootrank.analysis.prepare import Context

#: The signature the hang becomes (signatures/network/).
NET_PLUGIN_SIGNATURE = "collective-timeout-over-net-plugin"
#: The stack name :mod:`rootrank.frameworks` gives a log whose lines name a net plugin.
NET_PLUGIN_STACK = "net-plugin"
#: The class of the generic hang this reading narrows.
HANG_CLASS = "collective-timeout"


def net_plugin_root(ctx: Context, root: Finding, initiator: Initiator) -> Finding | None:
    """``root`` recast as :data:`NET_PLUGIN_SIGNATURE` (same rank, lines and captures), or
    ``None``: when its class is :data:`HANG_CLASS`, ``initiator`` names no rank, at least two
    ranks report the hang (findings of the root's class), and the scan saw the
    :data:`NET_PLUGIN_STACK` stack (``ctx.state.stacks``). ``None`` also when the library
    has no such signature."""
    sig = ctx.library.signatures.get(NET_PLUGIN_SIGNATURE)
    if sig is None or root.failure_class != HANG_CLASS or initiator.rank is not None:
        return None
    if NET_PLUGIN_STACK not in ctx.state.stacks:
        return None
    ranks = {f.rank for f in ctx.findings if f.failure_class == HANG_CLASS and f.rank is not None}
    if len(ranks) < 2:
        return None
    moved = root.recast(sig)
    moved.frames = root.frames
    return moved
