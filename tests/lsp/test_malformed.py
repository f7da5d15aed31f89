"""Every request gets a response, over real stdio (pytest-lsp): a request whose params do not
fit its method's type gets Invalid Params (-32602) naming the field, instead of silence until
the client's timeout; the server keeps serving afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LOG, copy_workspace, open_document, started, wait_for_diagnostics
from lsprotocol import types
from pygls.exceptions import JsonRpcException

INVALID_PARAMS = -32602
ANSWER_WITHIN_S = 20  # a missing answer shows as a timeout, not as a hang of the suite


def _range(a: int, b: int, c: int, d: int) -> dict[str, Any]:
    return {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}}


MALFORMED = [
    (
        "textDocument/codeAction",
        {"textDocument": {"uri": "file:///x.log"}},
        "required field missing @ $.params.range",
    ),
    ("textDocument/codeAction", None, "expected CodeActionParams @ $.params"),
    (
        "textDocument/codeAction",
        {"textDocument": {"uri": "file:///x.log"}, "range": "all", "context": {"diagnostics": []}},
        "@ $.params.range",
    ),
    (
        "textDocument/codeAction",
        {
            "textDocument": {"uri": "file:///x.log"},
            "range": _range(0, 0, 0, 1),
            "context": {"diagnostics": [{"code": 1}]},
        },
        "required field missing @ $.params.context.diagnostics[0].range",
    ),
    (
        "textDocument/codeAction",
        {
            "textDocument": {"uri": "file:///x.log"},
            "range": _range(-1, 0, 2**31, 0),
            "context": {"diagnostics": []},
        },
        "invalid value @ $.params.range.start",
    ),
    (
        "textDocument/hover",
        {"textDocument": {}},
        "required field missing @ $.params.textDocument.uri",
    ),
    ("textDocument/hover", [1, 2], "$.params"),
    ("workspace/executeCommand", {"arguments": []}, "required field missing @ $.params.command"),
]


async def _ask(client: Any, method: str, params: Any) -> Any:
    """Send ``params`` as given: the client's protocol is told no method has a type, so it
    sends pygls' generic request message instead of validating the params first (as a
    buggy or foreign client would)."""
    protocol = client.protocol
    protocol.get_message_type = lambda _method: None
    try:
        return await asyncio.wait_for(protocol.send_request_async(method, params), ANSWER_WITHIN_S)
    finally:
        del protocol.get_message_type  # back to the class's typed lookup


@pytest.mark.parametrize(
    ("method", "params", "where"),
    MALFORMED,
    ids=[f"{m}-{i}" for i, (m, _p, _w) in enumerate(MALFORMED)],
)
async def test_a_request_with_malformed_params_gets_invalid_params(
    tmp_path: Path, method: str, params: Any, where: str
):
    async with started(tmp_path) as client:
        with pytest.raises(JsonRpcException) as err:
            await _ask(client, method, params)
        assert err.value.code == INVALID_PARAMS
        assert f"{method}: " in err.value.message and where in err.value.message


async def test_the_server_keeps_serving_after_malformed_requests(tmp_path: Path):
    workspace = copy_workspace(tmp_path)
    async with started(workspace) as client:
        for method, params, _where in MALFORMED:
            with pytest.raises(JsonRpcException):
                await _ask(client, method, params)
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        assert root.code == "ddp-unused-parameters" and root.range.start.line == 12
        # well-formed requests about odd places still get their ordinary answers
        actions = await _ask(
            client,
            "textDocument/codeAction",
            {
                "textDocument": {"uri": "file:///never-opened.log"},
                "range": _range(5, 0, 1, 0),
                "context": {"diagnostics": []},
            },
        )
        assert list(actions) == []
        hover = await _ask(
            client,
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 10**6, "character": 0}},
        )
        assert hover is None
        with pytest.raises(JsonRpcException) as err:
            await _ask(
                client,
                "textDocument/definition",
                {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
            )
        assert err.value.code == -32601  # Method Not Found: still an answer


@pytest.mark.parametrize(
    "method", ["textDocument/didSave", "$/cancelRequest", "textDocument/didChange"]
)
async def test_a_notification_sent_with_an_id_is_answered_as_an_invalid_request(
    tmp_path: Path, method: str
):
    """An id makes a message a request, and every request gets an answer: a notification's
    method sent with an id gets Invalid Request (-32600), not silence."""
    async with started(tmp_path) as client:
        with pytest.raises(JsonRpcException) as err:
            await _ask(client, method, {"textDocument": {"uri": "file:///x.log"}, "id": 1})
        assert err.value.code == -32600
        assert f"{method} is a notification: send it without an id" in err.value.message
