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


def format_rate(jobs: int, seconds: float) -> str:
    """``"4.8 jobs/s"``: ``jobs`` done in ``seconds`` of wall time since the workers were up
    (the one rate triage prints, on the progress line and in its final note)."""
    return f"{jobs / max(seconds, 1e-6):.1f} jobs/s"


def format_throughput(nbytes: int, seconds: float) -> str:
    """``"12.3 MB/s"``, or ``"31 kB/s"`` below 0.1 MB/s (an archive of small logs read in a
    few seconds would otherwise print ``0.0 MB/s``): ``nbytes`` read in ``seconds`` of wall
    time since the workers were up."""
    per_second = nbytes / max(seconds, 1e-6)
    if per_second < 0.05e6:
        return f"{per_second / 1e3:.0f} kB/s"
    return f"{per_second / 1e6:.1f} MB/s"


class Progress:
    """Prints ``triage: 1,234/10,000 jobs · 56.7 jobs/s · 12.3 MB/s · 2m35s left``.

    On a terminal the line is rewritten in place (``\\r``) at most every ``interval_tty``
    seconds; otherwise (a CI log, a file) one line is written every ``interval_file`` seconds.
    The time left is the jobs still to do at the rate so far (a few big logs late in the
    archive make it optimistic).

    The rate is :func:`rate`: jobs done per second of wall time since the workers were up
    (:meth:`begin`; the cluster's start-up is not diagnosis time), the one figure the
    final ``rootrank: N jobs in S s`` note prints too.
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

    def begin(self) -> None:
        """Start the clock now (the workers are up): the rate counts from here."""
        self.start = self.last = time.monotonic()

    def line(self, elapsed: float | None = None) -> str:
        """The current progress line (no newline); ``elapsed``: seconds since :meth:`begin`
        (default: measured now)."""
        if elapsed is None:
            elapsed = time.monotonic() - self.start
        elapsed = max(elapsed, 1e-6)
        rate = self.jobs / elapsed
        left = ""
        if self.jobs and self.total_jobs > self.jobs:
            left = f" · {_duration((self.total_jobs - self.jobs) / rate)} left"
        cached = f" ({self.cached:,} from the cache)" if self.cached else ""
        return f"triage: {self.jobs:,}/{self.total_jobs:,} jobs{cached} · {format_rate(self.jobs, elapsed)} · {format_throughput(self.bytes, elapsed)}{left}"

    def update(self, jobs: int, nbytes: int, cached: int = 0) -> None:
        """Count ``jobs`` more jobs done (``nbytes`` bytes, ``cached`` of them from the cache)."""
        self.jobs += jobs
        self.bytes += nbytes
        self.cached += cached
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._write()

    def _write(self, elapsed: float | None = None) -> None:
        try:
            if self.tty:
                self.stream.write("\r\x1b[K" + self.line(elapsed))
            else:
                self.stream.write(self.line(elapsed) + "\n")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            pass

    def finish(self, note: str = "", elapsed: float | None = None) -> None:
        """Write the final line (always, so a run says how long it took); ``elapsed``: the
        run's seconds since :meth:`begin` as the caller measured them (its note then shows
        the same rate as this line)."""
        self._write(elapsed)
        try:
            if self.tty:
                self.stream.write("\n")
            if note:
                self.stream.write(note + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
