"""Round-18b kinds of reasoning (held-out set /work/notes/heldout-r18b, now a development set).

The fixtures in ``tests/r18b/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

1. A collective's own check of one rank's buffers (gloo's ``[enforce fail at
   .../gloo/alltoall.cc:30] in->size == out->size``, ProcessGroupGloo's ``Check failed:
   outputShape[0] * worldSize == inputShape[0] (208 vs. 172)``) is a shape mismatch between
   ranks raised by the rank whose size is off, not a plain exception of the user's code
   (signatures/collective/gloo-local-size-check.yaml).
2. A user wrapper's time stamp in front of every line (``19:07:49 [rank0]: ...`` from an awk
   strftime filter, ``[2026-12-04 19:08:14] [rank0]: ...`` from a date loop,
   ``2026-12-04 19:20:01 | [rank0]:``) is peeled before the rank tags and the traceback's
   frames are read (rootrank.ranks._CLOCK_STAMP): the waiters' ranks are seen, so the one
   silent rank is found by the missing-reporter strategy, and the frames give file:line.
3. A rank that logs why it stops and exits with its own code (``ERROR ... rank 3: shard
   train-00003 has 3 labels outside [0, 10) ...; refusing to train`` then ``sys.exit(1)``):
   that logged reason is the cause, its class from its words (rootrank.analysis.logged),
   not the launcher's failed-child report.
4. A ``KeyError`` indexing a loaded checkpoint (``opt.load_state_dict(shard["optimizer"])``,
   ``p.data.copy_(ckpt[name])`` with a parameter's name as the key) is a key missing from that
   checkpoint: checkpoint-load-mismatch on the rank that loaded it
   (rootrank.analysis.prepare.checkpoint_key_errors); a ``load_shard`` indexing a table of
   data shards by rank is not.
5. A healthy run whose ranks each print their own end record (``rank 2: finished run
   r18b-13``) and then, at interpreter exit, an ``Exception ignored in: <function
   TempCache.__del__>`` traceback (Python printed and swallowed it) is no failure: the end is
   read from the kept tail when no gate word chose the records
   (rootrank.analysis.completed.tail_rank_ends), and an ignored exception after it does not
   undo it; a wrapper's dated stamp before a traceback's lines is peeled so the reader sees
   the "ignored" header.
6. Fix texts: a rank that left the loop and said it stopped on its own (``node1 rank 3 early
   stopping: val_loss 0.0036 < 0.02``) made a per-rank stop decision: make it collective
   (all_reduce a flag), not "even out the batches" (when-key ``rank_said``,
   rootrank.entry.hang_capture.rank_own_lines). A loop's ``batch["x"]`` that raises
   ``'NoneType' object is not subscriptable`` got a None batch from its collate_fn: drop_last
   and never return None from collate (user-code-exception variant ``none-batch``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

_DATA = Path(__file__).parent / "r18b"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# 1. a collective's own size check on one rank


def test_alltoall_enforce_is_a_shape_mismatch_of_the_raising_rank() -> None:
    d = diagnose_text(_read("02-rank1-alltoall-single-short-batch.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.root_cause.signature == "gloo-local-size-check"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 31
    assert "input_split_sizes" in d.root_cause.fix.steps[0]
    assert "pad the send tensor" in d.root_cause.fix.steps[0]


def test_reduce_scatter_check_failed_names_the_short_rank_and_zero_fill() -> None:
    d = diagnose_text(
        _read("11-spawn-rank2-reduce-scatter-missing-grad.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.root_cause.signature == "gloo-local-size-check"
    assert d.initiating_rank == 2
    assert "(208 expected, 172 passed)" in d.root_cause.fix.steps[0]
    assert "torch.zeros_like(p)" in d.root_cause.fix.steps[0]


# 2. a wrapper's time stamp before the launcher's prefix


def test_clock_stamp_before_rank_tags_finds_the_silent_rank() -> None:
    d = diagnose_text(_read("06-rank1-blocked-on-fifo-wrapper-ts.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "missing_reporter"
    # its own last line (behind the same stamp) is the phase it stopped in: the fix quotes it
    assert "waiting for shuffle seed on /tmp/r18b_06_ctl/rank1.fifo" in d.root_cause.fix.steps[0]


def test_dated_stamp_before_rank_tags_keeps_the_traceback_frames() -> None:
    d = diagnose_text(_read("08-rank0-none-batch-last-shard-ts.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank == 0
    frame = d.root_cause.user_frame
    assert frame is not None
    assert frame.file.endswith("08_shard_batches.py") and frame.line == 32


def test_wrapper_stamps_are_peeled_and_logger_headers_kept() -> None:
    t = RankTagger()
    lines = [
        ('2026-12-04 19:20:01 | [rank0]:   File "/a/train.py", line 3, in main', 0),
        ("[19:20:01.123] [rank2]: RuntimeError: x", 2),
        ("19:07:49 [rank 1] waiting for seed", 1),
        ('[2026-12-04 19:08:14] [rank0]:   File "x.py", line 32, in main', 0),
    ]
    got = [(t.tag(text, i).text, t.tag(text, i).rank) for i, (text, _) in enumerate(lines, 1)]
    assert got == [
        ('  File "/a/train.py", line 3, in main', 0),
        ("RuntimeError: x", 2),
        ("waiting for seed", 1),
        ('  File "x.py", line 32, in main', 0),
    ]
    # a dated stamp gives the line's time
    assert t.tag('[2026-12-04 19:08:14] [rank0]:   File "x.py"', 9).time is not None
    # a logger's own dated header is not a wrapper's stamp: read by the header parser as before
    assert t.tag("2026-12-04 19:20:01,123 INFO msg here", 10).text == "msg here"
    assert t.tag("[2026-12-03 21:16:06,500] [INFO] [launch.py:1] hello", 11).text == "hello"


# 3. a rank's logged reason before its own exit


def test_logged_refusal_before_sys_exit_is_the_cause_with_its_class() -> None:
    d = diagnose_text(_read("07-rank3-label-check-sys-exit.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.root_cause.signature == "logged-data-check-failed"
    assert d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == 8
    step = d.root_cause.fix.steps[0]
    assert "labels outside [0, 10)" in step and "relabel" in step
    assert "--log-dir" not in " ".join(d.root_cause.fix.steps)


def test_logged_reason_needs_the_ranks_own_exit_code() -> None:
    # the same ERROR line without the launcher's summary (the run not ended): no cause from it
    head = "\n".join(_read("07-rank3-label-check-sys-exit.log").split("\n")[:8])
    d = diagnose_text(head, "run.log", mask=False)
    assert d.root_cause is None or d.root_cause.signature != "logged-data-check-failed"


# 4. a KeyError indexing a loaded checkpoint


def test_keyerror_on_a_loaded_shard_is_a_checkpoint_mismatch_of_that_rank() -> None:
    d = diagnose_text(
        _read("05-rank2-shard-missing-optimizer-key-redirects.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.root_cause.signature == "checkpoint-missing-key"
    assert d.initiating_rank == 2
    assert d.root_cause.captures["key"] == "optimizer"
    assert d.root_cause.user_frame is not None and d.root_cause.user_frame.line == 18
    assert "re-export that checkpoint" in d.root_cause.fix.steps[0]


def test_keyerror_of_a_shard_table_by_rank_is_no_checkpoint() -> None:
    log = "\n".join(
        [
            "[rank2]: Traceback (most recent call last):",
            '[rank2]:   File "/home/user/proj/train.py", line 9, in load_shard',
            "[rank2]:     return SHARDS[rank]",
            "[rank2]: KeyError: 2",
        ]
    )
    d = diagnose_text(log, "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"


# 5. an exception Python ignored after every rank's end record


def test_ignored_finalizer_exception_after_every_ranks_end_is_healthy() -> None:
    d = diagnose_text(
        _read("13-healthy-store-wait-retries-del-exception.log"), "run.log", mask=False
    )
    assert d.root_cause is None
    assert any("[run_completed]" in r and "finished run r18b-13" in r for r in d.reasoning)


def test_a_traceback_not_ignored_after_the_end_records_is_still_a_failure() -> None:
    log = "\n".join(
        [
            "rank 0 step 10 loss 0.5",
            "rank 1 step 10 loss 0.6",
            "rank 0: finished run r1",
            "rank 1: finished run r1",
            "Traceback (most recent call last):",
            '  File "/home/user/train.py", line 20, in <module>',
            "    os.remove(path)",
            "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/cache_1'",
        ]
    )
    d = diagnose_text(log, "run.log", mask=False)
    assert d.root_cause is not None


# 6. the rank's own words choose the fix


def test_per_rank_early_stop_gets_a_collective_stop_decision() -> None:
    d = diagnose_text(_read("03-rank3-early-stop-break-two-nodes.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 3
    text = " ".join(d.root_cause.fix.steps)
    assert "Make the stop decision collective" in text
    assert "early stopping: val_loss 0.0036" in text
    assert "drop_last" not in text


def test_none_batch_from_collate_gets_drop_last_not_a_generic_template() -> None:
    d = diagnose_text(_read("08-rank0-none-batch-last-shard-ts.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 0
    step = d.root_cause.fix.steps[0]
    assert "never return None from collate_fn" in step and "drop_last=True" in step
