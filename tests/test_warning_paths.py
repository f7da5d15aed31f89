"""The report's warnings begin with the path they are about (``"tl2: the folder holds 2
runs ..."``): the path is masked as a path and the rest as text, so a folder whose name has a
digit is not read as a pdsh host prefix (``node01: ...``) and shown as ``host-1`` (round-12
trial, item 10)."""

from __future__ import annotations

import os

from rootrank.engine import diagnose_paths
from rootrank.mask import Masker
from rootrank.mask_walk import ABOUT_PATH, mask_result

OOM = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/home/jdoe/proj/train.py", line 9, in <module>\n'
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has"
    " a total capacity of 79.15 GiB of which 1.2 GiB is free.\n"
)


def _run(root, name: str, when: float) -> None:
    for r in range(2):
        d = root / name / "attempt_0" / str(r)
        d.mkdir(parents=True)
        log = d / "stderr.log"
        log.write_text(OOM.replace("[rank1]: ", "") if r == 1 else "step 1/10 loss 2.0\n")
        os.utime(log, (when, when))


def test_a_folder_named_like_a_host_keeps_its_name_in_the_warning(tmp_path, monkeypatch):
    _run(tmp_path / "tl2", "old_run", 1_700_000_000)
    _run(tmp_path / "tl2", "new_run", 1_700_000_600)
    monkeypatch.chdir(tmp_path)
    d = diagnose_paths(["tl2"], mask=True)
    assert d.warnings == [
        "tl2: the folder holds 2 runs: diagnosed torchrun run new_run attempt 0 (the newest);"
        " left out torchrun run old_run attempt 0 (name their files to diagnose them, or"
        " `rootrank triage` the folder for every run)"
    ]
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"


def test_the_path_and_the_rest_are_both_masked():
    m = Masker()
    got = mask_result(
        [
            "/home/jdoe/logs/gpu07: a token hf_abcdefghijklmnopqrstuvwxyz0123 in the rest",
            "not read: /home/jdoe/x.log: binary data, not a text log",
        ],
        m,
        ABOUT_PATH,
    )
    assert got == [
        "/home/<user>/logs/gpu07: a token hf_*** in the rest",
        "not read: /home/<user>/x.log: binary data, not a text log",
    ]
