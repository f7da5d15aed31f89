"""Initiating-rank claims on multi-rank fragments.

A pasted fragment often starts inside torchelastic's failure summary, below its
``Failures:`` header (``torch/distributed/elastic/multiprocessing/errors/__init__.py``
prints ``[N]:`` entry headers followed by ``time``/``host``/``rank``/``exitcode``/
``error_file``/``traceback`` fields). Those entries must still count, or the one entry
under ``Root Cause (first observed failure)`` looks like the only failed rank and is
claimed as the initiator. The other tests pin the cases where the log cannot tell and the
engine must say so (``initiating_rank`` ``None``), and the ones where it can.

Every log here is written for this file in the shape the tools print.

Local ranks: torchrun's agent names a *local* rank (``failed (exitcode: -9) local_rank: 3 (pid: N) of
binary: ...``, torch/distributed/elastic/multiprocessing/api.py). It is the global rank only
when the log proves it: the summary entry with the same pid, or a provably single-node run;
otherwise the rank stays unknown (null).
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

_SEP = "-" * 60
_END = "=" * 60


def _entry(
    index: int, rank: int, exitcode: int, pid: int, when: str = "2025-03-02_10:41:07"
) -> list[str]:
    tb = (
        f"Signal {-exitcode} (SIGTERM) received by PID {pid}"
        if exitcode == -15
        else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    )
    return [
        f"[{index}]:",
        f"  time      : {when}",
        "  host      : node02",
        f"  rank      : {rank} (local_rank: {rank % 4})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {tb}",
    ]


def _root(rank: int, exitcode: int, pid: int, when: str = "2025-03-02_10:41:07") -> list[str]:
    return [
        _SEP,
        "Root Cause (first observed failure):",
        *_entry(0, rank, exitcode, pid, when),
        _END,
    ]


def test_entries_below_a_cut_failures_header_are_read():
    # The fragment starts at entry [1]; its "Failures:" header was not pasted.
    lines = [*_entry(1, 6, 1, 3312), *_entry(2, 7, 1, 3313), *_root(5, 1, 3311)]
    tagger = RankTagger()
    for i, line in enumerate(lines, 1):
        tagger.tag(line, i)
    got = sorted((e.rank, e.exitcode, e.root_cause, e.line) for e in tagger.elastic)
    assert got == [(5, 1, True, 17), (6, 1, False, 1), (7, 1, False, 8)]


def test_a_cut_summary_whose_ranks_all_failed_together_names_no_initiator():
    d = diagnose_text(
        "\n".join([*_entry(3, 6, 1, 3312), *_entry(4, 7, 1, 3313), *_root(5, 1, 3311)]) + "\n"
    )
    out = d.to_dict()
    assert out["root_cause"]["failure_class"] == "elastic-child-failed"
    assert out["root_cause"]["evidence"][0]["line"] == 16
    assert out["initiating_rank"] is None
    assert out["ranks"]["seen"] == [5, 6, 7]


def test_a_cut_summary_with_sigtermed_siblings_names_the_rank_that_really_failed():
    lines = [*_entry(1, 5, -15, 3311), *_entry(2, 6, -15, 3312), *_root(4, 1, 3310)]
    out = diagnose_text("\n".join(lines) + "\n").to_dict()
    assert out["root_cause"]["failure_class"] == "elastic-child-failed"
    assert out["initiating_rank"] == 4


def test_a_fragment_starting_at_an_entry_field_opens_the_summary():
    # Cut even higher: the first entry's header and time are missing.
    lines = [
        "  host      : node02",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 871)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        *_root(0, 1, 868),
    ]
    tagger = RankTagger()
    for i, line in enumerate(lines, 1):
        tagger.tag(line, i)
    assert sorted((e.rank, e.exitcode) for e in tagger.elastic) == [(0, 1), (3, 1)]


def test_a_bracketed_index_outside_a_summary_opens_nothing():
    lines = [
        "[0]:",
        "  loss      : 0.4312",
        "[1]:",
        "epoch 3 finished",
        "  rank: 2",
    ]
    tagger = RankTagger()
    for i, line in enumerate(lines, 1):
        tagger.tag(line, i)
    assert tagger.elastic == []


def test_two_ranks_lagging_together_are_not_an_initiator():
    # Ranks 4 and 5 are three collectives behind the four others, in another collective: the
    # streams diverged (a desync), but a pair, not one rank, so no initiator is named.
    lines = []
    for rank in (0, 4, 1, 5, 2, 3):
        seq, op = (897, "BROADCAST") if rank in (4, 5) else (900, "ALLREDUCE")
        lines.append(
            f"[E ProcessGroupNCCL.cpp:828] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)=1800000) ran for 180{rank}711 milliseconds before timing out."
        )
    out = diagnose_text("\n".join(lines) + "\n").to_dict()
    assert out["root_cause"]["failure_class"] == "collective-desync"
    assert out["root_cause"]["evidence"][0]["line"] == 2  # rank 4, the smaller group
    assert out["initiating_rank"] is None
    assert "ranks 4, 5 in BROADCAST (SeqNum 897)" in " ".join(out["reasoning"])


def test_the_single_rank_behind_the_others_is_named():
    lines = []
    for rank in (0, 1, 2, 3):
        seq = 411 if rank == 2 else 412
        lines.append(
            f"[rank{rank}]:[E302 10:41:07.1{rank}0000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            f"ran for 60002{rank} milliseconds before timing out."
        )
    out = diagnose_text("\n".join(lines) + "\n").to_dict()
    assert out["root_cause"]["failure_class"] == "collective-timeout"
    assert out["initiating_rank"] == 2


def _cut_entry(rank: int, exitcode: int, pid: int) -> list[str]:
    """An entry whose header and ``time`` field are above the pasted fragment."""
    return [
        "  host      : node01",
        f"  rank      : {rank} (local_rank: {rank})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]


def test_an_untimed_sibling_cannot_be_earlier_than_its_own_summary_root():
    # torchelastic's root cause is the minimum timestamp of its summary: rank 7's cut entry
    # (time not in the log) failed no earlier than rank 0.
    out = diagnose_text("\n".join([*_cut_entry(7, 1, 4227), *_root(0, 1, 4220)]) + "\n").to_dict()
    assert out["ranks"]["seen"] == [0, 7]
    assert out["initiating_rank"] == 0


def test_an_untimed_entry_with_no_root_after_it_leaves_the_order_unknown():
    # Node 1's complete summary names rank 1; the paste then stops inside node 2's
    # "Failures:" list: rank 6's time and its summary's root are both missing.
    lines = [
        "Root Cause (first observed failure):",
        *_entry(0, 1, 1, 5101, "2025-03-02_10:41:07"),
        _END,
        "Failures:",
        *_cut_entry(6, 1, 5206),
    ]
    out = diagnose_text("\n".join(lines) + "\n").to_dict()
    assert out["ranks"]["seen"] == [1, 6]
    assert out["initiating_rank"] is None


def test_an_entry_earlier_than_every_summary_root_is_named():
    # The two-agent shape: node 1's ranks (one cut) fail together 51 s after node 2's rank 4.
    lines = [
        *_cut_entry(3, 1, 19418),
        *_root(0, 1, 19414, "2025-03-02_10:41:58"),
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        *_root(4, 1, 19401, "2025-03-02_10:41:07"),
    ]
    out = diagnose_text("\n".join(lines) + "\n").to_dict()
    assert out["initiating_rank"] == 4


# -- local ranks ---------------------------------------------------------------------------

AGENT_FAILED = (
    "W1129 10:02:11.436000 1990 torch/distributed/elastic/multiprocessing/api.py:897] "
    "Sending process 2001 closing signal SIGTERM\n"
    "E1129 10:02:11.602000 1990 torch/distributed/elastic/multiprocessing/api.py:869] "
    "failed (exitcode: -9) local_rank: 3 (pid: 2004) of binary: /usr/bin/python3\n"
)


def _answer(text: str) -> tuple[str, int | None, int | None, int]:
    diag = diagnose_text(text, mask=False)
    rc = diag.root_cause
    return rc.failure_class, rc.rank, diag.initiating_rank, rc.evidence[0].line


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
    assert (diag.root_cause.failure_class, diag.initiating_rank) == ("host-oom-killed", 7)
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


AGENT_STOPPED_THREE = (
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2001 closing signal SIGTERM\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2003 closing signal SIGTERM\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2004 closing signal SIGTERM\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 2002) of binary: /usr/bin/python3\n"
)


def test_the_agent_stopped_every_other_worker_it_ran():
    # Four workers (three closing signals and the failed one), no node flag, no other rank:
    # the agent's own node is the whole job, so local rank 1 is rank 1.
    diag = diagnose_text(AGENT_STOPPED_THREE, mask=False)
    assert (diag.root_cause.failure_class, diag.initiating_rank) == ("elastic-child-failed", 1)
    assert any("stopped or lost 4 workers" in s for s in diag.reasoning)


@pytest.mark.parametrize(
    "extra",
    [
        "[rank5]:[W1129 10:02:10.1 ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout\n",
        "$ torchrun --nnodes=2 --nproc-per-node=4 train.py\n",
        "launch config: world_size=8\n",
    ],
    ids=["a-rank-beyond-the-workers", "two-nodes", "a-larger-world"],
)
def test_another_node_shows_and_the_local_rank_stays_unknown(extra):
    diag = diagnose_text(extra + AGENT_STOPPED_THREE, mask=False)
    assert diag.initiating_rank is None


def test_one_rank_reporting_a_timeout_does_not_accuse_the_one_quiet_rank():
    # A paste of three lines: rank 5's watchdog dump notice (twice) and rank 0 preparing its
    # own dump. One reporter against one quiet rank is not a pattern: no rank is named.
    text = (
        "[rank5]:[E723 01:58:45.667329643 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=137,"
        " OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds"
        " before timing out.\n"
        "[rank0]:[E723 01:58:45.667749122 ProcessGroupNCCL.cpp:1533] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 0] ProcessGroupNCCL preparing to dump debug info.\n"
    )
    diag = diagnose_text(text, mask=False)
    assert diag.root_cause.failure_class == "collective-timeout"
    assert diag.initiating_rank is None


def test_with_no_sign_of_another_node_the_local_rank_is_read_as_one_nodes_and_said_so():
    # The agent's lines alone, no flag, host, world size or other rank: read as one node.
    diag = diagnose_text(AGENT_FAILED, mask=False)
    assert (diag.root_cause.failure_class, diag.initiating_rank) == ("host-oom-killed", 3)
    assert any("shows no other node" in s for s in diag.reasoning)


def test_another_rank_in_the_log_keeps_the_local_rank_unknown():
    text = "[rank9]: step 10 loss 2.0\n" + AGENT_FAILED
    assert diagnose_text(text, mask=False).initiating_rank is None


def test_srun_task_ranges_count_every_task_that_exited_by_itself():
    # 14 of 16 tasks exited with code 1 (srun groups them): the one single-task line is not
    # the only failure, so an unranked cause names no task.
    text = (
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269,"
        " invalid argument, NCCL version 2.10.3\n"
        "srun: error: node01: tasks 2-7: Exited with exit code 1\n"
        "srun: error: node02: tasks 8-13,15: Exited with exit code 1\n"
        "srun: error: node02: task 14: Exited with exit code 1\n"
    )
    assert diagnose_text(text, mask=False).initiating_rank is None
