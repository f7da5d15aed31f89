"""Two nodes' output one after the other in one file (``cat node1.log node0.log > all.log``):
the second torchrun agent's start banner follows the first node's failure, as a relaunch's
would; what the two sections show tells them apart (rootrank.runs.another_node).

Fixtures (``tests/attempts``), captured from a real run of two torchrun agents on one machine
as two nodes (``--nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d``, torch 2.13 CPU, gloo;
``scenarios/run.py``'s ``run_nodes("bad_data_raise", fault_rank=3)``), paths anonymized:
``two-nodes-node0.log`` (global ranks 0-1, both "Connection closed by peer") and
``two-nodes-node1.log`` (global rank 3 raises ``ValueError``, rank 2 is a victim).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.runs import SectionFacts, another_node

HERE = Path(__file__).resolve().parent / "attempts"
NODE0 = (HERE / "two-nodes-node0.log").read_text(encoding="utf-8")
NODE1 = (HERE / "two-nodes-node1.log").read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("order", ["node1-first", "node0-first"])
def test_concatenated_node_logs_are_one_run(order):
    text = NODE1 + NODE0 if order == "node1-first" else NODE0 + NODE1
    d = diagnose_text(text, "all.log", mask=False)
    assert d.attempts == 1
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 3
    assert [e.line for e in d.root_cause.evidence][:1] == [
        _line_of(text, "[rank3]: ValueError: shard-00003.csv")
    ]
    groups = {g.signature: g.ranks for g in d.collateral}
    assert groups["connection-reset-by-peer"] == [0, 1, 2]
    # Each agent's "failed (exitcode" line keeps the rank its own node's summary gives it,
    # as when the two files are given apart.
    assert groups["elastic-child-failed"] == [0, 3]
    apart = diagnose_paths([str(HERE / "two-nodes-node1.log"), str(HERE / "two-nodes-node0.log")])
    assert groups == {g.signature: g.ranks for g in apart.collateral}
    # the second node's section begins at its file's first line (right after the first
    # node's failure summary), not at its banner's OMP_NUM_THREADS line
    second = len((NODE1 if order == "node1-first" else NODE0).splitlines()) + 1
    said = [r for r in d.reasoning if "another node of the same run" in r]
    assert len(said) == 1 and f"from line {second}" in said[0], d.reasoning
    assert "holds 2 runs" not in " ".join(d.reasoning)


@pytest.mark.parametrize("order", ["node1-first", "node0-first"])
def test_two_agents_with_the_same_pid_are_two_nodes_not_a_restart(order):
    # In containers both nodes' agents often have the same pid: node 0's agent is given
    # node 1's pid, so its failure line reads like a second failure of one agent (a restart).
    node0 = NODE0.replace(" 28296 torch/distributed/", " 28315 torch/distributed/")
    text = NODE1 + node0 if order == "node1-first" else node0 + NODE1
    d = diagnose_text(text, "all.log", mask=False)
    assert d.attempts == 1
    assert d.initiating_rank == 3
    assert "runs of the job" not in " ".join(d.reasoning), d.reasoning


def test_the_same_node_logged_twice_is_still_a_relaunch():
    """The same global ranks (2 and 3, node offset 2) in both sections: one node started
    twice, so the last run is diagnosed on its own. The relaunch has its own agent and
    worker pids and later times, as a real one would."""
    again = NODE1.replace("19:53:1", "20:07:4")
    for pid in ("28315", "28360", "28363"):
        again = again.replace(pid, str(int(pid) + 900))
    text = NODE1 + again
    d = diagnose_text(text, "all.log", mask=False)
    assert d.attempts == 2
    assert d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == len(NODE1.splitlines()) + _line_of(
        NODE1, "[rank3]: ValueError"
    )
    assert not any("another node" in r for r in d.reasoning)


def test_a_relaunch_where_another_rank_fails_is_not_taken_for_a_node():
    """Attempt 1: rank 1 runs out of memory; attempt 2 (the user's relaunch): rank 0 misses a
    file. The ranks differ but nothing says another node: no host, no node offset, and the
    second run is timed after the first."""
    text = (
        "user@node01:~/proj$ torchrun --nproc-per-node=2 train.py\n"
        "W1203 09:14:02.118000 77120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your "
        "application as needed.\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/u/proj/train.py", line 40, in <module>\n'
        '[rank1]:     x = torch.empty(10**12, device="cuda")\n'
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.64 TiB. GPU 1 "
        "has a total capacity of 79.10 GiB of which 78.00 GiB is free.\n"
        "user@node01:~/proj$ torchrun --nproc-per-node=2 train.py --batch-size 4\n"
        "W1203 09:20:02.118000 77320 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your "
        "application as needed.\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/home/u/proj/train.py", line 52, in <module>\n'
        "[rank0]:     batch = next(it)\n"
        "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: "
        "'/data/shard_0007.pt'\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.attempts == 2
    assert d.initiating_rank == 0
    assert d.root_cause.failure_class != "cuda-oom"


def test_another_node_reads_offsets_hosts_and_times():
    node1 = SectionFacts()
    node1.see(2, 0, "gpu-b", 100.0)
    node1.see(3, 1, "gpu-b", 130.0)
    node0 = SectionFacts()
    node0.see(0, 0, "gpu-a", 131.0)
    node0.see(1, 1, "gpu-a", 131.5)
    assert another_node(node1, node0) == (
        "it holds global ranks 0, 1 of another node; the earlier section held 2, 3"
    )
    # The same ranks again: a relaunch, whatever the hosts (a requeue lands elsewhere).
    again = SectionFacts()
    again.see(2, 0, "gpu-c", 500.0)
    assert another_node(node1, again) is None
    # No local ranks: other hosts and other ranks still make another node...
    a, b = SectionFacts(), SectionFacts()
    a.see(3, host="gpu-b")
    b.see(0, host="gpu-a")
    assert another_node(a, b) == (
        "it holds global ranks 0 on another host; the earlier section held 3"
    )
    # ...but the same node offset (node rank 0 both times, on another host) is a relaunch.
    a, b = SectionFacts(), SectionFacts()
    a.see(1, 1, "gpu-b", 10.0)
    b.see(0, 0, "gpu-a", 900.0)
    assert another_node(a, b) is None
    # Lines timed before the earlier section ended: both ran at once.
    a, b = SectionFacts(), SectionFacts()
    a.see(None, time=200.0)
    a.see(None, time=260.0)
    b.see(None, time=230.0)
    assert another_node(a, b) == (
        "its lines are timed while the earlier section's node was still running"
    )
    # Timed after it, nothing else known: a relaunch.
    b2 = SectionFacts()
    b2.see(None, time=300.0)
    assert another_node(a, b2) is None
