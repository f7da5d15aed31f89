"""Held-out r21c kinds (the set's MISSES.md), each on a fixture written from what the tools
print (tests/r22b/):

- a main-process-only progress bar (tqdm, untagged) still short of its total after running
  for much of the collective timeout names rank 0 as the rank the reporting ranks waited for
  (rootrank.analysis.busy_bar, strategy ``main_process_bar``); a finished or short bar does not;
- the GPU ordinal of a CUDA out-of-memory error is the rank on a one-node job of one process
  per GPU (rootrank.analysis.device_rank, strategy ``device_of_error``); ordinal 0, a world
  above one node, a second node or a device remap keep it unknown;
- Lightning/Fabric's "GLOBAL_RANK: 0, MEMBER: 1/4" states the world size (rootrank.ranks).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.analysis.busy_bar import _seconds
from rootrank.engine import diagnose_paths
from rootrank.ranks import RankTagger

HERE = Path(__file__).parent / "r22b"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def test_main_process_bar_past_half_the_timeout_names_rank_0() -> None:
    d = _diag("main-process-map-bar-rank1-timeout.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "main_process_bar"
    assert "at 74% after 9 min 51 s" in d.initiator.why
    assert "main-process-map-bar-rank1-timeout.log:7" in d.initiator.why


@pytest.mark.parametrize(
    "name", ["finished-map-bar-rank1-timeout.log", "short-map-bar-rank1-timeout.log"]
)
def test_a_finished_or_short_bar_names_no_rank(name: str) -> None:
    d = _diag(name)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
    assert d.initiator is not None and d.initiator.strategy == "victims_only"


def test_tqdm_elapsed_reads_minutes_and_hours() -> None:
    assert _seconds("29:56") == 1796
    assert _seconds("1:02:03") == 3723


def test_oom_gpu_ordinal_on_one_node_is_the_rank() -> None:
    d = _diag("fabric-one-node-4proc-oom-gpu3.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 3
    assert d.initiator is not None and d.initiator.strategy == "device_of_error"
    assert "ran 4 processes on one node" in d.initiator.why


@pytest.mark.parametrize(
    "name",
    [
        "fabric-one-node-4proc-oom-gpu0.log",  # every process sees its GPU as 0 under a remap
        "fabric-16proc-oom-gpu3.log",  # more processes than one node's GPUs
        "fabric-2node-oom-gpu3.log",  # --nnodes=2: local rank is not the rank
        "fabric-visible-devices-oom-gpu3.log",  # devices mapped per process
    ],
)
def test_oom_gpu_ordinal_names_no_rank_where_the_log_cannot_tell(name: str) -> None:
    d = _diag(name)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank is None


def test_fabric_member_line_states_the_world_size() -> None:
    tagger = RankTagger(path="run.log")
    tagger.tag("Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4", 1)
    assert tagger.world_size == 4


def test_srun_reports_on_an_inspection_step_are_not_the_jobs_failure() -> None:
    # srun --overlap --jobid=... py-spy / nvidia-smi: its "task 2: Exited with exit code 123"
    # is a helper task on a node, not rank 2 of the job
    d = _diag("helper-srun-overlap-pyspy-task-exits.log")
    assert d.root_cause is None
    assert d.initiating_rank is None


def test_srun_reports_on_a_training_step_still_count() -> None:
    d = _diag("srun-training-step-task-exit.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank == 5


def test_ps_d_state_process_without_a_stated_world_names_no_rank() -> None:
    d = _diag("ps-d-state-no-world.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "process-stuck-uninterruptible"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.captures["pid"] == "41212"
    assert d.initiating_rank is None


def test_a_log_ending_with_the_ranks_two_iterations_apart_is_a_desync_hang() -> None:
    # written from torchrun's [rankN]: prefixes around a validation loop's per-rank lines
    d = diagnose_paths(
        [
            str(
                Path(__file__).parent.parent
                / "signatures/training/ranks-apart-in-per-rank-lines.positive.log"
            )
        ],
        mask=False,
    )
    assert d.root_cause is not None
    assert d.root_cause.signature == "ranks-apart-in-per-rank-lines"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.captures["ends"] == "rank 0 at 41, rank 1 at 43"
    assert d.initiating_rank is None
