"""The engine's own scan, fed as output arrives.

:class:`LiveScan` runs one :class:`rootrank.scan.Scanner` per source (a command's output, one
watched file) over a shared :class:`rootrank.scan.ScanState`, so the diagnosis at the end is
the one ``rootrank diagnose`` gives for the same lines, from the same single pass: each
scanner's ``scan_source`` runs in its own thread and pulls blocks from a queue as lines
arrive; one lock lets only one scanner run at a time (the state is shared), and is released
while a scanner waits for lines, so a diagnosis can be taken between blocks
(:meth:`LiveScan.snapshot`) without re-reading anything.

Memory is bounded as in the engine (findings keep counts and a few evidence lines) plus the
queue (:data:`QUEUE_CHUNKS` chunks): when the scan falls that far behind, :meth:`feed`
blocks (the job's output is not lost, it waits).

Each line's step, if it shows one (:mod:`rootrank.live.steps` over :mod:`rootrank.progress`), goes to a
:class:`~rootrank.live.tracker.ProgressTracker` with the line's arrival time; of a chunk that
arrived at once only its last :data:`MAX_STEP_LINES` candidate lines are read (they share one
arrival time, and each rank's last step is what counts), so a chatty job costs the scan little.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rootrank.engine import _finish, default_library, matcher_for
from rootrank.ingest import Block, split_glued, strip_ansi
from rootrank.live.lines import Piece
from rootrank.live.steps import read_step
from rootrank.live.tracker import ProgressTracker
from rootrank.match import Matcher
from rootrank.model import Diagnosis
from rootrank.progress import ProgressModel
from rootrank.ranks import RankTagger, rank_from_path
from rootrank.scan import Scanner, ScanState
from rootrank.signatures import Library

#: Chunks waiting for the scan before :meth:`LiveScan.feed` blocks.
QUEUE_CHUNKS = 512
#: Bytes merged into one block at most.
BLOCK_BYTES = 4 << 20


#: Lines that may show a step read per arriving chunk at most: the last ones (all share the
#: chunk's arrival time, and only each rank's last step counts).
MAX_STEP_LINES = 64


def _step_candidates(lines: list[bytes]) -> list[int]:
    """Indexes of the last :data:`MAX_STEP_LINES` lines that may show a step, in order; of
    lines behind the same launcher prefix (``[rank3]:``) only the last one."""
    out: list[int] = []
    seen: set[bytes] = set()
    for i in range(len(lines) - 1, -1, -1):
        ln = lines[i]
        if b"tep" in ln or b"ter" in ln or b"%|" in ln or b"TEP" in ln or b"TER" in ln:
            if ln[:1] == b"[":
                end = ln.find(b"]:", 0, 48)
                if end != -1:
                    if ln[:end] in seen:
                        continue
                    seen.add(ln[:end])
            out.append(i)
            if len(out) >= MAX_STEP_LINES:
                break
    out.reverse()
    return out


class _SharedOrderScanner(Scanner):
    """A Scanner whose event order counter is shared with the other sources' scanners, so
    findings and exceptions from several files are ordered as they arrived."""

    def __init__(
        self, matcher: Matcher, state: ScanState, counter: list[int], *, learn_users: bool = True
    ) -> None:
        self._counter = counter
        super().__init__(matcher, learn_users=learn_users)
        self.state = state

    @property  # type: ignore[override]
    def _order(self) -> int:
        return self._counter[0]

    @_order.setter
    def _order(self, value: int) -> None:
        self._counter[0] = max(value, self._counter[0])  # __init__'s "= 0" resets nothing


@dataclass
class Source:
    """One stream being scanned: ``name`` is the path shown in evidence."""

    name: str
    queue: queue.Queue[Any]
    thread: threading.Thread | None = None
    lines: int = 0  # lines handed to the scan so far
    error: str | None = None
    closed: bool = False
    tagger: RankTagger = field(default_factory=RankTagger)
    first_line: int = 1  # the file's line number of the first line fed


class LiveScan:
    """Scan streams as they are written; see the module docstring.

    ``tracker`` receives every step; ``library`` defaults to the built-in one; ``mask`` as
    in :func:`rootrank.engine.diagnose_paths`.
    """

    def __init__(
        self,
        tracker: ProgressTracker,
        *,
        library: Library | None = None,
        mask: bool = True,
        command: str | None = None,
    ) -> None:
        #: The command that produced the output (``rootrank run -- CMD``), if this scan
        #: knows it: the diagnoses take it as the job's launch (LaunchFacts.ran).
        self.command = command
        self.library = library or default_library()
        self.mask = mask
        self.tracker = tracker
        #: The progress model (rootrank.progress) the steps are read with, shared by the sources.
        self.progress = ProgressModel()
        self.matcher = matcher_for(self.library)
        self.state = ScanState()
        self.lock = threading.Lock()
        self._counter = [0]
        self._sources: list[Source] = []
        self.last_arrival = 0.0  # time.time() of the last line fed
        #: How many times a new run replaced the one scanned (:meth:`new_run`).
        self.run = 0

    # -- feeding -------------------------------------------------------------------------

    def open(self, name: str, first_line: int = 1) -> Source:
        """Start scanning a new source named ``name`` (a path: it may name the rank), whose
        first line fed is line ``first_line`` (1-based) of that file."""
        rank, local = rank_from_path(name)
        src = Source(
            name,
            queue.Queue(QUEUE_CHUNKS),
            tagger=RankTagger(path=name, path_rank=rank, path_rank_is_local=local),
            first_line=first_line,
        )
        src.thread = threading.Thread(
            target=self._scan, args=(src,), name=f"rootrank-scan {name}", daemon=True
        )
        self._sources.append(src)
        src.thread.start()
        return src

    def feed(self, src: Source, lines: list[bytes], now: float | None = None) -> None:
        """Hand whole lines (bytes, without ``\\n``) of ``src`` to the scan, arrived at
        ``now`` (s since the epoch; default: now). Blocks while the scan is far behind."""
        if lines and not src.closed:
            t = time.time() if now is None else now
            self.last_arrival = t
            src.queue.put(("lines", lines, t))

    def feed_frame(self, src: Source, frame: bytes, now: float | None = None) -> None:
        """A progress bar's current ``\\r`` frame (not a whole line: read for its step only)."""
        if frame and not src.closed:
            t = time.time() if now is None else now
            self.last_arrival = t
            src.queue.put(("frame", frame, t))

    def close(self, src: Source, wait: bool = True) -> None:
        """End ``src``: its scan finishes (open tracebacks and summaries are closed)."""
        if not src.closed:
            src.closed = True
            src.queue.put(None)
        if wait and src.thread is not None:
            src.thread.join()

    def new_run(self) -> None:
        """Another job replaced the one scanned so far (a watched file was truncated or
        rotated, a newer SLURM job or attempt appeared in a watched folder): every source is
        closed and the scan starts again from an empty state, as ``rootrank diagnose`` of
        ``cat job1.log job2.log`` diagnoses the last job only. What the earlier job showed
        (findings, ranks, progress) is left out, so the new job's failure is its own root
        cause even when it comes after the earlier one's; :attr:`run` counts these. Open
        the sources that go on (:meth:`open`) afterwards."""
        for src in self._sources:
            self.close(src, wait=False)
        with self.lock:  # the scanning threads keep the old state (their own reference)
            self._sources = []
            self.state = ScanState()
            self.progress = ProgressModel()
            self.tracker.reset()
            self.run += 1

    # -- reading -------------------------------------------------------------------------

    @property
    def order(self) -> int:
        """A number that grows whenever a finding or an exception is recorded."""
        return self._counter[0]

    def changes(self) -> tuple[int, int, int]:
        """What can change the diagnosis: new kinds of findings (signature and rank), new
        exceptions, failure summaries. Repeats of a finding already seen do not count."""
        st = self.state
        last_exc = st.exceptions[-1].order if st.exceptions else 0
        return len(st.findings), last_exc, len(st.elastic)

    def snapshot(self) -> Diagnosis:
        """The diagnosis of what was scanned so far (the running scan is not disturbed:
        the analysis runs on a copy of the state)."""
        with self.lock:
            state = copy.deepcopy(self.state)
        self._ran(state)
        return _finish(state, {}, self.library, self.mask)

    def _ran(self, state: ScanState) -> None:
        """Tell ``state`` the command that ran (:attr:`command`), at the end of the scan:
        a run start in the output resets what the log said of the launch."""
        if self.command:
            state.launch.ran(self.command)

    def finish(self) -> Diagnosis:
        """Close every source, wait for the scans, and return the final diagnosis."""
        for src in self._sources:
            self.close(src, wait=False)
        for src in self._sources:
            if src.thread is not None:
                src.thread.join()
        self._ran(self.state)
        return _finish(
            self.state,
            self.matcher.timeouts,
            self.library,
            self.mask,
            warnings=[
                f"{s.name}: the scan stopped early ({s.error})" for s in self._sources if s.error
            ],
        )

    # -- the scanning thread -------------------------------------------------------------

    def _scan(self, src: Source) -> None:
        scanner = _SharedOrderScanner(
            self.matcher, self.state, self._counter, learn_users=self.mask
        )
        try:
            with self.lock:
                scanner.scan_source(src.name, self._blocks(src))
        except Exception as exc:  # noqa: BLE001 - reported in the diagnosis, never lost silently
            src.error = f"{type(exc).__name__}: {exc}"
            while src.queue.get() is not None:  # keep feeders from blocking forever
                pass

    def _blocks(self, src: Source):  # type: ignore[no-untyped-def]
        """Blocks for ``scan_source``, as they arrive. Runs in the scan thread holding the
        lock, which it releases only while waiting for lines."""
        number = src.first_line
        while True:
            self.lock.release()
            try:
                item = src.queue.get()
                items = [item]
                size = 0
                while item is not None and size < BLOCK_BYTES:
                    try:
                        item = src.queue.get_nowait()
                    except queue.Empty:
                        break
                    items.append(item)
                    if item is not None and item[0] == "lines":
                        size += sum(len(x) for x in item[1])
            finally:
                self.lock.acquire()
            lines: list[bytes] = []
            end = False
            for it in items:
                if it is None:
                    end = True
                    break
                kind, data, now = it
                if kind == "frame":
                    self._step(
                        src,
                        strip_ansi(data.decode("utf-8", errors="replace")),
                        number + len(lines),
                        now,
                    )
                    continue
                if any(isinstance(x, Piece) and x.offset for x in data):
                    # a line over 1 MiB, in pieces (rootrank.live.lines): each piece after
                    # the first is a block of its own under that line's number, as
                    # ingest.read_blocks gives it to `rootrank diagnose`
                    for x in data:
                        if not (isinstance(x, Piece) and x.offset):
                            lines.append(x)
                            continue
                        if lines:
                            buf = b"\n".join(lines)
                            src.lines += len(lines)
                            yield Block(buf.decode("utf-8", errors="replace"), buf.lower(), number)
                            number += len(lines)
                            lines = []
                        text = x.decode("utf-8", errors="replace")
                        yield Block(text, x.lower(), number - 1, continues=True, offset=x.offset)
                    continue
                first = number + len(lines)
                lines.extend(data)
                for i in _step_candidates(data):
                    text = data[i].decode("utf-8", errors="replace")
                    if "\r" in text:  # a progress bar's frames: the last one is what shows
                        text = text.rstrip("\r")
                        text = text[text.rfind("\r") + 1 :]
                    if "\x1b" in text:  # colours: real escape sequences only (a live stream)
                        text = strip_ansi(text)
                    # two ranks' unbuffered writes glued on one line: each its own step
                    for part in split_glued(text):
                        self._step(src, part, first + i, now)
            if lines:
                buf = b"\n".join(lines)
                src.lines += len(lines)
                yield Block(buf.decode("utf-8", errors="replace"), buf.lower(), number)
                number += len(lines)
            if end:
                return

    def _step(self, src: Source, text: str, number: int, now: float) -> None:
        if src not in self._sources:
            return  # an earlier run's lines still queued (new_run)
        p = read_step(text, src.tagger, number, model=self.progress, time=now, path=src.name)
        if p is not None:
            self.tracker.update(p.rank, p.step, p.total, None, now, src.name, number)
