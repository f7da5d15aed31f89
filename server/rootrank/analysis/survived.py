"""An error the process survived: it went on training after it, and the job did not fail.

Mechanism: a process that dies of an exception prints nothing after it. When the rank that
raised (the same file) prints progress or training metrics after the exception's line, the
exception was caught: a retry with a smaller batch (``accelerate.find_executable_batch_size``
halves the batch after an OOM and runs again), a logger whose upload failed and was retried,
a callback that swallowed its error. If no launcher reports a failed worker either (no exit
code, no torchelastic summary), nothing in the log shows the job failing: the error is not a
root cause, and the run is judged on what followed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rootrank.analysis.events import real_exit
from rootrank.analysis.prepare import Context


@dataclass(frozen=True, slots=True)
class GoneOn:
    """Where the rank went on after the error: the progress or metric line (1-based)."""

    path: str
    line: int
    what: str  # "progress" or the metric's name


def went_on_after(ctx: Context, rank: int | None, path: str, line: int) -> GoneOn | None:
    """The first sign that ``rank`` kept training after ``path:line`` (1-based), or ``None``.

    Only when the job shows no failure of its own (no worker exit a launcher reported, no
    torchelastic summary), and, for an error on no rank, only in a one-process log (in a
    multi-process log untagged progress may be another process's)."""
    st = ctx.state
    if st.elastic or any(
        e.kind in ("exit", "summary") and real_exit(e.code) is not None for e in ctx.events
    ):
        return None  # a launcher saw a worker fail (on a rank or not yet mapped to one)
    if rank is None and len(ctx.known_ranks()) > 1:
        return None
    p = st.progress.last().get(rank)
    # (a tqdm bar is drawn once more when the exception closes it: no sign of going on)
    if p is not None and p.kind != "tqdm" and p.path == path and p.line > line:
        return GoneOn(p.path, p.line, "progress")
    for (name, r), series in st.metrics.series.items():
        last = series.last
        if not series.role:  # a training metric (loss, grad norm, loss scale, pace) only
            continue
        if r == rank and last is not None and last.path == path and last.line > line:
            return GoneOn(last.path, last.line, name)
    return None
