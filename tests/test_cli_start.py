"""``rootrank diagnose`` starts without what a tiny log never needs (issue 11), with the same
help: argparse's formatter width found without importing :mod:`shutil`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rootrank import cli

SERVER = Path(__file__).resolve().parents[1] / "server"


@pytest.mark.parametrize("columns", [None, "120", "0", "-3", "abc", " 57 ", "1_00"])
def test_formatter_width_is_argparse_own(
    monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours = cli._RawFormatter("rootrank")
    theirs = argparse.RawDescriptionHelpFormatter("rootrank")
    assert ours._width == theirs._width
    assert cli._terminal_columns() - 2 == theirs._width


def test_diagnose_help_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    ours = cli._parser("diagnose")
    monkeypatch.setattr(cli, "_RawFormatter", argparse.RawDescriptionHelpFormatter)
    theirs = cli._parser("diagnose")
    assert ours.format_help() == theirs.format_help()
    sub = ours._subparsers._group_actions[0].choices["diagnose"]  # type: ignore[union-attr]
    sub_theirs = theirs._subparsers._group_actions[0].choices["diagnose"]  # type: ignore[union-attr]
    assert sub.format_help() == sub_theirs.format_help()
    assert "--no-mask" in sub.format_help()


def test_tiny_log_imports_no_shutil(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 3, in <module>\n'
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    code = (
        "import sys, json\n"
        "from rootrank import cli\n"
        f"sys.argv = ['rootrank', 'diagnose', {str(log)!r}, '--format', 'json']\n"
        "try:\n    code = cli.main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print(json.dumps([code, sorted(m for m in ('shutil', 'bz2', 'lzma') if m in sys.modules)]),"
        " file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    code_seen, imported = json.loads(out.stderr.strip().splitlines()[-1])
    diag = json.loads(out.stdout)
    assert code_seen in (0, None)
    assert diag["root_cause"]["signature"] == "cuda-oom"
    assert imported == []
