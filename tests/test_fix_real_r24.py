"""Round 24 (issue 15, fixes that fix the run): three kinds of fix that asserted a cause the
log does not show, or missed the one it does.

- A rank the others waited for that printed nothing of its own (the analysis names it, the log
  holds no line of it): the fix says what the log shows and what tells "its own code held it"
  from "its GPU or process stalled" (``nccl-watchdog-timeout`` ``initiating-rank-silent``),
  where the older text asserted work only that rank does.
- ``ValueError: too many values to unpack (expected N)`` at a line unpacking a tensor's shape
  (``bsz, src_len = mask.size()``): the tensor has another number of dimensions, made by the
  caller (``user-code-exception`` ``unpack-shape`` / ``unpack-shape-passed-in``). Both logs are
  real torch 2.13 CPU/gloo runs: ``torchrun --nproc-per-node=2`` of tests/r24_real/pack_train.py
  and tests/r24_real/seg_train.py.
- One of the first collectives timed out just after a model's checkpoint shards were still
  loading: the wait is a peer's load, not the rank-0 work or the link
  (``nccl-watchdog-timeout`` ``peer-still-loading``); the text quotes the loading line the
  variant rests on, not the nearest other progress bar.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).resolve().parent / "fix_variants"


def test_a_silent_rank_gets_what_the_log_shows_and_the_check_that_decides():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "initiating-rank-silent.log")])
    rc = d.root_cause
    assert d.initiating_rank == 2 and rc.failure_class == "collective-timeout"
    assert rc.fix.variant.id == "initiating-rank-silent"
    assert rc.fix.steps[0].startswith(
        "What the log shows: rank 2 never reached ALLREDUCE SeqNum 51207, where the others waited"
    )
    assert "dmesg -T | grep -i xid" in rc.fix.steps[1]
    assert not any("Work that only rank" in s for s in rc.fix.steps)


def test_a_rank_with_its_own_line_before_the_hang_keeps_the_rank_only_work_fix():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "rank-never-joined.log")])
    assert d.initiating_rank == 0
    assert d.root_cause.fix.variant.id == "rank-never-joined"


def test_unpacking_a_shape_names_the_caller_that_passed_the_tensor():
    d = diagnose_paths([str(HERE / "user-code-exception" / "unpack-shape-passed-in.log")])
    rc = d.root_cause
    assert rc.failure_class == "user-code-exception" and rc.evidence[0].line == 18
    assert rc.fix.variant.id == "unpack-shape-passed-in"
    step = rc.fix.steps[0]
    assert "`bsz, seq_len = mask.size()`" in step
    assert "pack_train.py:23 (in main) passes `mask`" in step
    assert "another number of dimensions" in step


def test_unpacking_a_shape_with_a_call_cut_at_its_paren_points_at_the_caller_frame():
    d = diagnose_paths([str(HERE / "user-code-exception" / "unpack-shape.log")])
    rc = d.root_cause
    assert rc.failure_class == "user-code-exception" and rc.evidence[0].line == 27
    assert rc.fix.variant.id == "unpack-shape"
    assert "`bsz, src_len = mask.size()`" in rc.fix.steps[0]
    assert "the frame above it in the traceback" in rc.fix.steps[0]


def test_a_first_collective_timeout_after_a_load_names_the_load_it_quotes():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "peer-still-loading.log")])
    rc = d.root_cause
    assert rc.failure_class == "collective-timeout" and rc.evidence[0].line == 4
    assert rc.fix.variant.id == "peer-still-loading"
    assert "Loading checkpoint shards:  33%" in rc.fix.steps[0]
    assert "local disk" in rc.fix.steps[0]
