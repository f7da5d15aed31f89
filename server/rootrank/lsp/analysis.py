"""When documents are analysed: debounce, newest-version-wins, progress, cache.

- open and save analyse at once; a change waits :data:`DEBOUNCE_SECONDS` and a newer
  change restarts the wait;
- a newer version cancels the run of an older one (its engine process is killed);
- a run over more than :data:`PROGRESS_MIN_CHARS` reports ``$/progress`` (server-created
  token, cancellable by the client, when the client supports ``window.workDoneProgress``):
  begin, a report each :data:`TICK_SECONDS` (with a percentage when the engine gives one),
  end with the outcome;
- an engine error becomes a ``window/logMessage`` and an empty result; the server keeps
  serving;
- results are kept per document for the version they were made from, and dropped when
  the document closes;
- a request that needs the result (a hover) can wait a moment for a run going on
  (:meth:`Analyser.wait`) and otherwise say how far it is (:meth:`Analyser.status`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from .diagnostics import Analysis, build_analysis
from .positions import normalise_encoding
from .worker import EngineError

if TYPE_CHECKING:
    from .server import RootrankServer

DEBOUNCE_SECONDS = 0.3
PROGRESS_MIN_CHARS = 1024 * 1024
TICK_SECONDS = 1.0

logger = logging.getLogger(__name__)


@dataclass
class Reading:
    """How far the engine has read a document in the run going on: ``done`` of ``total``
    bytes (UTF-8, as the engine reports them; 0 of 0 before its first report)."""

    done: int = 0
    total: int = 0


class Analyser:
    """Schedules and caches document analyses for one server."""

    def __init__(self, server: RootrankServer) -> None:
        self.server = server
        self.results: dict[str, Analysis] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._reading: dict[str, Reading] = {}

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """(Re)start the analysis of ``uri`` after ``delay`` seconds, cancelling any run
        of an older version."""
        old = self._tasks.pop(uri, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._run(uri, delay))
        self._tasks[uri] = task
        task.add_done_callback(functools.partial(self._done, uri))

    def _done(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(uri) is task:
            del self._tasks[uri]
        if not task.cancelled() and task.exception() is not None:
            logger.error("analysis task failed", exc_info=task.exception())

    def forget(self, uri: str, *, clear: bool = True) -> None:
        """Cancel the run of ``uri``, drop its result and (``clear``) its diagnostics."""
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        had = self.results.pop(uri, None)
        if clear and had is not None and had.diagnostics:
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    def cancel_all(self) -> None:
        """Cancel every scheduled or running analysis (the client is gone)."""
        for task in list(self._tasks.values()):
            task.cancel()
        self._tasks.clear()

    def current(self, uri: str) -> Analysis | None:
        """The result for the document's current version, or ``None`` (not yet analysed)."""
        analysis = self.results.get(uri)
        document = self.server.documents.get(uri)
        if analysis is None or document is None or analysis.version != document.version:
            return None
        return analysis

    def pending(self) -> int:
        """How many runs are scheduled or going on."""
        return len(self._tasks)

    async def wait(self, uri: str, timeout: float) -> Analysis | None:
        """The result for the document's current version, waiting at most ``timeout``
        seconds for a run that is scheduled or going on (a newer version's run too);
        ``None`` when there is none by then. The runs are not cancelled by the wait, nor by
        a cancellation of the waiting request."""
        deadline = time.monotonic() + timeout
        while (analysis := self.current(uri)) is None:
            task = self._tasks.get(uri)
            left = deadline - time.monotonic()
            if task is None or left <= 0:
                return None
            await asyncio.wait({task}, timeout=left)
        return analysis

    def status(self, uri: str) -> str | None:
        """One line saying that ``uri`` is being diagnosed and how far the engine read it
        (``"rootrank: diagnosing big.log (31.5 MB, 40% read)…"``), or ``None`` when no
        run is scheduled or going on for it."""
        if uri not in self._tasks:
            return None
        document = self.server.documents.get(uri)
        name = (to_fs_path(uri) or uri).replace("\\", "/").rsplit("/", 1)[-1]
        reading = self._reading.get(uri)
        if reading is not None and reading.total:
            percent = min(99, 100 * reading.done // reading.total)
            detail = f"{reading.total / 1e6:.1f} MB, {percent}% read"
        elif document is not None:
            detail = f"{document.size / 1e6:.1f} MB"
        else:
            return None
        return f"rootrank: diagnosing {name} ({detail})…"

    async def _run(self, uri: str, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        server = self.server
        document = server.documents.get(uri)
        if document is None or not server.is_diagnosed(document):
            return
        version = document.version
        text = document.text
        name = to_fs_path(uri) or uri
        progress = _Progress(server, name, len(text)) if len(text) > PROGRESS_MIN_CHARS else None
        if progress is not None:
            await progress.begin(asyncio.current_task())
        settings = server.settings
        diagnosis: dict[str, Any] = {}
        outcome = "nothing found"
        reading = self._reading[uri] = Reading()

        def on_progress(done: int, total: int) -> None:
            reading.done, reading.total = done, total
            if progress is not None:
                progress.report(done, total)

        try:
            diagnosis = await server.pool.diagnose(
                text,
                name,
                folders=settings.signature_folders,
                mask=settings.mask,
                generation=server.generation,
                on_progress=on_progress,
                on_sent=document.split,
            )
        except asyncio.CancelledError:
            if progress is not None:
                progress.end("cancelled")
            raise
        except EngineError as exc:
            server.log(types.MessageType.Error, f"rootrank could not analyse {name}: {exc}")
            outcome = "failed (see the log)"
        finally:
            del text
            if self._reading.get(uri) is reading:
                del self._reading[uri]
        if server.documents.get(uri) is not document or document.version != version:
            if progress is not None:
                progress.end("superseded by a newer version")
            return
        try:
            encoding = normalise_encoding(server.workspace.position_encoding)
            analysis = (
                build_analysis(uri, document, diagnosis, server.library, encoding)
                if diagnosis
                else Analysis(uri, version, {})
            )
        except Exception as exc:  # a result the adapter cannot place must not stop the server
            logger.exception("building diagnostics failed")
            server.log(
                types.MessageType.Error, f"rootrank could not place the results for {name}: {exc!r}"
            )
            analysis = Analysis(uri, version, {})
        root = (analysis.diagnosis or {}).get("root_cause")
        if root:
            outcome = f"root cause: {root.get('title') or root.get('signature')}"
        self.results[uri] = analysis
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=analysis.diagnostics
            )
        )
        if progress is not None:
            progress.end(outcome)


class _Progress:
    """Server-initiated ``$/progress`` for one run (LSP 3.17 "WorkDoneProgress")."""

    def __init__(self, server: RootrankServer, name: str, size: int) -> None:
        self.server = server
        self.name = name
        self.size = size
        self.token: str | None = None
        self._last = -1
        self._ticker: asyncio.Task[None] | None = None

    async def begin(self, task: asyncio.Task[Any] | None) -> None:
        caps = self.server.client_capabilities.window
        if caps is None or not caps.work_done_progress:
            return
        token = f"rootrank/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), 5)
        except Exception:  # noqa: BLE001 -- the client refused or did not answer: analyse without progress
            return
        self.token = token
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title="rootrank",
                message=f"diagnosing {self.name.rsplit('/', 1)[-1]} ({self.size / 1e6:.1f} MB)",
                percentage=0,
                cancellable=True,
            ),
        )
        future = self.server.work_done_progress.tokens.get(token)
        if future is not None and task is not None:
            future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        """A report every :data:`TICK_SECONDS` while the engine works, so a long run shows
        that it is alive even when the engine reports no percentage."""
        started = time.monotonic()
        while self.token is not None:
            await asyncio.sleep(TICK_SECONDS)
            if self.token is None:
                return
            self.server.work_done_progress.report(
                self.token,
                types.WorkDoneProgressReport(
                    message=f"analysing ({time.monotonic() - started:.0f} s)"
                ),
            )

    def report(self, done: int, total: int) -> None:
        if self.token is None or not total:
            return
        percent = min(99, int(100 * done / total))
        if percent > self._last:
            self._last = percent
            self.server.work_done_progress.report(
                self.token,
                types.WorkDoneProgressReport(
                    percentage=percent, message=f"{done / 1e6:.1f} of {total / 1e6:.1f} MB read"
                ),
            )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        token, self.token = self.token, None
        if self._ticker is not None:
            self._ticker.cancel()
        with contextlib.suppress(Exception):
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(token, None)
