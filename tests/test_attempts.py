"""Runs appended to one log (``tee -a``, a relaunch after a failure): the diagnosis is about
the run that ended the job, and says how many runs the log holds."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

HERE = Path(__file__).resolve().parent / "attempts"


def test_the_last_run_is_diagnosed_and_the_first_runs_fault_left_out():
    d = diagnose_paths([str(HERE / "two-runs-appended.log")], mask=False)
    assert d.attempts == 2
    assert d.root_cause.signature == "checkpoint-file-missing"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 12
    assert "cuda-oom" not in {f.signature for f in d.findings}
    assert any("holds 2 runs" in r and "from line 7" in r for r in d.reasoning)
    assert d.to_dict()["attempts"] == 2


def test_a_launch_banner_before_any_failure_is_not_a_new_run():
    text = (HERE / "two-runs-appended.log").read_text()
    first_run_only = "\n".join(text.splitlines()[:6]) + "\n"
    d = diagnose_text(first_run_only, mask=False)
    assert d.attempts == 1
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 1


def test_a_later_run_that_succeeded_leaves_no_root_cause():
    text = (HERE / "two-runs-appended.log").read_text().splitlines()
    healthy_rerun = text[:8] + [
        "[rank0]: step 100 loss 1.23",
        "[rank1]: step 100 loss 1.24",
        "training finished",
    ]
    d = diagnose_text("\n".join(healthy_rerun) + "\n", mask=False)
    assert d.attempts == 2
    assert d.root_cause is None and d.unclassified is None
