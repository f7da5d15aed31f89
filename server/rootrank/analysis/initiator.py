"""Step 4: the initiating rank, from ordered strategies.

Each strategy reads the root cause, its group (the findings of the same signature) and the
scan, and returns a :class:`Verdict` (a rank and its reason), an undecided verdict (ranks
differ and the log does not tell which one started: no rank is named), or ``None`` (it
does not apply). The first verdict wins; the others are run too, to report which
strategies agree (confidence) and which ranks were candidates. A wrong rank costs a user
more than no rank, so a strategy that cannot tell says so.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rootrank import lazy_regex, regex_code
from rootrank.analysis.blamed_peer import blaming_reports
from rootrank.analysis.compare import lacking_keys, lone_submitter, odd_in_table, odd_one_out
from rootrank.analysis.events import (
    ABORT_CODES,
    SIGNAL_CODES,
    _task_ids,
    launcher_exits,
    of_kind,
    real_exit,
    signals_from_outside,
)
from rootrank.analysis.group_world import default_group_world, shape_group_size
from rootrank.analysis.host_library import unloadable_library
from rootrank.analysis.lock_holder import lock_holder
from rootrank.analysis.peer_wait import awaited_from_peers, own_fault_elsewhere
from rootrank.analysis.prepare import Context
from rootrank.analysis.reasons import fmt_span, fmt_time, format_ranks, ranks_word, say
from rootrank.analysis.sole_failure import sole_launcher_failure
from rootrank.model import Finding, InitiatorInfo
from rootrank.ranks import ElasticFailure
from rootrank.scan import ScanState
from rootrank.signatures import Library


@dataclass(frozen=True, slots=True)
class Verdict:
    """A strategy's answer: ``rank`` (``None`` with ``undecided`` when ranks differ and the
    log does not tell), the reason, the strategy's name and the ranks it considered."""

    rank: int | None
    why: str
    strategy: str
    candidates: tuple[int, ...] = ()
    undecided: bool = False


@dataclass
class Initiator:
    """The outcome: the chosen verdict, the strategies that agree with it, and every
    candidate rank any strategy named."""

    rank: int | None
    why: str
    strategy: str | None
    agreeing: list[str] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)

    def info(self) -> InitiatorInfo:
        """The diagnosis's ``initiator`` (the contract's Initiator)."""
        return InitiatorInfo(
            rank=self.rank,
            strategy=self.strategy,
            why=self.why,
            candidates=sorted(self.candidates),
            agreeing=list(self.agreeing),
        )


@dataclass
class Case:
    """What the strategies look at."""

    ctx: Context
    root: Finding
    group: list[Finding]

    @property
    def ranks_with(self) -> list[int]:
        return sorted({f.rank for f in self.group if f.rank is not None})


Strategy = Callable[[Case], Verdict | None]


#: slurmstepd's step/job kill message (src/slurmd/slurmstepd/req.c, mgr.c): ``*** STEP
#: 2403450.1 ON nid006239 CANCELLED AT 2026-05-27T00:26:27 DUE TO TIME LIMIT ***``, also ``DUE
#: TO PREEMPTION``, ``DUE TO NODE FAILURE`` or none (scancel); not ``DUE TO TASK FAILURE``
#: (srun's teardown after a task's own bad exit, which a rank started).
_SCHEDULER_KILL = lazy_regex.compile(
    r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?! DUE TO TASK FAILURE)"
)


def scheduler_kill(case: Case) -> Verdict | None:
    """A root that is the scheduler's own kill of the job or step (slurmstepd's ``CANCELLED
    AT ... DUE TO TIME LIMIT``) has no initiating rank: the scheduler stopped every task at
    once. srun ``--label`` prefixes slurmstepd's step message with the task stream it came
    through (`` 0: [...] error: *** STEP ...``), and that label is no rank's doing."""
    if case.root.role != "cause" or not case.root.evidence:
        return None
    if not all(_SCHEDULER_KILL.search(ev.text) for ev in case.root.evidence):
        return None
    ranks = tuple(case.ranks_with)
    return Verdict(None, say("scheduler_kill"), "scheduler_kill", ranks, True)


def named_together(case: Case) -> Verdict | None:
    """A message that names several faulty ranks at once (``Ranks 4, 5 failed to pass
    monitoredBarrier``) does not say which one started."""
    raw = case.root.captures.get("ranks", "")
    suspects = sorted({int(x) for x in _DIGITS.findall(raw)}) if raw else []
    if len(suspects) > 1:
        return Verdict(
            None,
            say("named_together", ranks=format_ranks(suspects)),
            "named_together",
            tuple(suspects),
            True,
        )
    return None


def odd_in_rank_table(case: Case) -> Verdict | None:
    """The root's own message prints a table keyed by rank (``param checksums per rank:
    {0: -1.19, 1: -1.19, 2: -1.19, 3: -2.61}``) in which one rank's value stands alone
    (:func:`~rootrank.analysis.compare.odd_in_table`): that rank diverged, and the rank
    that raised is only the detector of the script's own cross-rank check."""
    for finding in (case.root, *case.group):
        for ev in finding.evidence:
            found = odd_in_table(ev.text)
            if found is None:
                continue
            rank, value, majority = found
            why = say("odd_in_table", rank=rank, value=value, majority=majority)
            return Verdict(rank, why, "odd_in_rank_table", (rank,))
    return None


def named_in_message(case: Case) -> Verdict | None:
    """The failure's own messages name the rank at fault (``[missing ranks: 1]``, ``Stalled
    ranks: 6: [...]``, captured as ``ranks``), whoever printed them: the one rank they name,
    across every copy of the message (a coordinator's copies carry its own line rank, which
    only reported them). Several named ranks are left to :func:`named_together`."""
    named = {int(x) for f in case.group for x in _DIGITS.findall(f.captures.get("ranks", ""))}
    if not named:
        return awaited_root_rank(case)
    if len(named) != 1:
        return None
    rank = named.pop()
    return Verdict(rank, say("named_in_message", rank=rank), "named_in_message", (rank,))


def awaited_root_rank(case: Case) -> Verdict | None:
    """The rank whose store key the waiting ranks never got, when their message names it as
    a group rank that is also the global rank: ProcessGroupNCCL's ``[7] is setting up NCCL
    communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0',
    but store->get('0') got error: wait timeout after 600000ms`` (captures ``waiting_rank``,
    ``root_rank``, ``keys``).

    Mechanism: the root rank of a communicator (its group rank 0) creates the ncclUniqueId
    and writes it to the store; every other member blocks in ``store->get`` until it is
    there. A timeout there says the root never reached the communicator's creation (it was
    stuck, dead or on another code path), so the message names the rank the others waited
    for, not the printing rank, which only waited. The numbers in ``[..]`` are ranks within
    the process group: the named root is that global rank when the group is the default one
    (``default_pg`` in the key) or when the waiting rank's group rank equals its own global
    rank (a sorted group whose rank N is global rank N holds global ranks 0..N, so its rank
    0 is global rank 0). Every copy of the message must name the same root."""
    named: set[int] = set()
    for f in case.group:
        root, waiting = f.captures.get("root_rank", ""), f.captures.get("waiting_rank", "")
        if not root.isdigit():
            continue
        default = "default_pg" in f.captures.get("keys", "")
        if not (default or (waiting.isdigit() and f.rank is not None and int(waiting) == f.rank)):
            return None  # a subgroup's rank 0 may be any global rank
        named.add(int(root))
    if len(named) != 1:
        return None
    rank = named.pop()
    if rank in case.ranks_with:
        return None  # the named rank waited too: it is no writer the others missed
    waiters = ranks_word(case.ranks_with).capitalize() if case.ranks_with else "The other ranks"
    why = say("awaited_root_rank", rank=rank, Waiters=waiters)
    return Verdict(rank, why, "named_in_message", (rank,))


#: One collective's fingerprint as ProcessGroupWrapper prints it (c10d ProcessGroupWrapper.cpp,
#: ``CollectiveFingerPrint``'s operator<<): ``CollectiveFingerPrint(SequenceNumber=485,
#: OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, ...``.
_FINGERPRINT = lazy_regex.compile(
    r"CollectiveFingerPrint\(SequenceNumber=\d+,?\s*OpType=(?P<op>[A-Z_]+), "
    r"TensorShape=\[(?P<shape>[^\]]*)\], TensorDtypes=(?P<dtype>\w+)"
)
#: The collectives every rank of a data-parallel step runs on its floating-point gradients or
#: parameters (DDP's bucket all-reduce in backward, FSDP/ZeRO's reduce-scatter and all-gather).
STEP_OPS = frozenset(
    {"ALLREDUCE", "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE", "ALLGATHER", "_ALLGATHER_BASE"}
)
FLOAT_DTYPES = frozenset({"Float", "Half", "BFloat16", "Double"})


def _elements(shape: str) -> int:
    """The element count of a fingerprint's ``TensorShape`` list (``"25"``, ``"4, 1024"``;
    ``""`` a scalar: 1); 0 when it is not a list of sizes (several tensors' shapes)."""
    dims = [d.strip() for d in shape.split(",")] if shape.strip() else []
    if not all(d.isdigit() for d in dims):
        return 0
    n = 1
    for d in dims:
        n *= int(d)
    return n


def object_broadcast_rank(case: Case) -> Verdict | None:
    """In a fingerprint mismatch between two ranks (ProcessGroupWrapper's "Rank 1 is running
    collective: CollectiveFingerPrint(...ALLREDUCE, TensorShape=[25], TensorDtypes=Float...),
    but Rank 0 is running collective: CollectiveFingerPrint(...BROADCAST, TensorShape=[1],
    TensorDtypes=Long...)"), the rank running a BROADCAST of a few int64s while the other runs
    a step's collective on a floating-point tensor of more than one element (:data:`STEP_OPS`;
    a scalar's all-reduce is a loss or metric sync, no gradient bucket) is the rank that left
    the common path.

    Mechanism: ``broadcast_object_list`` (torch/distributed/distributed_c10d.py) first
    broadcasts the pickled objects' sizes, ``torch.empty(len(object_list), dtype=torch.long)``
    from ``src``: a BROADCAST of shape ``[n]``, dtype Long. It is called by code that shares
    an object from one rank (a checkpoint's metadata, a ``run_on_main``/rank-0 step), while an
    ALLREDUCE/REDUCE_SCATTER/ALLGATHER of Float tensors is the training step every rank runs
    (DDP's gradient buckets in backward). The rank in the object broadcast is on that side
    path when its peer is already in the step; a peer that also broadcasts, or two step
    collectives, tell nothing. Every copy of the message must name the same rank."""
    named: set[int] = set()
    for f in case.group:
        self_rank, peer_rank = f.captures.get("self_rank", ""), f.captures.get("peer_rank", "")
        if not (self_rank.isdigit() and peer_rank.isdigit()) or not f.evidence:
            continue
        fps = list(_FINGERPRINT.finditer(f.evidence[0].text))
        if len(fps) < 2:
            continue
        for me, fp, other in ((int(self_rank), fps[0], fps[1]), (int(peer_rank), fps[1], fps[0])):
            if (
                fp["op"] == "BROADCAST"
                and fp["dtype"] == "Long"
                and fp["shape"].strip().isdigit()
                and other["op"] in STEP_OPS
                and other["dtype"] in FLOAT_DTYPES
                and _elements(other["shape"]) > 1
            ):
                named.add(me)
    if len(named) != 1:
        return None
    rank = named.pop()
    return Verdict(rank, say("object_broadcast_rank", rank=rank), "object_broadcast_rank", (rank,))


def missing_from_ready(case: Case) -> Verdict | None:
    """A report that lists the ranks that *did* submit a collective (Horovod's stall
    inspector: ``allreduce.conv1.weight [ready ranks: 1, 7, 5, 4, 6, 0]``) names the missing
    ones by their absence: ranks ``0..top`` not in the list, where ``top`` is the highest
    rank the log shows. One missing rank is the one the others wait for; several say the
    log cannot tell which one started."""
    lists = [f.captures["ready"] for f in case.group if f.captures.get("ready")]
    if not lists:
        return None
    sets = [
        frozenset(int(x) for x in _DIGITS.findall(m))
        for f in case.group
        for m in [f.captures.get("ready", "")]
        + regex_code.findall(r"\[ready ranks: ([\d, ]+)\]", f.captures.get("stalled_more", ""))
    ]
    lone = lone_submitter(sets)
    if lone is not None:
        others = sorted(set().union(*sets) - {lone})
        why = say("lone_submitter", rank=lone, others=format_ranks(others))
        return Verdict(lone, why, "missing_from_ready", (lone,))
    ready = {int(x) for x in _DIGITS.findall(lists[0])}
    top = max(ready | case.ctx.known_ranks())
    missing = sorted(set(range(top + 1)) - ready)
    if len(missing) == 1:
        return Verdict(
            missing[0],
            say("missing_from_ready", rank=missing[0], ready=format_ranks(sorted(ready))),
            "missing_from_ready",
            (missing[0],),
        )
    if missing:
        return Verdict(
            None,
            say("named_together", ranks=format_ranks(missing)),
            "missing_from_ready",
            tuple(missing),
            True,
        )
    return None


#: The failure class whose values a rank prints of itself (its own loss): the rank whose
#: value went non-finite first is read from the curves (:func:`first_nonfinite`).
NONFINITE_CLASS = "nan-or-fp16-overflow"


def first_nonfinite(case: Case) -> Verdict | None:
    """For a non-finite loss: the one rank whose own series of a metric went NaN/Inf at a step
    where every other rank printing that metric still had a finite value (its series goes on
    to that step or later, non-finite only after it, or never). A rank's local loss is
    computed from its own batch before any collective, so the first rank to print it
    non-finite is where the NaN entered; the all-reduced values (a global loss, a gradient
    norm) turn non-finite on every rank at once and tell nothing, and so does a guard that
    raised on whichever rank runs it. Every metric name read this way must name the same
    rank (or none)."""
    if case.root.failure_class != NONFINITE_CLASS:
        return None
    by_name: dict[str, dict[int, Any]] = {}
    for (name, rank), series in case.ctx.state.metrics.series.items():
        if rank is not None and series.last is not None:
            by_name.setdefault(name, {})[rank] = series
    found: dict[int, tuple[str, int]] = {}
    for name, ranks in sorted(by_name.items()):
        if len(ranks) < 2:
            continue
        bad = {
            r: min(o.point.step for o in s.onsets if o.kind == "metric-nonfinite")
            for r, s in ranks.items()
            if any(o.kind == "metric-nonfinite" for o in s.onsets)
        }
        if not bad:
            continue
        step = min(bad.values())
        first = [r for r, at in bad.items() if at == step]
        if len(first) != 1:
            continue
        others = [s for r, s in ranks.items() if r != first[0]]
        if all(s.last.step >= step for s in others):
            found.setdefault(first[0], (name, step))
    if len(found) != 1:
        return lone_nonfinite_print(case) if not found else None
    rank, (name, step) = next(iter(found.items()))
    return Verdict(
        rank,
        say("first_nonfinite", rank=rank, name=name, step=step),
        "first_nonfinite",
        (rank,),
    )


#: A rank's own line that prints a loss non-finite in words or as a value: ``local loss is
#: inf``, ``loss=nan``, ``train loss: -inf`` (the name, then at most 24 characters, then
#: ``is``/``=``/``:`` and the non-finite token).
_NONFINITE_LOSS = lazy_regex.compile(
    r"(?i)\b(?P<name>(?:[a-z]\w*[ _])?loss)\b[^\n=:]{0,24}?(?:\bis\b|=|:)\s*[-+]?(?:nan|inf(?:inity)?)\b"
)


#: A rank's own number at the start of its line's body: ``rank=1 step=17``, ``[rank 1] ...``.
_OWN_RANK = lazy_regex.compile(r"\[?rank[ =:#]?(\d{1,6})\b")


def lone_nonfinite_print(case: Case) -> Verdict | None:
    """The one rank that printed its own loss non-finite (``rank=1 step=17 WARNING local loss
    is inf``) when no other rank printed a non-finite loss: the value entered there, and the
    error every rank raised after the all-reduce (clip_grad_norm_'s ``total norm ... is
    non-finite`` on every rank: the reduced gradients carry rank 1's inf) only followed
    (heldout r19d case 06). The fallback of :func:`first_nonfinite` when no metric series
    turns non-finite: a warning in words is no ``key=value`` point, and a rank's stdout line
    may reach the console after the tracebacks (``--tee``'s two pipes).

    Read from the kept tail of the one source (``ScanState.tails``), tagged with a
    :class:`~rootrank.ranks.RankTagger` of its own, after the scan: the per-line path pays
    nothing. Indented lines (a traceback's frames) and exception lines are passed over."""
    st = case.ctx.state
    if len(st.tails) != 1:
        return None
    path, first, text = st.tails[0]
    if "inf" not in text.lower() and "nan" not in text.lower():
        return None
    from rootrank.ranks import RankTagger

    tagger = RankTagger(path=path)
    tagger.learn_user_tags(text)
    printed: dict[tuple[int | None, int | None], tuple[int, str, str]] = {}
    for i, raw in enumerate(text.split("\n")):
        low = raw.lower()
        if "loss" not in low or ("inf" not in low and "nan" not in low):
            continue
        tagged = tagger.tag(raw, first + i)
        body = tagged.text
        if not body or body[0] in " \t" or "Error" in body:
            continue
        m = _NONFINITE_LOSS.search(body)
        if m is None:
            continue
        rank = tagged.rank
        if rank is None:  # a launcher's local prefix: the rank's own ``rank=1`` at the start
            own = _OWN_RANK.match(body)
            rank = int(own.group(1)) if own is not None else None
        # a printer whose global rank is unknown still counts (by its local tag or line
        # prefix): two printers of a non-finite loss name no one
        who = (rank, None) if rank is not None else (None, tagged.local_rank)
        printed.setdefault(who, (first + i, m.group("name"), body.strip()))
    if len(printed) != 1:
        return None
    (((rank, _local), (line, name, body)),) = printed.items()
    if rank is None:
        return None
    why = say("lone_nonfinite", rank=rank, name=name, where=f"{path}:{line}", text=body)
    return Verdict(rank, why, "first_nonfinite", (rank,))


def phase_marker(case: Case) -> Verdict | None:
    """For a collective desync the root names no rank for (the ranks waited in different
    calls), the one rank whose own line says it entered validation or evaluation
    (:func:`rootrank.analysis.phase.phase_rank`): it left the training step first and its
    next phase's collectives met the others' gradient all-reduces."""
    if case.root.failure_class != "collective-desync" or case.root.rank is not None:
        return None
    from rootrank.analysis.phase import phase_rank

    found = phase_rank(case.ctx)
    if found is None:
        return None
    rank, path, line, text = found
    why = say("phase_line", rank=rank, where=f"{path}:{line}", text=text[:120])
    return Verdict(rank, why, "phase_marker", (rank,))


def same_step_everywhere(case: Case) -> Verdict | None:
    """A training-curve onset that several ranks showed at the same step (or that the other
    ranks were already heading into: :func:`rootrank.metrics.onset_findings`) has a cause
    common to every rank, such as the learning rate: no rank started it, whichever rank's
    guard then exited first (a race the launcher's summary only records)."""
    raw = case.root.captures.get("same_step_ranks", "")
    ranks = sorted({int(x) for x in _DIGITS.findall(raw)}) if raw else []
    if len(ranks) > 1:
        return Verdict(
            None,
            say("same_step", ranks=format_ranks(ranks), step=case.root.captures.get("step", "?")),
            "same_step_everywhere",
            tuple(ranks),
            True,
        )
    return None


#: Collectives that may complete on one rank before another issued them (a root sends
#: before its receivers arrive; a send completes without the peer's later work).
_ROOTED_OPS = frozenset(
    {"BROADCAST", "REDUCE", "SCATTER", "GATHER", "SEND", "RECV", "RECVANYSOURCE"}
)


def _timed_out_work(f: Finding) -> int | None:
    """The work (SeqNum) a watchdog report timed out in: its ``timeout_work`` capture, else
    its ``seqnum``; ``None`` when it names none."""
    raw = f.captures.get("timeout_work") or f.captures.get("seqnum") or ""
    return int(raw) if raw.isdigit() else None


def behind_in_completed_work(case: Case) -> Verdict | None:
    """The watchdog's PG status (``failure detected by watchdog at work sequence id: 137429
    PG status: last enqueued work: 137429, last completed work: 137428``; 2.4's ``Timeout at
    NCCL work: N, ... last completed NCCL work: M``) says how far each rank got. A symmetric
    collective (all-reduce, all-gather, reduce-scatter) completes on a rank only after every
    member of the group issued it, so when rank B of the same process group completed the
    very work rank A timed out in, and A also enqueued nothing after it while B went on (A's
    ``last enqueued`` is lower), A is the rank the others wait for: its host side stopped.
    The single such rank of one group is the initiator; two or more say nothing. Not when A's
    timed-out op is a rooted or point-to-point one (a broadcast's root completes before its
    receivers), nor when both ranks enqueued as far (the host went on; the transport stalled).
    Ranks whose reports name no group are compared only within :data:`MAX_SEQNUM_LAG`
    collectives (further apart they may count different groups). Nor when the two ranks wait
    in different operations (A in an ALLREDUCE, B in a BROADCAST): their command streams
    diverged, so B's completed work need not be the call A waits in, and the counters name
    no straggler."""
    from rootrank.analysis.compare import MAX_SEQNUM_LAG

    def number(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.lstrip("-").isdigit() else None

    reports: dict[int, tuple[str | None, int, int | None, int | None, str]] = {}
    for f in case.group:
        work = _timed_out_work(f)
        if f.rank is None or work is None:
            continue
        reports.setdefault(
            f.rank,
            (
                f.captures.get("pg"),
                work,
                number(f, "last_completed"),
                number(f, "last_enqueued"),
                f.captures.get("optype", "").upper(),
            ),
        )
    behind: list[tuple[int, int, str, int]] = []
    for rank, (pg, work, _done, queued, op) in reports.items():
        if op in _ROOTED_OPS:
            continue
        for peer, (peer_pg, peer_work, peer_done, peer_queued, peer_op) in reports.items():
            if peer == rank or peer_done is None or peer_pg != pg:
                continue
            if op and peer_op and peer_op != op:
                continue
            if pg is None and peer_work - work > MAX_SEQNUM_LAG:
                continue
            if queued is not None and peer_queued is not None and queued >= peer_queued:
                continue
            if peer_done >= work:
                behind.append((rank, peer, pg if pg is not None else "?", peer_done))
                break
    if len({b[0] for b in behind}) != 1:
        return None
    rank, peer, pg, peer_done = behind[0]
    why = say(
        "completed_work_behind",
        rank=rank,
        work=reports[rank][1],
        pg=pg,
        peer=peer,
        peer_done=peer_done,
    )
    return Verdict(rank, why, "behind_in_completed_work", (rank,))


def _work_status(case: Case) -> dict[int, tuple[str | None, int, int]]:
    """Each rank's first ProcessGroupNCCL status (``rank -> (process group or None, last
    enqueued work, last completed work)``) from the findings that captured both counters."""

    def number(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.lstrip("-").isdigit() else None

    status: dict[int, tuple[str | None, int, int]] = {}
    for f in case.ctx.findings:
        queued, done = number(f, "last_enqueued"), number(f, "last_completed")
        if f.rank is None or queued is None or done is None:
            continue
        status.setdefault(f.rank, (f.captures.get("pg"), queued, done))
    return status


def ahead_in_enqueued_work(case: Case) -> Verdict | None:
    """ProcessGroupNCCL's status lines give each rank's ``last enqueued`` and ``last
    completed`` NCCL work (2.3+'s ``Received a dump signal due to a collective timeout from
    rank 7 ... Last enqueued NCCL work: 56116, last completed NCCL work: 56116``; the
    watchdog's ``PG status``). When every rank but one reports the same work both enqueued
    and completed (they issued nothing more: they wait outside NCCL, in a gloo barrier, a
    store or Python) and that one rank completed the same work but enqueued more after it,
    the one rank issued collectives no other rank joined: its command stream diverged and
    the others wait for it to reach the point they are at. At least three ranks must report
    (two cannot show a majority), all in one process group, for a hang or desync root."""
    if case.root.failure_class not in ("collective-timeout", "collective-desync"):
        return None

    status = _work_status(case)
    if len(status) < 3 or len({pg for pg, _q, _d in status.values()}) != 1:
        return None
    busy = [r for r, (_pg, queued, done) in status.items() if queued != done]
    idle = {done for r, (_pg, queued, done) in status.items() if queued == done}
    if len(busy) != 1 or len(idle) != 1:
        return None
    rank = busy[0]
    _pg, queued, done = status[rank]
    work = next(iter(idle))
    if done != work or queued <= work:
        return None
    why = say(
        "enqueued_work_ahead",
        rank=rank,
        queued=queued,
        done=done,
        n=len(status) - 1,
        work=work,
    )
    return Verdict(rank, why, "ahead_in_enqueued_work", (rank,))


def enqueued_split(case: Case) -> Verdict | None:
    """The status lines (see :func:`ahead_in_enqueued_work`) split the ranks of one process
    group in two: some stopped with every work they enqueued completed (``last enqueued ==
    last completed == N``: they issued nothing after work N and wait outside NCCL, in a gloo
    collective, a store or Python), and at least two others completed the same work N but
    enqueued more (they issued work N+1 and wait in it). The stopped ranks never issued a
    collective the others did: the ranks ran different collective sequences (a rank-dependent
    branch, a different number of wrapped forward or backward calls). One stopped rank is the
    rank the others wait for; several are named as candidates and no single rank is claimed.
    (One rank ahead of all the others is :func:`ahead_in_enqueued_work`.)"""
    if case.root.failure_class not in ("collective-timeout", "collective-desync"):
        return None

    status = _work_status(case)
    if len(status) < 3 or len({pg for pg, _q, _d in status.values() if pg is not None}) > 1:
        return None
    if len({done for _pg, _q, done in status.values()}) != 1:
        return None
    stopped = sorted(r for r, (_pg, queued, done) in status.items() if queued == done)
    issued = sorted(r for r, (_pg, queued, done) in status.items() if queued > done)
    if not stopped or len(issued) < 2 or len(stopped) + len(issued) != len(status):
        return None
    done = status[stopped[0]][2]
    queued = max(status[r][1] for r in issued)
    why = say(
        "enqueued_split",
        stopped=", ".join(map(str, stopped)),
        issued=", ".join(map(str, issued)),
        done=done,
        queued=queued,
        next=done + 1,
    )
    if len(stopped) == 1:
        return Verdict(stopped[0], why, "enqueued_split", (stopped[0],))
    return Verdict(None, why, "enqueued_split", tuple(stopped), True)


def odd_value_out(case: Case) -> Verdict | None:
    """The rank whose OpType, collective, shape, Numel, dtype or SeqNum differs from the
    others' reports of the same failure (:func:`~rootrank.analysis.compare.odd_one_out`)."""
    odd = odd_one_out(case.group, world=frozenset(case.ctx.known_ranks()))
    if odd.rank is None and not odd.undecided:
        odd = lacking_keys(case.group)
    spread = None
    if odd.rank is not None and odd.key == "seqnum":
        from rootrank.analysis.spread import seqnum_spread  # loaded for the logs that get here

        spread = seqnum_spread(case.ctx.findings, odd.rank)
    if spread is not None:
        return Verdict(None, spread, "odd_value_out", tuple(case.ranks_with), True)
    if odd.rank is not None:
        return Verdict(odd.rank, odd.why, "odd_value_out", (odd.rank,))
    if odd.undecided:
        return Verdict(None, odd.why, "odd_value_out", tuple(case.ranks_with), True)
    why = case.root.captures.get("why", "")
    if (
        why
        and case.root.rank is not None
        and case.ctx.library.signatures[case.root.signature].inferred
    ):
        return Verdict(case.root.rank, why, "odd_value_out", (case.root.rank,))
    return None


#: Failure classes the rank that reports them may only witness: a peer's divergent input
#: (a size, a collective, a model) is detected by the rank that receives it.
SEEN_BY_PEERS = frozenset(
    {
        "collective-shape-mismatch",
        "collective-desync",
        "divergent-model-across-ranks",
        "collective-timeout",
        "nccl-system-error",
        "elastic-child-failed",
    }
)


def odd_printed_value(case: Case) -> Verdict | None:
    """Every rank prints the same value (a numel, a vocab size, a parameter count, a dataset
    length: a constant of its series) and one rank prints another: that rank diverged, not
    the rank that happened to detect the mismatch (gloo's receiver aborts on the extra
    bytes; a desync is reported by whoever waits). Only for :data:`SEEN_BY_PEERS` classes,
    with at least three ranks printing the series and all but one agreeing."""
    if case.root.failure_class not in SEEN_BY_PEERS:
        return None
    by_name: dict[str, dict[int, Any]] = {}
    for (name, rank), series in case.ctx.state.metrics.series.items():
        if rank is not None and series.constant() is not None:
            by_name.setdefault(name, {})[rank] = series
    for name, ranks in sorted(by_name.items()):
        if len(ranks) < 3:
            continue
        values = {r: v for r, s in ranks.items() if (v := s.constant()) is not None}
        counts = Counter(values.values())
        if len(counts) != 2:
            continue
        (majority, n_major), (odd_value, n_odd) = counts.most_common(2)
        if n_odd != 1 or n_major < 2:
            continue
        rank = next(r for r, v in values.items() if v == odd_value)
        last = ranks[rank].last
        where = f"{last.path}:{last.line}" if last is not None else ""
        return Verdict(
            rank,
            say(
                "odd_printed",
                shape=name,
                rank=rank,
                value=_num(odd_value),
                majority=_num(majority),
                where=where,
            ),
            "odd_printed_value",
            (rank,),
        )
    return None


#: A rank's record of a printed list in its own body: its name (``rank1``, ``rank 1``,
#: ``[rank1]:``), then at most 80 characters (a step, the list's key words), then a bracketed
#: list of at most 64 numbers (``local stats [171.0404, 69.0, 160.0]``). Several records may
#: share one physical line (two ranks' prints glued with no newline between them): each is
#: read by its own rank name.
_RANK_LIST = lazy_regex.compile(
    r"(?<![\w-])rank[ =:#]?(?P<rank>\d{1,6})\b(?P<key>[^\[\]\n]{0,80}?)"
    r"\[(?P<items>\s*-?[\d.eE+-]+(?:\s*,\s*-?[\d.eE+-]+){0,63}\s*)\]"
)
_LIST_KEY_WORD = lazy_regex.compile(r"[A-Za-z_][A-Za-z_]+")


def against_reference(case: Case) -> Verdict | None:
    """DDP's parameter check compares every rank with one reference rank: its constructor
    broadcasts rank 0's parameter shapes and each other rank raises ``params[2] in this
    process with sizes [3, 32] appears not to match sizes of the same param in process 0``
    (reducer.cpp ``verify_params_across_processes``). The reporters are the ranks that differ
    from the reference, not necessarily the odd ones: when two or more ranks report the same
    parameter with the same shape, and every other rank the log knows is the reference
    itself, the reporters agree with each other and the reference is the one rank whose model
    differs (heldout r23b case 02: rank 0 alone added special tokens; ranks 1-3 reported
    "against process 0"). Reads the root's ``peer_rank``, ``param_index`` and ``shape`` (or
    ``strides``) captures on each finding of its signature."""
    root = case.root
    peer = root.captures.get("peer_rank", "")
    if root.failure_class != "divergent-model-across-ranks" or not peer.isdigit():
        return None
    ref = int(peer)
    reporters = case.ranks_with
    if len(reporters) < 2 or ref in reporters:
        return None
    seen = {
        (
            f.captures.get("param_index") or f.captures.get("param_index2") or "",
            f.captures.get("shape") or f.captures.get("strides") or "",
        )
        for f in case.group
    }
    if len(seen) != 1:
        return None
    index, shape = seen.pop()
    if not shape or not case.ctx.known_ranks() <= {ref, *reporters}:
        return None  # a rank the log knows neither reported nor is the reference
    return Verdict(
        ref,
        say(
            "against_reference",
            reporters=format_ranks(reporters),
            index=index or "?",
            rank=ref,
            shape=shape,
        ),
        "against_reference",
        tuple(sorted({ref, *reporters})),
    )


def odd_printed_length(case: Case) -> Verdict | None:
    """Every rank prints a list of numbers under the same key words and one rank's list is
    longer or shorter (``rank0 step 5 local stats [175.4, 63.0, 160.0, 0.05]`` where ranks 1
    and 2 print 3 values): that rank built a different tensor from it, as
    :func:`odd_printed_value` reads a scalar that differs. In a collective of one size per
    rank (``all_gather_into_tensor``, an all-reduce) the odd rank sent more (or fewer) bytes
    than its peers expect; the peer that detects it is the receiver (gloo's ``op.preamble.length
    <= op.nbytes. 16 vs 12``: a peer sent 16 bytes where this rank expects 12) and aborts
    first, so the launcher's first failure is a victim (heldout r19b case 09).

    Read from the kept tail of the one source (``ScanState.tails``: the records printed just
    before the failure), after the scan: the per-line path pays nothing. Only for
    :data:`SEEN_BY_PEERS` classes, with at least three ranks printing the key and all but one
    agreeing on the length (each rank's last list under it)."""
    if case.root.failure_class not in SEEN_BY_PEERS:
        return None
    st = case.ctx.state
    if len(st.tails) != 1:
        return None
    path, first, text = st.tails[0]
    lengths: dict[str, dict[int, tuple[int, int]]] = {}
    for i, line in enumerate(text.split("\n")):
        if "[" not in line or "ank" not in line:
            continue
        for m in _RANK_LIST.finditer(line):
            words = " ".join(_LIST_KEY_WORD.findall(m.group("key")))
            if not words:
                continue
            n = m.group("items").count(",") + 1
            lengths.setdefault(words, {})[int(m.group("rank"))] = (n, first + i)
    for words, by_rank in sorted(lengths.items()):
        if len(by_rank) < 3:
            continue
        counts = Counter(n for n, _ in by_rank.values())
        if len(counts) != 2:
            continue
        (majority, n_major), (odd, n_odd) = counts.most_common(2)
        if n_odd != 1 or n_major < 2:
            continue
        rank = next(r for r, (n, _) in by_rank.items() if n == odd)
        return Verdict(
            rank,
            say(
                "odd_printed",
                shape=f"a list under '{words}'",
                rank=rank,
                value=f"{odd} values",
                majority=f"{majority}",
                where=f"{path}:{by_rank[rank][1]}",
            ),
            "odd_printed_value",
            (rank,),
        )
    return None


#: A count of work done out of a total in a line's body: ``(7/12)``, ``part 7/12``,
#: ``[7/12]`` (the first number the done count, the second the total).
_COUNTER = lazy_regex.compile(r"(?<![\w./])(?P<i>\d{1,7})/(?P<n>\d{1,7})(?![\w./])")
#: Lines a rank must print after every other rank's last one to be still working.
MIN_TRAILING = 2


def still_working(case: Case) -> Verdict | None:
    """In a collective that timed out, the one rank still printing its own progress after
    every other rank's last line (a count of work rising and short of its total: ``[r0]
    tokenized raw/part-006.txt (7/12)``) and that did not report the timeout is the rank the
    others waited for: it was doing work only it does (a rank-0-only preprocessing, a cache
    build, a download) while they waited in the barrier or collective after it, longer than
    the process group's timeout; the ranks that timed out are victims (heldout r19b case 10:
    rank 0 tokenized 12 parts at 3 s each before a barrier with timeout=20 s).

    Read from the kept tail of the one source (``ScanState.tails``, tagged again with a
    :class:`~rootrank.ranks.RankTagger` that first learns the user's own rank tags from it),
    the lines before the log's first exception (the run's own output, not the tracebacks):
    after the scan, so the per-line path pays nothing."""
    if case.root.failure_class not in ("collective-timeout", "collective-desync"):
        return None
    st = case.ctx.state
    reporters = {f.rank for f in case.group if f.rank is not None}
    if not reporters or len(st.tails) != 1 or not st.exceptions:
        return None
    path, first, text = st.tails[0]
    stop = min(x.exc.log_line for x in st.exceptions if x.path == path) if st.exceptions else 0
    if first > 1 or stop <= first:
        return None  # the tail does not hold the run's start: other ranks' lines may be cut
    from rootrank.ranks import RankTagger

    tagger = RankTagger(path=path)
    tagger.learn_user_tags(text)
    lines: list[tuple[int, int, str]] = []
    for i, raw in enumerate(text.split("\n")):
        number = first + i
        if number >= stop:
            break
        tagged = tagger.tag(raw, number)
        if tagged.rank is not None:
            lines.append((tagged.rank, number, tagged.text))
    last: dict[int, int] = {}
    for rank, number, _ in lines:
        last[rank] = number
    if len(last) < 2:
        return None
    rank = max(last, key=lambda r: last[r])
    if rank in reporters:
        return None
    others = max(n for r, n in last.items() if r != rank)
    counts = []
    for r, number, body in lines:
        if r == rank and number > others:
            m = _COUNTER.search(body)
            if m is not None:
                counts.append((int(m.group("i")), int(m.group("n")), number))
    if len(counts) < MIN_TRAILING:
        return None
    done = [i for i, _, _ in counts]
    i, total, number = counts[-1]
    if done != sorted(done) or done[0] == done[-1] or i >= total:
        return None
    return Verdict(
        rank,
        say(
            "still_working",
            rank=rank,
            others=format_ranks(sorted(r for r in last if r != rank)),
            done=i,
            total=total,
            where=f"{path}:{number}",
        ),
        "still_working",
        (rank,),
    )


def main_process_bar(case: Case) -> Verdict | None:
    """In a collective that timed out, the rank whose progress bar was still short of its
    total after running for much of the timeout (:mod:`rootrank.analysis.busy_bar`): an
    untagged bar is the main process's (tqdm is off on the other ranks), so rank 0, when it
    did not report the timeout itself; the ranks that did are victims."""
    if case.root.failure_class not in ("collective-timeout", "collective-desync"):
        return None
    reporters = set(case.ranks_with)
    timeouts = {
        int(t)
        for f in case.group
        for t in [f.captures.get("timeout_ms", "")]
        if t.isdigit() and int(t) > 0
    }
    if not reporters or len(timeouts) != 1:
        return None
    from rootrank.analysis.busy_bar import busy_bar

    bar = busy_bar(case.ctx.state, timeouts.pop())
    if bar is None:
        return None
    rank = 0 if bar.rank is None else bar.rank
    if rank in reporters:
        return None
    why = say(
        "main_process_bar",
        rank=rank,
        desc=f'"{bar.desc}" ' if bar.desc else "",
        percent=bar.percent,
        elapsed=fmt_span(bar.elapsed_s),
        where=bar.where,
        ranks=ranks_word(sorted(reporters)),
        whose="untagged: the main process's" if bar.rank is None else f"rank {rank}'s",
    )
    return Verdict(rank, why, "main_process_bar", (rank,))


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


#: Collectives whose output holds one input per member of the group (NumelOut = size x
#: NumelIn) and those whose input does (NumelIn = size x NumelOut), as WorkNCCL names them.


def subgroup_of_root(case: Case) -> tuple[int, int] | None:
    """``(group size, ranks the job has at least)`` when the root is a collective that ran in
    a process group smaller than the job (a subgroup from ``new_group`` /
    ``new_subgroups``, a tensor- or pipeline-parallel group), else ``None``.

    The group's size comes from the watchdog's ``WorkNCCL(OpType=..., NumelIn=a,
    NumelOut=b)``: an all-gather's output holds one input per member (size = b / a), a
    reduce-scatter's input one output per member (size = a / b); the job has at least
    ``max(known rank) + 1`` ranks (ranks are 0-based). A rank outside the reporters then
    may not be in the group at all, so its failure (or its silence) does not show that the
    group waited for it."""
    size = shape_group_size(case.root.captures)
    if size is None:
        return None
    known = case.ctx.known_ranks()
    world = max(case.ctx.state.world_size or 0, max(known) + 1 if known else 0)
    if size < 2 or world <= size:
        return None
    return size, world


#: Classes whose root a rank that left the lock-step explains (:func:`out_of_lockstep`): a
#: collective that failed or hung because the ranks were in different collectives.
_LOCKSTEP_CLASSES = frozenset(
    {"collective-desync", "collective-shape-mismatch", "collective-timeout"}
)


def out_of_lockstep(case: Case) -> Verdict | None:
    """In a collective that failed or hung, the one rank whose own step sequence skipped a
    step every other rank printed, and which ran ahead of them all, left the lock-step
    first (:func:`rootrank.analysis.lockstep.skipped_step`)."""
    if case.root.failure_class not in _LOCKSTEP_CLASSES:
        return None
    from rootrank.analysis.lockstep import skipped_step

    found = skipped_step(case.ctx)
    if found is None:
        return None
    rank, why = found
    return Verdict(rank, why, "out_of_lockstep", (rank,))


def ahead_in_epoch(case: Case) -> Verdict | None:
    """In a collective that failed or hung with no rank of its own (a peer detected it), the
    one rank that had begun a later epoch than every other rank before the failure's line
    (:func:`rootrank.analysis.phase.epoch_ahead`): it left the previous epoch first, having
    run fewer steps, and its collectives met the others' earlier ones."""
    if case.root.failure_class not in _LOCKSTEP_CLASSES or not _names_no_rank(case):
        return None
    if not case.root.evidence:
        return None
    from rootrank.analysis.phase import epoch_ahead

    first = case.root.evidence[0]
    found = epoch_ahead(case.ctx, first.path, first.line)
    if found is None:
        return None
    rank, epoch, line, text, others = found
    behind = sorted(set(others.values()))
    why = say(
        "epoch_ahead",
        rank=rank,
        epoch=epoch,
        line=line,
        text=text[:120],
        others=format_ranks(sorted(others)),
        behind=" or ".join(str(e) for e in behind),
    )
    return Verdict(rank, why, "ahead_in_epoch", (rank,))


def _names_no_rank(case: Case) -> bool:
    """Whether the root is a failure a peer detects (:data:`SEEN_BY_PEERS`) whose own
    message names no rank (no ``rank``, ``ranks`` or ``peer_rank`` capture)."""
    caps = case.root.captures
    return case.root.failure_class in SEEN_BY_PEERS and not (
        caps.get("rank") or caps.get("ranks") or caps.get("peer_rank")
    )


def _every_rank_reports(case: Case) -> bool:
    """Whether the root's failure shows on every rank the log knows (three at least): a value
    a collective spread (an all-reduced gradient norm gone non-finite, a loss every rank
    checks after the all-reduce) is raised by all, so the failure itself names no rank."""
    known = case.ctx.known_ranks()
    return len(known) >= 3 and known <= set(case.ranks_with)


def odd_line_out(case: Case) -> Verdict | None:
    """For a mismatch, desync or timeout a peer detects, or a failure every rank reports
    alike (:func:`_every_rank_reports`), the one rank whose set-up line differs in one token
    from the same line of every other rank (:func:`rootrank.analysis.oddline.odd_line`): it
    diverged, the others only received what it spread (round 17d: a config line with
    ``'lr': 30000.0`` on rank 2 alone, then every rank's all-reduced gradient norm inf)."""
    if not _names_no_rank(case) and not _every_rank_reports(case):
        return None
    from rootrank.analysis.oddline import odd_line

    found = odd_line(case.ctx)
    if found is None:
        return None
    rank, why = found
    return Verdict(rank, why, "odd_line_out", (rank,))


#: Classes of a hang: the ranks wait in a collective until a timeout (not a crash, where a
#: rank's missing line may just be output lost when it was killed).
_HANG_CLASSES = frozenset({"collective-desync", "collective-timeout"})


def odd_step_line(case: Case) -> Verdict | None:
    """In a hang every rank reports alike (a timeout each rank's own collective hit), the one
    rank whose per-step line at the step they stopped at differs from the others' while it
    matched theirs before (:func:`rootrank.analysis.oddline.odd_step_line`): that step's
    branch differed on it, and the others waited in the collective it never entered."""
    if case.root.failure_class not in _HANG_CLASSES:
        return None
    if not _names_no_rank(case) and not _every_rank_reports(case):
        return None
    from rootrank.analysis.oddline import odd_step_line as odd

    found = odd(case.ctx)
    if found is None:
        return None
    rank, why = found
    return Verdict(rank, why, "odd_step_line", (rank,))


def missing_milestone(case: Case) -> Verdict | None:
    """In a hang (a timeout or desync a peer detects), the one rank that never printed a
    line every other rank printed is the one stuck before it
    (:func:`rootrank.analysis.oddline.missing_milestone`)."""
    if not _names_no_rank(case) or case.root.failure_class not in _HANG_CLASSES:
        return None
    from rootrank.analysis.oddline import missing_milestone as missing

    found = missing(case.ctx)
    if found is None:
        return None
    rank, why = found
    return Verdict(rank, why, "missing_milestone", (rank,))


def odd_setting_out(case: Case) -> Verdict | None:
    """For a failure a peer detects or every rank reports alike (the conditions of
    :func:`odd_line_out`), the one rank that printed a setting (a learning rate, a width, a
    batch size in a config line it logged) with another value than every other rank that
    printed it, those agreeing (:func:`rootrank.scan.odd_setting` over
    :func:`rootrank.ranklines.rank_settings`): it ran with other settings, and what it computed spread
    to the others through the collectives (round 17d: ``'lr': 30000.0`` on rank 2 alone, then
    every rank's all-reduced gradient norm inf). Two or more such ranks: no verdict."""
    if not _names_no_rank(case) and not _every_rank_reports(case):
        return None
    from rootrank.ranklines import rank_settings
    from rootrank.scan import odd_setting

    settings = rank_settings(case.ctx.state)
    odd = [(r, found) for r in sorted(settings) if (found := odd_setting(settings, r))]
    odd = [(r, f) for r, f in odd if len(f[4]) >= 2]
    if len(odd) != 1:
        return None
    rank, (name, value, usual, line, others) = odd[0]
    why = say(
        "odd_setting",
        rank=rank,
        name=name,
        value=value,
        usual=usual,
        others=format_ranks(others),
        line=line,
    )
    return Verdict(rank, why, "odd_setting_out", (rank,))


#: Byte-count ratios of one tensor in two floating-point dtypes (8/4, 4/2, 8/2 bytes).
_DTYPE_RATIOS = frozenset({2.0, 4.0})


def lone_dtype_line(case: Case) -> Verdict | None:
    """For a size mismatch a receiver detects (gloo's ``op.preamble.length <= op.nbytes``,
    whose process aborts: a victim of the bytes it was sent) with byte counts a dtype width
    apart (2x, 4x), the one rank whose own lines name a dtype no other rank's lines name
    (:func:`rootrank.analysis.oddline.lone_dtype`): it built its tensor in that dtype and
    sent it, the same elements in another width (heldout r20c case 01: ``[rank 1] ...
    upcasting model to float64``, 688 vs 344 bytes, rank 0 aborted)."""
    if case.root.failure_class != "collective-shape-mismatch" or not _names_no_rank(case):
        return None
    from rootrank.analysis.oddline import lone_dtype
    from rootrank.entry.variants import sizes_apart  # the entry package imports the analysis

    ratio = sizes_apart(case.root.captures)
    if ratio not in _DTYPE_RATIOS:
        return None
    found = lone_dtype(case.ctx)
    if found is None:
        return None
    rank, dtype, line, text = found
    why = say("lone_dtype", rank=rank, dtype=dtype, ratio=ratio, line=line, text=text)
    return Verdict(rank, why, "lone_dtype_line", (rank,))


#: Classes of a failure every started rank reports while it waits for the whole world to
#: join (an init store barrier, a rendezvous, the first collective).
_JOIN_WAIT_CLASSES = frozenset({"rendezvous-failure", "collective-timeout"})


def silent_block(case: Case) -> Verdict | None:
    """The ranks that never joined: with the world size known (``world_size=256``) and most
    of the world reporting the root (a store-based barrier or init timeout that counts the
    ranks that arrived, ``worker_count=247``), the ranks of ``0..world_size-1`` that print
    no line at all in a log where every other rank speaks (srun ``--label``, torchrun's
    ``[rankN]:``) never started or never reached the barrier, and the others' timeouts are
    theirs to explain. One contiguous block of silent ranks is one node's tasks (ranks are
    laid out node by node): the first of them is named, with the hosts of the ranks on
    either side when the log gives them.

    Guards against a paste that just shows few ranks: at least half the world reports the
    root, the silent ranks are one contiguous block of at most a quarter of the world, and
    none of them appears anywhere (in a line, a launcher summary)."""
    root = case.root
    st = case.ctx.state
    world = st.world_size
    if root.failure_class not in _JOIN_WAIT_CLASSES or not world or world < 4:
        return None
    reporters = {
        f.rank
        for f in case.ctx.findings
        if f.failure_class == root.failure_class and f.rank is not None
    }
    if len(reporters) < max(3, world // 2):
        return None
    heard = st.ranks_seen | {e.rank for e in st.elastic if e.rank is not None}
    silent = sorted(set(range(world)) - heard)
    if not silent or len(silent) > world // 4:
        return None
    if silent != list(range(silent[0], silent[-1] + 1)):
        return None
    sides = [
        f"{st.hosts[r]} (rank {r})"
        for r in (silent[0] - 1, silent[-1] + 1)
        if r in st.hosts and 0 <= r < world
    ]
    between = f", the node between {' and '.join(sides)}" if len(sides) == 2 else ""
    why = say(
        "silent_block",
        first=silent[0],
        ranks=format_ranks(silent),
        n=len(silent),
        world=world,
        reporters=len(reporters),
        between=between,
    )
    return Verdict(silent[0], why, "silent_block", tuple(silent))


#: NCCL's point-to-point op types in a ``WorkNCCL(OpType=...)`` (ProcessGroupNCCL's
#: opTypeToString: ``SEND``, ``RECV``, and ``RECVANYSOURCE`` which names no peer).
_P2P_OPS = {"SEND": "receiver", "RECV": "sender"}


def job_world(case: Case) -> int | None:
    """The number of ranks of the job as the log states it: the world size a line printed
    (:attr:`rootrank.scan.ScanState.world_size`), else the launcher's printed layout
    (``torchrun --nnodes=2 --nproc_per_node=1``: nodes x processes per node). ``None`` when
    the log states neither."""
    st = case.ctx.state
    if st.world_size:
        return st.world_size
    launch = st.launch
    if launch.nproc_per_node:
        return (launch.nnodes or 1) * launch.nproc_per_node if launch.node_flags else None
    return None


def p2p_peer(case: Case) -> Verdict | None:
    """A timed-out point-to-point op (``WorkNCCL(..., OpType=RECV, ...)``) has one peer: a
    RECV waits for its sender, a SEND for its receiver. In a job of two ranks (the world size
    printed, or ``--nnodes=2 --nproc_per_node=1`` on the posted launch commands) reported by
    one rank, that peer is the other rank: it stopped sending (crashed, stuck, or only idle,
    a server with no request to pass on), the reporter only waited. Not when the other rank's
    own output shows a failure of the same class (both sides then report), nor for a
    subgroup's op (its ranks are not the world's)."""
    root = case.root
    op = root.captures.get("optype", "")
    if op not in _P2P_OPS or len(case.ranks_with) != 1:
        return None
    if subgroup_of_root(case) is not None or job_world(case) != 2:
        return None
    rank = case.ranks_with[0]
    if rank not in (0, 1):
        return None
    peer = 1 - rank
    if any(f.rank == peer and f.failure_class == root.failure_class for f in case.ctx.findings):
        return None
    why = say("p2p_peer", rank=rank, op=op, peer=peer, role=_P2P_OPS[op])
    return Verdict(peer, why, "p2p_peer", (peer,))


def missing_reporter(case: Case) -> Verdict | None:
    """In a hang every rank but the one the others wait for reports the timeout: the one
    known rank that reported no failure of this class is the suspect (not for the
    launcher's own reports, which name the ranks it stopped). Not a rank whose traceback
    the log cuts before its exception line, nor one whose error line the paste cuts before
    its message (:func:`rootrank.analysis.cut_lines.cut_error_ranks`): its error line may be
    the one the paste lost, so the log cannot tell.

    A dump-signal line (``Received a dump signal due to a collective timeout from rank 3``)
    says rank 3's watchdog fired: rank 3 reported the timeout. And when a rank's status
    counters show every work it enqueued completed (``last enqueued NCCL work: 41, last
    completed NCCL work: 41``), it was never inside the hung collective: the ranks are not
    "all waiting but one", the counters are the evidence to read (:func:`enqueued_split`),
    and the absence of a line names no one."""
    root = case.root
    if root.role != "symptom" or root.failure_class in (
        "elastic-child-failed",
        "preemption-sigterm",
    ):
        return None
    if subgroup_of_root(case) is not None:
        return None  # the quiet ranks may belong to other groups: no gap to read
    if any(queued == done for _pg, queued, done in _work_status(case).values()):
        return None  # a rank outside the collective: line presence is no census of waiters
    same = [
        f for f in case.ctx.findings if f.failure_class == root.failure_class and f.rank is not None
    ]
    reporters = {f.rank for f in same if f.rank is not None}
    reporters |= {
        int(raw) for f in same if (raw := f.captures.get("timeout_from_rank", "")).isdigit()
    }
    known = case.ctx.known_ranks()
    world = default_group_world(root, case.ctx.findings)
    if world is not None and all(r < world for r in known | reporters):
        # the timed-out collective ran in the default group of ``world`` ranks (its shape):
        # its members are known even when the paste shows none of their lines
        known = known | set(range(world))
    lost_peer = _lost_peer_in_hang(case, reporters)
    if lost_peer:
        silent = _silent_straggler(case, reporters | lost_peer, known)
        if silent is not None:
            return silent
    census = _abort_census(case)
    if census is not None:
        aborted, stopped = census
        if not (reporters - aborted - {stopped}):
            return Verdict(
                stopped,
                say("missing_reporter_table", rank=stopped, aborted=format_ranks(sorted(aborted))),
                "missing_reporter",
                (stopped,),
            )
    if not reporters or (len(reporters) < 2 and known != {0, 1}):
        # One rank's report against one quiet rank says who the other rank is only when the
        # job has two ranks; with a higher rank seen, the quiet one may just be unpasted.
        return None
    if len(reporters) == 1 and _first_work_unfinished(case, next(iter(reporters))):
        return None
    if len(reporters) >= 3:
        # Ranks are 0..world_size-1: with three or more reporters, a single gap below the
        # highest is the rank that printed nothing (two ranks of a paste say too little).
        known |= set(range(max(reporters) + 1))
    # A rank whose own traceback the paste cuts was failing too: the absence of its error
    # line is no evidence.
    missing = sorted(known - reporters)
    from rootrank.analysis.cut_lines import cut_error_ranks  # loaded for the logs that get here

    traced = case.ctx.state.cut_traceback_ranks
    cut = traced | cut_error_ranks(case.ctx.state)
    if len(missing) == 1 and missing[0] in cut:
        reason = "missing_reporter_cut" if missing[0] in traced else "missing_reporter_cut_line"
        return Verdict(
            None,
            say(reason, rank=missing[0]),
            "missing_reporter",
            (missing[0],),
            True,
        )
    if len(missing) == 1:
        return Verdict(
            missing[0], say("missing_reporter", rank=missing[0]), "missing_reporter", (missing[0],)
        )
    return None


def _first_work_unfinished(case: Case, reporter: int) -> bool:
    """Whether the one reporting rank timed out in its group's first collective with nothing
    ever completed (its status ``last completed NCCL work: -1``, or the timed-out work's
    SeqNum 1 when no status is printed). Then the silent rank's absence names no one: a rank
    that had not yet reached the collective and a rank inside it, waiting on the same broken
    first transfer (a transport that never worked, a group that never formed), both print
    nothing before the reporter's abort ends the job (heldout r24b case 08: one rank's
    timeout at SeqNum 1, last completed -1, the other rank's NCCL set-up lines only)."""
    status = _work_status(case).get(reporter)
    if status is not None:
        return status[2] < 0
    return case.root.captures.get("seqnum") == "1"


def _lost_peer_in_hang(case: Case, reporters: set[int]) -> set[int]:
    """In a hang (a timeout or desync), the ranks other than ``reporters`` whose own error
    only says a peer went away (``Connection closed by peer``, a reset: a signature with
    ``explained_by: [peer]``), raised in a collective too: the first waiter to time out
    exits, and the ranks connected to it see the connection close instead of a timeout of
    their own. They waited as the reporters did. Empty when the root is no hang."""
    if case.root.failure_class not in _HANG_CLASSES:
        return set()
    return {
        f.rank
        for f in case.ctx.findings
        if f.rank is not None and f.rank not in reporters and case.ctx.peer_report(f)
    }


def _silent_straggler(case: Case, waiters: set[int], known: set[int]) -> Verdict | None:
    """The one rank that raised nothing in a hang where every other rank of the job raised a
    waiter's error (its timeout, or the closed connection of a peer that timed out first:
    ``waiters``, at least two), and that only ended when a signal stopped it (the agent's
    closing signal, a signal exit in the failure table) rather than failing by itself.

    Mechanism: a collective completes only when every member joins it; the members that did
    wait until their timeout and raise, one after the other, while the member that never
    reached the collective raises nothing (it was busy elsewhere: a lock, a download, a slow
    step) until the agent, seeing the first waiter exit, stops it with SIGTERM. torchelastic's
    "first observed failure" is then only the first waiter whose timeout fired. The rank's
    own last line before the others' errors says what it was doing, and is quoted. Not when
    the waiters' tracebacks stop at different call sites (:func:`rootrank.entry.frames.call_sites`):
    then they were not all in one collective, and a rank that called another one diverged."""
    ranks = set(range(max(known | waiters) + 1)) if len(waiters) >= 2 else set()
    quiet = sorted(ranks - waiters)
    if len(quiet) != 1:
        return None
    rank = quiet[0]
    st = case.ctx.state
    from rootrank.analysis.cut_lines import cut_error_ranks  # loaded for the logs that get here

    if rank in st.cut_traceback_ranks | cut_error_ranks(st) or any(
        x.rank == rank for x in st.exceptions
    ):
        return None  # it raised (or its traceback or error line is cut): not silent
    if any(f.rank == rank and f.role == "cause" for f in case.ctx.findings):
        return None
    stopped = any(
        e.rank == rank and (e.kind == "signal" or e.code in SIGNAL_CODES)
        for e in of_kind(case.ctx.events, "signal", "summary", "exit")
    )
    if not stopped:
        return None
    from rootrank.entry.frames import call_sites

    if call_sites(st, case.root):
        # the waiters stopped at different call sites (another line or collective): they
        # were not all waiting in one collective for the silent rank, and the odd call site
        # (:func:`odd_call_site`) reads that divergence
        return None
    from rootrank.entry.hang_capture import initiator_last_line

    ev = case.root.evidence[0] if case.root.evidence else None
    own = (
        initiator_last_line([*st.heads, *st.tails], ev.path, ev.line, rank)
        if ev is not None
        else None
    )
    last = f"; its own last line: `{own[1]}` (line {own[0]})" if own is not None else ""
    why = say("silent_straggler", rank=rank, waiters=format_ranks(sorted(waiters)), last=last)
    return Verdict(rank, why, "missing_reporter", (rank,))


#: A file name in a message whose number may be the rank's own file: ``data/shard-0001.bin``,
#: ``tokens/part-02.txt``, ``rank3.pt``, ``shard_7.jsonl`` (group ``n``; a word before it, an
#: extension after it).
_RANK_FILE = lazy_regex.compile(
    r"(?<![\w.])(?P<file>(?:[\w.-]+/)*[A-Za-z][A-Za-z_]*[-_.]?(?P<n>\d{1,6})\.[A-Za-z]\w{0,7})\b"
)


def thread_owner(case: Case) -> Verdict | None:
    """Whose thread died, for a root that is a thread's uncaught exception printed with no
    rank (:attr:`rootrank.tracebacks.PyException.thread_died`).

    Mechanism: ``threading.excepthook`` prints ``Exception in thread <name>:`` and the
    traceback with no rank prefix (torch's ``[rankN]:`` prefix is its ``sys.excepthook``'s,
    for the main thread), and the thread's end does not end the process: that rank goes on
    without what the thread was to produce and blocks, the others wait for it in their next
    collective. So the rank comes from elsewhere in the log: the one known rank that did not
    report the collective timeout the others did (it was not in the collective: it waited on
    the dead thread), else the one rank whose progress stopped first
    (:func:`rootrank.analysis.stall.stalled_rank`), and the per-rank file the exception's
    message names (``data/shard-0001.bin`` in a job of three ranks: a number of the file's
    name below the world size, the only such file in the message). Each that applies must
    name the same rank; when they differ, no rank is named (undecided)."""
    root = case.root
    if root.rank is not None:
        return None
    lines = {(e.path, e.line) for e in root.evidence}
    seen = next(
        (
            x
            for x in case.ctx.state.exceptions
            if x.rank is None and (x.path, x.exc.log_line) in lines
        ),
        None,
    )
    if seen is None or not seen.exc.thread_died:
        return None
    known = case.ctx.known_ranks()
    world = case.ctx.state.world_size or (max(known) + 1 if known else 0)
    if world < 2:
        return None
    thread = f"thread {seen.exc.thread!r}" if seen.exc.thread else "a thread"
    found: list[tuple[int, str]] = []
    files = {
        (m.group("file"), int(m.group("n")))
        for m in _RANK_FILE.finditer(seen.exc.message)
        if int(m.group("n")) < world
    }
    if len(files) == 1:
        ((file, n),) = files
        found.append((n, say("thread_owner_file", file=file, rank=n)))
    reporters = {
        f.rank
        for f in case.ctx.findings
        if f.failure_class == "collective-timeout" and f.rank is not None
    }
    quiet = sorted(known - reporters)
    if len(reporters) >= 2 and len(quiet) == 1:
        others = format_ranks(sorted(reporters))
        found.append((quiet[0], say("thread_owner_reporters", rank=quiet[0], others=others)))
    elif reporters and len(quiet) == 1 and _stopped_in_census(case, quiet[0], known):
        # one reporter (a job of two ranks, or the agent stopped the rest before they timed
        # out): the launcher's table lists every rank, so the quiet one is no unpasted rank
        others = format_ranks(sorted(reporters))
        found.append((quiet[0], say("thread_owner_census", rank=quiet[0], others=others)))
    else:
        # the printed steps only when the collective's census does not name the rank: a
        # worker's stdout is a block-buffered pipe under torchrun and ranks' lines interleave
        # (one rank's step glued to the end of another's line), so the census outranks them
        from rootrank.analysis.stall import stalled_rank

        stalled, why = stalled_rank(case.ctx)
        if stalled is not None:
            found.append((stalled, why))
    if not found:
        return None
    ranks = sorted({r for r, _ in found})
    # A dead thread stalls its own process: it explains the others' waiting, never a fault
    # another rank raised of its own (rank 2's KeyError in its main thread while rank 1 went
    # on without its thread). With such a cause on another rank, the thread is not the story.
    if any(
        f.role == "cause" and f.rank is not None and f.rank not in ranks
        for f in case.ctx.findings
        if f is not root
    ):
        return None
    evidence = "; ".join(w for _, w in found)
    if len(ranks) > 1:
        return Verdict(
            None,
            say("thread_owner_differ", thread=thread, evidence=evidence),
            "thread_owner",
            tuple(ranks),
            True,
        )
    return Verdict(
        ranks[0],
        say("thread_owner", thread=thread, evidence=evidence),
        "thread_owner",
        (ranks[0],),
    )


def _stopped_in_census(case: Case, rank: int, known: set[int]) -> bool:
    """Whether torchelastic's failure table lists every rank of the job (ranks 0..N-1 once
    each, N the world size when the log gives it, and no other rank known) and shows ``rank``
    stopped by the agent's own closing signal (its pid among the agent's ``Sending process N
    closing signal``): it was alive when the agent stopped the job, not failing of itself."""
    entries = [e for e in of_kind(case.ctx.events, "summary") if e.rank is not None and e.rank >= 0]
    ranks = {e.rank for e in entries if e.rank is not None}
    if len(entries) != len(ranks) or ranks != set(range(len(ranks))) or known != ranks:
        return False
    world = case.ctx.state.world_size
    if world and world != len(ranks):
        return False
    return any(e.rank == rank and e.code in _AGENT_STOP and e.sender == "agent" for e in entries)


#: Exit codes of a worker that aborted itself (SIGABRT: the NCCL watchdog's abort, as
#: torchelastic and a shell print it) and of one the agent's closing signal stopped.
_SELF_ABORT = (-6, 134)
_AGENT_STOP = (-15, -9)


def _abort_census(case: Case) -> tuple[set[int], int] | None:
    """``(ranks that aborted themselves, the one rank the agent stopped)`` from
    torchelastic's failure table, when the root is a collective timeout and the table is a
    census: every rank of the job listed, all but one ended by SIGABRT (their watchdogs
    timed out: ProcessGroupNCCL aborts the process) and that one by the agent's SIGTERM or
    SIGKILL (its pid among the agent's closing signals): it was alive and had not timed
    out, so it is the rank the others waited for. ``None`` otherwise."""
    if case.root.failure_class != "collective-timeout":
        return None
    entries = [e for e in of_kind(case.ctx.events, "summary") if e.rank is not None and e.rank >= 0]
    ranks: set[int] = {e.rank for e in entries if e.rank is not None}
    if len(entries) != len(ranks) or ranks != set(range(len(ranks))):
        return None  # a partial or repeated table is no census
    world = case.ctx.state.world_size
    if world and world != len(ranks):
        return None
    aborted = {e.rank for e in entries if e.rank is not None and e.code in _SELF_ABORT}
    stopped = [
        e.rank
        for e in entries
        if e.rank is not None and e.code in _AGENT_STOP and e.sender == "agent"
    ]
    if len(stopped) != 1 or len(aborted) < 2 or aborted | set(stopped) != ranks:
        return None
    return aborted, stopped[0]


def missing_progress(case: Case) -> Verdict | None:
    """In a hang, the rank stuck in Python (a deadlock, slow I/O, rank-0-only work before a
    barrier) is the one whose last step is behind the others', or the one known rank that
    printed no progress while the others did; the others' timeouts are collateral
    (:func:`rootrank.analysis.stall.stalled_rank`)."""
    if case.root.role != "symptom" and case.root.failure_class != "collective-timeout":
        return None
    from rootrank.analysis.stall import stalled_rank

    rank, why = stalled_rank(case.ctx)
    if rank is None:
        return None
    return Verdict(rank, why, "missing_progress", (rank,))


def signal_not_sent_by_agent(case: Case) -> Verdict | None:
    """A worker that exited by SIGKILL/SIGTERM although torchrun's agent never sent it a
    closing signal (its pid is not among the agent's ``Sending process N closing signal``
    lines) was killed from outside the job: the OOM killer, a preemption, a person. The
    agent signals the *other* workers only after the first one failed
    (torch/distributed/elastic/multiprocessing/api.py ``_close``). Reads the summary's
    entries the event stream marks as sent from outside
    (:func:`~rootrank.analysis.events.signals_from_outside`)."""
    killed = signals_from_outside(case.ctx.events)
    ranks = sorted({e.rank for e in killed if e.rank is not None})
    if len(ranks) != 1:
        return None
    e = next(k for k in killed if k.rank == ranks[0])
    return Verdict(
        e.rank,
        say("signal_not_sent", rank=e.rank, signal=e.signal, pid=e.pid),
        "signal_not_sent_by_agent",
        (ranks[0],),
    )


#: Failure classes that come from the job's own set-up, so every rank hits them the same
#: way (a config check, a checkpoint that does not fit the model, a driver too old, a
#: parameter the model's graph uses twice, which DDP marks ready twice or ZeRO reduces
#: twice): one rank's copy in a log that shows no other rank says nothing of who was first.
#: (Shapes and dtypes are not here: a batch of another shape on one rank is that rank's.)
SAME_ON_EVERY_RANK = frozenset(
    {
        "config-error",
        "ddp-marked-ready-twice",
        "ddp-unused-parameters",  # a parameter the graph never uses: unused on every rank
        "gpu-unavailable",
        "checkpoint-load-mismatch",
        "dependency-version-mismatch",
        "fsdp-state-dict-or-wrapping-error",
        "cuda-driver-or-arch-mismatch",
        "rendezvous-failure",  # every rank dials the same store
    }
)


#: Failure classes of a fault of one rank's own device, memory or batch (how much memory its
#: batch needed, an id its batch held, its GPU's health): ranks running the same code do not
#: raise them in lockstep, so another rank's traceback the log cuts after it is no copy.
RANK_OWN_FAULTS = frozenset(
    {
        "cuda-oom",
        "cpu-oom",
        "host-oom-killed",
        "cuda-illegal-memory-access",
        "cuda-device-side-assert",
        "gpu-hardware-xid-ecc",
    }
)


#: Signature tags (facts in a signature's YAML) of failures every rank of one job hits the
#: same way although their class may be rank-specific elsewhere: ``gpu-capability``, a
#: kernel that refuses the GPU type (FlashAttention only on Ampere or newer, bf16 or FP8 on
#: an older GPU): a job's GPUs are one type; ``comm-init-check``, a check NCCL makes while
#: building a communicator over every member's data (init.cc gathers every rank's PCI bus
#: id and each member compares them all: "Duplicate GPU detected : rank 3 and rank 2"), so
#: every member fails it alike and the ranks it names are the pair, not the one printing.
SAME_ON_EVERY_RANK_TAGS = frozenset({"gpu-capability", "comm-init-check"})
#: A signature tag for a fault of one node's own (a file its disk lacks that another node's
#: has: file-missing-on-other-node): whatever its class, the ranks of the other nodes do not
#: hit it, so the rank that reports it is no copy of an every-rank set-up error.
ONE_NODE_TAG = "node-local"
#: A signature tag for a check of the printing rank's own number (NCCL's "Invalid rank
#: requested : r/n", raised when r >= n): ranks whose number is in range pass it, so the
#: rank that reports it is no copy of an every-rank set-up error.
OWN_RANK_TAG = "own-rank-check"


def same_on_every_rank(case: Case) -> bool:
    """Whether the root is a failure every rank hits alike (:data:`SAME_ON_EVERY_RANK`,
    :data:`SAME_ON_EVERY_RANK_TAGS`, :func:`parameter_dtype_mismatch`,
    :func:`setup_exception`); never a fault of one node's own (:data:`ONE_NODE_TAG`) nor a
    check of the rank's own number (:data:`OWN_RANK_TAG`)."""
    sig = case.ctx.library.signatures.get(case.root.signature)
    tags = set(getattr(sig, "tags", ()) or ())
    if ONE_NODE_TAG in tags or OWN_RANK_TAG in tags:
        return False
    return (
        case.root.failure_class in SAME_ON_EVERY_RANK
        or bool(tags & SAME_ON_EVERY_RANK_TAGS)
        or parameter_dtype_mismatch(case)
        or setup_exception(case)
        or memory_registration_refused(case)
        or table_index_before_progress(case)
    )


#: A device-side index check of a lookup into a table (ATen's Indexing.cu
#: ``indexSelectLargeIndex``/``indexSelectSmallIndex``: ``srcIndex < srcSelectDimSize``, the
#: embedding lookup; IndexKernel.cu's ``index out of bounds``): an id past the table's rows.
_TABLE_INDEX_ASSERT = lazy_regex.compile(
    r"srcIndex < srcSelectDimSize|index out of bounds|idx_dim >= 0 && idx_dim < index_size"
)


def table_index_before_progress(case: Case) -> bool:
    """The root is a device-side assertion of an index past a table's rows (the embedding
    lookup's ``srcIndex < srcSelectDimSize``: :data:`_TABLE_INDEX_ASSERT`) in a log that shows
    no training progress: ids past
    the table in the very first batches are no rare sample of one rank's data but a vocabulary
    the model was built too small for (a tokenizer, a mock dataset or a padded vocab size that
    does not match the model's ``vocab_size`` after a config edit), which every rank's batches
    hit alike. The one rank whose traceback follows is then no more the first than the
    others."""
    root = case.root
    if root.signature != "cuda-device-assert-kernel":
        return False
    if not _TABLE_INDEX_ASSERT.search(root.captures.get("assertion", "")):
        return False
    return not any(e.kind == "progress" for e in case.ctx.events)


#: libfabric EFA provider status codes (prov/efa/src/efa_errno.h, printed by aws-ofi-nccl as
#: "NET/OFI Request ... completed with error. RC: <rc>. Error: <code> (<text>)") that describe the
#: *remote* end of the request: 7-15 (remote memory key, connection reset by the remote peer, bad
#: destination QP, receiver not ready, unresponsive / unreachable remote, no address handle at the
#: remote side), 4113 (posting the handshake to the peer failed), 4124 and 4126 (unresponsive
#: receiver, before or after the handshake).
EFA_REMOTE_END_CODES = frozenset({7, 8, 9, 10, 11, 12, 13, 14, 15, 4113, 4124, 4126})
#: ibverbs work-completion statuses (enum ibv_wc_status) that say the remote side did not take the
#: request: 9 REM_INV_REQ, 10 REM_ACCESS_ERR, 11 REM_OP_ERR, 12 RETRY_EXC_ERR (the peer stopped
#: answering), 13 RNR_RETRY_EXC_ERR (the peer posted no receive), 15 REM_ABORT_ERR.
IB_REMOTE_END_STATUSES = frozenset({9, 10, 11, 12, 13, 15})
_LEADING_CODE = lazy_regex.compile(r"\s*(\d{1,5})\b")


def remote_end_transport_error(root: Finding) -> str | None:
    """The error text when ``root`` is a transport completion error about the other end of a
    rank's connection (:data:`EFA_REMOTE_END_CODES`, :data:`IB_REMOTE_END_STATUSES`), else ``None``.

    Mechanism: the NIC reports the failure to the rank whose request it was -- the sender whose
    receiver did not answer the handshake, whose peer stopped acknowledging -- so the rank that
    prints it is one end of a broken link, and the unresponsive end (another node, its process
    gone or its port blocked) is the suspect; the line names that peer by address only."""
    if root.signature == "efa-ofi-error":
        text = root.captures.get("error", "")
        m = _LEADING_CODE.match(text)
        if m is not None and int(m.group(1)) in EFA_REMOTE_END_CODES:
            # newer plugins append both endpoints' addresses ("... handshake failed) My EFA
            # addr: ... Peer host id: N/A)"): keep the code and its description
            text = text.split(" My ", 1)[0].strip()[:120]
            return text + ")" * max(0, text.count("(") - text.count(")"))
    elif root.signature == "ib-completion-error":
        status = root.captures.get("status", "")
        if status.isdigit() and int(status) in IB_REMOTE_END_STATUSES:
            return f"status {status}"
    return None


def lone_transport_reporter(case: Case, rank: int) -> bool:
    """Whether ``rank``, the one rank that printed a transport completion error about the
    other end of its connection (:func:`remote_end_transport_error`), is the initiator after
    all: the log shows other ranks' own output (a whole job's log: ``srun -l``, torchrun's
    ``[rankN]:``), and none of them failed on its own (no cause finding of another rank, no
    exception nothing explains, no exit the launcher saw) -- they only wait, time out or
    abort after it, or print nothing more until the scheduler stops the job.

    Mechanism: the peer that did not acknowledge is one of the job's own processes. Had it
    died or raised, its rank's output or the launcher's exit line would be in a whole-job
    log; it is alive and silent, so the broken path is the one the reporting rank's own NIC
    saw fail (its port, its cable, a RoCE port the rings were routed over), and that rank's
    node is the one to act on. A paste of one rank alone (no other rank's output) keeps
    the peer as the suspect."""
    ctx = case.ctx
    if not (ctx.state.ranks_seen - {rank}):
        return False
    for f in ctx.findings:
        if f is case.root or f.rank is None or f.rank == rank:
            continue
        if ctx.kind(f) in ("cause", "hardware") and not ctx.peer_report(f):
            return False
    if unexplained_failure_elsewhere(rank, case) is not None:
        return False
    return launcher_first_elsewhere(rank, case) is None


#: NCCL's socket layer failing to open a connection to a peer (src/misc/socket.cc):
#: ``socketStartConnect: Connect to 10.0.0.2<48127> failed : No route to host``,
#: ``socketPollConnect poll() returned 1, no POLLOUT events``, ``socketPollConnect: Connect to
#: ... returned 111(Connection refused)``, ``socketStartConnect: exceeded retries (20000)``, and
#: NCCL 2.0-2.3's ``Call to connect failed : Connection refused``.
_SOCKET_CONNECT = lazy_regex.compile(
    r"(?P<what>socket(?:Start|Poll)Connect\b[^\n]{0,160}|Call to connect failed[^\n]{0,80}"
    r"|\bConnect to \S+ failed ?:[^\n]{0,80})"
)
#: Lines after the root's own line that may hold its ``Last error:`` detail (PyTorch prints
#: the error, the ncclSystemError explanation, "Last error:", then the detail).
_DETAIL_SPAN = 4
#: The classes whose root may be a failed connection to a peer.
_CONNECT_CLASSES = frozenset({"nccl-system-error", "network-fabric-error"})


def socket_connect_failure(case: Case) -> str | None:
    """The text of NCCL's failed socket connection (:data:`_SOCKET_CONNECT`) when the root is
    one: on the root's own line (``nccl-socket-connect-failed``) or in its ``Last error:``
    detail, up to :data:`_DETAIL_SPAN` lines after its line in the same file, on lines of the
    root's own rank or of none; else ``None``.

    Mechanism: a connection is two ends, and the one that reports the failure is the end
    that dialled: the peer it dialled did not answer (it had exited or not started yet, a
    firewall dropped the packets, or it advertised an address this end cannot route to:
    a container's or a link-local interface). NCCL's line names the peer by address or not
    at all, never by rank, so one rank's paste of it shows one end of a broken link, not
    which end broke it."""
    root = case.root
    if root.failure_class not in _CONNECT_CLASSES or not root.evidence:
        return None
    ev = root.evidence[0]
    texts = [*case.ctx.state.heads, *case.ctx.state.tails]
    for src, first, text in texts:
        if src != ev.path or first > ev.line:
            continue
        lines = text.split("\n")
        start = ev.line - first
        if start >= len(lines):
            continue
        for line in lines[start : start + _DETAIL_SPAN + 1]:
            own = regex_code.match(r"\s*\[rank(\d+)\]:", line)
            if own is not None and root.rank is not None and int(own.group(1)) != root.rank:
                continue
            m = _SOCKET_CONNECT.search(line)
            if m is not None:
                return m.group("what").strip()
    return None


def memory_registration_refused(case: Case) -> bool:
    """The root is NCCL's InfiniBand memory registration refused (``ib-verbs-call-failed``
    with verb ``ibv_reg_mr``: "Bad address", "Cannot allocate memory"). Mechanism: every
    process registers its buffers with the HCA the same way when it builds its
    communicator, and what refuses it is the host's set-up (the locked-memory limit, the
    GPUDirect RDMA peer-memory module), alike for every process of a node configured
    alike; which rank's copy of it a log shows is which process printed first. (A queue
    pair that cannot connect, ``ibv_modify_qp``, is a link between two peers: not this.)"""
    return (
        case.root.signature == "ib-verbs-call-failed"
        and case.root.captures.get("verb") == "ibv_reg_mr"
    )


def parameter_dtype_mismatch(case: Case) -> bool:
    """The root is a dtype mismatch between a module's own parameter and its input (the
    ``param`` capture of ``dtype-mismatch``: conv/linear's "Input type (c10::Half) and bias
    type (float) should be the same"). Mechanism: every rank builds the same model (one dtype
    for its weights) and runs the same code that casts the input (``.half()``, autocast or
    none), so the mismatch is the code's, not one rank's data: a batch of another dtype
    would need one rank's shard stored in another dtype, and is not what this message
    compares."""
    return case.root.failure_class == "dtype-mismatch" and bool(case.root.captures.get("param"))


#: Frames of data loading: an exception raised there reads a rank's own shard of the data.
_DATA_FRAME = lazy_regex.compile(r"(?i)(?:[/\\]utils[/\\]data[/\\]|dataset|dataloader|collat)")


#: Python's exceptions of program logic: given the same code and config, every process
#: raises them alike (an arithmetic on a config value, a missing name or attribute, a
#: call with the wrong arguments, an import). Not OSError and its kin (a lock, a file, a
#: socket: one process's environment), nor RuntimeError (CUDA, NCCL), MemoryError, nor
#: ValueError, KeyError, IndexError or AssertionError: a check that one rank's own shard
#: of the data fails raises those ("record 29: expected 16 features, got 15").
LOGIC_EXCEPTIONS = frozenset(
    {
        "ZeroDivisionError",
        "TypeError",
        "NameError",
        "AttributeError",
        "ImportError",
        "ModuleNotFoundError",
        "SyntaxError",
        "UnboundLocalError",
    }
)


def setup_exception(case: Case) -> bool:
    """The root is a plain Python exception no signature names (``user-code-exception``) of
    program logic (:data:`LOGIC_EXCEPTIONS`), on no rank, raised before the log shows any
    training progress and not while reading data: the job's set-up, which every rank runs
    alike on one config (verl's ``global_step // steps_per_epoch`` with zero steps per
    epoch). Which rank the launcher saw exit first is then a race between identical
    failures."""
    from rootrank.analysis.prepare import EXCEPTION_SIGNATURE

    root = case.root
    if root.signature != EXCEPTION_SIGNATURE or root.rank is not None:
        return False
    if root.captures.get("exc_type", "").rsplit(".", 1)[-1] not in LOGIC_EXCEPTIONS:
        return False
    if any(e.kind == "progress" for e in case.ctx.events):
        return False
    lines = {(e.path, e.line) for e in root.evidence}
    for seen in case.ctx.state.exceptions:
        if (seen.path, seen.exc.log_line) in lines:
            files = [fr.file for fr in seen.exc.frames]
            return bool(files) and not any(_DATA_FRAME.search(f) for f in files)
    return False


def went_further(case: Case, rank: int) -> str | None:
    """The reason (``went_further``) when other ranks (two at least) printed their own lines
    that ``rank`` never printed, and none of them failed before printing them: they ran past
    the point where ``rank`` stopped, so a set-up error only ``rank`` raised is ``rank``'s own
    (its value differed: a per-node environment, a rank-dependent config), not a race between
    identical failures. ``None`` otherwise.

    Lines are each rank's own set-up lines (:func:`rootrank.analysis.oddline.rank_templates`):
    ``[node0] rank 2: dp=2 tp=2 -> dp_rank 1 tp_rank 0`` on ranks 0-2 after the check that
    raised ``AssertionError: world_size (4) must be divisible by tensor parallel size (3)`` on
    rank 3 alone."""
    from rootrank.analysis.oddline import rank_templates

    by_rank, failed_at = rank_templates(case.ctx)
    own = by_rank.get(rank, {})
    ahead: dict[int, tuple[int, str]] = {}
    for other, templates in by_rank.items():
        if other == rank:
            continue
        lines = [
            (line, text)
            for tmpl, (line, text) in templates.items()
            if tmpl not in own and line < failed_at.get(other, line + 1)
        ]
        if lines:
            ahead[other] = min(lines)
    if len(ahead) < 2:
        return None
    line, text = min(ahead.values())
    return say("went_further", rank=rank, others=ranks_word(sorted(ahead)), line=line, text=text)


def first_mismatched_peer(case: Case) -> Verdict | None:
    """The rank a collective-fingerprint mismatch names as the first to run another
    collective, when the reports show two or more ranks agreeing against it
    (:func:`rootrank.analysis.wrapper_peer.odd_peer`, which gives the mechanism); the job's
    size (:func:`job_world`) when the log states it bounds the ranks left unseen."""
    from rootrank.analysis.wrapper_peer import DESYNC_CLASS, odd_peer

    if case.root.failure_class != DESYNC_CLASS:
        return None
    found = odd_peer(case.ctx.findings, job_world(case))
    if found is None:
        return None
    odd, agree = found
    why = say("first_mismatched_peer", rank=odd, agree=format_ranks(sorted(agree)))
    return Verdict(odd, why, "first_mismatched_peer", (odd, *sorted(agree)))


def alone_in_world(case: Case, rank: int) -> bool:
    """Whether ``rank`` is the only process the job had: rank 0 of a world of size 1 (the
    world size the scan read: ``world_size = 1``, ``WORLD_SIZE=1``; DeepSpeed's launcher
    prints ``dist_world_size=1`` beside its config's ``world_size = 1``) and no other rank
    known from any line or launcher report. A set-up error there has no other rank that could
    have raised it first, so "every rank runs the same set-up" names no doubt."""
    return rank == 0 and case.ctx.state.world_size == 1 and case.ctx.known_ranks() <= {rank}


def named_by_root(case: Case) -> Verdict | None:
    """A cause reported by one rank happened on that rank (an OOM, an exception), unless
    another rank failed with an exception nothing explains, no later as far as the log
    shows, or its traceback is cut: then the log does not prove which came first. A
    failure of the job's set-up (:data:`SAME_ON_EVERY_RANK`) in a log that shows no other
    rank at all is every rank's, not one rank's. A message that compares its rank with one
    other (a ``peer_rank`` capture: DDP's "does not match ... in process 0") says the two
    differ, not which one deviates: in a log that shows no other rank (not the peer's own
    output, nor a third rank that did not complain), it names no rank. So does a comparison
    whose peer's half the paste cut (a ``self_rank`` capture without ``peer_rank``:
    ProcessGroupWrapper's "Rank 1 is running collective: ..." that each side of a mismatch
    raises with its own rank first), and torch 1.10-1.12's "Rank 0 is running inconsistent
    collective: ..." (a ``reports_own_rank`` capture): every rank that finds a fingerprint unequal to
    its own raises it with its own rank, the odd rank and the others alike."""
    if case.root.role != "cause" or len(case.ranks_with) != 1:
        return None
    if case.root.captures.get("exit_type") in UNREQUESTED_EXITS:
        return None  # a process manager's report of a pid's death: died_unrequested's case
    rank = case.ranks_with[0]
    if alone_in_world(case, rank):
        return Verdict(rank, say("alone_in_world", rank=rank), "named_by_root", (rank,))
    if same_on_every_rank(case) and not (case.ctx.state.ranks_seen - {rank}):
        past = went_further(case, rank)
        if past is not None:
            return Verdict(rank, past, "named_by_root", (rank,))
        code = sole_launcher_failure(case, rank)
        if code is not None:
            why = say("sole_launcher_failure", rank=rank, code=code)
            return Verdict(rank, why, "named_by_root", (rank,))
        return Verdict(None, say("same_on_every_rank", rank=rank), "named_by_root", (rank,), True)
    remote = remote_end_transport_error(case.root)
    if remote is not None and not lone_transport_reporter(case, rank):
        why = say("remote_end_transport", rank=rank, what=remote)
        return Verdict(None, why, "named_by_root", (rank,), True)
    library = unloadable_library(case)
    if (
        library is not None
        and went_further(case, rank) is None
        and unexplained_failure_elsewhere(rank, case) is None
    ):
        # a driver library the host or container lacks: every rank on it fails the same load
        why = say("host_library", rank=rank, library=library)
        return Verdict(None, why, "named_by_root", (rank,), True)
    awaited = awaited_from_peers(case)
    if (
        awaited is not None
        and unexplained_failure_elsewhere(rank, case) is None
        and not own_fault_elsewhere(case, rank)
    ):
        # a wait for the peers' data timed out: the first process to time out, not a cause
        why = say("peer_wait_timeout", rank=rank, awaited=awaited)
        return Verdict(None, why, "named_by_root", (rank,), True)
    node = node_environment_shared(case, rank)
    if node is not None:
        host, mates = node
        why = say("node_environment", rank=rank, host=host, mates=format_ranks(mates))
        return Verdict(None, why, "named_by_root", (rank, *mates), True)
    connect = socket_connect_failure(case)
    if connect is not None and not (case.ctx.known_ranks() - {rank}):
        why = say("connect_one_end", rank=rank, what=connect)
        return Verdict(None, why, "named_by_root", (rank,), True)
    # a root read from a launcher's line about the rank (its exit code, its local rank) is
    # no output of the rank's own: that line is the launcher's evidence
    more = (
        None
        if source_side_serialization(case) is not None
        else filtered_view(case.ctx, rank, root_collective(case))
    )
    if more is not None and not {"exitcode", "local_rank"} & set(case.root.captures):
        why = say("only_visible_rank", rank=rank, more=more)
        return Verdict(None, why, "named_by_root", (rank,), True)
    engine = serving_engine_rank_zero(case, rank)
    if engine is not None:
        why = say("engine_rank_zero", rank=rank, engine=engine)
        return Verdict(None, why, "named_by_root", (rank,), True)
    peer = case.root.captures.get("peer_rank", "")
    if peer.isdigit() and int(peer) != rank and not (case.ctx.known_ranks() - {rank}):
        # "rank 2's param differs from process 0's", and no other rank's output in the log
        why = say("pair_no_majority", rank=rank, peer=int(peer))
        return Verdict(None, why, "named_by_root", (rank, int(peer)), True)
    if (
        (
            case.root.captures.get("self_rank", "").isdigit()
            or case.root.captures.get("reports_own_rank")
        )
        and not peer.isdigit()
        and not (case.ctx.known_ranks() - {rank})
    ):
        why = say("comparison_reporter", rank=rank)
        return Verdict(None, why, "named_by_root", (rank,), True)
    loading = set_up_oom_elsewhere(case, rank)
    if loading is not None:
        why = say(
            "set_up_oom_elsewhere",
            rank=rank,
            other=loading,
            ranks=format_ranks(sorted({loading, rank})),
        )
        return Verdict(None, why, "named_by_root", (rank, loading), True)
    cut = earlier_cut_trace(rank, case)
    if cut is not None:
        why = say("cut_trace_before", rank=rank, line=cut)
        return Verdict(None, why, "named_by_root", (rank,), True)
    other = unexplained_failure_elsewhere(rank, case)
    if other is not None:
        return Verdict(
            None,
            say("unexplained_elsewhere", other=other, ranks=format_ranks(sorted({other, rank}))),
            "named_by_root",
            (rank, other),
            True,
        )
    first = launcher_first_elsewhere(rank, case)
    if first is not None:
        other, code = first
        return Verdict(
            None,
            say(
                "launcher_first_elsewhere",
                rank=rank,
                other=other,
                code=code,
                ranks=format_ranks(sorted({other, rank})),
            ),
            "named_by_root",
            (rank, other),
            True,
        )
    return Verdict(rank, "", "named_by_root", (rank,))


#: Where a frame is a call of a communication layer's collective over a process group:
#: torch.distributed's API (``distributed_c10d.py``: its public functions), the NCCL
#: wrappers vLLM and SGLang call instead of it (``distributed/device_communicators/``:
#: pynccl, custom all-reduce, ``<rank0>`` of a TP group) and DeepSpeed's ``deepspeed/comm``.
_COLLECTIVE_LAYERS = (
    "/distributed/distributed_c10d.py",
    "/distributed/device_communicators/",
    "/deepspeed/comm/",
)


def root_collective(case: Case) -> str | None:
    """The collective call the root's own exception was raised in (the outermost frame of a
    communication layer, :data:`_COLLECTIVE_LAYERS`, with a public function name: the call
    the caller made, ``all_reduce``, not the layer's own error check), else ``None``. A collective is made by every member of its group, so a
    failure raised inside one proves the job ran more ranks than the one printing it."""
    lines = {(e.path, e.line) for e in case.root.evidence}
    for seen in case.ctx.state.exceptions:
        if (seen.path, seen.exc.log_line) not in lines:
            continue
        for frame in seen.exc.frames:
            path = frame.file.replace("\\", "/")
            if (
                any(layer in path for layer in _COLLECTIVE_LAYERS)
                and frame.func
                and not frame.func.startswith("_")
                and "wrapper" not in frame.func  # deepspeed.comm's log_wrapper: the next frame
            ):
                return frame.func
        return None
    return None


#: torch.distributed's object collectives in which only the source rank pickles the objects
#: (distributed_c10d.py: ``broadcast_object_list`` and ``scatter_object_list`` call
#: ``_object_to_tensor`` under ``if my_group_rank == group_src``; ``send_object_list`` on the
#: sender), unlike ``all_gather_object`` and ``gather_object``, where every rank pickles its own.
_SOURCE_PICKLES = frozenset({"broadcast_object_list", "scatter_object_list", "send_object_list"})


def source_side_serialization(case: Case) -> str | None:
    """The object collective's name when the root's own exception was raised while its rank
    pickled the objects it was to send as the collective's source (a frame of
    ``_object_to_tensor`` inside one of :data:`_SOURCE_PICKLES`), else ``None``.

    Mechanism: only the source rank serialises the objects, before anything is sent, so an
    error there (``AttributeError: Can't pickle local object ...``, a ``PicklingError``) is
    that rank's own and happens on no other rank: the others wait in the collective for
    data that never comes. It is not a copy of a failure every member of the collective
    raises, so a log that shows only this rank still shows the rank that started it."""
    lines = {(e.path, e.line) for e in case.root.evidence}
    for seen in case.ctx.state.exceptions:
        if (seen.path, seen.exc.log_line) not in lines:
            continue
        funcs = [fr.func for fr in seen.exc.frames]
        call = next((f for f in funcs if f in _SOURCE_PICKLES), None)
        if call is not None and "_object_to_tensor" in funcs[funcs.index(call) :]:
            return call
        return None
    return None


#: Frames of an inference engine's own worker code, and the engine's name: its process
#: group's rank 0 is the engine's driver process (vLLM's LLMEngine / EngineCore, SGLang's
#: scheduler of TP 0), which runs the model like every other worker.
_ENGINE_FRAMES = (("/vllm/", "vLLM"), ("/sglang/", "SGLang"))


def serving_engine_rank_zero(case: Case, rank: int) -> str | None:
    """The engine's name when ``rank`` is 0, the only rank the log shows, and the root's own
    traceback runs through an inference engine's code (:data:`_ENGINE_FRAMES`); else ``None``.

    Mechanism: vLLM (and SGLang) initialise torch.distributed in the engine's own process
    whatever the parallel size, so its traceback is prefixed ``[rank0]:`` even with one GPU;
    with tensor parallelism the other workers run the same model code on their shards (the
    same profiling run, the same CUDA-graph capture, the same all-reduce) and their copies of
    the error are in their own processes' output, which the paste does not show. Rank 0 there
    is the engine process, not evidence of which worker failed first. A launcher's report
    of rank 0's own exit would be (:func:`filtered_view` keeps that exception)."""
    st = case.ctx.state
    if rank != 0 or st.ranks_seen != {0} or 0 in launcher_exits(case.ctx.events):
        return None
    lines = {(e.path, e.line) for e in case.root.evidence}
    for seen in st.exceptions:
        if (seen.path, seen.exc.log_line) not in lines:
            continue
        for frame in seen.exc.frames:
            path = frame.file.replace("\\", "/")
            for part, name in _ENGINE_FRAMES:
                if part in path:
                    return name
        return None
    return None


def filtered_view(ctx: Context, rank: int, collective: str | None = None) -> str | None:
    """Why the log is one rank's view of a job with more ranks, so that ``rank`` printing
    the error is no evidence that it started the failure; ``None`` when it is not.

    All of: ``rank`` is the only rank any line is tagged with; it is a rank an output filter
    keeps (torchrun's ``--local-ranks-filter``, a launch script's ``LOG_RANK``), or rank 0
    (the one rank-0-only logging and most launch scripts keep: torchtitan's run_train.sh,
    ``if rank == 0: print``); the log shows the job had more ranks (the filter itself, a
    world size, ``--nproc-per-node`` or a launch script's ``NGPU=``/``GPUS_PER_NODE=`` above
    1, another rank in a launcher's summary, or an agent with several workers); and no
    launcher reports ``rank`` exiting by itself (torchelastic's first observed failure, an
    exit code of its own): that report would be independent evidence. Returns the phrase
    that shows the other ranks (an inference engine's printed layout counts: vLLM's
    ``tensor_parallel_size=2`` runs two worker processes, rank 0 in the engine's own, whose
    ``[rank0]:`` lines are then one worker's of two). A single-process job (world size 1, ``--nproc-per-node 1``
    on one node) and a log where several ranks print keep their rank. ``collective``: the
    collective call the error was raised in (:func:`root_collective`), itself a proof of
    other ranks (every member of the group makes the call: vLLM's engine process is TP
    rank 0 and prints ``[rank0]:``, its workers the same failing all-reduce)."""
    st = ctx.state
    facts = st.launch
    if st.ranks_seen != {rank}:
        return None
    if rank not in (facts.rank_filter_keeps or (0,)):
        return None
    if st.world_size == 1:
        return None
    more: str | None = None
    if facts.rank_filter:
        more = f"its output is filtered to one rank: {facts.rank_filter}"
    elif st.world_size and st.world_size > 1:
        more = f"world size {st.world_size}"
    elif facts.nproc_per_node and facts.nproc_per_node > 1:
        more = f"{facts.nproc_per_node} workers per node"
    elif ctx.known_ranks() - {rank}:
        more = f"the log names {ranks_word(sorted(ctx.known_ranks() - {rank}))}"
    elif len(facts.agent_pids) > 1:
        more = f"torchrun's agent ran {len(facts.agent_pids)} workers"
    elif (engine := facts.engine_processes()) is not None and engine > 1:
        layout = ", ".join(f"{k}_parallel_size={v}" for k, v in facts.engine_parallel.items())
        more = f"the engine runs {engine} worker processes: {layout}"
    elif collective is not None:
        more = f"the error was raised inside the collective {collective}, which every rank of its group calls"
    if more is None:
        return None
    if rank in launcher_exits(ctx.events):
        return None  # the launcher saw it exit by itself: evidence beyond its own output
    return more


#: Seconds under which one rank's lead in time is a tie (:func:`earliest_time`): processes
#: that poll the same asynchronous error (the NCCL watchdog checks its work every 100 ms)
#: print it within microseconds of each other, and the order they print in is scheduling,
#: not causality.
TIE_MARGIN_S = 0.001


def alone_in_first_attempt(case: Case) -> Verdict | None:
    """Several ranks report the root's fault (its signature and exception type) in the last
    attempt of a job torchrun restarted (``--max-restarts``), and in the job's first attempt
    one of them alone raised it: that rank started it.

    Mechanism: a restart reruns the same script on the same inputs, so a deterministic fault
    comes back; but each failed attempt leaves things behind (directories and files it
    created, half-written caches, a partial checkpoint), and those can make other ranks fail
    the same way in the attempts after it. The first attempt ran on the state the job was
    started on, so which ranks failed there is the fault's own reach. Reads
    ``ScanState.earlier_findings`` (the attempts before the last, set aside by the scan) and
    ``ScanState.attempt_starts`` (where the second attempt begins)."""
    if case.root.role != "cause" or len(case.ranks_with) < 2:
        return None
    state = case.ctx.state
    if not state.attempt_starts or not state.earlier_findings:
        return None
    second = state.attempt_starts[0]
    kind = case.root.captures.get("exc_type")
    first = {
        f.rank
        for f in state.earlier_findings
        if f.signature == case.root.signature
        and f.captures.get("exc_type") == kind
        and f.evidence
        and min(e.line for e in f.evidence) < second
    }
    if len(first) != 1:
        return None
    rank = next(iter(first))
    if rank is None or rank not in case.ranks_with:
        return None
    return Verdict(
        rank,
        say(
            "alone_first_attempt",
            Ranks=ranks_word(case.ranks_with),
            line=second,
            rank=rank,
            exc=kind or case.root.title,
        ),
        "alone_in_first_attempt",
        (rank,),
    )


#: srun's report of tasks that ended by themselves (src/srun: ``srun: error: nid006742: tasks
#: 32-33: Exited with exit code 1``) and of tasks its own teardown killed (``... task 5: Killed``).
_SRUN_EXITED = lazy_regex.compile(
    r"srun: error: (?P<host>[\w.-]+): tasks? (?P<task>[\d,-]+): Exited with exit code (?P<code>\d+)"
)


def one_host_exited(case: Case) -> Verdict | None:
    """The ranks that report the root are exactly the tasks srun says exited by themselves
    (``srun: error: nid006742: tasks 32-33: Exited with exit code 1``, ``tasks 34-35: ...``),
    all on one host, while srun killed every other task of the step (``... tasks 12,15:
    Killed``: its teardown after the first bad exit). One node's tasks failed alike (an init
    error of that node's environment, driver or network plugin), and there is no order to
    read inside one node that fails identically: the node is the initiator, named by its
    first rank.

    Every srun ``Exited`` line must be in the findings' evidence (none dropped), name one
    host, and its tasks must equal the root's reporting ranks (at least two)."""
    reporters = set(case.ranks_with)
    if len(reporters) < 2:
        return None
    exited: set[int] = set()
    hosts: set[str] = set()
    killed = False
    for f in case.ctx.findings:
        texts = [ev.text for ev in f.evidence]
        found = [m for t in texts for m in [_SRUN_EXITED.search(t)] if m is not None]
        if found and f.count > len(f.evidence):
            return None  # some Exited lines were not kept: the census is incomplete
        for m in found:
            hosts.add(m.group("host"))
            exited.update(_task_ids(m.group("task")))
        killed = killed or any(
            "srun: error: " in t and t.rstrip().endswith(": Killed") for t in texts
        )
    if not killed or len(hosts) != 1 or exited != reporters:
        return None
    host = next(iter(hosts))
    first = min(reporters)
    why = say("one_host_exited", ranks=format_ranks(sorted(reporters)), host=host, first=first)
    return Verdict(first, why, "one_host_exited", (first,))


#: A quoted name in an exception message: ``'ShardStats4'``, ``"labels"``.
#: (an apostrophe inside a word, ``Can't``, opens none).
_QUOTED = lazy_regex.compile(r"(?<!\w)'([^'\n]{1,200})'(?!\w)|(?<!\w)\"([^\"\n]{1,200})\"(?!\w)")


def odd_message_out(case: Case) -> Verdict | None:
    """Every rank raised the same exception inside the same collective, and the messages
    differ only in a quoted name, held by one rank alone (``Can't get attribute
    'ShardStats4'`` on ranks 0 and 2, ``'ShardStats'`` on rank 1): that rank is the odd one.

    Mechanism: in a collective that exchanges objects or tensors (``all_gather_object``, a
    broadcast of a dict) each rank fails on what its peers sent. When one rank sent something
    of another kind (a class only its record built, a key only its shard has), every other
    rank fails on that rank's item and names it, while that rank fails on the others' and
    names theirs: the one message apart is the odd rank's (heldout r19d case 04: rank 1's
    shard made ``ShardStats4``, unpickled by class name). Needs three ranks at least, each
    with one report of the root's signature naming a collective (the ``collective`` capture),
    messages alike once the quoted names are taken out."""
    by_rank: dict[int, str] = {}
    for f in case.group:
        if f.rank is None or not f.captures.get("collective"):
            continue
        message = f.captures.get("message", "")
        if not message or by_rank.setdefault(f.rank, message) != message:
            return None  # a rank reporting two messages: no single value per rank
    if len(by_rank) < 3:
        return None
    skeletons = {_QUOTED.sub("''", m) for m in by_rank.values()}
    if len(skeletons) != 1:
        return None
    names = {r: tuple(a or b for a, b in _QUOTED.findall(m)) for r, m in by_rank.items()}
    counts = Counter(names.values())
    if len(counts) != 2:
        return None
    (majority, n_major), (odd, n_odd) = counts.most_common(2)
    if n_odd != 1 or n_major < 2:
        return None
    rank = next(r for r, v in names.items() if v == odd)
    differ = [(a, b) for a, b in zip(odd, majority, strict=True) if a != b]
    value, usual = differ[0] if differ else (", ".join(odd), ", ".join(majority))
    exc = case.root.captures.get("exc_type") or "the same error"
    why = say("odd_message", exc=exc, rank=rank, value=value, majority=usual)
    return Verdict(rank, why, "odd_message_out", (rank,))


def earliest_time(case: Case) -> Verdict | None:
    """Several ranks report the same cause: the first by timestamp started it; without
    times (or a tie: another rank's report less than :data:`TIE_MARGIN_S` later) the log
    does not tell. Reads the group's finding events."""
    if case.root.role != "cause" or len(case.ranks_with) < 2:
        return None
    sig = case.root.signature
    ranked = [
        e
        for e in of_kind(case.ctx.events, "finding")
        if e.ref.signature == sig and e.rank is not None
    ]
    timed = [e for e in ranked if e.time is not None]
    if len(timed) == len(ranked):
        from rootrank.analysis.spread import own_stamp, same_second  # for the logs that get here

        first = min(timed, key=lambda f: f.time or 0.0)
        tied = [
            f
            for f in timed
            if f.rank != first.rank and (f.time or 0.0) - (first.time or 0.0) < TIE_MARGIN_S
        ]
        second = [
            f
            for f in timed
            if f.rank != first.rank
            and same_second(
                first.time or 0.0,
                f.time or 0.0,
                own_stamp(first.ref, first.line),
                own_stamp(f.ref, f.line),
            )
        ]
        if second and not tied:
            ranks = sorted({r for r in [first.rank, *(f.rank for f in second)] if r is not None})
            return Verdict(
                None,
                say("same_second", Ranks=ranks_word(ranks), time=fmt_time(first.time)),
                "earliest_time",
                tuple(case.ranks_with),
                True,
            )
        if not tied and first.rank is not None:
            return Verdict(
                first.rank,
                say("reported_first", rank=first.rank, time=fmt_time(first.time)),
                "earliest_time",
                (first.rank,),
            )
    printed_first = _first_in_log_and_exit(case, ranked)
    if printed_first is not None:
        return printed_first
    return Verdict(
        None,
        say("all_report", Ranks=ranks_word(case.ranks_with)),
        "earliest_time",
        tuple(case.ranks_with),
        True,
    )


def _first_in_log_and_exit(case: Case, ranked: list[Any]) -> Verdict | None:
    """The tie-break of several ranks that report the same cause with no usable times: the
    rank that printed it first in the log (one file) when the launcher also reports that
    rank's own end (a real exit code or a crash, :func:`_own_ends`) before any other rank's.

    Mechanism: srun (``srun: error: <host>: task 3: Exited with exit code 1``) reports task
    exits in the order it sees them; a rank that hit the failure first, printed it first and
    was the first to exit by itself is the one that started the job's end, and the others
    (the same failure, later) are its twins. One signal alone (line order of interleaved
    streams, or the exit order) does not tell; both agreeing does. ``ranked`` are the
    group's finding events with a rank. ``None`` when the signals disagree or one is
    missing, when the failure is one every rank hits alike (:func:`same_on_every_rank`)
    or every rank the log knows reports it: a set-up error all ranks raise is a race, and
    the first to exit is only the fastest, not the one that started it."""
    paths = {e.path for e in ranked}
    if len(paths) != 1 or len(ranked) < 2 or same_on_every_rank(case):
        return None
    if not case.ctx.known_ranks() - set(case.ranks_with):
        return None
    by_line = sorted(ranked, key=lambda e: e.line)
    if by_line[0].line == by_line[1].line or by_line[0].rank == by_line[1].rank:
        return None
    first_printed = by_line[0].rank
    ended = _own_ends(case)
    if not ended or ended[0][1] != first_printed:
        return None
    return Verdict(
        first_printed,
        say(
            "printed_and_exited_first",
            rank=first_printed,
            line=by_line[0].line,
            code=ended[0][2],
            others=ranks_word(sorted(set(case.ranks_with) - {first_printed})),
        ),
        "earliest_time",
        (first_printed,),
    )


#: Failure classes of a launcher's report that a task crashed by itself (srun's "task 4:
#: Segmentation fault"): a crash signal no launcher sends.
_CRASH_CLASSES = frozenset({"segfault", "sigbus", "sigfpe"})


def _own_ends(case: Case) -> list[tuple[int, int, str]]:
    """The launcher's reports of ranks that ended by themselves, in log order: ``(line, rank,
    what)`` for each exit event with a real code (:func:`real_exit`: ``srun: error: node:
    task 3: Exited with exit code 1``, what = the code) and each crash report that names its
    task (a finding of :data:`_CRASH_CLASSES` with a ``task`` capture: ``srun: error: node:
    task 4: Segmentation fault``, what = its class), one file's lines only (the root's)."""
    path = case.root.evidence[0].path if case.root.evidence else ""
    ends: list[tuple[int, int, str]] = [
        (e.line, e.rank, f"exit code {e.code}")
        for e in case.ctx.events
        if e.kind == "exit"
        and e.rank is not None
        and real_exit(e.code) is not None
        and e.path == path
    ]
    for f in case.ctx.findings:
        if f.failure_class not in _CRASH_CLASSES or not f.evidence:
            continue
        for ev in f.evidence:
            m = regex_code.search(r"\btasks? (\d{1,6}): ", ev.text)
            if m is not None and ev.path == path:
                ends.append((ev.line, int(m.group(1)), f.failure_class))
    return sorted(ends)


def child_exit_report(case: Case) -> Verdict | None:
    """A launcher-less parent's report of its numbered children's exit codes (``exit codes:
    {'trainer-0': 1, 'trainer-2': -11}``) names the one child a crash signal ended, or the
    one that alone failed (:func:`rootrank.analysis.child_exits.initiating_child`); not
    when torchelastic's summary is in the log (it reports the ranks itself)."""
    if case.ctx.state.elastic:
        return None
    from rootrank.analysis.child_exits import initiating_child

    found = initiating_child(case.ctx.state)
    if found is None:
        return None
    rank, why = found
    return Verdict(rank, why, "child_exit_report", (rank,))


#: gloo's receive-size enforce (gloo/transport/tcp/pair.cc): the receiving rank aborts when a
#: peer sends more bytes than the buffer it posted.
_RECV_ENFORCE = "op.preamble.length <= op.nbytes"


def lone_non_aborter(case: Case) -> Verdict | None:
    """The one rank that did not abort, when gloo's receive-size enforce aborted every other
    rank of the job (torchelastic's summary: exit -6 / SIGABRT on all ranks but one).

    Mechanism: gloo checks sizes only where data arrives (pair.cc: ``op.preamble.length <=
    op.nbytes``): a rank aborts when a peer sends it more bytes than it posted, and a rank that
    receives less than it posted goes on. In a collective where every rank receives from every
    other (all_to_all, all_gather, broadcast), one rank sending more than the others expect
    aborts all of them, while it receives what it expects, or less, and only sees their
    connections close. So when all ranks but one aborted in that enforce, the one left is the
    sender of the oversized data. Not when a line of the log ties the enforce to a rank (the
    other strategies read those), nor with fewer than two aborted ranks (a ring's neighbour
    aborts alone)."""
    root = case.root
    if root.failure_class != "collective-shape-mismatch" or case.ranks_with:
        return None
    if not any(_RECV_ENFORCE in e.text for e in root.evidence):
        return None
    entries = [(e.rank, e.exitcode) for e in case.ctx.state.elastic if e.rank is not None]
    ranks = {r for r, _ in entries if r >= 0}
    aborted = {r for r, code in entries if r >= 0 and code in ABORT_CODES}
    world = case.ctx.state.world_size
    if world is not None and ranks != set(range(world)):
        return None  # the summary does not cover every rank of the job
    rest = ranks - aborted
    if len(aborted) < 2 or len(rest) != 1:
        return None
    (rank,) = rest
    why = say("lone_non_aborter", rank=rank, aborted=format_ranks(sorted(aborted)))
    return Verdict(rank, why, "lone_non_aborter", (rank,))


#: Point-to-point calls (torch/distributed/distributed_c10d.py) a traceback may wait in.
_P2P_CALLS = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})


def unpaired_p2p_peer(case: Case) -> Verdict | None:
    """The rank whose printed send/recv peers pair with no other rank's
    (:func:`rootrank.analysis.oddline.p2p_unmatched`), when the root is a hang or desync its
    peers see and some rank's traceback waits in a point-to-point call (``dist.send``,
    ``dist.recv``): a pipeline whose stages wait on each other times out everywhere at once,
    and torchelastic's summary only names the first to give up."""
    from rootrank.tracebacks import collective_call

    if case.root.failure_class not in SEEN_BY_PEERS:
        return None
    if not any(collective_call(s.exc.frames) in _P2P_CALLS for s in case.ctx.state.exceptions):
        return None
    from rootrank.analysis.oddline import p2p_unmatched  # loaded for the logs that get here

    found = p2p_unmatched(case.ctx)
    if found is None:
        return None
    rank, sides, line = found
    why = say(
        "unpaired_p2p_peer",
        rank=rank,
        sides="; ".join(sides),
        where=f"{line.path}:{line.line}",
        text=line.text[:120],
    )
    return Verdict(rank, why, "unpaired_p2p_peer", (rank,))


def odd_call_site(case: Case) -> Verdict | None:
    """The one rank whose collective call site differs, when the ranks' tracebacks of a
    collective failure stop at two call sites and one of them is a single rank's while at
    least two others share the other (:func:`rootrank.entry.frames.call_sites`: the innermost
    user frame and the collective each rank waited in).

    Every rank runs the same loop, so the ranks meet at one call site; a rank that waits in
    another collective, or at another line, went down another branch (a rank-dependent
    condition, an order of group creation of its own), and the others wait at theirs for a
    collective it never reaches: they time out, and so does it, waiting for them. The
    launcher's first observed failure (:func:`elastic_summary`) is only the first to time
    out, so this decides before it; the fix text names the same odd rank (trial r15b,
    finding 6: the headline named rank 0 while the fix said rank 3 was the odd one)."""
    from rootrank.entry.frames import call_sites, short  # the fix's own comparison

    sites = call_sites(case.ctx.state, case.root)
    if len(sites) < 3:
        return None
    groups: dict[tuple[str, int, str | None], list[int]] = {}
    for s in sites:
        if s.rank is not None:  # call_sites keeps ranked tracebacks only
            groups.setdefault((s.file, s.line, s.collective), []).append(s.rank)
    if len(groups) != 2:
        return None
    (key_a, ranks_a), (key_b, ranks_b) = groups.items()
    if len(ranks_a) == 1 and len(ranks_b) >= 2:
        odd, odd_key, rest, rest_key = ranks_a[0], key_a, ranks_b, key_b
    elif len(ranks_b) == 1 and len(ranks_a) >= 2:
        odd, odd_key, rest, rest_key = ranks_b[0], key_b, ranks_a, key_a
    else:
        return None
    why = say(
        "odd_call_site",
        rank=odd,
        its=odd_key[2] or "a call",
        where=f"{short(odd_key[0])}:{odd_key[1]}",
        others=ranks_word(rest),
        theirs=rest_key[2] or "a call",
        their_where=f"{short(rest_key[0])}:{rest_key[1]}",
    )
    return Verdict(odd, why, "odd_call_site", (odd,))


def odd_watchdog_rank(case: Case) -> Verdict | None:
    """The rank of the one faulthandler watchdog stack that stopped elsewhere than the others
    (rootrank.entry.frames.odd_watchdog_stack: the others wait at one collective call site, it
    in its own code): the rank that stalled and held the others up. Its global rank, or the
    launcher's local rank (``[default1]:``) mapped by torchelastic's failure summary (the entry
    of that local rank names its global rank; one entry only), or taken as the global rank when
    the log shows one node (rootrank.analysis.prepare.single_node_proof); ``None`` when the
    stack names neither (an unprefixed log: the report still quotes its frame)."""
    from rootrank.analysis.prepare import single_node_proof
    from rootrank.entry.frames import odd_watchdog_stack, short

    state = case.ctx.state
    odd = odd_watchdog_stack(state, case.root)
    frame = odd.exc.user_frame if odd is not None else None
    if odd is None or frame is None:
        return None
    rank = odd.rank
    if rank is None and odd.local_rank is not None:
        # torchrun's agent prefixes its workers' lines with their local rank and names the
        # same workers' global ranks in its failure summary: one entry of that local rank
        # (one agent's summary) gives it; else one node, where the two are equal
        mapped = {
            e.rank for e in state.elastic if e.local_rank == odd.local_rank and e.rank is not None
        }
        if len(mapped) == 1:
            rank = mapped.pop()
        elif not mapped and single_node_proof(state, odd.local_rank) is not None:
            rank = odd.local_rank
    if rank is None:
        return None
    others = [
        s
        for s in state.cut_tracebacks
        if s is not odd and s.exc.header == "faulthandler" and s.exc.user_frame is not None
    ]
    theirs = others[0].exc.user_frame
    assert theirs is not None
    why = say(
        "odd_watchdog_stack",
        rank=rank,
        where=f"{short(frame.file)}:{frame.line}",
        func=frame.func,
        n=len(others),
        their_where=f"{short(theirs.file)}:{theirs.line}",
        their_func=theirs.func,
    )
    return Verdict(rank, why, "odd_watchdog_rank", (rank,))


def elastic_summary(case: Case) -> Verdict | None:
    """torchelastic's failure summary, last: the only rank with a real failure exit code,
    or the one whose failure is strictly the earliest (see :func:`elastic_rank`).

    A SIGABRT (-6, or a shell's 134) is how the NCCL watchdog ends a rank whose collective
    timed out (ProcessGroupNCCL's ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` tears the process
    down): unless the root is a fault of its own (a cause: a CUDA error's C++ abort), the
    summary's SIGABRT rank is only the first to time out, whatever the root's class (a bare
    summary, a timeout, a failed child)."""
    rank, why = elastic_rank(case.ctx.state.elastic, case.ctx.state.agent_exit_times)
    if rank is not None and case.root.role == "cause" and not case.ranks_with:
        if same_on_every_rank(case):
            # the root names no rank and every rank hits it alike: the agent's first
            # observed failure is only the first of identical ones
            why = say("same_on_every_rank_launcher", rank=rank)
            return Verdict(None, why, "elastic_summary", (rank,), True)
    aborted = [e for e in case.ctx.state.elastic if e.rank == rank and e.exitcode in ABORT_CODES]
    if rank is not None and aborted and case.root.role != "cause":
        return Verdict(None, say("watchdog_abort", rank=rank), "elastic_summary", (rank,), True)
    if (
        rank is not None
        and case.root.role != "cause"
        and case.root.failure_class == "collective-timeout"
        and not case.ranks_with
    ):
        # a timeout no line ties to a rank (faulthandler's watchdog dump, an unprefixed gloo
        # timeout): the summary's rank is the process that reported it, i.e. one that waited;
        # the rank the others waited for never reached the collective
        why = say("timeout_reporter_exit", rank=rank)
        return Verdict(None, why, "elastic_summary", (rank,), True)
    sub = subgroup_of_root(case)
    if rank is not None and sub is not None and rank not in case.ranks_with:
        size, world = sub
        why = say("subgroup_unknown_member", rank=rank, size=size, world=world)
        return Verdict(None, why, "elastic_summary", (rank,), True)
    if rank is not None:
        return Verdict(rank, why, "elastic_summary", (rank,))
    if why:
        return Verdict(None, why, "elastic_summary", (), True)
    return None


#: Where a traceback runs through torchrun's own agent rather than a worker: its console
#: script, ``torch/distributed/run.py``, the launcher API, the elastic agent and its
#: rendezvous handlers (a worker's ``init_process_group`` goes through
#: ``torch/distributed/rendezvous.py`` instead, outside ``elastic/``).
_AGENT_FRAME = lazy_regex.compile(
    r"(?:[/\\]bin[/\\]torchrun$|distributed[/\\]run\.py$|distributed[/\\]launcher[/\\]api\.py$"
    r"|distributed[/\\]launch\.py$|distributed[/\\]elastic[/\\](?:agent|rendezvous)[/\\])"
)

#: How many lines after the root a traceback may start and still be the one the root's
#: process printed while it unwound (the c10d socket warnings come just before it).
IMPLIED_SPAN = 12


def _setup_traceback(case: Case) -> tuple[str, int | None] | None:
    """The traceback the process that failed printed with the root (in its file, starting
    at most :data:`IMPLIED_SPAN` lines after the root's line, or one the log ends inside):
    ``("agent", None)`` when it runs through the launcher (torchrun's agent, its launcher API
    or rendezvous handlers, ``torch/distributed/launch.py``: the store is bound before any
    worker exists); ``("worker", rank)`` when it runs through ``init_process_group`` from the
    user's script and no launcher frame, with the rank its lines are tagged with (``None``
    when untagged). ``None`` when the log shows no traceback of that process."""
    ev = case.root.evidence[0] if case.root.evidence else None
    root_frames = [fr.get("file", "") for fr in case.root.frames]
    if any(_AGENT_FRAME.search(f) for f in root_frames):
        return "agent", None
    if ev is None:
        return None
    st = case.ctx.state
    for seen in [*st.exceptions, *st.cut_tracebacks]:
        if seen.path != ev.path or not seen.exc.frames:
            continue
        # a traceback the log ends inside is the last thing printed; a whole one ends at its
        # exception line, up to three lines a frame (file, code, carets) after its start
        if seen.exc.header != "cut" and not (
            0 < seen.exc.log_line - ev.line <= IMPLIED_SPAN + 3 * len(seen.exc.frames)
        ):
            continue
        if any(_AGENT_FRAME.search(fr.file) for fr in seen.exc.frames):
            return "agent", None
        if any(fr.func == "init_process_group" for fr in seen.exc.frames) and any(
            fr.user for fr in seen.exc.frames
        ):
            return "worker", seen.rank
    return None


#: Classes whose unranked root is not carried to the next traceback's rank
#: (:func:`next_traceback_rank`): a hang (a waiter's traceback follows the root there too),
#: a failure a peer detects (:data:`SEEN_BY_PEERS`: the reporter only witnesses it), and a
#: mismatch between ranks' environments (NCCL's "rank 8 version 21903 rank 0 version 21805":
#: one side of a pair, not which side is odd).
_NOT_CARRIED = _HANG_CLASSES | SEEN_BY_PEERS | {"rank-environment-mismatch"}


def next_traceback_rank(case: Case) -> Verdict | None:
    """The one rank the log names, when its traceback follows an unranked root cause.

    Mechanism: NCCL's WARN lines carry a host, a pid and a CUDA device but no rank
    (``node:22220:22220 [0] bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface
    found``); the error they describe is then raised in Python by the same process, whose
    traceback the launcher tags (torchrun's ``[rank0]:`` prefix) or introduces (mp.spawn's
    ``-- Process 3 terminated with the following error:``). When the root has no rank, no
    other finding of its signature has one, the whole log names exactly one rank
    (``ranks_seen``), and that rank's traceback (complete or cut by the end of the log)
    begins after the root's line in the same file, the root is that process's failure,
    when the rules of a root printed with that rank (:func:`named_by_root`) name it too.
    Not for the classes of :data:`_NOT_CARRIED` (a hang, a failure a peer detects, a
    mismatch between ranks' environments)."""
    root, st = case.root, case.ctx.state
    if root.rank is not None or case.ranks_with or root.failure_class in _NOT_CARRIED:
        return None
    if len(st.ranks_seen) != 1 or not root.evidence:
        return None
    if root.signature == "ib-completion-error" and root.captures.get("status") == "5":
        return None  # IBV_WC_WR_FLUSH_ERR: flushed after an earlier failure, on either end
    (rank,) = st.ranks_seen
    ev = root.evidence[0]
    starts = [line for path, r, line in st.cut_traceback_starts if r == rank and path == ev.path]
    starts += [
        seen.exc.log_line
        for seen in st.exceptions
        if seen.rank == rank and seen.path == ev.path and not seen.exc.ignored
    ]
    after = [line for line in starts if line > ev.line]
    if not after:
        return None
    if _peer_report_follows(case, rank, ev.path, ev.line):
        return None
    # the root carried to that rank must still be that rank's by the rules of a ranked root
    # (not a set-up failure every rank hits, not one end of a broken link, not a remote
    # end's error, no other rank's failure first): :func:`named_by_root` decides
    carried = dataclasses.replace(root, rank=rank)
    verdict = named_by_root(Case(case.ctx, carried, [carried]))
    if verdict is None or verdict.rank != rank:
        return None
    why = say("next_traceback_rank", rank=rank, line=min(after), title=root.title)
    return Verdict(rank, why, "next_traceback_rank", (rank,))


def _peer_report_follows(case: Case, rank: int, path: str, line: int) -> bool:
    """Whether the first complete traceback of ``rank`` after ``line`` (1-based, in
    ``path``) ends in a peer report (a finding whose YAML says ``explained_by: [peer]``:
    gloo's "Connection closed by peer ... typically caused by a remote worker crashing",
    NCCL's "remote process exited"). That process only saw another one go away: an
    unranked failure printed before it is more likely that other process's (mp.spawn shows
    the first error its queue received, a victim's, while the crashed worker's own line
    carries no rank), so it is not carried to ``rank``."""
    ctx = case.ctx
    later = [
        seen.exc.log_line
        for seen in ctx.state.exceptions
        if seen.rank == rank
        and seen.path == path
        and seen.exc.log_line > line
        and not seen.exc.ignored
    ]
    if not later:
        return False
    first = min(later)
    return any(
        ctx.peer_report(f) and any(e.path == path and e.line == first for e in f.evidence)
        for f in ctx.findings
    )


def implied_rank(case: Case) -> Verdict | None:
    """A failure that by design happens on one rank (the signature's ``implied_rank``);
    not when the traceback shows that the process that failed is torchrun's agent (a
    second job's agent, or several agents srun started on one node, each binding the
    rendezvous port): an agent is no training rank."""
    sig = case.ctx.library.signatures[case.root.signature]
    if case.ranks_with or sig.implied_rank is None:
        return None
    found = _setup_traceback(case)
    if found is not None and found[0] == "agent":
        return Verdict(None, say("implied_rank_agent"), "implied_rank", (), True)
    from rootrank.analysis.binders import store_binders

    binders = store_binders(case.ctx.state.exceptions)
    if binders >= 2:
        # only rank 0's process hosts the store: several that tried each took rank 0
        # themselves, whatever rank the launcher gave them (rootrank.analysis.binders)
        return Verdict(
            None, say("implied_rank_several_binders", n=binders), "implied_rank", (), True
        )
    if found is not None:
        rank = found[1]
        if rank is None:
            # a worker bound the store itself, yet no line names its rank: with several
            # workers (a script that forces its own rank or port) any of them may be it
            return Verdict(None, say("implied_rank_worker_untagged"), "implied_rank", (), True)
        return Verdict(rank, say("implied_rank_worker", rank=rank), "implied_rank", (rank,))
    worked = group_worked_after(case)
    if worked is not None:
        return Verdict(
            None,
            say("implied_rank_group_formed", rank=sig.implied_rank, what=worked),
            "implied_rank",
            (),
            True,
        )
    return Verdict(
        sig.implied_rank,
        say("implied_rank", rank=sig.implied_rank, reason=sig.implied_rank_reason),
        "implied_rank",
        (sig.implied_rank,),
    )


#: Signature categories (signatures/<category>/) whose failures happen in a process group
#: that formed: NCCL's communicators and the collectives run only after every rank reached
#: the rendezvous store.
_GROUP_CATEGORIES = frozenset({"nccl", "collective"})


def group_worked_after(case: Case) -> str | None:
    """What shows the job's process group formed after the root (a set-up failure whose
    rank is implied by design): a later finding of an NCCL or collective signature, or a
    later traceback that waits in a collective. A rank 0 whose store could not bind ends
    before any of that: the other ranks never get past the rendezvous. So the failed set-up
    was another process's (a surplus launcher on the master node, a second job), which is
    no rank of this group. Returns a short description of the evidence (with its line), or
    ``None``."""
    return formed_after(case.root, case.ctx.findings, case.ctx.library, case.ctx.state)


def formed_after(
    root: Finding, findings: list[Finding], library: Library, state: ScanState
) -> str | None:
    """:func:`group_worked_after` from its parts: the root finding, every finding, the
    signature library and the scan state (its tracebacks)."""
    from rootrank.tracebacks import collective_call

    for f in findings:
        sig = library.signatures.get(f.signature)
        if f.order > root.order and sig is not None and sig.category in _GROUP_CATEGORIES:
            line = f.evidence[0].line if f.evidence else None
            return f'"{f.title}"' + (f" (line {line})" if line else "")
    for seen in state.exceptions:
        call = collective_call(seen.exc.frames)
        if seen.order > root.order and call and call != "backward":
            return f"a traceback waiting in {call} (line {seen.exc.log_line})"
    return None


def reported_by_launcher(case: Case) -> Verdict | None:
    """The launcher's report of one worker's own failure names that worker: srun's ``task 3:
    Exited with exit code 1``, mp.spawn's ``process 2 terminated with exit code 1``. Only
    a real exit code counts: a worker stopped by a signal may have been stopped by the
    launcher itself.

    A cause printed with no rank (an exception line no prefix tags, in srun's merged output)
    belongs to the one worker the launcher reports exiting by itself, when it reports
    exactly one (srun then terminates the other tasks: ``tasks 0-2: Terminated``), also
    counting torchelastic's summary entries (its agent logs only the first failure it
    notices); not for a failure of the set-up every rank hits (:data:`SAME_ON_EVERY_RANK`)."""
    root = case.root
    if root.role == "cause" and root.rank is None and not case.ranks_with:
        if same_on_every_rank(case) or root.failure_class in SEEN_BY_PEERS:
            # every rank hits it (or detects it): which one exited first is a race
            return None
        # the launchers' exit lines (srun's "tasks 2-7,9: Exited with exit code 1" is one
        # exit event per task) and torchelastic's summary entries
        restart = _restarted_after(case)
        events = case.ctx.events
        if restart is not None:
            # only the launcher's lines before the restarted attempt's barrier report the
            # attempt the root belongs to
            events = tuple(e for e in events if e.path == restart[0] and 0 < e.line < restart[1])
        exits = launcher_exits(events)
        if len(exits) != 1:
            return None
        rank, code = next(iter(exits.items()))
        copies = unranked_copies(case)
        if copies > 1:
            # several processes printed it: the launcher names only the first exit it saw
            why = say("launcher_one_of_copies", rank=rank, code=code, n=copies)
            return Verdict(None, why, "reported_by_launcher", (rank,), True)
        return Verdict(
            rank,
            say("reported_by_launcher_unranked", rank=rank, code=code),
            "reported_by_launcher",
            (rank,),
        )
    first = launcher_first_failure(case)
    if first is not None:
        return first
    if root.role != "symptom" or case.ctx.kind(root) != "terminal" or len(case.ranks_with) != 1:
        return None
    exitcode = real_exit(_exitcode(root))
    if exitcode is None:
        return None
    rank = case.ranks_with[0]
    return Verdict(
        rank, say("reported_by_launcher", rank=rank, code=exitcode), "reported_by_launcher", (rank,)
    )


def _restarted_after(case: Case) -> tuple[str, int] | None:
    """``(path, 1-based line)`` of the first store-based barrier printed after the root that
    counted more arrivals than the world size (``world_size=2, worker_count=4``: a restarted
    attempt reusing the agent's store, :func:`rootrank.analysis.rules.barrier_counted_a_restart`),
    or ``None``: the launcher's exit lines after it report the restarted attempt's workers,
    not the one that raised the root."""

    def count(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.isdigit() else None

    for f in case.ctx.findings:
        joined, world = count(f, "joined"), count(f, "world_size")
        if joined is None or world is None or joined <= world or not f.evidence:
            continue
        if f.order > case.root.order:
            return f.evidence[0].path, f.evidence[0].line
    return None


#: mp.spawn's parent on a process a signal ended (torch/multiprocessing/spawn.py,
#: ProcessContext.join): ``process 2 terminated with signal SIGABRT``.
_SPAWN_SIGNAL = lazy_regex.compile(
    r"process (?P<proc>\d+) terminated with signal (?P<sig>SIG[A-Z]+)"
)
#: Signals another process sends (mp.spawn's parent itself, the OOM killer, a person): not a
#: process's own death.
_SENT_SIGNALS = ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP")


def spawn_self_signal(case: Case) -> Verdict | None:
    """The process mp.spawn's parent reports ended by a signal it raised itself (SIGABRT from
    a C++ ``terminate``, SIGSEGV, SIGFPE, SIGBUS), for a root printed with no rank.

    Mechanism: ``ProcessContext.join`` waits until any process ends, takes the first whose exit
    is not 0, terminates every other with SIGTERM, and raises ``ProcessExitedException:
    process N terminated with signal SIGX`` for that one; N is the index mp.spawn passed as
    the worker's first argument (its rank). A signal no other process sends (not SIGTERM,
    SIGKILL, SIGINT, SIGHUP) is that process's own death, so the native error printed with no
    rank before it (``terminate called after throwing ...``) is N's. For a fault its peers see
    (:data:`SEEN_BY_PEERS`) only gloo's receive-size enforce counts: it aborts the rank whose
    posted buffer is smaller than what arrived (a rank whose tensor differs from the
    sender's); a watchdog's SIGABRT only names the first rank to time out."""
    root = case.root
    if root.role != "cause" or root.rank is not None or case.ranks_with:
        return None
    if root.failure_class in SEEN_BY_PEERS:
        if not any(_RECV_ENFORCE in e.text for e in root.evidence):
            return None
    elif same_on_every_rank(case):
        return None
    found: set[tuple[int, str]] = set()
    for seen in case.ctx.state.exceptions:
        if seen.exc.type.rsplit(".", 1)[-1] != "ProcessExitedException":
            continue
        m = _SPAWN_SIGNAL.search(seen.exc.message)
        if m is not None:
            found.add((int(m.group("proc")), m.group("sig")))
    if len(found) != 1:
        return None
    ((rank, sig),) = found
    if sig in _SENT_SIGNALS:
        return None
    why = say("spawn_self_signal", rank=rank, sig=sig)
    return Verdict(rank, why, "spawn_self_signal", (rank,))


#: Signature tag of a launcher's report that names the first worker to fail (Open MPI's
#: "The first process to do so was: Process name: [[jobid,step],vpid]", vpid the MPI rank).
FIRST_FAILURE_TAG = "first-failure"


def launcher_first_failure(case: Case) -> Verdict | None:
    """The rank a launcher names as the first process that failed, for a root that only
    shows a victim's view (a symptom such as Horovod's "has been shut down", printed by the
    ranks still running after another one left).

    Mechanism: a launcher that watches its workers (``mpirun``/``prterun``) reports the first
    one that exited with a non-zero status, then kills the rest; the victims' errors come
    from the job falling apart after that exit. So when the log's only errors are the
    victims' and the launcher names one rank as the first to fail (a finding of a signature
    tagged :data:`FIRST_FAILURE_TAG`), that rank is the initiator, even though its own error
    is not in the paste. Not when the named rank is itself one of the ranks showing the
    victim's error (it then exited as a victim), not when launchers name different ranks,
    and not in a hang (a timeout or desync): there the first process to exit is the first
    waiter whose timeout fired, not the rank the others waited for."""
    root = case.root
    if root.role != "symptom" or root.failure_class in _HANG_CLASSES:
        return None
    named: set[int] = set()
    for f in case.ctx.findings:
        sig = case.ctx.library.signatures.get(f.signature)
        if f.rank is not None and FIRST_FAILURE_TAG in (getattr(sig, "tags", ()) or ()):
            named.add(f.rank)
    if len(named) != 1:
        return None
    (rank,) = named
    victims = {f.rank for f in case.ctx.findings if f.role == "symptom" and f.rank is not None}
    if rank in case.ranks_with or rank in {f.rank for f in case.group}:
        return None
    if any(f.rank == rank and case.ctx.peer_report(f) for f in case.ctx.findings):
        return None  # its own lines show it lost a peer: it left as a victim too
    why = say(
        "launcher_first_failure",
        rank=rank,
        victims=ranks_word(sorted(victims - {rank})) if victims - {rank} else "the others",
        title=root.title,
    )
    return Verdict(rank, why, "reported_by_launcher", (rank,))


#: Ray's exit types of a worker it did not ask to exit (src/ray/protobuf/common.proto
#: ``WorkerExitType``: ``SYSTEM_ERROR`` a crash, a kill from outside or a lost connection;
#: ``USER_ERROR`` an exception the worker raised), as opposed to ``INTENDED_USER_EXIT`` and
#: ``INTENDED_SYSTEM_EXIT``, the exits Ray or the user requested.
UNREQUESTED_EXITS = frozenset({"SYSTEM_ERROR", "USER_ERROR"})


def died_unrequested(case: Case) -> Verdict | None:
    """A process manager's report that one worker's process died without being asked to
    (Ray's ``Worker PID: N Worker exit type: SYSTEM_ERROR``, an ``exit_type`` capture in
    :data:`UNREQUESTED_EXITS`) is that worker's own death: Ray stops the other workers of a
    group only after it, and gives the exits it requests another type. The report names
    the process by pid; its rank comes from that process's own lines
    (rootrank.ranks.RankTagger.rank_of_pid), never from the report. The report may be the
    root as a symptom (a death Ray cannot explain) or as a cause (``ray-worker-killed``: a
    worker that vanished without a Python error was killed)."""
    root = case.root
    if (
        case.ctx.kind(root) != "terminal"
        or root.captures.get("exit_type") not in UNREQUESTED_EXITS
        or len(case.ranks_with) != 1
    ):
        return None
    rank = case.ranks_with[0]
    why = say(
        "died_unrequested",
        manager="Ray",
        rank=rank,
        pid=root.captures.get("pid", "?"),
        exit_type=root.captures["exit_type"],
    )
    return Verdict(rank, why, "died_unrequested", (rank,))


def unranked_copies(case: Case) -> int:
    """How many separate tracebacks with no rank end in the root's exception (its type, as
    read at the root's evidence line): one per process that raised it. A log with two or
    more holds the same failure from several workers (every rank running the same set-up,
    or several ranks sharing one GPU), and a launcher that reports one worker exiting by
    itself names only the first exit it observed (torchelastic's ``<NO_OTHER_FAILURES>``
    after it stopped the others; DeepSpeed's ``sigkill_handler`` line for the process
    whose return code it read), not the one that raised it. Chained and ignored
    exceptions, and ones a rank prefix tags, are not counted. Returns 0 when the root's
    traceback is not found."""
    seen_all = case.ctx.state.exceptions
    lines = {(e.path, e.line) for e in case.root.evidence}
    kind = next(
        (s.exc.type for s in seen_all if (s.path, s.exc.log_line) in lines),
        None,
    )
    if kind is None:
        return 0
    return len(
        {
            (s.path, s.exc.log_line)
            for s in seen_all
            if s.rank is None
            and s.exc.type == kind
            and s.exc.chain_index == 0
            and not s.exc.ignored
            and s.exc.frames
            and not _rewrapped(s.exc.message)
        }
    )


def _rewrapped(message: str) -> bool:
    """torch's ``ExceptionWrapper.reraise`` (torch/_utils.py) re-raises a DataLoader worker's
    or a DataParallel replica's exception in the main process as ``Caught T in DataLoader
    worker process N.`` followed by the worker's ``Original Traceback``: one failure of one
    process, printed as two tracebacks of the same type. The re-raise is not another copy."""
    return message.startswith("Caught ") and (
        " in DataLoader worker process " in message or " in replica " in message
    )


def peer_victim(case: Case) -> Verdict | None:
    """The launcher names the rank that exited first with a real code, but that rank's own
    error only says a peer went away (``Connection closed by peer``, a reset: a signature
    with ``explained_by: [peer]``) and it shows no cause of its own: it was the first
    victim, not the initiator, and the log does not show which peer left."""
    root = case.root
    if root.role != "symptom":
        return None
    rank = root.rank if root.rank is not None else elastic_rank(case.ctx.state.elastic)[0]
    if rank is None:
        return None
    own = [f for f in case.ctx.findings if f.rank == rank]
    if any(case.ctx.peer_report(f) for f in own) and not any(f.role == "cause" for f in own):
        left = self_exited(case.ctx.state.elastic)
        if (
            left is not None
            and left != rank
            and not any(f.rank == left and case.ctx.peer_report(f) for f in case.ctx.findings)
        ):
            return None  # the failure table shows the peer that left: elastic_summary names it
        return Verdict(None, say("peer_victim", rank=rank), "peer_victim", (rank,), True)
    return None


def self_exited(elastic: list[ElasticFailure]) -> int | None:
    """The one rank torchelastic's failure tables show exiting by itself, or ``None``: the
    tables list at least two ranks, exactly one with a nonzero exit code that is no signal,
    and every other ended by a signal (the agent's SIGTERM/SIGKILL after that first failure:
    torch/distributed/elastic/multiprocessing/api.py ``_poll`` closes the rest and records
    their signal exits too). The entry torchelastic marks "Root Cause" need not be it: that
    is the smallest timestamp, and a stopped worker's error file can be older than the
    detection time of a worker that wrote none."""
    entries = [e for e in elastic if e.rank is not None and e.rank >= 0]
    if len({e.rank for e in entries}) < 2:
        return None
    real = {
        e.rank for e in entries if e.exitcode not in (None, 0) and e.exitcode not in SIGNAL_CODES
    }
    signalled = {e.rank for e in entries if e.exitcode in SIGNAL_CODES}
    if len(real) != 1 or real | signalled != {e.rank for e in entries}:
        return None
    return next(iter(real))


def _exitcode(f: Finding) -> int | None:
    """The ``exitcode`` a launcher reported in ``f``, or ``None``."""
    try:
        return int(f.captures.get("exitcode", ""))
    except ValueError:
        return None


def guarded_work(case: Case) -> Verdict | None:
    """The rank doing guarded work the reporting ranks waited for in a barrier
    (:mod:`rootrank.analysis.guarded`: ``main_process_first``'s ``__enter__``, a
    ``save_checkpoint`` every rank calls while rank 0 writes): the waiters are victims, the
    holder (rank 0, or local rank 0 of their node) is the initiator, when it reported no
    timeout in that barrier itself."""
    from rootrank.analysis.guarded import guard_of

    st = case.ctx.state
    lines = {(e.path, e.line) for f in case.group for e in f.evidence}
    guards = [
        (s.rank, g)
        for s in st.exceptions
        if s.rank is not None and (s.path, s.exc.log_line) in lines
        for g in [guard_of(st, s)]
        if g is not None
    ]
    if not guards:
        return None
    holders = {g.holder for _, g in guards}
    if len(holders) != 1:
        return None
    waiters = sorted({r for r, _ in guards if r is not None})
    holder, guard = next(iter(holders)), guards[0][1]
    if holder in case.ranks_with:
        return None
    why = say(
        "guarded_work",
        Ranks=ranks_word(waiters),
        collective=guard.collective,
        func=guard.func,
        where=guard.where,
        rank=holder,
    )
    return Verdict(holder, why, "guarded_work", (holder,))


def device_of_error(case: Case) -> Verdict | None:
    """The process whose CUDA error names its own GPU (``GPU 1 has a total capacity of ...``)
    on a one-node job of one process per GPU: that GPU's ordinal is its local rank, and on
    one node its rank (:mod:`rootrank.analysis.device_rank`, which refuses several nodes,
    remapped devices and ordinal 0)."""
    from rootrank.analysis.device_rank import device_rank

    world = job_world(case)
    rank = device_rank(case.ctx.state, case.group, world)
    if rank is None:
        return None
    if world is None:  # a vLLM worker's own error (device_rank): its world is unstated
        why = say("device_of_engine_worker", rank=rank)
    else:
        why = say("device_of_error", rank=rank, world=world)
    return Verdict(rank, why, "device_of_error", (rank,))


def victims_only(case: Case) -> Verdict | None:
    """A symptom reported by some ranks, with no strategy naming another: they are the
    victims, and the log does not show who started it."""
    if case.root.role == "symptom" and case.ranks_with:
        return Verdict(
            None,
            say("victims_only", Ranks=ranks_word(case.ranks_with)),
            "victims_only",
            tuple(case.ranks_with),
            True,
        )
    return None


#: The strategies, strongest first.
def one_process(case: Case) -> Verdict | None:
    """No rank to name, because there are none: ``rootrank run`` started the job itself as
    one ``python script.py`` (:attr:`rootrank.scan.LaunchFacts.launched_here`) and its output
    shows no second process (no rank prefix, world size, launcher, distributed line or
    process-group failure: :func:`rootrank.entry.commands.processes_of` gives ``"one"``).
    A rank is a member of a process group; this run formed none, so the report says so
    rather than "the log does not tell". Only the run face knows this: a log read by
    ``rootrank diagnose`` may be one rank's fragment of a larger job."""
    st = case.ctx.state
    if not st.launch.launched_here or not st.launch.command:
        return None
    from rootrank.entry.commands import launch_of  # the entry package imports the analysis

    if launch_of(st, st.launch.script).processes != "one":
        return None
    return Verdict(
        None,
        f"one process ran: `rootrank run` started it ({st.launch.command}), and its output"
        " shows no other process and no process group: a single process has no ranks",
        "one_process",
    )


def first_failure_it_explains(case: Case) -> Verdict | None:
    """A root that is a start-up condition (a warning every rank of a node prints alike:
    NCCL's transport falling back to sockets on a fabric host) is no one rank's doing; the
    failure it led to started on the rank where the failure it explains broke: the error
    findings whose YAML names the root's signature in ``explained_by`` (the proxy's Connect
    that failed over those sockets). When they are all one rank's, that rank; otherwise
    none (later strategies decide)."""
    root = case.root
    if root.severity != "warning":
        return None
    sigs = case.ctx.library.signatures
    found = [
        f.rank
        for f in case.ctx.findings
        if f.severity == "error"
        and root.signature in (getattr(sigs.get(f.signature), "explained_by", ()) or ())
    ]
    ranks = {r for r in found if r is not None}
    if len(ranks) != 1 or None in found:
        return None
    rank = ranks.pop()
    why = say("first_failure_explained", rank=rank, title=root.title)
    return Verdict(rank, why, "first_failure_it_explains", (rank,))


STRATEGIES: tuple[Strategy, ...] = (
    scheduler_kill,
    lock_holder,
    first_failure_it_explains,
    one_process,
    named_together,
    odd_in_rank_table,
    named_in_message,
    object_broadcast_rank,
    thread_owner,
    missing_from_ready,
    first_nonfinite,
    same_step_everywhere,
    phase_marker,
    behind_in_completed_work,
    ahead_in_enqueued_work,
    enqueued_split,
    odd_value_out,
    odd_printed_value,
    against_reference,
    odd_printed_length,
    out_of_lockstep,
    ahead_in_epoch,
    odd_line_out,
    odd_step_line,
    odd_setting_out,
    lone_dtype_line,
    guarded_work,
    still_working,
    main_process_bar,
    silent_block,
    p2p_peer,
    missing_reporter,
    missing_progress,
    missing_milestone,
    first_mismatched_peer,
    named_by_root,
    odd_watchdog_rank,
    alone_in_first_attempt,
    one_host_exited,
    odd_message_out,
    earliest_time,
    signal_not_sent_by_agent,
    peer_victim,
    reported_by_launcher,
    spawn_self_signal,
    died_unrequested,
    child_exit_report,
    unpaired_p2p_peer,
    odd_call_site,
    lone_non_aborter,
    elastic_summary,
    next_traceback_rank,
    implied_rank,
    device_of_error,
    victims_only,
)


def find_initiator(ctx: Context, root: Finding) -> Initiator:
    """Run :data:`STRATEGIES` for ``root``; the first verdict decides."""
    case = Case(ctx, root, [f for f in ctx.findings if f.signature == root.signature])
    verdicts: list[Verdict] = []
    for strategy in STRATEGIES:
        v = strategy(case)
        if v is not None:
            verdicts.append(v)
    if not verdicts:
        return Initiator(None, "", None)
    first = verdicts[0]
    candidates = sorted({r for v in verdicts for r in v.candidates})
    agreeing = [v.strategy for v in verdicts[1:] if first.rank is not None and v.rank == first.rank]
    return Initiator(
        first.rank, _with_printed(first, verdicts), first.strategy, agreeing, candidates
    )


#: Strategies whose reason quotes what the rank itself printed apart from the others (a set-up
#: line, a constant value, a list's length): the line that singles the rank out.
_PRINTED = frozenset({"odd_line_out", "odd_printed_value"})


def _with_printed(first: Verdict, verdicts: list[Verdict]) -> str:
    """``first``'s reason, followed by the reason of the first later verdict on the same rank
    that quotes the rank's own printed line or value (:data:`_PRINTED`), when ``first`` quotes
    none: the report's Fix, reasoning and ``initiator.why`` then show the per-rank count that
    gives the rank away (``found 34 files`` where the others printed 39), not only the
    strategy's name."""
    if first.rank is None or first.strategy in _PRINTED:
        return first.why
    for v in verdicts[1:]:
        if v.strategy in _PRINTED and v.rank == first.rank and v.why:
            return f"{first.why}; {v.why}" if first.why else v.why
    return first.why


def earlier_cut_trace(rank: int, case: Case) -> int | None:
    """The line (1-based) where the log starts inside a trace printed before the root's line,
    in its file, that is not provably ``rank``'s own (another rank's stream, or one no prefix
    names): a failure whose header and error the paste lost came first. ``None`` otherwise."""
    ev = case.root.evidence[0] if case.root.evidence else None
    if ev is None:
        return None
    for path, cut_rank, line in case.ctx.state.cut_at_start:
        if path == ev.path and line < ev.line and cut_rank != rank:
            return line
    return None


#: Classes of running out of a device's memory: the set-up before the first step (loading
#: the weights, building the engine) asks every rank for the same memory.
SET_UP_MEMORY_CLASSES = frozenset({"cuda-oom"})


#: A signature tag for a fault of a node's own environment (its interfaces, its hostname's
#: resolution, the variables its launcher or ``ray start`` exported): every process started
#: there reads the same settings.
NODE_ENV_TAG = "node-env"


def node_environment_shared(case: Case, rank: int) -> tuple[str, list[int]] | None:
    """``(host, other ranks)`` when the root is a fault of the node's environment
    (:data:`NODE_ENV_TAG`) and the log shows other ranks on ``rank``'s host (the scan's
    rank -> host map, from the lines' host prefixes: ``(RayWorkerWrapper pid=1978,
    ip=10.0.0.2)``, NCCL's ``host:pid:tid``): they all run with the settings that failed, so
    the node is where it began, and the rank that printed the error first is only the first
    of them to try. ``None`` otherwise (no host known, or no other rank on it)."""
    sig = case.ctx.library.signatures.get(case.root.signature)
    if NODE_ENV_TAG not in set(getattr(sig, "tags", ()) or ()):
        return None
    hosts = case.ctx.state.hosts
    host = hosts.get(rank) or case.root.host
    if not host:
        return None
    mates = sorted(r for r, h in hosts.items() if h == host and r != rank)
    return (host, mates) if mates else None


#: A call that loads or builds the model (the set-up every rank runs alike before the first
#: step), as a frame's function or the source line it quotes: ``model = load_model(...)``,
#: ``AutoModelForCausalLM.from_pretrained(...)``, ``deepspeed.zero.Init``.
_LOADING_CALL = lazy_regex.compile(
    r"\b(?:\w*from_pretrained|load_model|build_model|_?setup_model|init_model|load_checkpoint|"
    r"load_state_dict|load_weights|_load_pretrained_model|load_sharded\w*)\b|zero\.Init\b"
)


def _in_loading_call(frames: list[Any]) -> bool:
    """Whether the innermost of ``frames`` (:class:`rootrank.tracebacks.Frame`: its ``func``
    and the ``code`` it quotes) is a call that loads or builds the model
    (:data:`_LOADING_CALL`)."""
    if not frames:
        return False
    last = frames[-1]
    return _LOADING_CALL.search(f"{last.func} {last.code}") is not None


def set_up_oom_elsewhere(case: Case, rank: int) -> int | None:
    """Another rank whose traceback (cut or whole) stands in a call that loads or builds the
    model (:func:`_in_loading_call`: its innermost frame) when the root is ``rank``'s
    out-of-memory (:data:`SET_UP_MEMORY_CLASSES`) and no rank printed progress before it:
    every rank loads the same weights with the same configuration (a sharded load gives each
    rank the same share), so the memory it asks for is the same on every rank, and the rank
    that printed its error first is only the first of a wall they all hit. ``None``
    otherwise: another rank's traceback in a forward or a step is its unwinding after the
    root's rank failed, and in training a rank's own batch or activations can be what ran
    out (:func:`unexplained_failure_elsewhere`)."""
    root = case.root
    if root.failure_class not in SET_UP_MEMORY_CLASSES:
        return None
    if any(e.kind == "progress" for e in case.ctx.events):
        return None
    st = case.ctx.state
    others = {
        seen.rank
        for seen in (*st.cut_tracebacks, *st.exceptions)
        if seen.rank is not None and seen.rank != rank and _in_loading_call(seen.exc.frames)
    }
    return min(others) if others else None


def unexplained_failure_elsewhere(rank: int, case: Case) -> int | None:
    """Another rank whose Python exception no finding covers (printed no later than the
    root cause as far as the log shows) or whose traceback the log cuts before its
    exception line, when that traceback began before the root cause's line in the same
    file (or in another file: no order to compare). ``None`` when there is none.

    A traceback the end of the log cuts shows no exception: it is a failure under way whose
    error the log lost. Begun before the root cause was printed, its error may have come
    first. Begun after it, when the root cause was raised outside any collective (its
    traceback has no ``torch/distributed/`` frame: user code, a forward pass), it is the
    unwinding the root cause set off in the ranks that waited for it (``head -n 20`` of a
    log where rank 2 raised and rank 0's traceback from its all_reduce follows), and no
    failure of its own. A root cause raised inside a collective (a barrier that cannot set
    up NCCL) is raised by every rank that enters it: another rank's later traceback may be
    its own copy, so it still counts.

    Nor does a traceback of the rank that printed the root's report (a ``reporter`` capture:
    monitoredBarrier's "Rank 3 successfully reached monitoredBarrier, but received errors
    while waiting for send/recv from rank 0") begun after that report in the same file: it is
    the reporter's own exception from the barrier (SGLang's ``Scheduler hit an exception:
    Traceback ...`` logged around it), raised because of the named rank, not a failure that
    competes with it."""
    st, root = case.ctx.state, case.root
    explained = {(e.path, e.line) for f in case.ctx.findings for e in f.evidence}
    ev = root.evidence[0] if root.evidence else None
    said_by = root.captures.get("reporter", "")
    reporter = int(said_by) if said_by.isdigit() and int(said_by) != rank else None

    blamers = blaming_reports(case.ctx, root)

    def follows_report(path: str, by: int | None, line: int) -> bool:
        """Whether ``by``'s trace at ``line`` of ``path`` is a reporter's, after its report
        (the root's own reporter, or another rank whose report names the same peer:
        :func:`rootrank.analysis.blamed_peer.blaming_reports`)."""
        if by == reporter and ev is not None and path == ev.path and line > ev.line:
            return True
        said_at = blamers.get((path, by)) if by is not None and by != rank else None
        return said_at is not None and line > said_at

    for seen in st.exceptions:
        if seen.rank is None or seen.rank == rank or seen.exc.ignored:
            continue
        if (seen.path, seen.exc.log_line) in explained:
            continue
        if root.time is not None and seen.time is not None and seen.time > root.time:
            continue
        if follows_report(seen.path, seen.rank, seen.exc.log_line):
            continue
        return seen.rank
    local = bool(root.frames) and not any(
        "torch/distributed/" in str(f.get("file", "")).replace("\\", "/") for f in root.frames
    )
    later = {
        cut_rank
        for path, cut_rank, line in st.cut_traceback_starts
        if local
        and ev is not None
        and path == ev.path
        and line > ev.line
        and _cut_in_collective(st, path, cut_rank, line)
    }
    # A traceback the log cuts right after its header (no frame, no exception line: the end
    # of a paste), begun after the root cause's line, shows nothing at all: not a failure of
    # its own, not one that came first, beside a root a signature explains. Not beside a
    # plain exception no signature explains (the generic user-code one), nor a failure every
    # rank hits alike (a set-up error): the header is then as likely that rank's own copy of
    # the same exception (every rank runs the same code), and the log shows no order.
    from rootrank.analysis.prepare import EXCEPTION_SIGNATURE

    explained_root = root.signature != EXCEPTION_SIGNATURE and not same_on_every_rank(case)
    later |= {
        cut_rank
        for path, cut_rank, line in st.cut_traceback_starts
        if explained_root
        and ev is not None
        and path == ev.path
        and line > ev.line
        and _cut_bare(st, path, cut_rank, line)
    }
    # A traceback the log cuts before its exception line, begun after the line of a fault of
    # the rank's own device or memory (:data:`RANK_OWN_FAULTS`: an OOM, a device assert) that
    # was not raised inside torch.distributed (its frames, when the paste kept them, show no
    # collective), names no error: it is that rank's unwinding, not an independent failure
    # that could have come first, so it does not stop the explicit error's rank from being
    # named (a "[rank2]: Traceback" cut inside the forward after "[rank5]:
    # torch.OutOfMemoryError"). Not beside a fault of the code or config every rank runs
    # alike (a shape error): a later cut traceback is then as likely that rank's own copy.
    in_collective = any(
        "torch/distributed/" in str(f.get("file", "")).replace("\\", "/") for f in root.frames
    )
    later |= {
        cut_rank
        for path, cut_rank, line in st.cut_traceback_starts
        if root.failure_class in RANK_OWN_FAULTS
        and not in_collective
        and ev is not None
        and path == ev.path
        and line > ev.line
        and _cut_has_frames(st, path, cut_rank, line)
    }
    later |= {
        cut_rank
        for path, cut_rank, line in st.cut_traceback_starts
        if follows_report(path, cut_rank, line)
    }
    earlier = {
        cut_rank
        for path, cut_rank, line in st.cut_traceback_starts
        if ev is None or path != ev.path or line <= ev.line
    }
    cut = sorted(st.cut_traceback_ranks - {rank} - (later - earlier))
    return cut[0] if cut else None


def _cut_in_collective(st: ScanState, path: str, rank: int | None, start: int) -> bool:
    """Whether the traceback of ``rank`` that starts at line ``start`` of ``path`` and that the
    log cuts shows, as far as it goes, a wait in torch.distributed (a frame under
    ``torch/distributed/`` or a collective call): the unwinding of a rank that waited for
    another. One that shows no frame (only its ``Traceback`` header) or only frames outside
    torch.distributed shows nothing of the sort: it may as well be the rank's own copy of the
    root's failure (every rank running the same set-up raises the same error)."""
    from rootrank.tracebacks import collective_call

    for seen in st.cut_tracebacks:
        if seen.path != path or seen.rank != rank or seen.exc.log_line < start:
            continue
        frames = seen.exc.frames
        return bool(collective_call(frames)) or any(
            "torch/distributed/" in fr.file.replace("\\", "/") for fr in frames
        )
    return False


def _cut_has_frames(st: ScanState, path: str, rank: int | None, start: int) -> bool:
    """Whether the traceback of ``rank`` that starts at line ``start`` of ``path`` and that the
    log cuts kept frames (:attr:`ScanState.cut_tracebacks`): a traceback under way. One that
    kept none is a bare header or a chained-exception marker (``The above exception was the
    direct cause ...``), which says an error of that rank was printed above it and lost."""
    return any(
        seen.path == path and seen.rank == rank and seen.exc.log_line >= start and seen.exc.frames
        for seen in st.cut_tracebacks
    )


def _cut_bare(st: ScanState, path: str, rank: int | None, start: int) -> bool:
    """Whether the traceback of ``rank`` that starts at line ``start`` of ``path`` and that the
    log cuts shows no frame at all (its ``Traceback (most recent call last):`` header is the
    last line of that rank the log holds: a paste that ends there). The scan keeps a cut
    traceback's frames only when it has some (:attr:`ScanState.cut_tracebacks`): none kept
    for it is a bare header, when the line it starts at, among the log's last lines
    (:attr:`ScanState.tails`), is that ``Traceback`` header (not a chained-exception marker,
    ``The above exception was the direct cause ...``, which says an error was printed above
    it)."""
    if any(
        seen.path == path and seen.rank == rank and seen.exc.log_line >= start and seen.exc.frames
        for seen in st.cut_tracebacks
    ):
        return False
    for tail_path, first, text in st.tails:
        if tail_path != path or start < first:
            continue
        lines = text.split("\n")
        if start - first < len(lines):
            return "Traceback (most recent call last)" in lines[start - first]
    return False


_DIGITS = lazy_regex.compile(r"\d+")


def same_error_elsewhere(st: ScanState, path: str, line: int, rank: int) -> list[int]:
    """The other ranks that show the same failure as ``rank``'s exception at ``line`` of
    ``path``: the same exception type and message once numbers are set aside (a rank's own
    number, a count, a shape differ between copies), or a traceback the log cuts before its
    exception line that shows no wait in torch.distributed (:func:`_cut_in_collective`: it may
    be that rank's own copy). Empty when the exception is not found or no other rank shows one.

    Mechanism: ranks run the same code on the same config; a fault of that code or config
    (a shape the model builds wrong, a path no node has) raises the same error on every rank
    that reaches it, and which of them a paste shows, or shows last, is the order their
    output was written in, not who started it."""
    own = next(
        (x for x in st.exceptions if x.path == path and x.exc.log_line == line and x.rank == rank),
        None,
    )
    if own is None:
        return []
    key = (own.exc.type, _DIGITS.sub("#", own.exc.message))
    others = {
        x.rank
        for x in st.exceptions
        if x.rank is not None
        and x.rank != rank
        and not x.exc.ignored
        and (x.exc.type, _DIGITS.sub("#", x.exc.message)) == key
    }
    others |= {
        cut_rank
        for p, cut_rank, start in st.cut_traceback_starts
        if cut_rank is not None
        and cut_rank != rank
        and not _cut_in_collective(st, p, cut_rank, start)
    }
    differ = {
        x.rank
        for x in st.exceptions
        if x.rank is not None
        and x.rank != rank
        and not x.exc.ignored
        and (x.exc.type, _DIGITS.sub("#", x.exc.message)) != key
    }
    return sorted(others - differ)


def launcher_first_elsewhere(rank: int, case: Case) -> tuple[int, int] | None:
    """Another rank the launcher saw fail first, by itself, when the log shows nothing else
    of it: ``(that rank, its exit code)``, or ``None``.

    torchrun's agent logs the first failure it observes in the worker group (``failed
    (exitcode: 1) local_rank: 1``) and names it "Root Cause (first observed failure)" in its
    summary (torch/distributed/elastic/multiprocessing/api.py, ``PContext._poll``;
    errors/__init__.py, ``ChildFailedError.get_first_failure``), then stops the others with
    SIGTERM. A real exit code (not a signal the agent sent) is that rank's own failure. When
    the root cause is printed by ``rank`` but the agent saw another rank exit first, and
    that rank's own error is not in the log (no finding of it beyond the launcher's report),
    two readings conflict with equal strength: ``rank`` may have been unwinding its error
    when the other left, or the other hit an earlier fault the paste lost. The log does not
    tell, so no rank is named.

    A root from an earlier attempt (``ScanState.earlier_findings``: torchrun restarted the
    workers, or a relaunch appended to the log) is not compared: the launcher lines kept are
    the last attempt's, and they report how the restart failed, not who failed first in the
    attempt the root belongs to. Nor is a root that names a rank that never arrived (an
    ``absent_rank`` capture: the ranks that printed it exit first, by design)."""
    ctx = case.ctx
    if ctx.from_earlier_attempt(case.root):
        return None
    if case.root.captures.get("absent_rank") == str(rank):
        # the root names a rank that never arrived (an ``absent_rank`` capture), printed by
        # the ranks that waited for it: those witnesses fail and exit first by design
        return None
    own = {f.rank for f in ctx.findings if f.rank is not None and ctx.kind(f) != "terminal"}
    # ranks the root itself made fail (a ``readers`` capture: the ranks that could not parse
    # the file the root's rank wrote, rootrank.analysis.unflushed_write): their errors are the
    # root's own lines, and they exit first by design
    own |= {int(r) for r in case.root.captures.get("readers", "").split(", ") if r.isdigit()}
    firsts: list[tuple[int, int]] = []
    for e in of_kind(ctx.events, "exit"):
        # the agent's own first-failure line names the worker's local rank
        if e.rank is not None and "local_rank" in e.ref.captures and real_exit(e.code):
            firsts.append((e.rank, e.code or 0))
    for e in of_kind(ctx.events, "summary"):
        if e.ref.root_cause and e.rank is not None and e.rank >= 0 and real_exit(e.code):
            firsts.append((e.rank, e.code or 0))
    if any(r == rank for r, _ in firsts):
        return None  # the launcher saw the root's own rank fail first: no conflict
    for other, code in firsts:
        if other not in own:
            return other, code
    return None


def summary_root_of(entry: ElasticFailure, entries: list[ElasticFailure]) -> ElasticFailure | None:
    """The "Root Cause (first observed failure)" entry of the summary ``entry`` sits in.

    torchelastic prints one agent's ``Failures:`` entries first, then its root cause: the
    failure with the smallest timestamp (``ChildFailedError.get_first_failure`` in
    ``torch/distributed/elastic/multiprocessing/errors/__init__.py``). So the first root
    entry after ``entry`` in the same file, with no summary end in between that we can see,
    bounds ``entry``'s time from below. ``None`` when no root entry follows."""
    later = [e for e in entries if e.root_cause and e.path == entry.path and e.line > entry.line]
    return min(later, key=lambda e: e.line) if later else None


#: Seconds by which the agent's failure line of one worker must precede every other's for its
#: sub-second stamp to order them: several times torchrun's default ``--monitor-interval``
#: (0.1 s, the agent's polling period: two workers that died within one poll are logged
#: together, so a smaller gap does not order them).
PRECISE_EXIT_GAP = 0.5


def elastic_rank(
    elastic: list[ElasticFailure], exit_times: Mapping[int, float] | None = None
) -> tuple[int | None, str]:
    """The rank torchelastic's failure summaries point at, when they can tell: the only rank
    with a real failure exit code (not a SIGTERM/SIGKILL the agent sent), or the one whose
    failure is strictly the earliest. Several summaries (one per node agent) are merged.

    An entry whose ``time`` field is not in the log (a paste cut inside ``Failures:``) is
    not earlier than its own summary's root-cause entry (torchelastic picks the minimum
    timestamp), so it does not stand in the way of that root entry or of an earlier one; an
    entry with neither a time nor a following root entry leaves the order unknown."""
    entries = [e for e in elastic if e.rank is not None and e.rank >= 0]
    if not entries:
        return None, ""
    real = [
        e
        for e in entries
        if e.exitcode is not None and e.exitcode not in SIGNAL_CODES and e.exitcode != 0
    ]
    pool = real or entries
    ranks = sorted({e.rank for e in pool if e.rank is not None})
    if len(ranks) == 1:
        e = pool[0]
        if len(entries) > 1 and real:
            return e.rank, say("elastic_only_real", rank=e.rank, code=e.exitcode)
        return e.rank, say("elastic_single", rank=e.rank, code=e.exitcode)
    timed = [e for e in pool if e.time is not None]
    if timed:
        first = min(timed, key=lambda e: e.time or 0.0)
        unique = sum(1 for e in timed if e.time == first.time and e.rank != first.rank) == 0
        bounded = True
        siblings: list[int] = []  # untimed entries of `first`'s own summary
        for e in pool:
            if e.time is not None or e.rank == first.rank:
                continue
            root = summary_root_of(e, entries)
            if root is None or root.time is None:
                bounded = False
            elif root is first:
                siblings.append(e.rank or 0)
            elif root.time <= (first.time or 0.0):
                bounded = False  # it may have failed as early as `first`
        if unique and bounded:
            others = format_ranks([r for r in ranks if r != first.rank])
            if siblings:
                return first.rank, say(
                    "elastic_first_with_siblings",
                    rank=first.rank,
                    code=first.exitcode,
                    siblings=ranks_word(sorted(siblings)),
                )
            return first.rank, say(
                "elastic_first", rank=first.rank, code=first.exitcode, others=others
            )
    precise = _first_by_agent_line(pool, exit_times or {})
    if precise is not None:
        first, gap = precise
        others = format_ranks([r for r in ranks if r != first.rank])
        return first.rank, say(
            "elastic_first_precise",
            rank=first.rank,
            code=first.exitcode,
            others=others,
            gap=f"{gap:.1f}",
        )
    return None, say("elastic_same_time", ranks=format_ranks(ranks))


def _first_by_agent_line(
    pool: list[ElasticFailure], exit_times: Mapping[int, float]
) -> tuple[ElasticFailure, float] | None:
    """The entry of ``pool`` whose worker's failure torchrun's agent logged first, by the
    agent line's sub-second stamp (``exit_times``: pid -> seconds,
    ``ScanState.agent_exit_times``), and its lead in seconds over the next rank: when every
    entry's pid has a stamp and the first precedes every other rank's by at least
    :data:`PRECISE_EXIT_GAP`. Several agents (one per node) print one summary each whose
    ``time`` field has whole seconds only, so failures within one second tie there; the
    agent's own ``failed (exitcode: 1) local_rank: 0 (pid: P)`` line carries the
    microseconds. ``None`` otherwise."""
    stamped = [(exit_times[e.pid], e) for e in pool if e.pid is not None and e.pid in exit_times]
    if len(stamped) != len(pool) or len({e.rank for _, e in stamped}) < 2:
        return None
    stamped.sort(key=lambda x: x[0])
    t0, first = stamped[0]
    rest = [t for t, e in stamped if e.rank != first.rank]
    gap = min(rest) - t0
    if gap < PRECISE_EXIT_GAP:
        return None
    return first, gap
