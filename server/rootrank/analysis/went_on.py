"""A traceback from the script's top level that its process went on after (rule
``run_completed``'s exception for ``<module>`` tracebacks).

Mechanism: :func:`rootrank.analysis.survived.caught` reads a traceback whose outermost frame is
the script's top level (``<module>``) as one nothing caught: the process died of it, and any
line of its after the traceback is its stdout buffer flushed at exit. But a handler at the top
level (a retry loop in ``if __name__ == "__main__":`` that calls ``traceback.print_exc()``)
prints the same shape, and its process goes on. What tells the two apart is how the lines after
the traceback were written: a buffer flushed at exit is one write, so the dying process's later
lines come as one unbroken block; a process that went on writes its lines as it prints them,
between the other processes' lines. So when, after the traceback, the lines of *every* rank the
log shows (at least two) are broken up by another rank's lines (each rank's later lines fall in
two or more separate runs), no rank's later lines are a flushed block: whichever rank printed
the traceback went on printing after it. When the traceback names its rank (``[rank2]:``, or
the launcher's local rank ``[default2]:``), that rank's lines alone decide: another rank's
later lines may come in one piece without saying anything (a child's block-buffered stdout read
by ``--tee`` in chunks), and the ranks are those the tail's lines name (a local rank counts as
the rank its launcher tags). Read from the source's kept tail (``ScanState.tails``); a traceback
before the tail cannot be judged (``False``).

Only used with the run's visible end (rootrank.analysis.completed), which also requires that no
launcher reported a failed worker.
"""

from __future__ import annotations

from rootrank.ranks import RankTagger
from rootrank.scan import ScanState, SeenException, body_rank

#: Separate runs of its own lines (broken by another rank's lines) each rank needs after the
#: traceback: one run could be a buffer flushed at exit.
MIN_RUNS = 2


def went_on_after(state: ScanState, seen: SeenException) -> bool:
    """Whether the rank that printed the exception ``seen`` (or, when its lines name none, every
    rank, two or more) printed, after ``seen``'s line, lines in at least :data:`MIN_RUNS`
    separate runs broken by another rank's lines (the module's docstring gives why). ``False``
    when ``seen``'s source kept no tail, or the tail starts after its line, or fewer than two
    ranks were seen."""
    tail = next((t for t in state.tails if t[0] == seen.path), None)
    if tail is None:
        return False
    path, first, text = tail
    if first > seen.exc.log_line:
        return False
    tagger = RankTagger(path=path)
    runs: dict[int, int] = {}
    prev: int | None = None
    line_rank: int | None = None
    for i, raw in enumerate(text.split("\n")):
        number = first + i
        tagged = tagger.tag(raw, number)
        rank = tagged.rank if tagged.rank is not None else tagged.local_rank
        if rank is None and "rank" in tagged.text:
            rank = body_rank(tagged.text)
        if number == seen.exc.log_line and rank is not None:
            line_rank = rank  # the exception line's own tag names the rank that printed it
        if number <= seen.exc.log_line or rank is None:
            continue
        if rank != prev:
            runs[rank] = runs.get(rank, 0) + 1
            prev = rank
    ranks = set(state.ranks_seen) | set(runs)
    if len(ranks) < 2:
        return False
    own = line_rank if line_rank is not None else seen.rank
    if own is not None and own in runs:
        return runs[own] >= MIN_RUNS
    return all(runs.get(r, 0) >= MIN_RUNS for r in ranks)
