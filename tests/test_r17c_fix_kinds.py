"""Round 17, set C (a development set now): the kinds of reasoning its misses showed, each by
its mechanism.

Fixtures in ``tests/r17c_fix/`` are written for these tests in the tools' own wording (srun -l's
``N:`` prefix, NCCL's ``NET/IB`` warnings, Slurm's cancellation lines, horovodrun's
``[N]<stderr>:`` tags) with values of our own; none is a held-out log.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

DATA = Path(__file__).parent / "r17c_fix"


def test_lone_reporter_of_ib_retry_exceeded_is_the_initiator():
    """srun -l, 4 ranks on 2 nodes: only rank 3 gets NET/IB's completion error 12 (retry
    counter exceeded) on its own NIC; the other ranks print nothing of their own failing (they
    go on or wait) until Slurm's time limit. The peer is one of the job's live processes, so
    the path rank 3's NIC saw fail is the one to act on: rank 3 initiates."""
    d = diagnose_paths([str(DATA / "ib-retry-exceeded-lone-reporter-srun.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "ib-completion-error",
        "network-fabric-error",
        12,
    )
    assert d.initiating_rank == 3


def test_ib_retry_exceeded_after_another_ranks_own_crash_names_no_rank(tmp_path):
    """The same log where rank 1 raised its own error before rank 3's warning: the peer that
    stopped answering may be rank 1's process, so the reporter is not named."""
    lines = (DATA / "ib-retry-exceeded-lone-reporter-srun.log").read_text().splitlines()
    crash = [
        "1: Traceback (most recent call last):",
        '1:   File "/home/u/train.py", line 41, in <module>',
        "1:     loss = model(batch).sum()",
        "1: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        " (GPU 1; 39.59 GiB total capacity; 37.10 GiB already allocated; 1.02 GiB free;"
        " 37.50 GiB reserved in total by PyTorch)",
    ]
    p = tmp_path / "crash-first.log"
    p.write_text("\n".join(lines[:11] + crash + lines[11:]) + "\n")
    d = diagnose_paths([str(p)], mask=False)
    assert d.initiating_rank != 3


def test_horovodrun_rank_tags_and_first_death_make_gloo_resets_collateral():
    """horovodrun (Gloo mode) tags each line ``[N]<stdout>:`` / ``[N]<stderr>:`` with the rank
    (one number; Open MPI's --tag-output has two, ``[1,N]``). Rank 2 is ``Killed`` first; ranks
    0 and 1 then abort on gloo's ``Connection reset by peer`` / ``Connection closed by peer``:
    the consequence of rank 2's death, not a cause."""
    d = diagnose_paths([str(DATA / "horovodrun-rank2-killed-gloo-reset.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.rank, rc.evidence[0].line) == ("host-oom-killed", 2, 4)
    assert d.initiating_rank == 2
    resets = [f for f in d.findings if f.signature == "connection-reset-by-peer"]
    assert sorted(f.rank for f in resets) == [0, 1]
    assert all(f.role == "symptom" for f in resets)


def test_srun_right_aligned_labels_name_the_rank_and_slurmstepd_lines_none():
    """``srun --label`` right-aligns task ids to the widest (`` 7: `` among ``11: ``): the
    padded label is the task's rank like an unpadded one. slurmstepd's cancellation, which
    srun forwards under task 0's label, is the node daemon's, not rank 0's."""
    from rootrank.ranks import RankTagger

    t = RankTagger()
    assert t.tag("11: step 100 loss 3.2120", 1).rank == 11
    assert t.tag(" 7: step 100 loss 3.2120", 2).rank == 7
    assert t.tag("  3: step 1", 3).rank == 3
    assert t.tag("    return loss", 4).rank is None
    stepd = " 0: slurmstepd: error: *** STEP 55120.0 ON gpu011 CANCELLED AT 2026-01-14T09:12:40 ***"
    assert t.tag(stepd, 5).rank is None
    d = diagnose_paths([str(DATA / "srun-label-padded-rank7-oom.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.rank, rc.evidence[0].line) == ("cuda-oom", 7, 8)
    assert d.initiating_rank == 7


HANG = DATA / "srun-epoch3-rank4-never-started-timelimit.log"


def test_time_limit_after_a_rank_never_started_the_new_section_is_a_hang_on_that_rank():
    """srun -l, 6 ranks, epochs of 3 steps printed without a time: in epoch 3 five ranks print
    step 1 and rank 4 never does; nothing more until Slurm's time limit. The job hung on rank 4
    (the others wait in step 1's collective): a hang naming rank 4, not "request more time"."""
    d = diagnose_paths([str(HANG)], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class, rc.rank, rc.evidence[0].line) == (
        "progress-stalled",
        "collective-timeout",
        4,
        34,
    )
    assert d.initiating_rank == 4
    assert any(r.startswith("Rank 4 never printed the step") for r in d.reasoning)


def test_time_limit_after_every_rank_started_the_new_section_stays_the_time_limit(tmp_path):
    """The same run where rank 4 also printed epoch 3's step 1: no rank was left behind, and
    without times the silence before the limit cannot be measured: the time limit stays."""
    lines = HANG.read_text().splitlines()
    at = lines.index("1: [rank 1] epoch 3 step 1/3")
    p = tmp_path / "all-started.log"
    p.write_text(
        "\n".join([*lines[: at + 1], "4: [rank 4] epoch 3 step 1/3", *lines[at + 1 :]]) + "\n"
    )
    d = diagnose_paths([str(p)], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "slurm-time-limit"


def test_untimed_tracebacks_are_not_ordered_by_a_ranks_stale_startup_stamp():
    """Two ranks' untimed checkpoint-write tracebacks (ENOSPC) printed after the job's 09:08:52
    progress line: rank 1's own last stamp is a 09:02:11 startup warning, rank 0's a 09:04:30
    one. Both tracebacks come after 09:08:52 (the stream is in time order), so their lower
    bounds tie and the disk-full error, which every writer hits, names no rank."""
    d = diagnose_paths([str(DATA / "ckpt-enospc-untimed-tracebacks-two-ranks.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.evidence[0].line) == ("disk-full", 9)
    assert d.initiating_rank is None
    disk = sorted(f.rank for f in d.findings if f.failure_class == "disk-full")
    assert disk == [0, 1]


def test_fsdp_auto_wrap_layer_class_not_found_is_a_wrapping_error():
    """accelerate's set_auto_wrap_policy raising "Could not find the transformer layer class
    MistralDecoderLayer in the model." is FSDP's wrap configuration (a class name the model
    lacks), not a plain exception of the user's code: the fix names the wrap class list."""
    fixture = Path(__file__).resolve().parents[1] / "signatures" / "parallel"
    d = diagnose_paths([str(fixture / "fsdp-wrap-layer-class-not-found.positive.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "fsdp-wrap-layer-class-not-found",
        "fsdp-state-dict-or-wrapping-error",
        6,
    )
    assert rc.captures.get("layer_class") == "MistralDecoderLayer"
    assert d.initiating_rank is None
    assert "fsdp_transformer_layer_cls_to_wrap" in rc.fix.steps[0]
