"""A rank whose printed list of names lacks entries every other rank has is the odd one
(rootrank.analysis.compare.lacking_keys): mmdet's cross-rank loss check prints each rank's
loss keys (mmdet/models/detectors/base.py, ``_parse_losses``). Fixtures written here in
that shape: the assertion, then each rank's ``rank N len(log_vars): K keys: ...`` line."""

from __future__ import annotations

from rootrank.engine import diagnose_text

FULL = "loss_rpn_cls,loss_rpn_bbox,s0.loss_cls,s0.acc,s0.loss_bbox,s1.loss_cls,s1.acc,s1.loss_bbox"


def _report(rank: int, keys: str) -> str:
    n = len(keys.split(","))
    return (
        "AssertionError: loss log variables are different across GPUs!\n"
        f"rank {rank} len(log_vars): {n} keys: {keys}\n\n"
    )


def test_of_two_ranks_the_one_lacking_losses_is_named():
    text = _report(1, "loss_rpn_cls,loss_rpn_bbox,s0.loss_bbox") + _report(0, FULL)
    d = diagnose_text(text, mask=False)
    assert d.root_cause.signature == "loss-log-vars-differ"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 2
    assert d.initiator.strategy == "odd_value_out"
    assert "lacks s0.acc, s0.loss_cls, s1.acc, s1.loss_bbox, s1.loss_cls" in d.initiator.why


def test_lists_that_differ_by_names_of_their_own_name_no_rank():
    """Rank 1 has a key rank 0 lacks and the other way round: neither is a subset, so the
    log does not say which rank lost its losses."""
    other = FULL.replace("s1.acc", "s1.loss_mask")
    d = diagnose_text(_report(1, other) + _report(0, FULL), mask=False)
    assert d.root_cause.signature == "loss-log-vars-differ"
    assert d.initiating_rank is None


def test_among_four_ranks_the_single_short_list_is_named():
    text = "".join(
        _report(r, "loss_rpn_cls,loss_rpn_bbox" if r == 3 else FULL) for r in (0, 1, 2, 3)
    )
    d = diagnose_text(text, mask=False)
    assert d.initiating_rank == 3
