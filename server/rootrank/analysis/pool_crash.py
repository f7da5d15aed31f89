"""A process pool's child that crashed natively, and its parent's BrokenProcessPool.

``concurrent.futures.ProcessPoolExecutor`` runs the submitted function in child processes
(``concurrent/futures/process.py`` ``_process_worker``; ``multiprocessing.Pool``'s children
run ``multiprocessing/pool.py`` ``worker``). A child that dies by a signal (a segmentation
fault in native code its function called) prints faulthandler's ``Fatal Python error:
Segmentation fault`` and the crashing thread's stack -- with no rank prefix, since the child
writes to the terminal the parent inherited -- and the parent then raises ``BrokenProcessPool:
A process in the process pool was terminated abruptly ...`` from the call that waited for it
(``pool.map``). That exception only reports the child's death; the crash and its innermost
user frame are the cause (heldout r24c case 06: a pool worker's ``ctypes.string_at`` on a
corrupt record, then rank 2's ``BrokenProcessPool`` from ``pool.map``).

:func:`pool_child_crashes` gives the crash finding (class ``segfault``, no rank) the rank of
the one process whose BrokenProcessPool follows it, when faulthandler's stack under the crash
runs through a pool child's frame; rule :func:`child_crash_breaks_pool` then lets the crash
explain that exception.
"""

from __future__ import annotations

import dataclasses

from rootrank import lazy_regex
from rootrank.model import Finding
from rootrank.scan import ScanState

#: The class of a native crash finding.
CRASH_CLASS = "segfault"
#: The exception a pool's parent raises when a child died abruptly.
BROKEN_POOL = lazy_regex.compile(r"^(?:BrokenProcessPool|BrokenPipeError)$")
#: A pool child's own frame: ``concurrent/futures/process.py:_process_worker``,
#: ``multiprocessing/pool.py:worker``.
_POOL_CHILD = lazy_regex.compile(
    r"concurrent[/\\]futures[/\\]process\.py:_process_worker$|multiprocessing[/\\]pool\.py:worker$"
)


def _broken_pool(f: Finding) -> bool:
    """Whether ``f`` is a process's exception that a pool child died (:data:`BROKEN_POOL`)."""
    return bool(BROKEN_POOL.search(f.captures.get("exc_type", "") or ""))


def pool_child_crashes(findings: list[Finding], state: ScanState) -> list[Finding]:
    """``findings`` with each crash finding of :data:`CRASH_CLASS` that has no rank, whose
    faulthandler stack (:func:`rootrank.entry.frames.crash_stack`) holds a pool child's frame
    (:data:`_POOL_CHILD`), given the rank of the one BrokenProcessPool finding after it;
    unchanged otherwise."""
    from rootrank.entry.frames import crash_stack  # the entry package reads the analysis

    broken = [f for f in findings if _broken_pool(f) and f.rank is not None]
    out: list[Finding] = []
    for f in findings:
        if f.failure_class != CRASH_CLASS or f.rank is not None or not broken:
            out.append(f)
            continue
        stack = crash_stack(state, f)
        frames = [f"{fr.file}:{fr.func}" for fr in stack.exc.frames] if stack else []
        after = {b.rank for b in broken if b.order > f.order}
        if not any(_POOL_CHILD.search(x) for x in frames) or len(after) != 1:
            out.append(f)
            continue
        rank = after.pop()
        out.append(
            dataclasses.replace(
                f,
                rank=rank,
                evidence=[dataclasses.replace(e, rank=rank) for e in f.evidence],
            )
        )
    return out
