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
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rootrank import launchers, lazy_regex
from rootrank.frameworks import stacks_of_paths
from rootrank.tracebacks import Frame, is_user_frame

# slurm-1234.out, slurm-1234-3.out (%j-%t), slurm-1234_7.out (array %A_%a), slurm-1234_7-3.err,
# compressed: slurm-1234.out.gz
_SLURM = lazy_regex.compile(
    r"^slurm-(?P<job>\d{1,20}(?:_\d{1,10})?)(?:-\d{1,6})?\.(?:out|err|log|txt)(?:\.(?:gz|zst|xz|bz2))?$"
)
# <run_id>/attempt_<k>/<local_rank>/(stdout|stderr).log|error.json
_ATTEMPT = lazy_regex.compile(r"^attempt_(?P<k>\d{1,6})$")
#: How many of the left-out runs :func:`pick_run` names in its note (the newest ones); the
#: rest are counted ("2,997 older runs and ...").
MAX_NAMED_RUNS = 5


@dataclass(frozen=True)
class RunKey:
    """The run a file belongs to: ``kind`` is ``"slurm"`` (``name`` = the job id, with the
    array task after ``_``) or ``"torchrun"`` (``name`` = the ``--log-dir`` run folder,
    ``attempt`` = the restart attempt, 0-based)."""

    kind: str
    name: str
    attempt: int = 0

    def label(self) -> str:
        """How the report names this run: ``SLURM job 1234``, ``torchrun run r1 attempt 2``,
        ``the job in dist-014/`` (a job's own subfolder: :func:`job_folders`)."""
        if self.kind == "slurm":
            return f"SLURM job {self.name}"
        if self.kind == "folder":
            return f"the job in {os.path.basename(self.name)}/"
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
    if key.kind == "folder":  # dist-014/ after dist-013/ when their times tie
        return tuple(int(x) for x in _DIGITS.findall(os.path.basename(key.name))[:4])
    return (key.attempt,)


#: Folder names that, numbers aside, name one run each (``job-1/``, ``run_07/``, ``exp3/``):
#: numbered folders of these words are separate jobs, where ``node01/``, ``rank0/`` are one
#: job's parts (new-user trial r19b finding 1).
RUN_FOLDER_WORDS = frozenset(
    {"job", "jobs", "run", "runs", "exp", "experiment", "trial", "sweep", "test", "try"}
)


def job_folders(files: list[str], root: str) -> dict[str, RunKey]:
    """The job each of ``files`` (log files found under the folder ``root``, that carry no
    SLURM or torchrun run key) belongs to when ``root``'s subfolders are separate jobs'
    folders, keyed by the file; ``{}`` when they are not.

    An archive of jobs keeps each job in its own folder (``fleet/dist-013-ecc/input.log``,
    ``fleet/torch-02-bad-data/input.log``); one job keeps its nodes' or ranks' files in
    folders whose names differ by numbers only (``node01/``, ``node02/``; ``rank0/``,
    ``rank1/``). The first-level subfolders are separate jobs when, numbers taken away, their
    names fall into :data:`UNRELATED_NAMES` or more different names (as
    :func:`unrelated_names` reads file names), or are numbered folders of a word that names
    a run (:data:`RUN_FOLDER_WORDS`: ``job-1/``, ``job-2/``). Files directly in ``root`` belong to no job
    folder and are not keyed (they stay beside whichever job is diagnosed, as files with no
    run key do). New-user trial r18 finding 5b: a folder of 28 job folders was read as one
    job and its root cause joined two jobs' ranks."""
    tops: dict[str, list[str]] = {}
    for f in files:
        parts = os.path.relpath(f, root).split(os.sep)
        if len(parts) > 1 and parts[0] not in (os.curdir, os.pardir):
            tops.setdefault(parts[0], []).append(f)
    stems = {_DIGITS.sub("#", name.lower()) for name in tops}
    words = {stem.strip("#-_.").replace("#", "").strip("-_.") for stem in stems}
    runs_named = len(tops) > 1 and bool(words) and words <= RUN_FOLDER_WORDS
    if len(stems) < UNRELATED_NAMES and not runs_named:
        return {}
    return {f: RunKey("folder", os.path.join(root, top)) for top, fs in tops.items() for f in fs}


def pick_run(
    files: list[str],
    mtime: Callable[[str], float] = os.path.getmtime,
    size: Callable[[str], int] | None = None,
    root: str | None = None,
) -> tuple[list[str], str | None]:
    """Keep the files of the newest run of ``files`` (paths of one folder, in order).

    Returns ``(kept, note)``: ``kept`` are the files of the newest run plus the files with no
    run key, in their original order; ``note`` is one sentence naming the runs left out, or
    ``None`` when ``files`` hold at most one run. Runs of different kinds (SLURM jobs and
    torchrun attempts side by side) are compared by modification time alone. ``mtime`` gives a
    file's modification time in seconds (``os.path.getmtime``; a file that cannot be statted
    counts as oldest).

    ``size`` (bytes of a file, ``os.path.getsize``; ``None``: not asked) passes over a run
    whose files are all empty when another run wrote something: torchrun creates a restart
    attempt's ``stdout.log``/``stderr.log`` when it starts the workers, so an attempt that is
    stuck in its rendezvous (or was just started) is the newest run and holds 0 bytes, while
    the attempt before it holds the failure that caused the restart. The note then names the
    empty run as passed over. ``rootrank diagnose`` asks; ``watch`` does not (the empty
    attempt is where the next output will appear).

    ``root`` (the folder ``files`` were found in; ``None``: not asked) keys the files that
    carry no run key by their job's own subfolder when the subfolders are separate jobs
    (:func:`job_folders`)."""
    keys: dict[str, RunKey | None] = {f: run_key(f) for f in files}
    if root is not None:
        keys.update(job_folders([f for f, k in keys.items() if k is None], root))
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

    candidates = list(runs)
    empty: list[RunKey] = []
    if size is not None:

        def _bytes(f: str) -> int:
            try:
                return size(f)
            except OSError:
                return 0

        written = [k for k in runs if any(_bytes(f) > 0 for f in runs[k])]
        if written:
            empty = [k for k in runs if k not in written]
            candidates = written
    chosen = max(candidates, key=newest)
    # the empty runs newer than the one diagnosed are named apart from the older ones
    unborn = [k for k in empty if newest(k) > newest(chosen)]
    others = sorted((k for k in runs if k != chosen and k not in unborn), key=newest)
    kept = [f for f in files if keys[f] is None or keys[f] == chosen]
    shown = [k.label() for k in others[-MAX_NAMED_RUNS:]]  # the newest of the others
    more = len(others) - len(shown)
    left = (f"{more:,} older runs and " if more else "") + ", ".join(shown)
    if unborn:
        names = " and ".join(k.label() for k in unborn)
        verb = "has" if len(unborn) == 1 else "have"
        head = (
            f"the folder holds {len(runs)} runs: diagnosed {chosen.label()}, the newest that"
            f" wrote anything ({names}, newer, {verb} no output yet: empty files)"
        )
    else:
        head = f"the folder holds {len(runs)} runs: diagnosed {chosen.label()} (the newest)"
    note = head + (
        f"; left out {left} (name their files to diagnose them, or `rootrank triage` the folder"
        " for every run)"
        if others
        else ""
    )
    return kept, note


# --- One file, several sections: a relaunch of the job, or another node of the same run? ---
#
# ``cat node1.log node0.log > all.log`` (or a batch system writing each node's output one
# after the other) puts a second torchrun agent's start banner after the first node's
# failure, where a relaunch after a failure (``tee -a``, a requeue) puts its own. The banner
# alone cannot tell them apart; what the two sections show can: a node holds other global
# ranks than its peer (``rank - local_rank`` is ``node_rank * nproc_per_node`` in torchelastic's
# summary), on another host, at the same time; a relaunch holds the same ranks again, later.


@dataclass
class SectionFacts:
    """What one section of a file (the lines between two run starts) showed about who wrote
    it, gathered by the scanner (rootrank.scan) from the lines it reads.

    ``ranks``: global ranks its lines carry (rank prefixes, torchelastic's summary);
    ``offsets``: ``global rank - local rank`` where a line or summary entry gives both (the
    node's first global rank under torchrun); ``hosts``: host names its lines or summary
    entries give; ``first_time`` / ``last_time``: the earliest and latest timestamp on its
    lines, seconds (rootrank.ranks.parse_time), ``None`` when none is timed."""

    ranks: set[int] = field(default_factory=set)
    offsets: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    first_time: float | None = None
    last_time: float | None = None
    #: The 1-based line the section begins at.
    start: int = 1
    #: How the section's run was launched (:func:`launch_identity` of its command line), if
    #: printed.
    launch: str | None = None
    #: The world size its lines print (``world_size=8``, NCCL's ``nranks 8``), if any.
    world: int | None = None
    #: Why its run is complete (it ended: progress at its total, the Trainer's end-of-run
    #: summary), or ``None``.
    ended: str | None = None
    #: The entry script the section names (torchelastic's ``x.py FAILED`` title, a printed
    #: launch command: rootrank.scan.LaunchFacts.script), if any.
    script: str | None = None
    #: The launch command the section prints (rootrank.scan.LaunchFacts.command), if any.
    command: str | None = None
    #: The pids of the torchrun agents whose own lines (glog headers of
    #: ``torch/distributed/...`` lines: the start banner, closing signals, failures) it holds.
    agents: set[str] = field(default_factory=set)
    #: The entry scripts (file names) its tracebacks began in (:func:`entry_script`).
    entries: set[str] = field(default_factory=set)
    #: The user-code files (file names, rootrank.tracebacks.is_user_frame) its traceback
    #: frames ran through.
    user_files: set[str] = field(default_factory=set)
    #: The inference engines (:data:`ENGINES`) whose package its traceback frames ran through.
    engines: set[str] = field(default_factory=set)
    #: The stacks (rootrank.frameworks.STACK_NAMES) its lines name (the words of the gated
    #: lines, rootrank.scan): the diagnosed run's own, when the file holds other jobs.
    stacks: set[str] = field(default_factory=set)
    #: The Python environments (:func:`python_env`: a frame's path up to its
    #: ``site-packages``/``dist-packages`` folder) its traceback frames ran from.
    envs: set[str] = field(default_factory=set)
    #: The time of its first and of its last timed line in the order they were read (s), for
    #: :func:`time_jump` between sections (``first_time``/``last_time`` are the extremes).
    opened_at: float | None = None
    closed_at: float | None = None

    def see_traceback(self, exc_type: str, frames: list[Frame]) -> None:
        """Add one traceback's process identity: its entry script, the user files and the
        engine packages its frames run through. ``exc_type`` is its exception's type
        (``""`` for a traceback the log cut)."""
        entry = entry_script(exc_type, frames)
        if entry is not None:
            self.entries.add(entry)
        self.envs.update(e for e in map(python_env, (f.file for f in frames)) if e)
        if exc_type.endswith(REPORT_EXCEPTIONS):
            return  # a wrapper's report of the run: its frames are the wrapper's, not the job's
        self.user_files.update(_script_name(f.file) for f in frames if f.user)
        self.engines |= stacks_of_paths(f.file for f in frames) & set(ENGINES)

    def see(
        self,
        rank: int | None,
        local_rank: int | None = None,
        host: str | None = None,
        time: float | None = None,
    ) -> None:
        """Add one line's (or one summary entry's) rank, local rank, host and time."""
        if rank is not None:
            self.ranks.add(rank)
            if local_rank is not None and rank >= local_rank:
                self.offsets.add(rank - local_rank)
        if host:
            self.hosts.add(host)
        if time is not None:
            if self.opened_at is None:
                self.opened_at = time
            self.closed_at = time
            if self.first_time is None or time < self.first_time:
                self.first_time = time
            if self.last_time is None or time > self.last_time:
                self.last_time = time

    def merge(self, other: SectionFacts) -> None:
        """Fold ``other`` (another node's section of the same run) into this one."""
        self.ranks |= other.ranks
        self.offsets |= other.offsets
        self.hosts |= other.hosts
        self.agents |= other.agents
        self.entries |= other.entries
        self.user_files |= other.user_files
        self.engines |= other.engines
        self.stacks |= other.stacks
        self.envs |= other.envs
        for t in (other.first_time, other.last_time):
            if t is not None:
                self.see(None, time=t)
        self.world = max(self.world or 0, other.world or 0) or None
        self.launch = self.launch or other.launch
        self.script = self.script or other.script
        self.command = self.command or other.command
        self.start = min(self.start, other.start)


#: A folder whose files bear at least this many names that differ by more than numbers
#: holds separate jobs more likely than one job's per-rank files (see :func:`unrelated_names`).
UNRELATED_NAMES = 3
_DIGITS = lazy_regex.compile(r"\d+")
#: Names a job's own folder holds beside its per-rank files (torchrun's per-rank streams and
#: error file): no sign of another job.
_COMPANIONS = frozenset({"stdout", "stderr", "error", "out", "err", "log", "output"})


def unrelated_names(files: list[str], folder: str = "DIR") -> str | None:
    """One sentence when the log ``files`` (the files of the ``folder``, as :func:`pick_run`
    kept them) look like separate jobs rather than one job's files, else ``None``.

    One job's files differ by numbers only (``rank0.log``, ``rank1.log``;
    ``slurm-42-0.out``; ``node01.log``), or are its launcher's companions (``stdout.log``,
    ``stderr.log``, ``error.json``). A folder whose names, numbers and suffixes taken away,
    still fall into :data:`UNRELATED_NAMES` or more different names (``dist-001-nccl-shm.log``,
    ``dist-013-ecc.log``, ``torch-02-bad-data.log``) is an archive of jobs, which the reader
    would take for one job's files (new-user trial r17 finding 2: a flat folder of 27 jobs' logs
    came out as one diagnosis, the others silently dropped)."""
    stems: dict[str, str] = {}
    for f in files:
        name = os.path.basename(f).lower()
        for suffix in (".gz", ".zst", ".xz"):
            name = name.removesuffix(suffix)
        stem = _DIGITS.sub("#", name.rsplit(".", 1)[0]) if "." in name else name
        if stem.strip("#-_.") in _COMPANIONS:
            continue
        stems.setdefault(stem, os.path.basename(f))
    if len(stems) < UNRELATED_NAMES:
        return None
    shown = ", ".join(list(stems.values())[:3]) + (", ..." if len(stems) > 3 else "")
    return (
        f"its {len(files):,} log files bear {len(stems):,} unrelated names ({shown}) and were "
        "read as the files of one job; if they are separate jobs, `rootrank triage` with the "
        f"files named (`rootrank triage {folder.rstrip('/')}/*`) diagnoses each"
    )


def another_node(earlier: SectionFacts, later: SectionFacts) -> str | None:
    """Why ``later`` (a section that began with a run's start banner after ``earlier`` had
    failed) is another node's output of the same run rather than a relaunch, as a clause for
    the report; ``None`` when the log does not show it (then it is a relaunch, as before).

    Two sections timed more than an hour apart (:func:`_apart`) did not run at once: never
    two nodes. A global rank in both sections is one process started twice: a relaunch. Otherwise the
    later section is another node when its lines are timed before the earlier section's last
    line (the two ran at once), or when both sections name their ranks and either their node
    offsets (``rank - local_rank``) or their hosts differ (another node rank, another
    machine). Disjoint ranks alone are not enough: a relaunch where a different rank failed
    shows different ranks too.

    Before all that: when the earlier section holds the lines of two or more torchrun agents
    (their glog headers' pids) and every agent of the later section is one of them, the later
    section's agent was already running while the earlier one's failed: two agents of one run
    (``--nnodes=2``, both started from one terminal or one script), whose workers' lines
    interleave, so each section shows the other's ranks too. A relaunch is a new agent
    process; one agent's pid repeating (a restarted container) is not two agents.

    Likewise when each section holds a different torchrun agent and the later agent's first
    line (its start banner) is timed before the earlier section's last line: a relaunch's
    agent starts after the failed one has exited, so the two agents ran at once, as the two
    nodes of a ``--nnodes=2`` run whose outputs were concatenated (``cat node0.log
    node1.log``: node 0's ranks 0-1, then node 1's ranks 2-3 of one world of 4)."""
    if _apart(earlier, later):
        return None  # timed hours apart: not at once, so not two nodes of one run
    if len(earlier.agents) > 1 and later.agents and later.agents <= earlier.agents:
        pids = ", ".join(sorted(later.agents))
        return (
            f"its torchrun agent (pid {pids}) had printed its own lines before the earlier "
            "section ended: two agents of one run ran at once"
        )
    if (
        earlier.agents
        and later.agents
        and not earlier.agents & later.agents
        and _ran_at_once(earlier, later)
    ):
        # checked before the shared ranks: torchrun's ``[defaultN]:`` tee prefix is the local
        # rank, which the other node's lines repeat (node 1's ``[default1]`` beside node 0's
        # rank 1), so two nodes seem to share ranks (heldout r19b case 06)
        pids = ", ".join(sorted(later.agents))
        return (
            f"its torchrun agent (pid {pids}) started while the earlier section's agent "
            f"(pid {', '.join(sorted(earlier.agents))}) was still running: two agents of one run"
        )
    if earlier.ranks & later.ranks:
        return None
    if _ran_at_once(earlier, later):
        return "its lines are timed while the earlier section's node was still running"
    if not (earlier.ranks and later.ranks):
        return None
    if earlier.offsets and later.offsets:
        if earlier.offsets & later.offsets:
            return None  # the same node rank again
        return (
            f"it holds global ranks {_span(later.ranks)} of another node; "
            f"the earlier section held {_span(earlier.ranks)}"
        )
    if earlier.hosts and later.hosts and not (earlier.hosts & later.hosts):
        return (
            f"it holds global ranks {_span(later.ranks)} on another host; "
            f"the earlier section held {_span(earlier.ranks)}"
        )
    return None


#: Seconds between two sections' timed lines beyond which they did not run at once: two
#: nodes of one run print within the same minutes, even with clocks apart or a node's
#: section holding only its last lines.
APART_S = 3600.0


#: Seconds forward between a section's latest timed line and a line after its failure beyond
#: which that line is a later launch's (a requeue, a retry the next day, another job appended
#: with ``tee -a``): no rank of one run prints a day after the run failed.
LATER_LAUNCH_S = 86400.0
#: Seconds back beyond which a line is another job's, not the failed section's: two loggers of
#: one job may print in different time zones (glog in UTC, Python logging in local time;
#: new-user fleet logs), and zones differ by at most 26 h (UTC-12 to UTC+14).
EARLIER_JOB_S = 2 * 86400.0
#: rootrank.ranks.parse_time reads a timestamp in a fixed year: a step back of more than this
#: many seconds is the year turning (31 December, then 1 January), a step forward.
_YEAR_TURN_S = 180 * 86400.0
_YEAR_S = 366 * 86400.0


def time_jump(last: float | None, time: float | None) -> tuple[bool, str] | None:
    """Whether a line timed ``time`` (seconds, rootrank.ranks.parse_time), printed after a
    section that failed and whose latest timed line is ``last``, begins another launch:
    ``(True, why)`` when it is timed more than :data:`EARLIER_JOB_S` before ``last`` (the clock went
    back: a job that ran before, appended after: never a restart, which runs after the failed
    attempt), ``(False, why)`` when it is more than :data:`LATER_LAUNCH_S` after it (a later
    launch, a relaunch of the same job or another: the scan's other reasons tell), ``None``
    otherwise (the ranks of one run print within minutes of each other, whatever their
    clocks' skew). ``why`` is a clause about the earlier section for the report."""
    if time is None or last is None:
        return None
    delta = time - last
    if delta < -_YEAR_TURN_S:
        delta += _YEAR_S
    if delta < -EARLIER_JOB_S:
        return True, (
            f"its lines are timed {-delta / 86400:,.0f} days after the next run's first timed "
            "line (line times went back: a restart runs after the attempt that failed)"
        )
    if delta > LATER_LAUNCH_S:
        return False, f"the next run's lines are timed {delta / 86400:,.0f} days after its last"
    return None


def _apart(earlier: SectionFacts, later: SectionFacts) -> bool:
    """Whether both sections are timed and their spans are more than :data:`APART_S` apart
    (one wholly before the other): not two nodes of one run (two jobs' logs concatenated,
    perhaps out of order, months apart)."""
    if None in (earlier.first_time, earlier.last_time, later.first_time):
        return False
    e0, e1 = earlier.first_time or 0.0, earlier.last_time or 0.0
    l0 = later.first_time or 0.0
    l1 = later.last_time if later.last_time is not None else l0
    return l1 < e0 - APART_S or l0 > e1 + APART_S


def _ran_at_once(earlier: SectionFacts, later: SectionFacts) -> bool:
    """Whether ``later`` began before ``earlier``'s last timed line, the two not
    :func:`_apart` (two nodes of one run print at once)."""
    if earlier.last_time is None or later.first_time is None:
        return False
    return later.first_time < earlier.last_time and not _apart(earlier, later)


def summary_nodes(
    earlier: list[tuple[int | None, int | None]],
    later: list[tuple[int | None, int | None]],
    seen_before: set[int],
) -> str | None:
    """Why a torchelastic failure summary after another one is a second node's agent of the
    same run rather than a relaunch's, as a clause for the report; ``None`` when the two
    summaries do not show it. ``earlier`` and ``later`` are the ``(global rank, local rank)``
    pairs of the entries of the summaries before and after the cut (every summary of the run
    so far for ``earlier``).

    Mechanism: each torchrun agent of a multi-node run prints one summary of its own workers,
    whose global ranks are ``node offset + local rank`` (the offset is
    ``node_rank * nproc_per_node``). Two agents writing to one terminal (``--nnodes=2``, both
    started from one script) print two summaries one after the other, with different offsets
    and disjoint ranks. A relaunch of the job prints its summary for the same node again (the
    same offset), or, when both nodes write to the terminal, after the summaries of every node
    of the attempt before (so ``earlier``, holding them all, shares its offset). The section
    between them shares ranks with the earlier one only because the nodes' lines interleave,
    which is why :func:`another_node`'s "a rank in both sections" does not apply here.

    ``seen_before`` are the global ranks the lines before the cut carry (the lines the scan
    read: a rank prefix, a traceback's): a rank of the later summary must be among them,
    printing while the earlier node still ran (the two nodes' workers ran at once). A
    relaunch whose rendezvous gave this terminal's node another node rank shows only its own
    node's ranks before the cut."""

    def split(entries: list[tuple[int | None, int | None]]) -> tuple[set[int], set[int]]:
        ranks = {r for r, _ in entries if r is not None}
        offsets = {r - lr for r, lr in entries if r is not None and lr is not None and r >= lr}
        return ranks, offsets

    ranks_e, off_e = split(earlier)
    ranks_l, off_l = split(later)
    if not (off_e and off_l) or off_e & off_l or ranks_e & ranks_l:
        return None
    if not ranks_l & seen_before:
        return None
    return (
        f"torchrun's failure summary after it names global ranks {_span(ranks_l)} of another "
        f"node, the one before it {_span(ranks_e)}: two agents of one run, each reporting its "
        "own workers"
    )


def _span(ranks: set[int]) -> str:
    s = sorted(ranks)
    if len(s) > 2 and s[-1] - s[0] == len(s) - 1:
        return f"{s[0]}-{s[-1]}"
    return ", ".join(str(r) for r in s)


# --- One file, several different jobs (``cat job1.log job2.log``) ---------------------------
#
# A relaunch of the same job (after a failure, ``tee -a``) is an attempt of one run; a section
# launched another way is another job: its failure is not a restart's, its ranks and world are
# not this run's. The README's rule for folders holds for one file too: the newest (last) run
# is diagnosed, and the report names the others.

# A launcher command: the launcher, its own options, then the script (or -m module); what
# follows the script is the script's arguments (a batch size changed on a relaunch is the
# same job).
_LAUNCH = lazy_regex.compile(
    r"(?P<launcher>" + launchers.ANY + r")(?P<opts>(?:\s+(?!\S+\.py\b)\S+){0,40}?)"
    r"\s+(?P<script>\S+\.py|-m\s+[\w.]+)\b"
)
# Options that differ between the nodes of one run (or between two submissions of one job).
_NODE_OPTIONS = lazy_regex.compile(
    r"^--?(?:node[_-]rank|master[_-]addr|master[_-]port|rdzv[_-](?:endpoint|id)|machine[_-]rank"
    r"|main[_-]process[_-](?:ip|port)|hostfile|host|H)(?:=\S*)?$"
)


def launch_identity(command: str | None) -> str | None:
    """How ``command`` (a printed launcher command line) launches the job: the launcher, its
    options and the script, with the node-specific options (``--node-rank``, the rendezvous
    endpoint, the master address and port) and the script's own arguments left out, spaces
    collapsed; ``None`` when ``command`` is no launcher command."""
    if not command:
        return None
    m = _LAUNCH.search(command)
    if m is None:
        return None
    opts: list[str] = []
    words = m.group("opts").split()
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if _NODE_OPTIONS.match(w):
            skip = "=" not in w
            continue
        opts.append(w)
    launcher = " ".join(m.group("launcher").split())
    script = " ".join(m.group("script").split())
    return " ".join([launcher, *opts, script])


def launch_parts(command: str | None) -> tuple[str, str] | None:
    """``(launcher, script)`` of ``command`` (a launcher command line): the launcher as
    typed (``torchrun``, ``python3``, ``accelerate launch``), spaces collapsed, and the
    entry script (``train.py``, ``-m pkg.mod``); ``None`` when ``command`` is no launcher
    command."""
    m = _LAUNCH.search(command) if command else None
    if m is None:
        return None
    return " ".join(m.group("launcher").split()), " ".join(m.group("script").split())


#: Exceptions a wrapper or launcher raises about the run it started (not a job of its own).
REPORT_EXCEPTIONS = ("CalledProcessError", "ChildFailedError", "SystemExit")
#: Path parts of launchers' own entry files (their tracebacks are reports of the run).
LAUNCHER_FILES = (
    "/bin/torchrun",
    "torch/distributed/",
    "/bin/deepspeed",
    "deepspeed/launcher/",
    "/bin/accelerate",
    "accelerate/commands/",
    "composer/cli/",
)
#: Inference engines whose processes run the engine's own code only (rootrank.frameworks
#: stack names): vLLM's worker and engine-core processes, SGLang's schedulers, LMDeploy's
#: TurboMind workers execute the package's loops, never a user's script.
ENGINES = ("vllm", "sglang", "lmdeploy")


def entry_script(exc_type: str, frames: list[Frame]) -> str | None:
    """The file name of the script a traceback's process was started with: its outermost
    frame, a ``.py`` file at ``<module>`` in the user's code, unless the exception is a
    launcher's or wrapper's report of the run (:data:`REPORT_EXCEPTIONS`) or the file is a
    launcher's own (:data:`LAUNCHER_FILES`). ``None`` when the traceback does not show it
    (cut above its first frame, ``python -m``'s runpy frames, ``<string>``, a library's
    worker entry such as Ray's ``default_worker.py``)."""
    if not frames or exc_type.endswith(REPORT_EXCEPTIONS):
        return None
    first = frames[0]
    path = first.file.replace("\\", "/")
    if first.func != "<module>" or not path.endswith(".py") or not is_user_frame(path):
        return None
    if any(part in path for part in LAUNCHER_FILES):
        return None
    return _script_name(path)


# A frame's library root: the interpreter's or virtualenv's package folder.
_ENV_ROOT = lazy_regex.compile(r"^(?P<env>.*?/(?:site|dist)-packages)/")


def python_env(path: str) -> str | None:
    """The Python environment a traceback frame's file ``path`` belongs to: the path up to and
    including its ``site-packages`` (``dist-packages`` on Debian's Python) folder
    (``/work/.venv/lib/python3.11/site-packages``), backslashes read as ``/``; ``None`` for a
    file outside one (the user's script, the standard library).

    Mechanism: a relaunch of a job (a retry loop, a requeue, ``--max-restarts``) starts the
    same interpreter with the same environment, so its library frames carry the same
    ``site-packages`` root; another job (another machine, container or virtualenv, another
    Python version) carries another."""
    m = _ENV_ROOT.match(path.replace("\\", "/"))
    return m["env"] if m else None


def other_env(earlier: SectionFacts, later: SectionFacts) -> str | None:
    """Why ``later`` is another job than ``earlier`` by the Python environments their
    traceback frames ran from (:func:`python_env`), as a clause about ``earlier``; ``None``
    unless both sections show one and none is in both. A relaunch (a retry loop, a requeue,
    torchrun's restarts) runs the same interpreter, so even a script of the same name in
    another environment is another job."""
    if not (earlier.envs and later.envs) or earlier.envs & later.envs:
        return None
    return (
        f"its tracebacks ran Python from {', '.join(sorted(earlier.envs))}, the next run's "
        f"from {', '.join(sorted(later.envs))} (a relaunch runs in the same environment)"
    )


def other_process(earlier: SectionFacts, later: SectionFacts) -> str | None:
    """Why ``later`` is another job than ``earlier`` by what ran in them, as a clause about
    ``earlier``; ``None`` when their tracebacks do not show it. A relaunch reruns the same
    program: its tracebacks start at the same entry script and run through the same user
    code. Another job:

    - their tracebacks began in different entry scripts (no script in both: ``a.py`` then
      ``b.py``);
    - one section's tracebacks ran only an inference engine's code (:data:`ENGINES`: a vLLM
      worker's ``vllm/worker/...`` frames, no user file), the other's a user's script with no
      engine frame at all (``train.py`` under torchrun: its frames, or the script its
      launcher names, torchelastic's ``train.py FAILED``). An engine's worker processes run
      its package's loops only; a training script that uses the engine shows its own frames
      under the engine's, so a section with user frames and engine frames is not this case.

    - both sections' tracebacks ran a script of the same name, but no Python environment
      (:func:`python_env`) is in both (``/work/.venv/.../python3.11/site-packages`` then
      ``/root/miniconda3/.../python3.12/site-packages``): a relaunch runs in the same one.

    Sections that share an entry script or a user file are never told apart here."""
    if earlier.entries and later.entries and not earlier.entries & later.entries:
        return (
            f"it ran {', '.join(sorted(earlier.entries))}, "
            f"the next run {', '.join(sorted(later.entries))}"
        )
    if earlier.entries & later.entries or earlier.user_files & later.user_files:
        # a script of the same name: another job only when it ran in another environment
        return other_env(earlier, later)
    for engine_side, user_side, first in ((earlier, later, True), (later, earlier, False)):
        if (
            engine_side.engines
            and not engine_side.user_files
            and (user_side.user_files or user_side.script)
            and not user_side.engines
        ):
            engine = "/".join(sorted(engine_side.engines))
            named = user_side.entries or user_side.user_files or {str(user_side.script)}
            script = ", ".join(sorted(named))
            only = f"only {engine}'s engine code (no script of the user's)"
            if first:
                return f"its processes ran {only}, the next run {script}"
            return f"it ran {script}, the next run {only}"
    return None


# A failed subprocess's command as Python's subprocess module reports it
# (``subprocess.CalledProcessError: Command '['python', 'tools/x.py', 'a.csv']' returned
# non-zero exit status 1.``, the same text in check_call/check_output/run(check=True)).
_CHILD_COMMAND = lazy_regex.compile(
    r"CalledProcessError: Command (?P<cmd>.+?) returned non-zero exit status"
)


def child_script(entries: set[str], text: str) -> str | None:
    """The entry script of ``entries`` (file names, :func:`entry_script`) that a failed
    subprocess's command in ``text`` names (:data:`_CHILD_COMMAND`), or ``None``.

    Mechanism: a job that runs a script as a child (``subprocess.run([...], check=True)``)
    lets the child's stderr through unprefixed, so the child's traceback reads like another
    program's; the parent's CalledProcessError then names the child's command. A traceback
    from a script that command names is the job's own child, printed inside the job, not a
    new launch."""
    if not entries:
        return None
    for m in _CHILD_COMMAND.finditer(text):
        words = set(re.findall(r"[\w.-]+\.py", m["cmd"]))
        named = entries & {w.rsplit("/", 1)[-1] for w in words}
        if named:
            return min(named)
    return None


def separate_run(earlier: SectionFacts, later: SectionFacts) -> str | None:
    """Why ``later`` (a section that began with a run start) is another job than ``earlier``
    rather than a relaunch or another node of it, as a clause about ``earlier`` (the run the
    report leaves out: "it ran x.py, the next run y.py"); ``None`` when
    the log does not show it. Another job: ``earlier`` ran to its end (a complete run, so a
    run after it is no restart of it), or the two were launched differently (another script,
    other launcher options), or they name different entry scripts (torchelastic's ``x.py
    FAILED`` titles: a relaunch reruns the same script), or they print different world sizes
    (a rank of ``earlier`` at or past ``later``'s world size counts too), or their tracebacks
    show other programs (:func:`other_process`: another entry script, an inference engine's
    processes against a user's script, another Python environment), or else ``later``'s first
    timed line is more than :data:`EARLIER_JOB_S` before ``earlier``'s last, in the order read
    (:func:`time_jump`: the clock went back, so ``later`` ran before, appended after: a restart
    runs after the failure)."""
    if earlier.ended:
        return f"it ended ({earlier.ended}) before the next run started"
    other = different_program(earlier, later)
    if other is None and (jump := time_jump(earlier.closed_at, later.opened_at)) and jump[0]:
        return jump[1]
    return other


def different_program(earlier: SectionFacts, later: SectionFacts) -> str | None:
    """Why ``later`` runs another program than ``earlier`` (:func:`separate_run`'s reasons but
    the end of ``earlier`` and a clock that went back): another launch, entry script, world
    size or Python environment (:func:`other_env`), or tracebacks of other programs. Two nodes of one run never differ so (:func:`another_node` is asked only when
    this finds nothing: new-user trial r20 finding 1, two jobs' logs concatenated were taken
    for two nodes of one run)."""
    if earlier.launch and later.launch and earlier.launch != later.launch:
        return f"it was launched as `{earlier.launch}`, the next run as `{later.launch}`"
    if (
        earlier.script
        and later.script
        and _script_name(earlier.script) != _script_name(later.script)
    ):
        return f"it ran {earlier.script}, the next run {later.script}"
    if earlier.world and later.world and earlier.world != later.world:
        return f"its world size is {earlier.world}, the next run's {later.world}"
    if later.world and earlier.ranks and max(earlier.ranks) >= later.world:
        return f"it had rank {max(earlier.ranks)}, past the next run's world size {later.world}"
    if earlier.world and later.ranks and max(later.ranks) >= earlier.world:
        return f"its world size is {earlier.world}, and the next run has rank {max(later.ranks)}"
    if launched_alike(earlier, later):
        # the same launch and script: another job still when it ran in another environment
        return other_env(earlier, later)
    return other_process(earlier, later)


def launched_alike(earlier: SectionFacts, later: SectionFacts) -> bool:
    """Whether both sections print how they were launched (a command line, or entry scripts
    torchelastic's summaries name) and it is the same (:func:`separate_run` found no
    difference): the same program, whatever process a traceback came from (a script may
    start a helper of its own, ``subprocess.run([sys.executable, "prep.py"])``, whose
    traceback begins in another file)."""
    return bool((earlier.launch and later.launch) or (earlier.script and later.script))


def _script_name(script: str) -> str:
    """The file name of an entry script as a launcher names it (``scenarios/train.py`` and
    ``./train.py`` are one script run from two folders; ``-m pkg.mod`` stays as it is)."""
    return script.replace("\\", "/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class OtherRun:
    """A run of one file left out of its diagnosis (:func:`separate_run`): its 1-based lines
    ``start``..``end``, its launch (if printed) and why it is another run."""

    start: int
    end: int
    launch: str | None
    why: str

    def label(self) -> str:
        """``the run at lines 1-40 (`torchrun --nproc-per-node=8 a.py`)``."""
        how = f" (`{self.launch}`)" if self.launch else ""
        return f"the run at lines {self.start}-{self.end}{how}"
