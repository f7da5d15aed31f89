"""torchrun's agent names a *local* rank (``failed (exitcode: -9) local_rank: 3 (pid: N) of
binary: ...``, torch/distributed/elastic/multiprocessing/api.py). It is the global rank only
when the log proves it: the summary entry with the same pid, or a provably single-node run;
otherwise the rank stays unknown (null)."""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text

AGENT_FAILED = (
    "W1129 10:02:11.436000 1990 torch/distributed/elastic/multiprocessing/api.py:897] "
    "Sending process 2001 closing signal SIGTERM\n"
    "E1129 10:02:11.602000 1990 torch/distributed/elastic/multiprocessing/api.py:869] "
    "failed (exitcode: -9) local_rank: 3 (pid: 2004) of binary: /usr/bin/python3\n"
)


def _answer(text: str) -> tuple[str, int | None, int | None, int]:
    diag = diagnose_text(text, mask=False)
    rc = diag.root_cause
    return rc["failure_class"], rc["rank"], diag.initiating_rank, rc["evidence"][0]["line"]


@pytest.mark.parametrize(
    "head",
    [
        "$ torchrun --nnodes=1 --nproc-per-node=4 train.py\n",
        "$ torchrun --nnodes 1:1 --nproc_per_node 4 train.py\n",
        "$ torchrun --standalone --nproc-per-node=4 train.py\n",
        "$ python -m torch.distributed.run --nproc_per_node=4 train.py --epochs 3\n",
        "launch config: nnodes=1 nproc_per_node=4\n",
        "$ torchrun --nproc-per-node=4 train.py\n[rank0]: world_size=4\n",
    ],
)
def test_single_node_proof_maps_local_rank_to_global(head):
    text = head + AGENT_FAILED
    line = text.count("\n") - 0  # the agent's "failed" line is the last one
    assert _answer(text) == ("host-oom-killed", 3, 3, line)


def test_the_agent_ran_every_worker_of_the_job():
    # ColossalAI prints the parallel sizes (world = 4 * 1 * 1); the agent stopped three
    # workers and lost the fourth: it ran the whole job, so one node.
    text = (
        "INFO colossalai - colossalai - INFO: Distributed environment is initialized, data parallel size: 4, \n"
        "                             pipeline parallel size: 1, tensor parallel size: 1 \n"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2001 closing signal SIGTERM\n"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2002 closing signal SIGTERM\n"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2003 closing signal SIGTERM\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 2004) of binary: /usr/bin/python3\n"
    )
    assert _answer(text) == ("host-oom-killed", 3, 3, 6)


@pytest.mark.parametrize(
    "head",
    [
        "",  # nothing tells how many nodes
        "$ torchrun --nnodes=2 --nproc-per-node=4 train.py\n",
        "$ torchrun --nnodes=1:4 --nproc-per-node=4 train.py\n",  # elastic: 1 to 4 nodes
        "$ torchrun --nproc-per-node=4 --master_addr=10.0.0.1 --node_rank=1 train.py\n",
        "$ torchrun --nproc-per-node=4 --rdzv-endpoint=10.0.0.1:29400 train.py\n",
        "$ torchrun --nproc-per-node=4 train.py\n[rank0]: world_size=8\n",
    ],
)
def test_without_proof_the_local_rank_stays_unknown(head):
    text = head + AGENT_FAILED
    failure_class, rank, initiating, _ = _answer(text)
    assert (failure_class, rank, initiating) == ("host-oom-killed", None, None)


def test_summary_with_the_same_pid_gives_the_global_rank_on_any_node_count():
    text = (
        "$ torchrun --nnodes=2 --nproc-per-node=4 train.py\n"
        + AGENT_FAILED
        + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-11-29_10:02:11\n"
        "  host      : node02\n"
        "  rank      : 7 (local_rank: 3)\n"
        "  exitcode  : -9 (pid: 2004)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 2004\n"
        "============================================================\n"
    )
    diag = diagnose_text(text, mask=False)
    assert (diag.root_cause["failure_class"], diag.initiating_rank) == ("host-oom-killed", 7)
    # The agent's line joins rank 7's own finding (the summary's lines) as evidence.
    (sigkill,) = [f for f in diag.findings if f.signature == "worker-sigkill-exit"]
    assert sigkill.rank == 7
    assert sorted(e.line for e in sigkill.evidence) == [3, 13, 15]
    assert {e.rank for e in sigkill.evidence} == {7}


def test_two_hosts_veto_a_single_node_claim():
    text = (
        "$ torchrun --nproc-per-node=4 train.py\n"
        "node01:2001:2101 [0] NCCL INFO comm 0x5581 rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "node02:3001:3101 [0] NCCL INFO comm 0x7712 rank 4 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n"
        + AGENT_FAILED
    )
    assert _answer(text)[1:3] == (None, None)
