"""A hang read from progress: what the last progress lines say about a job that stopped.

A scheduler's limit (or a cancellation, a preemption) ends every job it meets; it is the
cause only when the job was still making progress until then. When the last progress line
is far older than the kill (:func:`stall_finding`), the job had hung, and the hang is the
root cause the limit only ended. Which rank stopped first is the rank behind the others or
the one missing from the progress (:func:`stalled_rank`). Progress lines with no time of
their own are timed by a wrapper's clock stamps when the log has them
(:mod:`rootrank.analysis.stamped_stall`).
"""

from __future__ import annotations

from rootrank.analysis.events import last_progress
from rootrank.analysis.prepare import Context, finding_at
from rootrank.analysis.reasons import fmt_span, fmt_time, say
from rootrank.model import Evidence, Finding
from rootrank.progress import MAX_BREAKS, Progress

#: The signature that describes a hang found from progress (``detector: progress``).
STALL_SIGNATURE = "progress-stalled"
#: The signature of a hang at a step whose branch differed on one rank (``detector: analysis``).
BRANCH_SIGNATURE = "step-branch-divergence"
#: A silence before the kill at least this long (s), and ...
STALL_MIN_SECONDS = 600.0
#: ... at least this many typical intervals between progress lines, is a hang.
STALL_INTERVALS = 10


def stalled_rank(ctx: Context) -> tuple[int | None, str]:
    """The rank that stopped making progress first, and why: the one rank whose last step
    is below every other rank's, or the one known rank that printed no progress while two or
    more others did. ``(None, "")`` when progress does not single one out. Reads the
    progress events (:func:`~rootrank.analysis.events.last_progress`)."""
    last = last_progress(ctx.events)
    if len(last) < 2:
        return None, ""
    top = max(p.step for p in last.values())
    behind = [r for r, p in last.items() if p.step < top]
    silent = sorted(ctx.known_ranks() - set(last))
    if len(behind) == 1 and not silent:
        r = behind[0]
        others = sorted({p.step for q, p in last.items() if q != r})
        return r, say("progress_behind_rank", rank=r, step=last[r].step, others=others[-1])
    if not behind and len(silent) == 1:
        r = silent[0]
        return r, say("missing_progress", rank=r, step=top)
    return None, ""


def progressed_after(ctx: Context, newest: Progress) -> bool:
    """Whether a progress line without a timestamp comes after ``newest`` (the latest timed
    progress) in the stream: then the job went on stepping past the last time the log gives,
    and the silence before the kill cannot be measured from ``newest``.

    Mechanism: Megatron-LM prints ``iteration N/ M |`` with no timestamp while DeepSpeed's
    logger (``[2021-05-27 21:32:10,180] ... step=0``) and others stamp theirs; a job that only
    ran slowly up to its time limit then shows its last *timed* progress long before the kill
    although untimed iterations kept coming until it. Reads the progress events (one per rank,
    its last line; ``order`` is the stream's)."""
    progress = [e for e in ctx.events if e.kind == "progress"]
    after = [
        e.order
        for e in progress
        if e.time is not None and e.path == newest.path and e.line == newest.line
    ]
    if not after:
        return False
    return any(e.time is None and e.order > after[0] for e in progress)


def stall_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`STALL_SIGNATURE` when a terminal event of the scheduler (a cause
    of kind ``terminal`` with a timestamp) came at least :data:`STALL_MIN_SECONDS` and
    :data:`STALL_INTERVALS` typical progress intervals after the last progress line, and no
    other fault is in the log (then that fault explains the kill), and no untimed progress
    line came after that last timed one (:func:`progressed_after`). ``None`` otherwise."""
    if STALL_SIGNATURE not in ctx.library.signatures:
        return None
    terminals = [
        f
        for f in ctx.findings
        if f.role == "cause" and ctx.kind(f) == "terminal" and f.time is not None
    ]
    if not terminals:
        return None
    faults = [
        f
        for f in ctx.findings
        if f.severity == "error"
        and ctx.kind(f) != "terminal"
        and not ctx.peer_report(f)
        and f.role == "cause"
    ]
    if faults:
        return None
    kill = min(terminals, key=lambda f: f.time or 0.0)
    from rootrank.analysis.stamped_stall import (
        stall_threshold,
        stamped_stall_finding,
    )  # loaded here

    timed = [p for p in ctx.state.progress.last().values() if p.time is not None]
    if not timed:
        return untimed_stall_finding(ctx, kill) or stamped_stall_finding(ctx, kill, STALL_SIGNATURE)
    newest = max(timed, key=lambda p: p.time or 0.0)
    if progressed_after(ctx, newest):
        # the ranks' own lines carry no time: a wrapper's clock stamps may measure it
        return stamped_stall_finding(ctx, kill, STALL_SIGNATURE)
    silent = (kill.time or 0.0) - (newest.time or 0.0)
    gap = ctx.state.progress.typical_gap()
    if silent < STALL_MIN_SECONDS or (gap is not None and silent < STALL_INTERVALS * gap):
        return None
    rank, why = stalled_rank(ctx)
    if rank is None:
        branch = branch_stall_finding(ctx, kill)
        if branch is not None:
            return branch
    at: Progress = ctx.state.progress.last().get(rank) or newest if rank is not None else newest
    sig = ctx.library.signatures[STALL_SIGNATURE]
    return finding_at(
        sig,
        Evidence(path=at.path, line=at.line, text=f"step {at.step}", rank=at.rank),
        {
            "step": str(at.step),
            "last_time": fmt_time(newest.time),
            "silent": fmt_span(silent),
            "stall_s": stall_threshold(silent),
            "stopped_by": kill.title,
            "why": why
            or say(
                "progress_stopped",
                step=newest.step,
                silent=fmt_span(silent),
                time=fmt_time(newest.time),
                rank_part="",
            ),
        },
        rank=rank,
        order=max(0, kill.order - 1),
        time=at.time,
    )


def left_behind(ctx: Context) -> list[int]:
    """The ranks the others left behind, read from the order of untimed progress lines: a
    minority of ranks (at least one, at most a third of those that printed progress) whose
    last progress line comes before most other ranks restarted their step count (a new
    trial, epoch or attempt of the same job: ``step 10/10`` then ``step 1/10``), or, with no
    restart, whose last step is at least two of its own usual increments below the step
    every other rank reached. ``[]`` when progress does not show that.

    Mechanism: ranks of one job step in lockstep (every step ends in a collective). When
    most ranks print the first step of a new section and a few never do, those few did not
    reach it: they are stuck before it (a DataLoader worker, a transport set-up, a
    rank-only task), and the others wait for them in their first collective. A rank
    printing one step behind the others may only be slower to print when the job is
    stopped; two of its own steps behind cannot be."""
    last = {r: p for r, p in ctx.state.progress.last().items() if r is not None}
    if len(last) < 3:
        return []
    breaks = ctx.state.progress.step_breaks()
    restarts: dict[int, list[int]] = {
        r: [line for before, step, line in br if step < before]
        for r, (_usual, _n, br) in breaks.items()
        if r is not None
    }
    behind: list[int] = []
    # the sections each rank entered (its restarts), while no rank's record of breaks is full
    sections = {r: len(restarts.get(r, [])) for r in last}
    full = any(len(br) >= MAX_BREAKS for _u, _n, br in breaks.values())
    if not full and any(sections.values()):
        top = max(sections.values())
        at_top = [r for r, n in sections.items() if n == top]
        if 2 * len(at_top) > len(last):
            first = min(restarts[q][-1] for q in at_top)  # where the last section began
            behind = [r for r, n in sections.items() if n < top and last[r].line < first]
    if not behind and not any(restarts.values()):
        top = max(p.step for p in last.values())
        at_top = [r for r, p in last.items() if p.step == top]
        for r, p in last.items():
            usual = breaks.get(r, (1, 0, []))[0] or 1
            if top - p.step >= 2 * usual and 2 * len(at_top) > len(last) - 1:
                behind.append(r)
    if not behind or 3 * len(behind) > len(last):
        return []
    return sorted(behind)


def untimed_stall_finding(ctx: Context, kill: Finding) -> Finding | None:
    """A finding of :data:`STALL_SIGNATURE` for a job whose progress lines carry no time,
    stopped by the scheduler (``kill``) while the ranks :func:`left_behind` names had not
    reached the step the others printed last. ``None`` when no rank was left behind."""
    behind = left_behind(ctx)
    if not behind:
        return branch_stall_finding(ctx, kill)
    from rootrank.analysis.stamped_stall import stall_threshold  # loaded for the logs that get here

    last = ctx.state.progress.last()
    at = last[behind[0]]
    lead = max((p for r, p in last.items() if r not in behind), key=lambda p: p.line)
    names = ", ".join(str(r) for r in behind)
    word = "rank" if len(behind) == 1 else "ranks"
    why = say(
        "left_behind",
        word=word,
        ranks=names,
        step=lead.step,
        line=lead.line,
        stopped_by=kill.title,
    )
    sig = ctx.library.signatures[STALL_SIGNATURE]
    return finding_at(
        sig,
        Evidence(path=at.path, line=at.line, text=f"step {at.step}", rank=at.rank),
        {
            "step": str(at.step),
            "last_time": f"line {lead.line} (the log prints no time with its progress)",
            "silent": "the rest of the job",
            "stall_s": stall_threshold(2 * STALL_MIN_SECONDS),
            "stopped_by": kill.title,
            "stalled_ranks": names,
            "why": why,
        },
        rank=behind[0] if len(behind) == 1 else None,
        order=max(0, kill.order - 1),
    )


def branch_stall_finding(ctx: Context, kill: Finding) -> Finding | None:
    """A finding of :data:`BRANCH_SIGNATURE` for a job stopped from outside (``kill``, with no
    fault before it) whose ranks all stopped at one step, where one rank printed its per-step
    line with other words than the others after matching them at the earlier steps
    (:func:`rootrank.analysis.oddline.odd_step_line_parts`): that step's branch differed on
    it, the ranks then waited in collectives that could not match, and the stop only ended a
    job that was already hung (a time limit or a cancellation chosen over the fault would
    send the user to ask for more time). ``None`` when no rank's last line stands out."""
    from rootrank.analysis.oddline import odd_step_line, odd_step_line_parts

    if BRANCH_SIGNATURE not in ctx.library.signatures:
        return None
    found = odd_step_line_parts(ctx)
    told = odd_step_line(ctx)
    if found is None or told is None:
        return None
    rank, value, usual, others, ln = found
    sig = ctx.library.signatures[BRANCH_SIGNATURE]
    return finding_at(
        sig,
        Evidence(path=ln.path, line=ln.line, text=ln.text, rank=rank),
        {
            "stopped_by": kill.title,
            "value": value,
            "usual": usual,
            "others": ", ".join(str(r) for r in others),
            "why": told[1],
        },
        rank=rank,
        order=max(0, kill.order - 1),
    )
