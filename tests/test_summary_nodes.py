"""Two torchrun agents of one ``--nnodes=2`` run writing to one terminal: each prints its own
failure summary, one after the other, while their workers' lines interleave. The second
summary is another node's, not a relaunch's (rootrank.runs.summary_nodes).

Fixture ``tests/attempts/two-nodes-one-terminal-keyerror-rank2.log``: captured from a real
run (torch 2.13 CPU, gloo) of two torchrun processes started from one shell on one machine,
``--nnodes=2 --nproc-per-node=2 --rdzv-backend=static``, output to one file; the script raises
``KeyError: 'fish'`` on global rank 2 (node 1, local rank 0) at step 6, the other ranks get
"Connection closed by peer". Node 1's summary (ranks 2, 3) comes first, then rank 0's
traceback and node 0's summary (ranks 0, 1). Paths anonymized.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.runs import summary_nodes

PATH = Path(__file__).resolve().parent / "attempts" / "two-nodes-one-terminal-keyerror-rank2.log"
LOG = PATH.read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_second_agents_summary_is_another_node_not_a_relaunch():
    d = diagnose_text(LOG, "job.log", mask=False)
    assert d.attempts == 1
    # ``LABELS[name]`` raising ``KeyError: 'fish'``: a label table indexed by a value the data
    # holds (rootrank.analysis.lookup), a data error
    assert d.root_cause.failure_class == "data-error"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == _line_of(LOG, "[rank2]: KeyError: 'fish'")
    said = [r for r in d.reasoning if "another node of the same run" in r]
    assert len(said) == 1, d.reasoning
    assert "global ranks 0, 1 of another node, the one before it 2, 3" in said[0]
    assert "runs of the job" not in " ".join(d.reasoning)
    groups = {g.signature: g.ranks for g in d.collateral}
    assert groups["connection-reset-by-peer"] == [0, 1, 3]
    # read from the file (its own blocks, as the CLI does): the same run, the same rank
    from_file = diagnose_paths([str(PATH)])
    assert from_file.attempts == 1 and from_file.initiating_rank == 2


def test_summary_nodes_needs_other_offsets_and_other_ranks():
    node1 = [(2, 0), (3, 1)]
    node0 = [(0, 0), (1, 1)]
    everyone = {0, 1, 2, 3}
    assert summary_nodes(node1, node0, everyone) is not None
    # the same node again (offset 2 twice): a relaunch
    assert summary_nodes(node1, [(3, 1)], everyone) is None
    # every node of the attempt before already reported (offsets 0 and 2): the next summary
    # of node 0 is the relaunch's
    assert summary_nodes([*node0, *node1], node0, everyone) is None
    # a summary that gives no local ranks says nothing about nodes
    assert summary_nodes([(2, None)], [(0, None)], everyone) is None
    # one global rank in both summaries: the same process reported twice
    assert summary_nodes([(2, 0), (3, 1)], [(3, 3), (0, 0)], everyone) is None
    # the later node's ranks printed nothing before the cut: nothing shows they ran at the
    # same time (a relaunch whose rendezvous gave this node another node rank)
    assert summary_nodes(node1, node0, {2, 3}) is None
