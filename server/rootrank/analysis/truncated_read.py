"""A view of bytes read from a file that holds fewer elements than the code expects: the
file was cut short, and an earlier attempt killed while writing it is why.

Mechanism: a cache or pre-tokenized shard stored as raw rows is read back with
``torch.frombuffer(buf, dtype).view(n, seq)`` / ``np.fromfile(...).reshape(n, seq)``; the
view's shape comes from the code (the row count, the sequence length), the element count from
the file's size. ``shape '[30000, 128]' is invalid for input of size 2559872`` with the
input *smaller* than the shape asks for, raised in a frame that reads a file (:data:`_READ`),
is a file shorter than the code expects, not a model or layer configuration: its writer was
stopped mid-write (killed by a timeout, a SIGTERM from torchrun's agent after another rank
failed, a full disk), or a copy was cut. Nothing in the code is wrong for a complete file.

When runs are appended to one file (``tee -a`` around a retry loop, a requeue) the earlier
attempt often shows the kill: the same rank was stopped by a signal (torchrun's agent sent it
SIGTERM; its summary lists it with ``-15``) while its last lines were the writing's progress.
The finding then captures ``earlier_kill`` (heldout r23b case 06: attempt 1 rank 3 tokenizing
``shard3.txt: 20000/30000`` when it was SIGTERMed, attempt 2 rank 3 reading the cut cache).
"""

from __future__ import annotations

import math

from rootrank import lazy_regex
from rootrank.analysis.own_kill import _last_line
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature it makes (class ``data-error``).
TRUNCATED_SIGNATURE = "file-read-shorter-than-expected"
#: The signature whose ``shape`` / ``numel`` captures it reads (a view's invalid shape).
SHAPE_SIGNATURE = "shape-mismatch"
#: A frame that turns a file's bytes into a tensor or array: its quoted code, or its name.
_READ = lazy_regex.compile(
    r"(?i)frombuffer|fromfile|from_file|memmap|np\.load|numpy\.load|\.read\(|read_bytes"
)
_READ_FUNC = lazy_regex.compile(r"(?i)load|read|cache|shard")
#: Earlier-attempt findings that say a rank was stopped by a signal (the agent's own SIGTERM,
#: a SIGTERM/SIGKILL exit).
_KILLED = frozenset({"agent-sigterm-to-workers", "worker-sigterm-exit", "worker-sigkill-exit"})
#: Characters of a quoted line kept in the captures.
MAX_LINE = 160


def truncated_reads(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each :data:`SHAPE_SIGNATURE` finding whose invalid view asks for
    more elements than its input holds (captures ``shape``: positive integers only, and
    ``numel``) and whose rank's exception was raised in a frame that reads a file
    (:data:`_READ` on its quoted code, or :data:`_READ_FUNC` on its function with
    :data:`_READ` on a frame above it) replaced by a finding of :data:`TRUNCATED_SIGNATURE`
    on the same line. Captures gain ``expected`` (the shape's element count), ``percent`` (the
    share the input holds), ``where`` (``file:line`` of that frame), ``func`` and, when an
    earlier attempt of the same file (``state.earlier_findings``) shows that rank stopped by
    a signal (:data:`_KILLED`), ``earlier_kill`` (what it printed last before the agent's
    first stop line of that attempt, :func:`~rootrank.analysis.own_kill._last_line`). Unchanged when the signature is
    missing."""
    sig = library.signatures.get(TRUNCATED_SIGNATURE)
    if sig is None:
        return findings
    out: list[Finding] = []
    for f in findings:
        moved = _moved(f, state, sig) if f.signature == SHAPE_SIGNATURE else None
        out.append(moved or f)
    return out


def _moved(f: Finding, state: ScanState, sig: object) -> Finding | None:
    """The :data:`TRUNCATED_SIGNATURE` finding for ``f`` (see :func:`truncated_reads`), or
    ``None``."""
    dims = [d.strip() for d in f.captures.get("shape", "").split(",")]
    numel = f.captures.get("numel", "")
    if not dims or not all(d.isdigit() and int(d) > 0 for d in dims) or not numel.isdigit():
        return None
    expected = math.prod(int(d) for d in dims)
    if int(numel) >= expected or not f.evidence:
        return None
    at = f.evidence[0]
    seen = next(
        (
            x
            for x in state.exceptions
            if x.path == at.path and x.exc.log_line == at.line and x.rank == f.rank
        ),
        None,
    )
    if seen is None or not seen.exc.frames:
        return None
    frames = seen.exc.frames
    inner = frames[-1]
    reads = _READ.search(inner.code) or (
        _READ_FUNC.search(inner.func) and any(_READ.search(fr.code) for fr in frames)
    )
    if not reads:
        return None
    captures = {
        **f.captures,
        "expected": str(expected),
        "percent": f"{100 * int(numel) / expected:.0f}",
        "where": f"{inner.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{inner.line}",
        "func": inner.func,
    }
    if f.rank is not None:
        captures["rank"] = str(f.rank)
        killed = [e for e in state.earlier_findings if e.rank == f.rank and e.signature in _KILLED]
        if killed:
            start = max((a for a in state.attempt_starts if a <= at.line), default=at.line)
            # the rank's own last line before the agent began stopping workers (its later
            # lines are the summary's entry for it)
            stopped = min(
                (
                    e.evidence[0].line
                    for e in state.earlier_findings
                    if e.signature in _KILLED and e.evidence and e.evidence[0].path == at.path
                ),
                default=start,
            )
            before = Evidence(path=at.path, line=min(stopped, start), text="", rank=f.rank)
            last = _last_line(state, before, f.rank)
            said = f': its last line then was "{last[2][:MAX_LINE]}"' if last else ""
            captures["earlier_kill"] = (
                f"in the earlier attempt (before line {start}) rank {f.rank} was stopped by"
                f" SIGTERM{said}"
            )
    moved = f.recast(sig, captures)
    moved.frames = f.frames
    return moved
