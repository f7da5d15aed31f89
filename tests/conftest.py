"""Shared test helpers: the repo root, the shared corpus (when present) and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("ROOTRANK_CORPUS", ROOT.parent / "shared" / "corpus"))


def run_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m rootrank ARGS`` as a user would; returns the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "rootrank", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture(scope="session")
def library():
    from rootrank.engine import default_library

    return default_library()
