"""Held-out r22c kinds (the set's MISSES.md), each on a fixture written from what the tools
print: ranks whose monitoredBarrier reports all blame the same peer make that peer the
initiator (their own tracebacks after the report are its consequence); a framework's "rank N
could finish ..., but there are other ranks" names a rank that succeeded, and a framework's or
Inductor's files are not the user's code; Open MPI's and srun's report of a rank killed by a
signal is read as that signal on that rank; a c10d store client's read timeout is a group that
never completed its set-up; a Ray worker's SYSTEM_ERROR death beside a collective timeout is the
watchdog's abort, and a watchdog line cut mid-word still counts; the shape of an all-gather in
the default group gives the world size, so a two-rank job's one silent member is known."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.tracebacks import is_user_frame

HERE = Path(__file__).parent / "r22e"
SIGS = Path(__file__).parents[1] / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_ranks_that_blame_the_same_peer_make_it_the_initiator():
    # ranks 2 and 1 both reached monitoredBarrier and name rank 0; each then prints the
    # traceback of its own barrier call (cut): that is rank 0's failure reaching them
    d = _diag(HERE / "monitored_barrier_two_blame_rank0.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "monitored-barrier-rank-failed"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 2
    assert d.initiating_rank == 0


def test_a_rank_that_finished_loading_is_a_victim_not_the_initiator():
    d = _diag(HERE / "sglang_load_barrier_peer_unfinished.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "peer-ranks-unfinished"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 18
    assert d.initiating_rank is None
    assert "Rank 5 finished model loading" in d.root_cause.fix.steps[0]
    # SGLang's own model_runner.py is not "your code"
    assert not any("your code" in line for line in d.root_cause.fix.steps)


def test_framework_and_generated_files_are_not_user_frames():
    assert not is_user_frame(
        "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py"
    )
    assert not is_user_frame("/workspace/vllm/vllm/worker/worker_base.py")
    assert not is_user_frame("/tmp/torchinductor_root/ab/cabx3k2.py")
    assert not is_user_frame("/home/u/OpenRLHF/openrlhf/trainer/ppo_trainer.py")
    assert is_user_frame("/home/u/proj/train.py")


def test_open_mpis_exit_on_signal_7_is_sigbus_on_that_rank():
    d = _diag(HERE / "launcher_signal_lines.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-sigbus-exit"
    assert d.root_cause.failure_class == "dataloader-worker-killed-or-shm"
    assert d.root_cause.evidence[0].line == 7
    assert d.initiating_rank == 5


def test_sruns_task_bus_error_is_sigbus_on_that_task():
    d = _diag(HERE / "srun_task_bus_error.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-sigbus-exit"
    assert d.root_cause.evidence[0].line == 4
    assert d.initiating_rank == 6


def test_store_client_read_timeouts_are_a_rendezvous_failure():
    d = _diag(SIGS / "launch" / "store-client-read-timeout.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-client-read-timeout"
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank is None  # the ranks that printed it arrived
    near = _diag(SIGS / "launch" / "store-client-read-timeout.near-miss.log")
    assert near.root_cause is None


def test_a_ray_worker_death_beside_a_watchdog_timeout_is_the_watchdogs_abort():
    # the raylet's report (with Ray's stock "OOM killer" list) comes before the worker's own
    # watchdog line, which the log cut mid-word
    d = _diag(HERE / "ray_watchdog_abort_worker_died.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-watchdog-timeout"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 5
    assert d.initiating_rank is None
    assert "ray-worker-killed" in {g.signature for g in d.collateral}


def test_the_default_groups_all_gather_shape_names_the_one_silent_member():
    # NumelOut / NumelIn = 2 in the default PG: a two-rank job; rank 1 timed out, rank 0 never
    # entered the all-gather (the paste shows none of its lines)
    d = _diag(HERE / "fsdp_two_rank_allgather_one_reporter.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 2
    assert d.initiating_rank == 0
    assert d.initiator.strategy == "missing_reporter"


def test_a_subgroups_all_gather_shape_says_nothing_of_the_world():
    d = _diag(HERE / "fsdp_subgroup_allgather_one_reporter.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
