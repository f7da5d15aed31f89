"""A size mismatch raised inside ``optimizer.step`` is optimizer state that does not fit its
parameter: restored from a run with another sharding or world size.

``RuntimeError: The size of tensor a (X) must match the size of tensor b (Y) at non-singleton
dimension 0`` is an element-wise op between two tensors that should have one shape. Inside an
optimizer's step (``torch/optim/adam.py``'s ``_multi_tensor_adam``, ``exp_avg.lerp_(grad, ...)``,
DeepSpeed's or Lightning's optimizer step) those are a parameter (or its gradient) and the
optimizer's state for it (``exp_avg``, ``exp_avg_sq``, a flat shard). The state was made for
another shape: it was loaded from a checkpoint written by a run whose FSDP/ZeRO shards were
another size (another world size: the sizes are then in an integer ratio, 4 when 6 GPUs became
24). Read so only when the sizes are such flat shards (large, in a world-size ratio); other
sizes inside a step (a 16-output head's state loaded into a 4-output head, an optimizer built
before FSDP flattened the parameters) stay shape-mismatch, whose optimizer-state fix asks
which of those happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootrank import lazy_regex
from rootrank.model import Finding

if TYPE_CHECKING:
    from rootrank.scan import ScanState
    from rootrank.signatures import Library

#: The signature a size mismatch inside an optimizer step becomes (class
#: checkpoint-load-mismatch).
OPTIMIZER_STATE_SIGNATURE = "optimizer-state-size-mismatch"
#: The signature whose ``size_a``/``size_b`` finding is read (the tensor a/b message).
SHAPE_SIGNATURE = "shape-mismatch"
#: The fewest elements a flat optimizer shard is read as: FSDP/ZeRO shards hold a slice of
#: many flattened parameters (millions of elements), one layer's dimension is far smaller.
MIN_SHARD = 65536
#: The largest ratio of two world sizes read as a resharding (6 -> 24 GPUs is 4; 8 -> 512
#: is 64).
MAX_WORLD_RATIO = 64
#: Elements of padding per shard a resharded size may differ by (FSDP pads to the world size,
#: ZeRO aligns partitions to a few elements).
SHARD_PADDING = 16
#: A frame of an optimizer's step, as ``file:func`` or the source line it quotes: torch.optim's
#: optimizers and their foreach/fused kernels, an ``optimizer.step(...)`` call, Lightning's
#: optimizer loop and ``optimizer_step`` hooks, DeepSpeed's and Accelerate's wrappers' ``step``.
OPTIMIZER_STEP_FRAME = lazy_regex.compile(
    r"torch/optim/\w+\.py:|:_(?:multi|single)_tensor_\w+$|:_fused_\w+$"
    r"|loops/optimization/\w+\.py:|:optimizer_step$"
    r"|(?:deepspeed/runtime/\S+|accelerate/optimizer\.py):step$"
    r"|(?<![\w.])(?:self\.)?(?:\w*optim\w*)\.step\("
)


def world_ratio(a: int, b: int) -> int | None:
    """The factor between two flat shard sizes ``a`` and ``b`` (elements) cut from one set of
    parameters for two world sizes, or ``None`` when they are not such shards: both at least
    :data:`MIN_SHARD`, the larger within :data:`SHARD_PADDING` of a whole multiple
    (2..:data:`MAX_WORLD_RATIO`) of the smaller. Each shard is ceil(N / world_size) elements
    (FSDP pads the flat parameter to a multiple of the world size; ZeRO aligns it), so
    56124554 against 14031139 (6 against 24 GPUs) is 4 less 2 elements."""
    big, small = max(a, b), min(a, b)
    if small < MIN_SHARD:
        return None
    ratio = round(big / small)
    if not 2 <= ratio <= MAX_WORLD_RATIO:
        return None
    return ratio if abs(big - ratio * small) <= ratio * SHARD_PADDING else None


def _step_texts(f: Finding, state: ScanState) -> list[str]:
    """The ``file:func`` and quoted code of the frames that show what ``f``'s rank was doing:
    ``f``'s own traceback, and every traceback of its rank the scan read, whole or cut before
    its exception line (a paste that puts the error above the traceback; a line printed into
    the middle of it)."""
    frames = [(fr.get("file", ""), fr.get("func", ""), "") for fr in f.frames]
    frames += [
        (fr.file, fr.func, fr.code)
        for seen in (*state.exceptions, *state.cut_tracebacks)
        if seen.rank == f.rank
        for fr in seen.exc.frames
    ]
    return [text for file, func, code in frames for text in (f"{file}:{func}", code) if text]


def optimizer_state_sizes(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each shape-mismatch finding of the tensor a/b message (captures
    ``size_a``, ``size_b``) whose rank's traceback is in an optimizer step
    (:data:`OPTIMIZER_STEP_FRAME`) and whose sizes are flat shards cut for two world sizes
    (:func:`world_ratio`) replaced by a finding of :data:`OPTIMIZER_STATE_SIGNATURE` on
    the same line, capturing the sizes and ``ratio``. Other sizes stay shape-mismatch (its
    optimizer-state fix: a state loaded for another model, or an optimizer built before a
    wrapper replaced the parameters). Unchanged when that signature is missing."""
    sig = library.signatures.get(OPTIMIZER_STATE_SIGNATURE)
    if sig is None:
        return findings
    out: list[Finding] = []
    for f in findings:
        a, b = f.captures.get("size_a", ""), f.captures.get("size_b", "")
        if f.signature != SHAPE_SIGNATURE or not (a.isdigit() and b.isdigit()):
            out.append(f)
            continue
        if not any(OPTIMIZER_STEP_FRAME.search(t) for t in _step_texts(f, state)):
            out.append(f)
            continue
        ratio = world_ratio(int(a), int(b))
        if ratio is None:
            out.append(f)  # one layer's sizes (a head of 16 vs 4 outputs): shape-mismatch's
            continue  # optimizer-state fix asks whether a state was loaded
        moved = f.recast(sig, {**f.captures, "ratio": str(ratio)})
        moved.frames = f.frames
        out.append(moved)
    return out
