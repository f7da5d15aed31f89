"""An exception a rank died of that no signature knows, against a log whose other findings
only report the failure (the launcher's summary, its SIGTERMs, a peer that went away).

The exception that ends a rank's traceback is what stopped that process; torchrun's
``ChildFailedError`` summary and the agent's closing signals are printed because of it
(``torch/distributed/elastic/multiprocessing/errors``). When no finding names a cause, that
exception is the cause, read as a plain Python exception (``user-code-exception``), not the
launcher's report of it.
"""

from __future__ import annotations

from rootrank.analysis.collateral import unclassified
from rootrank.analysis.prepare import Context
from rootrank.model import Finding

#: The signature an uncaught exception is read as.
UNCAUGHT_SIGNATURE = "user-code-exception"


def uncaught_finding(ctx: Context) -> Finding | None:
    """A ``user-code-exception`` finding for the first exception (in log order) that ended
    a traceback, is covered by no finding and was not printed after "Exception ignored in"
    (preferring one on a known rank), when no finding of the log is a cause and some report
    the failure (symptoms); else ``None``. An unknown exception with nothing reporting it
    stays *unclassified* (the CLI's exit code 3), not a verdict."""
    sig = ctx.library.signatures.get(UNCAUGHT_SIGNATURE)
    if sig is None or any(f.role == "cause" for f in ctx.findings):
        return None
    if not any(f.role == "symptom" and f.severity == "error" for f in ctx.findings):
        return None  # the exception alone: shown as unclassified, not read as a verdict
    covered = {(e.path, e.line) for f in ctx.findings for e in f.evidence}
    seen = [
        s
        for s in ctx.state.exceptions
        if not s.exc.ignored and (s.path, s.exc.log_line) not in covered
    ]
    if not seen:
        return None
    ranked = [s for s in seen if s.rank is not None]
    first = min(ranked or seen, key=lambda s: s.order)
    base = unclassified(first)
    return Finding.of(
        sig,
        rank=first.rank,
        host=first.host,
        time=first.time,
        order=first.order,
        evidence=list(base.evidence),
        captures={"exc_type": first.exc.type, "message": first.exc.message},
    )
