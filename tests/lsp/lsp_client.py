"""Helpers for the language-server tests: start ``python -m rootrank.server`` over real
stdio with pytest-lsp's client, in a copy of the fixture workspace.

(Not named ``conftest.py``: the suite's other tests import helpers ``from conftest``, and a
second ``conftest`` module here would shadow theirs.)"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import re
import shutil
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SERVER = [sys.executable, "-m", "rootrank.server"]
LOG = "ddp-unused-rank2.log"


def copy_workspace(tmp_path: Path) -> Path:
    """A fresh copy of ``fixtures/workspace`` under ``tmp_path`` (edits are applied to it)."""
    target = tmp_path / "proj"
    shutil.copytree(FIXTURES / "workspace", target)
    return target


def capabilities(progress: bool = True) -> types.ClientCapabilities:
    """A client that supports what VS Code supports for these features."""
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(
            work_done_progress=progress,
            show_document=types.ShowDocumentClientCapabilities(support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True,
                version_support=True,
                code_description_support=True,
                data_support=True,
            ),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        ),
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16]
        ),
    )


EXTENSION_COMMANDS = Path(__file__).resolve().parents[2] / "extension" / "src" / "clientCommands.ts"


def extension_client_commands() -> list[str]:
    """The command ids the VS Code extension sends as ``clientCommands`` (the string
    constants of ``extension/src/clientCommands.ts``), so the tests follow the TypeScript."""
    text = EXTENSION_COMMANDS.read_text(encoding="utf-8")
    return re.findall(r"^export const [A-Z_]+ = '([\w.]+)';", text, flags=re.MULTILINE)


def make_client(show_document_null: bool = False) -> LanguageClient:
    """pytest-lsp's test client, also recording the version of each diagnostics batch
    (``client.diagnostic_versions``) and how many batches arrived (``client.publish_count``).

    ``show_document_null``: the client answers ``window/showDocument`` with ``result: null``
    (no ShowDocumentResult), as a hand-written client did in a trial, and records the
    request in ``client.shown_documents`` all the same."""
    client = LanguageClient(converter_factory=default_converter)
    replaced = {types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS}
    if show_document_null:
        replaced.add(types.WINDOW_SHOW_DOCUMENT)
    features = {k: v for k, v in DEFAULT_CLIENT_FEATURES.items() if k not in replaced}
    register_lsp_features(client, features)
    client.diagnostic_versions = {}  # type: ignore[attr-defined]
    client.publish_count = 0  # type: ignore[attr-defined]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish_diagnostics(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.diagnostic_versions[params.uri] = params.version  # type: ignore[attr-defined]
        ls.publish_count += 1  # type: ignore[attr-defined]

    if show_document_null:

        @client.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(ls: LanguageClient, params: types.ShowDocumentParams) -> None:
            ls.shown_documents.append(params)

    return client


def command_of(item: Any) -> tuple[str, list[Any]]:
    """(command name, arguments) of a code action that carries a command.

    lsprotocol's client-side converter turns a ``CodeAction`` with a ``command`` into a
    ``Command`` whose ``command`` is the repr of the nested dict (its union hook looks only
    for a ``command`` key); both shapes are accepted here.
    """
    nested = item.command
    if isinstance(nested, str) and nested.startswith("{"):
        nested = ast.literal_eval(nested)  # cattrs turned the nested dict into its repr
    if isinstance(nested, dict):
        return nested["command"], list(nested.get("arguments") or [])
    if isinstance(nested, types.Command):
        return nested.command, list(nested.arguments or [])
    return str(nested), list(getattr(item, "arguments", None) or [])


@contextlib.asynccontextmanager
async def started(
    root: Path | None,
    options: dict[str, Any] | None = None,
    *,
    progress: bool = True,
    client_capabilities: types.ClientCapabilities | None = None,
    show_document_null: bool = False,
) -> AsyncIterator[LanguageClient]:
    """A client connected to a fresh server, initialized with ``options`` and
    ``client_capabilities`` (default :func:`capabilities`); ``show_document_null`` as in
    :func:`make_client`."""
    client = await ClientServerConfig(
        server_command=SERVER, client_factory=lambda: make_client(show_document_null)
    ).start()
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities or capabilities(progress),
                root_uri=from_fs_path(str(root)) if root else None,
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)
                ]
                if root
                else None,
                initialization_options=options,
            )
        )
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 20)
        with contextlib.suppress(Exception):
            await client.stop()


def open_document(
    client: LanguageClient,
    path: Path,
    text: str | None = None,
    language_id: str = "plaintext",
    version: int = 1,
) -> str:
    """Send ``didOpen`` for ``path`` (its text from disk unless given); returns the URI."""
    uri = from_fs_path(str(path))
    assert uri
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id=language_id,
                version=version,
                text=path.read_text(encoding="utf-8") if text is None else text,
            )
        )
    )
    return uri


async def wait_for_diagnostics(
    client: LanguageClient, uri: str, timeout: float = 60, version: int | None = None
) -> list[types.Diagnostic]:
    """Wait until diagnostics for ``uri`` (of ``version`` when given) have been published."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if uri in client.diagnostics and (
            version is None or getattr(client, "diagnostic_versions", {}).get(uri) == version
        ):
            return list(client.diagnostics[uri])
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for {uri} within {timeout} s")
