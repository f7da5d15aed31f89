"""Held-out r23g kinds (the set's MISSES.md), on fixtures from real torch 2.13 CPU runs beside
their signatures: a worker killed by SIGPIPE wrote to a pipe whose reader had exited (the
reader's own last words, the line no rank tagged, are quoted); a store key only
TORCH_DISTRIBUTED_DEBUG=DETAIL creates means one node's environment differs, and the agents'
sub-second failure lines order per-node summaries that tie on the second; a loss's "Target N
is out of bounds" compares the labels with the head's class count, not an embedding table."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.initiator import PRECISE_EXIT_GAP, elastic_rank
from rootrank.analysis.signal_exit import _with_signal_code
from rootrank.engine import default_library, diagnose_paths, matcher_for
from rootrank.ingest import read_blocks
from rootrank.model import Finding
from rootrank.ranks import ElasticFailure
from rootrank.scan import Scanner

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def test_sigpipe_death_is_the_pipe_readers_exit_with_its_words_quoted():
    # mp.spawn: "process 1 terminated with signal SIGPIPE" after the checker subprocess's
    # own message (before: elastic-child-failed, rank unknown, torchrun advice)
    d = _diag("process/worker-sigpipe-exit.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-sigpipe-exit"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 21
    assert [e.line for e in d.root_cause.evidence][-1] == 8
    assert "checker: cannot parse score 'nan' at row 4000" in d.root_cause.captures["reader"]
    assert "checker: cannot parse score" in d.root_cause.fix.steps[0]
    assert "SIG_DFL" in d.root_cause.fix.steps[1]
    # an mp.spawn script: the verify is its own launch, not torchrun
    assert d.root_cause.verify.startswith("python train.py  #")


def test_broken_pipe_error_without_sig_dfl_is_no_sigpipe_death():
    d = _diag("process/worker-sigpipe-exit.near-miss.log")
    assert d.root_cause is None or d.root_cause.signature != "worker-sigpipe-exit"


def test_srun_and_torchrun_spell_sigpipe_as_code_13():
    lib = default_library()
    sig = lib.signatures["elastic-child-failed"]
    at = {"rank": 3, "host": None, "time": None, "order": 0, "evidence": []}
    srun = Finding.of(sig, captures={"sigtext": "Broken pipe"}, **at)
    spawn = Finding.of(sig, captures={"signame": "SIGPIPE"}, **at)
    assert _with_signal_code(srun).captures["exitcode"] == "-13"
    assert _with_signal_code(spawn).captures["exitcode"] == "-13"


def test_debug_wrapper_key_on_one_node_is_an_environment_difference():
    # node 1's agent alone runs with TORCH_DISTRIBUTED_DEBUG=DETAIL: its rank waits for the
    # pg_wrapper key in init_process_group (before: store-key-wait-timeout, collective-timeout)
    d = _diag("launch/debug-wrapper-key-one-rank.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "debug-wrapper-key-one-rank"
    assert d.root_cause.failure_class == "rank-environment-mismatch"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 26
    assert "TORCH_DISTRIBUTED_DEBUG" in d.root_cause.fix.steps[0]


def test_same_launch_without_the_variable_is_healthy():
    d = _diag("launch/debug-wrapper-key-one-rank.near-miss.log")
    assert d.root_cause is None


def test_agent_failure_lines_keep_their_sub_second_times_by_pid():
    lib = default_library()
    scanner = Scanner(matcher_for(lib), learn_users=False)
    path = str(SIGNATURES / "launch/debug-wrapper-key-one-rank.positive.log")
    with open(path, "rb") as fh:
        scanner.scan_source(path, read_blocks(fh))
    times = scanner.state.agent_exit_times
    assert len(times) == 3
    first = min(times, key=lambda pid: times[pid])
    assert round(times[first] % 60, 3) == 19.252


def _entry(rank: int, pid: int) -> ElasticFailure:
    # one agent's summary per node, its time field in whole seconds (the same for all three)
    return ElasticFailure(
        rank=rank, local_rank=0, exitcode=1, pid=pid, time=1000.0, root_cause=True
    )


def test_per_node_summaries_tied_on_the_second_are_ordered_by_the_agents_lines():
    entries = [_entry(0, 501), _entry(1, 502), _entry(2, 503)]
    assert elastic_rank(entries)[0] is None
    times = {501: 1000.90, 502: 1000.95, 503: 1000.20}
    rank, why = elastic_rank(entries, times)
    assert rank == 2
    assert "0.7 s" in why


def test_agent_lines_closer_than_the_gap_do_not_order_the_ranks():
    entries = [_entry(0, 501), _entry(1, 502)]
    times = {501: 1000.30, 502: 1000.30 + PRECISE_EXIT_GAP / 2}
    assert elastic_rank(entries, times)[0] is None
    # a pid without its agent line leaves the order unknown
    assert elastic_rank(entries, {501: 1000.0})[0] is None


def test_loss_target_out_of_bounds_compares_labels_with_num_classes():
    # cross_entropy's "Target 7 is out of bounds." on rank 0 (before: the embedding-range assert)
    d = _diag("tensor/index-out-of-range.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "index-out-of-range"
    assert d.initiating_rank == 0
    steps = " ".join(d.root_cause.fix.steps)
    assert "class label 7" in steps
    assert "num_classes" in steps
    assert "num_embeddings" not in steps


def test_embedding_index_error_keeps_the_embedding_advice():
    d = _diag("tensor/index-out-of-range.positive.log")
    assert d.root_cause is not None
    assert "num_embeddings" in " ".join(d.root_cause.fix.steps)


def test_later_groups_wrapper_key_is_a_missing_new_group_not_an_environment():
    # DETAIL on every rank, rank 0 stuck before creating group 7: the wait is on
    # pg_wrapper:7/..., which every rank with DETAIL builds, so it stays the generic reading
    d = diagnose_paths(
        [
            str(
                Path(__file__).parent
                / "fix_variants/monitored-barrier-rank-failed/stuck-creating-group.log"
            )
        ],
        mask=False,
    )
    assert d.root_cause is not None
    assert d.root_cause.signature != "debug-wrapper-key-one-rank"
    assert d.root_cause.failure_class != "rank-environment-mismatch"


def test_a_differing_step_count_is_read_from_the_word_after_the_odd_value():
    from rootrank.analysis.count_desync import _step_count_named

    why = (
        "rank 1 printed `shards=3 lines=192 -> 12` where ranks 0, 2 printed"
        " `shards=2 lines=128 -> 8` in the same line (line 6: `shards=3 lines=192 -> 12 steps`)"
    )
    assert _step_count_named(why)
    batches = why.replace("12 steps`", "12 batches left`")
    assert _step_count_named(batches)
    # rows (the shape of a gathered tensor) are no count of collectives
    rows = (
        "rank 1 printed `kept 192` where ranks 0, 2 printed `kept 128` in the same line"
        " (line 6: `kept 192 rows`)"
    )
    assert not _step_count_named(rows)


def test_a_rank_that_printed_another_count_and_dtype_before_its_index_error_leads_the_fix():
    # rank 2 read its token file with another dtype: `2048 ids as int64` where ranks 0, 1
    # printed `8192 ids as uint16` (a word differs, not only a number), then IndexError
    d = _diag("tensor/index-out-of-range.positive-3.log")
    assert d.root_cause is not None
    assert d.initiating_rank == 2
    first = d.root_cause.fix.steps[0]
    assert "`2048 ids as int64`" in first
    assert "`8192 ids as uint16`" in first
    assert ":7:" in first


def test_no_odd_line_no_lead():
    d = _diag("tensor/index-out-of-range.positive.log")
    assert d.root_cause is not None
    assert not d.root_cause.fix.steps[0].startswith("Make what rank")


def test_a_signatures_fix_for_an_exception_in_a_thread_says_the_thread_died_alone():
    # json.dumps of a tensor in writer thread 'ckpt-meta' on rank 0; its loop then blocks on
    # the bounded queue and the others time out (before: only the JSON fix)
    d = _diag("python/json-tensor-not-serializable.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "json-tensor-not-serializable"
    assert d.initiating_rank == 0
    steps = d.root_cause.fix.steps
    assert ".item()" in steps[0]
    assert steps[1].startswith("The exception ended only thread 'ckpt-meta' of rank 0")
    assert "is_alive()" in steps[1]


def test_no_thread_step_when_the_exception_ended_the_process():
    d = _diag("python/json-tensor-not-serializable.positive.log")
    assert d.root_cause is not None
    assert not any("ended only" in s for s in d.root_cause.fix.steps)
