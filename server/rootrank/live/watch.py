"""``rootrank watch PATH...``: follow logs a job writes elsewhere (a shared filesystem, a
torchrun ``--log-dir`` tree, ``slurm-%j.out``), or ``-`` (standard input, a pipe).

Files are polled (every :data:`POLL` s), not watched through inotify: inotify sees nothing of
what another machine writes to a shared filesystem (NFS, Lustre, GPFS), which is where these
logs live. For each file:

- appended bytes are read (at most :data:`READ_BYTES` per poll) and scanned as they come;
- a new file under a watched folder (by :data:`rootrank.engine.LOG_SUFFIXES`, recursively,
  every :data:`RESCAN` s) is followed from its start; of a folder holding several SLURM jobs
  or torchrun attempts only the newest run's files are followed (:func:`rootrank.runs.pick_run`,
  as ``rootrank diagnose`` reads a folder), and a newer run appearing is followed too;
- rotation (the path now names another file: a new inode) and truncation (the file shrank)
  start a new source at the new file's start, and so does a newer run appearing in a watched
  folder (its older run's files are no longer followed): a new job started. What the earlier
  job showed (findings, ranks, progress) is left out from then on
  (:meth:`~rootrank.live.feed.LiveScan.new_run`), so its failure is reported even when it
  repeats the earlier one's, as ``rootrank diagnose`` of the two jobs in one file diagnoses the
  last. The other files followed go on from where they were read (their later lines belong to
  the new job); a file whose start was read before that new job began (the other ranks'
  files, rewritten in turn by a relaunch) starts no further new run when it is rewritten.

A failure is reported as soon as the lines show one; stalls and stragglers as in
``rootrank run``. Otherwise it stays quiet.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from dataclasses import dataclass
from typing import IO

from rootrank.engine import LOG_NAMES, LOG_SUFFIXES, MAX_FOLDER_FILES
from rootrank.ingest import InputError, check_text, compression_of
from rootrank.live.events import Reporter
from rootrank.live.feed import LiveScan, Source
from rootrank.live.lines import LineSplitter, Piece
from rootrank.live.monitor import Monitor, failure_key
from rootrank.live.tracker import ProgressTracker
from rootrank.runs import pick_run
from rootrank.signatures import Library

#: Seconds between two polls of the watched files.
POLL = 0.5
#: Seconds between two scans of a watched folder for new files.
RESCAN = 2.0
#: Bytes at the start of a file compared at each poll (a truncated and rewritten file).
HEAD_BYTES = 256
#: Bytes read from one file per poll at most (a huge backlog is read over several polls).
READ_BYTES = 8 << 20


@dataclass
class Followed:
    """One followed file: its identity (``dev``, ``ino``), how far it was read, its scan."""

    path: str
    dev: int
    ino: int
    offset: int
    src: Source
    splitter: LineSplitter
    fh: IO[bytes]
    head: bytes = b""  # the file's first bytes, to tell a rewritten file from an appended one
    lines: int = 0  # whole lines fed so far
    run: int = 0  # LiveScan.run when this file was read from its start


class Watcher:
    """Follows files and folders into a :class:`LiveScan`; call :meth:`poll` repeatedly."""

    def __init__(self, paths: list[str], scan: LiveScan) -> None:
        self.scan = scan
        self.files: dict[str, Followed] = {}
        self.folders: list[str] = []
        self.explicit: list[str] = []
        self._from_folder: set[str] = set()
        self._last_rescan = 0.0
        for p in paths:
            if os.path.isdir(p):
                self.folders.append(p)
            elif os.path.exists(p):
                _check_followable(p)
                self.explicit.append(p)
            else:
                raise InputError(f"{p}: no such file or folder")

    def poll(self) -> int:
        """Read what is new; returns the bytes read."""
        now = time.time()
        if now - self._last_rescan >= RESCAN or not self._last_rescan:
            self._last_rescan = now
            for path in self.explicit:
                self._follow(path)
            wanted: list[str] = []
            for folder in self.folders:
                newest, _ = pick_run(_log_files(folder))  # an older SLURM job or attempt is history
                wanted.extend(newest)
            older = [p for p in self._from_folder if p in self.files and p not in wanted]
            if older and any(p not in self.files for p in wanted):
                self._new_run(drop=older)  # a newer job's files appeared
            for path in wanted:
                if path not in self.files:
                    self._from_folder.add(path)
                    self._follow(path)
        return sum(self._read(f) for f in list(self.files.values()))

    def _follow(self, path: str) -> None:
        if path not in self.files:
            self._open(path)

    def _open(self, path: str) -> Followed | None:
        try:
            fh = open(path, "rb")  # noqa: SIM115 - kept open while followed
            st = os.fstat(fh.fileno())
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            fh.close()
            return None
        f = Followed(path, st.st_dev, st.st_ino, 0, self.scan.open(path), LineSplitter(), fh)
        f.run = self.scan.run
        self.files[path] = f
        return f

    def _read(self, f: Followed) -> int:
        try:
            st = os.stat(f.path)
        except OSError:
            st = None  # removed: keep reading the open file to its end
        same = st is not None and (st.st_ino, st.st_dev) == (f.ino, f.dev)
        if same and st is not None and (st.st_size < f.offset or self._rewritten(f)):
            self._restart(f)  # truncated: a new run writes the file from its start
            return 0
        total = self._drain(f)
        if st is not None and not same:
            self._restart(f)  # rotated: the old file was read to its end above
        return total

    def _rewritten(self, f: Followed) -> bool:
        """The file's first bytes changed: it was truncated and written again past the point
        read so far, between two polls."""
        if not f.head:
            return False
        try:
            f.fh.seek(0)
            return f.fh.read(len(f.head)) != f.head
        except OSError:
            return False

    def _drain(self, f: Followed) -> int:
        try:
            f.fh.seek(f.offset)
            data = f.fh.read(READ_BYTES)
        except OSError:
            return 0
        if data:
            if len(f.head) < HEAD_BYTES and f.offset == len(f.head):
                f.head += data[: HEAD_BYTES - len(f.head)]
            f.offset += len(data)
            lines = f.splitter.feed(data)
            f.lines += sum(1 for x in lines if not (isinstance(x, Piece) and x.offset))
            self.scan.feed(f.src, lines)
            frame = f.splitter.frame()
            if frame:
                self.scan.feed_frame(f.src, frame)
        return len(data)

    def _restart(self, f: Followed) -> None:
        """``f`` was truncated or rotated: read it again from its start, as a new job's."""
        if f.run == self.scan.run:
            self._new_run(drop=[f.path])
        else:  # its start was the earlier job's: the new job began in another file
            self._flush(f)
            self.scan.close(f.src, wait=False)
            f.fh.close()
            del self.files[f.path]
        self._open(f.path)

    def _flush(self, f: Followed) -> None:
        rest = f.splitter.flush()
        if rest:
            f.lines += 1
            self.scan.feed(f.src, [rest])

    def _new_run(self, drop: list[str]) -> None:
        """A new job started: stop following ``drop`` (paths), start the scan again and go
        on with the other files from where they were read."""
        for path in drop:
            self._flush(self.files[path])
        self.scan.new_run()
        for path in drop:
            with contextlib.suppress(OSError):
                self.files[path].fh.close()
            del self.files[path]
        for f in self.files.values():
            f.src = self.scan.open(f.path, first_line=f.lines + 1)

    def close(self) -> None:
        for f in self.files.values():
            rest = f.splitter.flush()
            if rest:
                self.scan.feed(f.src, [rest])
            with contextlib.suppress(OSError):
                f.fh.close()


def _check_followable(path: str) -> None:
    """Check that ``path`` (a file named on the command line) is a text log watch can follow
    as it grows: its first bytes (none yet: a job about to write it) are text. A compressed
    file is no growing log (its bytes decode only as a whole stream), and binary data holds
    no lines: following either would stay silent forever. A named pipe or a device is not
    read here (its bytes would be lost).

    Raises:
        InputError: ``"<path>: binary data, not a text log"``, ``"<path>: gzip-compressed:
            watch follows a text log as it is written (rootrank diagnose reads it)"``, or
            ``"<path>: cannot be read (...)"``.
    """
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return
            head = fh.read(8192)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    what = compression_of(head)
    if what is not None:
        raise InputError(
            f"{path}: {what}-compressed: watch follows a text log as it is written"
            f" (rootrank diagnose {path} reads it)"
        )
    try:
        check_text(head)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _log_files(folder: str) -> list[str]:
    found: list[str] = []
    seen = 0
    for dirpath, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            seen += 1
            if seen > MAX_FOLDER_FILES:
                return found
            low = name.lower()
            if low.endswith(LOG_SUFFIXES) or low in LOG_NAMES:
                found.append(os.path.join(dirpath, name))
    return found


def _read_stdin(scan: LiveScan, src: Source, done: threading.Event) -> None:
    splitter = LineSplitter()
    fd = 0
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except InterruptedError:
                continue
            if not data:
                break
            scan.feed(src, splitter.feed(data))
            frame = splitter.frame()
            if frame:
                scan.feed_frame(src, frame)
        rest = splitter.flush()
        if rest:
            scan.feed(src, [rest])
    except OSError:
        pass
    finally:
        done.set()


def watch_paths(
    paths: list[str],
    *,
    out: IO[str],
    fmt: str = "text",
    stall: float | None = None,
    progress_every: float | None = None,
    library: Library | None = None,
    mask: bool = True,
    color: bool = False,
    stop: threading.Event | None = None,
) -> int:
    """Follow ``paths`` until interrupted (or, when the only path is ``-``, until standard
    input ends, or until ``stop`` is set). Returns 0 when a failure was reported, else 1.
    When standard input ends, a failure in it is reported in full (the report of
    ``rootrank diagnose``), after the headline said while it was read.

    Raises:
        InputError: a path does not exist, or a file named holds binary or compressed data
            (:func:`_check_followable`).
    """
    tracker = ProgressTracker(stall)
    scan = LiveScan(tracker, library=library, mask=mask)
    reporter = Reporter(out, fmt, color=color, mask=mask)
    monitor = Monitor(scan, reporter, progress_every=progress_every)
    files = [p for p in paths if p != "-"]
    watcher = Watcher(files, scan) if files else None
    stdin_done: threading.Event | None = None
    if "-" in paths:
        stdin_done = threading.Event()
        src = scan.open("<stdin>")
        threading.Thread(target=_read_stdin, args=(scan, src, stdin_done), daemon=True).start()
    stop = stop or threading.Event()
    try:
        while not stop.is_set():
            if watcher is not None:
                watcher.poll()
            monitor.tick()
            if stdin_done is not None and stdin_done.is_set() and watcher is None:
                break
            stop.wait(POLL)
    finally:
        if watcher is not None:
            watcher.close()
        diag = scan.finish()
    # standard input ended: the job's output is whole, so a failure in it gets the full report
    # (Fix, Verify), as `rootrank run` gives when its command ends, even if its headline was
    # said while the input was read
    ended = stdin_done is not None and stdin_done.is_set() and watcher is None
    monitor.final(diag, failed=ended and failure_key(diag) is not None, ended=ended)
    return 0 if monitor.any_reported or failure_key(diag) is not None else 1
