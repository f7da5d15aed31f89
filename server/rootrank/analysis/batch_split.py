"""An input-vs-target batch size mismatch that is a global batch not divisible by the number
of ranks.

Mechanism: code that splits a global batch of ``G`` rows over ``W`` ranks
(``torch.tensor_split``, ``torch.chunk``, ``x[rank::W]``, a sampler's shard) gives some ranks
``ceil(G/W)`` rows and others fewer when ``G % W != 0``; code that sizes something else from
a per-rank size computed once (``math.ceil(G / W)``, ``G // W``: the labels of an in-batch
contrastive loss, a target buffer, a reshape) is then right on some ranks and one row off on
the rest. The loss or view on the short rank raises ``Expected input batch_size (6) to match
target batch_size (7)`` / ``The size of tensor a (6) must match the size of tensor b (7)``:
not a layer's configuration, but an uneven split. Evidence: the two sizes are both among the
split sizes of a global batch the log itself prints (a line with ``batch`` and ``G``) over
the job's rank count ``W``, with ``G % W != 0``.
"""

from __future__ import annotations

import math

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature it makes (class user-code-exception).
UNEVEN_SIGNATURE = "batch-not-divisible-by-world-size"
#: The signature whose two size captures it reads.
SHAPE_SIGNATURE = "shape-mismatch"
#: Capture pairs of :data:`SHAPE_SIGNATURE` that hold two sizes of one dimension.
_PAIRS = (("size_a", "size_b"), ("size_a2", "size_b2"))
#: A line of the job's own output about the batch (not the error itself).
_BATCH_LINE = lazy_regex.compile(r"(?i)batch")
_ERROR_LINE = lazy_regex.compile(r"(?i)Error\b|Expected input batch_size|must match|Traceback")
#: A number in a line, and a number of ranks a line names (``over 3 ranks``, ``4 workers``).
_NUMBER = lazy_regex.compile(r"(?<![\w.])\d{1,7}(?![\w.])")
_RANKS = lazy_regex.compile(
    r"(?i)(?<![\w.])(?P<w>\d{1,5})\s+(?:ranks?|workers?|processes|procs?|gpus?|devices?|replicas?)\b"
)
#: Characters of the batch line kept in the captures.
MAX_LINE = 160


def split_sizes(total: int, world: int) -> set[int]:
    """The per-rank sizes ``total`` rows split over ``world`` ranks can give: the floor and
    the ceiling of the even share, and the last rank's remainder after ``world - 1`` ranks
    took either (``torch.tensor_split`` / ``torch.chunk``); positive sizes only."""
    floor, ceil = total // world, math.ceil(total / world)
    sizes = {floor, ceil, total - (world - 1) * ceil, total - (world - 1) * floor}
    return {s for s in sizes if s > 0}


def uneven_batch_splits(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each :data:`SHAPE_SIGNATURE` finding whose two sizes differ and are
    both split sizes (:func:`split_sizes`) of a global batch ``G`` a line of the log's heads
    prints (:data:`_BATCH_LINE`, not an error line) over the rank count ``W`` (the launch's,
    or one the same line names), with ``G % W != 0``, replaced by a finding of
    :data:`UNEVEN_SIGNATURE` on the same line. Captures gain ``batch`` (G), ``world`` (W),
    ``got`` and ``want`` (the two sizes), ``remainder`` (G % W), ``batch_line`` and
    ``batch_where`` (its 1-based line); the batch line is its second evidence. Unchanged
    when the signature is missing."""
    sig = library.signatures.get(UNEVEN_SIGNATURE)
    if sig is None:
        return findings
    out: list[Finding] = []
    for f in findings:
        sizes = _sizes(f) if f.signature == SHAPE_SIGNATURE else None
        found = _batch_line(state, sizes) if sizes else None
        if found is None or sizes is None:
            out.append(f)
            continue
        src, number, text, total, world = found
        moved = f.recast(
            sig,
            {
                **f.captures,
                "batch": str(total),
                "world": str(world),
                "got": str(sizes[0]),
                "want": str(sizes[1]),
                "remainder": str(total % world),
                "batch_line": text.strip()[:MAX_LINE],
                "batch_where": str(number),
                "rank": str(f.rank) if f.rank is not None else "",
            },
        )
        moved.frames = f.frames
        moved.evidence.append(Evidence(path=src, line=number, text=text, rank=None))
        out.append(moved)
    return out


def _sizes(f: Finding) -> tuple[int, int] | None:
    """The two differing sizes ``f`` captured, or ``None``."""
    for a, b in _PAIRS:
        x, y = f.captures.get(a, ""), f.captures.get(b, "")
        if x.isdigit() and y.isdigit() and x != y:
            return int(x), int(y)
    return None


def _worlds(state: ScanState, text: str) -> list[int]:
    """The rank counts to try for a line: the launch's (the world size the log names, nodes
    x processes per node, the ranks seen), then those the line names."""
    out: list[int] = []
    per = state.launch.nproc_per_node
    for w in (
        state.world_size,
        per * (state.launch.nnodes or 1) if per else None,
        max(state.ranks_seen) + 1 if state.ranks_seen else None,
    ):
        if w and w > 1 and w not in out:
            out.append(w)
    for m in _RANKS.finditer(text):
        w = int(m.group("w"))
        if w > 1 and w not in out:
            out.append(w)
    return out


def _batch_line(state: ScanState, sizes: tuple[int, int]) -> tuple[str, int, str, int, int] | None:
    """The first line of the log's heads that prints a global batch whose uneven split
    gives both ``sizes`` (the job's own line: ranks' output interleaves, so it may come after
    ``f``'s): ``(source, 1-based line, text, G, W)``; ``None`` when there is none."""
    for src, first, text in state.heads:
        for i, line in enumerate(text.split("\n")):
            number = first + i
            if not _BATCH_LINE.search(line) or _ERROR_LINE.search(line):
                continue
            numbers = [int(m.group()) for m in _NUMBER.finditer(line)]
            for world in _worlds(state, line):
                for total in numbers:
                    if total <= world or total % world == 0:
                        continue
                    if set(sizes) <= split_sizes(total, world):
                        return src, number, line, total, world
    return None
