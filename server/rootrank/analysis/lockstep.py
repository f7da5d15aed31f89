"""A rank that left the lock-step: a step missing from its own progress.

Mechanism: data-parallel ranks run the same loop, and every step's collectives (the
gradient all-reduce, a metric's all-reduce) are matched across ranks by the order they are
issued in. A rank that prints step 5 then step 7, while every other rank prints 5, 6 and 7,
did not run step 6's body (a ``continue`` on an empty or filtered batch, an exception
swallowed mid-step): from then on each of its collectives pairs with the others' previous
one, so its step numbers run ahead of theirs until the first collective whose size or type
differs fails (gloo's "Received data size doesn't match expected size", a mismatch error) or
hangs. The rank whose own step sequence skipped a step every other rank printed, and which
is ahead of every other rank at the log's end, is where the desync began; the ranks that
failed in the mismatched collective are its victims.

A step lost from the log is no skip: lines of several ranks glued into one (unprefixed
output sharing a terminal) lose each glued rank's step, so a skip counts only when every
other rank printed the missing steps, and the rank must also have run ahead (a lost line
does not move a rank's later steps). Repeated steps are not read: many loops print two
progress lines per step.
"""

from __future__ import annotations

from rootrank.analysis.prepare import Context
from rootrank.analysis.reasons import say

#: Transitions of the usual increment each other rank must show: fewer is no regular stride.
MIN_REGULAR = 3
#: Ranks with progress needed: with two, "ahead of the others" and "every other rank printed
#: it" are one rank's word against the other's.
MIN_RANKS = 3


def skipped_step(ctx: Context) -> tuple[int, str] | None:
    """The one rank that skipped a step every other rank printed and ran ahead of them all,
    with the reason (:func:`rootrank.analysis.reasons.say` ``skipped_step``), or ``None``.
    Reads :meth:`rootrank.progress.ProgressModel.step_breaks` and ``last``."""
    model = ctx.state.progress
    breaks = {r: b for r, b in model.step_breaks().items() if r is not None}
    last = {r: p.step for r, p in model.last().items() if r is not None}
    if len(breaks) < MIN_RANKS or set(breaks) != set(last):
        return None
    usual = {inc for inc, _, _ in breaks.values()}
    if len(usual) != 1:
        return None
    stride = usual.pop()
    if stride <= 0 or any(n < MIN_REGULAR for _, n, _ in breaks.values()):
        return None
    found: dict[int, list[tuple[int, int, int]]] = {}
    for rank, (_, _, own) in breaks.items():
        if not all(last[rank] > last[q] for q in last if q != rank):
            continue  # not ahead of every other rank
        for before, step, line in own:
            missing = set(range(before + stride, step, stride))
            if step - before <= stride or not missing:
                continue
            if all(_printed(breaks[q][2], last[q], missing, stride) for q in breaks if q != rank):
                found.setdefault(rank, []).append((before, step, line))
    if len(found) != 1:
        return None
    ((rank, skips),) = found.items()
    gone = sorted({m for before, step, _ in skips for m in range(before + stride, step, stride)})
    return rank, say(
        "skipped_step",
        rank=rank,
        missing=("steps " if len(gone) > 1 else "step ")
        + ", ".join(str(s) for s in gone[:4])
        + (", ..." if len(gone) > 4 else ""),
        line=skips[0][2],
        last=last[rank],
        others=max(v for q, v in last.items() if q != rank),
    )


def _printed(own: list[tuple[int, int, int]], last: int, missing: set[int], stride: int) -> bool:
    """Whether a rank whose breaks are ``own`` and last step ``last`` printed every step of
    ``missing``: it reached past them and no break of its own jumps over one."""
    if last < max(missing):
        return False
    for before, step, _ in own:
        if step - before > stride and any(before < m < step for m in missing):
            return False
    return True
