"""A per-rank file whose lines carry the application's own ``[rankN] `` tag (space, no colon).

The file's name gives a rank (``slurm-%j-%t.out``, ``rank3.log``, a torchrun ``--log-dir``
tree); the tag on each line must still be peeled like any prefix, or the traceback behind it
is not seen at all (trial r22, finding 1: "No known failure found." on a KeyError). The line's
own tag wins over the file's name where they differ.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths

LINES = [
    "step 10 loss 1.23",
    "Traceback (most recent call last):",
    '  File "/home/bob/train.py", line 40, in <module>',
    '    x = batch["pixel_values"]',
    "KeyError: 'pixel_values'",
]


def _write(path: Path, tag: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{tag}{line}\n" for line in LINES))
    return path


@pytest.mark.parametrize(
    "name", ["slurm-4242-3.out", "rank3.log", "worker-3.log", "attempt_0/3/stderr.log"]
)
def test_own_tag_in_a_rank_named_file_is_peeled(tmp_path: Path, name: str) -> None:
    d = diagnose_paths([str(_write(tmp_path / name, "[rank3] "))])
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 3
    ev = d.root_cause.evidence[0]
    assert (ev.line, ev.text, ev.rank) == (5, "KeyError: 'pixel_values'", 3)  # 1-based line


def test_the_lines_own_tag_wins_over_the_file_name(tmp_path: Path) -> None:
    d = diagnose_paths([str(_write(tmp_path / "slurm-4242-3.out", "[rank1717] "))])
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1717


def test_untagged_lines_keep_the_file_names_rank(tmp_path: Path) -> None:
    d = diagnose_paths([str(_write(tmp_path / "slurm-4242-5.out", ""))])
    assert d.root_cause is not None
    assert d.initiating_rank == 5


def test_a_tracebacks_indentation_under_the_tag_is_kept(tmp_path: Path) -> None:
    # trial r22b, finding 1: "[rank2]   File ..." lost its indentation with the tag, so the
    # traceback's frames were dropped (no file:line, a generic fix)
    lines = [
        "[rank2] step 3 loss 1.0",
        "[rank2] Traceback (most recent call last):",
        '[rank2]   File "/home/bob/proj/train.py", line 80, in <module>',
        "[rank2]     main()",
        '[rank2]   File "/home/bob/proj/data.py", line 57, in load',
        '[rank2]     x = rec["pixel_values"]',
        "[rank2] KeyError: 'pixel_values'",
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    d = diagnose_paths([str(log)])
    assert d.root_cause is not None
    assert d.initiating_rank == 2
    frames = [(f["file"], f["line"]) for f in d.root_cause.frames]
    assert frames == [("/home/<user>/proj/train.py", 80), ("/home/<user>/proj/data.py", 57)]
