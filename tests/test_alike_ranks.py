"""The same failure on several ranks with no initiating rank named (round 17 trial, finding 7):
the fix speaks of every rank that raised it, not of the first copy's rank, and the report does
not call the other ranks' copies the root's effects.

Fixture: a real torchrun run (torch 2.13, gloo, two ranks) where every rank reads an empty
``DATALOADER_WORKERS`` and raises the same ``ValueError``
(tests/fix_variants/user-code-exception/env-value-unparseable.log).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.report import to_text

LOG = (
    Path(__file__).resolve().parent
    / "fix_variants"
    / "user-code-exception"
    / "env-value-unparseable.log"
)


def test_same_error_on_two_ranks_names_both_and_is_not_collateral_of_one():
    d = diagnose_text(LOG.read_text(encoding="utf-8"), "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert d.initiating_rank is None
    assert rc.fix.steps[0].startswith(
        "loader_env.py:11 (in main), where ranks 0 and 1 raised ValueError:"
    )
    text = to_text(d)
    same = [ln for ln in text.splitlines() if ln.startswith("  - A plain Python exception")]
    assert len(same) == 1
    assert same[0].endswith(
        "(the same failure as the root cause's; the log does not tell which rank was first)"
    )
    # another signature's lines stay plain collateral
    agent = [ln for ln in text.splitlines() if "torchrun agent stopped" in ln]
    assert agent and "the same failure" not in agent[0]
