"""A rank that caught an error and went on, then the others timed out: it skipped a collective.

Mechanism: a script that wraps a step in ``try``/``except`` and logs the error (``WARNING
hard-negative cache unavailable (...); continuing without it``) goes on, but when a collective
sits inside the ``try`` after the call that raised, that rank never issues it. Every other rank
does, and waits in it for the one rank that left the sequence: one process-group timeout
later they fail (gloo's ``Timed out waiting 20000ms``, a peer's ``Connection closed by peer``,
NCCL's watchdog), often through the very same handler, whose warning then quotes the
timeout. The handled error did not end the run, and its own message says the rank went on:
the failure is the collective sequence that diverged on the except path (class
``collective-desync``), and the rank that logged the first handled error is where it began
(heldout r20c case 08: rank 2's corrupt cache file, 20 s later ranks 0 and 1 timed out in the
same handler and every rank died in the next barrier).

Needed, all of: one rank (its launcher prefix or its own ``rank N`` in the line, naming no
other rank) logged a line that says it went on after an error (:data:`_WENT_ON` and
:data:`_FAILED` words) and quotes no collective failure itself (:data:`_COLLECTIVE_FAILURE`),
not a library's own log line (:data:`_LIBRARY_HEADER`: gloo's "Using the loopback address as
fallback"); no other rank logged such a line; no other rank failed of its own (an exception,
an allocation error) between that line and the first wait; and later in the same file another rank reported a
collective timeout or a lost peer (a finding of class ``collective-timeout``, or one with
``explained_by: [peer]``), in the same attempt (before a restart's start; the findings of
an attempt the job restarted after are in ``ScanState.earlier_findings``). Read from the sources' kept heads and tails
(``ScanState.heads``/``tails``): the scan's gate does not choose such lines. A finding a
signature made of the handled line itself (the corrupt file its message quotes) is what set
it off: it is folded into this finding (``trigger``), not a root of its own.

The wait may also be silent: with no timeout reported (a long process-group timeout, a
collective that never times out), the others sit in the skipped collective and the job's
output stops until something stops the job (a wrapper's ``timeout``, ``scancel``, a time
limit: a ``terminal`` cause such as ``agent-received-signal``). A stop whose time comes at
least :data:`~rootrank.analysis.stall.STALL_INTERVALS` typical progress intervals after the
last progress line, with the handled line before that last progress line and no other fault
in the log, is the end of that hang (:func:`_silent_stop`); the finding then captures
``stopped_by``, ``silent`` and ``last_time`` and names no waiters (heldout r23b case 01: rank 1
``skipping unreadable caption file at step 17``, progress to step 35, 33 s of silence, then
``timeout``'s SIGTERM to the agent).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context
from rootrank.analysis.reasons import fmt_span, fmt_time, format_ranks
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger, strip_wrapper_stamp
from rootrank.signatures import Signature

#: The signature that describes it (``detector: analysis``).
HANDLED_SIGNATURE = "handled-error-skipped-collective"
#: Words that say the process went on past the error.
_WENT_ON = lazy_regex.compile(
    r"(?i)\b(?:continu(?:e|es|ing)|proceed(?:s|ing)?|carry(?:ing)? on|skip(?:s|ping)?"
    r"|ignor(?:e|es|ing)|fall(?:s|ing)? ?back|without (?:it|them))\b"
)
#: A line that says a step or a piece of work was left out (the size-abort path).
_SKIPPED = lazy_regex.compile(r"(?i)\bskip(?:s|ped|ping)?\b")
#: The signature of gloo's size-check abort, whose aborting rank is the receiver.
SIZE_ABORT_SIGNATURE = "gloo-size-mismatch"
#: Words of an error the line reports.
_FAILED = lazy_regex.compile(
    r"(?i)\b(?:fail(?:ed|s|ure)?|error|unavailable|could ?n[o']t|can ?n?[o']t|corrupt\w*"
    r"|missing|not found|no such file|exception|invalid|unreadable)\b"
)
#: A library's own log header: a source file and line in brackets (c10d's ``[W1203 08:14:02
#: ProcessGroupGloo.cpp:755]``, torch's ``run.py:874]``): not the user's handler.
_LIBRARY_HEADER = lazy_regex.compile(r"\w\.(?:cpp|cc|cu|cxx|h|hpp|py):\d+\]")
#: A collective's own failure quoted in the line: such a handler caught the timeout itself.
_COLLECTIVE_FAILURE = lazy_regex.compile(
    r"(?i)timed out|timeout|closed by peer|connection (?:closed|reset|refused)|broken pipe"
    r"|\bnccl\b|watchdog|\bgloo\b|pair\.cc|collective|process group"
)
#: A rank's own mention in its line: ``rank 3:``, ``[rank 3]``, ``rank=3``.
_RANK_WORD = lazy_regex.compile(r"(?i)(?<![\w-])rank[ _:=#]{0,2}(\d{1,6})(?![\d.])")
#: Characters of the handled error's message kept in the captures.
MAX_REASON = 200
#: A logging record's level word near the line's start (Python logging, loguru, glog).
_LEVEL = lazy_regex.compile(r"(?<![\w.-])(?:WARNING|WARN|ERROR|CRITICAL)(?![\w.-])")
#: How far into the line the level may stand: a header, not a word of a message.
MAX_LEVEL_AT = 80
#: A logger's name after the level (``WARNING retriever: ...``).
_LOGGER_NAME = lazy_regex.compile(r"[\w.]{1,60}: ")


def handled_skip_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`HANDLED_SIGNATURE` on the one rank that logged an error it went on
    from before the others' collective timeout (see the module), or ``None``. Captures
    ``reason`` (the line from its first error word on), ``waiters`` (the ranks that timed
    out or lost their peer), ``trigger`` (the title of a finding made of the same line, or
    empty) and ``trigger_note`` (that title as a clause for the fix, or empty)."""
    sig = ctx.library.signatures.get(HANDLED_SIGNATURE)
    if sig is None:
        return None
    waits = [
        f
        for f in (*ctx.findings, *ctx.state.earlier_findings)
        if f.rank is not None
        and f.evidence
        and (f.failure_class == "collective-timeout" or ctx.peer_report(f))
    ]
    lines = _handled_lines(ctx)
    if not lines or len({rank for rank, _, _, _ in lines}) != 1:
        sized = _size_abort_lines(ctx)
        if sized is None:
            return None
        lines, waits = sized
    if len({rank for rank, _, _, _ in lines}) != 1:
        return None
    rank, path, number, raw = min(lines, key=lambda x: x[2])
    if not waits:
        return _silent_stop(ctx, sig, rank, path, number, raw)
    # the same attempt: a restart after the failure starts the job anew
    ends = [a for a in ctx.state.attempt_starts if a > number]
    end = min(ends) if ends and len(ctx.state.sources) == 1 else None
    later = [
        f
        for f in waits
        if f.rank != rank
        and f.evidence[0].path == path
        and number < f.evidence[0].line < (end or f.evidence[0].line + 1)
    ]
    if not later:
        return None
    reason = _reason(raw)
    trigger = [
        f
        for f in ctx.findings
        if f.evidence and all(e.path == path and e.line == number for e in f.evidence)
    ]
    first = min(later, key=lambda f: f.order)
    if _failed_first_elsewhere(ctx, rank, path, number, first):
        return None
    return Finding.of(
        sig,
        rank=rank,
        host=ctx.state.hosts.get(rank),
        time=None,
        order=max(0, min([first.order, *(t.order for t in trigger)]) - 1),
        evidence=[_handled_evidence(path, number, raw, rank, reason)],
        captures={
            "reason": reason
            if len(reason) <= MAX_REASON
            else reason[: MAX_REASON - 3].rstrip() + "...",
            "waiters": format_ranks(
                sorted({f.rank for f in later if f.rank is not None})
                or sorted(ctx.known_ranks() - {rank})
            ),
            "trigger": trigger[0].title if trigger else "",
            "trigger_note": f"; here: {trigger[0].title[:1].lower()}{trigger[0].title[1:]}"
            if trigger
            else "",
            "handled_line": str(number),
        },
    )


def _silent_stop(
    ctx: Context, sig: Signature, rank: int, path: str, number: int, raw: str
) -> Finding | None:
    """The finding of :data:`HANDLED_SIGNATURE` on ``rank``'s handled line (``path``:``number``,
    ``raw``) when the job's end was a stop that came after its output went silent (see the
    module): the first ``terminal`` cause with a timestamp (``ctx.kind``), at least
    :data:`~rootrank.analysis.stall.STALL_INTERVALS` typical progress intervals after the newest
    timed progress line, which itself comes after the handled line in the same source; no
    other cause of severity error that is neither a terminal event nor a peer's report; no
    exception scanned. ``None`` otherwise. Times are the scan's seconds (:class:`Progress`)."""
    from rootrank.analysis.stall import STALL_INTERVALS

    if ctx.state.exceptions and any(
        x.exc.type.rsplit(".", 1)[-1] != "SignalException" for x in ctx.state.exceptions
    ):
        return None  # an exception of the job's own (the agent's SignalException is the stop)
    stops = [
        f
        for f in ctx.findings
        if f.role == "cause" and ctx.kind(f) == "terminal" and f.time is not None and f.evidence
    ]
    if not stops or any(
        f.severity == "error"
        and f.role == "cause"
        and ctx.kind(f) != "terminal"
        and not ctx.peer_report(f)
        for f in ctx.findings
    ):
        return None
    stop = min(stops, key=lambda f: f.time or 0.0)
    timed = [p for p in ctx.state.progress.last().values() if p.time is not None]
    gap = ctx.state.progress.typical_gap()
    if not timed or gap is None or gap <= 0:
        return None
    newest = max(timed, key=lambda p: p.time or 0.0)
    if newest.path != path or newest.line <= number:
        return None  # the handled line must come before the job's last progress
    silent = (stop.time or 0.0) - (newest.time or 0.0)
    if silent < STALL_INTERVALS * gap:
        return None
    reason = _reason(raw)
    return Finding.of(
        sig,
        rank=rank,
        host=ctx.state.hosts.get(rank),
        time=None,
        order=max(0, stop.order - 1),
        evidence=[_handled_evidence(path, number, raw, rank, reason), stop.evidence[0]],
        captures={
            "reason": reason
            if len(reason) <= MAX_REASON
            else reason[: MAX_REASON - 3].rstrip() + "...",
            "waiters": "the other ranks",
            "trigger": "",
            "trigger_note": "",
            "handled_line": str(number),
            "stopped_by": stop.title,
            "silent": fmt_span(silent),
            "last_time": fmt_time(newest.time),
        },
    )


def _size_abort_lines(
    ctx: Context,
) -> tuple[list[tuple[int, str, int, str]], list[Finding]] | None:
    """The handled lines (:func:`_handled_lines` with ``skipped``) of the one rank that logged
    one, and gloo's size-check aborts (:data:`SIZE_ABORT_SIGNATURE`) on other ranks, when the
    log has both; ``None`` otherwise.

    Mechanism: gloo's receiver checks an incoming message against the buffer its own
    collective posted (``op.preamble.length <= op.nbytes``), so the rank that aborts is a
    receiver, a rank that stayed on the common sequence; the rank that left it (a caught
    error or a skip on one rank that left out a collective) sent the message that did not
    fit. Its own line before the abort names it (heldout r23e case 05: ``[rank: 2] val
    metrics skipped`` then rank 1's abort)."""
    aborts = [f for f in ctx.findings if f.signature == SIZE_ABORT_SIGNATURE and f.evidence]
    if not aborts:
        return None
    lines = _handled_lines(ctx, skipped=True)
    if len({rank for rank, _, _, _ in lines}) != 1:
        return None
    return lines, aborts


def _failed_first_elsewhere(
    ctx: Context, rank: int, path: str, number: int, first_wait: Finding
) -> bool:
    """Whether another rank failed of its own (a cause that is not a wait: an allocation
    error, an exception) after ``rank``'s handled line (``path``:``number``) and before the
    first wait: then the others waited for that rank, not for ``rank``."""
    end = first_wait.evidence[0].line
    for f in ctx.findings:
        if f.rank in (None, rank) or f.role != "cause" or not f.evidence:
            continue
        if f.failure_class in ("collective-timeout", "collective-desync") or ctx.peer_report(f):
            continue
        ev = f.evidence[0]
        if ev.path == path and number < ev.line < end:
            return True
    return False


def _reason(raw: str) -> str:
    """The message of a logged line: after its level word and logger name when it has them
    (``WARNING retriever: cache unavailable (...)`` -> ``cache unavailable (...)``), after its
    rank tag otherwise."""
    body = strip_wrapper_stamp(raw).strip()
    lm = _LEVEL.search(body, 0, MAX_LEVEL_AT)
    if lm is not None:
        body = body[lm.end() :].lstrip(" :|-]")
        nm = _LOGGER_NAME.match(body)
        if nm is not None:
            body = body[nm.end() :]
    else:
        rm = _RANK_WORD.search(body, 0, MAX_LEVEL_AT)
        if rm is not None:
            body = body[rm.end() :].lstrip(" :|-]")
    return body.strip()


def folded(findings: list[Finding], handled: Finding) -> list[Finding]:
    """``findings`` without those made of ``handled``'s own line (the error it caught, which
    :func:`handled_skip_finding` names as its ``trigger``)."""
    at = {(e.path, e.line) for e in handled.evidence}
    return [
        f
        for f in findings
        if f is handled or not f.evidence or not all((e.path, e.line) in at for e in f.evidence)
    ]


def _handled_lines(ctx: Context, skipped: bool = False) -> list[tuple[int, str, int, str]]:
    """``(rank, path, 1-based line, raw line)`` of every line a single rank logged that says
    it went on after an error and quotes no collective failure, from the kept heads and
    tails. With ``skipped``, a line that says it skipped something (:data:`_SKIPPED`) counts
    without an error word (``val metrics skipped (record without 'label')``)."""
    out: list[tuple[int, str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    for path, first, text in (*ctx.state.heads, *ctx.state.tails):
        tagger = RankTagger(path=path)
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if (path, number) in seen or not (
                _WENT_ON.search(raw) or (skipped and _SKIPPED.search(raw))
            ):
                continue
            seen.add((path, number))
            if _COLLECTIVE_FAILURE.search(raw):
                continue
            if not _FAILED.search(raw) and not (skipped and _SKIPPED.search(raw)):
                continue
            if _LIBRARY_HEADER.search(raw, 0, 120):
                continue
            if raw[:1] in " \t":
                continue  # a traceback's or a dump's indented line
            tagged = tagger.tag(raw, number)
            named = {int(m.group(1)) for m in _RANK_WORD.finditer(raw)}
            if tagged.rank is not None:
                named.add(tagged.rank)
            if len(named) == 1:
                out.append((named.pop(), path, number, raw))
    return out


def _handled_evidence(path: str, number: int, raw: str, rank: int, reason: str) -> Evidence:
    """The handled line (1-based ``number`` in ``path``) as evidence of ``rank``, its columns
    (0-based, on the raw line) those of the ``reason`` it logged, when found."""
    col = raw.find(reason)
    return Evidence(
        path=path,
        line=number,
        text=raw.strip(),
        rank=rank,
        column_start=col if col >= 0 else None,
        column_end=col + len(reason) if col >= 0 else None,
    )
