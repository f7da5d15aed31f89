"""A rank's per-epoch statistics that show it saw the same samples every epoch: a
``DistributedSampler`` whose ``set_epoch`` is never called.

Mechanism: ``DistributedSampler`` shuffles with ``seed + epoch``, and ``epoch`` changes only
through ``sampler.set_epoch(epoch)`` (torch/utils/data/distributed.py). A loop that never
calls it gives every rank the same permutation, so the same subset of the data, every epoch.
The symptom is in counts a rank prints over ``E`` epochs (per-class or per-label counts,
sample ids seen): each one is a multiple of ``E``, since each epoch adds the same counts. A
check the user's code makes on that subset (every class seen, a balanced share) then fails
on a rank whose fixed subset happens to miss something, though reshuffling would have fixed
it. Evidence: a line of the failing rank's own (``rank 1 label counts over 4 epochs: {...}``)
naming ``E >= 2`` epochs and at least two counts, all multiples of ``E``, and the same on
at least one other rank's line (every rank repeats its subset without ``set_epoch``).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature it makes (class user-code-exception).
REPEAT_SIGNATURE = "sampler-same-data-every-epoch"
#: The findings it may replace: the generic exception of the user's own check.
REPLACEABLE = frozenset({"user-code-exception"})
#: Exception types a user's check of its data raises.
_CHECK_TYPES = ("AssertionError", "ValueError", "RuntimeError")
#: ``over 4 epochs`` / ``in 3 epochs`` / ``after 5 epochs`` on a line.
_EPOCHS = lazy_regex.compile(r"(?i)\b(?:over|in|across|after|for)\s+(?P<e>\d{1,4})\s+epochs?\b")
#: The counts after it: numbers that are a mapping's values or a list's items.
_COUNT = lazy_regex.compile(r"(?<=[:=,\[(]\s)\d{1,9}\b|(?<=[:=,\[(])\d{1,9}\b")
#: A rank named by the line's own text (``rank 1 label counts ...``).
_TEXT_RANK = lazy_regex.compile(r"(?i)\brank\s?(?P<rank>\d{1,5})\b")
#: Characters of the quoted line kept in the captures.
MAX_LINE = 200
#: Lines of the log's heads read at most.
MAX_LINES = 200000


def repeated_epochs(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each :data:`REPLACEABLE` finding of a user check's exception
    (:data:`_CHECK_TYPES`) on a rank whose own line shows counts over ``E`` epochs all
    multiples of ``E`` (see the module's docstring) replaced by a finding of
    :data:`REPEAT_SIGNATURE` on the same line, that line its second evidence. Captures:
    ``rank``, ``epochs`` (E), ``stats_line`` (the line, cut to :data:`MAX_LINE`) and
    ``stats_where`` (its 1-based line). Unchanged when the signature is missing or no line
    shows it on at least two ranks (without set_epoch every rank repeats its subset)."""
    sig = library.signatures.get(REPEAT_SIGNATURE)
    if sig is None:
        return findings
    stats = _stats_lines(state)
    if len(stats) < 2:
        return findings  # one rank's counts may be multiples by chance; every rank's are not
    out: list[Finding] = []
    for f in findings:
        line = stats.get(f.rank) if f.rank is not None else None
        if line is None or f.signature not in REPLACEABLE or not _is_check(f):
            out.append(f)
            continue
        src, number, text, epochs = line
        moved = f.recast(
            sig,
            {
                **f.captures,
                "rank": str(f.rank),
                "epochs": str(epochs),
                "stats_line": text.strip()[:MAX_LINE],
                "stats_where": str(number),
            },
        )
        moved.frames = f.frames
        moved.evidence.append(Evidence(path=src, line=number, text=text, rank=f.rank))
        out.append(moved)
    return out


def _is_check(f: Finding) -> bool:
    """Whether ``f`` is an exception of :data:`_CHECK_TYPES`."""
    return f.captures.get("exc_type", "").rsplit(".", 1)[-1] in _CHECK_TYPES


def _stats_lines(state: ScanState) -> dict[int, tuple[str, int, str, int]]:
    """Per rank, its first line of counts over ``E`` epochs that are all multiples of
    ``E``: ``(source, 1-based line, text, E)``."""
    out: dict[int, tuple[str, int, str, int]] = {}
    n = 0
    for src, first, text in state.heads:
        tagger = RankTagger(path=src)
        for i, line in enumerate(text.split("\n")):
            n += 1
            if n > MAX_LINES:
                return out
            m = _EPOCHS.search(line)
            if m is None or int(m.group("e")) < 2:
                continue
            epochs = int(m.group("e"))
            counts = [int(c.group()) for c in _COUNT.finditer(line, m.end())]
            if len(counts) < 2 or not any(counts) or any(c % epochs for c in counts):
                continue
            rank = tagger.tag(line, first + i).rank
            if rank is None:
                r = _TEXT_RANK.search(line)
                rank = int(r.group("rank")) if r else None
            if rank is not None and rank not in out:
                out[rank] = (src, first + i, line, epochs)
    return out
