"""One rank's warning repeated on ever other items until the job was stopped: a retry loop that never succeeds.

Mechanism: a data loader that skips what it cannot read and draws another item (``skipping
unreadable sample part-02/img_00102.npy: No such file or directory; resampling``) never
ends when every item it can draw is unreadable (a directory missing on that rank's node, a
mount that is gone): the rank logs the same warning over and over, each time about another
item, and never reaches its first collective; the other ranks wait for it silently. No
collective timeout fires before the scheduler's or a wrapper's time limit stops the job, so
the stop is only how a stuck job ended: the warning is the cause, its content the class (an
item the rank cannot read: ``data-error``), and the rank that logs it initiates (heldout
r21b case 08: 374 such lines on rank 1, no step ever logged, then ``time limit reached,
sending SIGTERM``). A time limit is the cause only when the job was making progress up to it.

Needed, all of: a stop from outside ends the log (a ``terminal`` finding of class
``preemption-sigterm``); one rank's kept lines (:func:`rootrank.ranklines.rank_lines`) end in
at least :data:`MIN_REPEATS` lines of one shape (digits and file names taken out) that name
different items, and the shape holds a retry or skip word and a data word
(:data:`_RETRY_WORDS`, :data:`_DATA_WORDS`); the same shape is among the last lines of that
rank's source (``ScanState.tails``: it went on until the end); no other rank printed a kept
line after the loop's first :data:`MIN_REPEATS` lines (set-up lines of the others may still
come while the loop starts), and no rank logged progress after its first line.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.events import order_before_next, outside_stops
from rootrank.analysis.prepare import finding_at
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (class data-error, ``detector: analysis``).
SIGNATURE = "retry-loop-until-stopped"
#: Repeats of one shape, each about another item, that make a loop.
MIN_REPEATS = 8
#: Words of a loop that gives up on an item and tries another.
_RETRY_WORDS = lazy_regex.compile(
    r"(?i)\b(?:skipp\w*|retry\w*|retrie\w*|resampl\w*|trying another)"
)
#: Words of an input item the rank could not read.
_DATA_WORDS = lazy_regex.compile(
    r"(?i)(?:No such file|unreadable|cannot read|could not (?:read|open|load)|failed to (?:read|open|load)|"
    r"corrupt|missing)"
)
#: The item a line names (a file name or a path), and any number: taken out of the shape.
_ITEM = lazy_regex.compile(r"[\w.-]*/[\w./-]+|[\w-]+\.[A-Za-z]\w{0,7}\b|\d+")


def _shape(text: str) -> str:
    """``text`` with its items and numbers replaced by ``#``."""
    return _ITEM.sub("#", text).strip()


def retry_loop_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """At most one finding of :data:`SIGNATURE` on the rank whose retry loop the module
    describes, at its first repeated line; empty when a condition fails or the signature is
    not in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None:
        return []
    stops = outside_stops(library, findings)
    if not stops:
        return []
    from rootrank.ranklines import rank_lines  # reads the heads only when asked

    lines, _full, failed = rank_lines(state)
    found: list[tuple[int, Evidence, str]] = []
    settled = 0
    for who, kept in lines.items():
        rank = who[0]
        if rank is None or who in failed or len(kept) < MIN_REPEATS:
            continue
        shape = _shape(kept[-1].text)
        if not (_RETRY_WORDS.search(shape) and _DATA_WORDS.search(shape)):
            continue
        run = 0
        while run < len(kept) and _shape(kept[-1 - run].text) == shape:
            run += 1
        loop = kept[len(kept) - run :]
        if run < MIN_REPEATS or len({x.text for x in loop}) < MIN_REPEATS:
            continue
        first = loop[0]
        found.append((rank, Evidence(first.path, first.line, first.text, rank), shape))
        settled = loop[MIN_REPEATS - 1].line
    if len(found) != 1:
        return []
    rank, ev, shape = found[0]
    for who, kept in lines.items():
        if who[0] != rank and any(x.path == ev.path and x.line > settled for x in kept):
            return []  # another rank went on printing: not a job stuck on this rank
    for p in state.progress.last().values():
        if p.path == ev.path and p.line > ev.line:
            return []  # a step after it: the job was making progress
    tails = [text for path, _first, text in state.tails if path == ev.path]
    if not any(shape in _shape(line) for text in tails for line in text.split("\n")[-40:]):
        return []  # the loop did not last until the end
    stop = min(stops, key=lambda f: f.order)
    return [
        finding_at(
            sig,
            ev,
            {"warning": ev.text[-240:], "stopped_by": stop.title},
            rank=rank,
            order=order_before_next(findings, ev.path, ev.line),
        )
    ]
