"""User names under HPC storage roots (/scratch, /lustre, /gpfs, /work, /data) are masked as
/home/<user> is, end to end from `rootrank diagnose`; common folder names and /root stay."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from rootrank.mask import Masker

MASKED = [
    ('File "/scratch/dave/proj/train.py", line 3', 'File "/scratch/<user>/proj/train.py", line 3'),
    ("/scratch1/01234/dave/run/x.py", "/scratch1/01234/<user>/run/x.py"),  # TACC: group id
    ("/pscratch/sd/d/dave/x.py", "/pscratch/sd/d/<user>/x.py"),  # NERSC
    ("/scratch/users/dave/x.py", "/scratch/users/<user>/x.py"),  # Stanford Sherlock
    ("/scratch/gpfs/dave/x.py", "/scratch/gpfs/<user>/x.py"),  # Princeton
    ("/lustre/orion/csc123/scratch/dave/r/x.py", "/lustre/orion/csc123/scratch/<user>/r/x.py"),
    ("/gpfs/alpine/csc123/scratch/dave/x.py", "/gpfs/alpine/csc123/scratch/<user>/x.py"),
    ("/lustre/fs1/dave/x.py", "/lustre/fs1/<user>/x.py"),
    ("/scratch/dave/a/b/c/d/e/f/g.py", "/scratch/<user>/a/b/c/d/e/f/g.py"),  # deep
    ("/work/dave/run", "/work/<user>/run"),
    ("/data/dave/ckpt/last.pt", "/data/<user>/ckpt/last.pt"),
    ("/mnt/scratch/erin/x.py", "/mnt/scratch/<user>/x.py"),
    ("cd /scratch/dave", "cd /scratch/<user>"),
    ("/data/jörg/x.py", "/data/<user>/x.py"),
    ("/scratch/john.smith/x.py", "/scratch/<user>/x.py"),
    # new-user trial r17, finding 3: the roots of ML clusters' user folders
    ('File "/fsx/carol/proj/train.py", line 3', 'File "/fsx/<user>/proj/train.py", line 3'),
    ("/checkpoint/carol/run1/last.pt", "/checkpoint/<user>/run1/last.pt"),
    ("/users/carol/train.py", "/users/<user>/train.py"),
    ("at /mnt/nfs/users/bob/proj/train.py:30", "at /mnt/nfs/users/<user>/proj/train.py:30"),
    ("/home2/carol/t.py", "/home2/<user>/t.py"),
]

KEPT = [
    "/root/proj/train.py",  # the superuser's home: no person's name
    "/data/imagenet/train/n01440764/x.JPEG",
    "/scratch/data/x.py",
    "/scratch/shared/models/llama/config.json",
    "/work/projects/x.py",
    "/data/ImageNet/x",  # upper case: no login name
    "/data/train.jsonl",  # a file, not a folder
    "/gpfs/alpine/proj/x.py",
    "/work/sft/train.py",  # container work folders named for the task
    "/work/rl/x/train.py",
    "/data/clips/0412.flac",
    "/home/<user>/data/foo/x.py",  # a folder inside a user's own tree
    "/scratch/<user>/x.py",  # masked already
]


@pytest.mark.parametrize(("raw", "masked"), MASKED)
def test_hpc_user_folders_are_masked(raw, masked):
    m = Masker()
    assert m.text(raw) == masked
    assert m.text(masked) == masked  # idempotent


@pytest.mark.parametrize("raw", KEPT)
def test_common_folders_and_root_are_kept(raw):
    assert Masker().text(raw) == raw


def test_a_name_learned_under_scratch_is_masked_in_other_paths_too():
    m = Masker()
    assert m.text("/scratch/dave/run1/out.log") == "/scratch/<user>/run1/out.log"
    assert m.text("/opt/envs/dave/bin/python") == "/opt/envs/<user>/bin/python"


def test_diagnose_masks_scratch_paths_in_every_format(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/scratch/dave/llm/train.py", line 42, in <module>\n'
        "[rank1]:     loss.backward()\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        " GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
        "[rank1]: checkpoint dir /lustre/orion/csc123/scratch/dave/ckpt, data /data/imagenet/train\n"
    )
    for fmt in ("text", "json", "markdown", "sarif", "github"):
        proc = run_cli("diagnose", str(log), "--format", fmt)
        out = proc.stdout.decode()
        assert proc.returncode == 0, proc.stderr.decode()
        assert "dave" not in out, fmt
    proc = run_cli("diagnose", str(log), "--format", "json")
    d = json.loads(proc.stdout)
    assert d["root_cause"]["failure_class"] == "cuda-oom" and d["initiating_rank"] == 1
    text = json.dumps(d)
    assert "/scratch/<user>/llm/train.py" in text
    proc = run_cli("diagnose", str(log), "--no-mask")
    assert "/scratch/dave/llm/train.py" in proc.stdout.decode()
