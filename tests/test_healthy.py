"""Full runs that succeeded (with the usual frightening warnings) yield no root cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths

HEALTHY = sorted((Path(__file__).parent / "healthy").glob("*.log"))


def test_there_are_healthy_logs():
    assert len(HEALTHY) >= 4


@pytest.mark.parametrize("log", HEALTHY, ids=lambda p: p.name)
def test_healthy_run_has_no_root_cause(log):
    diag = diagnose_paths([str(log)], mask=False)
    assert diag.root_cause is None, (diag.root_cause or {}).get("signature")
    assert diag.unclassified is None
