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


def phase_rank(ctx: Context) -> tuple[int, str, int, str] | None:
    """``(rank, path, 1-based line, the line's text)`` of the first phase line (see the
    module) when every such line names one and the same rank and the log knows at least two
    ranks; ``None`` otherwise (no such line, lines of several ranks, a line naming no rank or
    several)."""
    if len(ctx.known_ranks()) < 2:
        return None
    found: dict[int, tuple[str, int, str]] = {}
    seen: set[tuple[str, int]] = set()
    for path, first, text in (*ctx.state.heads, *ctx.state.tails):
        tagger = RankTagger(path=path)
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if (path, number) in seen or raw[:1] in " \t" or not _PHASE.search(raw):
                continue
            seen.add((path, number))
            tagged = tagger.tag(raw, number)
            named = {int(m.group(1)) for m in _RANK_WORD.finditer(raw)}
            if tagged.rank is not None:
                named.add(tagged.rank)
            if len(named) != 1:
                return None
            found.setdefault(named.pop(), (path, number, raw.strip()))
    if len(found) != 1:
        return None
    ((rank, (path, line, text)),) = found.items()
    return rank, path, line, text
