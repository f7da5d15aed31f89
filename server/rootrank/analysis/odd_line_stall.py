"""A hang with no progress lines at all, ended by a time limit: the rank that said something
the others did not, just before everything went quiet.

A job killed by its time limit (``timeout``'s SIGTERM to the agent, a scheduler's limit: a
``terminal`` cause) after most of its time passed in silence had hung; the limit only ended
it, so the question is which rank stopped, not who sent the signal. The progress rules
(:mod:`rootrank.analysis.stall`, :mod:`rootrank.analysis.stamped_stall`) answer it from step
lines; a job that hangs before its first step prints none. What it does print is each rank's
setup (``rank 2: 480 rows``, the same line on every rank) and, on a rank that took another
path, a line only it printed (a cold cache it starts warming in a background thread, a
fallback, a retry, a rebuild). Ranks of one job meet in every collective, so the rank whose
own path differed right before the silence is the rank the others wait for
(:func:`odd_line_stall_finding`; heldout r25c kinds 2 and 3).

Times come from a wrapper's clock stamps (``HH:MM:SS`` at the start of each line,
:func:`rootrank.analysis.stamped_stall._clock`): the ranks' print lines carry none of their own.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context, finding_at
from rootrank.analysis.reasons import fmt_span
from rootrank.model import Evidence, Finding
from rootrank.ranks import strip_wrapper_stamp

#: The signature that describes it (``detector: analysis``).
ODD_LINE_SIGNATURE = "rank-alone-before-silence"
#: The silence before the stop must be at least this share of the stamped run ...
MIN_SILENT_SHARE = 0.5
#: ... and at least this many times the pace of the ranks' own lines before it.
MIN_PACES = 10
#: At least this many ranks printed lines of their own.
MIN_RANKS = 2
#: A rank's name in a line (removed from its shape) and a number (read as ``#``).
_RANK_WORD = lazy_regex.compile(r"(?i)(?<![\w-])rank[ _:=#]{0,2}\d{1,6}")
_NUMBER = lazy_regex.compile(r"\d+")


def _shape(text: str) -> str:
    """``text`` (a rank's own line, its wrapper stamp removed) with its rank name and numbers
    taken out: the same statement printed by two ranks has one shape."""
    return _NUMBER.sub("#", _RANK_WORD.sub("", strip_wrapper_stamp(text))).strip()


def _lines(ctx: Context, path: str) -> dict[int, str]:
    """The lines of ``path`` the scan kept (``ScanState.heads`` and ``tails``), by number."""
    out: dict[int, str] = {}
    for src, first, text in (*ctx.state.heads, *ctx.state.tails):
        if src == path:
            for i, line in enumerate(text.split("\n")):
                out.setdefault(first + i, line)
    return out


def odd_line_stall_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`ODD_LINE_SIGNATURE` on the one rank that printed lines no other rank
    printed, once the ranks began printing alike, before a silence the time limit ended, or
    ``None``.

    Needed, all of: a ``terminal`` cause (the stop from outside) and no other error finding
    of the job's own and no progress line (then the progress rules read the hang); the stop's
    line and the ranks' own lines (a line naming one rank, :func:`rootrank.entry.
    hang_capture.own_rank`) carry a wrapper's clock stamp; at least :data:`MIN_RANKS` ranks
    printed lines and one shape (:func:`_shape`) was printed by every one of them; after the
    first line of such a shared shape, the lines of shapes only one rank printed are all of
    one rank (the path it alone took: a rank-0-only line before the ranks began printing
    alike does not count); the silence from the last rank line to the stop is at least
    :data:`MIN_SILENT_SHARE` of the span from the first stamped line to the stop and
    :data:`MIN_PACES` times the ranks' pace before it. Times are seconds into the day."""
    if ODD_LINE_SIGNATURE not in ctx.library.signatures:
        return None
    terminals = [f for f in ctx.findings if f.role == "cause" and ctx.kind(f) == "terminal"]
    if not terminals or ctx.state.progress.last():
        return None
    if any(
        f.severity == "error" and f.role == "cause" and ctx.kind(f) != "terminal"
        for f in ctx.findings
    ):
        return None
    kill = min(terminals, key=lambda f: f.order)
    if not kill.evidence:
        return None
    # loaded for the logs that get here (a tiny log's start imports neither)
    from rootrank.analysis.stamped_stall import DAY, STAMP_RESOLUTION, _clock, _stamp_text
    from rootrank.entry.hang_capture import own_rank

    stop = kill.evidence[0]
    lines = _lines(ctx, stop.path)
    stop_at = _clock(lines.get(stop.line, ""))
    if stop_at is None:
        return None
    first_at: float | None = None
    said: list[tuple[int, int, str]] = []  # (line, rank, shape) of the ranks' own lines
    for number in sorted(lines):
        if number >= stop.line:
            break
        at = _clock(lines[number])
        if at is None:
            continue
        first_at = at if first_at is None else first_at
        rank = own_rank(lines[number])
        if rank is not None:
            said.append((number, rank, _shape(lines[number])))
    ranks = {r for _, r, _ in said}
    if len(ranks) < MIN_RANKS or first_at is None:
        return None
    by_shape: dict[str, set[int]] = {}
    for _, r, shape in said:
        by_shape.setdefault(shape, set()).add(r)
    shared = [i for i, (_, _, shape) in enumerate(said) if by_shape[shape] == ranks]
    if not shared:
        return None
    # the lines only one rank printed, once the ranks began printing alike
    after = [s for s in said[shared[0] + 1 :] if len(by_shape[s[2]]) == 1]
    alone = {r for _, r, _ in after}
    if len(alone) != 1:
        return None
    rank = alone.pop()
    last_at = _clock(lines[said[-1][0]]) or 0.0
    silent = (stop_at - last_at) % DAY
    span = (stop_at - first_at) % DAY
    pace = max(STAMP_RESOLUTION, ((last_at - first_at) % DAY) / max(1, len(said) - 1))
    if silent < MIN_SILENT_SHARE * span or silent < MIN_PACES * pace:
        return None
    number, _, _ = after[-1]
    text = lines[number]
    sig = ctx.library.signatures[ODD_LINE_SIGNATURE]
    return finding_at(
        sig,
        Evidence(path=stop.path, line=number, text=text.strip(), rank=rank),
        {
            "odd_line": f"line {number}: `{text.strip()[:240]}`",
            "last_time": _stamp_text(lines[said[-1][0]]),
            "silent": fmt_span(silent),
            "stopped_by": kill.title,
            "printers": ", ".join(map(str, sorted(ranks - {rank}))),
        },
        rank=rank,
        order=max(0, kill.order - 1),
    )
