"""The kinds of miss the r15c held-out runs showed, each on logs of real runs made for these
tests (torch 2.13 CPU, gloo; not the held-out runs) or on text in the tools' real shape:

A. a job relaunched by a shell loop (``until torchrun ...; do ...; done``) prints no banner of
   its own between launches: torchrun's failure summary is the failed launch's last output
   (the agent prints it after every worker exited), so training progress after it is the next
   launch's. The diagnosis is of the last launch: one that trained to its end leaves no root
   cause; one that failed again is diagnosed by its own fault, not the first launch's.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

ATTEMPTS = Path(__file__).resolve().parent / "attempts"

# -- A ------------------------------------------------------------------------------------


def test_a_a_relaunch_that_trained_to_its_end_leaves_no_root_cause():
    # launch 1: rank 1's config file not there yet (FileNotFoundError, torchrun's summary);
    # "job failed, resubmitting (1/3)"; launch 2: iter 1/6 .. iter 6/6, exit 0
    d = diagnose_paths([str(ATTEMPTS / "shell-relaunch-recovers.log")], mask=False)
    assert d.root_cause is None
    assert d.attempts == 2
    assert any("holds 2 runs" in r and "from line 60" in r for r in d.reasoning)
    assert "user-code-exception" not in {f.signature for f in d.findings}


def test_a_a_relaunch_that_failed_again_is_diagnosed_by_its_own_fault():
    # launch 2 trains iter 1-3, then rank 1 raises ZeroDivisionError (line 68)
    d = diagnose_paths([str(ATTEMPTS / "shell-relaunch-fails-again-mid-training.log")], mask=False)
    assert d.attempts == 2
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 68
    assert "ZeroDivisionError" in d.root_cause.evidence[0].text
