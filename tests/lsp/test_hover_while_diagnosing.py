"""A hover right after a large log is opened (pytest-lsp over real stdio).

The diagnosis of a 24 MB log takes seconds; a hover sent meanwhile used to come back empty
(``null``, as on a line without a finding), so the user saw nothing and had no reason to hover
again. Now it waits a moment for the result and otherwise says, in one short line, that the
log is being diagnosed; every hover sent during the run is answered, and once the diagnosis
is there the same hover gives the entry.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from lsp_client import FIXTURES, copy_workspace, open_document, started, wait_for_diagnostics
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_stress import big_log

from rootrank.lsp.server import HOVER_WAIT_SECONDS

OPTIONS = {"signatureFolders": [str(FIXTURES / "signatures")]}
DIAGNOSING = re.compile(r"rootrank: diagnosing big\.log \(2[45]\.\d MB(, \d{1,2}% read)?\)…")
ENTRY_HEAD = "### DDP found parameters that received no gradient"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_workspace(tmp_path)


async def hover(client: LanguageClient, uri: str, line: int) -> types.Hover | None:
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=3),
        )
    )


def text_of(result: types.Hover | None) -> str:
    assert result is not None, "a hover came back empty"
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def test_hover_right_after_opening_a_large_log(workspace: Path) -> None:
    text, root_line = big_log(24_000_000)
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, workspace / "logs" / "big.log", text=text)
        started_at = time.monotonic()
        first = await hover(client, uri, root_line)
        waited = time.monotonic() - started_at

        # The run is not over: a short line that says so, after a bounded wait.
        assert uri not in client.diagnostics
        assert first is not None and isinstance(first.contents, types.MarkupContent)
        assert first.contents.kind == types.MarkupKind.PlainText
        assert DIAGNOSING.fullmatch(first.contents.value), first.contents.value
        assert HOVER_WAIT_SECONDS <= waited < HOVER_WAIT_SECONDS + 4

        # Every hover sent while it runs is answered: "diagnosing…" or, once ready, the entry.
        during = await asyncio.gather(*(hover(client, uri, root_line) for _ in range(6)))
        for result in during:
            value = text_of(result)
            assert DIAGNOSING.fullmatch(value) or value.startswith(ENTRY_HEAD), value

        diagnostics = await wait_for_diagnostics(client, uri, timeout=180)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        assert root.range.start.line == root_line and root.code == "ddp-unused-parameters"

        # Ready: the entry on the root cause's line, nothing on a progress line.
        ready = text_of(await hover(client, uri, root_line))
        assert ready.startswith(ENTRY_HEAD) and "rank **2**" in ready
        assert await hover(client, uri, 0) is None


async def test_hover_on_a_document_rootrank_does_not_diagnose(workspace: Path) -> None:
    """A Python file is never diagnosed: its hover is empty at once, with no wait."""
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, workspace / "train.py", language_id="python")
        started_at = time.monotonic()
        assert await hover(client, uri, 15) is None
        assert time.monotonic() - started_at < HOVER_WAIT_SECONDS
