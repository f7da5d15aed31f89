"""A verification command must be able to fail (rootrank.verify_check)."""

from __future__ import annotations

import pytest
from conftest import ROOT

from rootrank.verify_check import cannot_fail

# -- a verification command must be able to fail --------------------------------------------


@pytest.mark.parametrize(
    "command, program",
    [
        ("df -h /dev/shm  # several GB", "df"),
        ("sacct -j <jobid> -o State  # COMPLETED", "sacct"),
        ("dmesg -T | tail  # no new Xid", "tail"),
        ("nvidia-smi -L | wc -l", "wc"),
        ("torchrun --nproc-per-node=2 train.py 2>&1 | tee run.log", "tee"),
        ("torchrun train.py; echo done", "echo"),
        ("python train.py || true", "true"),
        ("sudo -E dmesg && free -g", "free"),
    ],
)
def test_commands_that_exit_0_whatever_happened_cannot_fail(command, program):
    why = cannot_fail(command)
    assert why is not None and f"'{program}'" in why


@pytest.mark.parametrize(
    "command",
    [
        "sacct -j <new jobid> -n -X -o State | grep -q COMPLETED",
        "! journalctl -k | grep -q oom_reaper  # nothing killed",
        'test "$(nvidia-smi -L | wc -l)" -eq 8',
        "df -h /data && python -c 'import torch; assert torch.cuda.is_available()'",
        "NCCL_DEBUG=WARN timeout 600 torchrun --nproc-per-node=2 train.py  # exit 0",
        "/usr/bin/time -v torchrun train.py 2>&1 | grep 'Maximum resident'",
    ],
)
def test_commands_whose_status_shows_a_failure_can_fail(command):
    assert cannot_fail(command) is None


def test_the_library_check_refuses_a_verify_that_cannot_fail(tmp_path):
    from rootrank.signatures import SignatureProblems, load_signature

    text = (ROOT / "signatures" / "io" / "disk-full.yaml").read_text(encoding="utf-8")
    lines = [
        'verify: "df -h <output_dir>  # enough free space"' if line.startswith("verify:") else line
        for line in text.split("\n")
    ]
    target = tmp_path / "io" / "disk-full.yaml"
    target.parent.mkdir()
    target.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises((SignatureProblems, ValueError)) as err:
        load_signature(target)
    assert "verify" in str(err.value) and "cannot fail" in str(err.value)


def test_a_negated_probe_that_is_true_once_the_job_died_is_refused():
    from rootrank.verify_check import cannot_fail

    assert "'ss'" in (cannot_fail("! ss -ltn | grep -q ':29500 '  # port free") or "")
    assert "'pgrep'" in (cannot_fail("! pgrep -f train.py") or "")
    # a rerun after the probe is judged by the rerun
    assert cannot_fail("! ss -ltn | grep -q ':29500 ' && torchrun --nproc-per-node=2 train.py") is None
    assert cannot_fail("ss -ltnp | grep -q ':29500 '") is None
