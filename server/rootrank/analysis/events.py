"""The scan as one ordered stream of typed events, for the rules and strategies.

The scan keeps what it read in separate lists (:class:`~rootrank.scan.ScanState`: the
findings, the Python exceptions, torchelastic's summaries, the agent's closing signals, the
progress, the attempt boundaries). :func:`events_of` turns them into one tuple of
:class:`Event`, each with its rank, host, pid, time and place in the log, so a strategy asks
one question ("which worker was killed by a signal the agent did not send?") instead of
joining lists. The stream is built once per analysis (:attr:`Context.events
<rootrank.analysis.prepare.Context.events>`) and never changes the scan.

Kinds, and the line shapes they come from:

- ``finding``: a signature matched (:class:`~rootrank.model.Finding`, one per signature,
  rank and source; at its first line). ``code`` is its ``exitcode`` capture, ``pid`` its
  ``pid`` capture, when it has them.
- ``exception``: a Python exception line (``ValueError: ...``, with or without its
  ``Traceback`` header; :class:`~rootrank.scan.SeenException`).
- ``exit``: a launcher's line saying a worker exited with a code: srun's ``task 3: Exited
  with exit code 1`` (``tasks 2-7,9: ...`` gives one event per task), mp.spawn's
  ``process 2 terminated with exit code 1``, torchrun's agent ``failed (exitcode: 1)
  local_rank: 2 (pid: 4242)``. Made from the finding of a signature of kind ``terminal``
  with an integer ``exitcode`` capture (``ref`` is that finding; the agent's ``failed
  (exitcode: -9)`` is read by ``worker-sigkill-exit``, a cause, so it stays a finding).
  ``code`` is the exit code as printed (negative: torchelastic's "killed by signal -code").
- ``signal``: torchrun's agent stopping a worker: ``Sending process 4243 closing signal
  SIGTERM`` (:class:`~rootrank.scan.ClosingSignal`); ``pid`` is the worker's, ``sender`` is
  ``"agent"``, ``code`` the signal's number (15).
- ``summary``: one entry of torchelastic's failure summary (``[1]: time : ... rank : 3
  (local_rank: 1) exitcode : -9 (pid: 4243)``; :class:`~rootrank.ranks.ElasticFailure`).
- ``progress``: the last step each rank printed (:class:`~rootrank.progress.Progress`;
  ``iteration 120/ 1000``, ``step 120``, a tqdm bar): ``step``, the line's ``time``.
- ``attempt``: a later run of the job began at ``line`` (a relaunch appended to the same
  file, or torchrun's agent restarting its workers; ``ScanState.attempt_starts``).

``sender`` (on ``exit`` and ``summary`` events whose code is a signal, and on ``signal``
events): ``"agent"`` when the worker's pid is among the agent's closing-signal lines,
``"outside"`` when the log shows the agent's closing signals and this pid is not among them
(the OOM killer, a preemption, a person: the agent only signals the *other* workers after
the first failed, torch/distributed/elastic/multiprocessing/api.py ``_close``), ``None``
when the log shows no closing signal at all (it cannot tell).

Order: within one source, events follow the log (1-based ``line``; on one line a finding
comes before the exit it reports). Across sources (one file per rank or node), the sources'
streams are merged by time: each event counts with its own timestamp, or the latest earlier
one of its source (events before a source's first timestamp count as earliest); equal times
keep the sources' scan order. ``order`` is the 0-based place in that merged stream.

Attempts: the findings and exceptions are the last attempt's (the scan sets the earlier
attempts' aside, ``ScanState.earlier_findings``; torchelastic prints its summary once, when
the job ends); the closing signals, the attempt
boundaries and each rank's last progress cover every attempt, so a query compares
``order`` with the last ``attempt`` event's when it must keep to the last attempt.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from rootrank.model import Finding
from rootrank.progress import Progress
from rootrank.scan import ScanState
from rootrank.signatures import Library

Kind = Literal["finding", "exception", "exit", "signal", "progress", "summary", "attempt"]
Sender = Literal["agent", "outside"]

#: Exit codes of a worker stopped by a signal (negative: torchelastic's -N; 128+N: a
#: shell's; N: a launcher that prints the signal's number) and the signal's name.
SIGNAL_CODES = {
    -15: "SIGTERM",
    15: "SIGTERM",
    143: "SIGTERM",
    -9: "SIGKILL",
    9: "SIGKILL",
    137: "SIGKILL",
}
#: Signal numbers by name (Linux), for the agent's closing-signal lines.
SIGNAL_NUMBERS = {"SIGTERM": 15, "SIGKILL": 9, "SIGINT": 2, "SIGHUP": 1, "SIGUSR1": 10}
#: Exit codes of a worker ended by SIGABRT (the NCCL watchdog's teardown, a C++ abort).
ABORT_CODES = (-6, 134)

# Ties on one line: the finding before the launcher facts read from it.
_TIE = {
    "attempt": 0,
    "finding": 1,
    "exception": 2,
    "exit": 3,
    "signal": 4,
    "summary": 5,
    "progress": 6,
}


@dataclass(frozen=True, slots=True)
class Event:
    """One thing the log shows happening (see the module's docstring for each kind).

    Attributes:
        kind: what happened (:data:`Kind`).
        rank: global rank, or ``None`` when the log does not tell.
        local_rank: torchrun's local rank when the line names one, else ``None``.
        host: host name, or ``None``.
        pid: the process id the line names (a worker's), or ``None``.
        time: the line's timestamp in seconds since 2000-01-01 00:00 (the scan's clock,
            :func:`rootrank.ranks.parse_time`: glog lines print no year, so every
            timestamp is read in one fixed year and they compare), or ``None``.
        order: 0-based place in the stream (see the module's docstring for the rule).
        line: 1-based line in ``path`` (0 when unknown).
        path: the source the line came from (``""`` when unknown).
        sender: for signals, ``"agent"`` / ``"outside"`` / ``None`` (cannot tell).
        code: an exit code (``exit``, ``summary``, a finding's ``exitcode``) or a signal's
            number (``signal``), or ``None``.
        step: the step reached (``progress``), else ``None``.
        ref: the scan's object: a Finding, SeenException, ElasticFailure, ClosingSignal,
            Progress, or the attempt's start line (int).
    """

    kind: Kind
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    time: float | None = None
    order: int = -1
    line: int = 0
    path: str = ""
    sender: Sender | None = None
    code: int | None = None
    step: int | None = None
    ref: Any = None

    @property
    def signal(self) -> str | None:
        """The signal's name when this event is a worker stopped by a signal, else ``None``."""
        if self.kind == "signal":
            return next((n for n, v in SIGNAL_NUMBERS.items() if v == self.code), None)
        if self.kind in ("exit", "summary") and self.code is not None:
            return SIGNAL_CODES.get(self.code)
        return None


def finding_kind(library: Library, f: Finding) -> str:
    """The finding's kind from its signature (``cause``, ``symptom``, ``terminal``,
    ``hardware``); a finding made by the analysis itself keeps its role."""
    sig = library.signatures.get(f.signature)
    return getattr(sig, "kind", None) or f.role


def outside_stops(library: Library, findings: Sequence[Finding]) -> list[Finding]:
    """The stops from outside (``terminal`` preemption-sigterm findings: a time limit, a
    SIGTERM the launcher did not send) of a log whose only causes they are; ``[]`` when there
    is none, or when another cause (not ``terminal``) explains the end better. The condition
    the readings of a job stopped while stalled share (:mod:`retry_loop`,
    :mod:`unfinished_phase`)."""
    stops = [
        f
        for f in findings
        if f.failure_class == "preemption-sigterm" and finding_kind(library, f) == "terminal"
    ]
    if any(f.role == "cause" and finding_kind(library, f) != "terminal" for f in findings):
        return []
    return stops


def order_before_next(findings: Sequence[Finding], path: str, line: int) -> int:
    """The order for a finding the analysis makes at ``path``:``line`` (1-based): just before
    the first finding whose evidence is later in that source, else 0."""
    later = [
        f.order
        for f in findings
        if f.evidence and f.evidence[0].path == path and f.evidence[0].line > line
    ]
    return min(later) - 1 if later else 0


def events_of(state: ScanState, findings: Sequence[Finding], library: Library) -> tuple[Event, ...]:
    """One ordered stream of the scan's events (the module's docstring gives the kinds and
    the order). ``findings`` are the analysis's findings (after ``min_count`` and rank
    mapping: :func:`rootrank.analysis.prepare.prepare`); ``library`` gives their kinds.
    Reads ``state``, never changes it."""
    closing = state.launch.closing_pids
    by_pid = {e.pid: e for e in state.elastic if e.pid is not None and e.rank is not None}

    def sender(code: int | None, pid: int | None) -> Sender | None:
        if code not in SIGNAL_CODES or pid is None or not closing:
            return None
        return "agent" if pid in closing else "outside"

    out: list[Event] = []
    for f in findings:
        ev = f.evidence[0] if f.evidence else None
        found = Event(
            "finding",
            rank=f.rank,
            local_rank=_int(f.captures.get("local_rank")),
            host=f.host,
            pid=_int(f.captures.get("pid")),
            time=f.time,
            line=ev.line if ev is not None else 0,
            path=ev.path if ev is not None else "",
            code=_int(f.captures.get("exitcode")),
            ref=f,
        )
        out.append(found)
        if found.code is None or finding_kind(library, f) != "terminal":
            continue
        ranks: list[int | None] = [f.rank] if f.rank is not None else []
        for rank in ranks or _task_ids(f.captures.get("task", "")) or [None]:
            out.append(replace(found, kind="exit", rank=rank, sender=sender(found.code, found.pid)))
    for seen in state.exceptions:
        out.append(
            Event(
                "exception",
                rank=seen.rank,
                host=seen.host,
                time=seen.time,
                line=seen.exc.log_line,
                path=seen.path,
                ref=seen,
            )
        )
    for c in state.closing_signals:
        entry = by_pid.get(c.pid)
        out.append(
            Event(
                "signal",
                rank=entry.rank if entry is not None else None,
                local_rank=entry.local_rank if entry is not None else None,
                host=c.host,
                pid=c.pid,
                time=c.time,
                line=c.line,
                path=c.path,
                sender="agent",
                code=SIGNAL_NUMBERS.get(c.signal),
                ref=c,
            )
        )
    for e in state.elastic:
        out.append(
            Event(
                "summary",
                rank=e.rank,
                local_rank=e.local_rank,
                host=e.host,
                pid=e.pid,
                time=e.time,
                line=e.line,
                path=e.path,
                sender=sender(e.exitcode, e.pid),
                code=e.exitcode,
                ref=e,
            )
        )
    for p in state.progress.last().values():
        out.append(
            Event(
                "progress", rank=p.rank, time=p.time, line=p.line, path=p.path, step=p.step, ref=p
            )
        )
    one_source = state.sources[0] if len(state.sources) == 1 else ""
    for start in sorted(state.attempt_starts):
        out.append(Event("attempt", line=start, path=one_source, ref=start))
    return tuple(replace(e, order=i) for i, e in enumerate(_merge(out, state.sources)))


def _merge(events: list[Event], sources: list[str]) -> Iterator[Event]:
    """``events`` in stream order: each source's by line (then :data:`_TIE`, then as
    given), the sources merged by time (an untimed event counts with its source's latest
    earlier time, or as earliest before the source's first time; equal times keep the
    sources' scan order, :attr:`ScanState.sources <rootrank.scan.ScanState.sources>`)."""
    rank_of_source = {p: i for i, p in enumerate(sources)}
    streams: dict[str, list[tuple[int, Event]]] = {}
    for i, e in enumerate(events):
        streams.setdefault(e.path, []).append((i, e))
    keyed: list[list[tuple[float, Event]]] = []
    for path in sorted(streams, key=lambda p: (rank_of_source.get(p, len(sources)), p)):
        stream = sorted(streams[path], key=lambda ie: (ie[1].line, _TIE[ie[1].kind], ie[0]))
        now = float("-inf")
        timed: list[tuple[float, Event]] = []
        for _, e in stream:
            now = e.time if e.time is not None else now
            timed.append((now, e))
        keyed.append(timed)
    for _, e in heapq.merge(*keyed, key=lambda pair: pair[0]):
        yield e


def of_kind(events: Iterable[Event], *kinds: Kind) -> list[Event]:
    """The events of ``kinds``, in stream order."""
    return [e for e in events if e.kind in kinds]


def signals_from_outside(events: Iterable[Event]) -> list[Event]:
    """torchelastic summary entries of workers stopped by SIGTERM/SIGKILL that the agent did
    not send (``sender == "outside"``), with a known global rank (``>= 0``), in stream order.

    Only the summary's entries: an entry carries the worker's global rank and pid together,
    so a pid the agent never signalled is that rank's (the agent's own ``failed (exitcode:
    -9)`` line names a local rank, and a multi-node log may not map it)."""
    return [
        e
        for e in events
        if e.kind == "summary" and e.sender == "outside" and e.rank is not None and e.rank >= 0
    ]


def real_exit(code: int | None) -> int | None:
    """``code`` when it is a worker's own failure (not ``None``, 0, a signal of
    :data:`SIGNAL_CODES` or a SIGABRT of :data:`ABORT_CODES`), else ``None``."""
    if code is None or code == 0 or code in SIGNAL_CODES or code in ABORT_CODES:
        return None
    return code


def launcher_exits(events: Iterable[Event]) -> dict[int, int]:
    """``{rank: exit code}`` of the workers a launcher reports exiting by themselves (a
    :func:`real_exit` code): its exit lines first, then torchelastic's summary entries
    (which win for a rank both name)."""
    exits: dict[int, int] = {}
    for kind in ("exit", "summary"):
        for e in events:
            code = real_exit(e.code)
            if e.kind != kind or e.rank is None or code is None:
                continue
            if kind == "exit" or e.rank >= 0:  # a summary's -1 is the agent's own entry
                exits[e.rank] = code
    return exits


def last_progress(events: Iterable[Event]) -> dict[int, Progress]:
    """``{rank: its last progress}`` (the progress events' :class:`~rootrank.progress.Progress`):
    the last step each known rank printed, and when (``step``, ``time``, ``path``, ``line``)."""
    return {e.rank: e.ref for e in events if e.kind == "progress" and e.rank is not None}


def _int(text: str | None) -> int | None:
    """``text`` as an integer (``-9``), or ``None`` when it is missing or not one."""
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _task_ids(text: str) -> list[int]:
    """The task ids of srun's ``tasks 2-7,9`` list (at most 4,096), ``[]`` when unreadable."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return []
        out.extend(range(int(lo), int(hi or lo) + 1))
        if len(out) > 4096:
            return []
    return out
