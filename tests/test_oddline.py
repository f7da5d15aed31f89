"""The rank whose own printed line differs from the same line of every other rank
(strategy ``odd_line_out``), and the rank that never printed a line every other rank printed
(strategy ``missing_milestone``): :mod:`rootrank.analysis.oddline`.

The logs in ``tests/data/oddline/`` are real runs of ``train_odd.py`` beside them (torch 2.13
CPU, gloo, ``torchrun --tee 3``, made by ``run.sh MODE NPROC PORT``): every rank prints its own
shard file and pid, its compute dtype and pad multiple, and how long loading took, then
all-reduces a statistics tensor of ``pad + 3`` elements of that dtype, and the gradients.

- ``word-4``: rank 2 computes in ``torch.bfloat16`` (the others ``torch.float32``);
- ``pad-4``: rank 3 pads to a multiple of 16 (the others 8): its tensor is longer, and gloo's
  receiver (rank 2) aborts, which torchrun's summary names;
- ``two-4``: ranks 1 and 3 use ``torch.float64``: two ranks differ, no odd one out;
- ``pair-2``: a 2-rank job where rank 1 uses ``torch.float64``: one rank's word against the
  other's;
- ``none-4``: the healthy run (every rank prints its own shard name, pid and timing);
- ``milestone-4``: rank 1 blocks on a lock it already holds and never prints ``cache warmed``;
  the others time out in the next all-reduce;
- ``subgroup-4``: rank 1 alone enters a barrier of a ``[1, 2]`` subgroup and never prints
  ``cache warmed``; every rank times out;
- ``design-4``: rank 0 does rank-0-only work before the final barrier; every line of the
  ranks differs only by design (shard names, pids, timings, steps, losses).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.analysis import oddline
from rootrank.analysis.oddline import normalize
from rootrank.analysis.prepare import Context, prepare
from rootrank.engine import default_library, diagnose_paths, matcher_for
from rootrank.ingest import read_blocks
from rootrank.model import Diagnosis
from rootrank.scan import Scanner

DATA = Path(__file__).parent / "data" / "oddline"


def _diag(name: str) -> Diagnosis:
    return diagnose_paths([str(DATA / f"{name}.log")], mask=False)


def _ctx(name: str) -> Context:
    """The analysis's context of one log (the scan, then its preparation)."""
    lib = default_library()
    scanner = Scanner(matcher_for(lib), learn_users=False)
    path = DATA / f"{name}.log"
    with path.open("rb") as f:
        scanner.scan_source(str(path), read_blocks(f))
    return prepare(scanner.state, lib)


def test_a_dtype_word_only_one_rank_printed_names_that_rank() -> None:
    d = _diag("word-4")
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator.rank == 2
    assert d.initiator.strategy == "odd_line_out"
    assert "rank 2 printed `torch.bfloat16` where ranks 0, 1, 3 printed `torch.float32`" in (
        d.initiator.why
    )
    assert "(line 4: `compute dtype torch.bfloat16, pad multiple 8`)" in d.initiator.why


def test_the_odd_rank_wins_over_the_receiver_torchrun_names() -> None:
    d = _diag("pad-4")
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator.rank == 3  # gloo's receiver, rank 2, aborted and the summary names it
    assert d.initiator.strategy == "odd_line_out"
    assert "rank 3 printed `multiple 16` where ranks 0-2 printed `multiple 8`" in d.initiator.why
    assert "line 11: `rank 3: compute dtype torch.float32, pad multiple 16`" in d.initiator.why


@pytest.mark.parametrize("name", ["two-4", "pair-2"])
def test_two_ranks_differing_or_a_two_rank_job_name_no_odd_rank(name: str) -> None:
    d = _diag(name)
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator.strategy != "odd_line_out"
    assert "odd_line_out" not in d.initiator.agreeing
    assert "printed `torch.float64`" not in d.initiator.why


def test_a_healthy_run_whose_ranks_print_their_own_files_claims_nothing() -> None:
    d = _diag("none-4")
    assert d.root_cause is None
    assert d.initiator is None
    ctx = _ctx("none-4")  # asked anyway: no line singles out a rank
    assert len(oddline._rank_lines(ctx)[0]) == 4
    assert oddline.odd_line(ctx) is None
    assert oddline.missing_milestone(ctx) is None


def test_lines_that_differ_by_design_name_no_rank() -> None:
    d = _diag("design-4")
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-timeout"
    assert d.initiator.rank == 0  # the one rank that reported no timeout
    assert d.initiator.strategy == "missing_reporter"
    assert "odd_line_out" not in d.initiator.agreeing
    assert "missing_milestone" not in d.initiator.agreeing


def test_the_rank_that_never_printed_a_milestone_is_the_one_stuck() -> None:
    d = _diag("milestone-4")
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-timeout"
    assert d.initiator.rank == 1
    assert "missing_milestone" in d.initiator.agreeing


def test_a_milestone_agrees_with_the_rank_in_another_collective() -> None:
    d = _diag("subgroup-4")
    assert d.initiator.rank == 1
    assert "missing_milestone" in d.initiator.agreeing


def test_milestone_reason_quotes_the_line_and_the_ranks() -> None:
    found = oddline.missing_milestone(_ctx("milestone-4"))
    assert found is not None
    rank, why = found
    assert rank == 1
    assert why.startswith("rank 1 never printed `cache warmed`, which ranks 0, 2, 3 printed")


@pytest.mark.parametrize(
    ("text", "rank", "expected"),
    [
        ("rank 3: loading data/part-0003.bin (pid 18857)", 3, "loading data/part-<R>.bin (<V>)"),
        ("resuming from ckpt/step-200/rank-2.pt", 2, "resuming from ckpt/step-200/rank-<R>.pt"),
        (
            "[init] rank=3 creating tp groups [[2, 3], [0, 1]]",
            3,
            "[init] rank=<R> creating tp groups [[2, 3], [0, 1]]",
        ),
        ("using device cuda:1, seed 1234", 1, "using device cuda:<R>, <V>"),
        ("data ready in 0.013s at 10.0.0.7:29500", 0, "data ready in <V>s at <V>"),
        ("step 12 loss 0.3 took 45 ms", 0, "<V> <V> <V>"),
    ],
)
def test_normalize_takes_out_what_differs_by_design(text: str, rank: int, expected: str) -> None:
    assert normalize(text, rank) == expected


def test_an_id_every_other_rank_shares_names_the_rank_that_printed_another() -> None:
    """``hashid-4.log``: a real run of ``train_hash.py`` (kept as ``train_hash.py.txt``;
    ``run_hash.sh``: node 0's one worker without ``PYTHONHASHSEED``, node 1's three with it).
    Each rank prints a plan id hashed from a set of names and all-reduces its buckets in that
    set's order: rank 0's id differs, its order too, and gloo's receiver on another rank aborts
    (torchrun's summary names rank 3). A run id is one value for the job, so the number after
    ``id`` is compared, not masked."""
    d = _diag("hashid-4")
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator.rank == 0
    assert d.initiator.strategy == "odd_line_out"
    assert "rank 0 printed `id 642611` where ranks 1-3 printed `id 669572`" in d.initiator.why


def test_a_per_process_id_differing_on_every_rank_singles_none_out() -> None:
    assert normalize("worker pid 4242 ready", 1) == normalize("worker pid 4343 ready", 2)
    assert normalize("plan id 11", 1) != normalize("plan id 12", 2)
