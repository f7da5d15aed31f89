"""A hang shown only by how the log ends: every rank prints the same counted line, and their
counters stand apart (signature ``ranks-apart-in-per-rank-lines``).

Mechanism: a loop that every rank runs in step with the others (each iteration issues the
same collectives: FSDP's parameter all-gathers in a forward, a gradient all-reduce, a
metric reduce) keeps the ranks within one iteration of each other. When the log ends on the
per-rank line of that loop (``Rank 1 batch 89 start``) with no error and no end of the run,
and one rank's counter is two or more iterations past another's, the ranks did not run the
same number of iterations: one ran out of batches (uneven shards, a validation or
evaluation loop that consumes "all" of each rank's data, a length filter that drops a
different count per rank) and left the loop while the others issued one more collective and
wait in it for good (held-out r21c case 12: torchtitan validation with ``steps = -1``, rank 1
at batch 89 and rank 0 at batch 87). Which rank left first the log does not tell (the one
with the lowest counter may just be the one whose last lines were not flushed), so no rank
is named.

Read, like :mod:`rootrank.analysis.silent`, from the last lines of each source
(``ScanState.tails``): a line counts for a rank through an application's own rank tag at
the start of its body, or torchrun's ``[rankN]:`` prefix; its counter is the number after a
loop word (:data:`_COUNTER`).
"""

from __future__ import annotations

from collections import defaultdict

from rootrank import re_code
from rootrank.analysis.prepare import Context
from rootrank.analysis.silent import _APP_RANK, _NUMBER, _TORCHRUN
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger

#: The signature that describes it (``detector: progress``).
APART_SIGNATURE = "ranks-apart-in-per-rank-lines"
#: The least gap, in iterations, between two ranks' last counters (one is the print lag).
MIN_GAP = 2
#: The fewest lines of the shape each rank must print (a loop, not a one-off line).
MIN_LINES = 2
#: A loop counter: the number after a loop word (``batch 89``, ``step: 12``, ``iter=7``).
_COUNTER = re_code.compile(
    r"(?i)\b(?:batch|step|iter|iteration|micro[_ ]?batch|micro[_ ]?step|sample)(?:_idx|_id)?"
    r"\s{0,2}[#:=]?\s{0,2}(?P<n>\d{1,9})\b"
)


def _ranked(tagger: RankTagger, line: str, number: int) -> tuple[int, str] | None:
    """The rank a line counts for and its body after the rank tag, or ``None``."""
    tagged = tagger.tag(line, number)
    body = tagged.text
    m = _APP_RANK.match(body)
    if m is not None:
        return int(m["rank"]), body[m.end() :]
    if tagged.rank is not None and (_TORCHRUN.match(line) or _APP_RANK.match(line)):
        return tagged.rank, body
    return None


def apart_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`APART_SIGNATURE` when a source's last line is a per-rank counted
    line whose ranks' last counters are at least :data:`MIN_GAP` apart, or ``None``.

    Needed, all of: no failure anywhere in the log and no cause found (those explain a stop
    better), and no error a rank survived (caught and went on: it explains a skipped
    iteration); the run did not complete; at least two ranks printed that line's shape (the
    text after the rank tag with its numbers removed) at least :data:`MIN_LINES` times each
    in the kept tail, each rank's last counter its highest."""
    if APART_SIGNATURE not in ctx.library.signatures or ctx.failure_present:
        return None
    if ctx.completed is not None or any(f.role == "cause" for f in ctx.findings):
        return None
    if ctx.survived or ctx.handled:
        return None  # an error a rank caught and went on from explains a skipped step better
    for path, first, text in ctx.state.tails:
        found = _apart_in(ctx, path, first, text)
        if found is not None:
            return found
    return None


def _apart_in(ctx: Context, path: str, first: int, text: str) -> Finding | None:
    tagger = RankTagger(path=path)
    counts: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    last: tuple[str, int, int, str] | None = None  # shape, rank, line, text
    for number, line in enumerate(text.split("\n"), start=first):
        if not line.strip():
            continue
        ranked = _ranked(tagger, line, number)
        m = _COUNTER.search(ranked[1]) if ranked is not None else None
        if ranked is None or m is None:
            last = None
            continue
        rank, body = ranked
        shape = _NUMBER.sub("#", body.strip())
        counts[shape][rank].append(int(m["n"]))
        last = (shape, rank, number, line.strip())
    if last is None:
        return None
    shape, last_rank, line_no, line_text = last
    per_rank = counts[shape]
    if len(per_rank) < 2 or any(len(v) < MIN_LINES for v in per_rank.values()):
        return None
    if any(v[-1] != max(v) or v[-1] == min(v) for v in per_rank.values()):
        return None  # not a counter each rank raised to its last line
    ends = {r: v[-1] for r, v in per_rank.items()}
    ahead, behind = max(ends, key=lambda r: ends[r]), min(ends, key=lambda r: ends[r])
    if ends[ahead] - ends[behind] < MIN_GAP:
        return None
    sig = ctx.library.signatures[APART_SIGNATURE]
    ranks = ", ".join(f"rank {r} at {ends[r]}" for r in sorted(ends))
    return Finding.of(
        sig,
        rank=None,
        host=None,
        time=None,
        order=1 + max((f.order for f in ctx.findings), default=0),
        evidence=[Evidence(path=path, line=line_no, text=line_text, rank=last_rank)],
        captures={
            "shape": shape.replace("#", "N"),
            "ends": ranks,
            "gap": str(ends[ahead] - ends[behind]),
        },
    )
