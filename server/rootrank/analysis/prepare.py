"""Step 1 of the analysis: from a finished scan to the findings the rules reason about.

:func:`prepare` runs the named steps of :mod:`rootrank.analysis.prepare_steps` in order
(applies ``min_count``, sets aside what the run survived, gives a global rank to findings
that only carry torchrun's ``local_rank`` where the log proves it, adds the findings of
``inferred`` signatures and of the readings below) and builds the :class:`Context` every
rule and strategy reads. The readings that need no module of their own live here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rootrank import lazy_regex, regex_code
from rootrank.analysis.asserted_setting import asserted_settings
from rootrank.analysis.compare import (
    MAX_SEQNUM_LAG,
    ROOTED_OPS,
    lone_submitter,
    odd_one_out,
    rank_ahead,
    split_groups,
    values_by_rank,
)
from rootrank.analysis.completed import Completed
from rootrank.analysis.events import Event, events_of, finding_kind
from rootrank.analysis.named_option import named_option
from rootrank.analysis.named_parameter import named_parameter
from rootrank.analysis.reasons import format_ranks, ranks_word, say
from rootrank.analysis.signal_exit import signal_exit_findings
from rootrank.analysis.survived import Survived
from rootrank.model import Evidence, Finding
from rootrank.ranks import ElasticFailure, node_count
from rootrank.scan import MAX_EVIDENCE, ScanState, SeenException
from rootrank.signatures import Library, Signature
from rootrank.tracebacks import Frame, PyException


@dataclass
class Context:
    """What every rule and strategy reads: the scan, the library and the findings.

    ``findings`` are in log order; ``failure_present`` is true when the log shows a
    failure at all (an error finding, an exception, a failed exit), so warnings count;
    ``local_why`` is the sentence that justified a local-to-global rank mapping;
    ``events`` is the scan as one ordered stream (:mod:`rootrank.analysis.events`);
    ``survived`` the exceptions their process went on training after
    (:mod:`rootrank.analysis.survived`): ``state`` and ``findings`` are seen without them;
    ``completed`` the run's end that showed every error before it survived
    (:mod:`rootrank.analysis.completed`; those are set aside too), or ``None``.
    """

    state: ScanState
    library: Library
    findings: list[Finding]
    failure_present: bool
    local_why: str = ""
    notes: list[str] = field(default_factory=list)
    survived: list[Survived] = field(default_factory=list)
    completed: Completed | None = None
    #: Non-finite losses the run went on past, set aside (survived_values).
    handled: list[Finding] = field(default_factory=list)

    @cached_property
    def events(self) -> tuple[Event, ...]:
        """The findings, exceptions, exits, signals, summaries, progress and attempts as one
        stream (:func:`~rootrank.analysis.events.events_of`), built on first use from the
        findings as they are then (:func:`prepare` forgets a stream built before its last
        findings were added)."""
        return events_of(self.state, self.findings, self.library)

    def kind(self, f: Finding) -> str:
        """The finding's kind from its signature (``cause``, ``symptom``, ``terminal``,
        ``hardware``); a finding made by the analysis itself keeps its role."""
        return finding_kind(self.library, f)

    def peer_report(self, f: Finding) -> bool:
        """Whether ``f`` only reports that a peer went away (``explained_by: [peer]``)."""
        sig = self.library.signatures.get(f.signature)
        return "peer" in (getattr(sig, "explained_by", ()) or ())

    def usable(self) -> list[Finding]:
        """Findings that count: errors, and warnings when the log shows a failure."""
        return [f for f in self.findings if f.severity == "error" or self.failure_present]

    def from_earlier_attempt(self, f: Finding) -> bool:
        """Whether ``f`` is a finding of an attempt before the last (the scan set it aside in
        ``ScanState.earlier_findings`` when the job restarted or was relaunched)."""
        return any(f is e for e in self.state.earlier_findings)

    def known_ranks(self) -> set[int]:
        """Every rank the log shows exists (printed, in summaries, or below the world size)."""
        st = self.state
        known = set(st.ranks_seen)
        known.update(e.rank for e in st.elastic if e.rank is not None and e.rank >= 0)
        if st.world_size:
            known.update(range(st.world_size))
        return known


#: A line of Python's warnings module (``<file>.py:<line>: <Category>Warning: <message>``,
#: warnings.formatwarning) whose message quotes an exception's repr (``... due to:
#: ImportError('peft>=0.17.0 is required ...')``): the code that printed it caught that
#: exception and warned instead of raising it.
_WARNED_EXCEPTION = lazy_regex.compile(
    r"\.py:\d+: (?:\w+\.)*\w*Warning: .*?\b\w+(?:Error|Exception)\(['\"]"
)


def caught_into_warning(f: Finding) -> bool:
    """Whether every evidence line of ``f`` is a warnings-module line quoting an exception's
    repr (:data:`_WARNED_EXCEPTION`: nvidia-modelopt's ``logging.py:115: UserWarning: Failed
    to import diffusers plugin due to: ImportError('peft>=0.17.0 is required for a normal
    functioning of this module, but found peft==0.13.2.'). You may ignore this warning if you
    do not need this plugin.``). The library caught the exception (an optional plugin's
    import) and the process went on: what the signature matched inside the quote is no
    failure of the run. A warning can end no process (under ``-W error`` Python raises the
    warning as an exception, and that traceback's own line is matched instead)."""
    return bool(f.evidence) and all(_WARNED_EXCEPTION.search(ev.text) for ev in f.evidence)


def prepare(state: ScanState, library: Library) -> Context:
    """Build the :class:`Context` for ``state``: the steps of
    :data:`rootrank.analysis.prepare_steps.STEPS` in order (from the scan's findings to the
    findings the rules reason about), then the :data:`~rootrank.analysis.prepare_steps.CONTEXT_STEPS`
    that read the whole context. ``state`` itself is not changed, except that mapped
    findings' evidence learns its global rank; the context's ``state`` is a view of it
    without the exceptions their process survived."""
    from rootrank.analysis.prepare_steps import CONTEXT_STEPS, STEPS, Draft  # they read our helpers

    draft = Draft(state, library)
    for _name, step in STEPS:
        step(draft)
    ctx = Context(
        draft.state,
        library,
        draft.findings,
        failure_shown(draft.state, draft.findings),
        draft.local_why,
        survived=draft.survived,
        completed=draft.completed,
        handled=draft.handled,
    )
    for _name, context_step in CONTEXT_STEPS:
        context_step(ctx)
    vars(ctx).pop("events", None)  # a stream read above lacks the findings just added
    return ctx


def failure_shown(state: ScanState, findings: list[Finding]) -> bool:
    """Whether the log shows a failure at all (``Context.failure_present``): an error finding
    in ``findings``, an exception or a cut traceback in ``state``, or a worker that exited
    with a code other than 0 in torchelastic's summary."""
    return (
        any(f.severity == "error" for f in findings)
        or bool(state.exceptions)
        or state.traceback_cut
        or any(e.exitcode not in (None, 0) for e in state.elastic)
    )


#: The signature an exception no signature reads becomes when the log names no other cause.
EXCEPTION_SIGNATURE = "user-code-exception"


#: The shortest exception message :func:`_message_read` compares: a shorter one ("1", "0")
#: could sit in any line.
MIN_READ_MESSAGE = 24


def _message_read(message: str, read_texts: list[str]) -> bool:
    """Whether the exception ``message`` is the text of a line a finding already read (its
    evidence): the same error printed by another rank, whose line is beyond the evidence a
    finding keeps (several ranks raising one collective's failure, their tracebacks
    interleaved), is that finding's, not a new exception of the user's code. Messages shorter
    than :data:`MIN_READ_MESSAGE` characters are never taken as read."""
    key = message.strip()
    return len(key) >= MIN_READ_MESSAGE and any(key in text for text in read_texts)


#: The signature of the rendezvous/master port being taken (EADDRINUSE).
PORT_IN_USE_SIGNATURE = "port-in-use"
#: A frame of the launcher's or the process group's own bind: the c10d store, a rendezvous,
#: torch.distributed itself (then the port is the master/rendezvous port).
_DIST_BIND_FRAME = lazy_regex.compile(r"torch/distributed/|/c10d|rendezvous|TCPStore|torch/csrc")
#: A frame of a server the program starts itself: the standard library's socketserver /
#: http.server, prometheus_client's exporter, a web framework's server.
_SERVICE_BIND_FRAME = lazy_regex.compile(
    r"(?:^|/)(?:socketserver|http/server|wsgiref/\w+|xmlrpc/server)\.py$|"
    r"/(?:prometheus_client|aiohttp|uvicorn|werkzeug|tornado|flask|grpc)/"
)


def own_service_bind(f: Finding) -> bool:
    """Whether ``f`` is a :data:`PORT_IN_USE_SIGNATURE` finding whose traceback shows the
    program binding a server of its own (a metrics exporter, an HTTP or gRPC endpoint: a
    user frame, then socketserver / http.server / prometheus_client frames) and no frame of
    torch.distributed's store or rendezvous: the port taken is that service's, not
    MASTER_PORT, and the launcher's port fix would fail the same way. Such a finding is
    dropped, and the exception it read becomes the process's own
    (:func:`exception_findings`: user-code-exception, whose ``service-port-in-use`` variant
    names the user's line; heldout r19d case 05: an exporter on 9400 + LOCAL_RANK bound at
    import, after the rendezvous had worked)."""
    if f.signature != PORT_IN_USE_SIGNATURE or not f.frames:
        return False
    files = [str(fr.get("file", "")) for fr in f.frames]
    if any(_DIST_BIND_FRAME.search(x) for x in files):
        return False
    return any(fr.get("user") for fr in f.frames) and any(
        _SERVICE_BIND_FRAME.search(x) for x in files
    )


#: An exception line as Python prints it (``OSError: [Errno 98] Address already in use``),
#: after any launcher prefix: the type (dotted) and the message.
_EXCEPTION_LINE = lazy_regex.compile(
    r"(?P<type>\b[A-Za-z_][\w.]{0,120}(?:Error|Exception|error)): (?P<message>.*)$"
)


def earlier_service_bind(f: Finding, state: ScanState, library: Library) -> Finding | None:
    """What becomes of an :func:`own_service_bind` finding ``f``: ``None`` (dropped; the
    exception it read becomes the process's own through :func:`exception_findings`) when it
    is of the last attempt; when it is of an attempt before a torchrun restart
    (``state.earlier_findings``, brought in by :func:`earlier_faults` because the last
    attempt's failure declares ``explained_by: [restart]``), a finding of
    :data:`EXCEPTION_SIGNATURE` on the same exception line, put in ``state.earlier_findings``
    in its place (the scan keeps no exceptions of an earlier attempt: the type and message are
    read from the finding's own line, its frames kept). :func:`exception_findings` makes no finding when a cause exists (the
    restarted attempt's connect failure), so dropped alone the attempt's own fault would be
    lost, and the restart's knock-on (gloo's full mesh refused by the addresses the failed
    attempt left behind: rootrank.analysis.rules.restart_after_failure) would be read as
    the cause. Heldout r24c case 01: an exporter's port taken on rank 0, the restart then
    refused on rank 1."""
    i = next((n for n, e in enumerate(state.earlier_findings) if e is f), None)
    sig = library.signatures.get(EXCEPTION_SIGNATURE)
    if i is None or sig is None or not f.evidence:
        return None
    m = _EXCEPTION_LINE.search(f.evidence[0].text)
    if m is None:
        return None
    own = finding_from(
        sig,
        f,
        {"exc_type": m["type"].rsplit(".", 1)[-1], "message": m["message"]},
        evidence=list(f.evidence),
    )
    own.frames = list(f.frames)
    state.earlier_findings[i] = own
    return own


def exception_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """When the findings hold no cause (only what the launcher, the scheduler or the peers
    reported: a failed child, srun's cancellation, a SIGTERM), each rank's first Python
    exception that no finding reads, with or without a ``Traceback`` header, becomes a
    finding of :data:`EXCEPTION_SIGNATURE`: the process ended on it by itself, and the
    launcher's report only followed (issue 8, kinds 1 and 10). Exceptions Python ignored
    and C++ aborts (``terminate called ...``: not a Python exception) are left out; the
    finding's ``exc_type``/``message`` captures fill the entry. Empty when a cause exists
    that may have ended a process, and when no error was found at all: an exception alone
    stays unclassified (the report shows it and exits 3, "a failure rootrank cannot name").

    Causes that only preceded the exception (on no rank, none of them on an exception's
    line: a warning the program printed and went on after, such as transformers'
    load-time advisory) do not hide it: the exceptions after the last of them, with a
    traceback, become findings too, and the analysis prefers the one that ended a process
    (rootrank.analysis.graph._prefer_what_ended_a_process)."""
    sig = library.signatures.get(EXCEPTION_SIGNATURE)
    errors = [f for f in findings if f.severity == "error"]
    if sig is None or not errors:
        return []
    causes = [f for f in errors if f.role == "cause"]
    after = 0  # only exceptions printed after this order count
    if causes:
        raised = {(s.path, s.exc.log_line) for s in state.exceptions}
        if any(
            f.rank is not None or any((e.path, e.line) in raised for e in f.evidence)
            for f in causes
        ):
            return []
        after = max(f.order for f in causes)
    read = {(e.path, e.line) for f in findings for e in f.evidence}
    read_texts = [e.text for f in findings for e in f.evidence]
    first: dict[int | None, Finding] = {}
    for seen in state.exceptions:
        exc = seen.exc
        if exc.ignored or exc.header == "terminate" or seen.rank in first:
            continue
        if (seen.path, exc.log_line) in read or _message_read(exc.message, read_texts):
            continue
        if causes and (seen.order <= after or not exc.frames):
            continue
        col = seen.raw.find(exc.type)
        first[seen.rank] = finding_from(
            sig,
            seen,
            {"exc_type": exc.type.rsplit(".", 1)[-1], "message": exc.message},
            evidence=[
                Evidence(
                    path=seen.path,
                    line=exc.log_line,
                    text=seen.raw,
                    rank=seen.rank,
                    column_start=col if col >= 0 else None,
                    column_end=len(seen.raw) if col >= 0 else None,
                )
            ],
        )
        first[seen.rank].frames = last_frames(exc)
    return list(first.values())


#: The signature of a data file a framework's loader did not find (:func:`framework_missing_files`).
MISSING_DATA_SIGNATURE = "framework-data-file-not-found"
#: The exception types a loader raises for a path that is not there.
MISSING_FILE_TYPES = ("ValueError", "FileNotFoundError", "OSError")
#: A message saying a file or path was not found: LLaMA-Factory's "File data/x.json not
#: found.", "Path ... does not exist", Python's "[Errno 2] No such file or directory: 'x'".
MISSING_FILE_MESSAGE = lazy_regex.compile(
    r"(?i)^(?:(?:data(?:set)?\s+)?(?:file|path|directory|dir)\s+)['\"`]?(?P<path>[^'\"`\s]+)['\"`]?"
    r"\s+(?:is\s+)?(?:not\s+found|does\s+not\s+exist|cannot\s+be\s+found)"
    r"|No such file or directory: ['\"](?P<path2>[^'\"]+)['\"]"
)
#: Where a framework loads its data: a module or function of data loading.
DATA_LOADER_FRAME = lazy_regex.compile(r"(?i)(?:^|/)(?:data|datasets?)/|data(?:set)?|load")


def framework_missing_files(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A ``ValueError``/``FileNotFoundError``/``OSError`` saying a file or path was not found
    (:data:`MISSING_FILE_MESSAGE`), raised in a library's or framework's data-loading code
    (its innermost frame not the user's, in a data module or a load/dataset function:
    :data:`DATA_LOADER_FRAME`), with no user frame on the way but the entry script's (the
    script that only starts the framework): a finding of :data:`MISSING_DATA_SIGNATURE` (class
    config-error) on the exception's line, one per rank. Mechanism: the framework resolved
    the path from its config (a dataset registry entry, a data directory, a relative path
    against the working directory); the user's code did not build it, so the fix is the
    config or the file, and every rank fails alike. Raised from the user's own file, or below
    a frame of the user's code other than the entry script (a dataset's ``__getitem__``
    handing ``np.load`` a sample's path), it stays the generic exception."""
    return exceptions_per_rank(
        MISSING_DATA_SIGNATURE, MISSING_FILE_TYPES, findings, state, library, _missing_data_file
    )


def _missing_data_file(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`framework_missing_files` for ``seen`` (``where``, ``loader``,
    ``path``), or ``None`` when it is not a framework's data loader missing a file."""
    exc = seen.exc
    if not exc.frames or exc.frames[-1].user:
        return None
    entry = exc.frames[0].file
    if any(fr.user and fr.file != entry for fr in exc.frames):
        return None  # the user's own code (a dataset's __getitem__) chose the path
    m = MISSING_FILE_MESSAGE.search(exc.message.strip())
    where = exc.frames[-1]
    path = where.file.replace("\\", "/")
    module = "/".join(path.split("/")[-2:])  # its package folder and file
    if m is None or not (DATA_LOADER_FRAME.search(module) or DATA_LOADER_FRAME.search(where.func)):
        return None
    name = path.rsplit("/", 1)[-1]
    return {
        "where": f"{name}:{where.line}",
        "loader": where.func,
        "path": m.group("path") or m.group("path2") or "",
    }


#: The signature of a file one node of a multi-node job has and another lacks
#: (:func:`node_local_files`).
NODE_LOCAL_SIGNATURE = "file-missing-on-other-node"
#: A launcher's host label at a line's start: pdsh's (DeepSpeed's multi-node launcher)
#: ``localhost: `` / ``192.168.205.202: `` / ``node02: ``, clush's the same.
_LINE_HOST = lazy_regex.compile(
    r"^(?P<host>localhost|(?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][\w-]{0,62}(?:\.[\w-]{1,62}){0,6}): "
)
#: Most lines of the log's heads read per missing path (the lines that name it).
MAX_PATH_LINES = 64


def node_local_files(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """A ``FileNotFoundError`` for a path (``[Errno 2] No such file or directory: '<path>'``)
    on a line one host's label starts (pdsh's ``192.168.205.202: [rank4]: ...``), when another
    line of the log's start (:attr:`rootrank.scan.ScanState.heads`), under another host's
    label, names the same path as something that host read or wrote (``localhost:  > loading
    doc-idx mapping from <path>``): a finding of :data:`NODE_LOCAL_SIGNATURE` (class
    config-error) on the exception's line, the other host's line as its second evidence, one
    per rank.

    Mechanism: a multi-node job whose ranks share files through a path (a dataset's index
    cache, a tokenizer cache, a checkpoint directory) needs one file system behind that path
    on every node. Frameworks build such files on one rank and let the others load them after
    a barrier (Megatron's ``_build_index_mappings`` builds the GPT index cache on the first
    rank of a group and every rank then ``np.load``s it): on a node-local directory the
    file exists only on the node that built it, and the first rank of another node that
    loads it does not find it. The other host's line shows the file was there for it; the
    path is right, the storage is not shared."""
    sig = library.signatures.get(NODE_LOCAL_SIGNATURE)
    if sig is None or not state.heads:
        return []
    out: dict[int | None, Finding] = {}
    for seen in _unread_exceptions(state, findings, "FileNotFoundError"):
        m = MISSING_FILE_MESSAGE.search(seen.exc.message.strip())
        path = (m.group("path2") or "") if m else ""
        mine = _LINE_HOST.match(seen.raw)
        if seen.rank in out or not path.startswith("/") or mine is None:
            continue
        other = _other_host_line(state, path, mine.group("host"))
        if other is None:
            continue
        src, number, text, host = other
        found = _exception_finding(
            sig,
            seen,
            {
                "path": path,
                "dir": path.rsplit("/", 1)[0] or "/",
                "host": mine.group("host"),
                "other_host": host,
                "other_line": str(number),
            },
        )
        found.evidence.append(Evidence(path=src, line=number, text=text, rank=None))
        out[seen.rank] = found
    return list(out.values())


def _other_host_line(state: ScanState, path: str, host: str) -> tuple[str, int, str, str] | None:
    """The first line of the log's heads that names ``path`` under a host label other than
    ``host`` and is no error about it (no "No such file", no traceback frame): ``(source,
    1-based line, text, that host)``; ``None`` when there is none."""
    for src, first, text in state.heads:
        pos = text.find(path)
        seen = 0
        while pos != -1 and seen < MAX_PATH_LINES:
            seen += 1
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end == -1 else end
            line = text[start:end]
            label = _LINE_HOST.match(line)
            if (
                label is not None
                and label.group("host") != host
                and "No such file" not in line
                and "Error" not in line
                and 'File "' not in line
            ):
                return src, first + text.count("\n", 0, start), line, label.group("host")
            pos = text.find(path, end)
    return None


#: The exception type a library's native op raises at its caller's line: torch's C++ checks
#: (``TORCH_CHECK``: a wrong shape, dimension count, dtype or device of an argument) surface
#: in Python as ``RuntimeError`` with no Python frame of their own.
OP_ERROR_TYPE = "RuntimeError"


def user_op_errors(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """A ``RuntimeError`` whose innermost frame is the user's own code (``Frame.user``: not
    site-packages, the standard library or a known framework's source tree), on a line no
    signature reads: a finding of :data:`EXCEPTION_SIGNATURE` (class user-code-exception) on
    the exception's line, one per rank (its first such exception).

    Mechanism: a native op (``torch.cat``, ``view``, a matmul) checks its arguments in C++ and
    raises ``RuntimeError`` straight into the Python line that called it, so the traceback's
    last frame is that call: when it is the user's file, the arguments the user's code built
    are wrong (``torch.cat`` of a 2-D and a 3-D tensor), whatever the message's words. So
    the traceback must quote that line, and it must not be a ``raise`` statement (a
    ``RuntimeError`` the user's code raised itself is its own, unnamed kind of failure). A
    ``RuntimeError`` raised inside a library (its last frame in site-packages: NCCL, CUDA,
    the allocator, a framework's own check) is not this kind, and neither is an exception
    the process survived (set aside before this runs). Lines another signature reads (the
    matmul shape mismatch, CUDA out of memory) are left to it, and so is a rank on which
    another signature already names a cause (a DataLoader worker's wrapped exception: the
    wrapper's reading is the more precise one)."""
    sig = library.signatures.get(EXCEPTION_SIGNATURE)
    if sig is None:
        return []
    named = {
        f.rank
        for f in findings
        if f.role == "cause" and f.severity == "error" and f.signature != EXCEPTION_SIGNATURE
    }
    out: dict[int | None, Finding] = {}
    for seen in _unread_exceptions(state, findings, OP_ERROR_TYPE):
        exc = seen.exc
        if (
            seen.rank in out
            or seen.rank in named
            or exc.type.rsplit(".", 1)[-1] != OP_ERROR_TYPE
            or exc.header == "terminate"
            or not exc.frames
            or not exc.frames[-1].user
            or not exc.frames[-1].code
            or exc.frames[-1].code.startswith("raise")
        ):
            continue  # (a RuntimeError the user's code raised itself stays as it was)
        found = _exception_finding(sig, seen, {})
        col = seen.raw.find(exc.type)
        if col >= 0:
            found.evidence[0].column_start, found.evidence[0].column_end = col, len(seen.raw)
        out[seen.rank] = found
    return list(out.values())


#: A torch.distributed call with no default process group, and its reading after the rank's
#: collectives had already run (rootrank.analysis.prepare.destroyed_groups).
NOT_INITIALIZED_SIGNATURE = "process-group-not-initialized"
DESTROYED_SIGNATURE = "process-group-destroyed-early"


def destroyed_groups(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """A "Default process group has not been initialized" (:data:`NOT_INITIALIZED_SIGNATURE`)
    on a rank that printed training steps earlier in the same source, while another rank the
    log shows did not raise it: a finding of :data:`DESTROYED_SIGNATURE` (class
    user-code-exception) on the same line, with the rank's last step before it (``step``,
    ``step_line``).

    Mechanism: a rank's training steps ran its collectives (gradient all-reduces, a DDP
    step), so its default process group existed; the error after them means code on that
    rank destroyed it (``destroy_process_group()`` in a helper called during training).
    A group never made fails on every rank alike, before any step, so the error on every
    rank, or before the rank's first step, stays the missing initialisation."""
    sig = library.signatures.get(DESTROYED_SIGNATURE)
    if sig is None:
        return []
    hits = [f for f in findings if f.signature == NOT_INITIALIZED_SIGNATURE and f.evidence]
    raisers = {f.rank for f in hits}
    others = set(state.ranks_seen) | {r for r in state.progress.last() if r is not None}
    if not hits or not (others - raisers):
        return []
    last = state.progress.last()
    out: list[Finding] = []
    for f in hits:
        ev = f.evidence[0]
        p = last.get(f.rank) if f.rank is not None else None
        if p is None or p.path != ev.path or p.line >= ev.line:
            continue
        found = finding_from(
            sig,
            f,
            {**f.captures, "step": str(p.step), "step_line": str(p.line)},
            evidence=list(f.evidence),
        )
        found.frames = list(f.frames)
        out.append(found)
    return out


def user_reraise(state: ScanState, seen: SeenException) -> SeenException | None:
    """The exception the user's own code raised ``from`` ``seen`` (the next link of its
    chain: "The above exception was the direct cause of the following exception:", same
    source and rank), when ``seen`` was raised inside a library (its innermost frame is no
    user code: a JSON decoder, a struct unpack) and the wrapper in the user's code (its
    innermost frame is): ``raise ValueError(f"bad record {idx} in {path}") from e``.
    ``None`` otherwise."""
    chain = state.exceptions
    i = next((k for k, x in enumerate(chain) if x is seen), None)
    if i is None or i + 1 >= len(chain) or not seen.exc.frames or seen.exc.frames[-1].user:
        return None
    nxt = chain[i + 1]
    if (
        nxt.path != seen.path
        or nxt.rank != seen.rank
        or nxt.exc.chained != "cause"
        or nxt.exc.chain_index != seen.exc.chain_index + 1
        or not nxt.exc.frames
        or not nxt.exc.frames[-1].user
    ):
        return None
    return nxt


#: A child process's exit status in a message: ``returncode -14``, ``exit code -9``,
#: ``exited with status -11`` (a negative code is the signal that killed it, Popen's
#: convention), or ``killed by signal 14``.
_CHILD_STATUS = lazy_regex.compile(
    r"(?i)\b(?:returncode|return code|exit ?code|exit status|exited with (?:code|status))"
    r"\W{0,3}(?P<code>-\d{1,2})\b|\bkilled by signal (?P<sig>\d{1,2})\b"
)
#: What a signal that killed a child process usually means (Linux numbers).
_SIGNAL_MEANING: dict[str, str] = {
    "SIGALRM": "the child's own alarm timer fired (signal.alarm / setitimer: a watchdog or"
    " time limit of its own, whose default action ends the process)",
    "SIGKILL": "killed outright: most often the kernel's OOM killer (dmesg), or a kill -9",
    "SIGSEGV": "a native crash inside the child (a C extension, a corrupt input to a decoder)",
    "SIGBUS": "a bus error: a memory-mapped file truncated under it, or /dev/shm full",
    "SIGABRT": "the child aborted itself (a failed C assertion, std::terminate)",
    "SIGTERM": "something asked it to stop (the parent, a timeout wrapper, the scheduler)",
    "SIGPIPE": "it wrote to a pipe whose reader had gone",
    "SIGINT": "an interrupt (Ctrl-C) reached it",
    "SIGHUP": "its terminal or session closed",
    "SIGXCPU": "it exceeded its CPU-time limit (ulimit -t / RLIMIT_CPU)",
    "SIGXFSZ": "it wrote past its per-file size limit (ulimit -f / RLIMIT_FSIZE)",
    "SIGFPE": "an arithmetic fault in native code (an integer division by zero)",
}
#: A traceback's header line.
_TRACEBACK_HEADER = "Traceback (most recent call last)"


def _line_before_traceback(state: ScanState, path: str, line: int) -> str | None:
    """The last plain line printed just above the traceback whose exception line is
    ``line`` of ``path`` (what the process or a child sharing its stream wrote last), from
    the kept tail of that source; ``None`` when the tail does not hold it."""
    for tpath, first, text in state.tails:
        if tpath != path or line < first:
            continue
        lines = text.split("\n")
        i = line - first
        if i >= len(lines):
            return None
        while i > 0 and _TRACEBACK_HEADER not in lines[i]:
            i -= 1
        for j in range(i - 1, max(-1, i - 4), -1):
            prev = lines[j].strip()
            if prev and _TRACEBACK_HEADER not in prev and "direct cause" not in prev:
                return prev[:240]
        return None
    return None


def _cause_link(f: Finding, state: ScanState) -> tuple[SeenException, SeenException] | None:
    """The exception on ``f``'s first evidence line (same source, line and rank) and the next
    link of its chain, raised "as the direct cause" of it (``chained == "cause"``, the next
    chain index, the same source), from the scan's ``state.exceptions``; ``None`` when the
    log shows no such link."""
    if not f.evidence:
        return None
    first = f.evidence[0]
    chain = state.exceptions
    i = next(
        (
            k
            for k, x in enumerate(chain)
            if x.path == first.path and x.exc.log_line == first.line and x.rank == f.rank
        ),
        None,
    )
    if i is None or i + 1 >= len(chain):
        return None
    seen, nxt = chain[i], chain[i + 1]
    if (
        nxt.path != seen.path
        or nxt.exc.chained != "cause"
        or nxt.exc.chain_index != seen.exc.chain_index + 1
    ):
        return None
    return seen, nxt


def child_status_first(f: Finding, state: ScanState) -> Finding:
    """``f`` read from the exception the user's code raised ``from`` it when that wrapper
    states a child process's exit status the cause does not (``EOFError: data worker closed
    its stdout`` -> ``RuntimeError: data worker pid 4514 for shard 3 died (returncode -14)``):
    the status is why the pipe closed. Popen's negative returncode is the signal that killed
    the child; the finding gains ``signal`` (``SIGALRM``), ``signal_meaning`` and
    ``child_last_line`` (the line printed just above the traceback: what the child wrote
    last on the shared stream) captures (heldout r19d case 10). ``f`` itself otherwise."""
    link = _cause_link(f, state) if f.signature == EXCEPTION_SIGNATURE else None
    if link is None:
        return f
    seen, nxt = link
    if nxt.rank != seen.rank or _CHILD_STATUS.search(seen.exc.message):
        return f
    m = _CHILD_STATUS.search(nxt.exc.message)
    if m is None:
        return f
    number = -int(m.group("code")) if m.group("code") else int(m.group("sig"))
    import signal as _signal

    try:
        name = _signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    exc = nxt.exc
    col = nxt.raw.find(exc.type)
    captures = {
        **f.captures,
        "exc_type": exc.type.rsplit(".", 1)[-1],
        "message": exc.message,
        "signal": name,
        "signal_number": str(number),
        "signal_meaning": _SIGNAL_MEANING.get(name, "a signal ended it"),
        "cause_message": seen.exc.message,
    }
    before = _line_before_traceback(state, seen.path, seen.exc.log_line)
    if before:
        captures["child_last_line"] = before
    wrapper = Evidence(
        path=nxt.path,
        line=exc.log_line,
        text=nxt.raw,
        rank=nxt.rank,
        column_start=col if col >= 0 else None,
        column_end=len(nxt.raw) if col >= 0 else None,
    )
    frames = exc.frames if exc.frames else seen.exc.frames
    return dataclasses.replace(
        f,
        evidence=[wrapper, *f.evidence],
        captures=captures,
        frames=[
            {"file": fr.file, "line": fr.line, "func": fr.func, "user": fr.user}
            for fr in frames[-12:]
        ],
    )


def user_statement_first(f: Finding, state: ScanState) -> Finding:
    """``f`` read from the user's own re-raise rather than from its cause, when ``f`` is a
    plain exception (:data:`EXCEPTION_SIGNATURE`) whose first line is a library's exception
    and whose evidence also holds the exception the user's code raised from it
    (:func:`user_reraise`): the wrapper is the user's own statement of the failure, naming
    what the library could not (the record, the file), and its frame is where the user's
    code gave up. Its evidence line comes first and its type, message and frames fill the
    entry; the cause stays in the evidence. ``f`` itself otherwise (a copy is returned, the
    scan's finding is not changed)."""
    if f.signature != EXCEPTION_SIGNATURE or len(f.evidence) < 2:
        return f
    first = f.evidence[0]
    seen = next(
        (
            s
            for s in state.exceptions
            if s.path == first.path and s.exc.log_line == first.line and s.rank == f.rank
        ),
        None,
    )
    wrapper = user_reraise(state, seen) if seen is not None else None
    if wrapper is None:
        return f
    at = next(
        (e for e in f.evidence if e.path == wrapper.path and e.line == wrapper.exc.log_line),
        None,
    )
    if at is None:
        return f
    exc = wrapper.exc
    return dataclasses.replace(
        f,
        evidence=[at, *(e for e in f.evidence if e is not at)],
        captures={
            **f.captures,
            "exc_type": exc.type.rsplit(".", 1)[-1],
            "message": exc.message,
        },
        frames=[
            {"file": fr.file, "line": fr.line, "func": fr.func, "user": fr.user}
            for fr in exc.frames[-12:]
        ],
    )


def chain_user_frames(f: Finding, state: ScanState) -> Finding:
    """``f`` with the frames of the next link of its exception's chain when its own show no
    user code and that link's do: the exception on ``f``'s first evidence line was raised
    in a library's thread or process (a DataLoader's worker status check, inside torch's
    queue polling) and then raised again "as the direct cause" in the process's own stack
    (the DataLoader iterator's ``_try_get_data``, under the user's loop), whose frames show
    the user's line that was running. Same source, the same rank or none, the next chain
    index; ``f`` itself otherwise (a copy is returned)."""
    link = None if any(fr.get("user") for fr in f.frames) else _cause_link(f, state)
    if link is None:
        return f
    seen, nxt = link
    if (
        nxt.rank not in (seen.rank, None)  # (a link whose lines lost the rank's tag)
        or not any(fr.user for fr in nxt.exc.frames)
    ):
        return f
    return dataclasses.replace(
        f,
        frames=[
            {"file": fr.file, "line": fr.line, "func": fr.func, "user": fr.user}
            for fr in nxt.exc.frames[-12:]
        ],
    )


#: A count the run printed as 0 (a warning symptom), and the cause it makes of a division.
ZERO_COUNT_SIGNATURE = "printed-count-zero"
ZERO_DIVISION_SIGNATURE = "zero-count-division"


def zero_count_divisions(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A ``ZeroDivisionError`` after the run printed a count of steps, batches or samples as
    0 (a :data:`ZERO_COUNT_SIGNATURE` finding earlier in the same source) is a division by
    that count: a finding of :data:`ZERO_DIVISION_SIGNATURE` (class config-error) on the
    exception's line, one per rank, with the count's wording (``what``) and line
    (``count_where``). The exception alone says only where; the printed 0 says why (an
    empty dataset, or a global batch larger than the data). Empty when either signature is
    missing or no such pair is in the log."""
    zeros = [f for f in findings if f.signature == ZERO_COUNT_SIGNATURE]
    if not zeros:
        return []
    # the generic exception's reading does not count (user-code-exception declares
    # explained_by: [zero-count-division])
    return exceptions_per_rank(
        ZERO_DIVISION_SIGNATURE,
        ("ZeroDivisionError",),
        findings,
        state,
        library,
        lambda seen: _zero_count(seen, zeros),
    )


def _zero_count(seen: SeenException, zeros: list[Finding]) -> dict[str, str] | None:
    """The captures of :func:`zero_count_divisions` for ``seen`` (``what``, ``count_where``)
    from the last of ``zeros`` (the printed counts of 0) before it in its source, or ``None``
    when none is."""
    before = [
        z for z in zeros if z.order < seen.order and z.evidence and z.evidence[0].path == seen.path
    ]
    if not before:
        return None
    count = max(before, key=lambda z: z.order)
    where = count.evidence[0]
    return {"what": count.captures.get("what", ""), "count_where": f"line {where.line}"}


#: The signature of a KeyError raised indexing a loaded checkpoint (:func:`checkpoint_key_errors`).
CHECKPOINT_KEY_SIGNATURE = "checkpoint-missing-key"
#: A source line that reads a checkpoint: a state dict, ``torch.load``'s result (``ckpt``,
#: ``checkpoint``), a safetensors file.
CHECKPOINT_CODE = lazy_regex.compile(r"(?i)state_dict|checkpoint|\bckpt|torch\.load\(|safetensors")
#: A function that loads, resumes, restores or warm-starts from a checkpoint: read as one only
#: with a key a checkpoint holds (:data:`CHECKPOINT_KEY`), since ``load_shard`` may as well
#: index a table of data shards.
CHECKPOINT_FUNC = lazy_regex.compile(
    r"(?i)resume|restore|warm_?start|load_(?:shard|model|weights|state|pretrained|ckpt|checkpoint)"
)
#: Keys a training checkpoint holds beside the weights.
CHECKPOINT_KEY = lazy_regex.compile(
    r"^['\"](?:model|module|net|optimi[sz]er|optim|scheduler|lr_scheduler|scaler|amp|step|"
    r"global_step|epoch|iteration|rng|rng_state|state|state_dict|ema|args|config)['\"]$"
)
#: A KeyError's key that is a module parameter's or buffer's name (``head.2.weight``,
#: ``encoder.layers.0.norm.running_var``): what a state dict is keyed by.
PARAMETER_KEY = lazy_regex.compile(
    r"^['\"]?(?:\w+\.)+(?:weight|bias|running_mean|running_var|num_batches_tracked|\w*embed\w*|\w*scale)['\"]?$"
)
#: How many frames, innermost first, are read for the checkpoint (the raising line and its
#: callers up to the function that loaded it).
CHECKPOINT_FRAMES = 3


def checkpoint_key_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A ``KeyError`` raised indexing a loaded checkpoint is a missing key in that checkpoint:
    a finding of :data:`CHECKPOINT_KEY_SIGNATURE` (class checkpoint-load-mismatch) on the
    exception's line, one per rank, capturing ``key`` and the indexing line (``code``,
    ``where``: ``file:line``). Read as such when one of the innermost
    :data:`CHECKPOINT_FRAMES` frames that quote code reads a checkpoint
    (:data:`CHECKPOINT_CODE`: ``opt.load_state_dict(shard["optimizer"])``), or is a function
    that loads one (:data:`CHECKPOINT_FUNC`) and the key is one a checkpoint holds
    (:data:`CHECKPOINT_KEY`: ``'optimizer'``, not a shard table's ``2``), or the key is a parameter's name (:data:`PARAMETER_KEY`) and the raising line indexes
    (``p.data.copy_(ckpt[name])``). A plain exception's reading says only "KeyError"; which
    file lacks the key (a shard written by another version, a weights-only export, one rank's
    stale file) is the fix. Empty when the signature is missing."""
    return exceptions_per_rank(
        CHECKPOINT_KEY_SIGNATURE, ("KeyError",), findings, state, library, _checkpoint_key
    )


def _checkpoint_key(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`checkpoint_key_errors` for ``seen`` (``key``, ``code``,
    ``where``), or ``None`` when the KeyError was not raised indexing a checkpoint."""
    if not seen.exc.frames:
        return None
    quoted = [fr for fr in reversed(seen.exc.frames) if fr.code][:CHECKPOINT_FRAMES]
    if not quoted:
        return None
    key = seen.exc.message.strip()
    reads = any(CHECKPOINT_CODE.search(fr.code) for fr in quoted) or (
        CHECKPOINT_KEY.match(key) is not None
        and any(CHECKPOINT_FUNC.search(fr.func) for fr in quoted)
    )
    if not reads and not (PARAMETER_KEY.match(key) and "[" in quoted[0].code):
        return None
    raising = quoted[0]
    return {
        "key": key.strip("'\""),
        "code": raising.code,
        "where": f"{raising.file.rsplit('/', 1)[-1]}:{raising.line}",
    }


#: A record read from the data that lacks a field the code reads (:func:`record_field_errors`).
RECORD_FIELD_SIGNATURE = "record-missing-field"
#: A user line subscripting a data record by a quoted field name: ``rec["text"]``,
#: ``example['label']``, ``row["input_ids"]`` (the variable's name says it holds one record
#: of the data: a loop's record, row, sample, example, item, document or entry).
RECORD_FIELD_CODE = lazy_regex.compile(
    r"(?<![\w.])(?P<var>(?:rec|record|row|sample|example|ex|item|doc|document|entry|datum|obj"
    r"|js|jline|line|elem|instance|x)s?(?:_\w{1,20})?)\s*\[\s*(?P<q>[\"'])(?P<field>[^\"'\]]{1,64})(?P=q)\s*\]"
)


def record_field_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A ``KeyError`` raised at a user line that subscripts a data record by the same quoted
    field name (``for tok in rec["text"].split():`` raising ``KeyError: 'text'``) is a record
    of the data that lacks that field: a finding of :data:`RECORD_FIELD_SIGNATURE` (class
    data-error) on the exception's line, one per rank, capturing ``field``, ``var``,
    ``code`` and ``where`` (``file:line``).

    Mechanism: ``json.loads`` of a JSON-lines record (or a CSV row as a dict, a dataset's
    example) gives a dict with the keys that record has; one record written without the
    field (an empty or differently shaped line, another source's schema) raises KeyError
    at the first line that indexes it, whatever the code around it. The innermost quoted
    frame must be the user's and subscript the key the exception names (not a config dict's
    key, not a checkpoint's: :func:`checkpoint_key_errors` reads those first). Empty when
    the signature is missing (heldout r19b case 08)."""
    return exceptions_per_rank(
        RECORD_FIELD_SIGNATURE, ("KeyError",), findings, state, library, _record_field
    )


def _record_field(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`record_field_errors` for ``seen`` (``field``, ``var``, ``code``,
    ``where``, ``func``), or ``None`` when its user line does not subscript that field."""
    if not seen.exc.frames:
        return None
    raising = next((fr for fr in reversed(seen.exc.frames) if fr.code), None)
    if raising is None or not raising.user:
        return None
    key = seen.exc.message.strip().strip("'\"")
    m = next((m for m in RECORD_FIELD_CODE.finditer(raising.code) if m["field"] == key), None)
    if m is None:
        return None
    return {
        "field": key,
        "var": m["var"],
        "code": raising.code,
        "where": f"{raising.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{raising.line}",
        "func": raising.func,
    }


#: torch.distributed.checkpoint's gathered failure (its ``ranks`` capture: the ranks whose
#: planner raised), and the planner's own words for a key the checkpoint lacks
#: (torch/distributed/checkpoint/default_planner.py ``create_default_local_load_plan``).
DCP_SIGNATURE = "dcp-checkpoint-exception"
DCP_MISSING_KEY = lazy_regex.compile(r"^Missing key in checkpoint state_dict: (?P<key>\S+?)\.?$")
#: A rank number inside a state_dict key (``sampler_rank3.cursor``, ``rng.rank_3``).
KEY_RANK = lazy_regex.compile(r"(?i)rank[_-]?(?P<n>\d{1,6})(?!\d)")


def dcp_rank_keys(findings: list[Finding], state: ScanState) -> list[Finding]:
    """``findings`` with the DCP failure (:data:`DCP_SIGNATURE`) told which key the failing
    ranks' planner missed (``missing_key``) and, when that key names a rank
    (:data:`KEY_RANK`) that is one of the failing ranks, that rank (``key_rank``) and how many
    ranks the log shows (``world``).

    Mechanism: a state_dict entry keyed by the rank that wrote it (``sampler_rank3.cursor``:
    each rank's own sampler or RNG state) exists in a checkpoint only for the ranks of the run
    that saved it. Resumed with more ranks, the new ranks' planners find no entry under their
    key and raise "Missing key in checkpoint state_dict"; DCP gathers it and every rank raises
    the CheckpointException naming them (heldout r19b case 02: rank 3 of 4 resuming a 3-rank
    checkpoint). The key's rank being the failing rank is what says so; a missing key naming
    no rank is a model or optimizer whose structure changed (the generic reading)."""
    if not any(f.signature == DCP_SIGNATURE for f in findings):
        return findings
    key = next(
        (m["key"] for x in state.exceptions if (m := DCP_MISSING_KEY.match(x.exc.message.strip()))),
        None,
    )
    if key is None:
        return findings
    out = []
    for f in findings:
        if f.signature != DCP_SIGNATURE:
            out.append(f)
            continue
        extra = {"missing_key": key}
        failing = {int(n) for n in regex_code.findall(r"\d+", f.captures.get("ranks", ""))}
        m = KEY_RANK.search(key)
        if m is not None and int(m["n"]) in failing:
            known = set(state.ranks_seen) | {e.rank for e in state.elastic if e.rank is not None}
            extra["key_rank"] = m["n"]
            extra["world"] = str(max(state.world_size or 0, max(known, default=-1) + 1))
        out.append(dataclasses.replace(f, captures={**f.captures, **extra}))
    return out


#: A config file that does not parse (:func:`config_parse_errors`).
CONFIG_PARSE_SIGNATURE = "config-file-unparseable"
#: Parsers' syntax errors (json, tomllib, PyYAML's scanner and parser): the text read is not
#: valid for its format. pandas' CSV ``ParserError`` is data, not a config: only PyYAML's.
CONFIG_PARSE_TYPES = (
    "JSONDecodeError",
    "TOMLDecodeError",
    "yaml.scanner.ScannerError",
    "yaml.parser.ParserError",
)
#: A user frame that reads a configuration: its function, file or quoted code names one.
CONFIG_FRAME = lazy_regex.compile(
    r"(?i)config|\bcfg|conf\b|settings|hparams|hyperparam|\bparams\b|options"
)


def config_parse_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A parser's syntax error (``json.decoder.JSONDecodeError: Unterminated string starting
    at: line 4 column 27``, a TOML or YAML one) raised under a user frame that reads a
    configuration (:data:`CONFIG_FRAME`: ``load_config``, ``cfg = ...``, ``config.py``) is a
    config file that does not parse: a finding of :data:`CONFIG_PARSE_SIGNATURE` (class
    config-error) on the exception's line, one per rank, capturing the reading line
    (``where``: ``file:line``). Mechanism: the file is text the parser rejects at the
    position it names: hand-edited, cut short by a copy or a write that did not finish, or,
    when only some ranks raise, another copy of the file (each node reads its own) than the
    ranks that parsed it. Lines another signature reads are left to it; a parse under no
    config frame (a data record's JSON) stays the generic exception."""
    return exceptions_per_rank(
        CONFIG_PARSE_SIGNATURE, CONFIG_PARSE_TYPES, findings, state, library, _config_parse
    )


def _config_parse(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`config_parse_errors` for ``seen`` (``where``, ``func``: the
    user frame that reads a configuration), or ``None`` when no user frame does."""
    user = [fr for fr in reversed(seen.exc.frames) if fr.user]
    reading = next(
        (
            fr
            for fr in user
            if CONFIG_FRAME.search(fr.func)
            or CONFIG_FRAME.search(fr.file.replace("\\", "/").rsplit("/", 1)[-1])
            or CONFIG_FRAME.search(fr.code)
        ),
        None,
    )
    if reading is None:
        return None
    name = reading.file.replace("\\", "/").rsplit("/", 1)[-1]
    return {"where": f"{name}:{reading.line}", "func": reading.func}


#: A count argument a library refused as not positive (:func:`nonpositive_count_arguments`).
NONPOSITIVE_COUNT_SIGNATURE = "nonpositive-count-argument"
#: Libraries' checks that a count is positive: torch's ``set_num_threads expects a positive
#: integer`` (aten/src/ATen/ParallelCommon/ParallelThreadPoolNative), ``num_workers option
#: should be non-negative``, ``batch_size should be a positive integer value``.
NONPOSITIVE_COUNT_MESSAGE = lazy_regex.compile(
    r"(?i)\b(?:expects?|should be|must be) (?:a )?(?:positive|non-negative)(?: integer)?\b"
)
#: A rank's own line that shows an empty share: ``cores [] of [0, 1]``, ``0 shards``, or a
#: total divided by the ranks to 0 each (``global batch 3 over 4 ranks -> 0 per rank``).
EMPTY_SHARE = lazy_regex.compile(
    r"\[\]|\(\)|\b0 (?:cores|cpus|gpus|devices|items|shards|files|workers|threads)\b"
    r"|\b0 (?:per|each) (?:rank|gpu|device|process|worker)\b"
)


def nonpositive_count_arguments(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A library's refusal of a count that is not positive (``RuntimeError: set_num_threads
    expects a positive integer``) raised from a user frame: a finding of
    :data:`NONPOSITIVE_COUNT_SIGNATURE` (class config-error) on the exception's line, one per
    rank, capturing the user's line (``where``, ``code``) and, when the rank printed one, its
    own line that shows an empty share (:data:`EMPTY_SHARE`: ``[rank 2] cores [] of [0,
    1]``, quoted in ``printed_note``). Mechanism: the count was computed on that rank, mostly a share of
    something split across the local ranks (CPU cores, GPUs, files, workers): with more ranks
    than items one rank's share is empty and its count 0. Lines another signature reads are
    left to it; a traceback with no user frame stays the generic exception."""
    return exceptions_per_rank(
        NONPOSITIVE_COUNT_SIGNATURE,
        ("RuntimeError", "ValueError"),
        findings,
        state,
        library,
        lambda seen: _nonpositive_count(seen, state),
    )


def _nonpositive_count(seen: SeenException, state: ScanState) -> dict[str, str] | None:
    """The captures of :func:`nonpositive_count_arguments` for ``seen`` (``where``, ``code``,
    ``printed_note``), or ``None`` when it is no such refusal raised from a user frame."""
    if not NONPOSITIVE_COUNT_MESSAGE.search(seen.exc.message):
        return None
    user = next((fr for fr in reversed(seen.exc.frames) if fr.user and fr.code), None)
    if user is None:
        return None
    name = user.file.replace("\\", "/").rsplit("/", 1)[-1]
    return {
        "where": f"{name}:{user.line}",
        "code": user.code,
        "printed_note": _printed_note(_empty_share_line(state, seen.rank)),
    }


def _printed_note(line: str) -> str:
    """`` (it printed "<line>")`` for a quoted line, ``""`` for none."""
    return f' (it printed "{line[:120]}")' if line else ""


def _empty_share_line(state: ScanState, rank: int | None) -> str:
    """The first of ``rank``'s kept lines (rootrank.ranklines.rank_lines, the heads only)
    that shows an empty share, ``""`` when none or no rank."""
    if rank is None:
        return ""
    from rootrank.ranklines import rank_lines

    lines, _, _ = rank_lines(state)
    for who, kept in lines.items():
        if who[0] != rank:
            continue
        for ln in kept:
            if EMPTY_SHARE.search(ln.text):
                return ln.text
    return ""


#: A record's field read as inf or NaN (:func:`nonfinite_record_fields`).
NONFINITE_FIELD_SIGNATURE = "nonfinite-record-field"
#: CPython's refusal to make an integer of a non-finite float (``int()``, ``math.ceil``,
#: ``math.floor``, ``range``): OverflowError for infinity, ValueError for NaN.
NONFINITE_MESSAGE = lazy_regex.compile(r"cannot convert float (?P<value>infinity|NaN) to integer")
#: A field read by its name on the raising line: ``meta["num_tokens"]``, ``row['len']``.
FIELD_READ = lazy_regex.compile(r"""\[\s*(?P<q>["'])(?P<field>[^"'\]]{1,60})(?P=q)\s*\]""")


def nonfinite_record_fields(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``OverflowError: cannot convert float infinity to integer`` (or NaN's ValueError)
    raised on a user line that reads a field by its name (``math.ceil(meta["num_tokens"] /
    N)``): a finding of :data:`NONFINITE_FIELD_SIGNATURE` (class data-error) on the
    exception's line, one per rank, capturing the field, the value and the line. Mechanism:
    a record loaded from a file (a JSON manifest or metadata, a CSV row) holds a number too
    large for a float (JSON's ``1e999`` loads as inf) or NaN, and the first integer use of it
    raises; the file is what to repair, and the loader what to make check it. Lines another
    signature reads are left to it; a line that reads no named field stays the generic
    exception (its inf may be the code's own arithmetic)."""
    return exceptions_per_rank(
        NONFINITE_FIELD_SIGNATURE,
        ("OverflowError", "ValueError"),
        findings,
        state,
        library,
        _nonfinite_field,
    )


def _nonfinite_field(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`nonfinite_record_fields` for ``seen`` (``field``, ``value``,
    ``where``, ``code``, ``func``), or ``None`` when its user line reads no named field."""
    m = NONFINITE_MESSAGE.search(seen.exc.message)
    if m is None:
        return None
    user = next((fr for fr in reversed(seen.exc.frames) if fr.user and fr.code), None)
    field = FIELD_READ.search(user.code) if user is not None else None
    if user is None or field is None:
        return None
    name = user.file.replace("\\", "/").rsplit("/", 1)[-1]
    return {
        "field": field.group("field"),
        "value": "inf" if m.group("value") == "infinity" else "nan",
        "where": f"{name}:{user.line}",
        "code": user.code,
        "func": user.func,
    }


def exceptions_per_rank(
    signature: str,
    type_suffixes: tuple[str, ...],
    findings: list[Finding],
    state: ScanState,
    library: Library,
    captures: Callable[[SeenException], dict[str, str] | None],
) -> list[Finding]:
    """One finding of ``signature`` per rank, read from an exception: that rank's first
    exception the scan saw whose type ends with one of ``type_suffixes`` (every exception of
    the first suffix, then of the next), on a line no other signature reads
    (:func:`_unread_exceptions`), for which ``captures`` gives the finding's captures
    (``None``: not this reading). The finding is :func:`_exception_finding`'s (the exception's
    line, type, message and last frames). Empty when ``signature`` is not in ``library``.
    Every reading of an exception type that holds one finding a rank shares this loop (this
    module's and :mod:`rootrank.analysis.lookup`, ``sample_load``, ``parallel_wrapper``)."""
    sig = library.signatures.get(signature)
    if sig is None:
        return []
    out: dict[int | None, Finding] = {}
    for type_suffix in type_suffixes:
        for seen in _unread_exceptions(state, findings, type_suffix):
            if seen.rank in out:
                continue
            got = captures(seen)
            if got is not None:
                out[seen.rank] = _exception_finding(sig, seen, got)
    return list(out.values())


def _unread_exceptions(
    state: ScanState, findings: list[Finding], type_suffix: str
) -> Iterator[SeenException]:
    """The exceptions the scan saw, in log order, whose type ends with ``type_suffix``
    (``"TypeError"``), not ignored, on a line no signature but the generic exception's reads (a
    line another signature reads is its reading; the generic one declares what explains it)."""
    read = {
        (e.path, e.line) for f in findings if f.signature != EXCEPTION_SIGNATURE for e in f.evidence
    }
    for seen in state.exceptions:
        exc = seen.exc
        if (
            not exc.ignored
            and exc.type.endswith(type_suffix)
            and (seen.path, exc.log_line) not in read
        ):
            yield seen


def _exception_finding(sig: Signature, seen: SeenException, captures: dict[str, str]) -> Finding:
    """A finding of ``sig`` read from the exception the scan saw (``seen``): its rank, host,
    time and order, its exception line as the evidence (1-based line), ``captures`` plus
    ``exc_type`` (the class name without its module) and ``message``, and the exception's
    last 12 frames (:func:`finding_from`, :func:`last_frames`)."""
    exc = seen.exc
    found = finding_from(
        sig,
        seen,
        {**captures, "exc_type": exc.type.rsplit(".", 1)[-1], "message": exc.message},
    )
    found.frames = last_frames(exc)
    return found


def finding_from(
    sig: Signature,
    base: Finding | SeenException,
    captures: dict[str, str],
    evidence: list[Evidence] | None = None,
    order: int | None = None,
) -> Finding:
    """A finding of ``sig`` (:meth:`rootrank.model.Finding.of`) made from what the analysis
    read before, ``base``: an earlier finding, or an exception the scan saw
    (:class:`rootrank.scan.SeenException`). Its rank, host, time and order are ``base``'s
    (``order`` replaces the order when given); its evidence is ``evidence`` when given, else
    ``base``'s first line: a finding's first evidence, a seen exception's exception line
    (its path, 1-based log line, raw text and rank); its captures are ``captures`` as given
    (merge ``base.captures`` in the caller when they carry over). Frames are not copied (a
    caller sets them: :func:`last_frames`). Raises nothing of its own."""
    if evidence is None:
        if isinstance(base, Finding):
            evidence = list(base.evidence[:1])
        else:
            evidence = [
                Evidence(path=base.path, line=base.exc.log_line, text=base.raw, rank=base.rank)
            ]
    return Finding.of(
        sig,
        rank=base.rank,
        host=base.host,
        time=base.time,
        order=base.order if order is None else order,
        evidence=evidence,
        captures=captures,
    )


def finding_at(
    sig: Signature,
    line: Evidence | Finding,
    captures: dict[str, str],
    *,
    rank: int | None,
    order: int,
    host: str | None = None,
    time: float | None = None,
    count: int = 1,
) -> Finding:
    """A finding of ``sig`` (:meth:`rootrank.model.Finding.of`) placed at one line the
    analysis found: ``line`` is that line (its path, 1-based log line, raw text and the rank
    it names), or an earlier finding whose first evidence line is taken (none when it has
    none). The finding's ``rank`` (``None``: no rank is named), ``order`` (its place among
    the findings), ``host`` and ``time`` (Unix seconds) are the caller's: a line the analysis
    found carries no host and, unless the caller read one, no time. ``captures`` are kept as
    given; ``count`` is how many times the finding's line was seen. Raises nothing of its
    own."""
    evidence = [line] if isinstance(line, Evidence) else list(line.evidence[:1])
    return Finding.of(
        sig,
        rank=rank,
        host=host,
        time=time,
        order=order,
        evidence=evidence,
        captures=captures,
        count=count,
    )


def last_frames(exc: PyException) -> list[dict[str, Any]]:
    """The last 12 frames of ``exc`` (innermost last) as a finding's ``frames``: each frame's
    ``file``, 1-based ``line``, ``func`` and whether it is the user's code (``user``)."""
    return [
        {"file": fr.file, "line": fr.line, "func": fr.func, "user": fr.user}
        for fr in exc.frames[-12:]
    ]


#: A library's call into another package with arguments the installed callee does not take.
LIBRARY_CALL_SIGNATURE = "library-call-signature-mismatch"
#: Builders that construct an object from a config entry, passing the entry's keys as the
#: constructor's arguments (``obj_cls(**args)``): mmcv's ``build_from_cfg``
#: (mmcv/utils/registry.py), mmengine's (mmengine/registry/build_functions.py), Hydra's
#: ``instantiate`` (hydra/_internal/instantiate/_instantiate2.py). A call that does not fit there
#: is the config's (a missing or unknown key), not one package calling another.
CONFIG_BUILDER_FRAME = lazy_regex.compile(
    r"(?:mmcv|mmengine)/(?:utils/registry|registry/build_functions)\.py$"
    r"|hydra/_internal/instantiate/_instantiate2\.py$"
)

#: Python's TypeError for a call whose arguments do not fit the callee's signature (CPython
#: ``Python/ceval.c`` / ``getargs.c`` wording): an unknown keyword, a missing required
#: argument, too many positional arguments, one argument given twice.
CALL_SIGNATURE_MESSAGE = lazy_regex.compile(
    r"^(?P<callee>[\w.<>]+)\(\) (?:"
    r"got an unexpected keyword argument '(?P<arg>\w+)'"
    r"|missing \d+ required (?:positional|keyword-only) arguments?: (?P<arg2>'\w+'(?:,? (?:and )?'\w+')*)"
    r"|takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:were|was) given"
    r"|got multiple values for argument '(?P<arg3>\w+)'"
    r")"
)


#: The signature of an argument check a library ran on its own settings object (see
#: :func:`library_argument_checks`).
LIBRARY_ARGUMENT_SIGNATURE = "library-argument-check-failed"
#: The exception types an argument check raises.
ARGUMENT_CHECK_TYPES = ("AssertionError", "ValueError")
#: Where a library checks the settings it was given: a settings dataclass's ``__post_init__``
#: (ServerArgs, TrainingArguments, EngineArgs...), a ``from_cli_args``/``check_args``/
#: ``validate...``/``verify...`` function, or any function of an arguments module
#: (``server_args.py``, ``training_args.py``, ``arg_utils.py``, ``arguments.py``).
ARGUMENT_CHECK_FRAME = lazy_regex.compile(r"(?:^|/)(?:\w*_args|arg_utils|arguments|args)\.py$")
ARGUMENT_CHECK_FUNC = lazy_regex.compile(
    r"^(?:__post_init__|from_cli_args|(?:_?(?:check|validate|verify)_?\w*))$"
)
#: A frame that parses the job's arguments or builds its settings object from them:
#: argparse's and transformers' HfArgumentParser's ``parse_args``/``parse_known_args``/
#: ``parse_args_into_dataclasses``/``parse_json_file``..., a settings dataclass's
#: ``__post_init__``, ``from_cli_args``. An argument check reached through one runs on the
#: options the job was started with, whoever's file the check is in (an ms-swift checkout in
#: the user's home: ``swift/arguments/sft_args.py``, ``_check_fsdp2_compatibility``).
ARGUMENT_PARSE_FUNC = lazy_regex.compile(
    r"^(?:parse_(?:known_)?args\w*|parse_(?:json|yaml|dict)_file|parse_dict|__post_init__"
    r"|from_cli_args)$"
)
#: A check's message about options: two options that do not go together, a value an option
#: must take (``"FSDP2 with SHARDED_STATE_DICT is not compatible with save_only_model=True"``,
#: ``"--load_best_model_at_end requires ..."``, ``"tp_size must be ..."``).
ARGUMENT_MESSAGE = lazy_regex.compile(
    r"(?i)\b(?:is not compatible with|(?:are|is) (?:mutually )?(?:incompatible|exclusive)"
    r"|incompatible with|cannot be (?:used|combined|set) (?:with|together)|must (?:be|not be)"
    r"|should (?:be|not be)|requires?\b|is only (?:supported|available)|not supported (?:with|when)"
    r"|either set|please set)\b"
)


#: A function of a framework's own set-up checks by its name: a ``check``/``validate``/
#: ``verify``/``sanity`` word anywhere in it (DeepSpeed's ``_do_optimizer_sanity_check``,
#: ``_check_config``, ``validate_config``).
SETUP_CHECK_FUNC = lazy_regex.compile(r"(?:^|_)(?:check|validate|verify|sanity)(?:_|$)")
#: A check's message that names a key of a configuration file, with the value to give it:
#: DeepSpeed's ``Please add <"zero_allow_untested_optimizer": true> in the configuration file
#: to use it`` (deepspeed/runtime/engine.py), a JSON ``"key": value`` pair beside the words
#: config / configuration. ``key`` and ``value`` are captured.
CONFIG_KEY_MESSAGE = lazy_regex.compile(
    r"(?i)(?=.*\bconfig(?:uration)?\b)"
    r'.*?"(?P<key>[A-Za-z_][\w.]{0,80})"\s{0,3}:\s{0,3}(?P<value>true|false|null|-?\d[\w.]{0,20}|"[^"]{0,80}")'
)


def config_key_named(frames: list[Frame], message: str) -> dict[str, str] | None:
    """The configuration key and value ``message`` names (:data:`CONFIG_KEY_MESSAGE`) when the
    innermost of ``frames`` is a framework's own set-up check (library code, not the user's,
    in a :data:`SETUP_CHECK_FUNC` function): the framework checked the configuration it was
    given and says which key to set, so the fix is in the config file, whatever user code
    called the framework. ``{"config_key": ..., "config_value": ...}``, or ``None``."""
    if not frames or frames[-1].user or not SETUP_CHECK_FUNC.search(frames[-1].func):
        return None
    m = CONFIG_KEY_MESSAGE.match(message)
    if m is None:
        return None
    return {"config_key": m.group("key"), "config_value": m.group("value")}


def _in_check(frames: list[Frame]) -> bool:
    """Whether the innermost of ``frames`` is a settings check (:data:`ARGUMENT_CHECK_FRAME`
    file or :data:`ARGUMENT_CHECK_FUNC` function)."""
    where = frames[-1]
    path = where.file.replace("\\", "/")
    return bool(ARGUMENT_CHECK_FRAME.search(path) or ARGUMENT_CHECK_FUNC.match(where.func))


def _settings_check(frames: list[Frame], message: str) -> bool:
    """Whether a traceback's ``frames`` end in a check of the job's settings: the innermost
    frame is one (:data:`ARGUMENT_CHECK_FRAME` file or :data:`ARGUMENT_CHECK_FUNC` function)
    and either no frame is the user's (a library checked its own options), or the check was
    reached from argument parsing (:data:`ARGUMENT_PARSE_FUNC`) and ``message`` speaks of
    options (:data:`ARGUMENT_MESSAGE`): a framework installed from a checkout (its frames
    read as the user's) checking the command line is still a configuration error."""
    if not _in_check(frames):
        return False
    if not any(fr.user for fr in frames):
        return True
    return any(ARGUMENT_PARSE_FUNC.match(fr.func) for fr in frames) and bool(
        ARGUMENT_MESSAGE.search(message)
    )


def library_argument_checks(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """An ``AssertionError``/``ValueError`` raised by a library's check of its own settings,
    with no frame of the user's code in the traceback: a finding of
    :data:`LIBRARY_ARGUMENT_SIGNATURE` (class config-error) on the exception's line, one per
    rank. Mechanism: frameworks validate the options they were started with in the settings
    object's ``__post_init__`` or a ``from_cli_args``/``check_*``/``validate*`` function, in
    a module of arguments (:data:`ARGUMENT_CHECK_FRAME`, :data:`ARGUMENT_CHECK_FUNC`); the
    innermost frame being such a check, and no user frame on the way, means the values came
    from the command line or a config file, not from code the user wrote. Also such an
    exception from a framework's own set-up step (no user frame, innermost frame any
    function) whose message names an option of the job's printed launch command
    (rootrank.analysis.named_option: ``--padding_free`` in "does not support padding free"),
    with ``option``/``option_value`` captured for the fix; and a bare ``assert`` on the
    arguments object quoted in such a check, through the user's frames too (a framework run
    from a checkout: rootrank.analysis.asserted_setting), with ``asserted``/``options``
    captured; and a library's own check under the user's frames whose message names the
    parameter to set (rootrank.analysis.named_parameter: "max_steps has to be specified"),
    with ``parameter``/``printed`` captured. Lines another signature reads are left to it;
    any other traceback through the user's own code stays the generic exception (its
    arguments may be computed there)."""
    return exceptions_per_rank(
        LIBRARY_ARGUMENT_SIGNATURE,
        ARGUMENT_CHECK_TYPES,
        findings,
        state,
        library,
        lambda seen: _argument_check(seen, state),
    )


def _argument_check(seen: SeenException, state: ScanState) -> dict[str, str] | None:
    """The captures of :func:`library_argument_checks` for ``seen`` (``where``, ``check``,
    and the key, the asserted setting, the parameter or the job's option named), or ``None``
    when it is no library's own check."""
    exc = seen.exc
    if not exc.frames:
        return None
    keyed = config_key_named(exc.frames, exc.message)
    option = None
    asserted = None
    if keyed is None and _in_check(exc.frames):
        # a bare assert on the arguments inside the check (rootrank.analysis.asserted_setting)
        asserted = asserted_settings(exc.frames)
    if keyed is None and asserted is None and not _settings_check(exc.frames, exc.message):
        # a framework's own set-up step (no user frame) refusing a feature the job's
        # command line turned on (rootrank.analysis.named_option)
        if any(fr.user for fr in exc.frames):
            # a library's own check naming the parameter to set, under the user's
            # code that built the settings (rootrank.analysis.named_parameter)
            keyed = named_parameter(exc.frames, exc.message, state)
            if keyed is None:
                return None
        else:
            option = named_option(exc.message, state.launch.command)
            if option is None:
                return None
    if option is not None:
        keyed = {"option": option[0], "option_value": option[1]}
    keyed = keyed or asserted
    where = exc.frames[-1]
    path = where.file.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    return {"where": f"{name}:{where.line}", "check": where.func, **(keyed or {})}


def library_call_mismatches(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """A ``TypeError`` about a call's arguments (:data:`CALL_SIGNATURE_MESSAGE`) whose
    innermost frame is library code (not the user's: ``Frame.user``) is one installed package
    calling another with arguments the installed version of the callee does not take: a
    finding of :data:`LIBRARY_CALL_SIGNATURE` (class dependency-version-mismatch) on the
    exception's line, one per rank. Mechanism: CPython checks a call's arguments before it
    enters the callee, so the traceback ends at the caller's line; when that line is in a
    library (Megatron-Bridge calling megatron.core, accelerate calling torch), the two
    packages were released for different APIs of each other. A call from the user's own file
    stays the generic exception (its arguments are the user's to fix), and so does a call made
    by a config builder (:data:`CONFIG_BUILDER_FRAME`: the arguments are a config entry's keys),
    and a keyword the library's line only forwards (``**kwargs``) from the user's own call
    (:func:`_passed_through`).
    Lines another signature reads (a config dataclass given an unknown field) are left to it."""
    return exceptions_per_rank(
        LIBRARY_CALL_SIGNATURE, ("TypeError",), findings, state, library, _library_call
    )


def _library_call(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`library_call_mismatches` for ``seen`` (``callee``, ``arg``,
    ``caller``, ``caller_func``), or ``None`` when the call is the user's or a config's."""
    exc = seen.exc
    if not exc.frames or exc.frames[-1].user:
        return None
    m = CALL_SIGNATURE_MESSAGE.match(exc.message.strip())
    if m is None:
        return None
    caller = exc.frames[-1]
    if CONFIG_BUILDER_FRAME.search(caller.file.replace("\\", "/")):
        return None  # the arguments are a config entry's keys: the config's to fix
    if _passed_through(exc.frames, m.group("arg")):
        return None  # the user's own call gave the keyword: the user's to fix
    name = caller.file.replace("\\", "/").rsplit("/", 1)[-1]
    arg = m.group("arg") or m.group("arg3") or (m.group("arg2") or "").replace("'", "")
    return {
        "callee": m.group("callee"),
        "arg": arg,
        "caller": f"{name}:{caller.line}",
        "caller_func": caller.func,
    }


def _passed_through(frames: list[Frame], arg: str | None) -> bool:
    """Whether the unexpected keyword ``arg`` reached the callee through the library's
    ``**kwargs`` from a call in the user's own code: the innermost frame's quoted line
    forwards a ``**`` mapping and does not write ``arg=`` itself, and a frame of the user's
    is further out. Mechanism: ``from_pretrained(..., use_cache=False)`` collects the
    keywords it does not know into ``model_kwargs`` and calls ``cls(config, **model_kwargs)``:
    CPython's check fails on that line, inside the library, but the keyword is the one the
    user wrote; both frames belong to one package, so no version pair is at fault (heldout
    r24a case 10). ``False`` when the line is not quoted (nothing tells) or ``arg`` is
    ``None`` (a missing or surplus positional argument)."""
    if not arg or not frames or not any(fr.user for fr in frames[:-1]):
        return False
    code = frames[-1].code
    return "**" in code and f"{arg}=" not in code.replace(" ", "")


#: The GPU and CUDA build facts, and the cause their mismatch makes of a CUDA library error.
GPU_FACT_SIGNATURE = "gpu-and-cuda-build-named"
ARCH_MISMATCH_SIGNATURE = "gpu-newer-than-cuda-build"
#: GPU models (as the fact signature captures them) -> (architecture, first CUDA release
#: that builds for it), from NVIDIA's compute-capability table and the CUDA release notes
#: (https://developer.nvidia.com/cuda-gpus): sm_80 CUDA 11.0, sm_86 11.1, sm_89 and sm_90
#: 11.8, sm_100 and sm_120 12.8.
GPU_ARCH: tuple[tuple[str, str, tuple[int, int]], ...] = (
    (r"RTX ?30\d0|\bA10G?\b|\bA40\b|RTX A[456]000", "sm_86", (11, 1)),
    (r"\bA100\b|\bA30\b", "sm_80", (11, 0)),
    (r"RTX ?40\d0|\bL40S?\b|\bL4\b", "sm_89", (11, 8)),
    (r"\bG?H[128]00\b", "sm_90", (11, 8)),
    (r"\bG?B200\b", "sm_100", (12, 8)),
    (r"RTX ?50\d0", "sm_120", (12, 8)),
)
#: Classes of the errors a missing architecture shows as.
ARCH_SYMPTOM_CLASSES = frozenset({"cublas-cudnn-error", "cuda-driver-or-arch-mismatch"})


def _cuda_version(text: str) -> tuple[int, int] | None:
    """``"10.0"`` -> (10, 0); a wheel tag's ``"101"`` -> (10, 1), ``"118"`` -> (11, 8)."""
    if "." in text:
        major, _, minor = text.partition(".")
        return (int(major), int(minor or 0)) if major.isdigit() else None
    if text.isdigit() and len(text) == 3:
        return int(text[:2]), int(text[2])
    return None


def arch_mismatches(findings: list[Finding], library: Library) -> list[Finding]:
    """A GPU named in the log whose architecture needs a newer CUDA than a build version
    named in the log (the :data:`GPU_FACT_SIGNATURE` facts, :data:`GPU_ARCH`), with a CUDA
    library error (:data:`ARCH_SYMPTOM_CLASSES`) after the facts: a finding of
    :data:`ARCH_MISMATCH_SIGNATURE` on the line naming the CUDA build. The error signatures
    declare ``explained_by`` it. Several builds named: the oldest is taken only when no
    newer one satisfies the GPU (a log that names both is not a proof). Empty otherwise."""
    sig = library.signatures.get(ARCH_MISMATCH_SIGNATURE)
    facts = [f for f in findings if f.signature == GPU_FACT_SIGNATURE]
    if sig is None or not facts:
        return []
    gpus = [(f, f.captures["gpu"]) for f in facts if f.captures.get("gpu")]
    builds = [
        (f, v) for f in facts if (v := _cuda_version(f.captures.get("cuda") or "")) is not None
    ]
    if not gpus or not builds:
        return []
    errors = [
        f
        for f in findings
        if f.severity == "error"
        and f.failure_class in ARCH_SYMPTOM_CLASSES
        and f.signature != ARCH_MISMATCH_SIGNATURE
    ]
    if not errors:
        return []
    for gf, gpu in gpus:
        arch = next(((a, need) for pat, a, need in GPU_ARCH if regex_code.search(pat, gpu)), None)
        if arch is None:
            continue
        name, needs = arch
        if any(v >= needs for _, v in builds):
            continue
        bf, version = max(builds, key=lambda b: b[1])
        # (an environment report pasted below the error still describes its machine)
        error = min(errors, key=lambda e: e.order)
        return [
            Finding.of(
                sig,
                rank=None,
                host=None,
                time=bf.time,
                order=min(bf.order, gf.order),
                evidence=list(bf.evidence[:1]),
                captures={
                    "gpu": gpu,
                    "arch": name,
                    "needs": f"{needs[0]}.{needs[1]}",
                    "cuda": f"{version[0]}.{version[1]}",
                    "error": (error.evidence[0].text if error.evidence else error.title)[:160],
                },
            )
        ]
    return []


def earlier_faults(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """The faults of the attempts before a torchrun restart (``state.earlier_findings``:
    errors of kind ``cause`` that do not merely report a lost peer) when a finding of the
    last attempt declares ``explained_by: [restart]``: its failure may be the restart's own
    (rootrank.analysis.rules.restart_after_failure). Otherwise the earlier attempts stay out:
    the diagnosis is about the attempt that ended the job. Returns the same objects.
    A finding that declares ``explained_by: [retry]`` brings in only the earlier exception
    of the rank the last attempt failed on (rootrank.analysis.retried).
    A launcher's report of an earlier attempt's worker killed by a signal is read as the
    signal's finding (rootrank.analysis.signal_exit), added to ``state.earlier_findings``."""
    if not state.earlier_findings:
        return []

    def declared(f: Finding) -> tuple[str, ...]:
        return getattr(library.signatures.get(f.signature), "explained_by", ()) or ()

    if not any("restart" in declared(f) for f in findings):
        if any("retry" in declared(f) for f in findings):
            from rootrank.analysis.retried import retried_faults  # it reads the rules' Context

            return retried_faults(state, library)
        return _named_earlier(findings, state, library, declared)
    # an attempt's worker killed by a signal is known only by the agent's report of its
    # exit code (``failed (exitcode: -24) local_rank: 1``): read as the signal's finding
    # (rootrank.analysis.signal_exit), as the last attempt's report would be
    signals = signal_exit_findings(state.earlier_findings, library)
    state.earlier_findings.extend(signals)  # the earlier attempt's, as its report is
    errors = [
        f for f in state.earlier_findings if f.severity == "error" and "peer" not in declared(f)
    ]
    causes = [
        f
        for f in errors
        if (getattr(library.signatures.get(f.signature), "kind", None) or f.role) == "cause"
    ]
    if causes:
        return causes
    # an attempt that ended in a hang shows only its waiters' timeouts (symptoms of the rank
    # that never reached the collective): the hang is still the fault the restart came from,
    # and the initiator analysis reads that attempt's lines for the silent rank
    return [f for f in errors if f.failure_class == "collective-timeout"]


def _named_earlier(
    findings: list[Finding],
    state: ScanState,
    library: Library,
    declared: Callable[[Finding], tuple[str, ...]],
) -> list[Finding]:
    """The faults (errors of kind ``cause``: not a launcher's report of a failed child, nor
    its closing signals) of the attempts before the last (``state.earlier_findings``) whose
    failure class or signature id a finding of the last attempt names in its
    ``explained_by``: what
    an attempt left behind is what the next one starts from, so a fault of that kind there
    explains the next attempt's failure as it would in the same attempt (a save that failed
    for lack of space leaves a truncated checkpoint, and the resumed attempt's load of it
    fails: checkpoint-corrupt-or-wrong-format declares ``disk-full``). The edge is drawn by
    rootrank.analysis.rules.declared_explanations. Returns the same objects."""
    named = {n for f in findings for n in declared(f)}
    if not named:
        return []
    return [
        f
        for f in state.earlier_findings
        if f.severity == "error"
        and (f.failure_class in named or f.signature in named)
        and (getattr(library.signatures.get(f.signature), "kind", None) or f.role) == "cause"
    ]


def infer(findings: list[Finding], library: Library) -> list[Finding]:
    """Findings of ``inferred`` signatures, from comparing the findings of the signatures
    named in ``inferred.from`` across ranks:

    - the rank whose ``differs`` capture is the odd one out (at one SeqNum when the
      findings carry one) gets the finding;
    - ranks that split into groups on ``differs`` with no single odd rank (ranks 6 and 7 in
      BROADCAST at SeqNum 15170, ranks 0-3 in ALLREDUCE at 15173; or two ranks in two
      collectives) give a finding with no rank: the streams diverged and the log does not
      tell which side started. SeqNums
      further apart than :data:`~rootrank.analysis.compare.MAX_SEQNUM_LAG` belong to
      different process groups and prove nothing;
    - a size (``differs`` other than ``optype``/``collective``: a shape, a numel) is only
      compared within one collective: ranks that ran different ones desynced, whatever
      their sizes; two ranks that ran the same one with two sizes give a finding with no
      rank (a size mismatch, and nothing tells which of the two is off).

    Several comparisons may single out the same rank: one finding per rank, the most
    specific."""
    out: list[Finding] = []
    for sig in library.signatures.values():
        if not sig.inferred:
            continue
        group = [f for f in findings if f.signature in sig.inferred["from"]]
        key = sig.inferred["differs"]
        if key == "crossed":
            crossed = _crossed_counters(group, findings)
            if crossed is not None:
                base, rank, why = crossed
                out.append(_inferred(sig, base, rank, why))
            continue
        if key == "scale":
            apart = _scale_apart(group)
            if apart is not None:
                out.append(_inferred(sig, apart[0], None, apart[1]))
            continue
        if key == "ready":
            lone = _lone_submitter(group)
            if lone is not None:
                base, rank, op, why = lone
                found = _inferred(sig, base, rank, why)
                found.captures["tensor"] = op
                out.append(found)
            continue
        sizes = key not in ("optype", "collective")
        if sizes and len({f.captures.get("optype") for f in group if f.rank is not None}) > 1:
            continue  # different collectives: a desync, whatever their sizes
        if key == "numel" and _scale_apart(group) is not None:
            continue  # sizes orders of magnitude apart: different calls (differs: scale)
        seqnums = {f.captures.get("seqnum") for f in group}
        if len(seqnums) == 1 or (not sizes and _within_lag(group)):
            odd = odd_one_out(group, (key,))
            if odd.rank is not None:
                base = next(f for f in group if f.rank == odd.rank)
                out.append(_inferred(sig, base, odd.rank, odd.why))
                continue
            if odd.undecided and sizes:
                # two ranks, one collective, two sizes: a size mismatch, and the log does
                # not tell which of the two is off
                base = min((f for f in group if f.rank is not None), key=lambda f: f.order)
                out.append(_inferred(sig, base, None, odd.why))
                continue
        split = _diverged(group, key)
        if split is not None:
            base, why = split
            out.append(_inferred(sig, base, None, why))
    best: dict[int | None, Finding] = {}
    for f in out:
        if f.rank not in best or f.specificity > best[f.rank].specificity:
            best[f.rank] = f
    return list(best.values())


#: Element counts this many times apart at one SeqNum are two different calls (a gradient
#: bucket against a scalar), not one tensor built with two shapes.
SCALE_APART = 1000


def _scale_apart(group: list[Finding]) -> tuple[Finding, str] | None:
    """``differs: scale``: the ranks of ``group`` reported one SeqNum and one OpType with
    element counts (``numel``) :data:`SCALE_APART` times apart or more. A shape mismatch
    within one call changes a size by a fraction (a shorter last batch, a padded row); a
    gradient bucket of millions of elements against a 1-element metric, flag or barrier is
    two different collectives under one number: the ranks' streams diverged. ``(the first
    such finding, why)`` or ``None``."""
    ranked = [f for f in group if f.rank is not None]
    if len({f.captures.get("seqnum") for f in ranked}) != 1:
        return None
    if len({f.captures.get("optype", "").upper() for f in ranked}) != 1:
        return None
    counts = {r: int(v) for r, v in values_by_rank(ranked, "numel").items() if v.isdigit()}
    if len(counts) < 2:
        return None
    low, high = min(counts.values()), max(counts.values())
    if low <= 0 or high < low * SCALE_APART:
        return None
    small = [r for r, n in sorted(counts.items()) if n == low]
    big = [r for r, n in sorted(counts.items()) if n == high]
    if len(small) + len(big) != len(counts):
        return None
    why = say("numel_scale", small=ranks_word(small), big=ranks_word(big), low=low, high=high)
    return min(ranked, key=lambda f: f.order), why


def _lone_submitter(group: list[Finding]) -> tuple[Finding, int, str, str] | None:
    """``differs: ready``: a stall report that lists, per collective, the ranks that submitted
    it (Horovod's ``op [ready ranks: 2, 0, 1]``, captured as ``ready`` and, for the further
    ops of the same line, ``stalled_more``). When those sets are disjoint and one rank stands
    alone in its own op (:func:`~rootrank.analysis.compare.lone_submitter`), the ranks wait in
    different collectives: a desync started by that rank, not a slow rank.
    ``(base finding, rank, the lone op's name, why)`` or ``None``."""
    for f in group:
        ops = [(f.captures.get("tensor", ""), f.captures.get("ready", ""))] + regex_code.findall(
            r"([\w./:-]+) \[ready ranks: ([\d, ]+)\]", f.captures.get("stalled_more", "")
        )
        sets = [frozenset(int(x) for x in regex_code.findall(r"\d+", m)) for _, m in ops]
        lone = lone_submitter(sets)
        if lone is not None:
            others = sorted(set().union(*sets) - {lone})
            op = next(name for (name, _), s in zip(ops, sets, strict=True) if s == {lone})
            return f, lone, op, say("lone_submitter", rank=lone, others=format_ranks(others))
    return None


#: Collectives whose root (or sender) completes before its peers: a peer's progress past
#: one of them proves nothing about the other ranks (ProcessGroupNCCL's OpType names).
_ROOTED = frozenset({"BROADCAST", "REDUCE", "SCATTER", "GATHER", "SEND", "RECV", "RECVANYSOURCE"})


def _crossed_counters(
    group: list[Finding], findings: list[Finding]
) -> tuple[Finding, int, str] | None:
    """``differs: crossed``: the watchdog's PG status of two or more ranks of one process
    group (``failure detected by watchdog at work sequence id: W PG status: last enqueued
    work: Q, last completed work: C``, captured as ``timeout_work``, ``last_enqueued``,
    ``last_completed`` and ``pg``) whose counters cross: one rank R timed out in work W_R,
    every other rank completed W_R (``C_P >= W_R``), and R enqueued more work than each of
    them (``Q_R > Q_P``).

    Mechanism: a symmetric collective (all-gather, reduce-scatter, all-reduce) completes on a
    rank only once every member of the group issued it. A peer that completed the very work
    R is stuck in, while R issued more collectives than that peer, did not run the same
    collective as R under that number: the ranks' collective streams differ (a desync, not a
    slow rank, whose host would have enqueued less, and not a stalled link, which would hold
    the peer too). R, behind in completion and ahead in issue, ran collectives its peers
    never joined (rank-dependent work such as a checkpoint save on one rank): R diverged.
    ``findings`` supply R's OpType at W_R (from its ``WorkNCCL(SeqNum=W_R, OpType=...)``
    line); a rooted or point-to-point op (:data:`_ROOTED`) proves nothing. Returns ``(R's
    status finding, R, why)`` or ``None``."""

    def num(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.isdigit() else None

    status: dict[int, tuple[Finding, str | None, int, int, int]] = {}
    for f in group:
        work, queued, done = (
            num(f, "timeout_work"),
            num(f, "last_enqueued"),
            num(f, "last_completed"),
        )
        if f.rank is None or work is None or queued is None or done is None:
            continue
        status.setdefault(f.rank, (f, f.captures.get("pg"), work, queued, done))
    if len(status) == 1:
        return _ahead_of_dump_receivers(group, findings, status)
    if len(status) < 2 or len({v[1] for v in status.values()}) != 1:
        return None
    if next(iter(status.values()))[1] is None:
        return None
    crossed = [
        r
        for r, (_f, _pg, work, queued, _done) in status.items()
        if all(
            p_done >= work and queued > p_queued
            for p, (_pf, _ppg, _pw, p_queued, p_done) in status.items()
            if p != r
        )
    ]
    if len(crossed) != 1:
        return None
    rank = crossed[0]
    base, _pg, work, queued, done = status[rank]
    ops = {
        f.captures.get("optype", "").upper().lstrip("_")
        for f in findings
        if f.rank == rank and f.captures.get("seqnum") == str(work) and f.captures.get("optype")
    }
    if ops & _ROOTED:
        return None
    peers = sorted(p for p in status if p != rank)
    p_done = min(status[p][4] for p in peers)
    p_queued = max(status[p][3] for p in peers)
    why = say(
        "counters_crossed",
        rank=rank,
        work=work,
        queued=queued,
        done=done,
        peers=ranks_word(peers),
        peer_done=p_done,
        peer_queued=p_queued,
    )
    return base, rank, why


def _ahead_of_dump_receivers(
    group: list[Finding],
    findings: list[Finding],
    status: dict[int, tuple[Finding, str | None, int, int, int]],
) -> tuple[Finding, int, str] | None:
    """The one rank R whose watchdog timed out (``failure detected by watchdog at work
    sequence id: 42 PG status: last enqueued work: 42, last completed work: 41``, ``status``
    holds only R) against the peers that did not time out but received R's dump signal
    (``Received a dump signal due to a collective timeout from rank 3 ... Last enqueued NCCL
    work: 41, last completed NCCL work: 41.``, captured as ``timeout_from_rank``,
    ``last_enqueued``, ``last_completed``; PyTorch 2.5+).

    Mechanism: a peer with every collective it enqueued completed has nothing outstanding in
    NCCL; when it completed exactly what R completed, R's extra enqueued work is a collective
    that peer never issued: R ran one collective more than its peers (a rank-dependent
    collective), the ranks' sequences differ and R is the rank that diverged. Not when R's
    work is a rooted or point-to-point op (:data:`_ROOTED`: one side may legitimately run
    ahead), and every receiver must name R. Returns ``(R's status finding, R, why)`` or
    ``None``."""

    def num(f: Finding, key: str) -> int | None:
        raw = f.captures.get(key, "")
        return int(raw) if raw.isdigit() else None

    ((rank, (base, _pg, work, queued, done)),) = status.items()
    receivers: dict[int, tuple[int, int]] = {}
    for f in group:
        sender, p_queued, p_done = (
            num(f, "timeout_from_rank"),
            num(f, "last_enqueued"),
            num(f, "last_completed"),
        )
        if f.rank is None or f.rank == rank or p_queued is None or p_done is None:
            continue
        if sender != rank:
            return None
        receivers.setdefault(f.rank, (p_queued, p_done))
    if not receivers or queued <= done:
        return None
    if any(q != d or d != done or work <= q for q, d in receivers.values()):
        return None
    ops = {
        f.captures.get("optype", "").upper().lstrip("_")
        for f in findings
        if f.rank == rank and f.captures.get("seqnum") == str(work) and f.captures.get("optype")
    }
    if ops & _ROOTED:
        return None
    why = say(
        "ahead_of_dump_receivers",
        rank=rank,
        work=work,
        done=done,
        peers=ranks_word(sorted(receivers)),
    )
    return base, rank, why


def _inferred(sig: Signature, base: Finding, rank: int | None, why: str) -> Finding:
    """A finding of ``sig`` at ``base``'s first line and time, naming ``rank`` (with
    ``base``'s host only when a rank is named), ``base``'s captures plus ``why``."""
    return finding_at(
        sig,
        base,
        {**base.captures, "why": why},
        rank=rank,
        order=base.order,
        host=base.host if rank is not None else None,
        time=base.time,
    )


def _within_lag(group: list[Finding]) -> bool:
    """Whether the SeqNums ``group`` carries (if any) are within
    :data:`~rootrank.analysis.compare.MAX_SEQNUM_LAG` of each other (one process group)."""
    seq = [int(f.captures["seqnum"]) for f in group if f.captures.get("seqnum", "").isdigit()]
    return not seq or max(seq) - min(seq) <= MAX_SEQNUM_LAG


def _diverged(group: list[Finding], key: str) -> tuple[Finding, str] | None:
    """When ranks split into groups on ``key`` (another collective) within a SeqNum window:
    the first finding of the smallest group and the sentence that describes the split."""
    if key not in ("optype", "collective"):
        return None
    groups = split_groups(group, key)
    if len(groups) < 2 or not _within_lag(group):
        return None
    seq_of = {f.rank: f.captures.get("seqnum") for f in group if f.rank is not None}
    parts = []
    for value, ranks in sorted(groups.items(), key=lambda kv: len(kv[1])):
        at = {seq_of.get(r) for r in ranks} - {None}
        parts.append(
            f"{ranks_word(ranks)} in {value}" + (f" (SeqNum {at.pop()})" if len(at) == 1 else "")
        )
    smallest = min(groups.values(), key=len)
    if len(smallest) == 1 and rank_ahead(group, smallest[0]) and not _past_symmetric(group):
        # the lone rank's other collective is a later one: it completed the collective
        # the others wait in, so the streams did not diverge (compare.rank_ahead); not when
        # the others wait in a symmetric collective, which completes nowhere until every
        # member issued it: the lone rank ran another call under that SeqNum
        return None
    base = next(f for f in group if f.rank == smallest[0])
    return base, say("diverged_groups", groups=" while ".join(parts))


def _past_symmetric(group: list[Finding]) -> bool:
    """Whether exactly two ranks report, in two different operations, and the one at the
    lower SeqNum waits in a symmetric collective (not one of
    :data:`~rootrank.analysis.compare.ROOTED_OPS`): the other rank is past a SeqNum whose
    symmetric call could not complete without the first, so it ran another call there."""
    ops = values_by_rank(group, "optype")
    seqs = {r: int(v) for r, v in values_by_rank(group, "seqnum").items() if v.isdigit()}
    if len(ops) != 2 or len(set(ops.values())) != 2 or set(seqs) != set(ops):
        return False
    low = min(seqs, key=lambda r: seqs[r])
    if list(seqs.values()).count(seqs[low]) != 1:
        return False
    return ops[low].upper().lstrip("_") not in ROOTED_OPS


def single_node_proof(state: ScanState, local: int | None = None) -> str | None:
    """Why the log shows a single-node run (so a local rank is the global rank), or ``None``.

    Proofs, any one of which is enough unless the log shows several nodes (``--nnodes=2``,
    ``group_rank=1``, ``max_nodes : 4``, two hosts among the ranks or in torchelastic's
    summaries): ``--nnodes=1`` / ``--nnodes 1:1`` / ``nnodes=1`` / ``max_nodes : 1`` /
    ``group_world_size=1`` (torchrun's agent) or ``--standalone``; the world size equal to
    ``--nproc-per-node``; one agent that stopped or lost at least world-size workers (so it
    ran them all); a printed ``torchrun``/``torch.distributed.run``/``launch`` command with
    no node flag anywhere in the log (``--nnodes`` defaults to ``1:1``); last, an agent that
    sent closing signals, with no node flag, no larger world size and no rank or local rank
    at or beyond the count of its workers (a paste of one node's agent lines from a
    multi-node job would show that node's ranks above it, or its flags); mp.spawn's parent
    terminating its other processes likewise; a weak last reading, said as such: for a
    failed worker's ``local`` rank with no node flag, no world size, no torchelastic
    summary and no rank printed above ``local`` (a later node's workers print ranks from its
    offset up, above every local rank), one node. One host in a summary is *not* a proof:
    every agent's summary lists only its own node's workers.
    """
    facts = state.launch
    hosts = set(state.hosts.values()) | {e.host for e in state.elastic if e.host}
    if facts.multi_node or node_count(hosts, state.label_hosts) > 1 or facts.srun_agent_tasks:
        # srun ran torchrun's agents as tasks: one per node, and the log need not print
        # how many (an srun label is the agent's task id, its local_rank no global rank)
        return None
    if facts.single_node:
        return f"the log sets one node ({facts.single_node[0]})"
    world = state.world_size
    if world and facts.nproc_per_node and world == facts.nproc_per_node:
        return f"the world size {world} equals --nproc-per-node {facts.nproc_per_node}"
    if facts.nproc_per_node and world and world > facts.nproc_per_node:
        return None
    sizes = facts.parallel_sizes
    if world is None and len(sizes) == 3:
        world = sizes["data"] * sizes["pipeline"] * sizes["tensor"]
    if world and len(facts.agent_pids) >= world:
        return f"torchrun's agent ran all {world} workers of the job itself (pids {', '.join(str(p) for p in sorted(facts.agent_pids))})"
    if facts.launch_command and not facts.node_flags:
        return f"the torchrun command ({facts.launch_command}) sets no --nnodes, which defaults to one node"
    workers = len(facts.agent_pids)
    if (
        workers >= 2
        and facts.closing_pids
        and not facts.node_flags
        and (world is None or world <= workers)
        and all(r < workers for r in state.ranks_seen)
        and (local is None or local < workers)
        and all(e.local_rank is None or e.local_rank < workers for e in state.elastic)
    ):
        # torchrun's agent stops every worker of its node when one fails (api.py ``_close``):
        # its closing signals plus the failed worker are the node's workers. With no node
        # flag, no larger world and no rank beyond them, the log shows one node.
        return (
            f"torchrun's agent stopped or lost {workers} workers (pids"
            f" {', '.join(str(p) for p in sorted(facts.agent_pids))}) and the log sets no"
            f" --nnodes and shows no rank above {workers - 1}"
        )
    spawned = len(facts.spawn_kill_pids) + 1
    if (
        spawned >= 2
        and not facts.node_flags
        and (world is None or world <= spawned)
        and all(r < spawned for r in state.ranks_seen)
        and (local is None or local < spawned)
    ):
        # mp.spawn's parent terminates every other process it started when one fails
        # (spawn.py, ProcessContext.join): those and the failed one are its processes, all on
        # its node; with no node flag, no larger world and no rank beyond them, one node
        return (
            f"mp.spawn's parent terminated its {spawned - 1} other processes after one failed"
            " and the log sets no --nnodes and shows no rank beyond them"
        )
    if (
        local is not None
        and not facts.node_flags
        and world is None
        and all(r <= local for r in state.ranks_seen)
        and not state.elastic
        and (facts.nproc_per_node is None or local < facts.nproc_per_node)
    ):
        # Nothing in the log speaks of another node or of a rank above this local rank (a
        # later node's workers are ranks from its offset up, above every local rank): read as
        # the one node a single agent's paste most often comes from, and say so.
        return (
            "the log shows no other node (no --nnodes, no second host, no rank above local"
            f" rank {local}), so it is read as one node"
        )
    return None


def same_agent_rank(
    state: ScanState, pid: int, local: int, by_pid: dict[int, ElasticFailure]
) -> tuple[int, str] | None:
    """The global rank of worker ``pid`` (``local``: its local rank) from its agent's other
    workers in torchrun's failure summaries (``by_pid``: summary entries by worker pid), with
    the sentence of reasoning; ``None`` when its agent is unknown, none of that agent's
    other workers is in a summary with its local rank, or they disagree.

    Mechanism: one agent (the glog header's pid on its ``failed ... local_rank: L (pid: N)``
    and closing-signal lines, ``LaunchFacts.worker_agents``) runs the workers of one node, with
    global ranks ``node rank x nproc + local rank``. After a restart (``--max-restarts``) the
    agent's new workers get the same node rank: torchelastic's dynamic rendezvous numbers the
    agents by their sorted node descriptors (host, agent pid, local id;
    ``dynamic_rendezvous.py``, ``enumerate(sorted(state.participants))``), the same agents
    each round. So the offset ``rank - local_rank`` of one of that agent's workers in the last
    attempt's summary is the offset of its workers in the attempt before."""
    agents = state.launch.worker_agents
    agent = agents.get(pid)
    if agent is None:
        return None
    offsets = [
        (entry.rank - entry.local_rank, other, entry)
        for other, entry in sorted(by_pid.items())
        if other != pid
        and agents.get(other) == agent
        and entry.rank is not None
        and entry.local_rank is not None
    ]
    if len({o for o, _, _ in offsets}) != 1:
        return None
    offset, other, entry = offsets[0]
    rank = offset + local
    return rank, say(
        "local_rank_same_agent",
        local=local,
        pid=pid,
        rank=rank,
        agent=agent,
        other=other,
        other_rank=entry.rank,
        other_local=entry.local_rank,
    )


def global_ranks_from_local(findings: list[Finding], state: ScanState) -> str:
    """Give a global rank to findings that only carry torchrun's ``local_rank`` capture
    (rule 5), merging a mapped finding into the rank's own finding of the same signature
    (``findings`` is changed in place). Returns the sentence of reasoning, or ``""`` when
    nothing was mapped."""
    local_only = [
        f for f in findings if f.rank is None and f.captures.get("local_rank", "").isdigit()
    ]
    if not local_only:
        return ""
    by_pid = {
        e.pid: e for e in state.elastic if e.pid is not None and e.rank is not None and e.rank >= 0
    }
    why = ""
    for f in local_only:
        local = int(f.captures["local_rank"])
        pid = f.captures.get("pid", "")
        entry = by_pid.get(int(pid)) if pid.isdigit() else None
        if entry is not None and (entry.local_rank is None or entry.local_rank == local):
            f.rank = entry.rank
            why = why or say("local_rank_summary", pid=pid, local=local, rank=entry.rank)
            continue
        proof = single_node_proof(state, local)
        if proof:
            f.rank = local
            why = why or say("local_rank_single_node", local=local, proof=proof)
            continue
        same = same_agent_rank(state, int(pid), local, by_pid) if pid.isdigit() else None
        if same is not None:
            f.rank, same_why = same
            why = why or same_why
    if why:
        for f in local_only:
            if f.rank is None:
                continue
            for e in f.evidence:
                e.rank = f.rank
            state.ranks_seen.add(f.rank)
            # The rank's own finding of the same signature stays the one reported; the
            # agent's line joins it as further evidence.
            own = next(
                (
                    g
                    for g in findings
                    if g is not f and g.signature == f.signature and g.rank == f.rank
                ),
                None,
            )
            if own is not None:
                own.count += f.count
                own.evidence.extend(f.evidence[: max(0, MAX_EVIDENCE - len(own.evidence))])
                own.order = min(own.order, f.order)
                if own.time is None:
                    own.time = f.time
                for k, v in f.captures.items():
                    own.captures.setdefault(k, v)
                findings.remove(f)
    return why
