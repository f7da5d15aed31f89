"""A failure printed before the root cause, on no rank, that nothing explains and after which
the run went on, is not the root cause's collateral (new-user trial r18 finding 7)."""

from __future__ import annotations

import json

from conftest import run_cli

# A launch script whose inline snippet (`python - <<EOF`) fails in its preamble, then the job
# itself: torchrun's workers start and rank 1 runs out of memory.
LOG = """\
[launch] host node01 gpus=0,1
Traceback (most recent call last):
  File "<stdin>", line 4, in <module>
  File "/usr/lib/python3.10/os.py", line 680, in __getitem__
    raise KeyError(key) from None
KeyError: 'GPU_IDS_STR'
[launch] launching train.py on node01 with 2 processes
[rank0]: step 1 loss 2.31
[rank1]: step 1 loss 2.29
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/alice/proj/train.py", line 41, in <module>
[rank1]:     loss = model(batch).sum()
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.21 GiB is free.
"""


def test_a_preamble_exception_is_named_apart_not_as_collateral(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(LOG, encoding="utf-8")
    diag = json.loads(run_cli("diagnose", "--format", "json", str(log)).stdout)
    assert diag["root_cause"]["failure_class"] == "cuda-oom"
    assert diag["initiating_rank"] == 1
    assert "user-code-exception" not in [g["signature"] for g in diag["collateral"]]
    marks = {(m["signature"], m["line"]): m["kind"] for m in diag["timeline"]}
    assert marks[("user-code-exception", 6)] == "finding"
    assert any(
        r.startswith("KeyError: 'GPU_IDS_STR' (")
        and r.endswith(
            ":6, no rank) was printed before the root cause, nothing explains it and the run"
            " went on after it: an earlier failure of its own, not the root cause's effect."
        )
        for r in diag["reasoning"]
    )
