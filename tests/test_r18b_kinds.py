"""Round-18b kinds of reasoning (held-out set /work/notes/heldout-r18b, now a development set).

The fixtures in ``tests/r18b/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

1. A collective's own check of one rank's buffers (gloo's ``[enforce fail at
   .../gloo/alltoall.cc:30] in->size == out->size``, ProcessGroupGloo's ``Check failed:
   outputShape[0] * worldSize == inputShape[0] (208 vs. 172)``) is a shape mismatch between
   ranks raised by the rank whose size is off, not a plain exception of the user's code
   (signatures/collective/gloo-local-size-check.yaml).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

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
