"""Kinds left from the held-out r20e set, each with fixtures captured from real runs (torch
2.13 CPU, gloo, torchrun; the scripts' own names and values):

- a hang at a step whose branch differed on one rank, ended by its collectives' timeout or
  by a stop from outside (``tests/fix_variants/step-branch-divergence/stopped-while-hung.log``; ``signatures/collective/
  step-branch-divergence.{positive,near-miss}.log``: four ranks, two overlapping subgroups
  reduced in one order, and rank 1's step with audio frames reducing them in the other; the
  near-miss is the same job with rank 1 asleep at that step instead, printing nothing);
- a scatter/gather whose root's list was passed by another rank, or by none
  (``signatures/collective/c10d-root-list-on-wrong-rank.positive.log``: two torchrun agents,
  ``LOCAL_RANK == 0`` deciding the leader; ``tests/fix_variants/c10d-root-list-on-wrong-rank/``);
- Dynamo's recompile limit made an error (``tests/fix_variants/dynamo-unsupported/
  recompile-limit.log``: dynamic padding, ``fail_on_recompile_limit_hit``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = ROOT / "signatures" / "collective"
VARIANTS = Path(__file__).resolve().parent / "fix_variants"


def _diagnose(path: Path):
    d = diagnose_paths([str(path)])
    assert d.root_cause is not None
    return d, d.root_cause


def test_a_step_whose_branch_differed_on_one_rank_is_a_desync_of_that_rank():
    d, rc = _diagnose(SIGNATURES / "step-branch-divergence.positive.log")
    assert (rc.signature, rc.failure_class) == ("step-branch-divergence", "collective-desync")
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 38  # rank 1's own timeout
    assert d.initiator is not None and d.initiator.strategy == "odd_step_line"
    # the reason quotes the words that differ, and the line rank 1 printed them on
    why = d.initiator.why
    assert "`audio_frames=81 reduce_order=dec>enc`" in why
    assert "`audio_frames=0 reduce_order=enc>dec`" in why and "line 14" in why
    assert rc.fix.steps[0].startswith(
        "asr_train.py:23 (in main), where rank 1 was in all_reduce: Rank 1's step issued"
    )


def test_a_rank_a_step_behind_is_no_branch_but_the_missing_reporter():
    d, rc = _diagnose(SIGNATURES / "step-branch-divergence.near-miss.log")
    assert rc.signature == "gloo-collective-timeout"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy != "odd_step_line"


def test_the_first_node_process_of_node_1_passing_the_scatter_list_is_told_of_local_rank():
    d, rc = _diagnose(SIGNATURES / "c10d-root-list-on-wrong-rank.positive.log")
    assert rc.signature == "c10d-root-list-on-wrong-rank"
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 67
    assert rc.fix.variant.id == "general"
    assert "LOCAL_RANK == 0" in rc.fix.steps[0] and "dist.get_rank() == 0" in rc.fix.steps[0]
    assert "--nnodes=2" in rc.verify  # the job's two agents, rerun as they ran


def test_the_root_and_the_list_on_different_ranks_is_one_value_for_both():
    d, rc = _diagnose(VARIANTS / "c10d-root-list-on-wrong-rank" / "list-on-another-rank.log")
    assert rc.fix.variant.id == "list-on-another-rank"
    assert d.initiating_rank == 0
    assert "rank 0 built gather_list" in rc.fix.steps[0]


def test_no_rank_passing_the_root_list_names_the_root():
    d, rc = _diagnose(VARIANTS / "c10d-root-list-on-wrong-rank" / "root-missing-list.log")
    assert rc.fix.variant.id == "root-missing-list"
    assert d.initiating_rank == 2
    assert (
        "Rank 2 is the destination rank of the call but passed no gather_list" in (rc.fix.steps[0])
    )


def test_the_recompile_limit_made_an_error_is_shape_churn_not_untraceable_code():
    d, rc = _diagnose(VARIANTS / "dynamo-unsupported" / "recompile-limit.log")
    assert rc.signature == "dynamo-unsupported" and rc.fix.variant.id == "recompile-limit"
    assert rc.title.startswith("torch.compile hit its recompile limit")
    assert "torch._dynamo.mark_dynamic(ids, 1)" in rc.fix.steps[0]
    assert rc.verify.startswith("TORCH_LOGS=recompiles python train_pad.py  #")
    assert rc.user_frame is not None and rc.user_frame.line == 28


def test_a_hang_a_stop_ended_is_the_branch_not_the_stop():
    """The same job with no collective timeout shorter than the run (the subgroups kept the
    default 30 minutes): it hung at it=2 and ``timeout 120`` sent torchrun's agent SIGTERM. The
    stop is collateral; the root is the step whose branch differed on rank 1."""
    d, rc = _diagnose(VARIANTS / "step-branch-divergence" / "stopped-while-hung.log")
    assert (rc.signature, rc.failure_class) == ("step-branch-divergence", "collective-desync")
    assert rc.fix.variant.id == "stopped-while-hung"
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 16  # [rank1] it=2 audio_frames=81 reduce_order=dec>enc
    assert "agent-received-signal" in {c.signature for c in d.collateral}
    assert "new_group(..., timeout=...)" in rc.fix.steps[1]


EPOCHS = Path(__file__).resolve().parent / "r21"


def test_the_rank_that_began_the_next_epoch_alone_before_gloos_abort_is_the_initiator():
    """A real run (torch 2.13, gloo, three ranks): rank 1's F1 over an empty shard raised
    ZeroDivisionError, which the script swallowed, skipping the metric all_reduce; rank 1 began
    epoch 1 while ranks 0 and 2 were in epoch 0's metric all_reduce, and gloo aborted on rank 0
    (``172 vs 4``), which torchrun's summary blames. The rank that went ahead is the one."""
    d, rc = _diagnose(EPOCHS / "epoch-ahead-swallowed-metric.log")
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "ahead_in_epoch"
    assert "rank 1 began epoch 1 (line 8" in d.initiator.why
    assert "ranks 0, 2 were still in epoch 0" in d.initiator.why
    # sizes far apart (a gradient against a one-value metric) with a rank that ran fewer
    # steps: the ranks ran different collectives
    assert (rc.signature, rc.failure_class) == ("gloo-size-count-divergence", "collective-desync")


def test_no_rank_is_ahead_when_every_rank_began_the_epoch():
    d, _ = _diagnose(EPOCHS / "epoch-all-began-near-miss.log")
    assert d.initiator is None or d.initiator.strategy != "ahead_in_epoch"
