"""Round-17d kinds of reasoning (held-out set /work/notes/heldout-r17d, now a development set).

The fixtures in ``tests/r17d/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

1. A script's own cross-rank check that raises with a per-rank table (``param checksums per
   rank: {0: x, 1: x, 2: x, 3: y}``): the odd one out in the table is the initiator, the raiser
   only the detector; differing replica weights are divergent-model-across-ranks
   (rootrank.analysis.compare.odd_in_table, signatures/collective/replica-check-table-differs.yaml).
2. Compare what each rank printed: in lines where every rank prints its own slice, the one
   column where a single rank differs from all the others (``(10 records)`` against ``(8
   records)``) names it (rootrank.analysis.oddline._odd_column); a set-up error only one rank
   raised while the other ranks printed lines past it is that rank's own, not a race between
   identical failures (rootrank.analysis.initiator.went_further).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.compare import odd_in_table
from rootrank.analysis.oddline import _odd_column
from rootrank.engine import diagnose_text

_DATA = Path(__file__).parent / "r17d"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# 1. a detector's table names the culprit


def test_replica_checksum_table_names_the_odd_rank_not_the_raiser() -> None:
    d = diagnose_text(_read("09-eval-reseed-rank3-checksum-redirects.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "divergent-model-across-ranks"
    assert d.root_cause.signature == "replica-check-table-differs"
    assert d.initiating_rank == 3
    assert d.initiator is not None and d.initiator.strategy == "odd_in_rank_table"
    assert "-2.609431" in d.initiator.why and "the rank that raised only checked" in d.initiator.why
    assert "torch.Generator().manual_seed(seed + rank)" in d.root_cause.fix.steps[0]


def test_rank_table_needs_one_rank_apart() -> None:
    text = "RuntimeError: weights differ, checksums per rank: {0: 1.5, 1: 1.5, 2: 1.5, 3: 2.5}"
    assert odd_in_table(text) == (3, "2.5", "1.5")
    # a two-two split, two ranks, or no mention of ranks names no one
    assert odd_in_table("checksums per rank: {0: 1.5, 1: 1.5, 2: 2.5, 3: 2.5}") is None
    assert odd_in_table("checksums per rank: {0: 1.5, 1: 2.5}") is None
    assert odd_in_table("sizes: {0: 4, 1: 4, 2: 8}") is None


# 2. compare what each rank printed


def test_uneven_slice_count_names_the_rank_with_more_records() -> None:
    d = diagnose_text(_read("02-spawn-allgather-uneven-slice-rank2.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "odd_line_out"
    assert "`(10 records)`" in d.initiator.why and "`(8 records)`" in d.initiator.why


def test_odd_column_needs_one_rank_apart_in_every_telling_column() -> None:
    rows = {
        0: "records 0..7 (8 records)",
        1: "records 8..15 (8 records)",
        2: "records 16..25 (10 records)",
    }
    assert _odd_column(rows) == (2, "(10 records)", "(8 records)")
    # dp/tp coordinates single out different ranks in different columns: no one
    coords = {0: "dp_rank 0 tp_rank 0", 1: "dp_rank 0 tp_rank 1", 2: "dp_rank 1 tp_rank 0"}
    assert _odd_column(coords) is None
    # every rank its own slice and the same count: no one
    even = {
        0: "records 0..7 (8 records)",
        1: "records 8..15 (8 records)",
        2: "records 16..23 (8 records)",
    }
    assert _odd_column(even) is None


def test_setup_error_on_one_rank_while_the_others_went_on_is_that_ranks() -> None:
    d = diagnose_text(_read("04-two-nodes-tp-assert-labelled.log"), "run.log", mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "config-error"
    assert d.initiating_rank == 3
    assert d.initiator is not None and d.initiator.strategy == "named_by_root"
    assert "ranks 0-2 went on past it" in d.initiator.why


# 3. "not initialized" after the rank's own collectives ran: the group was destroyed


def test_not_initialized_after_steps_is_a_destroyed_group() -> None:
    d = diagnose_text(_read("10-probe-destroys-pg-rank1-distrun.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "process-group-destroyed-early"
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert "Remove the early dist.destroy_process_group()" in rc.fix.steps[0]
    assert "after its step 3" in rc.fix.steps[0]


def test_not_initialized_before_any_step_stays_a_missing_init() -> None:
    """Control: the same run cut to rank 1's traceback alone (lines 14-28): no step before
    it, no other rank: the missing initialisation's reading stands."""
    lines = _read("10-probe-destroys-pg-rank1-distrun.log").splitlines()[13:28]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "process-group-not-initialized"
    assert d.root_cause.failure_class == "config-error"


# 4. a handled error logged with its traceback, then the same rank's next steps: survived


def test_logged_emfile_then_every_rank_steps_on_is_healthy() -> None:
    """The tracebacks carry only torchrun's ``[defaultN]:`` tag while the steps' logger names
    ``[rank N]``: the tag learnt from the steps (rootrank.ranks.RankTagger._learn_app_rank)
    puts each traceback on its rank, whose next step shows it went on; a rank that caught
    EMFILE twice has both occurrences set aside (rootrank.analysis.survived.set_aside)."""
    d = diagnose_text(_read("12-healthy-emfile-cache-anomaly-tee.log"), "run.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    survived = [r for r in d.reasoning if "[error_survived]" in r]
    assert len(survived) == 8
    assert any("rank 2 went on to step 6 (line 75)" in r for r in survived)


def test_emfile_whose_rank_prints_no_later_step_stays_the_failure() -> None:
    """Control: the same run cut before rank 2's step 6 (line 75): rank 2's EMFILE at line 27
    has no later step of its rank, so it is not shown survived and stays the root cause."""
    lines = _read("12-healthy-emfile-cache-anomaly-tee.log").splitlines()[:74]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "too-many-open-files"
    assert d.root_cause.rank == 2


# 5. a pipe's clock-only stamp before torch's rank prefix


def test_clock_stamp_before_rank_prefix_keeps_the_traceback() -> None:
    """``[16:41:22] [rank2]: ...`` (torchrun piped through a strftime filter): the stamp is
    peeled (rootrank.ranks._CLOCK_STAMP), so the traceback is rank 2's and its frames are read."""
    d = diagnose_text(_read("08-indexer-rank2-emfile-timestamped.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "too-many-open-files"
    assert d.initiating_rank == 2
    assert rc.user_frame is not None
    assert rc.user_frame.file.endswith("08_index_shards.py") and rc.user_frame.line == 27


# 2b. a per-rank config value that differs on the failing rank leads the fix


def test_config_dict_lr_apart_on_the_failing_rank_leads_the_fix() -> None:
    """``[rank2] INFO config {'lr': 30000.0, ...}`` where ranks 0, 1, 3 logged ``'lr': 0.0003``
    (rootrank.scan._DICT_SETTING, rootrank.scan.odd_setting): the first step names it."""
    d = diagnose_text(_read("11-perrank-config-lr-inf-clip-tee-logdir.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and d.initiating_rank == 2
    # every rank raised on the all-reduced norm: the setting only rank 2 had names it
    # (rootrank.analysis.initiator.odd_setting_out), not which rank's traceback came first
    assert d.initiator.strategy == "odd_setting_out"
    assert (
        "rank 2 printed lr 30000.0 where ranks 0, 1, 3 printed 0.0003 (line 6)" in d.initiator.why
    )
    assert rc.fix.steps[0].startswith("Rank 2 ran with another setting than every other rank")
    assert "lr 30000.0 on rank 2, 0.0003 on ranks 0, 1, 3 (line 6" in rc.fix.steps[0]


def test_without_the_odd_config_line_the_fix_does_not_lead_with_it() -> None:
    """Control: the same run from line 7 on (rank 2's config line, line 6, cut away)."""
    lines = _read("11-perrank-config-lr-inf-clip-tee-logdir.log").splitlines()[6:]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert not any("ran with another setting" in s for s in rc.fix.steps)
    assert d.initiator.strategy != "odd_setting_out"


def test_set_up_setting_no_signature_word_is_on_leads_the_fix() -> None:
    """``[node1] rank 3/4 host vm TP_SIZE=3`` where ranks 0-2 printed ``TP_SIZE=2``, and
    ``[16:41:22] INFO shards rank2: RLIMIT_NOFILE soft=256`` where the others printed 20000:
    set-up lines the gate passes by (no signature's word), read from the sources' heads
    (rootrank.ranklines.rank_settings); the failing rank's own value apart leads the fix."""
    d = diagnose_text(_read("04-two-nodes-tp-assert-labelled.log"), "run.log", mask=False)
    assert d.initiating_rank == 3 and d.root_cause is not None
    assert d.root_cause.fix.steps[0].startswith(
        "Rank 3 ran with another setting than every other rank: TP_SIZE 3 on rank 3, 2 on"
        " ranks 0, 1, 2 (line 11"
    )
    d = diagnose_text(_read("08-indexer-rank2-emfile-timestamped.log"), "run.log", mask=False)
    assert d.initiating_rank == 2 and d.root_cause is not None
    assert d.root_cause.signature == "too-many-open-files"
    assert "soft 256 on rank 2, 20000 on ranks 0, 1, 3 (line 8" in d.root_cause.fix.steps[0]


def test_a_set_up_setting_every_rank_shares_leads_nothing() -> None:
    """Control: the same run with rank 3's line saying ``TP_SIZE=2`` like the others."""
    text = _read("04-two-nodes-tp-assert-labelled.log").replace(
        "rank 3/4 host vm TP_SIZE=3", "rank 3/4 host vm TP_SIZE=2"
    )
    d = diagnose_text(text, "run.log", mask=False)
    assert d.root_cause is not None
    assert not any("ran with another setting" in s for s in d.root_cause.fix.steps)


# 6. a RecursionError in a resolver: a cycle in the data it walks


def test_recursion_in_a_resolver_is_a_reference_cycle_in_the_data() -> None:
    d = diagnose_text(_read("03-recursion-stage3-spec-distrun-tee.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "recursion-limit" and d.initiating_rank == 3
    assert rc.fix.variant is not None and rc.fix.variant.id == "reference-cycle"
    assert "a cycle in the data" in rc.fix.steps[0]
    assert "03_pipeline_stages.py:24 (in resolve)" in rc.fix.steps[0]


def test_recursion_outside_a_resolver_keeps_the_general_fix() -> None:
    """Control: the signature's own positive fixture (no resolver frame)."""
    root = Path(__file__).parent.parent / "signatures" / "python"
    text = (root / "recursion-limit.positive.log").read_text(encoding="utf-8")
    d = diagnose_text(text, "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "recursion-limit"
    assert not any("a cycle in the data" in s for s in rc.fix.steps)


# 6b. a ZeroDivisionError by a scale computed from tensor data


def test_zero_scale_in_a_comm_hook_guards_the_data_divisor() -> None:
    d = diagnose_text(_read("07-spawn-commhook-zero-scale-rank1.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "user-code-exception" and d.initiating_rank == 1
    assert rc.fix.variant is not None and rc.fix.variant.id == "zero-data-divisor"
    assert (
        "`inv_scale = 1.0 / scale` divides by a value computed from tensor data" in rc.fix.steps[0]
    )
    assert "07_spawn_int8_hook.py:15 (in int8_allreduce_hook)" in rc.fix.steps[0]


# 6c. autograd anomaly: the forward trace names the line that made the NaN


def test_anomaly_forward_trace_names_the_forward_line_not_backward() -> None:
    """The unprefixed anomaly warning's forward stack ends at ``01_anomaly_train.py:20``
    (``torch.log(duration)``); rank 1's own traceback ends at ``loss.backward()`` (:46). The
    exception naming the same backward function takes the forward frame
    (rootrank.scan.Scanner._forward_trace)."""
    d = diagnose_text(_read("01-anomaly-log-zero-duration-rank1.log"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "anomaly-nan-in-backward" and d.initiating_rank == 1
    assert rc.user_frame is not None and rc.user_frame.line == 20
    assert rc.user_frame.func == "forward"
    assert rc.fix.steps[0].startswith("01_anomaly_train.py:20 (in forward)")


def test_anomaly_without_its_forward_trace_keeps_the_backward_line() -> None:
    """Control: the same run from rank 1's traceback on (line 56): no forward trace in the
    log, so the location is rank 1's own user frame, ``loss.backward()`` at :46."""
    lines = _read("01-anomaly-log-zero-duration-rank1.log").splitlines()[55:]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "anomaly-nan-in-backward"
    assert rc.user_frame is not None and rc.user_frame.line == 46
