"""Whether a verification command can fail: a verify proves a fix only when its exit status
changes when the fix did not work.

A command that only displays a state (``df -h``, ``sacct -j <id> -o State``, ``dmesg | tail``,
``nvidia-smi -L | wc -l``) exits 0 whatever that state is, so a user (or a CI step) reading
"exit 0" learns nothing. :func:`cannot_fail` reads the shell command the way ``sh`` gives it
an exit status:

- ``a ; b``: ``b``'s status (only the last command counts);
- ``a || b``: fails only when both fail, so it cannot fail when either cannot;
- ``a && b``: fails when either fails, so it cannot fail only when both cannot;
- ``a | b``: ``b``'s status (no ``pipefail``);
- ``! a``: inverted, so it can fail.

The last command of a pipeline cannot fail when its program is in :data:`DISPLAY_ONLY`
(leading ``VAR=value`` assignments and ``sudo``/``time``/``timeout N``/``env`` wrappers are
skipped). The comment after ``  # `` (what to look for) is not part of the command. Pure
functions, no imports from the engine (the signature loader calls it).
"""

from __future__ import annotations

#: Programs that report a state and exit 0 whatever it is (given a valid invocation).
DISPLAY_ONLY = frozenset(
    {
        "df",
        "du",
        "sacct",
        "squeue",
        "sinfo",
        "scontrol",
        "free",
        "uptime",
        "echo",
        "printf",
        "date",
        "uname",
        "hostname",
        "whoami",
        "id",
        "true",
        ":",
        "ulimit",
        "dmesg",
        "journalctl",
        "head",
        "tail",
        "sort",
        "uniq",
        "wc",
        "column",
        "tee",
        "less",
        "more",
        "watch",
        "top",
        "htop",
        "nvtop",
        "lscpu",
        "lsblk",
    }
)

#: Wrappers whose own status is the wrapped program's (``timeout`` adds 124 on a timeout,
#: which still is the wrapped command's run).
_WRAPPERS = frozenset({"sudo", "time", "/usr/bin/time", "timeout", "nohup", "exec", "command"})


def _split(text: str, seps: tuple[str, ...]) -> list[str]:
    """``text`` split on any of ``seps`` outside quotes, ``$( )`` and backquotes."""
    out: list[str] = []
    cur: list[str] = []
    quote = ""
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
            cur.append(ch)
            i += 1
            continue
        if ch in "'\"`":
            quote = ch
        elif text.startswith("$(", i):
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        if not depth:
            sep = next((s for s in seps if text.startswith(s, i)), None)
            if sep is not None:
                out.append("".join(cur))
                cur = []
                i += len(sep)
                continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [part.strip() for part in out]


def _program(stage: str) -> tuple[str, bool]:
    """The program a pipeline stage runs (its base name) and whether it is negated (``!``)."""
    words = stage.split()
    negated = False
    while words:
        w = words[0]
        if w == "!":
            negated = True
        elif "=" in w and not w.startswith(("-", "=")) and w.split("=", 1)[0].isidentifier():
            pass  # VAR=value
        elif w in _WRAPPERS or w.rsplit("/", 1)[-1] in _WRAPPERS:
            if w.rsplit("/", 1)[-1] == "timeout" and len(words) > 1:
                words = words[1:]  # its duration
            while len(words) > 1 and words[1].startswith("-"):
                words = words[1:]  # the wrapper's own options (time -v, sudo -E)
        elif w == "env":
            pass
        else:
            return w.rsplit("/", 1)[-1], negated
        words = words[1:]
    return "", negated


#: Programs that look at processes and ports *now*: ``! ss ... | grep -q :29500`` (nothing
#: listens) is also true once the failed job itself has exited, so it proves no fix.
PROBES = frozenset({"ss", "netstat", "lsof", "fuser", "pgrep", "ps", "pidof", "nvidia-smi"})


def _absence_only(pipeline: str) -> str | None:
    """The probe of a negated pipeline (``! ss -ltn | grep -q :PORT``) that only checks
    that some process or listener is gone, else ``None``."""
    stages = [s for s in _split(pipeline, ("|",)) if s]
    if not stages:
        return None
    negated = any(_program(s)[1] for s in stages)
    first = _program(stages[0])[0]
    return first if negated and first in PROBES else None


def _pipeline_cannot_fail(pipeline: str) -> bool:
    stages = [s for s in _split(pipeline, ("|",)) if s]
    if not stages:
        return False
    program, negated = _program(stages[-1])
    return not negated and program in DISPLAY_ONLY


#: Characters a shell command has and an English sentence has not (flags, paths,
#: assignments, blanks, operators, quotes).
_COMMAND_MARKS = frozenset("-/=<>|&;$'\"`.:[]{}()*")


def _sentence(head: str) -> bool:
    """Whether ``head`` reads as prose, not a command: four or more words and none of the
    marks any real command line carries (``the Ray job completes with no errors``)."""
    words = head.split()
    return len(words) >= 4 and not any(ch in _COMMAND_MARKS for ch in head)


def cannot_fail(command: str) -> str | None:
    """Why ``command`` (a verify line, comment after ``  # `` allowed) exits 0 whatever
    happened, or is no command at all, or ``None`` when its status can show a failure.
    The reason names the program whose status is the command's."""
    head = command.partition("  # ")[0].strip()
    if not head or head.startswith("#"):
        return None
    if _sentence(head):
        return (
            "it is a sentence, not a command: no exit status says whether the fix worked"
            " (write the command to run, with <blanks> for what the log cannot tell)"
        )
    last = [s for s in _split(head, (";",)) if s]
    if not last:
        return None
    alternatives = _split(last[-1], ("||",))
    for alt in alternatives:
        parts = [p for p in _split(alt, ("&&",)) if p]
        if parts and all(_pipeline_cannot_fail(p) for p in parts):
            stages = [s for s in _split(parts[-1], ("|",)) if s]
            program = _program(stages[-1])[0]
            return (
                f"its exit status is {program!r}'s, which only displays a state and exits 0"
                " whether or not the fix worked: end it with a check that can fail"
                " (a rerun of the job, `test`, `grep -q`, `python -c 'assert ...'`)"
            )
        probe = _absence_only(parts[-1]) if parts else None
        if probe is not None and all(_absence_only(p) for p in parts):
            return (
                f"it only checks with {probe!r} that something is gone, which is also true once"
                " the failed job has exited: end it with a rerun of the job (or a check that"
                " the fix is in place)"
            )
    return None
