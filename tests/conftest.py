"""Shared test helpers: the repo root, the shared corpus (when present) and the CLI."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("ROOTRANK_CORPUS", ROOT.parent / "shared" / "corpus"))


def terminal_signals() -> None:
    """A ``preexec_fn`` for a command a test stops with Ctrl-C (``send_signal(SIGINT)``):
    SIGINT at its default in the child, as a terminal gives it, whatever the test run
    inherited. A suite started in the background of a non-interactive shell (``nohup ... &``)
    has SIGINT ignored; Python then installs no KeyboardInterrupt handler, and the Ctrl-C
    would never reach the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m rootrank ARGS`` as a user would (in ``cwd``, the clone by default);
    returns the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "rootrank", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        cwd=cwd or ROOT,
    )


class PipePieces(io.RawIOBase):
    """A pipe whose writes arrive in the given pieces of bytes (not seekable): a read gets at
    most one piece, cut to the reader's buffer, as ``read(2)`` on a pipe does."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def]
        if not self._pieces:
            return 0
        piece = self._pieces.pop(0)
        n = min(len(buf), len(piece))
        buf[:n] = piece[:n]
        if n < len(piece):
            self._pieces.insert(0, piece[n:])
        return n


@pytest.fixture(scope="session")
def library():
    from rootrank.engine import default_library

    return default_library()
