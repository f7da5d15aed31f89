"""A plain tensor met a DTensor inside torch's own parallel wrapper (``parallel-wrapper-dtensor-mix``).

Mechanism: DTensor's dispatcher refuses an operator whose arguments mix ``torch.Tensor`` and
``DTensor`` ("aten.add.Tensor got mixed torch.Tensor and DTensor, need to convert all
torch.Tensor to DTensor before calling distributed operators!",
torch/distributed/tensor/_dispatch.py). When the innermost frame that is not the dispatcher's
is a torch.distributed parallel wrapper -- the context-parallel SDPA replacement
(``torch/distributed/tensor/experimental/_context_parallel/_attention.py``, before 2.7
``experimental/_attention.py``), which turns q/k/v into DTensors sharded on the sequence --
the wrapper converted only the inputs it knows: another input of the model's call (an explicit
attention mask, a sliding-window or bias tensor) stayed a plain tensor. The parallel mode does
not support this model's call (torch's context parallel takes causal SDPA without a mask), so
the cause is the parallel configuration, not a line of the user's code, even when the
traceback passes through the user's ``model(**batch)``. The same message from the user's own
code (its innermost frame the user's: ``w + bias`` on a DTensor weight) stays the generic
exception: the user mixed the two.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import exceptions_per_rank
from rootrank.model import Finding
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature of the finding.
SIGNATURE = "parallel-wrapper-dtensor-mix"
#: DTensor's refusal of a mixed call, with the operator it was.
_MIXED = lazy_regex.compile(r"(?P<op>[\w.]+) got mixed torch\.Tensor and DTensor")
#: torch.distributed's parallel wrappers that convert a call's inputs to DTensors themselves.
_WRAPPER = lazy_regex.compile(
    r"torch/distributed/tensor/experimental/(?:_context_parallel/)?_attention\.py$"
)
#: DTensor's own dispatch frames (between the wrapper and the refusal).
_DISPATCH = lazy_regex.compile(r"torch/(?:distributed/tensor/|_ops\.py$|_compile\.py$|_dynamo/)")


def parallel_wrapper_mixes(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A finding of :data:`SIGNATURE` (class unsupported-shape-or-dtype) per rank whose
    ``RuntimeError`` is DTensor's mixed-call refusal (:data:`_MIXED`) raised under a parallel
    wrapper of torch's (:data:`_WRAPPER`: the innermost frame outside DTensor's dispatch),
    with ``op`` and ``wrapper`` (the wrapper's file and line) captured. Lines another
    signature reads are left to it (the module's docstring gives the mechanism)."""
    return exceptions_per_rank(SIGNATURE, ("RuntimeError",), findings, state, library, _mixed_call)


def _mixed_call(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`parallel_wrapper_mixes` for ``seen`` (``op``, ``wrapper``,
    ``func``), or ``None`` when it is not DTensor's mixed-call refusal under a wrapper of
    torch's."""
    exc = seen.exc
    if not exc.frames:
        return None
    m = _MIXED.search(exc.message)
    if m is None:
        return None
    inner = [fr for fr in exc.frames if not _DISPATCH.search(fr.file.replace("\\", "/"))]
    wrapped = [fr for fr in exc.frames if _WRAPPER.search(fr.file.replace("\\", "/"))]
    if not wrapped or (inner and inner[-1].user):
        return None
    where = wrapped[-1]
    name = where.file.replace("\\", "/").rsplit("/", 1)[-1]
    return {"op": m["op"], "wrapper": f"{name}:{where.line}", "func": where.func}
