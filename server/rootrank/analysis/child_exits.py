"""A launcher-less parent's report of its children's exit codes, as rank evidence.

Mechanism: a job started without a launcher (``multiprocessing.Process`` objects started by
hand, ``torch.multiprocessing`` with a loop of its own) often ends with the parent printing
each child's ``Process.exitcode`` keyed by its name: ``exit codes: {'trainer-0': 1,
'trainer-1': 1, 'trainer-2': -11}``. ``Process.exitcode`` is the child's exit status, or
``-N`` when signal N ended it (CPython Lib/multiprocessing/process.py, ``BaseProcess.exitcode``;
https://docs.python.org/3/library/multiprocessing.html#multiprocessing.Process.exitcode).
When the names number the children (``worker-0``..``worker-3``, the rank in the name), the one
child a signal ended (a crash: SIGSEGV, SIGABRT, SIGKILL) while the others exited with a status
of their own (their collectives failed once it was gone) is where the failure started; so is
the one child that exited non-zero while the others exited 0.

Read from the last lines of each source (``ScanState.tails``): the parent prints it last.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.reasons import say
from rootrank.scan import ScanState

#: A dict of quoted names to integers on a line that speaks of exit codes.
_REPORT = lazy_regex.compile(
    r"""(?i)exit[ _-]?codes?\b[^{\n]{0,40}(\{\s*(['"])[^'"\n]{1,60}\2\s*:\s*-?\d+"""
    r"""(?:\s*,\s*(['"])[^'"\n]{1,60}\3\s*:\s*-?\d+){1,4095}\s*,?\s*\})"""
)
#: Signals a process receives from its own fault (SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV);
#: SIGTERM and SIGKILL may come from the parent stopping the others after a failure.
CRASH_SIGNALS = frozenset({4, 6, 7, 8, 11})
#: A child's name that numbers it: ``trainer-2``, ``worker_3``, ``rank 1``.
_NUMBERED = lazy_regex.compile(r"^(.*?)[-_ :]?(\d+)$")


def child_exit_ranks(state: ScanState) -> dict[int, tuple[str, int]] | None:
    """``{rank: (child's name, exit code)}`` from the last report of children's exit codes in the tails,
    when every name is one prefix and a distinct number, and the numbers are ``0..n-1``;
    ``None`` when there is no such report."""
    found: dict[int, tuple[str, int]] | None = None
    for _path, _first, text in state.tails:
        if "xit" not in text:
            continue
        for m in _REPORT.finditer(text):
            import ast  # here: most logs have no such report; a start need not load the parser

            try:
                report = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                continue
            ranks = _numbered(report)
            if ranks is not None:
                found = ranks
    return found


def _numbered(report: object) -> dict[int, tuple[str, int]] | None:
    """``{number: (name, code)}`` when ``report`` maps names of one prefix numbered ``0..n-1`` to
    integer codes (at least two children), else ``None``."""
    if not isinstance(report, dict) or len(report) < 2:
        return None
    prefixes: set[str] = set()
    out: dict[int, tuple[str, int]] = {}
    for name, code in report.items():
        if not isinstance(name, str) or not isinstance(code, int) or isinstance(code, bool):
            return None
        m = _NUMBERED.match(name)
        if m is None:
            return None
        prefixes.add(m.group(1))
        out[int(m.group(2))] = (name, code)
    if len(prefixes) != 1 or set(out) != set(range(len(out))):
        return None
    return out


def initiating_child(state: ScanState) -> tuple[int, str] | None:
    """The one child a crash signal (:data:`CRASH_SIGNALS`) ended while every other exited
    with a status of its own, or the one that exited non-zero while the others exited 0
    (none stopped by SIGTERM or SIGKILL), with the reason
    (``child_signal_exit``, ``child_lone_failure``); ``None`` otherwise."""
    named = child_exit_ranks(state)
    if named is None:
        return None
    codes = {r: c for r, (_, c) in named.items()}
    signalled = [r for r, c in codes.items() if c < 0]
    failed = [r for r, c in codes.items() if c != 0]
    if any(-c not in CRASH_SIGNALS for c in codes.values() if c < 0):
        return None  # SIGTERM/SIGKILL: the parent (or someone) may have stopped it
    others = ", ".join(f"{named[r][0]}: {codes[r]}" for r in sorted(codes))
    if len(signalled) == 1 and len(codes) > 1:
        rank = signalled[0]
        return rank, say(
            "child_signal_exit", rank=rank, name=named[rank][0], signal=-codes[rank], codes=others
        )
    if len(failed) == 1 and not signalled:
        rank = failed[0]
        return rank, say(
            "child_lone_failure", rank=rank, name=named[rank][0], code=codes[rank], codes=others
        )
    return None
