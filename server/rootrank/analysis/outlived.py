"""An error the job visibly went on after is not what it died of (rule ``error_outlived``).

Mechanism: a process that stops at an error starts nothing after it. When an error printed on
no rank (a shell's ``bash: line 14: gcsfuse: command not found`` in a pod's start script, a
set-up step's failure) is followed, in the same file, by the launcher starting the workers
(``Launched rank 0 with PID 57``, torchelastic's ``Starting worker group``) or, for a line a
shell printed about one line of its script, by worker processes that ran after it, the job
went on past it: the shell runs the script's next line unless ``set -e`` stops it. When at
least two of those later processes then die of the same uncaught exception (one traceback
each, from the main script's top level, :func:`rootrank.analysis.survived.caught` false),
that exception is the failure every rank died of: the root cause, and the earlier error
only a set-up problem the run outlived (held-out r20f case 01: a missing ``gcsfuse`` at line
53, eight ranks launched at lines 326-333, each dying of ``No module named 'megatron.core'``).

Facts come from the scan: :attr:`rootrank.scan.ScanState.exceptions` (every traceback with
its 1-based exception line) and :attr:`rootrank.scan.ScanState.tails` (the kept text of the
one source, read for the launcher's start lines). Nothing is dropped when the earlier error
explains anything, is a Python exception itself, or names a rank.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context
from rootrank.analysis.survived import caught
from rootrank.model import Finding

#: The rule's name, as the reasoning line shows it.
RULE = "error_outlived"

#: How many processes must die of the later exception for it to be the job's end.
MIN_PROCESSES = 2

#: A shell's error about one line of a script (bash/sh/zsh, Slurm's batch script): the shell
#: reports the line and goes on to the next one (no ``set -e``).
_SHELL_LINE = lazy_regex.compile(r"^\s*\S*(?:sh|slurm_script|\.sh):? line \d+: ")

#: A launcher starting the worker processes: a custom start script's ``Launched rank 3 with
#: PID 60``, torchelastic's agent ``Starting worker group`` / ``[default] Starting worker``,
#: mp.spawn-style ``Launching ... processes``, DeepSpeed's ``launch.py`` ``process N spawned``.
_STARTED = lazy_regex.compile(
    r"\bLaunched rank \d+\b|\bStarting worker group\b|\bStarting worker\b"
    r"|\bLaunching (?:Torch distributed|\d+ processes|processes)\b|\bprocess \d+ spawned\b"
)


def _died_of(ctx: Context, f: Finding) -> int:
    """How many tracebacks end with one of ``f``'s evidence lines and were not caught (a
    process unwound to its top level and exited with it)."""
    lines = {(e.path, e.line) for e in f.evidence}
    return sum(
        1
        for s in ctx.state.exceptions
        if (s.path, s.exc.log_line) in lines
        and s.exc.frames
        and not s.exc.ignored
        and not caught(s)
    )


def _is_exception_line(ctx: Context, f: Finding) -> bool:
    """Whether one of ``f``'s evidence lines is a traceback's exception line."""
    lines = {(e.path, e.line) for e in f.evidence}
    return any((s.path, s.exc.log_line) in lines for s in ctx.state.exceptions)


def _started_between(ctx: Context, path: str, after: int, before: int) -> bool:
    """Whether the kept text of ``path`` shows a launcher starting workers on a line
    strictly between ``after`` and ``before`` (1-based)."""
    for tail_path, first, text in ctx.state.tails:
        if tail_path != path or first > after + 1:
            continue
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if number >= before:
                break
            if number > after and _STARTED.search(raw):
                return True
    return False


def outlived_errors(free: list[Finding], effects: dict[int, int], ctx: Context) -> list[Finding]:
    """The findings of ``free`` (causes nothing explains) the job went on after (the
    module's docstring gives the rule), to be set aside when another finding of ``free`` is
    what at least :data:`MIN_PROCESSES` processes died of later. ``effects`` maps ``id`` of a
    finding to how many findings it explains; one that explains any is kept."""
    fatal = [f for f in free if f.evidence and _died_of(ctx, f) >= MIN_PROCESSES]
    if not fatal:
        return []
    out: list[Finding] = []
    for f in free:
        if f in fatal or f.rank is not None or not f.evidence or effects.get(id(f), 0):
            continue
        if _is_exception_line(ctx, f):
            continue
        path = f.evidence[0].path
        if any(e.path != path for e in f.evidence):
            continue
        last = max(e.line for e in f.evidence)
        for g in fatal:
            starts = sorted(e.line for e in g.evidence if e.path == path)
            if not starts or starts[0] <= last:
                continue
            shell = all(_SHELL_LINE.search(e.text) for e in f.evidence)
            if shell or _started_between(ctx, path, last, starts[0]):
                out.append(f)
                break
    return out
