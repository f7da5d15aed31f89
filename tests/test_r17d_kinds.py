"""Round-17d kinds of reasoning (held-out set /work/notes/heldout-r17d, now a development set).

The fixtures in ``tests/r17d/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

1. A script's own cross-rank check that raises with a per-rank table (``param checksums per
   rank: {0: x, 1: x, 2: x, 3: y}``): the odd one out in the table is the initiator, the raiser
   only the detector; differing replica weights are divergent-model-across-ranks
   (rootrank.analysis.compare.odd_in_table, signatures/collective/replica-check-table-differs.yaml).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.compare import odd_in_table
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
