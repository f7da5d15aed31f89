"""Held-out r23d kinds (its MISSES.md), on fixtures written in the formats PyTorch's
ProcessGroupNCCL, torchrun and PALS mpiexec print: a rank whose error line a paste cuts
before its message reported too (it is not "the one rank that did not report"); a rank whose
counters show every enqueued work completed was never inside the hung collective, so line
presence is no census of waiters; and on a world the log states (``I am worker 2 of 8``) of
which only some ranks are shown, the absence of one shown rank's line names no one. A rank
two SeqNums ahead, in another operation, while the others wait in a broadcast too large for
the transport's buffers, never ran that broadcast: it diverged (collective-desync)."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.cut_lines import cut_error_ranks
from rootrank.engine import diagnose_paths
from rootrank.scan import ScanState

FIXTURES = Path(__file__).parent / "r23f6"


def _diag(name: str):
    return diagnose_paths([str(FIXTURES / name)], mask=False)


def test_a_rank_whose_error_line_the_paste_cuts_is_not_the_silent_rank():
    # ranks 0, 1, 3 print the watchdog timeout; rank 2's line stops inside its glog header
    # (before: rank 2, "the one known rank that did not report it")
    d = _diag("cut-error-line-4ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 3
    assert d.initiating_rank is None
    assert "cuts its error line" in d.initiator.why


def test_a_rank_with_no_line_at_all_is_still_the_one_the_others_waited_for():
    # the same paste with rank 2's cut line gone: ranks 0, 1, 3 of 0..3 reported
    d = _diag("silent-rank-4ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2


def test_dump_signal_receivers_with_nothing_outstanding_name_no_silent_rank():
    # ranks 1 and 4 received rank 6's dump signal with enqueued == completed (118): they were
    # not in the hung collective; rank 0 printed no error (before: rank 0)
    d = _diag("dump-signal-idle-receivers.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None


def test_a_partial_world_names_no_missing_reporter():
    # 8 workers stated, ranks 0-3 shown; 0, 2, 3 time out in BROADCAST SeqNum 2, rank 1 only
    # dies from PALS's teardown SIGTERM (before: rank 1)
    d = _diag("partial-world-8ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None


def test_the_same_gap_in_a_world_of_four_still_names_the_rank():
    d = _diag("whole-world-4ranks.log")
    assert d.root_cause is not None
    assert d.initiating_rank == 1


def test_cut_error_ranks_reads_only_lines_cut_before_their_message():
    st = ScanState()
    st.heads.append(
        (
            "x.log",
            1,
            "[rank2]:[E1203 04:11:52.1 ProcessGroupNCCL.cpp\n"
            "[rank5]:[E0101 00:00:01.2 ProcessGroupNCCL.cpp:1562] [PG ID 0 PG\n"
            "[rank1]:[E0101 00:00:01.2 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught\n"
            "[rank3]:[W0101 00:00:01.2 ProcessGroupNCCL.cpp\n",
        )
    )
    assert cut_error_ranks(st) == {2, 5}


def test_a_rank_past_a_large_broadcast_in_another_op_diverged():
    # ranks 1-3 wait in BROADCAST SeqNum 20481 (6291456 elements), rank 0 in ALLREDUCE 20483
    # (before: collective-timeout, no rank: "it completed the collective they are stuck in")
    d = _diag("ahead-of-large-broadcast-4ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.signature == "watchdog-optype-divergence"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 6


def test_a_rank_past_a_small_broadcast_may_have_finished_it_early():
    # the same with 2048 elements: its root may have completed it into the buffers
    d = _diag("ahead-of-small-broadcast-4ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_a_store_read_timeout_inside_the_training_step_is_no_set_up_failure():
    # a real run (tests/r23f6/store-read-in-train-step.train.py.txt, torchrun --nproc-per-node=2,
    # gloo): four steps, then rank 0's store.get in the data helper waits for rank 1, which ran
    # out of batches; the paste is cut before the exception line (before: "check the other
    # node(s) ... master address", verify `nc -zv`)
    d = _diag("store-read-in-train-step-cut.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-client-read-timeout"
    assert d.root_cause.evidence[0].line == 14
    assert _variant(d) == "in-training-step"
    text = " ".join(d.root_cause.fix.steps)
    assert "other node" not in text and "nc -zv" not in d.root_cause.verify
    assert "same number of batches" in text
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=gpu train.py  #")


def test_a_store_read_timeout_at_set_up_keeps_the_multi_node_advice():
    d = diagnose_paths(
        [str(FIXTURES.parent.parent / "signatures/launch/store-client-read-timeout.positive.log")],
        mask=False,
    )
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-client-read-timeout"
    assert _variant(d) == "general"
    assert "other node" in d.root_cause.fix.steps[0]


def test_an_oom_on_a_full_device_under_zero_stage_0_raises_the_stage():
    # 18.50 MiB free and 1.21 GiB reserved-unallocated of 39.38 GiB; DeepSpeed's dump says
    # zero_optimization_stage 0 (before: "fragmentation ... expandable_segments first")
    d = _diag("oom-full-zero0-2ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 19
    assert _variant(d) == "memory-full-zero-unsharded"
    assert '"stage": 2' in d.root_cause.fix.steps[0]
    assert "expandable_segments" not in d.root_cause.verify


def test_an_oom_on_a_full_device_already_at_zero_3_keeps_the_allocator_advice():
    # the same figures with ZeRO stage 3 in the dump: no stage to raise, the variant is not
    # chosen (the allocator's own fragmentation hint stays the first step)
    d = _diag("oom-full-zero3-2ranks.log")
    assert d.root_cause is not None
    assert _variant(d) == "fragmentation"


def test_an_oom_with_gibs_reserved_but_unallocated_is_still_fragmentation():
    # 7.13 GiB of 39.38 GiB reserved but unallocated
    d = _diag("oom-fragmented-2ranks.log")
    assert d.root_cause is not None
    assert _variant(d) == "fragmentation"


def test_memory_full_reads_the_allocators_own_figures():
    from rootrank.entry.variants import memory_full

    full = (
        "GPU 0 has a total capacity of 79.15 GiB of which 0 bytes is free. Of the allocated"
        " memory 77.90 GiB is allocated by PyTorch, and 602.00 MiB is reserved by PyTorch but"
        " unallocated."
    )
    assert memory_full(full) is not None
    assert memory_full(full.replace("602.00 MiB", "9.40 GiB")) is None
    assert memory_full(full.replace("0 bytes is free", "11.20 GiB is free")) is None
    assert memory_full("CUDA out of memory. Tried to allocate 20.00 MiB") is None


def test_fields_a_dump_signal_line_does_not_carry_leave_no_blanks():
    # the dump-signal line names no SeqNum and no timeout (before: "passes SeqNum <seqnum>")
    d = _diag("dump-signal-idle-receivers.log")
    assert d.root_cause is not None
    text = " ".join([*d.root_cause.fix.steps, d.root_cause.verify])
    assert "<seqnum>" not in text and "<timeout_ms>" not in text
    assert "passes the collective that timed out" in d.root_cause.verify


def test_unknown_record_fields_are_reworded_not_blanked():
    from rootrank.entry import render

    assert render("waited in {optype} SeqNum {seqnum} (x)", {}) == "waited in the collective (x)"
    assert render("# passes SeqNum {seqnum} cleanly", {}) == (
        "# passes the collective that timed out cleanly"
    )
    assert render("finish within the {timeout_ms} ms timeout", {}) == ("finish within the timeout")
    assert render("in ALLREDUCE SeqNum {seqnum}", {}) == "in ALLREDUCE"
    assert render("passes SeqNum {seqnum}", {"seqnum": 7}) == "passes SeqNum 7"
