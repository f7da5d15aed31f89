"""A hang shown by stack dumps: the dumped processes wait in different collectives.

Mechanism: ``py-spy dump --pid P`` prints one process's Python stack, innermost frame first
(``Process 12354: python -u train.py``, then ``Thread 12354 (idle): "MainThread"`` and one
indented ``func (file.py:line)`` per frame). A hung job's dumps are per-process evidence:
the collective a process waits in is the innermost frame of torch.distributed or DeepSpeed's
comm whose function is a collective (:data:`rootrank.collective_names.COLLECTIVES`). Collectives
match by call order within a group, so when most processes wait in one collective and a
minority in another collective, or in none (a DataLoader wait, a sleep, Python work only
they do), the minority took another path: the others wait for a call it never makes, and
the job hangs with no error until a timeout or a person stops it. The class is
``collective-desync``; the odd process is the smallest group's, named by its pid, its host
(a ``Node 48:`` heading of the paste) and its rank when a line of the log pairs that pid with
a rank (``rank 2 pid 12354``); the fix starts at its own innermost user frame. When every
dumped process is in the same collective the dumps add nothing.

Pastes group identical stacks: several ``Thread`` headers over one stack, or a count heading
(``4 in:``, ``6 processes are in:``) over one header; each counts that many processes. Read
from the end of each source (``ScanState.tails``), where dumps are pasted.
"""

from __future__ import annotations

from dataclasses import dataclass

from rootrank import re_code
from rootrank.analysis.prepare import Context
from rootrank.model import Evidence, Finding

#: The signature it makes (``detector: analysis``).
STACK_SIGNATURE = "stack-dump-desync"
#: Where a frame's file is a communication layer (torch.distributed, DeepSpeed's comm).
_COMM_FILE = re_code.compile(r"(?:^|/)(?:torch/distributed/|deepspeed/comm/)")
#: Frames of the standard library or a library: not where the user's code diverged.
_LIBRARY_FILE = re_code.compile(
    r"(?:^|/)(?:torch|deepspeed|megatron|transformers|accelerate|site-packages|dist-packages)/"
    r"|(?:^|/)(?:threading|queue|selectors|socket|subprocess|multiprocessing/\w+|connection)\.py$"
)
#: py-spy's process header: ``Process 12354: /usr/bin/python -u train.py``.
_PROCESS = re_code.compile(r"^\s{0,4}Process (?P<pid>\d+): (?P<cmd>.*)$")
#: py-spy's thread header: ``Thread 12354 (idle): "MainThread"`` (id decimal or 0x hex).
_THREAD = re_code.compile(
    r'^\s{0,4}Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>[a-z+ ]{1,20})\): "(?P<name>[^"]*)"'
)
#: One frame: ``    all_reduce (torch/distributed/distributed_c10d.py:3252)``.
_FRAME = re_code.compile(
    r"^\s{2,12}(?P<func>[\w<>.\[\]-]{1,200}) \((?P<file>[^()\s][^()]{0,500}?):(?P<line>\d+)\)\s*$"
)
#: A paste's count heading over one stack: ``4 in:``, ``6 processes are in:``.
_COUNT = re_code.compile(
    r"(?i)^\s{0,4}(?P<n>\d{1,5}) (?:processes |procs |ranks )?(?:are )?in:?\s*$"
)
#: A paste's host heading: ``Node 48:``, ``node 49``, ``host gpu-3:``.
_HOST = re_code.compile(r"(?i)^\s{0,4}(?P<host>(?:node|host)\s+[\w.-]{1,64}):?\s*$")
#: A line of the log pairing a rank and a pid: ``rank 2 pid 12354`` / ``pid=12354 rank=2``.
_RANK_PID = re_code.compile(
    r"(?i)\brank[\s:=#]{1,3}(?P<rank>\d{1,6})\b.{0,80}?\bpid[\s:=#]{1,3}(?P<pid>\d{1,9})\b"
    r"|\bpid[\s:=#]{1,3}(?P<pid2>\d{1,9})\b.{0,80}?\brank[\s:=#]{1,3}(?P<rank2>\d{1,6})\b"
)


@dataclass
class Dumped:
    """One dumped stack: its thread header's line (``header``, 1-based, and text), the pid,
    host and weight (processes it stands for), ``frames`` innermost first as ``(func, file,
    line, log line, text)``."""

    pid: str
    header: int
    header_text: str
    host: str | None
    weight: int
    frames: list[tuple[str, str, int, int, str]]

    def collective(self) -> str:
        """The innermost collective it waits in, or ``"none"``."""
        from rootrank.collective_names import COLLECTIVES  # loaded for the logs with stacks

        for func, file, _ln, _at, _t in self.frames:
            name = func.rsplit(".", 1)[-1]
            if name in COLLECTIVES and _COMM_FILE.search(file.replace("\\", "/")):
                return name
        return "none"


def hang_only(ctx: Context) -> bool:
    """Whether the log's error causes are only a collective's timeout or desync and the
    scheduler's stop: a per-process snapshot (a stack dump, a ``ps`` table) then may say where
    the hang is; a cause that names a mechanism explains it better."""
    return not any(
        f.role == "cause"
        and f.severity == "error"
        and f.failure_class not in ("collective-timeout", "collective-desync")
        and ctx.kind(f) != "terminal"
        for f in ctx.findings
    )


def dumped_stacks(first: int, text: str) -> list[Dumped]:
    """The main-thread stacks a text holds (its first line is ``first``), in order; headers
    of one group (no frame between them) share one frame list. Threads other than
    ``MainThread`` under a ``Process`` header are left out (helpers, watchdogs). A count
    heading (``6 processes are in:``) over a single header is that header's weight."""
    out: list[Dumped] = []
    group: list[Dumped] = []  # the headers the frames read now belong to
    frames: list[tuple[str, str, int, int, str]] = []
    host: str | None = None
    count = heading = 0
    pid: str | None = None
    taking = False  # the frames read now are a main thread's
    for number, line in enumerate(text.split("\n"), start=first):
        frame = _FRAME.match(line)
        if frame is not None:
            if taking:
                frames.append(
                    (frame["func"], frame["file"], int(frame["line"]), number, line.strip())
                )
            continue
        if m := _PROCESS.match(line):
            pid, taking = m["pid"], False
        elif m := _THREAD.match(line):
            taking = m["name"] == "MainThread" or pid is None
            if not taking:
                continue
            if frames or not group:  # a new group starts, under the count heading read
                group, frames, heading, count = [], [], count, 0
            d = Dumped(pid or m["tid"], number, line.strip(), host, 1, frames)
            group.append(d)
            out.append(d)
            group[0].weight = heading if len(group) == 1 and heading > 1 else 1
            pid = None
        elif m := _COUNT.match(line):
            count = int(m["n"])
        elif m := _HOST.match(line):
            host = m["host"]
    return out


def _diverged(
    odd: list[tuple[str, str, int, int, str]], ref: list[tuple[str, str, int, int, str]]
) -> tuple[tuple[str, str, int, int, str], tuple[str, str, int, int, str]] | None:
    """Where the odd stack left the reference stack: read from the outermost frame inward,
    the first frame of the same function whose line differs (``main (train.py:17)`` against
    ``main (train.py:18)``), as ``(odd frame, reference frame)``; ``None`` when the outermost
    frames already differ (the paste cut them differently) or no frame differs."""
    if not odd or not ref or odd[-1][:2] != ref[-1][:2]:
        return None
    for a, b in zip(reversed(odd), reversed(ref), strict=False):
        if a[:2] != b[:2]:
            return None
        if a[2] != b[2]:
            return a, b
    return None


def _rank_of(ctx: Context, pid: str) -> int | None:
    """The rank a line of the log pairs with ``pid`` (``rank 2 pid 12354``), else ``None``."""
    for _path, _first, text in ctx.state.tails:
        for line in text.split("\n"):
            if pid not in line:
                continue
            m = _RANK_PID.search(line)
            if m is not None and (m["pid"] or m["pid2"]) == pid:
                return int(m["rank"] or m["rank2"])
    return None


def stack_desync_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`STACK_SIGNATURE` on the odd process of the stack dumps the log
    ends with, or ``None``.

    Needed, all of: no error cause other than a collective's timeout or the scheduler's stop
    (those that name a mechanism explain the hang better); in one source, at least three
    processes dumped (headers weighted by the paste's counts) in at least two groups by
    innermost collective, and one group strictly smaller than every other."""
    sig = ctx.library.signatures.get(STACK_SIGNATURE)
    if sig is None:
        return None
    if not hang_only(ctx):
        return None
    for path, first, text in ctx.state.tails:
        stacks = [d for d in dumped_stacks(first, text) if d.frames]
        groups: dict[str, list[Dumped]] = {}
        for d in stacks:
            groups.setdefault(d.collective(), []).append(d)
        sizes = {k: sum(d.weight for d in v) for k, v in groups.items()}
        if len(sizes) < 2 or sum(sizes.values()) < 3:
            continue
        ordered = sorted(sizes, key=lambda k: sizes[k])
        odd_key = ordered[0]
        if sizes[odd_key] == sizes[ordered[1]]:
            continue
        odd = groups[odd_key][0]
        others = ", ".join(f"{sizes[k]} in {k}" for k in ordered[1:][::-1])
        inner = odd.frames[0]
        user = next((f for f in odd.frames if not _LIBRARY_FILE.search(f[1])), inner)
        split = _diverged(odd.frames, groups[ordered[-1]][0].frames)
        if split is not None:
            user = split[0]
            site = f"{user[1]}:{user[2]} ({user[0]}), where the others are at {split[1][1]}:{split[1][2]}"
        else:
            site = f"{user[1]}:{user[2]} ({user[0]})"
        where = next(
            (
                f
                for f in odd.frames
                if f[0].rsplit(".", 1)[-1] not in ("wait", "get", "sleep")
                and not f[1].endswith(("threading.py", "queue.py", "selectors.py"))
            ),
            inner,
        )
        rank = _rank_of(ctx, odd.pid)
        pids = ", ".join(d.pid for d in groups[odd_key])
        evidence = [
            Evidence(path=path, line=odd.header, text=odd.header_text, rank=rank),
            Evidence(path=path, line=where[3], text=where[4], rank=rank),
        ]
        if user is not where:
            evidence.append(Evidence(path=path, line=user[3], text=user[4], rank=rank))
        return Finding.of(
            sig,
            rank=rank,
            host=odd.host,
            time=None,
            order=odd.header,
            evidence=evidence,
            captures={
                "pid": odd.pid,
                "pids": pids,
                "odd_count": str(sizes[odd_key]),
                "odd_collective": "no collective" if odd_key == "none" else odd_key,
                "odd_collective_phrase": "wait in no collective"
                if odd_key == "none"
                else f"wait in {odd_key}",
                "rank_phrase": "" if rank is None else f" (rank {rank})",
                "odd_frame": where[4],
                "user_frame": site,
                "others": others,
                "where": "" if odd.host is None else f" on {odd.host}",
            },
        )
    return None
