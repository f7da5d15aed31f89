"""Multi-rank paste shapes: launcher and actor prefixes, hard-wrapped
watchdog lines, NCCL proxy failures and the mlx5 driver's completion error.

The rank tests feed lines to :class:`rootrank.ranks.RankTagger` in the shape Ray
(``python/ray/_private/log_monitor.py``), vLLM's multiproc executor and the CloudWatch
console print them. The diagnosis tests are fragments written here in the shape the tools
print and assert the root cause's signature, failure class, the 1-based line of its first
evidence and, where the fragment proves it, the initiating rank.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger


def _tag(lines):
    tagger = RankTagger()
    return tagger, [tagger.tag(line, i + 1) for i, line in enumerate(lines)]


def test_ray_actor_prefix_is_peeled_and_its_rank_remembered_by_pid():
    _, out = _tag(
        [
            "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout",
            "(RayWorkerWrapper pid=4009) Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565",
            "(RayWorkerWrapper pid=4120) frame #0: c10::Error::Error(c10::SourceLocation, std::string)",
        ]
    )
    assert [(o.rank, o.pid) for o in out] == [(1, 4009), (1, 4009), (None, 4120)]
    assert out[1].text.startswith("Exception raised from checkTimeout")


def test_ray_actor_ip_is_the_host_and_torch_rank_tag_follows():
    _, out = _tag(
        [
            "(RayTrainWorker pid=2273, ip=10.0.0.3) [rank7]:[W Utils.hpp:108] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated"
        ]
    )
    assert (out[0].rank, out[0].host, out[0].pid) == (7, "10.0.0.3", 2273)
    assert out[0].text.startswith("Warning: Environment variable")


def test_vllm_worker_rank_and_tp_only_worker_names():
    _, out = _tag(
        [
            "(VllmWorker rank=2 pid=384550) ERROR 04-22 17:08:49 [multiproc_executor.py:435] WorkerProc failed to start.",
            "(Worker_TP1 pid=2211) INFO 09-01 21:25:32 [parallel_state.py:1076] rank 1 in world size 2",
            "(Worker_PP1_TP0 pid=2212) INFO 09-01 21:25:32 [parallel_state.py:1076] rank 2 in world size 4",
            "(VllmWorkerProcess pid=232) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] Exception in worker",
        ]
    )
    # Worker_PP1_TP0 is tensor rank 0 of pipeline stage 1: its global rank is not in the name.
    assert [o.rank for o in out] == [2, 1, None, None]
    assert out[0].text == "WorkerProc failed to start."
    assert out[3].text.startswith("Exception in worker")


def test_nested_actor_prefixes_and_newer_nccl_nranks_spelling():
    tagger, out = _tag(
        [
            "(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285, ip=10.0.0.12) node02:285:285 [0] NCCL INFO comm 0x1095e9d0 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
            "(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285, ip=10.0.0.12) node02:285:290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0",
        ]
    )
    assert [(o.rank, o.host, o.pid) for o in out] == [(1, "node02", 285), (1, "node02", 285)]
    assert tagger.world_size == 2


def test_raylet_and_shell_prompts():
    _, out = _tag(
        [
            "(raylet, ip=10.0.0.9) A worker died or was killed while executing a task by an unexpected system error.",
            "(base) user@node01:~$ torchrun --nproc-per-node=8 train.py",
        ]
    )
    assert (out[0].rank, out[0].host) == (None, "10.0.0.9")
    assert out[0].text.startswith("A worker died")
    assert out[1].text.startswith("(base) user@node01")


def test_cloudwatch_pipe_time_column_is_peeled_and_timed():
    _, out = _tag(
        [
            "  | 2024-08-23T22:22:51.871Z | [rank6]:[E823 22:22:51.871203 ProcessGroupNCCL.cpp:1515] [PG 0 Rank 6] Process group watchdog thread terminated",
            "  | 2024-08-23T22:22:52.002Z | frame #0: c10::Error::Error(c10::SourceLocation, std::string)",
        ]
    )
    assert out[0].rank == 6
    assert out[1].text.startswith("frame #0")
    assert out[1].time is not None and out[0].time is not None and out[1].time > out[0].time


def _diag(text: str):
    diag = diagnose_text(text, mask=False)
    rc = diag.to_dict()["root_cause"]
    return diag.to_dict(), rc


CASES = [
    # (id, text, signature, failure_class, first evidence line (1-based), initiating rank)
    (
        "srun-label-heartbeat-hard-wrapped",
        "3: [rank3]:[E1129 09:10:11.000000000 ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Heartbeat monitor is ticking\n"
        "3: [rank3]:[F1129 09:18:11.482910000 ProcessGroupNCCL.cpp:1224] [PG 0 Rank 3] [PG 0 Rank 3] ProcessGroupNCCL's watchdog got stuck for 480 second\n"
        "s without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API hang blocking the\n"
        " watchdog. workMetaList_.size() = 17\n"
        "srun: error: node02: task 3: Aborted (core dumped)\n",
        "nccl-heartbeat-monitor-timeout",
        "collective-timeout",
        2,
        None,
    ),
    (
        "vllm-worker-rank-prefix-unhandled-cuda-error",
        "INFO 11-29 10:00:01 [core.py:58] Initializing a V1 LLM engine (v0.9.1) with config: tensor_parallel_size=4\n"
        "(VllmWorker rank=0 pid=4101) INFO 11-29 10:00:09 [pynccl.py:69] vLLM is using nccl==2.21.5\n"
        "(VllmWorker rank=3 pid=4104) INFO 11-29 10:00:09 [pynccl.py:69] vLLM is using nccl==2.21.5\n"
        "(VllmWorker rank=3 pid=4104) ERROR 11-29 10:00:10 [multiproc_executor.py:470] WorkerProc failed to start.\n"
        "(VllmWorker rank=3 pid=4104) ERROR 11-29 10:00:10 [multiproc_executor.py:470] Traceback (most recent call last):\n"
        '(VllmWorker rank=3 pid=4104) ERROR 11-29 10:00:10 [multiproc_executor.py:470]   File "/opt/vllm/vllm/distributed/device_communicators/pynccl_wrapper.py", line 286, in NCCL_CHECK\n'
        '(VllmWorker rank=3 pid=4104) ERROR 11-29 10:00:10 [multiproc_executor.py:470]     raise RuntimeError(f"NCCL error: {error_str}")\n'
        "(VllmWorker rank=3 pid=4104) ERROR 11-29 10:00:10 [multiproc_executor.py:470] RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
        "ERROR 11-29 10:00:11 [core.py:515] EngineCore failed to start.\n",
        "nccl-unhandled-cuda-error",
        "nccl-system-error",
        8,
        3,
    ),
    (
        "ray-prefixed-mlx5-completion-error",
        "(RayWorkerWrapper pid=92234, ip=10.0.0.2) mlx5: node02: got completion with error:\n"
        "(RayWorkerWrapper pid=92234, ip=10.0.0.2) 00000000 00000000 00000000 00000000\n"
        "(RayWorkerWrapper pid=92234, ip=10.0.0.2) 00000000 00008813 100076ab 008ae4d3\n"
        "(RayWorkerWrapper pid=92234, ip=10.0.0.2) [rank12]:[E1129 13:23:05.483840160 ProcessGroupNCCL.cpp:542] [Rank 12] Collective WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=7, NumelOut=7, Timeout(ms)=1800000) raised the following async exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5\n",
        # rank 12 is learnt from the actor's later "[rank12]:" line; the earlier line of the
        # same actor process (pid 92234) takes it at the source's end, as a line of an NCCL pid
        # does from a later "comm ... rank R" line (ranks.RankTagger.rank_of_pid)
        "ib-completion-error",
        "network-fabric-error",
        1,
        12,
    ),
    (
        "proxy-async-path-only",
        "node02:5821:5990 [1] NCCL INFO ncclCommInitRank comm 0x55e1c3a0 rank 5 nranks 8 cudaDev 1 nvmlDev 1 busId 1e000 commId 0x8c1f - Init START\n"
        "node02:5821:5998 [1] NCCL INFO transport/net.cc:592 -> 3\n"
        "node02:5821:5998 [1] proxy.cc:1485 NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n",
        "nccl-proxy-operation-failed",
        "nccl-system-error",
        3,
        5,
    ),
    (
        "proxy-failure-is-secondary-to-the-socket-connect-beneath",
        "node01:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort\n"
        "node01:39964:40075 [0] NCCL INFO misc/socket.cc:564 -> 2\n"
        "node01:39964:40075 [0] proxy.cc:1519 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 0, retcode 2\n",
        "nccl-socket-connect-failed",
        "network-fabric-error",
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    "text,signature,failure_class,line,rank", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_multirank_fragment(text, signature, failure_class, line, rank):
    diag, rc = _diag(text)
    assert rc is not None
    assert (rc["signature"], rc["failure_class"], rc["evidence"][0]["line"]) == (
        signature,
        failure_class,
        line,
    )
    assert diag["initiating_rank"] == rank


def test_ray_train_deprecation_warnings_and_exit_noise_are_not_claimed():
    text = (
        "(RayTrainWorker pid=2273, ip=10.0.0.3) [rank7]:[W Utils.hpp:108] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarString)\n"
        "(RayTrainWorker pid=2273, ip=10.0.0.3) node03:2273:2410 [0] NCCL INFO [Proxy Service] Device 0 CPU core 7\n"
        "(RayTrainWorker pid=2273, ip=10.0.0.3) node03:2273:2410 [0] NCCL INFO Received and initiated operation=Connect res=0\n"
        "(RayTrainWorker pid=2273, ip=10.0.0.3) {'loss': 0.412, 'epoch': 3.0}\n"
        "(RayTrainWorker pid=2273, ip=10.0.0.3) node03:2273:2410 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"
        "Training finished iteration 3 at 2024-11-29 10:44:02. Total running time: 12min 3s\n"
    )
    diag, rc = _diag(text)
    assert rc is None
    assert "nccl-proxy-operation-failed" not in [f["signature"] for f in diag["findings"]]


def test_tcpstore_lost_after_a_finished_run_is_a_finding_but_never_the_root_cause():
    text = (
        "{'train_runtime': 3611.2, 'train_loss': 0.8812, 'epoch': 3.0}\n"
        '[rank1]:[W1129 10:00:14.618330912 ProcessGroupNCCL.cpp:1614] [PG ID 0 PG GUID 0(default_pg) Rank 1] Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n'
        "[rank1]:[W1129 10:00:14.618412077 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=62, addr=[node02]:51214, remote=[node01]:29500): Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n"
    )
    diag, rc = _diag(text)
    assert rc is None
    found = [f for f in diag["findings"] if f["signature"] == "tcpstore-recv-failed"]
    assert found and found[0]["rank"] == 1 and found[0]["evidence"][0]["line"] == 2


def test_tcpstore_reset_under_a_real_failure_is_collateral():
    text = (
        "(WorkerDict pid=26110) [rank7]:[W1120 01:13:20.886560089 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=81, addr=[node02]:51546, remote=[node01]:55903): Connection reset by peer [repeated 5x across cluster]\n"
        "(WorkerDict pid=26110) [rank7]: Traceback (most recent call last):\n"
        '(WorkerDict pid=26110) [rank7]:   File "/opt/verl/workers/fsdp_workers.py", line 512, in update_actor\n'
        "(WorkerDict pid=26110) [rank7]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, remote process exited or there was a network error, NCCL version 2.21.5\n"
    )
    diag, rc = _diag(text)
    assert rc is not None and rc["signature"] == "nccl-remote-error"
    finding = [f for f in diag["findings"] if f["signature"] == "tcpstore-recv-failed"][0]
    assert (finding["rank"], finding["evidence"][0]["line"]) == (7, 1)


VLLM_DEATHS = [
    # (id, text, signature, failure_class, first evidence line, initiating rank)
    (
        "v1-worker-died-names-its-rank",
        "(VllmWorker rank=1 pid=7302) INFO 11-29 10:02:59 [gpu_model_runner.py:1801] Model loading took 33.8867 GiB\n"
        "ERROR 11-29 10:15:02 [multiproc_executor.py:140] Worker proc VllmWorker-3 died unexpectedly, shutting down executor.\n"
        "ERROR 11-29 10:15:02 [async_llm.py:408] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n",
        "vllm-worker-died",
        "elastic-child-failed",
        2,
        3,
    ),
    (
        "v1-worker-own-oom-outranks-its-death",
        "(VllmWorker rank=3 pid=7304) ERROR 11-29 10:15:01 [multiproc_executor.py:527] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
        "ERROR 11-29 10:15:02 [multiproc_executor.py:140] Worker proc VllmWorker-3 died unexpectedly, shutting down executor.\n",
        "cuda-oom",
        "cuda-oom",
        1,
        3,
    ),
    (
        "ray-v2-several-dead-ranks-name-no-single-one",
        "(EngineCore_DP0 pid=1088) ERROR 11-29 10:15:02 [ray_executor_v2.py:464] RayWorkerProc rank=[3, 5] died unexpectedly, shutting down executor.\n",
        "vllm-worker-died",
        "elastic-child-failed",
        1,
        None,
    ),
    (
        "v0-worker-sigkill-is-the-oom-killer",
        "ERROR 01-11 13:09:40 multiproc_worker_utils.py:123] Worker VllmWorkerProcess pid 26961 died, exit code: -9\n"
        "INFO 01-11 13:09:40 multiproc_worker_utils.py:127] Killing local vLLM worker processes\n",
        "worker-sigkill-exit",
        "host-oom-killed",
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    "text,signature,failure_class,line,rank",
    [c[1:] for c in VLLM_DEATHS],
    ids=[c[0] for c in VLLM_DEATHS],
)
def test_vllm_worker_death(text, signature, failure_class, line, rank):
    diag, rc = _diag(text)
    assert rc is not None
    assert (rc["signature"], rc["failure_class"], rc["evidence"][0]["line"]) == (
        signature,
        failure_class,
        line,
    )
    assert diag["initiating_rank"] == rank


def test_vllm_v0_shutdown_sigterm_of_workers_is_not_a_death_finding():
    text = (
        "INFO:     Shutting down\n"
        "ERROR 01-11 13:09:40 multiproc_worker_utils.py:123] Worker VllmWorkerProcess pid 26961 died, exit code: -15\n"
        "INFO 01-11 13:09:40 multiproc_worker_utils.py:127] Killing local vLLM worker processes\n"
    )
    diag, _ = _diag(text)
    assert "vllm-worker-died" not in [f["signature"] for f in diag["findings"]]


@pytest.mark.parametrize(
    "line",
    [
        "2021-03-10T13:22:37.483Z: [1,2]<stderr>:OSError: boom",  # a collector's "stamp: " column
        "2021-03-10T13:22:37.483Z [1,2]<stderr>:OSError: boom",
        "2021-03-10 13:22:37 [rank2]: OSError: boom",
    ],
)
def test_a_leading_timestamp_column_before_the_rank_tag(line):
    _, (tagged,) = _tag([line])
    assert tagged.rank == 2 and tagged.text.startswith("OSError: boom")
    assert tagged.time is not None
