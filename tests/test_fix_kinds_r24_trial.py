"""New-user trial r24 kinds (/work/notes/trial-r24.md), each on a real torch 2.13 CPU run (or
a real bash job) captured for it (tests/r24_trial, the scripts beside the logs as ``*.txt``):

- a traceback from the script's top level (``<module>``) printed by a top-level retry loop's
  ``traceback.print_exc()``, after which every rank's lines come written as printed (broken up
  by the other ranks' lines) up to the run's end, was survived: no failure, exit 1; a rank that
  died of one and whose steps were flushed after it as one block stays a failure;
- ``rootrank eval`` counts an unclassified failure (exit 3) on a healthy log as a claim;
- the per-rank count that singles the rank out is quoted in the Fix and the reasoning;
- bash's ``Bus error`` report: the root cause is worded as likely, the first step says what
  decides it, and the verify is the command bash quoted.
"""

from __future__ import annotations

import json
from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.evaluate import evaluate

HERE = Path(__file__).parent / "r24_trial"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_top_level_retry_then_every_rank_finished_is_no_failure():
    # before: "Unclassified failure: TimeoutError ..." (exit 3)
    d = _diag(HERE / "toplevel_retry_then_finished.log")
    assert d.root_cause is None
    assert d.unclassified is None
    assert any("[run_completed]" in r for r in d.reasoning)
    assert any("toplevel_retry_then_finished.log:28" in r for r in d.reasoning)


def test_top_level_death_with_steps_flushed_after_it_stays_a_failure():
    # rank 2 died at the top level after its loop; rank 1's buffered steps came after the
    # traceback as one block (the launcher's report cut off): not survived
    d = _diag(HERE / "toplevel_death_buffered_cut.log")
    assert d.root_cause is None
    assert d.unclassified is not None
    assert d.unclassified.rank == 2
    assert d.unclassified.evidence[0].line == 21


def _case(root: Path, name: str, log: Path, label: dict) -> None:
    case = root / name
    case.mkdir()
    (case / "input.log").write_bytes(log.read_bytes())
    (case / "expected.json").write_text(json.dumps(label))


def test_eval_counts_an_unclassified_failure_on_a_healthy_log_as_a_claim(tmp_path):
    healthy = {"failure_class": "healthy", "initiating_rank": None}
    _case(tmp_path, "died", HERE / "toplevel_death_buffered_cut.log", healthy)
    _case(tmp_path, "finished", HERE / "toplevel_retry_then_finished.log", healthy)
    report = evaluate([str(tmp_path)])
    got = {c.name: c.got_class for c in report.cases}
    assert got == {"died": "unclassified", "finished": None}
    assert report.healthy_claims == 1
    assert report.to_dict()["healthy_claims"] == 1


def test_the_count_that_singles_the_rank_out_is_quoted_in_fix_and_reasoning():
    # rank 0 printed "3584 rows, 7 batches" where ranks 1 and 2 printed "4096 rows, 8"
    d = _diag(HERE / "short_shard_leaves_loop.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 0
    steps = d.root_cause.fix.steps
    assert any("`3584 rows, 7`" in s and "`4096 rows, 8`" in s for s in steps)
    assert "(line 7: `shard ready: 3584 rows, 7 batches`)" in steps[1]
    assert any("3584 rows" in r for r in d.reasoning)
    assert d.initiator is not None and "3584 rows" in d.initiator.why


def test_bash_bus_error_verify_is_the_quoted_command_and_cause_is_not_asserted():
    d = _diag(HERE / "shell_bus_error_truncated_mmap.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shell-job-sigbus"
    assert d.root_cause.evidence[0].line == 6
    assert d.root_cause.verify.startswith(
        "/work/main/.venv/bin/python mmap_reader.py --shard tokens.bin  # "
    )
    assert "df " not in d.root_cause.verify
    assert "likely" in d.root_cause.title
    assert d.root_cause.fix.steps[0].startswith("Check `df -h /dev/shm`")
    assert any("memory-mapped file" in s for s in d.root_cause.fix.steps)


def test_pool_child_killed_without_faulthandler_is_the_childs_death_not_user_code():
    # the positive fixture of signatures/process/process-pool-child-died: rank 1's
    # fork-context pool child segfaulted with no faulthandler dump
    sig = Path(__file__).parent.parent / "signatures" / "process"
    d = _diag(sig / "process-pool-child-died.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "process-pool-child-died"
    assert d.root_cause.failure_class == "segfault"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 17
    assert d.root_cause.verify.startswith(
        "PYTHONFAULTHANDLER=1 torchrun --nproc-per-node=2 forkpool.py"
    )
    # a child's Python exception comes back as itself: not this signature
    near = _diag(sig / "process-pool-child-died.near-miss.log")
    assert near.root_cause is not None
    assert near.root_cause.signature != "process-pool-child-died"


def test_top_level_retry_under_tee_with_launcher_local_rank_tags_is_no_failure():
    # trial r24b finding 1: a real `torchrun --tee 3` run (the launcher's `[defaultN]:` tags,
    # no global rank on any line); rank 1 printed a caught top-level traceback and went on.
    # The exception line's own tag names rank 1, whose later lines come in several runs between
    # the others': survived (before: "Unclassified failure", exit 3)
    d = _diag(HERE / "tee_retry_default_prefix.log")
    assert d.root_cause is None
    assert d.unclassified is None
    assert any("[run_completed]" in r for r in d.reasoning)
    assert any("tee_retry_default_prefix.log:24" in r for r in d.reasoning)
