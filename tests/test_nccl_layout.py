"""NCCL's communicator line at init (``NCCL_DEBUG=INFO``: ``comm 0x... rank 1 nRanks 8 nNodes 2
localRanks 4 localRank 1``) gives the job's node count and processes per node, which the
verification's launch then carries instead of blanks (trial r22, finding 8: the log said
``nNodes 2 localRanks 4`` and the command said ``--nproc-per-node=<gpus per node>``)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_HANG = ROOT / "signatures/network/collective-timeout-over-net-plugin.positive.log"
LAYOUT = (
    "x1000c0s1b0n0:40211:40230 [0] NCCL INFO comm 0x5581c2d0 rank 0 nRanks 4 nNodes 2 "
    "localRanks 2 localRank 0 MNNVL 0\n"
)


def _verify(text: str) -> str:
    d = diagnose_text(text, "job.out", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    return d.root_cause.verify


def test_the_layout_line_fills_nodes_and_processes_per_node() -> None:
    lines = PLUGIN_HANG.read_text().splitlines(keepends=True)
    verify = _verify("".join(lines[:9]) + LAYOUT + "".join(lines[9:]))
    command = verify.split("  # ", 1)[0]
    assert "--nproc-per-node=2" in command
    assert "--nnodes=2" in command
    assert "--node-rank=<node rank>" in command  # the log cannot tell which node reruns
