"""Two jobs' logs concatenated in one file are not two nodes of one run (new-user trial r20,
finding 1: ``cat jobA.log jobB.log`` was read as two nodes, the first job's cause given with the
second job's rank and a verify mixing both launchers).

A section that runs another program (another entry script, launch or world size:
rootrank.runs.different_program) is another job before any node rule is asked; and two sections
timed more than an hour apart (rootrank.runs._apart) did not run at once, so they are never two
nodes, whatever their ranks, hosts or agents' pids.

Fixtures: tests/attempts/two-nodes-node{0,1}.log (a real two-agent torchrun run, see
tests/test_node_sections.py); the second job is the same node's log retimed to another month or
with another entry script, as another job's log would be.
"""

from __future__ import annotations

import re
from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).resolve().parent / "attempts"
NODE0 = (HERE / "two-nodes-node0.log").read_text(encoding="utf-8")
NODE1 = (HERE / "two-nodes-node1.log").read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_sections_months_apart_are_not_two_nodes() -> None:
    # node 0's log of another job: the same shapes, timed in August (glog's "W0801 ...")
    other = re.sub(r"\b([WEI])1201 ", r"\g<1>0801 ", NODE0).replace("-12-01", "-08-01")
    assert other != NODE0
    d = diagnose_text(NODE1 + other, "all.log", mask=False)
    assert not [r for r in d.reasoning if "another node of the same run" in r], d.reasoning
    # the last section is diagnosed on its own: ranks 0-1 only, no rank 3 from the first job
    assert d.initiating_rank != 3
    assert all(e.line > len(NODE1.splitlines()) for e in d.root_cause.evidence)


def test_concatenated_nodes_of_one_run_stay_one_run() -> None:
    # the real two-node run, timed alike: still one run (tests/test_node_sections.py)
    d = diagnose_text(NODE1 + NODE0, "all.log", mask=False)
    assert d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == _line_of(NODE1, "[rank3]: ValueError: shard-00003.csv")
