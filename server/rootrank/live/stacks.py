"""Every rank's Python stack, through py-spy (``rootrank run --on-stall dump``).

The processes are the job's own: the command rootrank started and all its descendants (read
from ``/proc``, Linux). Each Python process is dumped with ``py-spy dump --json --pid P``; its
rank is the ``RANK`` variable torchrun, DeepSpeed and accelerate put in each worker's
environment (``/proc/P/environ``). A process py-spy cannot attach to (no ptrace permission,
not Python, gone) is left out and the reason is kept in :attr:`StackDump.notes`.

py-spy comes from the ``live`` extra (``pip install '.[live]'`` in the clone); without it the dump
says so and the stall is still reported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rootrank.collective_names import COLLECTIVES

#: Seconds one ``py-spy dump`` may take.
DUMP_TIMEOUT = 20.0
#: Processes dumped at most (a node runs 8 ranks; agents and helpers come on top).
MAX_PROCESSES = 64


@dataclass
class RankStack:
    """One process's main-thread stack: ``frames`` innermost first, each
    ``{"func": str, "file": str, "line": int (1-based)}``; ``collective`` the collective it
    is inside (``"all_reduce"``) or None; ``where`` one phrase for the report."""

    pid: int
    rank: int | None
    frames: list[dict[str, Any]]
    collective: str | None
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "rank": self.rank,
            "collective": self.collective,
            "where": self.where,
            "frames": self.frames,
        }


@dataclass
class StackDump:
    """The stacks collected, and one note per process (or reason) that gave none."""

    stacks: list[RankStack] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def suspect(self) -> tuple[int | None, str]:
        """The only rank not inside a collective while the others are, and why."""
        ranked = [s for s in self.stacks if s.rank is not None]
        outside = [s for s in ranked if s.collective is None]
        inside = [s for s in ranked if s.collective is not None]
        if len(outside) == 1 and inside:
            s = outside[0]
            calls = sorted({i.collective for i in inside if i.collective})
            return (
                s.rank,
                f"rank {s.rank} is {s.where}, not in a collective, while the other ranks wait in {', '.join(calls)}",
            )
        return None, ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "stacks": [
                s.to_dict()
                for s in sorted(self.stacks, key=lambda s: (s.rank is None, s.rank or 0, s.pid))
            ],
            "notes": self.notes,
        }


def py_spy() -> str | None:
    """The py-spy executable: next to this Python (a venv's bin) or on ``PATH``."""
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return here if os.access(here, os.X_OK) else shutil.which("py-spy")


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (Linux ``/proc``; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo and len(out) < 10_000:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def rank_of(pid: int) -> int | None:
    """The ``RANK`` in a process's environment (torchrun, DeepSpeed, accelerate set it)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"RANK="):
            try:
                return int(item[5:])
            except ValueError:
                return None
    return None


def _is_python(pid: int) -> bool:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False
    return exe.startswith("python") or exe.startswith("pypy")


def _where(frames: list[dict[str, Any]]) -> tuple[str | None, str]:
    for i, f in enumerate(frames):
        path = f["file"].replace("\\", "/")
        if f["func"] in COLLECTIVES and ("torch/distributed" in path or "deepspeed/comm" in path):
            caller = next((c for c in frames[i + 1 :] if not _library_frame(c["file"])), None)
            at = (
                f" called from {caller['func']} ({caller['file']}:{caller['line']})"
                if caller
                else ""
            )
            return f["func"], f"in {f['func']}{at}"
    if not frames:
        return None, "in native code"
    f = frames[0]
    return None, f"in {f['func']} ({f['file']}:{f['line']})"


def _library_frame(path: str) -> bool:
    p = path.replace("\\", "/")
    return "site-packages/" in p or "dist-packages/" in p or "/lib/python3" in p


def dump_one(exe: str, pid: int) -> tuple[RankStack | None, str | None]:
    """One process's stack, or the reason there is none."""
    try:
        proc = subprocess.run(
            [exe, "dump", "--json", "--pid", str(pid)],
            capture_output=True,
            timeout=DUMP_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"pid {pid}: py-spy took longer than {DUMP_TIMEOUT:.0f} s"
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        why = err[0] if err else f"exit {proc.returncode}"
        if "ermission" in why or "ptrace" in why.lower():
            why = f"no permission to attach ({why}); run as the job's user with ptrace allowed (CAP_SYS_PTRACE)"
        return None, f"pid {pid}: {why}"
    try:
        threads = json.loads(proc.stdout)
    except ValueError:
        return None, f"pid {pid}: py-spy printed no JSON"
    main = next(
        (t for t in threads if t.get("os_thread_id") == pid), threads[0] if threads else None
    )
    if main is None:
        return None, f"pid {pid}: no Python thread"
    frames = [
        {"func": f.get("name", "?"), "file": f.get("filename", "?"), "line": f.get("line", 0)}
        for f in main.get("frames", [])
    ][:40]
    collective, where = _where(frames)
    return RankStack(pid, rank_of(pid), frames, collective, where), None


def dump_job(root: int) -> StackDump:
    """Dump every Python process of the job rooted at ``root`` (a pid)."""
    out = StackDump()
    exe = py_spy()
    if exe is None:
        from rootrank.extras import install_hint  # an error path only

        out.notes.append(
            f"py-spy is not installed, so no stacks were collected: {install_hint('live')}"
        )
        return out
    pids = [p for p in descendants(root) if _is_python(p)][:MAX_PROCESSES]
    if not pids:
        out.notes.append("no Python process found in the job")
        return out
    with ThreadPoolExecutor(max_workers=4) as pool:
        for stack, note in pool.map(lambda p: dump_one(exe, p), pids):
            if stack is not None:
                out.stacks.append(stack)
            if note:
                out.notes.append(note)
    return out
