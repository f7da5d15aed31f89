"""``--no-mask`` does not pay for what only the masking needs: the scan's pass that learns
user names from home and HPC folders (``rootrank.mask.learn_users``) is skipped when nothing
is masked, and the diagnosis is the same (``bench/no_mask_bench.py`` measures the CPU)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from rootrank import scan as scan_mod
from rootrank.engine import default_library, diagnose_paths, diagnose_text, matcher_for
from rootrank.ingest import text_blocks
from rootrank.scan import Scanner

LOG = """\
[rank0]: step 10 loss 1.2345
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/alice/proj/train.py", line 88, in <module>
[rank1]:     main()
[rank1]:   File "/scratch/bobsmith/envs/lib/python3.11/site-packages/torch/cuda/memory.py", line 12, in f
[rank1]:     x = torch.empty(1 << 40, device="cuda")
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 1 has a total capacity of 79.14 GiB of which 1.20 GiB is free.
"""


def _scan(learn_users: bool) -> Scanner:
    scanner = Scanner(matcher_for(default_library()), learn_users=learn_users)
    scanner.scan_source("train.log", text_blocks(LOG))
    return scanner


def test_the_learned_user_set_is_built_only_when_masking():
    assert _scan(True).state.users == {"alice", "bobsmith"}
    assert _scan(False).state.users == set()


@pytest.mark.parametrize("mask", [True, False])
def test_no_mask_never_calls_learn_users(monkeypatch, tmp_path, mask):
    calls: list[int] = []
    real = scan_mod.learn_users

    def counting(text: str, into: set[str], lower: bytes | None = None) -> None:
        calls.append(len(text))
        real(text, into, lower)

    monkeypatch.setattr(scan_mod, "learn_users", counting)
    log = tmp_path / "train.log"
    log.write_text(LOG)
    for diag in (diagnose_paths([str(log)], mask=mask), diagnose_text(LOG, mask=mask)):
        assert diag.root_cause is not None and diag.root_cause.signature == "cuda-oom"
        assert diag.initiating_rank == 1 and diag.root_cause.evidence[0].line == 7
    assert (calls != []) is mask


def test_the_diagnosis_is_the_same_masked_or_not(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    masked = run_cli("diagnose", str(log), "--format", "json")
    raw = run_cli("diagnose", str(log), "--format", "json", "--no-mask")
    assert masked.returncode == raw.returncode == 0
    m, r = json.loads(masked.stdout), json.loads(raw.stdout)
    assert m["root_cause"]["signature"] == r["root_cause"]["signature"] == "cuda-oom"
    assert m["initiating_rank"] == r["initiating_rank"] == 1
    assert "/home/<user>/proj/train.py" in masked.stdout.decode()
    assert "alice" not in masked.stdout.decode() and "bobsmith" not in masked.stdout.decode()
    assert "/home/alice/proj/train.py" in raw.stdout.decode()
