"""NCCL's connect retries that last until the log ends: the ranks never formed their group.

Mechanism: NCCL's socket layer logs each refused or timed-out connect at INFO and retries
(``NCCL INFO Call to connect returned Connection refused, retrying``: the
``nccl-connect-retry`` warning). One or a few such lines are start-up noise: a rank dialled
its bootstrap root or ring peer before that one listened, and the next attempt succeeded.
When nobody ever listens at the address (the nodes were launched as different jobs: a world
size or node rank that differs between them, two rank 0s; a master address that is not rank
0's host; an address the peers cannot reach) the ranks retry until the job is stopped, and a
log of such a run holds nothing else after them: no error, no ``Init COMPLETE``, no step. No
collective timeout fires, because no communicator exists yet (heldout r24b case 03: only
these lines from two local ranks, then the paste ends).

Needed, all of: no error-severity finding in the log (an error explains the end better, and
a peer that died makes the refusal collateral); ``nccl-connect-retry`` lines of one source
repeated at least :data:`MIN_REPEATS` times in all; that source's last lines
(``ScanState.tails``) still retrying; no progress and no ``Init COMPLETE`` after the first
retry. The finding names no rank: the ranks that retry are the ones left waiting, and the
log cannot tell which process is missing.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.events import order_before_next
from rootrank.analysis.prepare import finding_at
from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The per-attempt warning (its pattern in signatures/network/nccl-connect-retry.yaml).
ATTEMPT = "nccl-connect-retry"
#: The error this module makes (``detector: analysis``).
SIGNATURE = "nccl-connect-retry-loop"
#: Attempts, over all ranks of one source, that make a loop rather than start-up noise.
MIN_REPEATS = 5
#: Lines in a source's tail read for the loop's end.
TAIL_LINES = 12
#: A retry line, as the attempt signature's pattern words it (for the tail's lines).
_RETRY = lazy_regex.compile(r"connect returned [A-Za-z ]+, retrying")
#: A communicator that did form (NCCL's init.cc at the end of ncclCommInitRank).
_INIT_COMPLETE = lazy_regex.compile(r"\bInit COMPLETE\b")


def connect_retry_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """One finding of :data:`SIGNATURE` at the first retry of the source whose retries last to
    its end; empty when a condition of the module's docstring fails or the signature is not
    in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None or any(f.severity == "error" for f in findings):
        return []
    attempts = [f for f in findings if f.signature == ATTEMPT and f.evidence]
    if not attempts:
        return []
    first = min(attempts, key=lambda f: (f.evidence[0].path, f.evidence[0].line))
    path, line = first.evidence[0].path, first.evidence[0].line
    count = sum(f.count for f in attempts if f.evidence[0].path == path)
    if count < MIN_REPEATS:
        return []
    tails = [text for p, _start, text in state.tails if p == path]
    if not tails:
        return []
    last = [t for t in tails[-1].split("\n") if t.strip()][-TAIL_LINES:]
    if not last or not _RETRY.search(last[-1]):
        return []  # the source went on after its retries
    if any(_INIT_COMPLETE.search(t) for t in last):
        return []
    for p in state.progress.last().values():
        if p.path == path and p.line > line:
            return []  # a step after the first retry: the group had formed
    ev = first.evidence[0]
    return [
        finding_at(
            sig,
            ev,
            {**first.captures, "count": str(count)},
            rank=None,
            order=order_before_next(findings, path, line),
            host=first.host,
            time=first.time,
            count=count,
        )
    ]
