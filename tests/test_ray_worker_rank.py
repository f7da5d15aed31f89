"""A Ray worker named by its pid only: the rank comes from that process's own lines.

Ray prints a worker's death from the driver or the raylet, naming the process by pid and IP
(src/ray/core_worker: "Worker IP address: ... Worker port: ... Worker PID: N Worker exit type:
SYSTEM_ERROR Worker exit detail: ..."); the worker's own lines carry Ray's log-monitor prefix
``(RayTrainWorker pid=N, ip=X)`` and, on Ray Train, its world rank (the process-group line of
ray/train/torch/config.py, "Setting up process group for: env:// [rank=K, world_size=N]", or
the training function's own ``[Worker:K]`` tag: a RayTrainWorker's index is its world rank).
Every log is written for this test in those wordings.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

_DEATH = (
    "2024-03-02 11:40:12,001\tWARNING worker.py:2037 -- A worker died or was killed while "
    "executing a task by an unexpected system error. To troubleshoot the problem, check the "
    "logs for the dead worker. RayTask ID: ffffffffffffffff21c1c7b04cbbd1e0a2b0d9ba01000000 "
    "Worker ID: 8a2c0f Node ID: 51be2d Worker IP address: 10.1.2.3 Worker port: 10021 "
    "Worker PID: {pid} Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly "
    "exits with a connection error code 2. End of file. There are some potential root causes. "
    "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop "
    "--force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other "
    "unexpected errors.\n"
)

#: Four Ray Train workers; Ray Train's process-group line names each one's rank.
LOG_PG = (
    "".join(
        f"(RayTrainWorker pid={pid}, ip=10.1.2.3) 2024-03-02 11:38:0{r},100\tINFO config.py:88 -- "
        f"Setting up process group for: env:// [rank={r}, world_size=4]\n"
        for r, pid in enumerate((5101, 5102, 5103, 5104))
    )
    + "".join(
        f"(RayTrainWorker pid={pid}, ip=10.1.2.3) epoch 0 step 10 loss 2.31\n"
        for pid in (5101, 5102, 5103, 5104)
    )
    + _DEATH.format(pid=5103)
)


def test_dead_worker_pid_takes_the_rank_its_process_group_line_showed():
    d = diagnose_text(LOG_PG, "driver.log", mask=False)
    assert d.root_cause.signature == "ray-worker-killed"  # no Python error: killed
    assert d.root_cause.evidence[0].line == 9
    assert d.initiating_rank == 2
    assert d.initiator.strategy == "died_unrequested"
    assert "pid 5103" in d.initiator.why


def test_worker_tag_of_a_ray_train_worker_is_its_rank():
    log = (
        "(RayTrainWorker pid=7001, ip=10.1.2.3) 02-Mar-24 11:38:01 [Worker:0] [INFO] epoch 3 done\n"
        "(RayTrainWorker pid=7002, ip=10.1.2.3) 02-Mar-24 11:38:01 [Worker:1] [INFO] epoch 3 done\n"
        "(RayTrainWorker pid=7001, ip=10.1.2.3) 02-Mar-24 11:38:09 [Worker:0] [INFO] Returning from train func\n"
    ) + _DEATH.format(pid=7001)
    d = diagnose_text(log, "driver.log", mask=False)
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 4


def test_a_pid_no_worker_line_showed_names_no_rank():
    # the dead pid is not among the workers whose rank is known: no rank is guessed
    d = diagnose_text(LOG_PG.replace("Worker PID: 5103", "Worker PID: 9999"), "d.log", mask=False)
    assert d.root_cause.signature == "ray-worker-killed"  # no Python error: killed
    assert d.initiating_rank is None


def test_worker_tag_on_another_actor_is_not_a_rank():
    # "[Worker:3]" on an actor that is not a Ray Train worker (a user's own actor pool) names
    # no rank: only a RayTrainWorker's index is its world rank
    tagger = RankTagger()
    assert not tagger.learn_actor_ranks(
        "(MapWorker pid=7003, ip=10.1.2.3) [Worker:3] processed 100 rows\n"
    )
    assert (
        tagger.tag(
            "x Worker IP address: 10.1.2.3 Worker PID: 7003 Worker exit type: SYSTEM_ERROR", 2
        ).rank
        is None
    )


def test_the_ip_must_agree_when_both_lines_give_one():
    tagger = RankTagger()
    assert tagger.learn_actor_ranks(
        "(RayTrainWorker pid=7001, ip=10.1.2.3) x [rank=1, world_size=2]\n"
    ) == {1}
    assert (
        tagger.tag(
            "Worker IP address: 10.1.2.4 Worker port: 1 Worker PID: 7001 Worker exit type: SYSTEM_ERROR",
            5,
        ).rank
        is None
    )
    assert (
        tagger.tag(
            "Worker IP address: 10.1.2.3 Worker port: 1 Worker PID: 7001 Worker exit type: SYSTEM_ERROR",
            6,
        ).rank
        == 1
    )


def test_driver_reraise_names_the_worker_by_pid():
    tagger = RankTagger()
    tagger.learn_actor_ranks("(RayTrainWorker pid=4242, ip=10.1.2.3) x [rank=3, world_size=4]\n")
    line = (
        "ray.exceptions.RayTaskError(RuntimeError): ray::RayTrainWorker._RayTrainWorker__execute() "
        "(pid=4242, ip=10.1.2.3, actor_id=9f1e, repr=<ray.train._internal.worker_group.RayTrainWorker "
        "object at 0x7f>)"
    )
    assert tagger.tag(line, 9).rank == 3
