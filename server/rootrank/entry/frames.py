"""The user's own location: where the root cause's traceback leaves the user's code, and,
for collectives, where each rank called in.

Facts come from the scan: :attr:`rootrank.scan.ScanState.exceptions` (every traceback the
log shows, with its rank) and the root finding's own ``frames``. A frame is the user's when
:func:`rootrank.tracebacks.is_user_frame` says so (not site-packages, the standard library,
torch, or a launcher's console script). Lines are 1-based, as the traceback prints them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rootrank import lazy_regex
from rootrank.model import CallSite, Finding, UserFrame
from rootrank.ranklines import LineOwner, own_lines
from rootrank.scan import ScanState, SeenException
from rootrank.tracebacks import Frame, collective_call

#: Failure classes whose tracebacks are waits in a collective (call sites are compared).
#: The classes whose ranks' differing call sites are the fault itself (a rank that took
#: another branch, issued another collective or waited elsewhere). Not
#: ``divergent-model-across-ranks``: when the ranks built different models, each stops where
#: the difference trips it (the odd rank in DDP's parameter-shape check, a peer in the module
#: sync or a gradient bucket's all-reduce after it left), so their sites differ as a
#: consequence and "reach the same collectives" would be the wrong fix.
COLLECTIVE_CLASSES = frozenset(
    {
        "collective-desync",
        "collective-shape-mismatch",
        "collective-timeout",
    }
)
#: How far (lines) an exception line may sit from the root cause's evidence line and still
#: be its traceback: a message printed over several lines, or a WARN line just before it.
NEAR_BEFORE = 30
NEAR_AFTER = 60


def _is_launcher(seen: SeenException) -> bool:
    """torchelastic's own ChildFailedError / mp.spawn's re-raise in the parent: a report of
    a worker's failure, not the failure."""
    name = seen.exc.type.rsplit(".", 1)[-1]
    return name in ("ChildFailedError", "ProcessRaisedException", "ProcessExitedException")


# A worker's error file in torchrun's log dir: "<log dir>/<run id>/attempt_<n>/<local rank>/error.json".
_ERROR_FILE = lazy_regex.compile(r"^(?P<dir>.+[/\\]attempt_\d+[/\\])\d+[/\\]error\.json$")


def rank_output_file(state: ScanState, rank: int | None) -> str | None:
    """Where torchrun wrote ``rank``'s own stderr, when the log shows its log dir: an entry of
    torchelastic's failure table names a worker's ``error_file`` inside the ``--log-dir``
    tree (``/tmp/logs/none_ab12/attempt_0/3/error.json``), and the table gives ``rank``'s
    local rank on the same host; the file is ``<that attempt's folder>/<local rank>/stderr.log``
    (torch/distributed/elastic/multiprocessing/api.py writes ``stdout.log``/``stderr.log``
    there for ``--redirects``/``--tee``). ``None`` otherwise."""
    if rank is None:
        return None
    mine = [e for e in state.elastic if e.rank == rank and e.local_rank is not None]
    if not mine:
        return None
    local, host = mine[-1].local_rank, mine[-1].host
    for e in state.elastic:
        if e.error_file is None or (host and e.host and e.host != host):
            continue
        m = _ERROR_FILE.match(e.error_file)
        if m is not None:
            sep = "\\" if "\\" in e.error_file and "/" not in e.error_file else "/"
            return f"{m.group('dir')}{local}{sep}stderr.log"
    return None


#: torchrun's ``--log-dir`` option on a printed launch command (``--log-dir logs``,
#: ``--log_dir=/scratch/run``; torch/distributed/run.py accepts both spellings), its value in
#: ``dir``; quoted values are read without their quotes.
_LOG_DIR_OPTION = lazy_regex.compile(
    r"(?:^|\s)--log[-_]dir(?:=|\s+)(?P<q>[\"']?)(?P<dir>[^\s\"']+)(?P=q)(?=\s|$)"
)
#: The training script on a launch command (a ``.py`` path standing alone).
_SCRIPT = lazy_regex.compile(r"(?<=\s)[^\s=]+\.py(?=\s|$)")


def command_log_dir(command: str) -> str | None:
    """The folder the launch ``command`` (as the log prints it) passes to torchrun's
    ``--log-dir``: torchrun writes each worker's ``stdout.log``/``stderr.log`` under
    ``<dir>/<run id>/attempt_<n>/<local rank>/`` (torch/distributed/elastic/multiprocessing/api.py),
    so with ``--redirects`` the ranks' own output is there, not on the terminal. ``None``
    when the command has no such option or is not a torchrun command."""
    at = max(command.find("torchrun"), command.find("torch.distributed.run"))
    if at < 0:
        return None
    # torchrun's own options come before the training script; what follows is the script's
    script = _SCRIPT.search(command, at + len("torchrun"))
    m = _LOG_DIR_OPTION.search(command[: script.start()] if script else command)
    if m is None:
        return None
    return m.group("dir").rstrip("/\\") or None


def launcher_report(state: ScanState, root: Finding) -> bool:
    """Whether the root's own line is the exception line of a launcher's re-raise
    (:func:`_is_launcher`: mp.spawn's ``ProcessExitedException: process 1 terminated with
    signal SIGKILL`` in the parent): its traceback's frames are the launching process's
    (``mp.spawn(...)`` in ``<module>``), not the failed worker's code."""
    lines = {(e.path, e.line) for e in root.evidence[:1]}
    return any((s.path, s.exc.log_line) in lines and _is_launcher(s) for s in state.exceptions)


def root_exception(state: ScanState, root: Finding, rank: int | None) -> SeenException | None:
    """The exception (traceback) that belongs to the root cause, or ``None``.

    With a known ``rank``: that rank's exception at (or near) the root cause's evidence line,
    else that rank's first exception that shows the user's code; a traceback printed with no
    rank whose exception line is the root cause's own evidence line counts as that rank's
    (the log's tracebacks carry no rank prefix, the launcher's summary named the rank). With no rank: an
    exception with no rank at or near the evidence line (or a C++ abort's ``what()`` line
    right under it, whatever rank its text names). Launcher re-raises
    (``ChildFailedError``) never count, and another rank's traceback is never taken (a
    victim's stack is not the cause's)."""
    pool = [s for s in state.exceptions if not s.exc.ignored and not _is_launcher(s)]
    if rank is not None:
        lines = {(e.path, e.line) for e in root.evidence}
        pool = [
            s
            for s in pool
            if s.rank == rank
            # a traceback printed with no rank prefix whose exception line is the root cause's
            # own evidence line (the rank came from elsewhere: torchrun's summary) is its own
            or (s.rank is None and (s.path, s.exc.log_line) in lines)
        ]
    else:
        # a C++ abort's ``what():`` line right under the evidence's "terminate called..." is
        # the same failure's message, whatever rank its text names
        after = {(e.path, e.line + 1) for e in root.evidence}
        pool = [
            s
            for s in pool
            if s.rank is None or (s.exc.header == "terminate" and (s.path, s.exc.log_line) in after)
        ]
    if not pool:
        return None
    lines = {(e.path, e.line) for e in root.evidence}
    rank_of = {(e.path, e.line): i for i, e in reversed(list(enumerate(root.evidence)))}
    # in the evidence's order: its first line is the root's own (the analysis may put a
    # user's re-raise before its library cause: rootrank.analysis.prepare.user_statement_first)
    ordered = sorted(
        (s for s in pool if (s.path, s.exc.log_line) in lines),
        key=lambda s: rank_of[(s.path, s.exc.log_line)],
    )
    if root.evidence:
        ev = root.evidence[0]
        near = [
            s
            for s in pool
            if s.path == ev.path
            and ev.line - NEAR_BEFORE <= s.exc.log_line <= ev.line + NEAR_AFTER
            and s not in ordered
        ]
        ordered += sorted(near, key=lambda s: abs(s.exc.log_line - ev.line))
    if ordered and rank is None and not any((s.path, s.exc.log_line) in lines for s in ordered):
        # only nearby rankless stacks: when the log's rankless stacks (cut ones too) stop at
        # different user lines, which one is the cause's is not known
        stops = {
            (f.file, f.line)
            for x in [*state.exceptions, *state.cut_tracebacks]
            if x.rank is None and not x.exc.ignored and not _is_launcher(x)
            for f in [x.exc.user_frame]
            if f is not None
        }
        if len(stops) > 1:
            return None
    if ordered:
        # the first that shows the user's code (the main process's traceback printed beside
        # a worker's), else the closest
        return next((s for s in ordered if s.exc.user_frame is not None), ordered[0])
    if rank is not None:
        with_user = [s for s in pool if s.exc.user_frame is not None]
        if with_user:
            return with_user[0]
    return None


#: How many lines after ``Fatal Python error: ...`` faulthandler's ``Current thread`` header
#: comes (faulthandler.c ``faulthandler_fatal_error``: the error line, an empty line, then
#: the crashing thread's stack), with room for one stray line of another process.
CRASH_STACK_GAP = 3


def crash_stack(state: ScanState, root: Finding) -> SeenException | None:
    """faulthandler's stack of the thread that crashed, when one of the root cause's evidence
    lines is faulthandler's ``Fatal Python error: Segmentation fault`` (or ``Aborted``...):
    faulthandler writes that line and, right under it, the crashing thread's stack
    (``Current thread 0x... (most recent call first):``) from the same process, so that
    stack is the crash's whatever other tracebacks the log holds (the victims' of another
    process stop elsewhere). Kept by the scan in ``ScanState.cut_tracebacks`` (header
    ``"faulthandler"``, ``log_line`` its ``Current thread`` line); ``None`` otherwise."""
    for ev in root.evidence:
        if "Fatal Python error" not in ev.text:
            continue
        for s in state.cut_tracebacks:
            if (
                s.exc.header == "faulthandler"
                and s.path == ev.path
                and ev.line < s.exc.log_line <= ev.line + CRASH_STACK_GAP
                and (s.rank is None or root.rank is None or s.rank == root.rank)
            ):
                return s
    return None


def odd_watchdog_stack(state: ScanState, root: Finding) -> SeenException | None:
    """The one process's faulthandler stack that stops elsewhere than every other's, when
    the root cause is faulthandler's watchdog (an evidence line ``Timeout (H:MM:SS)!``:
    ``faulthandler.dump_traceback_later``), the log holds at least three such stacks with a
    frame of the user's code, and they stop at exactly two places (the innermost user frame's
    file and line), one of them a single stack's; ``None`` otherwise.

    Mechanism: every rank arms the same watchdog around the same loop, so when one rank stalls
    (a read that never returns, a branch only it takes) the others wait for it in the next
    collective, and every watchdog fires: the waiting ranks' stacks all end at the one call
    site of that collective, the stalled rank's in its own code. That rank started the hang;
    its innermost user frame is where. Two stacks alone, or stacks at three places or more,
    do not tell which one is odd."""
    if not any("Timeout (" in ev.text for ev in root.evidence):
        return None
    groups: dict[tuple[str, int], list[SeenException]] = {}
    for seen in state.cut_tracebacks:
        frame = seen.exc.user_frame if seen.exc.header == "faulthandler" else None
        if frame is None or frame.line <= 0:
            continue
        groups.setdefault((frame.file, frame.line), []).append(seen)
    if len(groups) != 2 or sum(len(g) for g in groups.values()) < 3:
        return None
    small, large = sorted(groups.values(), key=len)
    if len(small) != 1 or len(large) < 2:
        return None
    return small[0]


def stalled_lines(
    state: ScanState, root: Finding, masker: Any | None = None
) -> tuple[str, str] | None:
    """``(stalled, waited)``: ``file:line (in func)`` (the file's base name, masked with
    ``masker``) of the odd watchdog stack's innermost user frame (:func:`odd_watchdog_stack`)
    and of the others'; ``None`` when no stack stands apart."""
    odd = odd_watchdog_stack(state, root)
    at = odd.exc.user_frame if odd is not None else None
    if odd is None or at is None:
        return None
    other = next(
        s.exc.user_frame
        for s in state.cut_tracebacks
        if s is not odd and s.exc.header == "faulthandler" and s.exc.user_frame is not None
    )
    assert other is not None

    def name(f: Frame) -> str:
        base = f.file.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{masker.text(base) if masker else base}:{f.line} (in {f.func})"

    return name(at), name(other)


def crash_user_line(state: ScanState, root: Finding, masker: Any | None = None) -> str | None:
    """``file:line (in func)`` (the file's base name, masked with ``masker`` when given) of
    the innermost frame of faulthandler's crash stack (:func:`crash_stack`) when that frame
    is the user's own code, else ``None``.

    Mechanism: faulthandler prints the Python frames of the thread the fatal signal hit,
    innermost first; native code has no Python frame, so when the innermost one is the
    user's, that user line was inside a native call when it crashed (a ctypes or cffi
    foreign function it called, a C extension's method, a torch operator), not inside a
    library's Python code."""
    crash = crash_stack(state, root)
    if crash is None or not crash.exc.frames:
        return None
    inner = crash.exc.frames[-1]
    if not inner.user or inner.line <= 0:
        return None
    name = inner.file.replace("\\", "/").rsplit("/", 1)[-1]
    name = masker.text(name) if masker else name
    return f"{name}:{inner.line} (in {inner.func})"


def _user_frame(file: str, line: int, func: str, masker: Any | None) -> UserFrame:
    # A function name has no spaces: a log that ran frame lines together leaves text after it.
    func = func.split(None, 1)[0] if func.strip() else ""
    return UserFrame(file=masker.text(file) if masker else file, line=line, func=func)


def user_frame(
    state: ScanState, root: Finding, rank: int | None, masker: Any | None = None
) -> UserFrame | None:
    """The innermost frame in the user's code of the
    root cause's traceback (the finding's own frames first, else :func:`root_exception`);
    ``None`` when the log shows none. A frame the exception's message names as the user's
    line it failed in (:attr:`rootrank.tracebacks.PyException.traced_frame`: dynamo's "from
    user code:") comes before the traceback's. ``file`` is masked with ``masker`` when
    given."""
    crash = crash_stack(state, root)
    at = crash.exc.user_frame if crash is not None else None
    if at is not None and at.line > 0:
        return _user_frame(at.file, at.line, at.func, masker)
    odd = odd_watchdog_stack(state, root)
    at = odd.exc.user_frame if odd is not None else None
    if odd is not None and at is not None and (rank is None or odd.rank in (None, rank)):
        # the watchdog's stack that stopped elsewhere than the others': the stalled process's
        return _user_frame(at.file, at.line, at.func, masker)
    seen = root_exception(state, root, rank)
    traced = seen.exc.traced_frame if seen is not None else None
    if traced is not None:
        # the compiler named the user's line it could not trace (dynamo's "from user
        # code:"): deeper than the traceback, which ends in the compiled call
        return _user_frame(traced.file, traced.line, traced.func, masker)
    if (rank is None or root.rank == rank) and not launcher_report(state, root):
        # the finding's own traceback is the rank's (unless a launcher's parent process
        # printed it: mp.spawn's ProcessExitedException, whose frames are the parent's)
        for f in reversed(root.frames):
            if f.get("user") and int(f.get("line") or 0) > 0:
                own = Frame(str(f["file"]), int(f["line"]), str(f.get("func") or ""), True)
                own = deeper_copy(state, root, rank, own)
                return _user_frame(own.file, own.line, own.func, masker)
    seen = root_exception(state, root, rank)
    frame = seen.exc.user_frame if seen is not None else None
    if seen is not None and frame is None:
        # "The above exception was the direct cause of the following exception:": the
        # library's exception is the cause, the user's frames are in the links that follow.
        chain = list(state.exceptions)
        for later in chain[chain.index(seen) + 1 :]:
            if later.path != seen.path or later.rank != seen.rank or later.exc.chained is None:
                break
            if later.exc.user_frame is not None:
                frame = later.exc.user_frame
                break
    if seen is None and rank is not None:
        # the rank's own traceback the log cuts before its exception line (a torchelastic
        # summary quoting the rank's error file, pasted in pieces): its frames are the
        # failing rank's, when it is the only one of that rank
        cut = [s for s in state.cut_tracebacks if s.rank == rank and s.exc.user_frame]
        if len(cut) == 1:
            frame = cut[0].exc.user_frame
    if seen is None and frame is None:
        frame = _unranked_frame(state, rank)
    if frame is None or frame.line <= 0:
        return None
    frame = deeper_copy(state, root, rank, frame)
    return _user_frame(frame.file, frame.line, frame.func, masker)


#: How many characters of an exception's message identify the same failure in another
#: process's copy of its traceback (a message may end in a per-rank value).
SAME_MESSAGE_CHARS = 60


def deeper_copy(state: ScanState, root: Finding, rank: int | None, frame: Frame) -> Frame:
    """``frame`` (the user frame found for the root cause), or a deeper user frame of the
    same failure when another copy of its traceback shows one.

    Mechanism: the processes of a launch often raise the same exception at once and their
    tracebacks interleave line by line in one log, so the copy the root cause's line belongs
    to may keep only its outer frames (``main()`` in ``<module>``) while another copy, of
    the same exception (type and the first :data:`SAME_MESSAGE_CHARS` characters of its
    message, as one of the root's evidence lines shows it) and of the same rank (or printed
    with none), holds ``frame`` and the user frames below it (``main`` at the line that
    called the library), or, for a ``<module>`` frame, a function's frame of the same file
    (the copy lost its outer lines instead). The innermost of those is where the user's
    code led to the failure. Returns ``frame`` unchanged when no copy goes deeper; never another exception's
    frames (a victim's stack is another message)."""
    texts = [e.text for e in root.evidence]
    best: Frame = frame
    best_depth = 0
    for seen in state.exceptions:
        exc = seen.exc
        if (
            exc.ignored
            or _is_launcher(seen)
            or (rank is not None and seen.rank not in (None, rank))
        ):
            continue
        head = exc.message[:SAME_MESSAGE_CHARS].strip()
        if not head or not any(head in t and exc.type.rsplit(".", 1)[-1] in t for t in texts):
            continue
        user = [f for f in exc.frames if f.user and f.line > 0]
        at = [i for i, f in enumerate(user) if (f.file, f.line) == (frame.file, frame.line)]
        if not at and frame.func == "<module>":
            # the copy lost its outer lines instead: below a script's top level, any frame
            # of the same file in a function is deeper on the same path
            at = [
                i - 1 for i, f in enumerate(user) if f.file == frame.file and f.func != "<module>"
            ]
        if not at:
            continue
        depth = len(user) - 1 - at[0]
        inner = user[-1]
        if depth > best_depth and (inner.file, inner.line) != (frame.file, frame.line):
            best, best_depth = inner, depth
    return best


def _unranked_frame(state: ScanState, rank: int | None) -> Frame | None:
    """The user frame of the log's tracebacks when none is tied to ``rank`` and the log
    cannot tie one: every traceback (complete, or one the log cuts before its exception
    line, :attr:`rootrank.scan.ScanState.cut_tracebacks`) is printed without a rank, and
    all that show the user's code stop at the same file and line (the processes of an
    unprefixed log print the same stack), and, for a known ``rank``, the log shows only
    one; ``None`` otherwise (several stacks may be the victims' of the rank named, and a
    victim's stack is not the cause's)."""
    pool = [
        s
        for s in [*state.exceptions, *state.cut_tracebacks]
        if not s.exc.ignored and not _is_launcher(s)
    ]
    if not pool or any(s.rank is not None for s in pool):
        return None
    if rank is not None and len(pool) > 1:
        return None  # several unranked stacks for a known rank: they may be its victims'

    frames = [s.exc.user_frame for s in pool if s.exc.user_frame is not None]
    if not frames or len({(f.file, f.line) for f in frames}) != 1:
        return None
    return frames[0]


def call_sites(state: ScanState, root: Finding, masker: Any | None = None) -> list[CallSite]:
    """For a collective failure: each rank's call site (the innermost user frame of the rank's first traceback, and the
    collective it waited in), sorted by rank, when at least two ranks show one and they
    differ (another line, or another collective); else ``[]``."""
    if root.signature in OWN_CHECK_SIGNATURES:
        return []
    sites = _rank_sites(state, root, masker)
    if len({(s.file, s.line, s.collective) for s in sites}) < 2:
        return []
    if all(s.collective in P2P_CALLS for s in sites):
        # a pipeline's senders and receivers wait at their own lines by design: which peer
        # each names is what differs (rootrank.analysis.initiator.unpaired_p2p_peer)
        return []
    return sites


#: Point-to-point calls: a send and a recv at two lines are one exchange, not a divergence.
P2P_CALLS = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})


#: Signatures of a collective's check of the raising rank's own arguments before any data
#: moves (gloo's and ProcessGroupGloo's size and list-size checks): the rank that raised is
#: the cause, and the peers' call sites are only where they waited when it left ("Connection
#: closed by peer"), such as the source and the non-source branch of one scatter; comparing
#: them would read a branch by design as a divergence.
OWN_CHECK_SIGNATURES = frozenset({"gloo-local-size-check"})


def waiting_step(
    state: ScanState,
    root: Finding,
    rank: int | None,
    masker: Any | None = None,
    quote: bool = True,
) -> str | None:
    """For a collective failure whose initiating ``rank`` printed no traceback of its own (it
    left, hung in its own code, or was killed; not one whose launcher reports an abort, exit
    -6: that rank died inside a collective's native code), the fix's opening words naming the one call
    site where every other rank's traceback stopped (two ranks at least, one line, one
    collective): ``train.py:35: ranks 0 and 1 stopped in all_reduce here; rank 2 never
    reached this line ...``; ``None`` otherwise. Mechanism: every rank runs the same loop, so
    the others waited for ``rank`` at the collective it never reached, and that line is where
    the user's loop lost it: the place to look for the branch, return or stall before it.
    With ``quote``, what ``rank`` said last is quoted (:func:`_own_words`); the caller turns
    it off when the fix's variant quotes that line itself."""
    if rank is None or any(seen.rank == rank and not seen.exc.ignored for seen in state.exceptions):
        return None
    if any(e.rank == rank and e.exitcode in (-6, 134) for e in state.elastic):
        # it printed no traceback because it aborted in native code (a gloo enforce, a C++
        # terminate, the NCCL watchdog): it was inside a collective, not short of this line
        return None
    sites = [s for s in _rank_sites(state, root, masker) if s.rank != rank]
    if len(sites) < 2 or len({(s.file, s.line, s.collective) for s in sites}) != 1:
        return None
    site = sites[0]
    stopped = f"stopped in {site.collective} here" if site.collective else "stopped here"
    said = _own_words(state, rank) if quote else []
    if said:
        quoted = " and ".join(f"`{masker.text(t) if masker else t}` (line {n})" for n, t in said)
        look = f"look at what rank {rank} did before it: it said last {quoted}."
    else:
        look = f"look at what rank {rank} did before it."
    return (
        f"{short(site.file)}:{site.line}: {_ranks([s.rank for s in sites])} {stopped}; "
        f"rank {rank} never reached this line (it printed no traceback): {look}"
    )


#: A line a rank printed of itself that reports a problem in its own words (no traceback:
#: a logged error, a child process's message, a skipped record).
_OWN_PROBLEM = lazy_regex.compile(
    r"(?i)\b(?:error|errors|failed|failure|malformed|invalid|cannot|unable|corrupt(?:ed)?"
    r"|missing|skipp(?:ed|ing)|refused|denied|timed out)\b"
)
#: The longest own line quoted (characters).
OWN_LINE_CHARS = 200


def _own_words(state: ScanState, rank: int) -> list[tuple[int, str]]:
    """What ``rank`` printed last in the kept tails of the log (``ScanState.tails``, read by
    :func:`rootrank.ranklines.own_lines`), in log order: its last line problem-worded
    (:data:`_OWN_PROBLEM`) and its very last line, ``(1-based line, text without the rank's
    prefix)``, at most two; ``[]`` when no tail line is the rank's. A launcher's local-rank
    prefix counts as the rank on a log that proves a single node
    (:func:`rootrank.analysis.prepare.single_node_proof`). Mechanism: a rank that stopped
    short of a collective the others reached printed no traceback; the last thing it said (a
    logged error, the phase it began) is where its own code went another way."""
    last: tuple[int, str] | None = None
    problem: tuple[int, str] | None = None
    for own in own_lines(state.tails, rank, lambda path: _words_owner(state, path)):
        line = (own.line, own.text[:OWN_LINE_CHARS])
        last = line
        if _OWN_PROBLEM.search(own.text):
            problem = line
    said = [x for x in (problem, last) if x is not None]
    return sorted(set(said))


def last_words(state: ScanState, rank: int, path: str, before: int) -> list[tuple[int, str]]:
    """What ``rank`` said last before the root cause, for the fix's variants: as
    :func:`_own_words` (its last problem-worded line and its very last line, ``(1-based line,
    text)``, at most two), from any kept tail, read through each file's own rank tags (a
    launcher's ``[defaultN]:`` prefix on a single node, a per-rank log file of
    ``--redirects``/``--log-dir``), which a line that names the rank in its text
    (rootrank.entry.hang_capture.rank_own_lines) does not need; in ``path`` (the root's
    file) only the lines before line ``before`` (the root's own message and what follows are
    not what the rank said before it). Raises nothing."""
    last: tuple[int, str] | None = None
    problem: tuple[int, str] | None = None
    for own in own_lines(state.tails, rank, lambda src: _words_owner(state, src)):
        if own.path == path and own.line >= before:
            continue
        line = (own.line, own.text[:OWN_LINE_CHARS])
        last = line
        if _OWN_PROBLEM.search(own.text):
            problem = line
    return sorted({x for x in (problem, last) if x is not None})


def _words_owner(state: ScanState, path: str) -> LineOwner:
    """The :data:`rootrank.ranklines.LineOwner` of :func:`_own_words` for a kept tail of
    ``path``: a :class:`rootrank.ranks.RankTagger` of its own (the path's rank, when the file
    is one rank's) gives each line's rank, or its local rank on a log that proves a single
    node; blank lines, lines over ``4 * OWN_LINE_CHARS`` characters, a launcher's summary or
    spawn error block quoting the rank, and a traceback's lines are no one's."""
    from rootrank.analysis.prepare import single_node_proof  # the analysis imports this package
    from rootrank.ranks import RankTagger, rank_from_path

    path_rank, is_local = rank_from_path(path)
    tagger = RankTagger(path=path, path_rank=path_rank, path_rank_is_local=is_local)

    def owner(raw: str, number: int) -> tuple[int | None, str] | None:
        if not raw.strip() or len(raw) > 4 * OWN_LINE_CHARS:
            return None
        tagged = tagger.tag(raw, number)
        if tagger.following():
            return None  # a launcher's summary or a spawn error block quoting the rank
        who = tagged.rank
        if who is None and tagged.local_rank is not None:
            if single_node_proof(state, tagged.local_rank):
                who = tagged.local_rank
        body = tagged.text.strip()
        if not body or body.startswith(("File ", "Traceback")):
            return None
        return who, body

    return owner


def _rank_sites(state: ScanState, root: Finding, masker: Any | None) -> list[CallSite]:
    """Each rank's call site for a collective failure (the innermost user frame of its
    first traceback and the collective it waited in), sorted by rank; ``[]`` for another
    class or fewer than two ranks. A line whose collective one rank's traceback names and
    another's does not is one site."""
    if root.failure_class not in COLLECTIVE_CLASSES:
        return []
    sites: dict[int, CallSite] = {}
    for seen in state.exceptions:
        if seen.rank is None or seen.rank in sites or seen.exc.ignored or _is_launcher(seen):
            continue
        frame = seen.exc.user_frame
        if frame is None or frame.line <= 0:
            continue
        site = _user_frame(frame.file, frame.line, frame.func, masker)
        sites[seen.rank] = CallSite(
            rank=seen.rank,
            file=site.file,
            line=site.line,
            func=site.func,
            collective=collective_call(seen.exc.frames),
        )
    if len(sites) < 2:
        return []
    # one line whose collective one rank's traceback names and another's does not (cut
    # before torch's frames, or waiting in the work object) is one call site, not two
    named: dict[tuple[str, int], set[str]] = {}
    for s in sites.values():
        if s.collective:
            named.setdefault((s.file, s.line), set()).add(s.collective)
    for r, s in sites.items():
        ops = named.get((s.file, s.line), set())
        if s.collective is None and len(ops) == 1:
            sites[r] = dataclasses.replace(s, collective=next(iter(ops)))
    return [sites[r] for r in sorted(sites)]


def short(path: str) -> str:
    """A path as a fix sentence shows it: relative paths as printed, absolute ones by their
    file name (the JSON keeps the whole path)."""
    p = path.replace("\\", "/")
    return (
        p.rsplit("/", 1)[-1] if p.startswith(("/", "~")) or (len(p) > 2 and p[1] == ":") else path
    )


def _ranks(ranks: list[int | None]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


def _same_op(groups: dict[tuple[str, int, str | None], list[int | None]], world: int | None) -> str:
    """The sentence a desync of one collective at two or more lines of one file adds: every
    site calls the same op (``all_reduce`` at :30 and :31), so the ranks at the earliest line
    did not get past a call the others completed. When both lines run on every rank, no branch
    separates them: that call's group is what differs, a peer of it never arrived (a rank with
    no call site in the log, named when ``world`` is known) or the ranks built the group
    differently (``dist.new_group`` is itself a collective over the whole world: every rank
    must call it in the same order with the same ranks). Only when fewer ranks stopped at the
    earliest line than passed it: a minority ahead of the rest skipped a call instead (a
    branch). ``""`` otherwise."""
    ops = {k[2] for k in groups}
    files = {k[0] for k in groups}
    if len(ops) != 1 or None in ops or len(files) != 1 or len(groups) < 2:
        return ""
    op = next(iter(ops))
    first = min(groups, key=lambda k: k[1])
    if 2 * len(groups[first]) >= sum(len(rs) for rs in groups.values()):
        # most ranks are at the earliest line and a few ahead: those few skipped a call
        # (a branch), the order sentence already says it
        return ""
    stuck = _ranks(groups[first])
    seen = {r for rs in groups.values() for r in rs if r is not None}
    silent: list[int | None] = [r for r in range(world) if r not in seen] if world else []
    peer = (
        f"{_ranks(silent)} (no call site in the log: {'it' if len(silent) == 1 else 'they'}"
        " never reached these lines)"
        if silent and world and len(silent) < world
        else "a peer of that call"
    )
    return (
        f" Every site calls {op}: if these lines run on every rank (no branch between them),"
        f" {stuck} did not get past line {first[1]} while the others did, so that call's group"
        f" differs, not the order: {peer} did not join it, or the ranks built the group"
        " differently (dist.new_group must be called by every rank, in the same order, with"
        " the same ranks list; a list read per rank or built from a set or a file differs)."
    )


def location_step(
    frame: UserFrame | None,
    sites: list[CallSite],
    rank: int | None,
    action: str | None,
    world: int | None = None,
    who: str | None = None,
) -> str | None:
    """Where the fix applies when the log shows the user's code: a first step of its own
    when the ranks called collectives from different lines (``train.py:57: rank 2 calls
    broadcast here while ranks 0 and 1 call all_reduce at train.py:44``), else a prefix for
    the first step naming where the initiating rank's traceback leaves the user's code
    (``model.py:97 (in forward), where rank 5 raised OutOfMemoryError:``; ``action`` is what
    the rank did there; ``who`` replaces "rank N" when the traceback is not the initiating
    rank's own: the ranks that waited for it); ``None`` when neither is known. ``world``: the
    job's world size, when known (names ranks with no call site: :func:`_same_op`)."""
    if sites:
        groups: dict[tuple[str, int, str | None], list[int | None]] = {}
        for s in sites:
            groups.setdefault((s.file, s.line, s.collective), []).append(s.rank)

        def what(key: tuple[str, int, str | None]) -> str:
            return (
                f"call{'s' if len(groups[key]) == 1 else ''} {key[2]}"
                if key[2]
                else "wait" + ("s" if len(groups[key]) == 1 else "")
            )

        mine = next((k for k, rs in groups.items() if rank in rs), None)
        if mine is not None:
            others = [k for k in groups if k != mine]
            rest = "; ".join(
                f"{_ranks(groups[k])} {what(k)} at {short(k[0])}:{k[1]}" for k in others
            )
            return (
                f"{short(mine[0])}:{mine[1]}: {_ranks(groups[mine])} {what(mine)} here while {rest}: "
                "make every rank reach the same collectives in the same order from these lines."
                + _same_op(groups, world)
            )
        listed = "; ".join(
            f"{_ranks(rs)} {what(k)} at {short(k[0])}:{k[1]}" for k, rs in groups.items()
        )
        return f"The ranks stopped at different call sites: {listed}: make every rank reach the same collectives in the same order."
    if frame is None:
        return None
    if who is None:
        who = f"rank {rank}" if rank is not None else "the failing process"
    if _KERNEL_CELL.search(frame.file):
        # ipykernel compiles each cell to <tmp>/ipykernel_<pid>/<hash>.py: a name the user
        # never sees; the cell is found by the function it defines
        holder = f"the notebook cell that defines {frame.func}" if frame.func else "a notebook cell"
        return (
            f"{holder} (line {frame.line} of the cell; the kernel ran it as {short(frame.file)}), "
            f"where {who} {action or 'failed'}:"
        )
    func = f" (in {frame.func})" if frame.func else ""
    return f"{short(frame.file)}:{frame.line}{func}, where {who} {action or 'failed'}:"


def setting_step(setting: tuple[str, str], config: str | None) -> str:
    """The fix's opening words when the cause is a configuration value, not a line of code
    (``setting``: the key and its value as the log printed it, e.g. DeepSpeed's
    ``reduce_bucket_size`` that sized the failed allocation): the key in ``config``, the
    config file the launch passed (:func:`rootrank.entry.commands.config_file`), or the key
    by name when the log shows no file."""
    name, value = setting
    if config:
        return f'{config}, key "{name}" (the log prints {value}):'
    return f'the DeepSpeed config\'s "{name}" (the log prints {value}):'


#: A Jupyter cell's code as ipykernel compiles it (ipykernel/compiler.py, get_file_name: the
#: kernel's temporary directory ``ipykernel_<pid>`` and a hash of the cell's code).
_KERNEL_CELL = lazy_regex.compile(r"(?:^|[\\/])ipykernel_\d+[\\/]\d+\.py$")
#: The file names IPython's own traceback gives a cell (rootrank.tracebacks._ipython_frame):
#: ``Cell In[7]`` (IPython 8), ``Input In [7]``, ``<ipython-input-7-...>`` (older).
_IPYTHON_CELL = lazy_regex.compile(r"^(?:Cell In ?\[|Input In ?\[|<ipython-input-)")


def notebook_cell(file: str) -> bool:
    """Whether ``file`` (a traceback frame's file) is a Jupyter notebook cell: ipykernel's
    compiled cell (:data:`_KERNEL_CELL`) or IPython's name for one (:data:`_IPYTHON_CELL`)."""
    return bool(_KERNEL_CELL.search(file) or _IPYTHON_CELL.match(file))


#: ``NAME=value`` settings in front of a verification command.
_ENV_SET = lazy_regex.compile(r"(?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>\S+)\s+")
#: A verification command that reruns the job's script (its launcher, then the script).
_RERUN = lazy_regex.compile(
    r"(?:python3?|torchrun|accelerate launch|deepspeed|srun|mpirun|horovodrun|composer)\b"
    r"[^#]*?(?:<[^<>]*\.py>|\S+\.py(?!\w))"
)


#: How a verification that is no shell command starts (:func:`notebook_verify`): an editor
#: offers to copy it, not to run it in a terminal.
IN_NOTEBOOK = "in the notebook:"


def notebook_verify(verify: str, launcher_call: str | None) -> str:
    """``verify`` for a job that ran from a notebook cell: a command that reruns the job's
    script (``[ENV=v ...] python <train.py> ...``) has no script to run, so it becomes the
    notebook's way: the settings as ``os.environ[...]`` in a cell run before the job starts,
    then the cell that starts it run again (``launcher_call``: the launching function the
    traceback quotes, ``notebook_launcher``). A variable such as ``PYTORCH_CUDA_ALLOC_CONF``
    is read when CUDA initialises, so it must be set before the launcher starts the
    processes, which inherit the kernel's environment. Other commands (``nvidia-smi``,
    ``python -c ...``) run from a terminal as they are and are returned unchanged."""
    head, sep, comment = verify.partition("  # ")
    env: list[tuple[str, str]] = []
    at = 0
    while (m := _ENV_SET.match(head, at)) is not None:
        env.append((m["name"], m["value"]))
        at = m.end()
    if not _RERUN.match(head, at) or " -c " in head[at:]:
        return verify
    what = (
        f"the cell that calls {launcher_call}" if launcher_call else "the cell that starts the job"
    )
    if env:
        sets = "; ".join(f'os.environ["{k}"] = "{v}"' for k, v in env)
        before = launcher_call or "the job starts"
        text = f"{IN_NOTEBOOK} import os; {sets} in a cell run before {before}, then rerun {what}"
    else:
        text = f"{IN_NOTEBOOK} restart the kernel and rerun {what}"
    return text + (sep + comment if sep else "")
