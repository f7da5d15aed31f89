"""Engine runs in child processes, so that a 50 MB log never blocks the protocol thread.

Why processes and not threads: the engine is CPU-bound Python; in a thread it would hold
the GIL between bytecodes and a long regex call can hold it for seconds, stalling hovers.
A process can also be stopped at once when a newer document version (or a client's
``$/cancelRequest``) makes its run useless, and its memory goes back to the system when
it is recycled. This module never imports pygls.

Child side: ``python -m rootrank.lsp.worker`` reads requests on stdin and answers on
stdout (its own stdout is moved to stderr first, so a stray ``print`` cannot corrupt
the channel). Framing: 1 byte kind + 8-byte big-endian length + payload.

- parent -> child: ``R`` (JSON ``{"name", "mask", "folders", "generation", "chars"}``) then
  ``T`` (the text as ``text.encode("utf-8", "replace")``, which the engine reads as it is:
  :func:`rootrank.engine.diagnose_utf8`, never decoded whole in the child);
- child -> parent: ``P`` (JSON ``{"done", "total"}``, characters of the text read so
  far and in all, only when ``diagnose_text`` takes a ``progress(done, total)``
  callback), then ``D`` (the ``rootrank.diagnosis/1`` JSON) or ``E`` (a traceback).

The child exits when its stdin closes, so it never outlives the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

_HEADER = struct.Struct(">cQ")

#: Texts longer than this (code points) recycle their worker afterwards, so the memory
#: a large run touched is given back to the system.
RECYCLE_AFTER_CHARS = 8 * 1024 * 1024

#: The text goes to the child in pieces of this many code points, each written once the
#: pipe has taken the one before (so the parent holds one piece's bytes, not the text's).
SEND_CHARS = 1024 * 1024


class EngineError(RuntimeError):
    """The engine failed on a text (``str(e)`` holds its traceback), or its process died."""


# --------------------------------------------------------------------------- child side


def _read_frame(stream: BinaryIO) -> tuple[bytes, bytes] | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    kind, length = _HEADER.unpack(head)
    payload = stream.read(length)
    if len(payload) < length:
        return None
    return kind, payload


def _write_frame(stream: BinaryIO, kind: bytes, payload: bytes) -> None:
    stream.write(_HEADER.pack(kind, len(payload)))
    stream.write(payload)
    stream.flush()


def child_main() -> None:
    """Serve diagnosis requests on stdin/stdout until stdin closes."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    source = sys.stdin.buffer

    from rootrank.engine import diagnose_utf8
    from rootrank.signatures import load_library

    takes_progress = "progress" in inspect.signature(diagnose_utf8).parameters
    libraries: dict[tuple[Any, ...], Any] = {}
    while True:
        request = _read_frame(source)
        text_frame = _read_frame(source) if request else None
        if request is None or text_frame is None:
            return
        try:
            header = json.loads(request[1])
            data = text_frame[1]
            key = (tuple(header.get("folders") or ()), header.get("generation", 0))
            if key not in libraries:
                libraries.clear()
                libraries[key] = load_library(list(key[0]), strict=False)
            kwargs: dict[str, Any] = {
                "library": libraries[key],
                "mask": bool(header.get("mask", True)),
                "chars": int(header.get("chars", len(data))),
            }
            if takes_progress:
                kwargs["progress"] = _progress_sender(channel)
            if int(header.get("first_line", 1)) > 1:
                kwargs["first_line"] = int(header["first_line"])
            diagnosis = diagnose_utf8(data, header.get("name") or "<text>", **kwargs)
            body = json.dumps(diagnosis.to_dict(), default=str).encode("utf-8", "surrogatepass")
            _write_frame(channel, b"D", body)
        except Exception:  # noqa: BLE001 -- any engine failure is reported, the worker lives on
            _write_frame(channel, b"E", traceback.format_exc().encode("utf-8", "replace"))
        finally:
            data, text_frame = b"", None  # the text is not kept while the next one is awaited


def _progress_sender(channel: BinaryIO) -> Callable[[int, int], None]:
    last = [-1]

    def send(done: int, total: int) -> None:
        percent = int(100 * done / total) if total else 0
        if percent != last[0]:
            last[0] = percent
            _write_frame(channel, b"P", json.dumps({"done": done, "total": total}).encode())

    return send


# -------------------------------------------------------------------------- parent side


class _Worker:
    """One child process, started lazily, killed on cancellation."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        # A start in flight: kept (and shielded) so that a cancelled run or the pool's
        # aclose() can still find the process it creates and stop it.
        self.spawning: asyncio.Future[asyncio.subprocess.Process] | None = None

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self.process is None or self.process.returncode is not None:
            if self.spawning is None:
                self.spawning = asyncio.ensure_future(
                    asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "rootrank.lsp.worker",
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                        stderr=None,
                    )
                )
            spawning = self.spawning
            process = await asyncio.shield(spawning)
            self.spawning = None
            self.process = process
        return self.process

    async def run(
        self,
        header: dict[str, Any],
        text: str,
        on_progress: Callable[[int, int], None] | None,
        on_sent: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        process = await self._ensure()
        assert process.stdin is not None and process.stdout is not None
        request = json.dumps({**header, "chars": len(text)}).encode()
        process.stdin.write(_HEADER.pack(b"R", len(request)) + request)
        # As rootrank.ingest.text_blocks encodes a text (a lone surrogate becomes "?"), a
        # piece at a time: UTF-8 encodes each code point alone, so the pieces join to the
        # whole text's encoding. Written whole, the text's bytes and the pipe transport's
        # copy of them (its buffer) were held at once, twice the text's size on top of it.
        pieces: list[bytes] | None = None
        if text.isascii():
            size = len(text)
        else:
            pieces = [
                text[i : i + SEND_CHARS].encode("utf-8", "replace")
                for i in range(0, len(text), SEND_CHARS)
            ]
            size = sum(map(len, pieces))
        process.stdin.write(_HEADER.pack(b"T", size))
        for k, i in enumerate(range(0, len(text), SEND_CHARS)):
            if pieces is None:
                piece = text[i : i + SEND_CHARS].encode("ascii")
            else:
                piece, pieces[k] = pieces[k], b""
            process.stdin.write(piece)
            del piece
            await process.stdin.drain()
        await process.stdin.drain()
        if on_sent is not None:
            on_sent()  # the child is reading the text: work done now overlaps with its run
        while True:
            kind, length = _HEADER.unpack(await process.stdout.readexactly(_HEADER.size))
            payload = await process.stdout.readexactly(length)
            if kind == b"P":
                if on_progress is not None:
                    values = json.loads(payload)
                    on_progress(int(values["done"]), int(values["total"]))
                continue
            if kind == b"D":
                result: dict[str, Any] = json.loads(payload)
                return result
            raise EngineError(payload.decode("utf-8", "replace"))

    def kill(self) -> None:
        """Stop the child now (a no-op when it is not running)."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process = None

    @property
    def pid(self) -> int | None:
        """The child's process id, or ``None`` when not started."""
        return self.process.pid if self.process is not None else None


class EnginePool:
    """A few engine processes shared by all documents and commands.

    ``size`` is the number of runs that go on at once (default: 2, or 1 on one core);
    further runs wait for a free process. The process used last is used first (a stack,
    not a queue), so the first document runs in the process :meth:`warm_up` started, not in
    a cold one that must still import the engine and load the library. Cancelling the task that awaits
    :meth:`diagnose` kills the process doing that run and a fresh one is started for
    the next run.
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size or max(1, min(2, os.cpu_count() or 1))
        self._idle: asyncio.LifoQueue[_Worker] | None = None
        self._workers: list[_Worker] = []

    def _queue(self) -> asyncio.LifoQueue[_Worker]:
        if self._idle is None:
            self._idle = asyncio.LifoQueue()
            for _ in range(self.size):
                worker = _Worker()
                self._workers.append(worker)
                self._idle.put_nowait(worker)
        return self._idle

    async def warm_up(self, folders: tuple[str, ...] = (), generation: int = 0) -> None:
        """Start one process ahead of the first run and have it import the engine and load
        the library (an empty text), so the first document pays neither."""
        with contextlib.suppress(EngineError):
            await self.diagnose("", "<warm-up>", folders=folders, generation=generation)

    async def diagnose(
        self,
        text: str,
        name: str,
        *,
        folders: tuple[str, ...] = (),
        mask: bool = True,
        generation: int = 0,
        on_progress: Callable[[int, int], None] | None = None,
        on_sent: Callable[[], None] | None = None,
        first_line: int = 1,
    ) -> dict[str, Any]:
        """Run ``rootrank.engine.diagnose_text(text, name)`` in a child process;
        ``first_line`` (1-based) is the line of ``name`` the text starts at (a selection).

        ``on_sent`` is called once the text is in the child's pipe, while the child works
        (the server splits the document into lines then, off the path to the result).

        Returns:
            the ``rootrank.diagnosis/1`` dict (``Diagnosis.to_dict()``), exactly as the
            CLI prints it with ``--format json``.
        Raises:
            EngineError: the engine raised (message = its traceback) or its process died.
            asyncio.CancelledError: the run was cancelled (its process is killed).
        """
        queue = self._queue()
        worker = await queue.get()
        try:
            header = {
                "name": name,
                "mask": mask,
                "folders": list(folders),
                "generation": generation,
                "first_line": first_line,
            }
            try:
                result = await worker.run(header, text, on_progress, on_sent)
            except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError) as exc:
                worker.kill()
                raise EngineError(f"the engine process stopped: {exc!r}") from None
            if len(text) > RECYCLE_AFTER_CHARS:
                worker.kill()
            return result
        except BaseException:
            if not isinstance(sys.exc_info()[1], EngineError):
                worker.kill()
            raise
        finally:
            queue.put_nowait(worker)

    def pids(self) -> list[int]:
        """Process ids of the running children (for tests and memory checks)."""
        return [pid for pid in (w.pid for w in self._workers) if pid is not None]

    def close(self) -> None:
        """Kill every child."""
        for worker in self._workers:
            worker.kill()

    async def aclose(self, timeout: float = 2.0) -> None:
        """Kill every child and wait (at most ``timeout`` seconds) until each is reaped,
        so that their pipes close while the event loop still runs. A child still being
        started (the warm-up when the client exits at once) is waited for, then killed."""
        spawning = [w.spawning for w in self._workers if w.spawning is not None]
        if spawning:
            await asyncio.wait(spawning, timeout=timeout)
        for worker in self._workers:
            started, worker.spawning = worker.spawning, None
            if started is not None and started.done() and not started.cancelled():
                if started.exception() is None and worker.process is None:
                    worker.process = started.result()
        processes = [w.process for w in self._workers if w.process is not None]
        self.close()
        if processes:
            with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
                await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), timeout)


if __name__ == "__main__":
    child_main()
