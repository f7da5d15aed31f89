"""A collector's constant prefix before torchrun's ``[rankN]:`` is peeled, whatever the
collector (trial r15b, finding 1): stern's ``<pod> <container> `` (its default template
``{{.PodName}} {{.ContainerName}} {{.Message}}``; ``--timestamps`` starts the message with
the RFC 3339 time), a pod name alone, clush/pdsh ``host: ``, a ``name | `` column. torchrun
writes ``[rankN]:`` at the start of each of a worker's lines, so what stands before it was put
there by the collector; the prefix learnt there is peeled from the stream's other lines (the
agent's, NCCL's) and its first token is the line's host. Before the rule, stern's prefix hid
rank 3's traceback and the report named a victim's watchdog timeout with no rank.

The fragments are written here in the shape stern and torchrun print."""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

MASTER = [
    "[rank0]: {'loss': 1.9, 'step': 200}",
    "[rank1]: {'loss': 1.9, 'step': 200}",
    "[rank0]:[E1203 10:26:14.051829071 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3011, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.",
    "[rank1]:[E1203 10:26:14.151829071 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3011, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.",
]
WORKER = [
    "llama-ft-worker-0:40:40 [0] NCCL INFO Bootstrap : Using eth0:10.244.2.9<0>",
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
STAMP = "2026-12-03T10:16:00.123456Z "


def _job(prefix: str, stamp: str = "") -> str:
    """The two pods' output, interleaved by line as a live collector shows it; ``prefix`` is
    a format string with ``{pod}``."""
    m = [f"{prefix.format(pod='llama-ft-master-0')}{stamp}{line}" for line in MASTER]
    w = [f"{prefix.format(pod='llama-ft-worker-0')}{stamp}{line}" for line in WORKER]
    out = [w[0], m[0], w[1], m[1], w[2], *w[3:9], m[2], m[3], w[9]]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    "prefix,stamp",
    [
        ("{pod} pytorch ", ""),  # stern
        ("{pod} pytorch ", STAMP),  # stern --timestamps
        ("{pod} ", ""),  # stern with one container shown (--template '{{.PodName}} ...')
        ("{pod}: ", ""),  # clush / pdsh
        ("{pod} | pytorch | ", ""),  # a column per name
    ],
)
def test_the_rank_that_raised_is_named_behind_any_collector_prefix(prefix, stamp):
    diag = diagnose_text(_job(prefix, stamp), "pods.log", mask=False)
    root = diag.root_cause
    assert root is not None
    assert root.failure_class == "user-code-exception"
    assert (diag.initiating_rank, diag.initiating_host) == (3, "llama-ft-worker-0")
    assert root.evidence[0].line == 11  # the FileNotFoundError line
    assert root.user_frame is not None
    assert (root.user_frame.file, root.user_frame.line) == ("/workspace/data.py", 57)
    assert {g.signature for g in diag.collateral} >= {"nccl-watchdog-timeout"}


def test_the_pod_names_are_masked_as_hosts():
    diag = diagnose_text(_job("{pod} pytorch "), "stern.log")
    assert diag.initiating_rank == 3
    from rootrank.report import to_json, to_text

    assert "llama-ft" not in to_json(diag)
    assert "llama-ft" not in to_text(diag)


def test_the_stream_prefix_is_peeled_from_its_other_lines():
    tagger = RankTagger()
    first = tagger.tag("llama-ft-worker-0 pytorch [rank3]: step 3", 1)
    assert (first.rank, first.host, first.text) == (3, "llama-ft-worker-0", "step 3")
    nccl = tagger.tag("llama-ft-worker-0 pytorch llama-ft-worker-0:41:41 [1] NCCL INFO x", 2)
    assert nccl.host == "llama-ft-worker-0"
    assert nccl.text.startswith("llama-ft-worker-0:41:41 [1] NCCL INFO")
    other = tagger.tag("llama-ft-master-0 pytorch W1203 10:14:58 run.py:779] x", 3)
    assert other.host is None  # a prefix never seen before a rank tag is not learnt


@pytest.mark.parametrize(
    "line,rank,text",
    [
        # a message quoting a launcher prefix: the exception line keeps its name
        ("RuntimeError: [rank1]: boom", None, "RuntimeError: [rank1]: boom"),
        ("torch.distributed.DistBackendError: [rank1]: x", None, None),
        # a user's own rank tag, with no launcher prefix behind it: its meaning is kept
        ("worker_1 | loss 2.0", None, "worker_1 | loss 2.0"),
        # a sentence is no prefix: more than three words before the tag
        ("the job said that [rank1]: x", None, "the job said that [rank1]: x"),
    ],
)
def test_what_is_no_collector_prefix(line, rank, text):
    got = RankTagger().tag(line, 1)
    assert got.rank == rank and got.host is None
    if text is not None:
        assert got.text == text


def test_words_alone_are_peeled_from_their_line_only():
    tagger = RankTagger()
    assert tagger.tag("Epoch 3 [rank1]: loss 2.0", 1).rank == 1
    assert tagger.tag("Epoch 3 done", 2).text == "Epoch 3 done"
