"""A traceback a logging handler printed, in a process that went on, is a handled error (rule
``logged_handled``).

Mechanism: a process that dies of an exception has it printed by ``sys.excepthook`` (or a
launcher's error file), a bare ``Traceback (most recent call last):`` from the script's top
level. A traceback a *logging handler* printed (``logger.exception("...")``, ``exc_info=True``,
``logger.error(traceback.format_exc())``) was caught: the handler's record carries the level
(and time) on the header's line (``ERROR:<time>:Traceback ...``) or on the record line right
above it (:attr:`rootrank.tracebacks.PyException.logged`). Such an error ended the process
only if the handler re-raised it or exited, and that shows in the log: the re-raise reaches
the top level as a traceback no handler printed (``sys.excepthook``'s, Ray's
``RayTaskError`` on the driver), or a launcher or Ray reports the process's death or failed
exit. So an exception is a handled error, not a root cause, when

- its traceback was printed by a logging handler and has the caught shape
  (:func:`rootrank.analysis.survived.caught`: no ``<module>`` frame);
- its own process printed further non-blank lines after it (the same worker prefix, rank or
  pid: ``ScanState.last_own_line``);
- the run's progress advanced after it: a progress line after it, of a series whose step went
  up (``ProgressModel.advanced``) -- on any process: a Ray actor prints no step of its own, the
  driver prints the run's;
- no traceback with frames that no handler printed comes after it, and every error finding of
  the log is read from such handled tracebacks' lines (no launcher's failed exit, no Ray death
  report, no other error), and no launcher reports a failed or killed worker.

The survived-error rule (:mod:`rootrank.analysis.survived`) needs the same process's *own*
step to advance, which a Ray actor's or a data worker's handler never prints: this rule reads
the run's progress instead, and pays for it with the stricter "no other failure at all".
A handler's per-sample errors in a healthy verl run on Ray (an action parser's ``TypeError``
logged for every sample without an answer, while the driver's ``step:N`` lines went on) read
as an exception that ended the process before this rule.
"""

from __future__ import annotations

from rootrank.analysis.events import events_of
from rootrank.analysis.prepare import EXCEPTION_SIGNATURE
from rootrank.analysis.survived import Survived, caught
from rootrank.model import Finding
from rootrank.progress import Progress
from rootrank.scan import LineProcess, ScanState, SeenException, process_key
from rootrank.signatures import Library

#: The rule's name, as the reasoning line shows it.
RULE = "logged_handled"


def logged_handled_errors(
    state: ScanState,
    findings: list[Finding],
    library: Library,
    survived: list[Survived],
) -> list[Survived]:
    """The exceptions of ``state`` a logging handler printed and the run went on past (the
    module's docstring gives the rule), in log order, the first with the findings of
    ``findings`` read from their lines or repeating their message; ``[]`` unless every error
    finding is so read and no launcher reports a failed or killed worker. ``survived``: the
    exceptions the survived-error rule already set aside (their handler's later tracebacks
    of the same error are the same handler's: :func:`_same_handler`)."""
    if any(e.exitcode not in (None, 0) for e in state.elastic):
        return []
    if any(
        e.kind in ("exit", "summary", "signal") and e.code not in (None, 0)
        for e in events_of(state, findings, library)
    ):
        return []
    out: list[Survived] = []
    for seen in state.exceptions:
        after = _went_on(state, seen)
        if after is not None:
            out.append(Survived(seen, -1, after, logged=True))
    seeds = [*(s for s in survived if s.seen.exc.logged), *out]
    if not seeds:
        return []
    out = [*out, *_same_handler(state, seeds)]
    if not out:
        return []
    out = sorted([*out, *_frameless_of(state, out)], key=lambda s: s.seen.exc.log_line)
    read = _read_from(out, findings)
    if any(f.severity == "error" and id(f) not in {id(r) for r in read} for f in findings):
        return []  # another error (a death report, a failed exit, another fault) ended the run
    first = out[0]
    return [Survived(first.seen, first.before, first.after, tuple(read), logged=True), *out[1:]]


def _key(seen: SeenException) -> LineProcess:
    """The process ``seen`` was printed by (:func:`rootrank.scan.process_key`)."""
    return process_key(seen.path, seen.rank, seen.local_rank, seen.host, seen.pid)


def _handler_printed(state: ScanState, seen: SeenException) -> bool:
    """Whether ``seen`` is a logging handler's traceback of the caught shape with no traceback
    after it (in its source) that no handler printed: no re-raise reached the top level."""
    exc = seen.exc
    if not exc.logged or not caught(seen):
        return False
    return not any(
        x.path == seen.path and x.exc.log_line > exc.log_line and x.exc.frames and not x.exc.logged
        for x in state.exceptions
    )


def _went_on(state: ScanState, seen: SeenException) -> Progress | None:
    """The progress line that shows the run went on after the logged exception ``seen``, or
    ``None`` when ``seen`` is not a handled one (the module's conditions but the findings'):
    the first process's last step after it, of a process whose steps went up and that printed
    no exception of the log (a worker's message that quotes "step 3" is no step of the run)."""
    if not _handler_printed(state, seen):
        return None
    line = seen.exc.log_line
    if state.last_own_line.get(_key(seen), 0) <= line:
        return None  # its process printed nothing more: it may have died of it
    raised = {_key(x) for x in state.exceptions}
    later = [
        last
        for key, (first, last) in state.steps_of.items()
        if key not in raised
        and last.path == seen.path
        and last.line > line
        and last.kind == first.kind
        and last.step > first.step
    ]
    return min(later, key=lambda p: p.line) if later else None


def _same_handler(state: ScanState, handled: list[Survived]) -> list[Survived]:
    """The handler's later tracebacks of the same exception type at the same innermost frame
    as one of ``handled`` (the same handler caught the same error again, after the last step
    the log holds: a log cut mid-run), with no traceback nothing caught after them."""
    sites = {(s.seen.exc.type, _site(s.seen)) for s in handled}
    done = {id(s.seen) for s in handled}
    after = max((s.after for s in handled), key=lambda p: p.line)
    return [
        Survived(seen, -1, after, logged=True)
        for seen in state.exceptions
        if id(seen) not in done
        and (seen.exc.type, _site(seen)) in sites
        and _handler_printed(state, seen)
    ]


def _site(seen: SeenException) -> tuple[str, int] | None:
    """The innermost frame of ``seen``'s traceback as ``(file, line)``, ``None`` without one."""
    frames = seen.exc.frames
    return (frames[-1].file, frames[-1].line) if frames else None


def _frameless_of(state: ScanState, handled: list[Survived]) -> list[Survived]:
    """The exception lines with no frames (``header == "bare"``) of the processes that
    logged the ``handled`` tracebacks, after the first of them: where several processes'
    lines interleave (Ray's forwarded actor output), a handler's traceback reaches the log
    split, its exception line apart from its frames, and is the same handler's record (no
    traceback nothing caught follows: :func:`_handler_printed`)."""
    first = min(s.seen.exc.log_line for s in handled)
    after = handled[0].after
    keys = {_key(s.seen) for s in handled}
    return [
        Survived(seen, -1, after, logged=True)
        for seen in state.exceptions
        if not seen.exc.frames
        and seen.exc.header == "bare"
        and seen.exc.log_line > first
        and _key(seen) in keys
    ]


def _read_from(handled: list[Survived], findings: list[Finding]) -> list[Finding]:
    """The findings read from the ``handled`` exceptions: any finding whose every line is one
    of their exception lines, and the generic exception finding whose every line quotes one of
    their types (the handler logged the same error for sample after sample, more often than
    the scan keeps exceptions), on their ranks or none."""
    lines = {(s.seen.path, s.seen.exc.log_line) for s in handled}
    types = tuple(f"{s.seen.exc.type}:" for s in handled)
    ranks = {s.seen.rank for s in handled} | {None}
    out = []
    for f in findings:
        if not f.evidence or f.rank not in ranks:
            continue
        own = all((e.path, e.line) in lines for e in f.evidence)
        same = f.signature == EXCEPTION_SIGNATURE and all(
            any(t in e.text for t in types) for e in f.evidence
        )
        if own or same:
            out.append(f)
    return out
