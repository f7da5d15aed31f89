"""``kubectl logs --prefix`` of a PyTorchJob with several pods (trial r15, finding 1).

kubectl writes ``[pod/<pod>/<container>] `` before every line it reads
(kubernetes/kubectl ``pkg/cmd/logs/logs.go``, ``addPrefixIfNeeded``:
``fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName)``), and with ``--timestamps`` the
API server's RFC 3339 time follows it. Each pod runs its own torchrun, so the pods' output
comes one pod after the other. Before the fix the prefix was not peeled: the ``[rank3]:``
behind it was not at the line start, rank 3's traceback was never assembled, and the
diagnosis named a victim's NCCL watchdog timeout with no rank.

The fragment is written here in the shape kubectl and torchrun print.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger


def _pod(pod: str, lines: list[str], stamp: bool = False) -> list[str]:
    ts = "2026-12-03T10:15:01.004123456Z " if stamp else ""
    return [f"[pod/{pod}/pytorch] {ts}{line}" for line in lines]


def _job(stamp: bool = False) -> str:
    master = [
        "[rank0]: {'loss': 1.9, 'step': 200}",
        "[rank1]: {'loss': 1.9, 'step': 200}",
        "[rank0]:[E1203 10:26:14.051829071 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3011, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.",
        "[rank1]:[E1203 10:26:14.151829071 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3011, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.",
    ]
    worker = [
        "[rank2]: {'loss': 1.9, 'step': 200}",
        "[rank3]: {'loss': 1.9, 'step': 200}",
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/workspace/train.py", line 214, in <module>',
        "[rank3]:     main()",
        '[rank3]:   File "/workspace/data.py", line 57, in __iter__',
        "[rank3]:     table = pq.read_table(self.shards[self.idx])",
        "[rank3]: FileNotFoundError: [Errno 2] No such file or directory: '/mnt/data/shards/train-00313.parquet'",
        "[2026-12-03 10:16:13,102] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 1 (pid: 41) of binary: /usr/bin/python",
    ]
    lines = _pod("llama-ft-master-0", master, stamp) + _pod("llama-ft-worker-0", worker, stamp)
    return "\n".join(lines) + "\n"


def test_tagger_peels_the_pod_prefix_and_takes_the_pod_as_host():
    tagger = RankTagger()
    out = [
        tagger.tag(line, i + 1)
        for i, line in enumerate(
            [
                "[pod/llama-ft-worker-0/pytorch] [rank3]: FileNotFoundError: x",
                "[pod/llama-ft-worker-0/pytorch] 2026-12-03T10:16:12.551000000Z [rank2]: step 3",
                "[pod/llama-ft-master-0/pytorch] W1203 10:14:58.101000 1 torch/distributed/run.py:779 Setting OMP_NUM_THREADS",
            ]
        )
    ]
    assert [(o.rank, o.host) for o in out] == [
        (3, "llama-ft-worker-0"),
        (2, "llama-ft-worker-0"),
        (None, "llama-ft-master-0"),
    ]
    assert out[0].text == "FileNotFoundError: x"
    assert out[1].text == "step 3"


def test_kubectl_prefix_names_the_rank_that_raised_not_a_victims_watchdog():
    diag = diagnose_text(_job(), "kubectl.log", mask=False)
    root = diag.root_cause
    assert root is not None
    assert root.failure_class == "user-code-exception"
    assert diag.initiating_rank == 3
    assert diag.initiating_host == "llama-ft-worker-0"
    assert root.evidence[0].line == 12  # the FileNotFoundError line
    assert root.user_frame is not None and (root.user_frame.file, root.user_frame.line) == (
        "/workspace/data.py",
        57,
    )
    assert {g.signature for g in diag.collateral} >= {"nccl-watchdog-timeout"}


def test_kubectl_prefix_with_timestamps():
    diag = diagnose_text(_job(stamp=True), "kubectl.log", mask=False)
    assert diag.root_cause is not None
    assert diag.root_cause.failure_class == "user-code-exception"
    assert diag.initiating_rank == 3
    assert diag.initiating_host == "llama-ft-worker-0"


def _compose(lines_by_container: dict[str, list[str]]) -> str:
    """``docker compose up`` output: each container's name padded to the longest, then " |"
    and a space (docker/compose ``cmd/formatter/logs.go``: ``"%-<width>s |"``)."""
    width = max(len(name) for name in lines_by_container)
    out = [
        f"{name.ljust(width)} | {line}"
        for name, lines in lines_by_container.items()
        for line in lines
    ]
    return "\n".join(out) + "\n"


def test_docker_compose_prefix_names_the_rank_that_raised_and_its_container():
    master = [m.split("] ", 1)[1] for m in _job().splitlines()[:4]]
    worker = [w.split("] ", 1)[1] for w in _job().splitlines()[4:]]
    text = _compose({"trainer-0": master, "proj_trainer_1": worker})
    diag = diagnose_text(text, "compose.log", mask=False)
    root = diag.root_cause
    assert root is not None and root.failure_class == "user-code-exception"
    assert (diag.initiating_rank, diag.initiating_host) == (3, "proj_trainer_1")
    assert root.evidence[0].line == 12
    assert root.user_frame is not None and root.user_frame.line == 57


def test_a_table_row_is_no_compose_prefix():
    tagger = RankTagger()
    row = tagger.tag("  10 | 2.3100 | 3e-4", 1)  # a metrics table's row
    assert (row.host, row.text) == (None, "  10 | 2.3100 | 3e-4")
    col = tagger.tag("epoch  | loss", 2)  # a column name with no replica index
    assert (col.host, col.text) == (None, "epoch  | loss")
