"""A launcher's negative exit code is a signal, whichever launcher printed it.

Every Python launcher starts its workers with ``subprocess.Popen`` and prints the child's
``returncode``; a negative value ``-N`` means the child was killed by signal ``N`` (Python's
``subprocess`` docs, ``Popen.returncode``). torchrun's agent prints it as ``failed
(exitcode: -7)``, composer as ``Rank 2 crashed with exit code -7.``, DeepSpeed's launcher as
``exits with return code = -7``, Lightning as ``terminated with code -7``. The signal says
what killed the worker (SIGBUS: a shared-memory mapping with no space behind it; SIGKILL: the
OOM killer or another process; SIGSEGV/SIGFPE/SIGILL: a native crash; SIGABRT: the process
aborted itself; SIGXCPU/SIGXFSZ: a CPU-time or file-size resource limit, ``ulimit -t`` / ``-f``,
reached by that rank; SIGALRM/SIGVTALRM/SIGPROF: the process's own timer, a ``signal.alarm`` or
``setitimer`` watchdog in the script with no handler; SIGUSR1/SIGUSR2: sent by the script's own
code or a tool watching it, never by a launcher, to a rank with no handler; SIGPIPE: a write to a
pipe whose reader had exited, with the default action restored by the script), so when nothing deeper is in the log, the launcher's report is read as the
signal's signature, one mechanism for every launcher: the launcher-report signature
(``elastic-child-failed``) captures the code, and :data:`SIGNAL_SIGNATURES` maps it.

SIGTERM (-15) and SIGHUP (-1) are not mapped: they are sent from outside (the agent's own
cleanup, a scheduler, a closed terminal), and the terminal-event rules read those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rootrank.analysis.events import finding_kind
from rootrank.analysis.reasons import say
from rootrank.model import Finding
from rootrank.ranks import ElasticFailure
from rootrank.signatures import Library

#: Signal number -> the signature of a worker killed by it.
SIGNAL_SIGNATURES: dict[int, str] = {
    4: "illegal-instruction-cpu",
    6: "worker-sigabrt-exit",
    7: "worker-sigbus-exit",
    8: "worker-sigfpe",
    9: "worker-sigkill-exit",
    10: "worker-own-user-signal",
    11: "worker-segfault",
    12: "worker-own-user-signal",
    13: "worker-sigpipe-exit",
    14: "worker-own-timer-signal",
    24: "worker-cpu-time-limit",
    25: "worker-file-size-limit",
    26: "worker-own-timer-signal",
    27: "worker-own-timer-signal",
}
#: Signal names, for the reasoning.
SIGNAL_NAMES = {
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
}
#: strsignal(3) descriptions (glibc) -> signal number: srun prints a task's death by a signal
#: as ``srun: error: gpu-07: task 3: Bus error``.
SIGNAL_TEXTS = {
    "Illegal instruction": 4,
    "Aborted": 6,
    "Bus error": 7,
    "Floating point exception": 8,
    "Killed": 9,
    "User defined signal 1": 10,
    "Segmentation fault": 11,
    "User defined signal 2": 12,
    "Broken pipe": 13,
    "Alarm clock": 14,
    "Virtual timer expired": 26,
    "Profiling timer expired": 27,
}
#: Signals a process raises on itself after printing why (abort() after a C++ exception, an
#: assertion, or ProcessGroupNCCL's watchdog after a timeout): any error of the log may be
#: that why, not only a cause.
SELF_RAISED = frozenset({6})
#: The signatures whose findings are a launcher's report of a worker's exit code.
LAUNCHER_REPORTS = frozenset({"elastic-child-failed"})


def signal_exit_findings(
    findings: list[Finding], library: Library, elastic: Sequence[ElasticFailure] = ()
) -> list[Finding]:
    """One finding of the signal's signature (:data:`SIGNAL_SIGNATURES`) per launcher report
    (:data:`LAUNCHER_REPORTS`) whose captured ``exitcode`` is ``-N``, on the report's rank and
    line, when nothing deeper is in ``findings``: no error finding that is not a launcher's
    report or a terminal event and, for a signal other than :data:`SELF_RAISED`, is a
    cause. A rank that already has a finding of that signature gets none. Empty when the
    signature is not in ``library``. The report stays, as the new finding's collateral.

    A report that captured no code (the ``ChildFailedError`` line, the summary's "Root Cause"
    header) takes it from torchelastic's failure summary (``elastic``, the parsed entries):
    the summary's root-cause entry on the report's rank (or its only one) with a signal exit
    code (``exitcode  : -7``) and no other entry that failed by itself (exit code >= 0 or a
    crash signal): the summary pasted alone, with ``<NO_OTHER_FAILURES>``, is then read as the
    signal, like the agent's ``failed (exitcode: -7)`` line. Not for a self-raised signal
    (SIGABRT: ProcessGroupNCCL's watchdog ends a timed-out rank that way, so a summary showing
    only it names the first rank to time out, not a crash)."""
    reports = [
        _with_summary_code(_with_signal_code(f), elastic) if f.signature in LAUNCHER_REPORTS else f
        for f in findings
    ]
    reports = [
        f
        for f in reports
        if f.signature in LAUNCHER_REPORTS and f.captures.get("exitcode", "").startswith("-")
    ]
    if not reports:
        return []
    others = [
        f
        for f in findings
        if f.severity == "error"
        and f.signature not in LAUNCHER_REPORTS
        and finding_kind(library, f) != "terminal"
    ]
    from rootrank.analysis.prepare import finding_from  # prepare imports this module

    out: list[Finding] = []
    for report in reports:
        code = report.captures["exitcode"]
        number = int(code[1:]) if code[1:].isdigit() else 0
        sig = library.signatures.get(SIGNAL_SIGNATURES.get(number, ""))
        if sig is None:
            continue
        if any(f.role == "cause" or number in SELF_RAISED for f in others):
            continue  # something deeper is in the log: the signal is its consequence
        if any(f.signature == sig.id and f.rank == report.rank for f in [*findings, *out]):
            continue
        why = say("signal_exit", code=code, number=number, name=SIGNAL_NAMES[number])
        captures = {**report.captures, "signal": SIGNAL_NAMES[number], "why": why}
        if report.rank is not None:
            captures.setdefault("rank", str(report.rank))
        out.append(finding_from(sig, report, captures))
    return out


#: Exit codes of a signal that is sent, never raised by a crash: SIGTERM (-15) and SIGHUP
#: (-1), as a launcher prints them.
SENT_SIGNALS = frozenset({"-15", "-1", "15", "1"})


def _with_signal_code(report: Finding) -> Finding:
    """``report`` with ``exitcode`` ``-N`` when it named the signal instead of a code (mp.spawn's
    ``process 2 terminated with signal SIGBUS``: its ``signame`` capture; Open MPI's ``exited on
    signal 7``: ``signum``; srun's ``task 3: Bus error``: ``sigtext``, :data:`SIGNAL_TEXTS`) and
    the signal is one of :data:`SIGNAL_NAMES`; ``report`` unchanged otherwise. mp.spawn's parent reads the same
    ``returncode`` as torchrun's agent (torch/multiprocessing/spawn.py, ``ProcessContext.join``)
    and prints ``signal.Signals(-returncode).name``, so the name is the code."""
    if "exitcode" in report.captures:
        return report
    name = report.captures.get("signame", "")
    signum = report.captures.get("signum", "")
    number = next((n for n, known in SIGNAL_NAMES.items() if name and known == name), None)
    if number is None and signum.isdigit() and int(signum) in SIGNAL_NAMES:
        number = int(signum)  # Open MPI's "exited on signal 7 (Bus error)"
    if number is None:
        number = SIGNAL_TEXTS.get(report.captures.get("sigtext", ""))  # srun's "task 3: Bus error"
    if number is None:
        return report
    return replace(report, captures={**report.captures, "exitcode": f"-{number}"})


def _with_summary_code(report: Finding, elastic: Sequence[ElasticFailure]) -> Finding:
    """``report`` with the ``exitcode`` (and ``rank``) of torchelastic's root-cause summary
    entry when it captured none itself (see :func:`signal_exit_findings`); ``report``
    unchanged otherwise. The summary's other entries must all be SIGTERM/SIGHUP exits (the
    agent's own cleanup) for the root entry's signal to be the only failure."""
    if "exitcode" in report.captures or not elastic:
        return report
    roots = [
        e
        for e in elastic
        if e.root_cause
        and e.exitcode is not None
        and e.exitcode < 0
        and -e.exitcode not in SELF_RAISED
        and (report.rank is None or e.rank == report.rank)
    ]
    if len(roots) != 1:
        return report
    root = roots[0]
    others = [e for e in elastic if e is not root and e.exitcode is not None]
    if any(e.exitcode not in (-15, -1) for e in others):
        return report
    captures = {**report.captures, "exitcode": str(root.exitcode)}
    rank = report.rank if report.rank is not None else root.rank
    return replace(report, captures=captures, rank=rank)


def agent_sent(findings: list[Finding], closing_pids: set[int]) -> list[Finding]:
    """``findings`` without the findings that read a worker's SIGTERM/SIGHUP exit as a stop
    from outside (a ``preemption-sigterm`` cause capturing the worker's ``pid`` and its
    ``signal`` or ``exitcode``) when torchrun's agent itself sent that pid a closing signal
    (``closing_pids``: the ``Sending process N closing signal`` lines). The agent's stop
    stays in the log's other findings (its closing signals, the launcher's report).

    Mechanism: the agent's ``failed (exitcode: -15) local_rank: N (pid: P)`` line names the
    failure with the smallest timestamp among *all* its workers' failures, including the
    ones it SIGTERMed itself in ``close()`` (torch/distributed/elastic/multiprocessing/
    api.py ``_poll``: ``_capture_process_failures`` runs again after ``close()``). A
    failure's timestamp is its ``error.json``'s when the worker wrote one (``@record``,
    written when its exception was raised), else the time the agent looked. So a worker that
    raised a collateral error (a peer's connection closed), wrote its error file and was
    still tearing down when the agent SIGTERMed it sorts before the worker that really failed
    first with no error file: the line names a worker the agent stopped, not one stopped
    from outside. A pid the agent never signalled keeps its reading."""
    if not closing_pids:
        return findings
    out: list[Finding] = []
    for f in findings:
        code = f.captures.get("signal") or f.captures.get("exitcode", "")
        pid = f.captures.get("pid", "")
        if (
            f.role == "cause"
            and f.failure_class == "preemption-sigterm"
            and code in SENT_SIGNALS
            and pid.isdigit()
            and int(pid) in closing_pids
        ):
            continue
        out.append(f)
    return out
