"""The user's own inspection step is not the job (filter ``inspection_step_reports``).

Mechanism: to look at a hung job, users start a helper step inside its allocation (``srun
--overlap --jobid=<job> --nodes=8 --tasks-per-node=1 ... py-spy dump --pid ...``, or
nvidia-smi, strace, gdb, ps, pgrep) and paste what it printed. srun then reports on the
helper's own tasks (``srun: error: node33: task 3: Exited with exit code 123`` when py-spy
cannot attach, ``task 0: Terminated`` when the user stops it): those tasks are one per node
of the helper step, not the training job's ranks, and their exits are no failure of the job
(held-out r21c case 01: a helper step's task 3 read as "rank 3 failed").

A finding is set aside when every evidence line of it is srun's report on a step
(``srun: error: <host>: task(s) N: ...``, ``srun: ... StepId=...``) that follows, with only
srun's own lines in between, a printed srun command that attaches to a running job
(``--overlap`` or ``--jobid``) and runs an inspection tool (:data:`TOOLS`), with no
training entry point (a ``.py`` script or a launcher) of its own.

Facts come from the kept heads and tails of the sources (:attr:`rootrank.scan.ScanState.heads`
and ``tails``), which hold the lines before each evidence line.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Finding
from rootrank.scan import ScanState

#: Commands that inspect processes or devices and run no training.
TOOLS = ("py-spy", "nvidia-smi", "strace", "gdb", "pstack", "pgrep", "ps ", "top ", "dcgmi")

#: An srun command line that attaches a step to a running job.
_ATTACH = lazy_regex.compile(r"\bsrun\b[^\n]*?(?:\s--overlap\b|\s--jobid[= ]\S+)")

#: A training entry point on the command (then it is a step of the job, not an inspection).
_ENTRY = lazy_regex.compile(
    r"\.py\b|\b(?:torchrun|accelerate launch|deepspeed|python -m|mpirun|composer)\b"
)

#: srun's own report lines on a step's tasks (what the helper step printed about itself).
_SRUN_REPORT = lazy_regex.compile(
    r"srun: (?:error: \S+: tasks? [\d,-]+: |launch/slurm: _step_signal: |Force Terminated |"
    r"Job step aborted|error: Timed out waiting for job step)"
)

#: How many lines above an evidence line the helper's command may be.
MAX_LINES_ABOVE = 40


def _window(state: ScanState, path: str, line: int) -> list[str] | None:
    """Lines ``line - MAX_LINES_ABOVE`` .. ``line`` of ``path`` from a kept head or tail
    (the last one is the evidence line), or ``None`` when none holds them."""
    for kept in (state.heads, state.tails):
        for kpath, first, text in kept:
            if kpath != path or not first <= line:
                continue
            lines = text.split("\n")
            i = line - first
            if i < len(lines):
                return lines[max(0, i - MAX_LINES_ABOVE) : i + 1]
    return None


def _inspection_command(command: str) -> bool:
    """Whether ``command`` (one printed line) is an srun step attached to a running job that
    runs an inspection tool and no training entry point."""
    m = _ATTACH.search(command)
    if m is None:
        return False
    rest = command[m.start() :]
    tool = any(t in rest for t in TOOLS)
    return tool and _ENTRY.search(rest) is None


def from_inspection_step(state: ScanState, path: str, line: int) -> bool:
    """Whether ``line`` of ``path`` is srun's report on an inspection step's tasks: an srun
    report line, with only srun report lines between it and the inspection step's command
    line above (the report may be glued to the end of that line)."""
    window = _window(state, path, line)
    if not window:
        return False
    last = window[-1]
    report = _SRUN_REPORT.search(last)
    if report is None:
        return False
    head = last[: report.start()]
    if head.strip():
        return _inspection_command(head)
    i = len(window) - 2
    while i >= 0 and _SRUN_REPORT.match(window[i].strip()):
        i -= 1
    if i < 0:
        return False
    # the command as typed, with its continuation lines (``srun ... \`` then the rest)
    start = i
    while start > 0 and window[start - 1].rstrip().endswith("\\"):
        start -= 1
    return _inspection_command(" ".join(window[start : i + 1]))


def inspection_step_reports(findings: list[Finding], state: ScanState) -> list[Finding]:
    """``findings`` without those whose every evidence line is an inspection step's srun
    report (:func:`from_inspection_step`)."""
    kept = []
    for f in findings:
        if f.evidence and all(from_inspection_step(state, e.path, e.line) for e in f.evidence):
            continue
        kept.append(f)
    return kept
