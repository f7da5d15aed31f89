"""SGLang's logger header names the tensor-parallel rank of the process that printed the line.

sglang/srt/utils.py ``configure_logger`` formats every record as ``[%(asctime)s{prefix}]
%(message)s``; the scheduler process of TP rank ``t`` uses the prefix `` TP{t}`` (`` DP{d}
TP{t}`` with data parallelism, a PP part with pipeline parallelism), and logs a crash as one
record, ``logger.error(f"Scheduler hit an exception: {traceback}")``, whose header is on its
first line only. The logs here are written for this test in those shapes.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

_LOAD = "".join(
    f"[2025-01-05 10:00:01 TP{r}] Load weight end. type=LlamaForCausalLM, avail mem=60.1{r} GB\n"
    for r in range(4)
)
_CRASH = """\
[2025-01-05 10:00:07 TP2] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2310, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 660, in event_loop_overlap
    batch_result = self.run_batch(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.10 GiB of which 1.20 GiB is free.

[2025-01-05 10:00:07] Received sigquit from a child process. It usually means the child failed.
"""


def test_tp_header_is_the_rank_and_is_peeled():
    got = RankTagger().tag("[2025-01-05 10:00:01 TP3] Load weight end.", 1)
    assert (got.rank, got.text) == (3, "Load weight end.")
    # the newer date format (no year)
    assert RankTagger().tag("[01-05 10:00:01 TP1] Load weight end.", 1).rank == 1


def test_a_tp_rank_inside_a_data_or_pipeline_parallel_group_names_no_rank():
    for line in (
        "[2025-01-05 10:00:01 DP1 TP3] Load weight end.",
        "[2025-01-05 10:00:01 PP1 TP3] Load weight end.",
    ):
        got = RankTagger().tag(line, 1)
        assert (got.rank, got.text) == (None, "Load weight end."), line


def test_scheduler_traceback_logged_as_one_record_is_its_rank():
    d = diagnose_text(_LOAD + _CRASH, "sglang.log", mask=False)
    assert d.root_cause.signature == "cuda-oom"
    assert (d.root_cause.evidence[0].line, d.root_cause.evidence[0].rank) == (10, 2)
    assert d.initiating_rank == 2


def test_the_record_ends_at_its_exception_line():
    tagger = RankTagger()
    lines = (_LOAD + _CRASH).splitlines()
    ranks = [tagger.tag(line, n).rank for n, line in enumerate(lines, 1)]
    assert ranks[4:10] == [2] * 6  # the record: header line, frames, exception line
    assert ranks[10:] == [None, None]  # the blank line and the parent's own record
