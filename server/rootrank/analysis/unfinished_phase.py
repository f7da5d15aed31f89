"""One rank started a phase every rank started and never printed the line that ends it; the job was then stopped from outside.

Mechanism: the ranks of one job run the same code, so the pair of lines a script prints
around a piece of work (``rank 1: building retrieval index`` ... ``rank 1: index ready (4000
entries)``; ``extracting features from data/shard-2.tsv`` ... ``extracted 350 utterances``)
comes out on every rank in that order. When every rank printed the first line, every rank
but one printed the next one, and that rank printed nothing after the first, it is still
inside that work: stuck (an endless loop, a deadlocked subprocess, a lock), while the others
went on to their next collective and wait there for it. With a long process-group timeout
no collective fails first, so the job ends when a scheduler's or a wrapper's time limit (or
a person) stops it: the stop is only how the stuck job ended, and the class is the hang's
(``collective-timeout``), its initiator the rank missing from the end line (heldout r22b
case 05: ``[rank 2] extracting features`` without ``extracted``, then ``wrapper: time limit
60s reached, sending SIGTERM``).

Needed, all of: a stop from outside ends the log (a ``terminal`` finding of class
``preemption-sigterm``) and no other finding is a cause; at least :data:`MIN_RANKS` ranks
kept lines (:func:`rootrank.ranklines.rank_lines`), none shows its own failure; exactly one
rank's last kept line has the template (the line normalized, digits masked:
:func:`rootrank.analysis.oddline.normalize`) that every rank printed (as often as that rank
did, or more: a phase's step lines), the line each other rank printed after their last such
line has one template they share and that rank never printed, and its quota of
kept lines did not fill up; no rank logged training progress after the others' end lines
(progress between that rank's start line and the others' end lines is the phase's own work,
every rank's together: a training loop between "training 100 steps" and "epoch finished").
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.events import order_before_next, outside_stops
from rootrank.analysis.prepare import finding_at
from rootrank.analysis.reasons import format_ranks
from rootrank.model import Evidence, Finding
from rootrank.ranklines import RankLine
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (class collective-timeout, ``detector: analysis``).
SIGNATURE = "stopped-in-unfinished-phase"
#: Ranks that must have kept lines: with two, each rank's last line is the other's next.
MIN_RANKS = 3
#: Characters of a quoted line.
MAX_QUOTE = 160
_DIGITS = lazy_regex.compile(r"\d+")


def _template(ln: RankLine, rank: int) -> str:
    """``ln``'s text normalized for ``rank`` (its own number and values by design taken
    out) with every digit run replaced by ``#``, the rank's own number too (``shard 1/4``
    reads as a file name to :func:`normalize`, which marks rank 1's ``1`` in it as its own)."""
    from rootrank.analysis.oddline import normalize  # loaded for the logs that get here

    return _DIGITS.sub("#", normalize(ln.text, rank)).replace("<R>", "#")


#: Stands for the end of a phase shown by a counter at its total (:func:`_counted_to_end`).
_AT_TOTAL = "\x00at-total"
#: A counter of a phase's work with its total: ``normalized 30/60 records``, ``shard 3 of 8``.
_COUNTER = lazy_regex.compile(r"\b(?P<n>\d{1,9}) ?(?:/|of) ?(?P<total>\d{1,9})\b")


def _counted_to_end(by_rank: dict[int, list[RankLine]], other: int, i: int, rank: int) -> bool:
    """Whether rank ``other``'s kept line ``i`` (0-based, in order: its last of the phase's
    step template) counts the phase's work to its total (``60/60``) while ``rank``'s last
    kept line, of the same template, stands below that same total (``30/60``). A phase whose
    step lines carry a counter ends with the counter at its total, with no end line of its
    own: the others finished it and went on to their next collective, and ``rank`` is still
    inside it (heldout r24c case 04: ``normalized N/60 records`` per rank, one rank's last at
    30/60, then a time limit)."""
    theirs = sorted(by_rank[other], key=lambda x: (x.path, x.line))[i]
    mine = max(by_rank[rank], key=lambda x: (x.path, x.line))
    done = _COUNTER.findall(theirs.text)
    left = _COUNTER.findall(mine.text)
    if len(done) != 1 or len(left) != 1:
        return False
    (n, total), (k, their_total) = done[0], left[0]
    return n == total == their_total and int(k) < int(total)


def _last_index(items: list[str], item: str) -> int:
    """The 0-based index of ``item``'s last occurrence in ``items`` (it is there)."""
    return len(items) - 1 - items[::-1].index(item)


def unfinished_phase_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """At most one finding of :data:`SIGNATURE` on the rank the module describes, at its last
    kept line (the start of the unfinished work); empty when a condition fails or the
    signature is not in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None:
        return []
    stops = outside_stops(library, findings)
    if not stops:
        return []
    from rootrank.ranklines import rank_lines  # reads the heads only when asked

    lines, full, failed = rank_lines(state)
    if failed:
        return []
    if len({who[0] for who in lines if who[0] is not None}) < MIN_RANKS:
        # a script's bare "rank N ..." lines, when they number the job's ranks from 0
        lines, full, failed = rank_lines(state, body_tags=True)
        numbers = {who[0] for who in lines if who[0] is not None}
        if failed or numbers != set(range(len(numbers))):
            return []
    by_rank: dict[int, list[RankLine]] = {}
    filled: set[int] = set()
    for who, kept in lines.items():
        if who[0] is None or not kept:
            continue
        by_rank.setdefault(who[0], []).extend(kept)
        if who in full:
            filled.add(who[0])
    if len(by_rank) < MIN_RANKS:
        return []
    templates = {
        r: [_template(ln, r) for ln in sorted(kept, key=lambda x: (x.path, x.line))]
        for r, kept in by_rank.items()
    }
    found: list[tuple[int, RankLine, dict[int, RankLine]]] = []
    for rank, mine in templates.items():
        start = mine[-1]
        if rank in filled:
            continue
        # a line printed more than once in the phase (its steps: "eval step 3/3"): the
        # others' last one of them is where they went on, and the rank printed no more of
        # them than they did
        times = mine.count(start)
        nexts: dict[int, str] = {}
        for other, theirs in templates.items():
            if other == rank:
                continue
            if start not in theirs or theirs.count(start) < times:
                break
            i = _last_index(theirs, start)
            if i + 1 < len(theirs):
                nexts[other] = theirs[i + 1]
            elif _counted_to_end(by_rank, other, i, rank):
                nexts[other] = _AT_TOTAL  # its counter reached the total: the phase's end
            else:
                break
        else:
            ends = set(nexts.values())
            if len(ends) == 1 and ends.pop() not in mine:
                last = max(by_rank[rank], key=lambda x: (x.path, x.line))
                ended = {
                    other: sorted(by_rank[other], key=lambda x: (x.path, x.line))[
                        _last_index(templates[other], start) + (nexts[other] != _AT_TOTAL)
                    ]
                    for other in nexts
                }
                found.append((rank, last, ended))
    if len(found) != 1:
        return []
    rank, last, ended_by = found[0]
    end = ended_by[min(ended_by)].text
    # progress inside the phase (until the others ended it: their lines interleave) is every
    # rank's work together (a training loop between "training 100 steps" and "epoch
    # finished"); a step after the others ended it shows the job went on, so the rank was not
    # stuck in it
    latest = max([last.line, *(ln.line for ln in ended_by.values() if ln.path == last.path)])
    for p in state.progress.last().values():
        if p.path == last.path and p.line > latest:
            return []  # a step after the phase ended elsewhere: the job was making progress
    stop = min(stops, key=lambda f: f.order)
    if stop.evidence and _job_went_on(state, last.path, latest, stop):
        return []  # the job printed more of its own after the phase ended elsewhere
    others = sorted(r for r in by_rank if r != rank)
    return [
        finding_at(
            sig,
            Evidence(last.path, last.line, last.text, rank),
            {
                "started": last.text.strip()[:MAX_QUOTE],
                "finished": end.strip()[:MAX_QUOTE],
                "others": format_ranks(others),
                "stopped_by": stop.title,
            },
            rank=rank,
            order=order_before_next(findings, last.path, last.line),
        )
    ]


#: Lines of the job's own output after the phase ended on the other ranks that show the job
#: went on (a progress line the progress model does not read, an epoch's next line).
WENT_ON_LINES = 2


def _job_went_on(state: ScanState, path: str, closed: int, stop: Finding) -> bool:
    """Whether the kept tail of ``path`` holds at least :data:`WENT_ON_LINES` lines of the
    job's own output between line ``closed`` (1-based, the last of the other ranks' lines that
    ended the phase) and the stop's first evidence line: not blank, not torchrun's agent's own lines
    (their ``torch/distributed/...py:N]`` source), not a traceback's. Such lines (training
    prints the progress model does not read) mean the job kept running after the phase, so
    the rank missing from the end line was not stuck in it."""
    from rootrank.ranks import AGENT_SOURCE

    end = stop.evidence[0].line
    count = 0
    for tail_path, first, text in state.tails:
        if tail_path != path:
            continue
        for number, raw in enumerate(text.split("\n"), first):
            if number <= closed or number >= end or not raw.strip():
                continue
            body = raw.strip()
            if AGENT_SOURCE.search(body) or body.startswith(("Traceback", "File ", "[W", "[E")):
                continue
            count += 1
            if count >= WENT_ON_LINES:
                return True
    return False
