"""A log that ends right after a rank's ``terminate called after throwing an instance of
'c10::DistBackendError'`` (its ``what()`` line cut) holds no cut Python traceback of that
rank: it does not stop the rank whose OOM started the failure from being named (the 5 MB
bench log of ``bench/gen_log.py`` ended so, and the initiating rank came out unknown)."""

from __future__ import annotations

import json

from conftest import run_cli

LOG = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/user/proj/train.py", line 57, in <module>
[rank1]:     out = model(batch)
[rank1]:   File "/home/user/proj/model.py", line 96, in forward
[rank1]:     attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 1 has a total capacity of 79.14 GiB of which 1.70 GiB is free.
[rank0]:[E1129 09:40:11.559584 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12968, OpType=ALLREDUCE, NumelIn=220084533, NumelOut=220084533, Timeout(ms)=600000) ran for 600077 milliseconds before timing out.
[rank0]:[E1129 09:40:11.569305 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12968, OpType=ALLREDUCE, NumelIn=220084533, NumelOut=220084533, Timeout(ms)=600000) ran for 600077 milliseconds before timing out.
[rank0]:terminate called after throwing an instance of 'c10::DistBackendError'
"""


def test_a_cut_what_line_is_no_competing_failure(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG, encoding="utf-8")
    diag = json.loads(run_cli("diagnose", "--format", "json", str(log)).stdout)
    assert diag["root_cause"]["failure_class"] == "cuda-oom"
    assert diag["initiating_rank"] == 1
    assert diag["root_cause"]["evidence"][0]["line"] == 6
