"""Held-out r25c kinds left after its first fix (kinds 2, 3, 4, 8, 11 of its MISSES.md): a rank
that went silent, on fixtures of our own (real torch 2.13 CPU runs: torchrun, gloo). Each test
asserts the class, the initiating rank, the evidence line and the words of the fix that name
the mechanism."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.hang_capture import rank_own_lines

VARIANTS = Path(__file__).parent / "fix_variants"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_a_tee_prefixed_line_is_that_workers_own_line():
    # torchrun --tee writes "[default1]:" before every line worker 1 prints
    texts = [("a.log", 1, "[default1]:took batch 6/10 (6 rows)\n[default0]:step 6\n")]
    assert rank_own_lines(texts, "a.log", 9, 1) == [(1, "took batch 6/10 (6 rows)")]
    # a traceback's line under the prefix is not the rank's own words
    texts = [("a.log", 1, "[default1]:  File 'x.py', line 3\n[default1]:Traceback (most\n")]
    assert rank_own_lines(texts, "a.log", 9, 1) == []


def test_a_rank_whose_own_feed_ran_dry_blocks_it_is_not_slow():
    # real run: a prefetch thread per rank feeds a fixed 10-step loop; rank 1's rows give 6
    # batches, its consumer waits on the Condition forever and ranks 0 and 2 time out in
    # all_reduce (before: "raise the timeout", drop_last or join())
    d = _diag(VARIANTS / "gloo-collective-timeout/rank-feed-ran-dry.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 42
    assert d.root_cause.fix.variant.id == "rank-feed-ran-dry"
    step = " ".join(d.root_cause.fix.steps)
    assert "took batch 6/10 (6 rows)" in step and "[default1]:took" not in step
    assert "notify_all()" in step and "ReduceOp.MIN" in step
    assert "A longer timeout cannot end a wait" in step


def test_an_info_record_only_the_main_process_printed_is_rank_0s():
    # transformers' example-script format: every process logs its WARNING header, INFO only on
    # the main process; a message every process printed is nobody's
    head = "12/01/2026 09:00:0{} - WARNING - run - Process rank: {}, device: cpu"
    info = "12/01/2026 09:00:05 - INFO - run - Building the label map"
    lines = [head.format(1, 0), info, head.format(2, 1), "x"]
    assert rank_own_lines([("a.log", 1, "\n".join(lines))], "a.log", 4, 0)[-1] == (2, info)
    assert rank_own_lines([("a.log", 1, "\n".join(lines))], "a.log", 4, 1)[-1][0] == 3
    twice = [head.format(1, 0), info, head.format(2, 1), info, "x"]
    assert [n for n, _ in rank_own_lines([("a.log", 1, "\n".join(twice))], "a.log", 5, 0)] == [1]


def test_a_rank_blocked_on_its_helper_process_is_ipc_not_slow():
    # real run: rank 0 joins a helper process before reading its ~500 KB result from a
    # multiprocessing Queue (the child cannot exit until the pipe is drained); ranks 1 and 2
    # time out in all_reduce (before: "move it out of the collective path or raise the timeout")
    d = _diag(VARIANTS / "gloo-collective-timeout/rank-blocked-on-helper.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 20
    assert d.root_cause.fix.variant.id == "rank-blocked-on-helper"
    step = " ".join(d.root_cause.fix.steps)
    assert "Counting word frequencies of data/train-a.txt in a helper process" in step
    assert "read the result before join()" in step and "q.get(timeout=...)" in step
    assert "a longer timeout never ends it" in step


SIGNATURES = Path(__file__).parent.parent / "signatures"


def test_a_time_limit_after_a_silent_run_is_a_hang_named_by_the_odd_rank_line():
    # real run under `timeout 30`, lines stamped by the job script: rank 1 alone rebuilds an
    # index in a thread that holds its lock, DataLoader(num_workers=2) forks, the workers block
    # on the copied lock; 26 s of silence, then the limit (before: the agent's signal, no rank)
    d = _diag(SIGNATURES / "training/rank-alone-before-silence.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "rank-alone-before-silence"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 7
    assert d.root_cause.fix.variant.id == "thread-before-fork"
    step = d.root_cause.fix.steps[0]
    assert "rank 1: no index on disk, rebuilding it in a thread" in step
    assert 'multiprocessing_context="spawn"' in step and "thread.join()" in step


def test_the_odd_rank_line_without_a_thread_gets_the_general_path_fix():
    # real run: rank 2 alone takes a fallback mirror that never answers; the others wait in
    # all_reduce until `timeout 15`
    d = _diag(VARIANTS / "rank-alone-before-silence/general.log")
    assert d.root_cause is not None and d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 7
    assert d.root_cause.fix.variant.id == "general"
    assert "primary mirror refused, using the fallback" in d.root_cause.fix.steps[0]


def test_an_odd_rank_line_while_every_rank_keeps_printing_is_no_hang():
    # real run: one rank takes a fallback, but every rank prints until the limit: the stop
    # from outside stays the cause
    d = _diag(SIGNATURES / "training/rank-alone-before-silence.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "agent-received-signal"
    assert d.initiating_rank is None
