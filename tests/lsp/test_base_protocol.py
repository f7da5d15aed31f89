"""The JSON-RPC 2.0 and LSP base-protocol answers of ``rootrank serve``, over real stdio
(pytest-lsp's client, with raw bytes written to the server's stdin where a well-behaved
client could not send them):

- content that is not JSON: a Parse error response (-32700) with ``"id": null``, never a
  ``window/showMessage``;
- a request for a method nobody serves: Method not found (-32601), with or without params;
  an unknown notification: no answer at all;
- JSON that is no request object: Invalid Request (-32600), with the id when it has one;
- a header block that is not ``Content-Length: N``: the input is skipped up to the next
  header, a ``window/logMessage`` says how many bytes, and the next request is answered;
- a request after ``shutdown``: Invalid Request.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LOG, copy_workspace, open_document, started, wait_for_diagnostics
from lsprotocol import types

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
ANSWER_WITHIN_S = 20


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def message(**fields: Any) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **fields}).encode())


def recording(client: Any) -> list[Any]:
    """Every message the client receives from now on, as pygls parsed it."""
    seen: list[Any] = []
    handle = client.protocol.handle_message

    def record(msg: Any) -> None:
        seen.append(msg)
        handle(msg)

    client.protocol.handle_message = record
    return seen


async def send_raw(client: Any, data: bytes) -> None:
    client.protocol.writer.write(data)
    await client.protocol.writer.drain()


async def error_responses(seen: list[Any], count: int) -> list[types.ResponseErrorMessage]:
    """Wait for ``count`` error responses (those the client did not ask for included)."""
    for _ in range(ANSWER_WITHIN_S * 50):
        errors = [m for m in seen if isinstance(m, types.ResponseErrorMessage)]
        if len(errors) >= count:
            return errors
        await asyncio.sleep(0.02)
    raise AssertionError(f"{count} error response(s) expected, got {seen!r}")


async def hover_nowhere(client: Any) -> Any:
    """An ordinary request, answered ``None``: proves the server still reads and answers."""
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri="file:///never-opened.log"),
                position=types.Position(line=0, character=0),
            )
        ),
        ANSWER_WITHIN_S,
    )


async def test_invalid_json_gets_a_parse_error_with_null_id(tmp_path: Path) -> None:
    async with started(tmp_path) as client:
        seen = recording(client)
        await send_raw(client, frame(b'{"jsonrpc": "2.0", "id": 4, "method": '))
        await send_raw(client, frame(b'{"ok": "\xff"}'))
        errors = await error_responses(seen, 2)
        assert [(e.id, e.error.code) for e in errors] == [(None, PARSE_ERROR)] * 2
        assert "Expecting value" in errors[0].error.message  # the decoder's own words
        assert await hover_nowhere(client) is None
        assert client.messages == []  # no window/showMessage for it


async def test_parse_error_response_is_sent_with_an_explicit_null_id(tmp_path: Path) -> None:
    """JSON-RPC 2.0 section 5: the id member is required, null when it cannot be known (a
    response without it is neither response nor notification to vscode-jsonrpc)."""
    async with started(tmp_path) as client:
        raw: list[dict[str, Any]] = []
        structure = client.protocol.structure_message

        def keep(data: dict[str, Any]) -> Any:
            if "error" in data:
                raw.append(dict(data))
            return structure(data)

        client.protocol.structure_message = keep
        await send_raw(client, frame(b"not json at all"))
        for _ in range(ANSWER_WITHIN_S * 50):
            if raw:
                break
            await asyncio.sleep(0.02)
        assert raw and raw[0]["id"] is None and "id" in raw[0]
        assert raw[0]["error"]["code"] == PARSE_ERROR


@pytest.mark.parametrize("params", [{"a": 1}, None], ids=["with-params", "without-params"])
async def test_an_unknown_request_method_gets_method_not_found(tmp_path: Path, params: Any) -> None:
    async with started(tmp_path) as client:
        for method in ("rootrank/noSuchMethod", "$/rootrank/noSuchMethod"):
            fields = {"id": f"req-{method}", "method": method}
            if params is not None:
                fields["params"] = params
            seen = recording(client)
            await send_raw(client, message(**fields))
            [error] = await error_responses(seen, 1)
            assert (error.id, error.error.code) == (f"req-{method}", METHOD_NOT_FOUND)
            assert method in error.error.message


async def test_unknown_notifications_stay_silent(tmp_path: Path) -> None:
    async with started(tmp_path) as client:
        seen = recording(client)
        await send_raw(client, message(method="$/rootrank/unknown", params={"x": 1}))
        await send_raw(client, message(method="$/rootrank/unknown"))
        await send_raw(client, message(method="rootrank/unknownNotification"))
        assert await hover_nowhere(client) is None  # answered after the three were read
        assert [m for m in seen if isinstance(m, types.ResponseErrorMessage)] == []
        assert client.messages == []


@pytest.mark.parametrize(
    ("body", "expected_id"),
    [
        (b"[1, 2]", None),  # a batch: LSP does not use them
        (b'{"id": 3, "method": "shutdown"}', 3),  # no "jsonrpc": "2.0"
        (b'{"jsonrpc": "1.0", "id": 5, "method": "shutdown"}', 5),
        (b'{"jsonrpc": "2.0", "id": 6, "method": 7}', 6),
        (b'{"jsonrpc": "2.0", "id": [1], "method": "shutdown"}', None),
        (b"{}", None),
    ],
    ids=["batch", "no-jsonrpc", "jsonrpc-1.0", "method-not-string", "id-array", "empty-object"],
)
async def test_json_that_is_no_request_gets_invalid_request(
    tmp_path: Path, body: bytes, expected_id: Any
) -> None:
    async with started(tmp_path) as client:
        seen = recording(client)
        await send_raw(client, frame(body))
        [error] = await error_responses(seen, 1)
        assert (error.id, error.error.code) == (expected_id, INVALID_REQUEST)
        assert await hover_nowhere(client) is None  # and it did not shut the server down


GARBAGE = [
    # (what is written before a valid request, bytes the server reports as skipped)
    (b"Garbage header\r\n\r\n{}", 20),  # its content glued to the next header
    (b"X-Thing: 1\r\n\r\nsome body\n", 24),  # a header block without Content-Length
    (b"Content-Length: abc\r\n\r\n{}\r\n", 27),
    (b"Content-Length\r\n", 16),
    (b"x" * 200_000, 200_000),  # a line with no newline, far longer than any header
    (b"\x00\xff\xfe garbage \r\n" * 50, 700),
]


@pytest.mark.parametrize(
    ("garbage", "skipped"),
    GARBAGE,
    ids=["glued", "no-content-length", "length-not-a-number", "no-colon", "long", "binary"],
)
async def test_reading_resumes_at_the_next_header_after_garbage(
    tmp_path: Path, garbage: bytes, skipped: int
) -> None:
    async with started(tmp_path) as client:
        await send_raw(client, garbage)
        assert await hover_nowhere(client) is None  # the request after the garbage
        assert await hover_nowhere(client) is None  # and the next one
        notes = [m.message for m in client.log_messages if "skipped" in m.message]
        assert len(notes) == 1, notes
        assert f"skipped {skipped} byte(s)" in notes[0]
        assert client.messages == []


async def test_a_garbage_header_does_not_lose_the_documents(tmp_path: Path) -> None:
    """A document opened before garbage is still diagnosed and hovered after it, and one
    opened after it is diagnosed too (didOpen is a notification: its loss would be silent)."""
    workspace = copy_workspace(tmp_path)
    async with started(workspace) as client:
        first = open_document(client, workspace / "logs" / LOG)
        await send_raw(client, b"Garbage header\r\n\r\n{}")
        second = open_document(
            client, workspace / "logs" / "again.log", text=(workspace / "logs" / LOG).read_text()
        )
        for uri in (first, second):
            diagnostics = await wait_for_diagnostics(client, uri)
            root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
            assert (root.code, root.range.start.line) == ("ddp-unused-parameters", 12)


async def test_a_request_after_shutdown_gets_invalid_request(tmp_path: Path) -> None:
    """LSP ``shutdown``: requests after it error with InvalidRequest. (Sent raw: pygls'
    client itself stops handling what arrives once it has sent ``shutdown``.)"""
    async with started(tmp_path) as client:
        seen = recording(client)
        await send_raw(client, message(id="bye", method="shutdown"))
        where = {"textDocument": {"uri": "file:///x.log"}, "position": {"line": 0, "character": 0}}
        await send_raw(client, message(id="late", method="textDocument/hover", params=where))
        [error] = await error_responses(seen, 1)
        assert (error.id, error.error.code) == ("late", INVALID_REQUEST)
        assert "shut down" in error.error.message
        assert [m.result for m in seen if getattr(m, "id", None) == "bye"] == [None]
        client.exit(None)  # (the context's own shutdown would now be refused)
