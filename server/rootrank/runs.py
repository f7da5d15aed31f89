"""Which run each file of a folder belongs to, so one diagnosis never mixes two runs.

A folder users point rootrank at often holds more than one run: SLURM writes
``slurm-<jobid>.out`` (or ``slurm-<jobid>-<task>.out`` with ``--output=slurm-%j-%t.out``) into
the submit directory for every job, and torchrun's ``--log-dir`` keeps one
``<run_id>/attempt_<k>/<local_rank>/{stdout,stderr}.log`` tree per run and per restart attempt
(``torch.distributed.elastic.multiprocessing`` log layout,
https://pytorch.org/docs/stable/elastic/run.html). Diagnosing all of them at once would take
the root cause of an old job for the current one.

:func:`pick_run` keeps the files of the newest run (by the newest modification time among its
files; the larger job id or attempt number on a tie), plus every file that carries no run
key, and says in one sentence what it left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from rootrank import lazy_regex

# slurm-1234.out, slurm-1234-3.out (%j-%t), slurm-1234_7.out (array %A_%a), slurm-1234_7-3.err,
# compressed: slurm-1234.out.gz
_SLURM = lazy_regex.compile(
    r"^slurm-(?P<job>\d{1,20}(?:_\d{1,10})?)(?:-\d{1,6})?\.(?:out|err|log|txt)(?:\.(?:gz|zst|xz))?$"
)
# <run_id>/attempt_<k>/<local_rank>/(stdout|stderr).log|error.json
_ATTEMPT = lazy_regex.compile(r"^attempt_(?P<k>\d{1,6})$")


@dataclass(frozen=True)
class RunKey:
    """The run a file belongs to: ``kind`` is ``"slurm"`` (``name`` = the job id, with the
    array task after ``_``) or ``"torchrun"`` (``name`` = the ``--log-dir`` run folder,
    ``attempt`` = the restart attempt, 0-based)."""

    kind: str
    name: str
    attempt: int = 0

    def label(self) -> str:
        """How the report names this run: ``SLURM job 1234``, ``torchrun run r1 attempt 2``."""
        if self.kind == "slurm":
            return f"SLURM job {self.name}"
        return f"torchrun run {os.path.basename(self.name)} attempt {self.attempt}"


def run_key(path: str) -> RunKey | None:
    """The run ``path`` belongs to, from its name and folders; ``None`` when they carry none."""
    name = os.path.basename(path)
    m = _SLURM.match(name)
    if m:
        return RunKey("slurm", m["job"])
    parts = os.path.normpath(path).split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        a = _ATTEMPT.match(parts[i])
        if a:
            return RunKey("torchrun", os.sep.join(parts[:i]), int(a["k"]))
    return None


def _job_order(key: RunKey) -> tuple[int, ...]:
    if key.kind == "slurm":
        return tuple(int(x) for x in key.name.split("_"))
    return (key.attempt,)


def pick_run(
    files: list[str], mtime: Callable[[str], float] = os.path.getmtime
) -> tuple[list[str], str | None]:
    """Keep the files of the newest run of ``files`` (paths of one folder, in order).

    Returns ``(kept, note)``: ``kept`` are the files of the newest run plus the files with no
    run key, in their original order; ``note`` is one sentence naming the runs left out, or
    ``None`` when ``files`` hold at most one run. Runs of different kinds (SLURM jobs and
    torchrun attempts side by side) are compared by modification time alone. ``mtime`` gives a
    file's modification time in seconds (``os.path.getmtime``; a file that cannot be statted
    counts as oldest)."""
    keys = {f: run_key(f) for f in files}
    runs: dict[RunKey, list[str]] = {}
    for f, k in keys.items():
        if k is not None:
            runs.setdefault(k, []).append(f)
    if len(runs) <= 1:
        return files, None

    def newest(k: RunKey) -> tuple[float, tuple[int, ...]]:
        times = []
        for f in runs[k]:
            try:
                times.append(mtime(f))
            except OSError:
                times.append(float("-inf"))
        return (max(times), _job_order(k))

    chosen = max(runs, key=newest)
    others = sorted((k for k in runs if k != chosen), key=newest)
    kept = [f for f in files if keys[f] is None or keys[f] == chosen]
    left = ", ".join(k.label() for k in others)
    note = (
        f"the folder holds {len(runs)} runs: diagnosed {chosen.label()} (the newest); "
        f"left out {left} (name their files to diagnose them)"
    )
    return kept, note
