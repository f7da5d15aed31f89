"""An error the process survived is not the root cause (rule ``error_survived``).

Mechanism: a process that dies of an exception prints no step after it. A rank that raised
and logged an exception and then *advanced* -- printed a step greater than every step it had
printed before the exception in the same format, in the same run and attempt of the log --
caught it and went on training: a retried OOM (a loop that halves its micro-batch), a
logger's failed upload printed by ``threading.excepthook`` (``Exception in thread ...``),
``logger.warning(..., exc_info=True)``. If no launcher reports that rank's worker as failed
either (torchrun's ``failed (exitcode: 1) local_rank: N``, an entry of torchelastic's
summary, srun's ``task N: Exited with exit code 1``, mp.spawn's ``process N terminated with
exit code 1``), the exception did not end the process: it is collateral, and the root cause
is chosen from the rest (or the run shows no failure at all, exit code 1).

Printing *some* progress line is no proof: a tqdm bar is redrawn at the step it had as the
exception closes it, a loop resumed from a checkpoint prints steps it had passed, and a line
of another process (another rank, another node, an untagged line of a multi-rank log) says
nothing of this one. So the step must be greater than the highest step of the same format
before the exception, printed by the same process (the same source, host, rank or local
rank), in the same section of the log (:class:`rootrank.progress.AdvanceWatch`, fed by the
scan). An exception before any step of its process cannot be shown survived this way.

Nor is every advance one: a worker's stdout is a pipe under torchrun, block-buffered, so a
process dying of an exception flushes the steps it had printed before it *after* its
traceback. An uncaught exception's traceback begins at the main script's top level
(``<module>``); a caught one printed by its handler holds only the frames from the handler
down. Only the second shape can be survived (:func:`caught`).

An exception printed with no rank in a log of several ranks (``threading.excepthook``'s
``Exception in thread NAME:`` under a launcher that tags nothing, while the steps name their
rank) may be any rank's; its own process's advance cannot be told. But when *every* rank
printed a greater step after it than it had printed before it (same format and source), and
no launcher reports any worker failed, whichever rank raised it went on
(:func:`_every_rank_went_on`): a metrics or checkpoint thread that died while the run trained
to its end (new-user trial r17c: a snapshot thread's ``No space left on device`` in a run that
exited 0 was called a failure its exit code hid).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rootrank.analysis.events import events_of, finding_kind, real_exit
from rootrank.model import Finding
from rootrank.progress import Progress
from rootrank.scan import MAX_CONTINUATION_LINES, ScanState, SeenException
from rootrank.signatures import Library

#: The rule's name, as the reasoning line shows it.
RULE = "error_survived"


@dataclass(frozen=True, slots=True)
class Survived:
    """One exception its process survived.

    Attributes:
        seen: the exception as the scan saw it.
        before: the highest step its process printed before it (same section of the log, same
            format as ``after``).
        after: the first progress of that process after it with a greater step.
        findings: the findings read from its lines (set aside as collateral).
    """

    seen: SeenException
    before: int
    after: Progress
    findings: tuple[Finding, ...] = ()
    #: For an exception on no rank of a multi-rank log: the ranks that all went on after it
    #: (:func:`_every_rank_went_on`); empty otherwise.
    every_rank: tuple[int, ...] = ()
    #: Whether a logging handler printed it and the run (not its process) went on after it
    #: (rootrank.analysis.logged_handled): ``before`` is then -1, ``after`` the run's step.
    logged: bool = False

    @property
    def who(self) -> str:
        """The process as the report names it: ``rank 3``, ``local rank 3``, ``the process``,
        or (no rank, every rank went on) ``whichever rank raised it (every rank, 0-2,)``."""
        if self.every_rank:
            ranks = ", ".join(str(r) for r in self.every_rank)
            return f"whichever rank raised it (every rank of {ranks} printed a later step)"
        if self.seen.rank is not None:
            return f"rank {self.seen.rank}"
        adv = self.seen.advance
        local = adv.key[3] if adv is not None else None
        return f"local rank {local}" if local is not None else "the process"


def survived_errors(state: ScanState, findings: list[Finding], library: Library) -> list[Survived]:
    """The exceptions of ``state`` their process survived (the module's docstring gives the
    rule), in log order, each with the findings of ``findings`` read from its lines.

    Only an exception whose traceback shows it was caught (:func:`caught`) counts, and not
    when another exception of the same process between it and the step reached the top level
    (a handler that failed in turn). An exception on no rank counts in a log of several known
    ranks only when every rank went on after it (an untagged step of a multi-rank log may be
    any rank's: :func:`_every_rank_went_on`)."""
    known = set(state.ranks_seen) | {e.rank for e in state.elastic if e.rank is not None}
    failed = [
        e
        for e in events_of(state, findings, library)
        if e.kind in ("exit", "summary")
        and real_exit(e.code) is not None
        and not (e.kind == "summary" and e.rank is not None and e.rank < 0)
    ]
    stops = _outside_stops(findings, library)
    out: list[Survived] = []
    for seen in state.exceptions:
        adv = seen.advance
        if not caught(seen):
            continue
        if seen.exc.thread_died and any(_after(f, seen) for f in stops):
            continue  # its process went on only with work buffered before (:func:`_outside_stops`)
        if seen.rank is None and (adv is None or adv.key[3] is None) and len(known) > 1:
            # an untagged line of a multi-rank log: whose, the log does not say; survived
            # only when every rank went on, and no launcher saw any worker fail
            every = _every_rank_went_on(seen, state, known)
            if every is not None and not failed:
                out.append(every)
            continue
        if adv is None or adv.after is None:
            continue
        after = adv.after.line
        if any(
            x.advance is not None
            and x.advance.key == adv.key
            and adv.line < x.exc.log_line < after
            and not caught(x)
            for x in state.exceptions
        ):
            continue  # its chain (or a later error of the process) went up to the top level
        local = adv.key[3]
        if any(_may_be(e.rank, e.local_rank, seen.rank, local) for e in failed):
            continue  # a launcher saw this worker fail (or a worker it cannot tell apart)
        out.append(Survived(seen, adv.before[adv.after.kind], adv.after))
    if not out:
        return []
    return [dataclasses.replace(s, findings=tuple(_read_from(s, findings))) for s in out]


def _outside_stops(findings: list[Finding], library: Library) -> list[Finding]:
    """The findings of ``findings`` that read the job's end as a stop from outside (a
    ``terminal`` signature of class ``preemption-sigterm``: the agent's ``Received 15 death
    signal``, a scheduler's or wrapper's time limit).

    Mechanism: a thread that died (``threading.excepthook``) stops producing what its process
    waits on (a prefetch queue, a loader), but the process first goes on with what the thread
    had already queued: it prints steps after the traceback, then blocks, and its peers block
    in their next collective. A run that then ends by a stop from outside (a time limit, a
    ``timeout`` wrapper's SIGTERM) never went on: its later steps were the buffer draining,
    so the thread's death is the stall the stop ended, not an error the process survived."""
    return [
        f
        for f in findings
        if f.failure_class == "preemption-sigterm" and finding_kind(library, f) == "terminal"
    ]


def _after(f: Finding, seen: SeenException) -> bool:
    """Whether ``f``'s first line comes after the exception ``seen`` (the same source, or
    another source: a launcher's terminal and a rank's file are read as one run)."""
    if not f.evidence:
        return False
    ev = f.evidence[0]
    return ev.path != seen.path or ev.line > seen.exc.log_line


def _every_rank_went_on(seen: SeenException, state: ScanState, known: set[int]) -> Survived | None:
    """The exception ``seen`` (on no rank, in a log of the ``known`` ranks) as survived,
    when every known rank had printed a step before it (:attr:`SeenException.ranks_at`) and
    its last step (:meth:`rootrank.progress.ProgressModel.last`) is a greater one of the same
    format and source, printed after it; ``None`` otherwise. ``before`` is the highest step
    before it, ``after`` the lowest of the ranks' later ones (each rank reached at least it)."""
    at = {r: (step, kind, path) for r, step, kind, path in seen.ranks_at}
    if len(at) < 2 or not known <= set(at):
        return None
    last = state.progress.last()
    later: list[Progress] = []
    for r, (step, kind, path) in at.items():
        p = last.get(r)
        if p is None or p.kind != kind or p.path != path or p.step <= step:
            return None
        if p.path == seen.path and p.line <= seen.exc.log_line:
            return None
        later.append(p)
    after = min(later, key=lambda p: (p.step, p.line))
    before = max(step for step, _, _ in at.values())
    return Survived(seen, before, after, every_rank=tuple(sorted(at)))


#: Frames of the main script's top level: an exception nothing caught unwinds to them, so its
#: traceback (printed by ``sys.excepthook`` as the process ends) begins there.
_TOP_LEVEL = ("<module>", "_run_module_as_main", "_run_code")
#: Past this many frames the reader dropped the outermost ones (rootrank.tracebacks).
_MAX_WHOLE_FRAMES = 100


def caught(seen: SeenException) -> bool:
    """Whether the exception's traceback has the shape of one that was caught and printed
    (``logger.exception``, ``traceback.print_exc``, ``threading.excepthook``): it has frames
    and the outermost is not the main script's top level. A traceback printed while the
    exception is handled holds only the frames from the handler's frame down; one nothing
    caught holds every frame from ``<module>`` (or runpy's ``_run_module_as_main`` for ``-m``).
    A process dying of it flushes its buffered stdout after the traceback, so steps printed
    before the exception appear after it: no sign of going on. Python's ignored exceptions,
    C++ aborts and a paste without frames are not caught by this test."""
    exc = seen.exc
    if exc.ignored or exc.header is not None or not exc.frames:
        return False
    if len(exc.frames) >= _MAX_WHOLE_FRAMES:
        return False
    return exc.frames[0].func not in _TOP_LEVEL


def _may_be(
    rank: int | None, local: int | None, exc_rank: int | None, exc_local: int | None
) -> bool:
    """Whether a launcher's report of a failed worker (``rank``/``local`` as it names it)
    may be about the process that raised (``exc_rank``/``exc_local``): unless both name a
    global rank, or both a local rank, and they differ, it may."""
    if rank is not None and exc_rank is not None:
        return rank == exc_rank
    if local is not None and exc_local is not None:
        return local == exc_local
    return True


def _in_span(s: Survived, path: str, line: int) -> bool:
    """Whether ``path:line`` is the exception's line or a line its message goes on to,
    before the step that showed its process went on."""
    x = s.seen
    first = x.exc.log_line
    return (
        path == x.path and first <= line <= first + MAX_CONTINUATION_LINES and line < s.after.line
    )


def _read_from(s: Survived, findings: list[Finding]) -> list[Finding]:
    """The findings whose every line is in this exception's message (``_in_span``) and on
    its rank (or on none)."""
    out = []
    for f in findings:
        if not f.evidence or f.count > len(f.evidence) or f.rank not in (s.seen.rank, None):
            continue
        if all(_in_span(s, e.path, e.line) for e in f.evidence):
            out.append(f)
    return out


def set_aside(
    state: ScanState, findings: list[Finding], survived: list[Survived]
) -> tuple[ScanState, list[Finding]]:
    """``state`` seen without the survived exceptions (a shallow copy: the scan itself is not
    changed) and ``findings`` without the findings read from them. A finding with lines both
    in a survived exception and elsewhere (an OOM survived once, fatal later) keeps only the
    other lines, with its count lowered."""
    if not survived:
        return state, findings
    gone = {id(s.seen) for s in survived}
    whole = {id(f) for s in survived for f in s.findings}
    kept_exc = [x for x in state.exceptions if id(x) not in gone]
    view = dataclasses.replace(state)
    view.exceptions = type(state.exceptions)(kept_exc, maxlen=state.exceptions.maxlen)
    kept: list[Finding] = []
    for f in findings:
        if id(f) in whole:
            continue
        inside = [e for e in f.evidence if any(_in_span(s, e.path, e.line) for s in survived)]
        if not inside or f.rank not in {s.seen.rank for s in survived} | {None}:
            kept.append(f)
            continue
        rest = [e for e in f.evidence if e not in inside]
        if not rest:
            if f.count > len(f.evidence):
                kept.append(f)  # more occurrences than the evidence holds: keep it whole
            # else every occurrence is in one survived exception or another (an EMFILE
            # caught and logged twice by the same rank, each time followed by a later step)
            continue
        later = next(
            (x for x in kept_exc if x.path == rest[0].path and x.exc.log_line == rest[0].line),
            None,
        )
        kept.append(
            dataclasses.replace(
                f,
                evidence=rest,
                count=max(1, f.count - len(inside)),
                order=later.order if later is not None else f.order,
                time=later.time if later is not None and later.time is not None else f.time,
            )
        )
    return view, kept


#: The category of the signatures read from the training curves (rootrank.metrics onsets).
_CURVES = "training"


def survived_values(
    state: ScanState, findings: list[Finding], library: Library
) -> tuple[list[Finding], list[Finding]]:
    """``(kept, handled)``: ``findings`` without the non-finite losses the run went on
    past, and those (rule ``error_survived`` applied to a value read from the curves).

    Mechanism: a NaN or Inf loss that reached the weights (its update applied) makes every
    later loss of that rank NaN too. So a loss series (the same rank, the same format) whose
    value was finite again at a later step (the onset's ``finite_after`` capture,
    rootrank.metrics.onset_findings) had that step's update skipped: a guard's "non-finite
    loss ...; skipping the optimizer step", AMP's grad scaler. Like an exception its process
    survived, it is not the root cause when no launcher reports a worker failed or killed
    (torchrun's ``failed (exitcode: ...)``, an elastic summary entry, mp.spawn's ``process N
    terminated``): the run trained on (heldout r19b case 12: rank 1's NaN at step 23 skipped
    on every rank, 50 steps done, every rank's end record)."""
    handled = [
        f
        for f in findings
        if f.captures.get("finite_after") and library.signatures[f.signature].category == _CURVES
    ]
    if not handled:
        return findings, []
    failed = any(
        e.kind in ("exit", "summary", "signal") and real_exit(e.code) is not None
        for e in events_of(state, findings, library)
    )
    if failed or any(e.exitcode not in (None, 0) for e in state.elastic):
        return findings, []
    gone = {id(f) for f in handled}
    return [f for f in findings if id(f) not in gone], handled
