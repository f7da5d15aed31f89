"""Held-out r22a kinds (the set's MISSES.md), each on a fixture written from what the tools
print: SeqNums spread over many values (or one node's ranks against another's) name no
lagging rank; two ranks' tracebacks stamped only by the same second are no order; every
rank timing out with NCCL's network plugin in use is the transport's (network-fabric-error),
while the same hang on NCCL's own NET/IB stays the generic collective timeout; a bare Slurm
CANCELLED with no reason is a person's scancel, with no requeue advice."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.spread import same_second, seqnum_spread
from rootrank.engine import default_library, diagnose_paths
from rootrank.model import Finding

HERE = Path(__file__).parent / "r22f"
SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_seqnums_spread_over_many_values_name_no_lagging_rank():
    # rank 2 at SeqNum 3, ranks 4-7 at 6, ranks 0, 1, 3 at 31, 26, 37: node 0's ranks far
    # ahead of a peer they need is local completion, a transport stall, not rank 2 lagging
    # (the engine before this change named rank 2)
    d = _diag(HERE / "seqnums_spread_two_nodes.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
    assert d.initiator is not None and d.initiator.strategy == "odd_value_out"
    assert "5 different SeqNums (3, 6, 26, 31, 37)" in d.initiator.why


def _watchdog(rank: int, host: str, seqnum: int) -> Finding:
    sig = default_library().signatures["nccl-watchdog-timeout"]
    return Finding.of(
        sig,
        rank=rank,
        host=host,
        time=None,
        order=rank,
        evidence=[],
        captures={"seqnum": str(seqnum)},
    )


def test_one_nodes_ranks_agreeing_against_another_node_name_no_rank():
    # ranks 0-3 (node a) at 12, rank 4 (node b) at 11, ranks 5-7 (node b) at 13
    found = [_watchdog(r, "node-a", 12) for r in range(4)]
    found += [_watchdog(4, "node-b", 11)] + [_watchdog(r, "node-b", 13) for r in (5, 6, 7)]
    assert seqnum_spread(found, 4) is not None  # three values: a spread
    # ranks 0-2 (node a) at 12, rank 3 (node b) at 11: the "majority" is node a alone
    pair = [_watchdog(r, "node-a", 12) for r in range(3)] + [_watchdog(3, "node-b", 11)]
    why = seqnum_spread(pair, 3)
    assert why is not None and "ranks of host node-a" in why
    # one lagging rank among ranks of both nodes is still a lagging rank
    mixed = [_watchdog(r, "node-a" if r < 2 else "node-b", 12) for r in range(4)]
    mixed.append(_watchdog(4, "node-b", 11))
    assert seqnum_spread(mixed, 4) is None


def test_tracebacks_stamped_by_the_same_second_are_no_order():
    # per-rank files: both ranks raise the same ValueError after lines of 10:15:11; rank 2's
    # last stamp before it is 10:15:11,402 and rank 1's 10:15:11,731, but the tracebacks
    # carry no time: lower bounds in one second order nothing
    d = _diag(HERE / "same_second")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank is None
    assert d.initiator is not None and "within the same second (10:15:11)" in d.initiator.why
    assert same_second(100.4, 100.7, False, False)
    assert not same_second(100.4, 100.7, True, False)  # a line stamped itself is ordered
    assert not same_second(100.9, 101.2, False, False)


def test_every_rank_timing_out_over_a_net_plugin_is_the_transport():
    d = _diag(SIGNATURES / "network" / "collective-timeout-over-net-plugin.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "collective-timeout-over-net-plugin"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank is None
    assert d.root_cause.evidence[0].line == 12
    steps = " ".join(d.root_cause.fix.steps)
    assert "NCCL_NET_GDR_LEVEL" in steps and "FI_PROVIDER" in steps and "aws-ofi-nccl" in steps
    assert "SeqNum 212" in d.root_cause.verify


def test_the_same_hang_on_nccls_own_transport_stays_a_collective_timeout():
    d = _diag(SIGNATURES / "network" / "collective-timeout-over-net-plugin.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "nccl-watchdog-timeout"


def test_a_bare_slurm_cancel_is_a_persons_scancel_not_a_preemption():
    d = _diag(HERE / "slurm_bare_cancel_healthy.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.root_cause.evidence[0].line == 4
    assert _variant(d) == "scancel-by-person"
    steps = " ".join(d.root_cause.fix.steps)
    assert "scancel" in steps and "sacct -j 4418203.0" in steps
    assert "--requeue" not in steps + " ".join(d.root_cause.fix.code.values())
