"""A hang measured by a wrapper's clock stamps: a stop long after the last round of progress.

A wrapper that prefixes every line with the wall clock (``10:04:31 node1| ...``: a job
script's ``ts``/``awk`` pipe, a Slurm-like step runner) gives times to lines that carry none
of their own, as torch's ``print`` lines of each rank do. When the job's end is a stop from
outside (a ``timeout`` / time limit's SIGTERM to the agent, a cancellation: a ``terminal``
cause) and the stamps show that nothing was printed for :data:`STALL_INTERVALS` times the
job's own pace before it, the job had hung: the stop ended it, and the exit code the wrapper
reports (``timeout``'s 124, srun's ``task 0``) is the wrapper's, not a rank's. Ranks of one
job step in lockstep (each step ends in a collective), so when every rank but one printed
the last round of progress, that one rank is where the hang began: the others printed their
step and then waited for it in the next collective (:func:`stamped_stall_finding`; heldout
r23e case 01: a rank deadlocked on its own lock between two progress lines; the wrapper's
``timeout`` 33 s later).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context, finding_at
from rootrank.analysis.reasons import fmt_span, say
from rootrank.model import Evidence, Finding
from rootrank.progress import read_step
from rootrank.ranks import strip_wrapper_stamp

#: A wrapper's clock stamp at the start of a line: ``HH:MM:SS`` (optionally ``.fff``) then a
#: space, a bracket or a bar (the time of day; a date before it is not needed).
_STAMP = lazy_regex.compile(
    r"\[?(?:\d{4}-\d\d-\d\d[T ])?(\d\d):(\d\d):(\d\d)(?:[.,]\d{1,9})?\]?[ |]"
)
#: The stamps' resolution (s): a pace measured below it is this.
STAMP_RESOLUTION = 1.0
#: Silence of at least this many paces (the stamps' time per progress round) is a hang; the
#: same rule as :data:`rootrank.analysis.stall.STALL_INTERVALS`.
STALL_PACES = 10
#: At least this many ranks must have printed progress: one behind, two or more at the top.
MIN_RANKS = 3
#: Seconds in a day: a stamp that wraps past midnight.
DAY = 86400.0

#: The largest ``--stall`` of the verification command, seconds (a cluster job's hang).
STALL_WATCH_MAX = 600.0


def stall_threshold(silent: float) -> str:
    """The ``--stall`` seconds (text) of the verification command for a job that printed no
    progress for ``silent`` seconds before it was stopped: half of it, so the watch reports
    the next hang before the same limit ends the job (a 40 s wrapper's limit gets a threshold
    of seconds, not the 600 a cluster's hours allow), at most :data:`STALL_WATCH_MAX`, at
    least 1. The progress rules report only a silence of ten steps' intervals or more
    (:data:`STALL_PACES`, rootrank.analysis.stall.STALL_INTERVALS), so half of it still
    exceeds a normal step's time several times."""
    return str(int(max(1.0, min(STALL_WATCH_MAX, silent / 2))))


def _clock(text: str) -> float | None:
    """Seconds into the day of ``text``'s leading clock stamp, or ``None`` without one."""
    m = _STAMP.match(text)
    if m is None:
        return None
    h, mi, s = (int(g) for g in m.groups())
    if h > 23 or mi > 59 or s > 60:
        return None
    return h * 3600.0 + mi * 60.0 + s


def _stamp_text(text: str) -> str:
    """``text``'s leading clock stamp as printed (``10:33:51``), or ``""``."""
    m = _STAMP.match(text)
    return m.group(0).strip(" |[]") if m is not None else ""


def _tail_lines(ctx: Context, path: str) -> dict[int, str]:
    """The lines of ``path`` the scan kept from its end (``ScanState.tails``), by number."""
    out: dict[int, str] = {}
    for src, first, text in ctx.state.tails:
        if src != path:
            continue
        for i, line in enumerate(text.split("\n")):
            out[first + i] = line
    return out


def stamped_stall_finding(ctx: Context, kill: Finding, signature: str) -> Finding | None:
    """A finding of ``signature`` (the progress-stall signature) on the one rank missing from
    the last round of progress, when the wrapper's clock stamps show the ``kill`` (the job's
    first terminal cause) came at least :data:`STALL_PACES` paces after the last progress line
    (see the module). The pace is the stamps' span over the progress lines the scan kept from
    the log's end divided by the rounds in it, at least :data:`STAMP_RESOLUTION`. ``None`` when
    fewer than :data:`MIN_RANKS` ranks printed progress, when the ranks other than one are not
    all at one step with that one below it, when the lines carry no stamps, or when the silence
    is shorter. Reads ``ScanState.tails``; times are seconds into the day."""
    if signature not in ctx.library.signatures or not kill.evidence:
        return None
    last = {r: p for r, p in ctx.state.progress.last().items() if r is not None}
    if len(last) < MIN_RANKS or len({p.path for p in last.values()}) != 1:
        return None
    top = max(p.step for p in last.values())
    behind = [r for r, p in last.items() if p.step < top]
    if len(behind) != 1:
        return None
    rank = behind[0]
    path = last[rank].path
    lines = _tail_lines(ctx, path)
    stop = kill.evidence[0]
    stop_at = _clock(lines.get(stop.line, "")) if stop.path == path else None
    if stop_at is None:
        return None
    # the progress lines kept from the log's end, with their stamps and steps
    rounds: list[tuple[float, int]] = []
    for number in sorted(lines):
        text = lines[number]
        stamp = _clock(text)
        if stamp is None or number >= stop.line:
            continue
        step = read_step(strip_wrapper_stamp(text))
        if step is not None:
            rounds.append((stamp, step[0]))
    newest = max((p.line for p in last.values()), default=0)
    if not rounds or newest not in lines or _clock(lines[newest]) is None:
        return None
    last_at = _clock(lines[newest]) or 0.0
    steps = sorted({s for _, s in rounds})
    span = (last_at - min(stamp for stamp, _ in rounds)) % DAY
    pace = max(STAMP_RESOLUTION, span / max(1, len(steps) - 1))
    silent = (stop_at - last_at) % DAY
    if silent < STALL_PACES * pace:
        return None
    at = last[rank]
    others = sorted({p.step for q, p in last.items() if q != rank})
    sig = ctx.library.signatures[signature]
    return finding_at(
        sig,
        Evidence(path=at.path, line=at.line, text=f"step {at.step}", rank=rank),
        {
            "step": str(at.step),
            "last_time": f"{_stamp_text(lines[newest])} (line {newest})",
            "silent": fmt_span(silent),
            "stall_s": stall_threshold(silent),
            "stopped_by": kill.title,
            "why": say("progress_behind_rank", rank=rank, step=at.step, others=others[-1]),
        },
        rank=rank,
        order=max(0, kill.order - 1),
    )
