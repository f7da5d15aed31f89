"""A hang shown only by how the log ends: every rank prints the same line, one never does.

Training scripts often print one line per rank per iteration (``rank 4, fetch sample 1469``,
``[RANK 2] batch 17 loaded``, ``Rank 5: step 12 done``). When one rank stops in Python (its
DataLoader workers died or block, it waits on I/O, it runs rank-0-only work), it stops
printing; the other ranks print their line once more, enter the next collective and wait
there for it, silently, until the (long) collective timeout or a human ends the job. What
remains is a log that ends on those lines with one rank missing and no error at all (issue 8,
kind 5, "missing progress"). The rank missing is the one the others wait for.

Read from the last lines of each source (``ScanState.tails``): only a rank tag the
application itself printed at the start of a line's body (after launcher prefixes), or
torchrun's ``[rankN]:`` prefix, counts; a line with no rank evidence belongs to no rank.
"""

from __future__ import annotations

from collections import defaultdict

from rootrank import re_code
from rootrank.analysis.prepare import Context
from rootrank.analysis.reasons import format_ranks, say
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger

#: The signature that describes it (``detector: progress``).
SILENT_SIGNATURE = "rank-silent-in-per-rank-lines"
#: At least this many ranks printed the line (fewer prove no pattern).
MIN_RANKS = 4
#: A rank that printed the line before is behind when every other rank printed it this many
#: times after its last one.
LAG_LINES = 2

# An application's own rank tag at the start of a line's body: "rank 4, ...", "[RANK 2] ...",
# "Rank 5: ...", "rank=3 ...", "(rank 1) ...". The tag ends the token: "rank 4x" is not one.
_APP_RANK = re_code.compile(r"(?i)^\s{0,4}[\[(<]?rank[ _:=#]{0,2}(?P<rank>\d{1,5})(?:[\])>,:|]|\s)")
_TORCHRUN = re_code.compile(r"^\s{0,4}\[rank\d{1,6}\]:")
_NUMBER = re_code.compile(r"\d+")


def silent_rank_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`SILENT_SIGNATURE` on the one rank missing from the per-rank lines
    the log ends on, or ``None``.

    Needed, all of: no failure anywhere in the log (no error finding, exception, cut
    traceback or failed exit: those explain a stop better); in one source's last lines, one
    line shape (the text after the rank tag with its numbers removed, and holding at least
    one number: a counter) printed by at least :data:`MIN_RANKS` ranks; exactly one rank
    missing from ``0..`` the highest of them (and from the world size when the log prints
    one), and that rank printed no tagged line at all there, or one rank that printed it
    while every other rank printed it :data:`LAG_LINES` times after its last (it stopped,
    they went on), and no other such rank; and the source's last line is
    of that shape (the log ends while the other ranks were still printing it)."""
    if SILENT_SIGNATURE not in ctx.library.signatures or ctx.failure_present:
        return None
    if any(f.role == "cause" for f in ctx.findings):
        return None
    for path, first, text in ctx.state.tails:
        found = _silent_in(ctx, path, first, text)
        if found is not None:
            return found
    return None


def _silent_in(ctx: Context, path: str, first: int, text: str) -> Finding | None:
    tagger = RankTagger(path=path)
    by_shape: dict[str, list[tuple[int, int]]] = defaultdict(list)  # shape -> (rank, line)
    tagged_ranks: set[int] = set()
    last_shape: str | None = None
    for number, line in enumerate(text.split("\n"), start=first):
        if not line.strip():
            continue
        tagged = tagger.tag(line, number)
        body = tagged.text
        m = _APP_RANK.match(body)
        if m is not None:
            rank, rest = int(m["rank"]), body[m.end() :]
        elif tagged.rank is not None and (_TORCHRUN.match(line) or _APP_RANK.match(line)):
            # the tagger peeled the tag itself ("[rank3]:", "[RANK 3]")
            rank, rest = tagged.rank, body
        else:
            last_shape = None
            continue
        tagged_ranks.add(rank)
        if not _NUMBER.search(rest):
            last_shape = None
            continue
        last_shape = _NUMBER.sub("#", rest.strip())
        by_shape[last_shape].append((rank, number))
    if last_shape is None:
        return None
    lines = by_shape[last_shape]
    printed = {r: n for r, n in lines}  # each rank's last line of the shape
    if len(printed) < MIN_RANKS:
        return None
    world = ctx.state.world_size
    top = max(printed)
    if world is not None and world > top:
        top = world - 1
    never = set(range(top + 1)) - set(printed)
    # a rank that printed it before, while every other rank printed it twice more after
    behind = {
        r
        for r, last in printed.items()
        if all(
            sum(1 for q, n in lines if q == o and n > last) >= LAG_LINES for o in printed if o != r
        )
    }
    if len(never) + len(behind) != 1 or never & tagged_ranks:
        return None
    rank = min(never | behind)
    last_rank, last_line = max(printed.items(), key=lambda kv: kv[1])
    line_text = text.split("\n")[last_line - first]
    sig = ctx.library.signatures[SILENT_SIGNATURE]
    printers = format_ranks(sorted(set(printed) - {rank}))
    key = "silent_in_lines" if rank in never else "silent_behind_in_lines"
    return Finding.of(
        sig,
        rank=rank,
        host=ctx.state.hosts.get(rank),
        time=None,
        order=1 + max((f.order for f in ctx.findings), default=0),
        evidence=[Evidence(path=path, line=last_line, text=line_text.strip(), rank=last_rank)],
        captures={
            "printers": printers,
            "shape": last_shape.replace("#", "N"),
            "why": say(key, rank=rank, printers=printers, lag=LAG_LINES),
        },
    )
