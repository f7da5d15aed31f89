"""The headline of a hang whose initiating rank printed none of the root cause's lines (a
silent rank the others' watchdogs timed out waiting for) reads "... caused by rank 2", not
"... on rank 2" as if rank 2 had caught the timeout (trial r19, finding 4). The same rule in
the CLI, Markdown, SARIF and the extension (extension/src/report/diagnosis.ts waitedFor).

Log: written from NCCL's ProcessGroupNCCL watchdog line (``[Rank N] Watchdog caught
collective operation timeout: WorkNCCL(SeqNum=..., OpType=...)``) under torchrun's ``[rankN]:``
prefix: ranks 0, 1 and 3 of 4 time out, rank 2 prints its step and then nothing.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.report import to_markdown, to_text, verdict

WATCHDOG = (
    "[rank{r}]:[E1201 10:00:00.{r}00000 12{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog"
    " caught collective operation timeout: WorkNCCL(SeqNum=512, OpType=ALLREDUCE,"
    " NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 60001{r} milliseconds"
    " before timing out."
)
LOG = "\n".join(
    [f"[rank{r}]: step 40 loss 1.23" for r in range(4)] + [WATCHDOG.format(r=r) for r in (0, 1, 3)]
)


def test_silent_rank_headline_waits_for_it() -> None:
    d = diagnose_text(LOG, "hang.log", mask=False)
    assert d.initiating_rank == 2
    v = verdict(d)
    assert v is not None and (v["on"], v["where"]) == ("caused by", "rank 2")
    first = to_text(d).splitlines()[0]
    assert (
        first == "Root cause: NCCL watchdog caught a collective operation timeout caused by rank 2"
    )
    assert "timeout caused by rank 2" in to_markdown(d).splitlines()[0]


def test_rank_that_printed_the_cause_is_on() -> None:
    oom = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    d = diagnose_text(LOG.replace("[rank2]: step 40 loss 1.23", oom), "x.log", mask=False)
    assert d.initiating_rank == 2
    v = verdict(d)
    assert v is not None and (v["on"], v["where"]) == ("on", "rank 2")
