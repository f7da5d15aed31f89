"""Two samples of one batch whose shapes differ by one step of one dimension, in a job of
several processes: a length-grouped sampler split across the ranks.

Generators and samplers that batch by length (one length per batch, ``samples_per_length``
samples of each: protein and peptide generators, bucketed text samplers) give each rank a
contiguous slice of the sample list. When the group size is not a multiple of the number of
processes, a rank's slice runs over the end of one length group into the next, and its batch
mixes two neighbouring lengths (``[62]`` and ``[63]``); the same run with a process count
that divides the group size batches one length at a time. Padding is then not the fix (it
changes what a length-grouped generator makes): the process count or the group size is."""

from __future__ import annotations

#: The largest difference, in elements, of the one dimension two shapes differ in, read as
#: neighbouring lengths of one sorted sample list.
MAX_STEP = 2


def _dims(shape: str) -> list[int] | None:
    """``"62, 4"`` as ``[62, 4]``; ``None`` when a part is not an integer."""
    parts = [p.strip() for p in shape.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


def neighbouring_sizes(shape_a: str | None, shape_b: str | None) -> str | None:
    """``"[62] and [63]"`` when the two shapes (torch's ``stack expects each tensor to be equal
    size`` captures) have the same number of dimensions and differ in exactly one of them by at
    most :data:`MAX_STEP`; else ``None``."""
    a, b = _dims(shape_a or ""), _dims(shape_b or "")
    if a is None or b is None or len(a) != len(b):
        return None
    apart = [abs(x - y) for x, y in zip(a, b, strict=True) if x != y]
    if len(apart) != 1 or apart[0] > MAX_STEP:
        return None
    return f"[{shape_a}] and [{shape_b}]"
