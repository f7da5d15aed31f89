"""A compressed per-rank file keeps the rank its name gives (trial r16 finding 4): ingest
decompresses ``rank3.log.gz``, ``slurm-4242-3.out.xz`` and a torchrun ``--log-dir`` tree's
``attempt_1/3/stderr.log.bz2``, so the path's rank rule reads each name without the
compression suffix, as it reads the uncompressed file."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.ranks import rank_from_path
from rootrank.runs import run_key

# Rank 3 raises; the others only time out in the broadcast that rank 3 never joined (the lines
# carry no rank prefix: the file's name is the only thing that says whose they are).
_WATCHDOG = (
    "[E1203 20:45:01.000000 77 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, NumelIn=1000, NumelOut=1000, "
    "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
)
_RAISER = (
    "step 40 loss 2.31\n"
    "Traceback (most recent call last):\n"
    '  File "/home/u/proj/train.py", line 88, in <module>\n'
    "    main()\n"
    '  File "/home/u/proj/train.py", line 61, in main\n'
    "    batch = collate(rows)\n"
    '  File "/home/u/proj/data.py", line 18, in collate\n'
    '    raise ValueError(f"sample {i} has {n} tokens")\n'
    "ValueError: sample 88213 has 9114 tokens\n"
)

_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("logs/rank3.log.gz", (3, False)),
        ("logs/rank3.log.ZST", (3, False)),
        ("slurm-4242-3.out.xz", (3, False)),
        ("logs/run/attempt_1/3/stderr.log.bz2", (3, True)),
        ("train.log.gz", (None, False)),
    ],
)
def test_rank_from_a_compressed_name(name: str, expected: tuple[int | None, bool]) -> None:
    assert rank_from_path(name) == expected


def test_a_bzip2_slurm_file_is_its_job() -> None:
    key = run_key("slurm-4242-3.out.bz2")
    assert key is not None and key.kind == "slurm" and key.name == "4242"


def _write(folder: Path, names: list[str], suffix: str) -> None:
    for r, name in enumerate(names):
        text = _RAISER if r == 3 else _WATCHDOG.format(r=r)
        path = folder / (name + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_COMPRESSORS[suffix](text.encode()))


@pytest.mark.parametrize("suffix", sorted(_COMPRESSORS))
@pytest.mark.parametrize(
    "layout",
    [
        [f"rank{r}.log" for r in range(4)],
        [f"slurm-4242-{r}.out" for r in range(4)],
        [f"run_abc/attempt_1/{r}/stderr.log" for r in range(4)],
    ],
)
def test_a_folder_of_compressed_rank_files_names_rank_3(
    tmp_path: Path, layout: list[str], suffix: str
) -> None:
    _write(tmp_path, layout, suffix)
    d = diagnose_paths([str(tmp_path)], mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "user-code-exception"
    assert d.initiating_rank == 3
