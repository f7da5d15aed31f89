"""Progress of a long triage on standard error: jobs done, rate, MB/s and time left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Prints ``triage: 1,234/10,000 jobs · 56.7 jobs/s · 12.3 MB/s · 2m35s left``.

    On a terminal the line is rewritten in place (``\\r``) at most every ``interval_tty``
    seconds; otherwise (a CI log, a file) one line is written every ``interval_file`` seconds.
    The time left is the jobs still to do at the rate so far (a few big logs late in the
    archive make it optimistic).
    """

    def __init__(
        self,
        total_jobs: int,
        total_bytes: int,
        stream: TextIO | None = None,
        interval_tty: float = 0.5,
        interval_file: float = 15.0,
    ) -> None:
        self.total_jobs = total_jobs
        self.total_bytes = total_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval_tty if self.tty else interval_file
        self.start = time.monotonic()
        self.last = self.start
        self.jobs = 0
        self.bytes = 0
        self.cached = 0
        self.shown = False

    def line(self) -> str:
        """The current progress line (no newline)."""
        elapsed = max(time.monotonic() - self.start, 1e-6)
        rate = self.jobs / elapsed
        mbs = self.bytes / elapsed / 1e6
        left = ""
        if self.jobs and self.total_jobs > self.jobs:
            left = f" · {_duration((self.total_jobs - self.jobs) / rate)} left"
        cached = f" ({self.cached:,} from the cache)" if self.cached else ""
        return f"triage: {self.jobs:,}/{self.total_jobs:,} jobs{cached} · {rate:.1f} jobs/s · {mbs:.1f} MB/s{left}"

    def update(self, jobs: int, nbytes: int, cached: int = 0) -> None:
        """Count ``jobs`` more jobs done (``nbytes`` bytes, ``cached`` of them from the cache)."""
        self.jobs += jobs
        self.bytes += nbytes
        self.cached += cached
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._write()

    def _write(self) -> None:
        try:
            if self.tty:
                self.stream.write("\r\x1b[K" + self.line())
            else:
                self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            pass

    def finish(self, note: str = "") -> None:
        """Write the final line (always, so a run says how long it took)."""
        self._write()
        try:
            if self.tty:
                self.stream.write("\n")
            if note:
                self.stream.write(note + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
