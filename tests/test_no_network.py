"""No network, no traces: ``rootrank diagnose``, ``rootrank serve`` and the extension's server
entry (``python -m rootrank.server``) open no network socket and write no file.

The proof is a Python audit hook (PEP 578) installed before ``rootrank`` is imported in the
child process: every ``socket.__new__`` of an IP family, every ``connect``/``bind`` to a
non-Unix address and every name lookup is recorded *and blocked*; every ``open`` for writing,
``mkdir``, ``rename``, ``remove``... is recorded. The child reports what it saw on stderr at
exit. The child also runs with ``HOME``, ``XDG_*`` and the working directory pointing at an
empty folder, which must still be empty afterwards (no cache, no history, no telemetry).
A second test runs the CLI in a fresh network namespace (``unshare -n``), where no network
exists at all, and checks the diagnosis is the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

OOM = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")

GUARD = r"""
import json, os, socket, sys

seen = []
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_FS_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link",
              "os.truncate", "os.utime", "shutil.copyfile", "shutil.rmtree", "sqlite3.connect",
              "tempfile.mkstemp", "tempfile.mkdtemp"}
_NET_EVENTS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
               "socket.getnameinfo", "socket.sendto", "socket.sendmsg", "urllib.Request",
               "http.client.connect", "ftplib.connect", "smtplib.connect", "webbrowser.open"}

def hook(event, args):
    if event == "socket.__new__":
        family = args[1]
        if family not in (socket.AF_UNIX, -1) and family is not None:
            seen.append(["net", event, str(family)])
            raise PermissionError("rootrank test guard: network socket blocked")
    elif event in ("socket.connect", "socket.bind"):
        sock = args[0]
        if getattr(sock, "family", None) != socket.AF_UNIX:
            seen.append(["net", event, repr(args[1])])
            raise PermissionError("rootrank test guard: network use blocked")
    elif event in _NET_EVENTS:
        seen.append(["net", event, repr(args[:1])])
        raise PermissionError("rootrank test guard: network use blocked")
    elif event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        if isinstance(path, int) or path in ("/dev/null", "/dev/tty"):
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing:
            seen.append(["write", event, str(path)])
    elif event in _FS_EVENTS:
        seen.append(["write", event, repr(args[:1])])

sys.addaudithook(hook)

def report():
    os.write(2, ("\n@@guard=" + json.dumps(seen) + "\n").encode())

import atexit
atexit.register(report)
import runpy
mode = sys.argv[1]
sys.argv = sys.argv[1:]
if mode == "self-test":  # what the guard must catch
    for attempt in (lambda: socket.create_connection(("127.0.0.1", 9), timeout=1),
                    lambda: socket.getaddrinfo("example.org", 443),
                    lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
                    lambda: open(sys.argv[1], "w").close()):
        try:
            attempt()
        except OSError:
            pass
elif mode == "rootrank.server":
    sys.argv = ["rootrank.server"]
    runpy.run_module("rootrank.server", run_name="__main__")
else:
    sys.argv = ["rootrank", *sys.argv[1:]]
    runpy.run_module("rootrank", run_name="__main__")
"""


def _sandbox(tmp_path: Path) -> tuple[dict[str, str], Path]:
    home = tmp_path / "sandbox"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTHONSTARTUP", "HOME"))
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        TMPDIR=str(home / "tmp"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "server"), env.get("PYTHONPATH", "")])),
    )
    return env, home


def _guard_report(stderr: bytes) -> tuple[str, list[list[str]]]:
    text = stderr.decode("utf-8", "replace")
    body, _, tail = text.rpartition("\n@@guard=")
    assert tail, f"the guard did not report: {text[-2000:]}"
    # The report is one JSON line; the interpreter may print warnings after it at exit.
    return body, json.loads(tail.strip().splitlines()[0])


def _files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_guard_catches_sockets_lookups_and_writes(tmp_path: Path) -> None:
    env, home = _sandbox(tmp_path)
    target = home / "written.txt"
    done = subprocess.run(
        [sys.executable, "-c", GUARD, "self-test", str(target)],
        capture_output=True,
        check=False,
        timeout=60,
        cwd=home,
        env=env,
    )
    _, seen = _guard_report(done.stderr)
    kinds = [(kind, event) for kind, event, _ in seen]
    assert ("net", "socket.__new__") in kinds
    assert ("net", "socket.getaddrinfo") in kinds
    assert ("write", "open") in kinds and target.exists()


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_diagnose_opens_no_socket_and_writes_nothing(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "oom.log"
    log.write_text(OOM)
    env, home = _sandbox(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", GUARD, "cli", "diagnose", str(log), "--format", fmt],
        capture_output=True,
        check=False,
        timeout=300,
        cwd=home,
        env=env,
    )
    _, seen = _guard_report(done.stderr)
    assert done.returncode == 0, done.stderr.decode()
    assert b"cuda-oom" in done.stdout
    assert seen == []
    assert _files_in(home) == []


def test_nothing_found_and_input_errors_write_nothing(tmp_path: Path) -> None:
    env, home = _sandbox(tmp_path)
    healthy = tmp_path / "ok.log"
    healthy.write_text("step 1 loss 2.3\nstep 2 loss 2.2\n")
    for args, code in (([str(healthy)], 1), ([str(tmp_path / "missing.log")], 2)):
        done = subprocess.run(
            [sys.executable, "-c", GUARD, "cli", "diagnose", *args],
            capture_output=True,
            check=False,
            timeout=300,
            cwd=home,
            env=env,
        )
        _, seen = _guard_report(done.stderr)
        assert done.returncode == code
        assert seen == []
    assert _files_in(home) == []


# -- the language server over real stdio ---------------------------------------------------------


class _Client:
    """A minimal LSP client over the child's stdio (JSON-RPC with Content-Length framing)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.messages: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                ch = out.read(1)
                if not ch:
                    return
                header += ch
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            body = json.loads(out.read(length))
            with self.cond:
                self.messages.append(body)
                self.cond.notify_all()

    def send(self, payload: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float = 120) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        with self.cond:
            ok = self.cond.wait_for(
                lambda: any(m.get("id") == rid and "method" not in m for m in self.messages),
                timeout,
            )
            assert ok, f"no answer to {method}"
            answer = next(m for m in self.messages if m.get("id") == rid and "method" not in m)
        assert "error" not in answer, answer
        return answer["result"]

    def wait_for(self, method: str, timeout: float = 120) -> dict[str, Any]:
        with self.cond:
            ok = self.cond.wait_for(
                lambda: any(m.get("method") == method for m in self.messages), timeout
            )
            assert ok, f"no {method}"
            return next(m for m in self.messages if m.get("method") == method)

    def answer_server_requests(self) -> None:
        # workspace/configuration, window/workDoneProgress/create...: reply with nulls.
        with self.cond:
            pending = [
                m for m in self.messages if "method" in m and "id" in m and not m.get("_done")
            ]
            for m in pending:
                m["_done"] = True
        for m in pending:
            result: Any = (
                [None] * len(m.get("params", {}).get("items", []))
                if m["method"] == "workspace/configuration"
                else None
            )
            self.send({"id": m["id"], "result": result})


@pytest.mark.parametrize(
    "entry",
    [["cli", "serve"], ["rootrank.server"]],
    ids=["rootrank serve", "python -m rootrank.server (extension)"],
)
def test_language_server_opens_no_socket_and_writes_nothing(
    tmp_path: Path, entry: list[str]
) -> None:
    env, home = _sandbox(tmp_path)
    log = tmp_path / "run" / "oom.log"
    log.parent.mkdir()
    log.write_text(OOM)
    uri = log.as_uri()
    proc = subprocess.Popen(
        [sys.executable, "-c", GUARD, *entry],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=home,
        env=env,
    )
    client = _Client(proc)
    try:
        client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": log.parent.as_uri(), "capabilities": {}},
        )
        client.send({"method": "initialized", "params": {}})
        client.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "log", "version": 1, "text": OOM}
                },
            }
        )
        published = client.wait_for("textDocument/publishDiagnostics")
        client.answer_server_requests()
        codes = {d.get("code") for d in published["params"]["diagnostics"]}
        assert "cuda-oom" in codes
        hover = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 8, "character": 20}},
        )
        assert hover is not None and "out of memory" in json.dumps(hover).lower()
        diag = client.request(
            "workspace/executeCommand",
            {"command": "rootrank.diagnose", "arguments": [{"text": OOM}]},
        )
        assert diag["root_cause"]["failure_class"] == "cuda-oom"
        assert diag["initiating_rank"] == 5
        client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
        client.request("shutdown", None)
        client.send({"method": "exit"})
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    _, seen = _guard_report(proc.stderr.read())
    assert seen == []
    assert _files_in(home) == []


# -- a network namespace: no network exists at all ------------------------------------------------


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="unshare -n is not permitted here")
def test_diagnose_in_a_network_namespace(tmp_path: Path) -> None:
    log = tmp_path / "oom.log"
    log.write_text(OOM)
    inside = subprocess.run(
        [
            "unshare",
            "-n",
            sys.executable,
            "-m",
            "rootrank",
            "diagnose",
            str(log),
            "--format",
            "json",
        ],
        capture_output=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    outside = subprocess.run(
        [sys.executable, "-m", "rootrank", "diagnose", str(log), "--format", "json"],
        capture_output=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    assert inside.returncode == outside.returncode == 0, inside.stderr.decode()
    assert json.loads(inside.stdout) == json.loads(outside.stdout)
