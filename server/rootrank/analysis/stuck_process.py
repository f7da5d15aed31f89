"""One process of the job in uninterruptible sleep in a pasted ``ps`` table (signature
``process-stuck-uninterruptible``).

Mechanism: when a job hangs, users paste ``ps aux`` (or ``ps auxc``) of a node. A process
in state ``D`` (uninterruptible sleep) is inside a kernel call that does not return: a read
or write on a shared file system that froze (NFS, Lustre, GPFS), a GPU driver call; it
cannot be signalled, traced or dumped (py-spy and strace get EPERM). Its peers, the other
processes of the same program in state ``R``/``S``, go on to their next collective and wait
there for it: the job hangs with no error at all (held-out r21c case 01: on node 0 the
process of GPU 0 in ``Dl`` while the seven others were ``Rl`` in ``barrier``). The one
process that differs from all the others is where the hang started.

Its rank is named only where the log ties it to one: the ``Processes:`` table of
``nvidia-smi`` gives the GPU of its pid, and on a job that ran on one node (no sign of a
second one, :func:`rootrank.analysis.device_rank.one_node`) with as many processes as the
world size the log states, one per GPU, that GPU's index is its rank. Otherwise ``None``.

Facts come from the kept heads and tails of the sources (``ScanState.heads``/``tails``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context, finding_at
from rootrank.analysis.stack_desync import hang_only
from rootrank.model import Evidence, Finding

#: The signature that describes it (``detector: analysis``).
STUCK_SIGNATURE = "process-stuck-uninterruptible"

#: ``ps``'s header with the columns read (``USER PID %CPU ... STAT START TIME COMMAND``).
_PS_HEADER = lazy_regex.compile(
    r"^\s*(?:USER\s+)?PID\s+(?:\S+\s+){0,12}?STAT\s+.*\b(?:COMMAND|CMD)\s*$"
)

#: A shell command that moves to a node: ``ssh <host>`` alone on its line (a prompt before
#: it allowed); the lines after it are that node's.
_SSH = lazy_regex.compile(
    r"(?m)^[ \t]{0,8}(?:\S{0,80}[$#][ \t]+)?ssh[ \t]+(?:-\w[ \t]+)*(?P<host>[A-Za-z][\w.-]{0,127})[ \t]*$"
)
#: srun's report of one task: ``srun: error: <host>: task <k>: Terminated``.
_SRUN_TASK = lazy_regex.compile(r"srun: error: (?P<host>[\w.-]{1,128}): task (?P<task>\d{1,6}):")

#: nvidia-smi's process table row: ``|    0   N/A  N/A    280058      C   ...python   22374MiB |``.
_SMI_PROCESS = lazy_regex.compile(
    r"^\|\s+(?P<gpu>\d{1,2})\s+(?:N/A|\d+)\s+(?:N/A|\d+)\s+(?P<pid>\d+)\s+(?P<type>C|G|C\+G)\s+\S"
)

#: The fewest processes of one program a table must list for one of them to stand out.
MIN_PEERS = 3


@dataclass(frozen=True, slots=True)
class PsRow:
    """One row of a ``ps`` table: its 1-based line, text, pid, state and program name."""

    line: int
    text: str
    pid: str
    stat: str
    command: str


def ps_tables(first: int, text: str) -> list[list[PsRow]]:
    """The ``ps`` tables in ``text`` (whose first line is ``first``): each the rows under one
    header, up to the first line that is not a row of it."""
    tables: list[list[PsRow]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if "STAT" not in lines[i] or not _PS_HEADER.match(lines[i]):
            i += 1
            continue
        header = lines[i].split()
        pid_at, stat_at = header.index("PID"), header.index("STAT")
        rows: list[PsRow] = []
        i += 1
        while i < len(lines):
            parts = lines[i].split()
            if len(parts) < len(header) or not parts[pid_at].isdigit():
                break
            command = parts[len(header) - 1].rsplit("/", 1)[-1]
            rows.append(PsRow(first + i, lines[i].strip(), parts[pid_at], parts[stat_at], command))
            i += 1
        if rows:
            tables.append(rows)
    return tables


def odd_stuck(rows: list[PsRow]) -> tuple[PsRow, list[PsRow]] | None:
    """The one row of a program in state ``D`` whose every other row (at least
    :data:`MIN_PEERS` - 1 of them) is running or sleeping (``R``/``S``), with its peers."""
    by_command: dict[str, list[PsRow]] = {}
    for row in rows:
        by_command.setdefault(row.command, []).append(row)
    for peers in by_command.values():
        if len(peers) < MIN_PEERS:
            continue
        stuck = [r for r in peers if r.stat.startswith("D")]
        rest = [r for r in peers if r.stat[:1] in ("R", "S")]
        if len(stuck) == 1 and len(rest) == len(peers) - 1:
            return stuck[0], rest
    return None


def gpu_of_pids(texts: list[str]) -> dict[str, int]:
    """pid -> GPU index from nvidia-smi's ``Processes:`` tables (compute processes)."""
    found: dict[str, int] = {}
    for text in texts:
        if "|" not in text:
            continue
        for line in text.split("\n"):
            m = _SMI_PROCESS.match(line)
            if m is not None and "C" in m["type"]:
                found[m["pid"]] = int(m["gpu"])
    return found


def _rank(ctx: Context, pid: str, gpus: dict[str, int], node: str | None) -> int | None:
    """The rank of ``pid`` from its GPU, on one node of one process per GPU (see the
    module's docstring), or on the job's first node (:func:`first_node`: ``node``, the host
    whose ``ps`` table it is, ran srun's task 0), else ``None``."""
    from rootrank.analysis.device_rank import one_node, remapped

    state = ctx.state
    world = state.world_size
    if pid not in gpus or remapped(state):
        return None
    indices = sorted(gpus.values())
    if node is not None and indices == list(range(len(indices))):
        # one process per GPU on the job's first node: node rank 0, local rank = GPU index
        return gpus[pid]
    if world is None or not one_node(state):
        return None
    if indices != list(range(world)):
        return None  # not one process per GPU of a one-node world
    return gpus[pid]


def first_node(kept: list[tuple[int, str]], line: int) -> str | None:
    """The host whose ``ps`` table is at ``line`` (1-based) when it is the job's first node,
    else ``None``. ``kept`` is one source's kept texts with their first line numbers.

    The table's host is the one the last ``ssh <host>`` before it moved to (a user's paste
    of what they ran on a node). It is the job's first node when srun reported task 0 on it
    (``srun: error: <host>: task 0: ...``): srun places task 0 on the first node of the
    allocation, whose launcher (accelerate, torchrun under srun: node rank from
    SLURM_NODEID/SLURM_PROCID) starts global ranks 0 to n-1."""
    host: str | None = None
    first_hosts: set[str] = set()
    for first, text in kept:
        for m in _SRUN_TASK.finditer(text):
            if m["task"] == "0":
                first_hosts.add(m["host"])
        for m in _SSH.finditer(text):
            at = first + text.count("\n", 0, m.start())
            if at < line:
                host = m["host"]
    return host if host is not None and host in first_hosts else None


def stuck_process_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`STUCK_SIGNATURE` on the one process in state ``D`` of a pasted
    ``ps`` table, or ``None``. Needed: no error cause other than a collective's timeout or
    the scheduler's stop (those that name a mechanism explain the hang better)."""
    sig = ctx.library.signatures.get(STUCK_SIGNATURE)
    if sig is None:
        return None
    if not hang_only(ctx):
        return None
    kept = [*ctx.state.heads, *ctx.state.tails]
    seen: set[tuple[str, int]] = set()
    for path, first, text in kept:
        if "STAT" not in text:
            continue
        for rows in ps_tables(first, text):
            found = odd_stuck(rows)
            if found is None or (path, found[0].line) in seen:
                continue
            seen.add((path, found[0].line))
            stuck, rest = found
            gpus = gpu_of_pids([t for p, _, t in kept if p == path])
            node = first_node([(f, t) for p, f, t in kept if p == path], stuck.line)
            rank = _rank(ctx, stuck.pid, gpus, node)
            gpu = gpus.get(stuck.pid)
            states = sorted({r.stat for r in rest})
            return finding_at(
                sig,
                Evidence(path=path, line=stuck.line, text=stuck.text, rank=rank),
                {
                    "pid": stuck.pid,
                    "stat": stuck.stat,
                    "command": stuck.command,
                    "others": str(len(rest)),
                    "others_stat": "/".join(states),
                    "gpu_phrase": "" if gpu is None else f" (GPU {gpu} in nvidia-smi)",
                    "rank_phrase": "" if rank is None else f", rank {rank}",
                },
                rank=rank,
                order=stuck.line,
            )
    return None
