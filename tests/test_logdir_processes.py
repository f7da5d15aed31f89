"""The processes per node of a torchrun ``--log-dir`` tree come from its local-rank folders:
torchrun makes ``<log dir>/<run id>/attempt_<n>/<local rank>/`` for every worker it starts
(torch.distributed.elastic.multiprocessing.api), so a tree of attempt_1/0..3 was a
``--nproc-per-node=4`` job, and the verify command says 4 instead of ``<gpus>`` (trial r16,
finding 8)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.ranks import logdir_processes

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/proj/train.py", line 61, in <module>\n'
    "    state = torch.load(args.resume)\n"
    "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/run7/step_4000.pt'\n"
)


def _tree(root: Path, attempts: dict[int, range], failing: tuple[int, int]) -> Path:
    for attempt, local_ranks in attempts.items():
        for local in local_ranks:
            folder = root / "run_abc123_x1" / f"attempt_{attempt}" / str(local)
            folder.mkdir(parents=True)
            (folder / "stdout.log").write_text(f"step 1 loss 2.0{local}\n")
            text = TRACEBACK if (attempt, local) == failing else ""
            (folder / "stderr.log").write_text(text)
    return root


def test_a_log_dir_tree_gives_the_processes_per_node_to_the_verify(tmp_path):
    tree = _tree(tmp_path / "logs", {0: range(4), 1: range(4)}, failing=(1, 3))
    d = diagnose_paths([str(tree)])
    assert d.initiating_rank == 3
    assert "torchrun --nproc-per-node=4 train.py" in d.root_cause.verify
    assert "<gpus>" not in d.root_cause.verify


def test_only_a_whole_last_attempt_of_one_run_counts():
    last = [f"l/run_a/attempt_1/{r}/stderr.log" for r in range(3)]
    assert logdir_processes([*(f"l/run_a/attempt_0/{r}/stderr.log" for r in range(4)), *last]) == 3
    assert logdir_processes(["l/run_a/attempt_0/0/stderr.log.gz"]) == 1
    # a gap (a folder missing), two runs' trees (two agents or nodes), no tree at all
    assert (
        logdir_processes(["l/run_a/attempt_0/0/stderr.log", "l/run_a/attempt_0/2/stderr.log"])
        is None
    )
    assert (
        logdir_processes(["a/run_a/attempt_0/0/stderr.log", "b/run_b/attempt_0/0/stderr.log"])
        is None
    )
    assert logdir_processes(["logs/rank0.log", "logs/rank1.log"]) is None
