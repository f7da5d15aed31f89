"""``rootrank serve`` over real stdio, raw bytes in: a malformed message or params that do not
fit the method's type get the right JSON-RPC error, and the server's stderr (an editor's
output channel) gets one line per such message, never pygls' Python traceback. The -32602
message names the LSP field a client sent (``textDocument``), not the Python attribute."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVER_DIR = Path(__file__).resolve().parents[2] / "server"


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def message(**fields: Any) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **fields}).encode())


def responses(out: bytes) -> dict[Any, dict[str, Any]]:
    """The server's responses by id (notifications left out)."""
    found: dict[Any, dict[str, Any]] = {}
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = next(
            int(h.split(b":", 1)[1])
            for h in head.split(b"\r\n")
            if h.lower().startswith(b"content-length")
        )
        msg = json.loads(rest[:length])
        out = rest[length:]
        if "id" in msg and "method" not in msg:
            found[msg["id"]] = msg
    return found


def test_malformed_messages_get_errors_and_one_stderr_line_each() -> None:
    session = (
        message(id=1, method="initialize", params={"capabilities": {}})
        + message(method="initialized", params={})
        + frame(b"{not json")
        + message(id=2, method="textDocument/hover", params={"textDocument": {}})
        + message(
            id=3,
            method="textDocument/codeAction",
            params={"textDocument": {"uri": "file:///x.log"}},
        )
        + message(method="textDocument/didOpen", params={"textDocument": {"uri": "file:///y.log"}})
        + message(id=4, method="shutdown")
        + message(method="exit")
    )
    env = {**os.environ, "PYTHONPATH": str(SERVER_DIR)}
    run = subprocess.run(
        [sys.executable, "-m", "rootrank.server"],
        input=session,
        capture_output=True,
        timeout=120,
        env=env,
    )
    answers = responses(run.stdout)
    assert answers[None]["error"]["code"] == -32700
    assert answers[2]["error"]["code"] == -32602
    assert answers[2]["error"]["message"] == (
        "Invalid Params: textDocument/hover: required field missing @ $.params.textDocument.uri;"
        " required field missing @ $.params.position"
    )
    assert "text_document" not in json.dumps(answers)
    assert answers[3]["error"]["code"] == -32602
    assert answers[4]["result"] is None  # still serving after all of them

    err = run.stderr.decode()
    assert "Traceback" not in err and "Exception Group" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith(("answering", "dropped"))]
    assert [ln.split(":", 1)[0] for ln in lines] == [
        "answering None with error -32700",
        "answering 2 with error -32602",
        "answering 3 with error -32602",
        "dropped notification textDocument/didOpen",
    ], err
    assert lines[-1] == (
        "dropped notification textDocument/didOpen: required field missing @"
        " $.params.textDocument.languageId; required field missing @ $.params.textDocument.version;"
        " required field missing @ $.params.textDocument.text"
    )
