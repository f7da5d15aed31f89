"""The one rank whose own line says it entered another phase of the loop (validation,
evaluation, testing) while the ranks' collectives were out of step.

Mechanism: a training script logs when it leaves the training step for validation or
evaluation (``Validate epoch: 1, rank: 1``, ``[rank 3] running evaluation``). The ranks of a
data-parallel job leave the step together when they hold the same number of batches; a rank
with fewer batches leaves first and issues the collectives of the next phase (a 1-element
metric all-reduce, a barrier) while the others still reduce gradients. When the log shows a
collective desync and exactly one rank's own lines name such a phase, that rank left the
step first: it is where the streams diverged (:func:`phase_rank`).

Read from the sources' kept heads and tails (``ScanState.heads``/``tails``): every line, not
only those the scan's gate chose. A line counts for a rank when its rank tag
(:class:`rootrank.ranks.RankTagger`) or a ``rank N`` word in its text names that rank alone;
an indented line (a traceback's, a dump's) never counts.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context
from rootrank.ranks import RankTagger

#: A phase other than the training step: validation, evaluation, testing (a word, not a
#: part of a path or a name: ``val_loss``, ``eval.py`` do not count).
_PHASE = lazy_regex.compile(
    r"(?i)(?<![\w./-])(?:validat(?:e|es|ing|ion)|evaluat(?:e|es|ing|ion)|eval|testing)(?![\w./-])"
)
#: A rank named in a line's text (``rank: 1``, ``rank=1``, ``rank 1``).
_RANK_WORD = lazy_regex.compile(r"(?i)(?<![\w-])rank[ _:=#]{0,2}(\d{1,6})(?![\d.])")


def _named_ranks(tagger: RankTagger, raw: str, number: int) -> set[int]:
    """The ranks line ``number`` (1-based) of ``tagger``'s source names: its rank tag's and
    every ``rank N`` word in its text."""
    named = {int(m.group(1)) for m in _RANK_WORD.finditer(raw)}
    tagged = tagger.tag(raw, number)
    if tagged.rank is not None:
        named.add(tagged.rank)
    return named


def phase_rank(ctx: Context) -> tuple[int, str, int, str] | None:
    """``(rank, path, 1-based line, the line's text)`` of the first phase line (see the
    module) when every such line names one and the same rank and the log knows at least two
    ranks; ``None`` otherwise (no such line, lines of several ranks, a line naming no rank or
    several)."""
    if len(ctx.known_ranks()) < 2:
        return None
    found: dict[int, tuple[str, int, str]] = {}
    seen: set[tuple[str, int]] = set()
    st = ctx.state
    # a file of several launches: only the diagnosed one's lines (the last attempt, the
    # last job), not the phases an earlier launch printed before it failed
    since = max([1, *st.attempt_starts, *(r.end + 1 for r in st.other_runs)])
    for path, first, text in (*st.heads, *st.tails):
        tagger = RankTagger(path=path)
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if len(st.sources) == 1 and number < since:
                continue
            if (path, number) in seen or raw[:1] in " \t" or not _PHASE.search(raw):
                continue
            seen.add((path, number))
            named = _named_ranks(tagger, raw, number)
            if len(named) != 1:
                return None
            found.setdefault(named.pop(), (path, number, raw.strip()))
    if len(found) != 1:
        return None
    ((rank, (path, line, text)),) = found.items()
    return rank, path, line, text


#: A line that says the loop began an epoch (``starting epoch 1``, ``Epoch 2 begins``,
#: ``epoch=3 start``): the epoch number in group 1. A progress bar's ``Epoch 1:  40%|`` is
#: not a start (it is drawn during the epoch).
_EPOCH_START = lazy_regex.compile(
    r"(?i)(?:\b(?:start(?:ing|ed|s)?|begin(?:ning|s)?|enter(?:ing|ed)?)\s+(?:of\s+)?epoch[\s:=#]{0,3}(\d{1,6})\b"
    r"|\bepoch[\s:=#]{0,3}(\d{1,6})(?:/\d+)?\s*(?:begins|started|starts|start\b))"
)


def epoch_ahead(
    ctx: Context, path: str, before: int
) -> tuple[int, int, int, str, dict[int, int]] | None:
    """The one rank that had begun a later epoch than every other rank before line
    ``before`` (1-based) of ``path``, the line of the first failure: ``(rank, its epoch, its
    1-based line, the line's text, {other rank: the epoch it was in})``, or ``None`` (fewer
    than three ranks with an epoch start before the failure, or no single rank ahead).

    Mechanism: data-parallel ranks run the same number of steps per epoch, each step's
    collectives matched across ranks by order. A rank that begins the next epoch while every
    other rank is still in the previous one ran fewer steps (fewer batches, a step it skipped
    after a swallowed error): its first collectives of the new epoch met the others' last
    ones of the old, and the mismatch that follows (gloo's size check, a desync error, a
    hang) is detected by whichever rank received first. Only lines of one source, in order,
    before the failure count: per-rank files cannot be ordered against each other."""
    latest: dict[int, tuple[int, int, str]] = {}
    for src, first, text in ctx.state.heads:
        if src != path:
            continue
        tagger = RankTagger(path=path)
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if number >= before:
                break
            if raw[:1] in " \t":
                continue
            m = _EPOCH_START.search(raw)
            if m is None:
                continue
            epoch = int(m.group(1) or m.group(2))
            named = _named_ranks(tagger, raw, number)
            if len(named) != 1:
                continue
            rank = named.pop()
            if rank not in latest or epoch > latest[rank][0]:
                latest[rank] = (epoch, number, raw.strip())
    if len(latest) < 3:
        return None
    top = max(e for e, _, _ in latest.values())
    ahead = [r for r, (e, _, _) in latest.items() if e == top]
    if len(ahead) != 1:
        return None
    rank = ahead[0]
    epoch, line, text = latest[rank]
    return rank, epoch, line, text, {r: e for r, (e, _, _) in latest.items() if r != rank}
