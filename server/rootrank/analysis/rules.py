"""Explanation rules: which event explains which.

Each rule is a small function ``rule(ctx, nodes) -> Iterable[Edge]`` for one mechanism,
registered in :data:`RULES` in the order the report lists them. A rule reads facts about a
signature from its YAML (``role``, ``kind``, ``explained_by``) and the events' ranks, times
and captures; it never matches log text itself. The root cause is then the cause nothing
explains (:mod:`rootrank.analysis.graph`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rootrank import lazy_regex
from rootrank.analysis.prepare import Context
from rootrank.model import Finding


@dataclass(frozen=True, slots=True)
class Edge:
    """``cause`` explains ``effect`` by ``rule`` (a rule's function name); ``why`` is the
    mechanism in a few words."""

    cause: Finding
    effect: Finding
    rule: str
    why: str


def before(a: Finding, b: Finding) -> bool | None:
    """Whether ``a`` happened before ``b``: by timestamps when both have one (ties by log
    order), else by log order within one file; ``None`` when the log cannot tell (two
    files without times)."""
    if a.time is not None and b.time is not None and a.time != b.time:
        return a.time < b.time
    pa = a.evidence[0].path if a.evidence else None
    pb = b.evidence[0].path if b.evidence else None
    if a.time is not None and b.time is not None or pa == pb:
        return a.order < b.order
    return None


def not_after(a: Finding, b: Finding) -> bool:
    """``a`` is not known to come after ``b``."""
    return before(b, a) is not True


Rule = Callable[[Context, list[Finding]], Iterable[Edge]]


#: Signature categories (``signatures/<category>/``) whose warnings concern how the
#: processes reach each other: a rendezvous store retried, a DNS name not resolved, NCCL's net
#: plugin or EFA not loaded. Such a warning can explain why peers later wait or time out.
COMM_CATEGORIES = frozenset({"network", "launch", "nccl"})


def inert_warning(ctx: Context, f: Finding) -> bool:
    """Whether ``f`` is a warning (``severity: warning``) that cannot, on its own, explain
    other ranks' waits: the process that printed it went on (a warning stops nothing: NumPy
    not initialised, an arch or build advisory, fp16 steps skipped), and its category is not
    one of :data:`COMM_CATEGORIES`. Such a warning explains only what its signature's YAML
    declares (rule :func:`declared_explanations`), never a peer's timeout by the generic rule
    (new-user trial r17: torch's "Failed to initialize NumPy" warning, printed by every worker
    of a torch install without NumPy, was read as the cause of a rank's lock-file hang)."""
    if f.severity != "warning":
        return False
    sig = ctx.library.signatures.get(f.signature)
    return getattr(sig, "category", None) not in COMM_CATEGORIES


def cause_explains_symptoms(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A fault on one rank explains the symptoms the others show: its peers' collectives
    time out (the NCCL/gloo watchdog), their connections to it reset, and the launcher
    reports failed children and SIGTERMs the rest (torch/distributed/elastic/agent/server/
    api.py: one failed worker stops the whole group). A scheduler limit explains them only
    when it came first (see :func:`terminal_after_fault`). A fault of a restarted attempt
    explains nothing of the attempt before the restart (``state.earlier_findings``): that
    attempt had failed already, and its failure is what the restart came from
    (:func:`restart_after_failure`)."""
    causes = [f for f in nodes if f.role == "cause" and not inert_warning(ctx, f)]
    symptoms = [f for f in nodes if f.role == "symptom"]
    earlier = {id(f) for f in ctx.state.earlier_findings}
    for c in causes:
        terminal = ctx.kind(c) == "terminal"
        for s in symptoms:
            if (terminal and before(s, c) is True) or _launcher_killed(ctx, s, c):
                continue
            if id(s) in earlier and id(c) not in earlier:
                continue
            yield Edge(c, s, "cause_explains_symptoms", "the other ranks only saw its consequence")


def terminal_after_fault(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A terminal event (a scheduler's time limit or cancellation, a preemption, the
    launcher's kill of a worker, an MPI abort banner, restarts exhausted) ends the story;
    an earlier real fault (a transport error, a collective timeout, an exception) is what
    stopped the job, and the limit only ended a job that was already hung or failing.
    Slurm's slurmstepd kills at the limit whatever the job was doing (slurm.conf KillWait)."""
    terminals = [f for f in nodes if ctx.kind(f) == "terminal"]
    # A message that only reports that a peer went away is not a fault of its own.
    faults = [
        f
        for f in nodes
        if ctx.kind(f) != "terminal" and f.severity == "error" and not ctx.peer_report(f)
    ]
    for t in terminals:
        for f in faults:
            if _launcher_killed(ctx, t, f):
                continue
            if t.role == "symptom":
                # The launcher's own report (a failed child, its SIGTERMs) is printed when it
                # notices, often before the failing rank's output is flushed: log order does
                # not count, only timestamps that put the fault after it.
                if not (f.time is not None and t.time is not None and f.time > t.time):
                    yield Edge(
                        f,
                        t,
                        "terminal_after_fault",
                        "the launcher only reported what had already failed",
                    )
            elif _pasted_on_top(ctx, f, t):
                continue
            elif before(f, t) is True or (before(f, t) is None and f.role == "cause"):
                yield Edge(
                    f,
                    t,
                    "terminal_after_fault",
                    "the job was already failing before it was stopped",
                )


def _pasted_on_top(ctx: Context, f: Finding, t: Finding) -> bool:
    """Whether the untimed fault ``f`` only *appears* before the timed terminal event ``t``:
    ``f`` has no time and no timed line before it in its file (the scan gives an untimed line
    the latest timestamp printed before it as a lower bound, so none was), ``t`` has a time,
    and the same file shows a traceback after ``t`` whose lower-bound time is later than
    ``t``'s. The job visibly failed after it was stopped (a requeued attempt's error), and a
    line above every timestamp is the user's paste of that final error, not an earlier event
    (held-out r20f case 12: the store-barrier error quoted at the top, a preemption at
    18:00:46, the failing attempt's traceback at 18:45:40). Log position orders lines only
    where timestamps do not."""
    if f.time is not None or t.time is None or not f.evidence or not t.evidence:
        return False
    path = f.evidence[0].path
    if t.evidence[0].path != path or f.order > t.order:
        return False
    end = max(e.line for e in t.evidence if e.path == path)
    later = [*ctx.state.exceptions, *ctx.state.cut_tracebacks]
    return any(
        x.path == path and x.exc.log_line > end and x.time is not None and x.time > t.time
        for x in later
    )


#: The capture of a launcher's failure report whose line also says that the launcher now
#: kills the other processes (Lightning's "... terminated with code 4. Forcefully
#: terminating all other processes"), and the ``explained_by`` word of the SIGKILLs it sends.
KILLS_OTHERS = "kills_others"
LAUNCHER_KILL = "launcher-kill"


def _launcher_killed(ctx: Context, announcer: Finding, e: Finding) -> bool:
    """``e`` (a SIGKILL whose signature declares ``explained_by: [launcher-kill]``) is not
    printed before ``announcer``, a launcher's report that captured :data:`KILLS_OTHERS`."""
    if e is announcer or KILLS_OTHERS not in announcer.captures:
        return False
    sig = ctx.library.signatures.get(e.signature)
    if LAUNCHER_KILL not in (getattr(sig, "explained_by", ()) or ()):
        return False
    return before(e, announcer) is not True


def launcher_kills_the_rest(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A launcher that reports a child's failure and says it now terminates all other
    processes sends the SIGKILLs printed after it (Lightning/Fabric's subprocess launcher,
    ``_ChildProcessObserver``: SIGKILL to every other child and to its own process, which a
    shell then reports as ``Killed`` / exit 137): those kills are collateral of the child's
    failure, not the OOM killer, like the closing signals torchrun's agent sends."""
    for a in nodes:
        if KILLS_OTHERS not in a.captures:
            continue
        for e in nodes:
            if _launcher_killed(ctx, a, e):
                yield Edge(
                    a,
                    e,
                    "launcher_kills_the_rest",
                    "the launcher killed the other processes after a child failed",
                )


def declared_explanations(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """What a signature's YAML says may explain it (``explained_by``): a failure kind
    (``hardware``), a failure class or a signature id whose finding, anywhere in the log,
    is the more precise reading of the same fault (ENOSPC from a semaphore when the
    DataLoader's shared memory is exhausted is ``/dev/shm``, not the disk); or ``peer``: a
    fault on another rank, for a message that only reports that a peer went away (NCCL's
    "remote process exited or there was a network error", gloo's "Connection reset by
    peer"): no later by timestamps; log order does not count, since the launcher reports a
    worker's death after its peers noticed it; ``what``: the finding read on the ``what():``
    line a C++ abort printed under it (:func:`_what_of`); ``own-exception``: the Python
    exception the same process raised just before it aborted (:func:`_raised_before`). A warning explains only when its
    signature id is named (a condition printed at start-up that the failure follows from:
    NCCL's transport falling back to sockets on a fabric host), never by kind or class.

    Cost: every declaring finding meets every other error (a 1,024-rank log: ~1,000 x
    ~3,000 pairs, ~10^6 edges); what depends on the candidate alone (its kind, whether it
    is a peer report) is read once per candidate, and a reason text once per declaring
    finding and name, not once per pair (the same edges, in the same order)."""
    candidates: list[tuple[Finding, str]] | None = None
    for e in nodes:
        sig = ctx.library.signatures.get(e.signature)
        wanted = set(getattr(sig, "explained_by", ()) or ())
        if not wanted:
            continue
        if candidates is None:
            candidates = [
                (c, ctx.kind(c))
                for c in nodes
                if c.severity in ("error", "warning") and not ctx.peer_report(c)
            ]
        reasons: dict[str, str] = {}
        for c, kind in candidates:
            if c is e or (c.severity != "error" and c.signature not in wanted):
                continue
            if (
                c.signature in wanted
                or kind in wanted
                or (c.failure_class in wanted and c.signature != e.signature)
            ):
                named = (
                    c.signature
                    if c.signature in wanted
                    else kind
                    if kind in wanted
                    else c.failure_class
                )
                why = reasons.get(named)
                if why is None:
                    why = reasons[named] = (
                        f"{e.signature} is read as {named} when both are in the log"
                    )
                yield Edge(c, e, "declared_explanations", why)
            elif "wrapped" in wanted and c.role == "cause" and _wrapped_in(e, c):
                yield Edge(
                    c, e, "declared_explanations", "it re-raises the exception printed after it"
                )
            elif "abort-message" in wanted and c.signature != e.signature and _aborted_on(e, c):
                yield Edge(
                    c,
                    e,
                    "declared_explanations",
                    "the abort's handler printed it right after the C++ message that aborted",
                )
            elif "own-exception" in wanted and c.role == "cause" and _raised_before(e, c):
                yield Edge(
                    c,
                    e,
                    "declared_explanations",
                    "the process raised it and then aborted while shutting down",
                )
            elif "what" in wanted and c.signature != e.signature and _what_of(e, c):
                yield Edge(
                    c,
                    e,
                    "declared_explanations",
                    "it is the message the abort printed on its what(): line",
                )
            elif (
                "peer" in wanted
                and c.role == "cause"
                and kind != "terminal"
                and c.rank != e.rank
                and c.failure_class != e.failure_class
                and not (c.time is not None and e.time is not None and c.time > e.time)
            ):
                yield Edge(c, e, "declared_explanations", "it only reports that a peer went away")


def restart_after_failure(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A fault of an attempt before a torchrun restart (``--max-restarts``) explains the
    last attempt's failure when that failure's YAML declares ``explained_by: [restart]``:
    forming the process group again where the failed attempt left its state. With the
    static rendezvous the agent's TCPStore keeps the addresses the failed attempt's ranks
    published, and gloo's full-mesh connect of the restarted ranks is refused (torch 2.13,
    gloo on CPU: scenarios/README.md, "restart-fails-to-reform-the-group"). The restart
    exists only because of the earlier fault, and fixing it leaves nothing to restart."""
    earlier = {id(f) for f in ctx.state.earlier_findings}
    faults = [c for c in nodes if id(c) in earlier]
    for e in nodes:
        sig = ctx.library.signatures.get(e.signature)
        if id(e) in earlier or "restart" not in (getattr(sig, "explained_by", ()) or ()):
            continue
        for c in faults:
            yield Edge(
                c,
                e,
                "restart_after_failure",
                "the restarted attempt failed to form the group the failed attempt left behind",
            )


def retry_after_fault(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """An earlier attempt's exception on the rank the last attempt failed on explains the
    last attempt's collective mismatch when that mismatch's YAML declares ``explained_by:
    [retry]`` (the faults are chosen by rootrank.analysis.retried.retried_faults): the job
    ran again with a tolerance for that error (skip the bad record, catch the exception),
    and the tolerance made that rank run one collective fewer. Fixing the first error
    leaves nothing to tolerate."""
    earlier = {id(f) for f in ctx.state.earlier_findings}
    faults = [c for c in nodes if id(c) in earlier and c.rank is not None]
    for e in nodes:
        sig = ctx.library.signatures.get(e.signature)
        if id(e) in earlier or "retry" not in (getattr(sig, "explained_by", ()) or ()):
            continue
        for c in faults:
            yield Edge(
                c,
                e,
                "retry_after_fault",
                f"the job ran again after rank {c.rank}'s error, and rank {c.rank} failed "
                "again: the retry's tolerance of that error made its collectives differ",
            )


def barrier_counted_a_restart(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A store-based barrier that counted more arrivals than the world size
    (``store_based_barrier_key:1 (world_size=2, worker_count=4, ...)``, captured as
    ``joined`` and ``world_size``) ran in a restarted attempt: the elastic agent reuses its
    TCPStore across restarts (``--max-restarts``), the key's counter keeps the failed
    attempt's arrivals, and the restarted ranks wait for a count that can never be right. The
    restart exists only because of an earlier fault, so the cause findings printed before
    that barrier (in the same file, earlier in log order) explain it, even when the log
    shows no attempt boundary (the agent's ``Worker group FAILED ... will restart`` lines
    printed after the barrier's traceback). Fixing the first fault leaves nothing to
    restart."""

    def count(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.isdigit() else None

    for e in nodes:
        joined, world = count(e, "joined"), count(e, "world_size")
        if joined is None or world is None or joined <= world or not e.evidence:
            continue
        path = e.evidence[0].path
        for c in nodes:
            if c is e or ctx.kind(c) != "cause" or c.failure_class == e.failure_class:
                continue
            if not c.evidence or c.evidence[0].path != path or c.order >= e.order:
                continue
            yield Edge(
                c,
                e,
                "barrier_counted_a_restart",
                "the barrier counted the failed attempt's arrivals: a restart after this fault",
            )


#: How many lines after a wrapper exception (``explained_by: [wrapped]``) the exception it
#: re-raises may be printed (its "Original Traceback").
WRAP_SPAN = 60


#: How many lines after a C++ abort's "terminate called after throwing an instance of 'T'"
#: (``explained_by: [what]``) its ``what():  message`` line may be printed: libstdc++'s
#: verbose terminate handler writes it on the next line; one more for a wrapped terminal line.
WHAT_SPAN = 2


#: The line ProcessGroupNCCL's watchdog logs (glog ``LOG(ERROR)``, torch 2.2+: "[PG ID 0 PG GUID
#: 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: <what>"; 2.0
#: and 2.1: "NCCL watchdog thread terminated with exception: <what>") right before it rethrows
#: the same text as ``c10::DistBackendError`` (``ncclCommWatchdog`` in ProcessGroupNCCL.cpp).
#: It carries the abort's payload when the paste has no ``what():`` line.
WATCHDOG_EXIT_TEXT = "watchdog thread terminated with exception"


def _what_of(abort: Finding, message: Finding) -> bool:
    """``message`` is read on the ``what():`` line of the C++ abort ``abort`` reported: in
    its file, at most :data:`WHAT_SPAN` lines after it, on its rank or on none (the what()
    payload's own ``[PG 3 Rank 5]`` is a subgroup rank and tags nothing, and the terminate
    line names no rank). The exception type on the terminate line
    (``c10::DistBackendError``) is only how the watchdog thread rethrew it; the payload is
    the failure (a watchdog timeout, an NCCL error string).

    The watchdog also logs that payload itself, on a glog line of its own
    (:data:`WATCHDOG_EXIT_TEXT`), just before the rethrow: stderr interleaving prints it
    right before or right after the terminate line, with or without a ``what():`` line.
    Such a line within :data:`WHAT_SPAN` lines on either side is the same payload."""
    if not abort.evidence or not message.evidence:
        return False
    if abort.rank is not None and message.rank not in (abort.rank, None):
        return False
    a, m = abort.evidence[0], message.evidence[0]
    if a.path != m.path:
        return False
    if 0 < m.line - a.line <= WHAT_SPAN and "what():" in m.text:
        return True
    return 0 < abs(m.line - a.line) <= WHAT_SPAN and WATCHDOG_EXIT_TEXT in m.text


#: How many lines before a fatal-signal banner (``explained_by: [abort-message]``:
#: faulthandler's "Fatal Python error: Aborted") the C++ message that raised the SIGABRT may
#: be printed: libstdc++'s terminate handler writes "terminate called after throwing ..." and
#: "  what():  <message>", then calls abort(), whose signal faulthandler reports on the next
#: line (one more for a wrapped terminal line).
ABORT_BANNER_SPAN = 3

#: Words of the lines that carry the payload std::terminate printed before it aborted (the
#: ``what():`` line, the watchdog's own record of it). Its "terminate called ..." line names
#: only the exception's type (or "recursively"): no more than the banner says.
_ABORT_MESSAGE_WORDS = ("what():", WATCHDOG_EXIT_TEXT)


def _aborted_on(banner: Finding, message: Finding) -> bool:
    """``message`` is what a C++ abort printed right before the fatal-signal ``banner``: its
    first evidence line is at most :data:`ABORT_BANNER_SPAN` lines before the banner's, in
    its file, on its rank or on none, and is a ``what():`` or watchdog exit line (:data:`_ABORT_MESSAGE_WORDS`). Mechanism: an uncaught C++ exception (the NCCL watchdog rethrowing its
    collective timeout) makes libstdc++ print its type and ``what()`` and call abort(); the
    SIGABRT handler (faulthandler) then prints "Fatal Python error: Aborted". The banner is
    the abort's consequence, the message its cause."""
    if not banner.evidence or not message.evidence:
        return False
    if banner.rank is not None and message.rank not in (banner.rank, None):
        return False
    b = banner.evidence[0]
    for m in message.evidence[:GAP_LINES]:
        if (
            m.path == b.path
            and 0 < b.line - m.line <= ABORT_BANNER_SPAN
            and any(w in m.text for w in _ABORT_MESSAGE_WORDS)
        ):
            return True
    return False


#: How many lines before a process's std::terminate its own uncaught Python exception may
#: end (:func:`_raised_before`): the other threads' and ranks' lines printed in between.
OWN_EXCEPTION_SPAN = 40


def _raised_before(abort: Finding, exc: Finding) -> bool:
    """``exc`` is a Python exception line (its first evidence line starts with the exception
    type) printed at most :data:`OWN_EXCEPTION_SPAN` lines before ``abort``'s first line, in
    its file, on its rank (or with no rank on either). Mechanism: an uncaught exception ends
    the main thread; the interpreter then finalizes while a native thread (a process group's
    watchdog or store thread, a DataLoader pin-memory thread) is still joinable, and
    libstdc++ calls std::terminate "without an active exception" (vterminate.cc) and
    abort(): the abort is the exception's consequence, not a second fault."""
    if not abort.evidence or not exc.evidence:
        return False
    if abort.rank is not None and exc.rank not in (abort.rank, None):
        return False
    a, x = abort.evidence[0], exc.evidence[0]
    return (
        x.path == a.path
        and 0 < a.line - x.line <= OWN_EXCEPTION_SPAN
        and _EXC_LINE.match(x.text) is not None
    )


#: The exception type an exception line starts with (``RuntimeError: ...``,
#: ``torch.distributed.DistBackendError: ...``; group 1 the type's own name).
_EXC_LINE = lazy_regex.compile(r"^\s*(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception)):")


def _wrapped_in(wrapper: Finding, inner: Finding) -> bool:
    """``inner`` is printed within :data:`WRAP_SPAN` lines after ``wrapper``, on its rank
    and in its file. When the wrapper names the type it caught (``exc_type``: ``Caught
    FileNotFoundError in DataLoader worker process 0``) and ``inner``'s line is an exception
    line of another type (``RuntimeError: Timed out initializing process group``), ``inner``
    is another exception printed after it (a restarted attempt's, another process's), not
    the one it re-raises."""
    if wrapper.rank != inner.rank or not wrapper.evidence or not inner.evidence:
        return False
    w, i = wrapper.evidence[0], inner.evidence[0]
    if not (w.path == i.path and 0 < i.line - w.line <= WRAP_SPAN):
        return False
    caught = wrapper.captures.get("exc_type", "")
    m = _EXC_LINE.match(i.text)
    return not (caught and m is not None and m.group(1) != caught)


def one_fault_one_explanation(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """Two causes that are one fault are one event: read from one exception message (its
    first line and the lines it continues on, same rank and file, at most
    :data:`MESSAGE_SPAN` lines apart: ``AssertionError:`` then "The NVIDIA driver on your
    system is too old"), or of the same failure class on the same rank (DeepSpeed's loss
    scale halving, then its "Current loss scale already at minimum"; the loss curve's first
    NaN, then the script's own NaN guard). The more specific reading explains the other (the
    earlier one when equally specific); this is the one place ``specificity`` decides, as it
    does for two signatures on one line."""
    causes = [f for f in nodes if f.role == "cause" and f.evidence]
    for a in causes:
        for b in causes:
            if a is b or a.rank != b.rank or a.specificity < b.specificity:
                continue
            if a.specificity == b.specificity and before(a, b) is not True:
                continue  # equally specific: the first reading explains the later one
            ea, eb = a.evidence[0], b.evidence[0]
            if a.failure_class == b.failure_class and (a.rank is not None or ea.path == eb.path):
                # (no rank: one file is one process's output, as far as the log tells)
                yield Edge(
                    a, b, "one_fault_one_explanation", "both are the same fault on this rank"
                )
                continue
            if ea.path != eb.path or _message_gap(a, b, ctx) > MESSAGE_SPAN:
                continue
            if a.time is not None and b.time is not None and a.time != b.time:
                continue
            if (ctx.kind(a) == "terminal") != (ctx.kind(b) == "terminal"):
                # a stop from outside on the next line is no part of the fault's message:
                # the job was stopped after it (terminal_after_fault says so)
                continue
            yield Edge(a, b, "one_fault_one_explanation", "both read the same exception message")


#: How many lines one exception message may span for :func:`one_fault_one_explanation`.
MESSAGE_SPAN = 3


#: How many of a finding's evidence lines :func:`_message_gap` compares.
GAP_LINES = 8


def _message_gap(a: Finding, b: Finding, ctx: Context | None = None) -> int:
    """Lines between the nearest evidence lines of ``a`` and ``b`` in one file (of their
    first :data:`GAP_LINES` each): a message that spans several lines is read by a
    signature on more than one of them (PyTorch's ``DistBackendError: NCCL error in: ...,
    unhandled system error`` then ``ncclSystemError: System call ...`` then ``Last
    error:``), and a terminal that wrapped its first line pushes the rest down, so its
    first line alone would put the text of its ``Last error:`` line out of reach. Blank
    lines between them do not count when ``ctx``'s scan kept that part of the file
    (:func:`_blank_lines`): a message pasted with an empty line after each of its lines
    (a web page copied, ``Last error:``, an empty line, then the detail) is still one
    message."""
    best: tuple[int, str, int, int] | None = None
    for x in a.evidence[:GAP_LINES]:
        for y in b.evidence[:GAP_LINES]:
            if x.path == y.path and (best is None or abs(x.line - y.line) < best[0]):
                best = (abs(x.line - y.line), x.path, min(x.line, y.line), max(x.line, y.line))
    if best is None:
        return MESSAGE_SPAN + 1
    gap, path, lo, hi = best
    if ctx is not None and MESSAGE_SPAN < gap <= MESSAGE_SPAN + MAX_BLANK_LINES:
        gap -= _blank_lines(ctx, path, lo, hi)
    return gap


#: How many blank lines inside one message :func:`_message_gap` looks past.
MAX_BLANK_LINES = 6


def _blank_lines(ctx: Context, path: str, lo: int, hi: int) -> int:
    """How many of the lines strictly between 1-based lines ``lo`` and ``hi`` of ``path`` are
    blank (only whitespace), from the scan's kept first and last lines of that source
    (``ScanState.heads`` / ``tails``); ``0`` when the scan did not keep them all."""
    for kept_path, first, text in (*ctx.state.heads, *ctx.state.tails):
        if kept_path != path or lo + 1 < first:
            continue
        lines = text.split("\n")
        if hi - 1 > first + len(lines) - 1:
            continue
        return sum(1 for n in range(lo + 1, hi) if not lines[n - first].strip())
    return 0


def _handled_and_final(
    ctx: Context,
) -> list[tuple[tuple[str, int | None, int], tuple[str, int | None, int]]]:
    """``((path, rank, line), (path, rank, line))`` of each exception that was being handled
    when another was raised (the link after it says "During handling of the above
    exception, another exception occurred") and of the last exception of its chain, the
    one that ended the process. Lines are 1-based exception lines."""
    streams: dict[tuple[str, int | None], list] = {}
    for seen in ctx.state.exceptions:
        streams.setdefault((seen.path, seen.rank), []).append(seen.exc)
    out = []
    for (path, rank), excs in streams.items():
        excs.sort(key=lambda e: e.log_line)
        for i, exc in enumerate(excs):
            j = i
            while (
                j + 1 < len(excs)
                and excs[j + 1].chain_index == excs[j].chain_index + 1
                and excs[j + 1].chained
            ):
                j += 1
            if j > i and excs[i + 1].chained == "context":
                out.append(((path, rank, exc.log_line), (path, rank, excs[j].log_line)))
    return out


def final_exception_ends_the_chain(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """In a chained traceback the last exception is the one that ended the process; an
    exception that was being handled when it was raised ("During handling of the above
    exception, another exception occurred": a cache miss, an import fallback) is context.
    A more specific reading of the final exception (PermissionError on the output file)
    explains a less specific one of the handled exception (a generic KeyError) on the same
    rank and in the same file (Python's traceback module prints ``__context__`` first)."""
    causes = [f for f in nodes if f.role == "cause" and f.evidence]
    if not causes:
        return
    for handled, final in _handled_and_final(ctx):
        at = {
            key: [
                f
                for f in causes
                if f.evidence[0].path == key[0]
                and f.rank == key[1]
                and 0 <= f.evidence[0].line - key[2] <= MESSAGE_SPAN
            ]
            for key in (handled, final)
        }
        for a in at[final]:
            for b in at[handled]:
                if a is not b and a.specificity > b.specificity:
                    yield Edge(
                        a,
                        b,
                        "final_exception_ends_the_chain",
                        "it was being handled when the final exception was raised",
                    )


def hardware_explains_gpu_faults(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A hardware event (an Xid the driver attributes to the GPU, ECC, NVLink, a GPU
    fallen off the bus) explains every later non-hardware failure: the processes on that
    GPU fail with CUDA errors and their peers time out (NVIDIA's Xid catalog: Xid 45 and
    CUDA errors after 48, 63, 64, 74, 79, 92-95, 119, 120, 145, 149 are consequences)."""
    hardware = [f for f in nodes if ctx.kind(f) == "hardware" and f.severity == "error"]
    for h in hardware:
        for e in nodes:
            if e is h or ctx.kind(e) in ("hardware", "terminal") or not not_after(h, e):
                continue
            if h.host and e.host and h.host != e.host:
                continue
            yield Edge(
                h,
                e,
                "hardware_explains_gpu_faults",
                "a GPU hardware fault makes the work on it fail",
            )


#: Onsets whose value every all-reduce carries to every rank (a NaN/Inf): their onset on one
#: rank explains the same class on another rank later.
_SPREADS = frozenset({"metric-nonfinite"})


def onset_explains_what_follows(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A training-curve onset (``detector: metrics``: the loss spiked, turned NaN, the loss
    scale collapsed) explains what the same fault does later: the next onset and the script's
    NaN guard or the scaler's final error, of the same failure class, on its rank or, for a
    non-finite value, on any rank. Under DDP a bad update reaches every rank's weights in the
    next all-reduce, so one onset is the start of all of them (rootrank.metrics); a NaN is
    carried by every all-reduce it enters (the global loss, the gradients), so a guard that
    raises on another rank after one rank's own value went NaN only saw it arrive."""
    onsets = [
        f
        for f in nodes
        if getattr(ctx.library.signatures.get(f.signature), "detector", None) == "metrics"
    ]
    for o in onsets:
        for f in nodes:
            if f is o or f.failure_class != o.failure_class or before(o, f) is not True:
                continue
            if o.rank is None or f.rank in (None, o.rank) or o.signature in _SPREADS:
                yield Edge(o, f, "onset_explains_what_follows", "the curve showed the fault first")


#: The failure class of a fault in the network fabric or NCCL's transport under it
#: (InfiniBand/RoCE completion errors, UCX/libfabric/EFA errors, IB async events).
TRANSPORT_CLASS = "network-fabric-error"

#: Failure classes a transport failure surfaces as later in the same job: CUDA faults
#: (an illegal memory access) and NCCL's "unhandled cuda error" / system errors.
TRANSPORT_AFTERMATH = frozenset({"cuda-illegal-memory-access", "nccl-system-error"})


def transport_explains_cuda_faults(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A fault of the network fabric or NCCL's transport (:data:`TRANSPORT_CLASS`: "NET/IB :
    Got completion with error 12", a UCX/EFA error) explains the CUDA faults and NCCL
    errors printed after it (:data:`TRANSPORT_AFTERMATH`), on any host: a work completion
    fails at both ends of a connection (both servers print it), so the peer's kernels
    abort as well. NCCL's proxy thread drives the network transfers of a running
    collective kernel; when a work completion fails (a retry-exceeded or a flushed
    GPUDirect RDMA transfer) the proxy aborts the communicator, and the kernel that was
    reading or writing the registered buffers, or the next CUDA call of the process,
    fails: NCCL reports it as a "Cuda failure 'an illegal memory access was encountered'"
    and ``ncclUnhandledCudaError``. Reference: NCCL's user guide, "Troubleshooting"
    (docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html: GPU Direct
    RDMA and InfiniBand sections; an IB work-completion status such as 12,
    IBV_WC_RETRY_EXC_ERR, is a fabric or GPUDirect fault, ibv_wc_status in rdma-core's
    verbs.h). Only when the transport error comes first (timestamps, else log order in
    one file): a CUDA fault printed before it is a fault of its own."""
    transport = [
        f
        for f in nodes
        if f.failure_class == TRANSPORT_CLASS and f.severity == "error" and f.role == "cause"
    ]
    for t in transport:
        for e in nodes:
            if e is t or e.failure_class not in TRANSPORT_AFTERMATH:
                continue
            if ctx.kind(e) in ("hardware", "terminal") or before(t, e) is not True:
                continue
            yield Edge(
                t,
                e,
                "transport_explains_cuda_faults",
                "a failed network transfer aborts NCCL's kernels, which surface as CUDA errors",
            )


def child_crash_breaks_pool(ctx: Context, nodes: list[Finding]) -> Iterable[Edge]:
    """A pool child's native crash (class segfault, given its parent's rank by
    rootrank.analysis.pool_crash) explains the BrokenProcessPool that parent raised after it:
    the exception only reports that a child of its pool died."""
    from rootrank.analysis.pool_crash import CRASH_CLASS, _broken_pool

    crashes = [c for c in nodes if c.failure_class == CRASH_CLASS and c.rank is not None]
    for e in nodes:
        if not _broken_pool(e):
            continue
        for c in crashes:
            if c.rank == e.rank and c.order < e.order:
                yield Edge(
                    c,
                    e,
                    "child_crash_breaks_pool",
                    "a child of this process's pool crashed, and the pool reports it broken",
                )


#: The rules, in the order the report lists their edges.
RULES: tuple[Rule, ...] = (
    onset_explains_what_follows,
    one_fault_one_explanation,
    final_exception_ends_the_chain,
    hardware_explains_gpu_faults,
    transport_explains_cuda_faults,
    declared_explanations,
    child_crash_breaks_pool,
    launcher_kills_the_rest,
    terminal_after_fault,
    restart_after_failure,
    retry_after_fault,
    barrier_counted_a_restart,
    cause_explains_symptoms,
)
