"""The entry filled for this job: the root cause's signature entry (summary, mechanism,
fix, confirm, verify) rendered with the values the log gives (captures, rank, host, world
size, the exception's own message), the fix variant the evidence selects
(:mod:`.variants`), the user's own location (:mod:`.frames`) and commands that fit the job
(:mod:`.commands`).

:mod:`rootrank.analysis` decides *what* the root cause is; this package decides *what to
tell the user to do* about it.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import TYPE_CHECKING, Any

from rootrank import lazy_regex, regex_code
from rootrank.entry.commands import (
    blank_masked_hosts,
    config_file,
    divisor_values,
    fill_path_blanks,
    fit,
    launch_of,
    ready,
    unshown_launch,
    with_parallel_size,
)
from rootrank.entry.divisible import divisible_values, missing_path
from rootrank.entry.frames import (
    call_sites,
    command_log_dir,
    crash_user_line,
    last_words,
    launcher_report,
    location_step,
    notebook_cell,
    notebook_verify,
    rank_output_file,
    root_exception,
    setting_step,
    short,
    stalled_lines,
    user_frame,
    waiting_step,
)
from rootrank.entry.hang_capture import (
    initiator_last_line,
    larger_share,
    last_steps,
    lines_before,
    rank_own_lines,
    rank_own_output,
    rank_stacks,
    source_line_above,
    with_last_words,
)
from rootrank.entry.loss_trend import loss_trend
from rootrank.entry.method_call import method_call
from rootrank.entry.split_group import neighbouring_sizes
from rootrank.entry.standalone import standalone_verify, traceback_packages
from rootrank.entry.variants import (
    Facts,
    agreed_values,
    choose,
    custom_backward,
    data_frame,
    directive_how,
    initiator_output_missing,
    library_raise,
    local_module_frame,
    lone_raiser,
    message_directive,
    passed_in,
    placeholder_argument,
    rank_list,
    rank_outside_world,
    ranks_share_path,
    run_phase,
    several_agents_one_node,
    spared_ranks,
    uneven_progress,
    worker_on_same_gpu,
)
from rootrank.model import Finding, Fix, FixVariant, InitiatorInfo, Related, RootCause, Symptom
from rootrank.ranklines import MIN_RANKS, rank_settings
from rootrank.scan import ENV_HEAD, ScanState, odd_setting
from rootrank.signatures import Library, Signature
from rootrank.tracebacks import collective_call

if TYPE_CHECKING:  # the type only: rootrank.regex_code builds patterns without the package
    import regex

#: Characters of the exception message a fix may quote (``{message}``).
MAX_MESSAGE_CHARS = 300

_PLACEHOLDER = lazy_regex.compile(r"\{([a-z_][a-z0-9_]*)\}")

#: Where a message may be cut: after a sentence's or a clause's end (``.``, ``!``, ``?``,
#: ``;``) and the space after it (``4.35 GiB`` has no space after its dot: never cut there).
_CLAUSE_END = lazy_regex.compile(r"(?<=[.!?;])\s+")
#: A module name (``torch``, ``torch.distributed``); one with a dot (its package and leaf).
_MODULE_NAME = lazy_regex.compile(r"[A-Za-z_]\w*(?:\.\w+)*")
_DOTTED_MODULE = lazy_regex.compile(r"\w+(?:\.\w+)+")
#: The interpreter a command line starts (``python3``, ``/opt/conda/bin/python``).
_INTERPRETER = lazy_regex.compile(r"(?:\S*/)?python[\d.]*(?=\s)")


def quote_message(message: str, limit: int = MAX_MESSAGE_CHARS, keep: str | None = None) -> str:
    """``message`` (an exception's message, str) shortened to about ``limit`` characters for
    a fix to quote: whole sentences or clauses from its start, the ones dropped replaced by
    ``…``, never a cut inside a number or a word (a cut mid-number misquotes the figure).
    ``keep`` (a regex, the chosen fix variant's ``when: message``) names the part the advice
    rests on: the sentence that holds its match is kept too, after the first, even when it
    lies past ``limit`` (the allocator's "8.56 GiB is reserved by PyTorch but unallocated"
    at the end of a long CUDA OOM message). A first sentence longer than ``limit`` alone is
    cut at the last space before ``limit``, with ``…``."""
    if len(message) <= limit:
        return message
    sentences = [s for s in _CLAUSE_END.split(message) if s]
    must: set[int] = set()
    if keep:
        try:
            m = regex_code.search(keep, message, regex_code.IGNORECASE)
        except regex_code.error:
            m = None
        if m is not None:
            at = 0
            for i, s in enumerate(sentences):
                start = message.find(s, at)
                end = start + len(s)
                at = end
                if start < m.end() and m.start() < end:
                    must.add(i)
    kept: set[int] = {0, *must}
    size = sum(len(sentences[i]) + 1 for i in kept)
    for i in range(1, len(sentences)):
        if i in kept:
            continue
        if size + len(sentences[i]) + 1 > limit:
            break
        kept.add(i)
        size += len(sentences[i]) + 1
    out: list[str] = []
    for i, s in enumerate(sentences):
        if i in kept:
            if len(s) > limit:
                cut = s.rfind(" ", 0, limit)
                s = (s[:cut] if cut > 0 else s[:limit]).rstrip(" ,;:") + " …"
            out.append(s)
        elif out and out[-1] != "…":
            out.append("…")
    return " ".join(out)


_UNKNOWN = {"rank": "<rank>", "host": "<host>"}
#: "rank {rank}" / "host {host}" / "rank {initiating_rank}" when the log does not tell: a
#: phrase, not a placeholder (a blank would nest inside a blank: ``<pid of rank <rank>>``).
_UNKNOWN_PHRASES = {
    "rank": "the failing rank",
    "host": "the failing host",
    "initiating_rank": "the initiating rank",
    "iteration": "the failing iteration",
    "peer_rank": "another rank",
}
#: The word before each of :data:`_UNKNOWN_PHRASES`' placeholders ("iteration {iteration}").
_PHRASE_WORD = {"host": "host", "iteration": "iteration", "peer_rank": "rank"}
#: Each of :data:`_UNKNOWN_PHRASES`' placeholders after its word, capitalised and not
#: (``Host {host}``, ``host {host}``), with the phrase it becomes, by key.
_UNKNOWN_PLACES = {
    key: [
        (lazy_regex.compile(rf"\b{said_as} \{{{key}\}}"), phrase_as)
        for said_as, phrase_as in ((word.capitalize(), phrase.capitalize()), (word, phrase))
    ]
    for key, phrase in _UNKNOWN_PHRASES.items()
    for word in (_PHRASE_WORD.get(key, "rank"),)
}
#: A Windows drive at the start of a path (``C:/``).
_DRIVE = lazy_regex.compile(r"[A-Za-z]:/")


def peer_error(
    root: Finding, findings: list[Finding], library: Library, state: ScanState
) -> str | None:
    """Another rank's own error, in words (``"rank 1's ValueError (line 40)"``), or ``None``:
    the first exception the scan kept with a rank other than ``root``'s, else the first
    finding of a ``role: cause`` signature on another rank. A root with no rank has no peer
    to compare with (``None``). From the scan state and the findings."""
    if root.rank is None:
        return None
    for seen in state.exceptions:
        if seen.rank is not None and seen.rank != root.rank:
            name = seen.exc.type.rsplit(".", 1)[-1]
            return f"rank {seen.rank}'s {name} (line {seen.exc.log_line})"
    for f in findings:
        sig = library.signatures.get(f.signature)
        if f.rank is not None and f.rank != root.rank and sig is not None and sig.role == "cause":
            line = f.evidence[0].line if f.evidence else None
            return f"rank {f.rank}'s {f.title}" + (f" (line {line})" if line else "")
    return None


def waiter_step(
    state: ScanState,
    root: Finding,
    initiating: int | None,
    seen: Any,
    masker: Any | None,
    values: dict[str, Any],
) -> str | None:
    """When the initiating rank printed no traceback of its own (``seen`` is ``None``) and the
    root cause's traceback is another rank's (a waiter's, a victim's), the step that says so:
    the waiter's line in the user's code (``train.py:20 (in record)``) is where that rank
    waited, and the cause is what the initiating rank was doing at its last own line
    (``values["initiator_last_line"]``, when the log shows it). ``None`` otherwise. From the
    scan state (the waiter's traceback: :func:`user_frame`)."""
    if initiating is None or seen is not None or root.rank is None or root.rank == initiating:
        return None
    frame = user_frame(state, root, root.rank, masker)
    if frame is None:
        return None
    func = f" (in {frame.func})" if frame.func else ""
    last = values.get("initiator_last_line")
    doing = (
        f"what rank {initiating} was doing at its last own line, {last}"
        if last and "line " in str(last)
        else f"what rank {initiating} was doing then (it printed no traceback)"
    )
    return (
        f"{short(frame.file)}:{frame.line}{func} is where rank {root.rank} waited (its"
        f" traceback), not the cause: the cause is {doing}."
    )


def unknown_words(sig: Signature) -> dict[str, str]:
    """The signature's ``entry.unknown`` mapping (``{field: words}``): what its texts say for
    a field the log did not carry (``peer``: "the peer process"); empty when it has none.
    Data from the signature's YAML; a value that is not a string is ignored."""
    given = sig.entry.get("unknown") or {}
    return {str(k): v for k, v in given.items() if isinstance(v, str)}


def render(template: str, values: dict[str, Any], *, keep_unknown: bool = False) -> str:
    """Fill ``{name}`` placeholders from ``values``. An unknown name becomes ``<name>``
    ("rank {rank}"/"host {host}"/"rank {initiating_rank}"/"iteration {iteration}": "the
    failing rank"/"the failing host"/"the initiating rank"/"the failing iteration",
    capitalised as the template was), or stays as written with
    ``keep_unknown`` (code, where braces may be Python's). Other braces (JSON, shell
    ``${VAR}``) are left alone."""

    if not keep_unknown:
        for key, places in _UNKNOWN_PLACES.items():
            if values.get(key) is None:
                for place, phrase_as in places:
                    template = place.sub(phrase_as, template)

    def sub(m: regex.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0) if keep_unknown else _UNKNOWN.get(m.group(1), f"<{m.group(1)}>")
        return str(value)

    if not keep_unknown:
        template = drop_unknown_fields(template, values)
    return _PLACEHOLDER.sub(sub, template)


#: A parenthesised aside of a template that names fields: ``({optype} SeqNum {seqnum})``,
#: ``(SeqNum {seqnum}, {optype})``; no nested parentheses.
_ASIDE = lazy_regex.compile(r" ?\(([^()\n]*\{[a-z_][a-z0-9_]*\}[^()\n]*)\)")
#: A field of a collective's record a log line may not carry, and the noun that stands for it
#: outside an aside when it is unknown (torch 2.5+'s watchdog line "failure detected by
#: watchdog at work sequence id: N" names no OpType).
_UNKNOWN_NOUNS = {"optype": "collective"}
#: The fields of a collective's record (ProcessGroupNCCL's ``WorkNCCL(SeqNum=, OpType=,
#: NumelIn=, ...)``) that one watchdog line format carries and another does not: dropped
#: when unknown (:func:`drop_unknown_fields`). Any other unknown field stays a blank for the
#: user to fill (``<ckpt>`` in a command), since a command without it would not run.
_RECORD_FIELDS = frozenset(
    {"optype", "seqnum", "numel", "numel_out", "shape", "dtype", "pg", "timeout_ms"}
)
#: Outside an aside, the words around an unknown record field that read without it (a
#: dump-signal line, ``Received a dump signal due to a collective timeout from rank 3``,
#: carries neither the SeqNum nor the timeout): ``(field, pattern, replacement)``, applied in
#: order. A SeqNum after the collective's noun or OpType is dropped (``in the collective
#: SeqNum {seqnum}`` reads ``in the collective``), elsewhere it becomes the collective that
#: timed out (``passes SeqNum {seqnum}``); a timeout's length before "timeout" is dropped
#: (``within the {timeout_ms} ms timeout`` reads ``within the timeout``).
_UNKNOWN_REWORDS = (
    ("seqnum", lazy_regex.compile(r"(?<=\bcollective|[A-Z_]{3,}) SeqNum \{seqnum\}"), ""),
    ("seqnum", lazy_regex.compile(r"\bSeqNum \{seqnum\}"), "the collective that timed out"),
    ("timeout_ms", lazy_regex.compile(r"\{timeout_ms\} ms (?=[\w-]*\s?timeout\b)"), ""),
)
#: An aside part that is nothing but fields (``{why}``, ``{func}: {err}``): dropped when none
#: of them is known, whatever the field (a sentence reads without an empty aside).
_BARE_FIELDS = lazy_regex.compile(r"(?:\s*\{[a-z_][a-z0-9_]*\}[\s:;/=,-]*)+")
_NOUN_ARTICLE = lazy_regex.compile(
    r"(?i)(?:\b(?:a|an|the|that|this|its|each|same|one|point-to-point)\s)$"
)


def drop_unknown_fields(template: str, values: dict[str, Any]) -> str:
    """``template`` without the fields ``values`` does not fill, where the sentence reads
    without them: in a parenthesised aside, a comma-separated part whose fields are all
    unknown is dropped (the whole aside when none is left), and an unknown field beside known
    ones is dropped from its part (``({optype} SeqNum {seqnum})`` with no OpType reads ``(SeqNum
    40231)``, with neither nothing at all); outside an aside an unknown field of
    :data:`_UNKNOWN_NOUNS` becomes its noun (``in {optype}`` reads ``in the collective``).
    Only a collective record's fields (:data:`_RECORD_FIELDS`) are dropped from a part with
    other words; an aside part that is nothing but unknown fields of any name (``({why})``,
    :data:`_BARE_FIELDS`) is dropped too. Any other stays for :func:`render` (a blank, or a
    phrase such as ``rank {rank}``). A template with no unknown field is returned as it is."""

    def unknown(name: str) -> bool:
        return values.get(name) is None and name in _RECORD_FIELDS

    def missing(name: str) -> bool:
        return values.get(name) is None

    if not any(missing(n) for n in _PLACEHOLDER.findall(template)):
        return template

    def aside(m: regex.Match[str]) -> str:
        kept: list[str] = []
        for part in m.group(1).split(", "):
            names = _PLACEHOLDER.findall(part)
            if names and all(unknown(n) for n in names):
                continue
            if names and all(missing(n) for n in names) and _BARE_FIELDS.fullmatch(part):
                continue  # an aside part that is only unknown fields: "({why})" says nothing
            for n in names:
                if unknown(n):
                    part = regex_code.sub(rf" ?\{{{n}\}} ?", " ", part).strip()
            kept.append(part)
        if not kept:
            return ""
        lead = " " if m.group(0).startswith(" ") else ""
        return f"{lead}({', '.join(kept)})"

    template = _ASIDE.sub(aside, template)

    for name, noun in _UNKNOWN_NOUNS.items():
        if not unknown(name):
            continue
        token = "{" + name + "}"
        out: list[str] = []
        rest = template
        while (at := rest.find(token)) >= 0:
            before = rest[:at]
            out.append(before + (noun if _NOUN_ARTICLE.search(before) else f"the {noun}"))
            rest = rest[at + len(token) :]
        template = "".join(out) + rest
    for name, pattern, replacement in _UNKNOWN_REWORDS:
        if unknown(name):
            template = pattern.sub(replacement, template)
    return template


#: A loading call that passes its file as a plain string literal (no f-string braces):
#: ``torch.load("ckpt/last.pt")``, ``safe_open('model.safetensors', ...)``.
_LOAD_CALL = lazy_regex.compile(
    r"\b(?:torch\.load|load_file|safe_open|load_checkpoint|load_state_dict_from_url|from_pretrained)"
    r"\(\s*[rb]?(?P<q>[\"'])(?P<path>[^\"'{}\n]{1,240})(?P=q)"
)


def loaded_path(codes: list[str]) -> str | None:
    """The file the first of ``codes`` (source lines a traceback quotes, innermost first)
    that calls a loader with a literal path passes to it, or ``None``."""
    for code in codes:
        m = _LOAD_CALL.search(code)
        if m:
            return m["path"]
    return None


#: Classes of a failed write: the directory the job was writing to is the one the
#: verification checks.
_WRITE_CLASSES = ("disk-full", "filesystem-permission")


def save_target_before(state: ScanState, root: Finding) -> str | None:
    """The target the job last announced saving to (``ScanState.save_target``) as
    ``<target>/.``, so that :func:`rootrank.entry.commands.fill_path_blanks` fills
    ``<output_dir>`` with the target itself, when the announcement is in the root cause's
    own source before its first evidence line; else ``None``. Mechanism: a write that fails
    with no path in its message (torch.save's "PytorchStreamWriter failed writing file
    data/5: file write failed") was writing where the framework had just said it saves."""
    target = state.save_target
    if target is None or not root.evidence:
        return None
    path, line, where = target
    first = root.evidence[0]
    if first.path != path or line >= first.line:
        return None
    return where.rstrip("/") + "/."


#: The standard library's thread and process bootstrap files (a target function runs under them).
_BOOTSTRAP = lazy_regex.compile(
    r"(?:^|[/\\])(?:threading|multiprocessing[/\\](?:process|spawn|popen_\w+))\.py$"
)


def entry_script(state: ScanState, root: Finding) -> str | None:
    """The entry script: as the launcher names it (torchelastic's ``x.py FAILED`` title, a
    printed ``torchrun ... x.py``), else ``-m pkg.mod`` for a module launch the launcher names
    (:attr:`rootrank.scan.LaunchFacts.module`), else the file name of the user's ``<module>``
    frame in the root cause's traceback or any other of the log (a cut one too); ``None``
    when the log names none."""
    if state.launch.script:
        return state.launch.script
    if state.launch.module:  # ``torchrun -m pkg.server``: rerun the module, not a file of it
        return f"-m {state.launch.module}"
    frames = [(str(f.get("file", "")), f.get("func"), f.get("user")) for f in root.frames]
    # A chained traceback keeps its <module> frame in another link of the chain; a traceback
    # the log cuts before its exception line (an excerpt that ends inside the next rank's
    # traceback, ``[rank0]:   File "/root/x/orpo.py", line 104, in <module>``) still shows
    # the script its process ran: a ``<module>`` frame is the entry script wherever it is.
    frames += [(f.file, f.func, f.user) for seen in state.exceptions for f in seen.exc.frames]
    frames += [(f.file, f.func, f.user) for seen in state.cut_tracebacks for f in seen.exc.frames]
    for file, func, user in frames:
        path = file.replace("\\", "/")
        name = path.rsplit("/", 1)[-1]
        if func == "<module>" and user and name.endswith(".py"):
            # a relative path is the script as the command typed it (``python scripts/train.py``
            # from the job's directory: Python before 3.9 keeps argv[0] as given), and reruns
            # from there; an absolute one is named by its file name
            relative = not path.startswith(("/", "~")) and not _DRIVE.match(path)
            # (not a path a report shortened: ``.../lit-llama/train.py``)
            shown = relative and "<" not in path and "..." not in path
            return path if shown else name
    # No ``<module>`` frame: a thread's or a ``multiprocessing.Process``'s traceback starts in
    # the standard library's bootstrap (threading.py ``_bootstrap_inner``, multiprocessing's
    # process.py ``_bootstrap``; faulthandler's crash stack likewise), and the first user frame
    # under it is the target function. When every user frame of the log's tracebacks is in one
    # ``.py`` file, that file started the thread or process: it is the entry script.
    if any(_BOOTSTRAP.search(file) for file, _func, _user in frames):
        names = {
            file.replace("\\", "/").rsplit("/", 1)[-1]
            for file, _func, user in frames
            if user and not _BOOTSTRAP.search(file)
        }
        if len(names) == 1 and next(iter(names)).endswith(".py"):
            return names.pop()
    return hydra_task_script(state) or _main_frame_script(state)


#: A frame of an installed package (not a script a user runs by its path: a framework's
#: example script under /opt/NeMo/examples is one).
_INSTALLED = lazy_regex.compile(r"/(?:site|dist)-packages/|/lib/python[\d.]+/|/bin/[^/]+$")


def _main_frame_script(state: ScanState) -> str | None:
    """The file name of the script whose ``main`` function is the outermost frame of the
    log's tracebacks, when every traceback that starts in user code starts in that one file's
    ``main``: the frames above it were cut (Hydra's ``@hydra.main`` prints the traceback from
    the task function on; a paste that starts at the entry's ``main``), and ``main`` is the
    entry script's own (a framework's example script too, outside any installed package:
    :data:`_INSTALLED`). ``None`` otherwise (a traceback that starts in another user
    function, ``forward`` of a model file, names no entry)."""
    names = set()
    for seen in (*state.exceptions, *state.cut_tracebacks):
        if not seen.exc.frames:
            continue
        first = seen.exc.frames[0]
        path = first.file.replace("\\", "/")
        if not first.user and _INSTALLED.search(path):
            continue  # an installed package's frame (a launcher's ``main``): no script
        name = path.rsplit("/", 1)[-1]
        if first.func != "main" or not name.endswith(".py"):
            return None
        names.add(name)
    return names.pop() if len(names) == 1 else None


def hydra_task_script(state: ScanState) -> str | None:
    """The file name of a Hydra app's script, from the traceback printed right after Hydra's
    "Error executing job with overrides" line (:attr:`rootrank.scan.LaunchFacts.hydra_line`):
    Hydra cuts its own frames from the traceback it prints (unless HYDRA_FULL_ERROR=1), so it
    starts at the task function, in the script that defines ``@hydra.main``. ``None`` without
    that report, or when that traceback's outermost frame is not the user's code."""
    after = state.launch.hydra_line
    if state.launch.hydra_overrides is None or not after:
        return None
    following = [s for s in state.exceptions if s.exc.log_line > after and s.exc.frames]
    if not following:
        return None
    first = min(following, key=lambda s: s.exc.log_line).exc.frames[0]
    name = first.file.replace("\\", "/").rsplit("/", 1)[-1]
    return name if first.user and name.endswith(".py") else None


#: Template values from the analysis (not from a capture); see :mod:`.variants`.
_ANALYSIS_VALUES = ("initiating_rank", "initiator_why", "odd_op", "others_op", "reporting_rank")


#: A progress bar's frame (tqdm: ``  21%|██▏       | 4000/18819 [00:20<00:43, 344.05 examples/s]``).
_PROGRESS_BAR = lazy_regex.compile(r"\d+%\|[^|]{0,60}\|\s*\d+/\d+")


def analysis_facts(
    root: Finding, initiating: int | None, initiator: InitiatorInfo | None
) -> dict[str, Any]:
    """What the causal analysis found, for variants and templates: ``initiator`` (the
    deciding strategy's name or ``None``), ``initiating_rank``, ``initiator_why`` (its
    sentence), ``odd_op``/``others_op`` (the initiating rank's ``OpType`` and the one the
    others run, from a fingerprint's ``optype``/``peer_optype`` captures with
    ``self_rank``/``peer_rank``; ``None`` unless they differ), ``reporting_rank`` (the rank
    whose line the root is, when the analysis named another rank as initiating: the rank
    that waited in a point-to-point op for it; else ``None``)."""
    caps = root.captures
    odd = others = None
    mine, theirs = caps.get("optype"), caps.get("peer_optype")
    if initiating is not None and mine and theirs and mine != theirs:
        if caps.get("self_rank") == str(initiating):
            odd, others = mine, theirs
        elif caps.get("peer_rank") == str(initiating):
            odd, others = theirs, mine
    why = initiator.why if initiator is not None and initiator.why else None
    if why is None and initiator is not None and initiating is not None:
        # a strategy that names the root's own rank (named_by_root) states no separate reason;
        # a template quoting {initiator_why} must not show it as a blank to fill in
        from rootrank.analysis.reasons import say  # the analysis imports this package

        why = say("own_report", rank=initiating)
    return {
        "initiator": initiator.strategy if initiator is not None else None,
        "initiating_rank": initiating,
        "initiator_why": why,
        "odd_op": odd,
        "others_op": others,
        "reporting_rank": (
            root.rank if root.rank is not None and initiating not in (None, root.rank) else None
        ),
    }


def odd_line_lead(state: ScanState, root: Finding, rank: int) -> tuple[str, str, str] | None:
    """The fix's first step when ``rank``, the rank of the root cause ``root``, printed a line
    before the failure that differs from the same line of every other rank
    (:func:`rootrank.analysis.oddline.odd_line_parts_in`: ``10 items (int8)`` where the
    others printed ``20 items (int16)``): that difference is on the way to its error (it
    read another input, or read it another way), so the fix starts from it: ``(the step, the
    rank's differing text, the difference quoted in one sentence for a fix that leads with
    another step)``. ``None`` when no line singles out ``rank``, or it comes at or
    after the root's line in the same file. Used when the fix is its signature's general
    variant and quotes no odd value itself (:func:`fill_entry`)."""
    if len(state.ranks_seen) < MIN_RANKS:
        return None  # too few ranks to single one out (and a tiny log loads no oddline)
    from rootrank.analysis.oddline import odd_line_parts_in  # the analysis imports this package

    found = odd_line_parts_in(state)
    if found is None or found[0] != rank:
        return None
    _, mine, theirs, others, ln = found
    at = root.evidence[0] if root.evidence else None
    if at is not None and at.path == ln.path and ln.line >= at.line:
        return None
    ranks = ", ".join(str(r) for r in others[:8]) + (" ..." if len(others) > 8 else "")
    many = "s" if len(others) > 1 else ""
    step = (
        f"Make what rank {rank} printed before its error, `{mine}`, the same as on rank{many}"
        f" {ranks} (`{theirs}`; {ln.path.rsplit('/', 1)[-1]}:{ln.line}: `{ln.text[:160]}`):"
        f" rank {rank} read another input, or read it another way, and its error follows from"
        f" that; find where the script sets that value for rank {rank} (its own file or shard,"
        " a per-rank default taken when a file or setting is missing, a branch on the rank) and"
        " fix it there, as a check at the line that raised would only stop it there."
    )
    quote = (
        f"What singles rank {rank} out in the log: it printed `{mine}` where rank{many} {ranks}"
        f" printed `{theirs}` (line {ln.line}: `{ln.text[:160]}`)."
    )
    return step, mine, quote


def thread_handoff_step(thread: str | None, rank: int | None) -> str:
    """The fix's step for an exception that ended a thread, not its process (Python's
    threading.excepthook prints "Exception in thread <name>:" and returns: Lib/threading.py,
    ``Thread._bootstrap_inner``), when the root's signature fixed the exception itself: the
    process went on without the thread, and whatever it handed to the thread or waited for
    from it blocked, which is why the job stopped. ``thread``: its name, if printed; ``rank``:
    the rank whose thread it was, if known."""
    name = f"thread {thread!r}" if thread else "the thread"
    of = f" of rank {rank}" if rank is not None else ""
    return (
        f"The exception ended only {name}{of}, not its process: the process went on without"
        " it, and the code that handed work to the thread or waited for its result (a bounded"
        " queue.put the thread drained, a queue.get, a join, an event it was to set) can block"
        " there for good: that rank then stops progressing, and the other ranks wait for it in"
        " their next collective. Besides the fix above, make the handoff fail instead of"
        " hanging: catch the exception in the thread's target and pass it to the main loop"
        " (put it on a queue the loop checks, or use concurrent.futures and call"
        " future.result()), and give the blocking call a timeout that checks"
        " `thread.is_alive()` (q.put(item, timeout=10) in a loop that raises when the thread"
        " is dead)."
    )


def reference_rank(peer: object, initiating: int | None, reporting: int | None) -> int:
    """The rank a template compares the initiating rank with (``{reference_rank}``): the
    peer the root's line names (``peer_rank``: DDP's "in process 0") when that is not the
    initiating rank itself; else the rank whose line the root is (a rank that compared
    itself with the initiating one: rank 3's report against rank 0, when rank 0 is the odd
    one); else rank 1 for rank 0 and rank 0 for any other. Never ``initiating`` (a sentence
    "compare rank 0 and rank 0" compares nothing: heldout r23b case 02)."""
    text = str(peer) if peer is not None else ""
    if text.isdigit() and int(text) != initiating:
        return int(text)
    if reporting is not None and reporting != initiating:
        return reporting
    return 1 if initiating == 0 else 0


def fill_entry(
    sig: Signature,
    root: Finding,
    *,
    group: list[Finding],
    findings: list[Finding],
    state: ScanState,
    library: Library,
    initiating: int | None,
    initiating_host: str | None,
    masker: Any | None,
    initiator: InitiatorInfo | None = None,
) -> RootCause:
    """The ``root_cause`` of the diagnosis (schema ``rootrank.diagnosis/1``) for the
    root-cause finding ``root`` of signature ``sig``: ``group`` holds the findings of the
    same signature, ``findings`` all findings, ``initiating``/``initiating_host`` what the
    causal analysis concluded (``None`` when the log does not tell). ``masker`` (a
    :class:`rootrank.mask.Masker`, optional) masks the log's values before they fill the
    templates. ``initiator`` (the analysis's :class:`~rootrank.model.InitiatorInfo`) lets
    fix variants select on how the initiating rank was found."""
    values: dict[str, Any] = {
        k: (masker.text(v) if masker else v) for k, v in root.captures.items()
    }
    for other in group:  # a value the root's line did not carry (a SeqNum on another line of it)
        for k, v in other.captures.items():
            if k not in values and v:
                values[k] = masker.text(v) if masker else v
    if not values.get("seqnum") and values.get("timeout_work"):
        # torch 2.4+'s watchdog line names the timed-out work "work sequence id: N" / "Timeout
        # at NCCL work: N" (captured as timeout_work): that number is the work's SeqNum
        values["seqnum"] = values["timeout_work"]
    rc_rank = initiating if initiating is not None else root.rank
    host_value = initiating_host or root.host
    values.update(
        {"rank": rc_rank, "host": masker.host(host_value) if masker and host_value else host_value}
    )
    values["reference_rank"] = reference_rank(values.get("peer_rank"), rc_rank, root.rank)
    if state.world_size:
        values["world_size"] = state.world_size
    # a dimension a parallel size does not divide ("28 is not divisible by 8"): the sizes that do
    values.update(
        divisor_values(str(values.get("numerator", "")), str(values.get("denominator", "")))
    )
    script = entry_script(state, root)
    if script and masker:
        script = masker.text(script)
    shown = [e.text for e in root.evidence] + [str(f.get("file", "")) for f in root.frames]
    shown += [f.file for seen_exc in state.exceptions for f in seen_exc.exc.frames] + list(
        root.captures.values()
    )
    named = [rc_rank] if rc_rank is not None else []
    named += [int(v) for k, v in root.captures.items() if "rank" in k and str(v).isdigit()]
    launch = launch_of(state, script, shown, named)
    if masker and launch.command:  # the printed command line carries tokens, user names...
        launch = dataclasses.replace(launch, command=masker.text(launch.command))
    if masker and launch.rdzv_host:  # a host name, masked as the log's other hosts are
        launch = dataclasses.replace(launch, rdzv_host=masker.text(launch.rdzv_host))
    if masker and launch.model:  # a path: a user's home or group folder is masked
        launch = dataclasses.replace(launch, model=masker.text(launch.model))

    named_module = str(root.captures.get("module") or "")
    if _MODULE_NAME.fullmatch(named_module):
        # the log names the module the job imported (or failed to): a check may import it
        launch = dataclasses.replace(
            launch, libraries=launch.libraries | {named_module.split(".", 1)[0]}
        )

    seen = root_exception(state, root, rc_rank)
    frame = user_frame(state, root, rc_rank, masker)
    sites = call_sites(state, root, masker)
    stalled = stalled_lines(state, root, masker)
    frames = (
        list(root.frames)
        if root.frames and root.rank == rc_rank and not launcher_report(state, root)
        else (
            [
                {"file": f.file, "line": f.line, "func": f.func, "user": f.user}
                for f in seen.exc.frames[-12:]
            ]
            if seen
            else []
        )
    )
    message = (
        seen.exc.message
        if seen is not None and seen.exc.message
        else (root.evidence[0].text.strip() if root.evidence else "")
    )
    own_message = bool(message) and "message" not in values
    if own_message:
        quoted = quote_message(message)
        values["message"] = masker.text(quoted) if masker else quoted
    local = root.captures.get("local_rank")
    if local is not None and str(local).isdigit():
        # torchrun's --log-dir folder of that worker is named by its local rank
        # (logs/<run id>/attempt_<n>/<local rank>/), which the failure summary gives
        values["local_rank_dir"] = str(local)
    # a divisibility check's message that names both numbers (rootrank.entry.divisible)
    values.update(divisible_values(message))
    if "missing_path" not in values:
        found = missing_path(message)
        # shell-quoted for the check command (a path with a blank or a masked "<user>")
        values.update({k: shlex.quote(masker.text(v) if masker else v) for k, v in found.items()})
    if frame is not None:
        values["user_loc"] = f"{frame.file}:{frame.line}"
        values["user_file"] = frame.file  # the user's own file the traceback names last
    # the statement that raised, as the traceback quotes it (``assert a % b == 0``)
    raised_code = seen.exc.frames[-1].code if seen is not None and seen.exc.frames else ""
    if raised_code:
        values["raised_code"] = masker.text(raised_code) if masker else raised_code
        # the raising frame itself (``utils/reward.py:37 (in pick)``), whoever's code it is:
        # an exception with no message is read by the function that raised it
        last = seen.exc.frames[-1] if seen is not None else None
        if last is not None:
            tail = "/".join(last.file.replace("\\", "/").split("/")[-2:])
            raised_at = f"{tail}:{last.line} (in {last.func})"
            values["raised_at"] = masker.text(raised_at) if masker else raised_at
        if seen is not None:  # the method call that reached it (a base class's placeholder)
            values.update(method_call(seen.exc.frames, masker))
    if state.launch.endpoint_no_port is not None:  # a rendezvous endpoint with no port
        host = state.launch.endpoint_no_port
        values["endpoint_host"] = masker.text(host) if masker else host
    if seen is not None and seen.exc.thread_died:
        # the thread's name as threading.excepthook printed it ("prefetch", "Thread-3 (load)")
        values["thread"] = f"thread {seen.exc.thread!r}" if seen.exc.thread else "thread"

    # the file the failing call loads, as the traceback's quoted source passes it literally
    # (``state = torch.load("ckpt/last.pt")``), when the message names none
    if seen is not None and not any(values.get(k) for k in ("ckpt", "file", "file2")):
        loaded = loaded_path([f.code for f in reversed(seen.exc.frames) if f.code])
        if loaded:
            values["ckpt"] = masker.text(loaded) if masker else loaded
            # the log shows the file (in the quoted source): a command may name it
            name = loaded.replace("\\", "/").rsplit("/", 1)[-1]
            launch = dataclasses.replace(launch, known=launch.known | {name})
    for k in ("file", "file2"):
        if values.get(k) and not values.get("ckpt"):
            values["ckpt"] = values[k]

    # a call in the traceback that asks for rank >= world_size (init_process_group(rank=1, world_size=1))
    outside = rank_outside_world([f.code for f in seen.exc.frames if f.code]) if seen else None
    if outside is not None:
        values["call_code"] = masker.text(outside[0]) if masker else outside[0]
        values["call_rank"], values["call_world_size"] = str(outside[1]), str(outside[2])

    analysed = analysis_facts(root, initiating, initiator)
    values.update({k: v for k, v in analysed.items() if v is not None and k in _ANALYSIS_VALUES})
    if masker and values.get("initiator_why"):
        values["initiator_why"] = masker.text(values["initiator_why"])

    from rootrank.analysis.initiator import formed_after  # the analysis imports this package

    # a value the root's own line did not carry comes from another line of its group (the
    # SeqNum/OpType on a what(): line of the same watchdog), as for the templates above
    captured = dict(root.captures)
    if "method_call" in values:  # the call that reached a bare raise (rootrank.entry.method_call)
        captured["method_call"] = values["method_call"]
    if "div_n" in values:  # the numbers a divisibility message names (rootrank.entry.divisible)
        captured["div_n"] = values["div_n"]
    for other in group:
        for k, v in other.captures.items():
            if k not in captured and v:
                captured[k] = v
    # where torchrun wrote the rank's own stderr, when the log shows its --log-dir tree
    own_output = rank_output_file(state, rc_rank)
    if own_output is not None:
        values["rank_output"] = masker.text(own_output) if masker else own_output
        captured["rank_output"] = own_output
    else:
        # no error file named the tree, but the printed command passed --log-dir: the ranks'
        # own output is under it (rootrank.entry.frames.command_log_dir)
        log_dir = command_log_dir(state.launch.command or "")
        if log_dir is not None:
            values["log_dir"] = masker.text(log_dir) if masker else log_dir
            captured["log_dir"] = log_dir
    tracebacks = [(str(f.get("file", "")), f.get("line")) for f in root.frames] + [
        (f.file, f.line)
        for seen_exc in (*state.exceptions, *state.cut_tracebacks)
        for f in seen_exc.exc.frames
    ]
    facts = Facts(
        captures=captured,
        texts=[e.text for e in root.evidence]
        + ([seen.exc.message] if seen is not None and seen.exc.message else [])
        # the message as the root's match read it, joined across a wrap (scan._complete_captures)
        + ([str(root.captures["message"])] if root.captures.get("message") else [])
        + [e.text for f in group if f is not root for e in f.evidence],
        frames=[f"{f['file']}:{f.get('func', '')}" for f in frames],
        thread=(seen.exc.thread or "") if seen is not None and seen.exc.thread_died else None,
        command=state.launch.command or "",
        code=raised_code,
        user_code=next((f.code for f in reversed(seen.exc.frames) if f.user and f.code), "")
        if seen is not None
        else "",
        rank_outside_world=outside[0] if outside is not None else None,
        endpoint_no_port=state.launch.endpoint_no_port,
        call_sites_differ=bool(sites),
        user_frame=frame is not None,
        crash_user_line=crash_user_line(state, root, masker),
        stalled_line=stalled[0] if stalled else None,
        raised_in_user=bool(frames and frames[-1].get("user")),
        raised_in_library=library_raise(frames, frame is not None),
        custom_backward=custom_backward(frames),
        cut_traceback=initiating is not None
        and initiating in state.cut_traceback_ranks
        and not any(x.rank == initiating for x in state.exceptions),
        launchers=sorted(
            state.launch.launchers | ({launch.launcher} if launch.launcher else set())
        ),
        stacks=sorted(state.stacks),
        findings={
            key: f.title
            for f in findings
            if f is not root and f.signature != root.signature
            for key in (f.signature, f.failure_class)
        },
        initiator=analysed["initiator"],
        initiator_known=initiating is not None,
        odd_op=analysed["odd_op"],
        others_op=analysed["others_op"],
        ops_differ=bool(
            root.captures.get("optype")
            and root.captures.get("peer_optype")
            and root.captures["optype"] != root.captures["peer_optype"]
        ),
        uneven_progress=uneven_progress(state.progress.last()),
        group_formed=formed_after(root, findings, library, state),
        peer_erred=peer_error(root, findings, library, state),
        peers_seen=root.rank is not None and bool(state.ranks_seen - {root.rank}),
        agree=agreed_values([(f.rank, f.captures) for f in group]),
        module_local=local_module_frame(captured.get("module"), tracebacks),
    )
    module = str(values.get("module") or "")
    if _DOTTED_MODULE.fullmatch(module):  # a dotted module: its package and file
        values["module_parent"], values["module_leaf"] = module.rsplit(".", 1)
        values["module_top"] = module.split(".", 1)[0]
    if facts.module_local:
        values["module_file"] = masker.text(facts.module_local) if masker else facts.module_local
    facts.worker_on_same_gpu = worker_on_same_gpu(facts.texts, state.launch.worker_pids())
    from rootrank.analysis.binders import store_binders  # the analysis imports this package

    facts.store_binders = store_binders(state.exceptions)
    facts.log_text = [text for _, _, text in (*state.heads, *state.tails)]
    # one command that shows every rank's stack while the job hangs, for its own launcher
    stacks_cmd = rank_stacks(launch, facts.launchers, facts.stacks, state.launch.module)
    values["rank_stacks"] = masker.text(stacks_cmd) if masker else stacks_cmd
    # what the log already shows of a hang: the last step each rank printed
    values["last_steps"] = last_steps(state.progress.last())
    if initiating is not None and root.evidence:
        ev = root.evidence[0]
        own = initiator_last_line([*state.heads, *state.tails], ev.path, ev.line, initiating)
        if own is not None:
            quoted = f"line {own[0]}: `{own[1]}`"
            facts.initiator_last_line = masker.text(quoted) if masker else quoted
            values["initiator_last_line"] = facts.initiator_last_line
        share = larger_share(
            [*state.heads, *state.tails], ev.path, ev.line, initiating, state.ranks_seen
        )
        if share is not None:
            facts.larger_share = True
            head, total, peer = share
            values["share_totals"] = (
                f"`{head} .../{total}` where the other ranks count to "
                + ", ".join(str(p) for p in peer)
            )
        facts.rank_lines = with_last_words(
            rank_own_lines([*state.heads, *state.tails], ev.path, ev.line, initiating),
            last_words(state, initiating, ev.path, ev.line),
        )
    if root.evidence:  # what the job was doing just before (a dataset map, loading shards)
        ev = root.evidence[0]
        facts.doing = lines_before([*state.heads, *state.tails], ev.path, ev.line)
        if not facts.code and not frames:
            # a traceback's tail pasted without its frame headers: the source line it kept
            # right above the exception line is the statement that raised
            facts.code = source_line_above([*state.heads, *state.tails], ev.path, ev.line)
        # the nearest progress bar (``Map (num_proc=4):  21%|...| 4000/18819``), else the nearest line
        bars = [t for t in facts.doing if _PROGRESS_BAR.search(t)]
        if facts.doing:
            line = (bars or facts.doing)[0]
            values["doing_line"] = masker.text(line) if masker else line
    # the interpreter the job's own command ran (``python3``, ``/opt/conda/bin/python``), for
    # a step that reruns it another way; ``python`` when the log shows no python command
    interp = _INTERPRETER.match(ENV_HEAD.sub("", state.launch.command or ""))
    values["python"] = interp[0] if interp else "python"
    # a rank named only by a launcher's report of its exit: where its own output went
    facts.initiator_output_missing = initiator_output_missing(
        initiating,
        [x.rank for x in (*state.exceptions, *state.cut_tracebacks)],
        [(f.rank, f.failure_class, f.evidence[0].text if f.evidence else "") for f in findings],
    )
    if facts.initiator_output_missing:
        where_output = rank_own_output(launch, facts.launchers, facts.stacks, initiating)
        values["rank_own_output"] = masker.text(where_output) if masker else where_output
        report = facts.initiator_output_missing
        values["launcher_report"] = masker.text(report) if masker else report
    launch_lines = [state.launch.command or ""] + [
        e.text for f in findings if f.role != "cause" for e in f.evidence[:4]
    ]
    facts.placeholder_argument = placeholder_argument([t for t in launch_lines if t])
    if facts.placeholder_argument:
        arg = facts.placeholder_argument
        values["placeholder_arg"] = masker.text(arg) if masker else arg
    if facts.raised_in_library:
        loc = facts.raised_in_library
        values["raised_loc"] = masker.text(loc) if masker else loc
    if facts.crash_user_line:
        values["crash_line"] = facts.crash_user_line
    if stalled:
        values["stalled_line"], values["waited_line"] = stalled
    facts.several_agents = several_agents_one_node(
        state.launch.agent_processes,
        state.launch.multi_node,
        ((e.rank, e.local_rank) for e in state.elastic),
    )
    facts.ranks_share_path = ranks_share_path([root, *(f for f in group if f is not root)])
    facts.multi_node = launch.multi_node
    odd_rank = root.rank if root.rank is not None else initiating
    # (the heads are read for settings only when there is a rank to compare)
    odd = odd_setting(rank_settings(state), odd_rank) if odd_rank is not None else None
    odd_lead = None
    if odd is not None:
        name, mine, theirs, odd_line, others = odd
        ranks = ", ".join(str(r) for r in others[:8]) + (" ..." if len(others) > 8 else "")
        said = f"{name} {mine} on rank {odd_rank}, {theirs} on rank{'s' if len(others) > 1 else ''} {ranks}"
        facts.setting_differs = said
        values["setting_diff"] = said
        at_root = root.evidence[0].line if root.evidence else None
        if at_root is None or odd_line < at_root:
            odd_lead = (
                f"Rank {odd_rank} ran with another setting than every other rank: {said}"
                f" (line {odd_line}, printed before the failure). Make it the same on every"
                f" rank: find where rank {odd_rank} gets {name} (a per-rank or per-node config"
                f" file, environment variable or argument, a rank-dependent branch) and fix it"
                " there; the failure follows from it."
            )
    line_lead = None
    if odd_rank is not None and root.role == "cause":
        # (used when the setting's lead is not: a variant chose its own fix)
        line_lead = odd_line_lead(state, root, odd_rank)
    facts.run_frames = [
        text
        for seen_exc in (*state.exceptions, *state.cut_tracebacks)
        for f in seen_exc.exc.frames
        for text in (f"{f.file}:{f.func}", f.code)
        if text
    ] + facts.frames
    at = root.evidence[0] if root.evidence else None
    facts.phase, facts.phase_why = run_phase(
        at.path if at else "",
        at.line if at else 0,
        list(state.progress.last().values()),
        state.run_ended,
        state.start_seen or bool(state.launch.command),
    )
    values["phase_why"] = masker.text(facts.phase_why) if masker else facts.phase_why
    facts.loss_trend, facts.loss_trend_why = loss_trend(state.metrics)
    if launch.processes == "several":
        facts.neighbouring_sizes = neighbouring_sizes(
            root.captures.get("shape_a"), root.captures.get("shape_b")
        )
        if facts.neighbouring_sizes:
            values["neighbouring_sizes"] = facts.neighbouring_sizes
    values["loss_trend_why"] = facts.loss_trend_why
    # the data pipeline ran the user's code when it raised (a collate_fn, a __getitem__)
    facts.data_loc = data_frame(frames)
    if facts.data_loc:
        values["data_loc"] = masker.text(facts.data_loc) if masker else facts.data_loc
    # the sentence of the exception's own message that says what to change
    exc_said: str | None = (
        seen.exc.message if seen is not None and seen.exc.message else root.captures.get("message")
    )
    # a requirement ("expected 16 features, got 15") is advice when a library raised it about
    # its arguments (the traceback's innermost frame is the library's), and a description of a
    # bad value when the user's own line or assert raised it (or the log shows no frame)
    by_library = bool(
        seen is not None
        and seen.exc.frames
        and not seen.exc.frames[-1].user
        and not seen.exc.type.endswith("AssertionError")
    )
    facts.directive = message_directive(exc_said, requirement=by_library) if exc_said else None
    if facts.directive:
        values["directive"] = masker.text(facts.directive) if masker else facts.directive
        how = directive_how(facts.directive, exc_said or "")
        values["directive_how"] = masker.text(how) if masker else how
        # the whole message, when the directive is only a part of it
        whole = (
            ""
            if facts.directive.strip() == (exc_said or "").strip()
            else f' The whole message: "{values.get("message", "")}".'
        )
        values["directive_context"] = whole
    # the same exception on most ranks, not on the others (code that runs on some ranks only)
    if seen is not None:
        same_exc = [
            x.rank
            for x in state.exceptions
            if x.exc.type == seen.exc.type and x.exc.message == seen.exc.message
        ]
        facts.spared = spared_ranks(same_exc, state.ranks_seen)
        facts.lone = lone_raiser(same_exc, state.ranks_seen)
    inner_user = [f for f in seen.exc.frames if f.user and f.code] if seen is not None else []
    if inner_user:  # the innermost line of the user's own code, as the traceback quotes it
        values["user_code"] = masker.text(inner_user[-1].code) if masker else inner_user[-1].code
    if seen is not None:  # the caller that passed the failing line its values
        facts.passed = passed_in(
            [(f.file, f.line, f.func, f.user, f.code) for f in seen.exc.frames]
        )
    if facts.passed is not None:
        loc, code, names = facts.passed
        values["caller_loc"] = masker.text(loc) if masker else loc
        values["caller_code"] = masker.text(code) if masker else code
        values["passed_names"] = ", ".join(f"`{n}`" for n in names)
        values["passed_verb"] = "is" if len(names) == 1 else "are"
    if facts.spared is not None:
        values["raised_ranks"] = rank_list(facts.spared[0])
        values["spared_ranks"] = rank_list(facts.spared[1])
    elif facts.lone is not None:
        values["spared_ranks"] = rank_list(facts.lone[1])
    variant, chosen = choose(sig.fix, facts)
    if facts.request_setting is not None:  # the setting the failed allocation is sized by
        values["setting"], values["setting_value"] = facts.request_setting[:2]
        values["setting_bytes"] = str(facts.request_setting[2])
    said_rx = (variant.get("when") or {}).get("rank_said") if chosen is not None else None
    if isinstance(said_rx, str):  # the rank's own line the variant rests on, quoted in its text
        hits = [(n, t) for n, t in facts.rank_lines if regex_code.search(said_rx, t)]
        if hits:
            said_line = f"line {hits[-1][0]}: `{hits[-1][1]}`"
            values["rank_said_line"] = masker.text(said_line) if masker else said_line
    doing_rx = (variant.get("when") or {}).get("doing") if chosen is not None else None
    if isinstance(doing_rx, str):  # the line the variant rests on, not the nearest bar
        doing_hits = [t for t in facts.doing if regex_code.search(doing_rx, t)]
        if doing_hits:
            values["doing_line"] = masker.text(doing_hits[0]) if masker else doing_hits[0]
    keep = (variant.get("when") or {}).get("message") if chosen is not None else None
    if own_message and isinstance(keep, str):  # the quote keeps what the variant rests on
        quoted = quote_message(message, keep=keep)
        values["message"] = masker.text(quoted) if masker else quoted
    if chosen is not None and masker:  # "why" quotes what the log said
        chosen = {"id": chosen["id"], "why": masker.text(chosen["why"])}
    is_default = chosen is None or variant is sig.fix.get("variants", [None])[-1]
    code = variant.get("code", sig.fix.get("code", {}) if is_default else {})

    # a field the log did not carry reads as the words the signature gives for it
    # (``entry.unknown``), never as the raw ``<field>`` placeholder
    for name, words in unknown_words(sig).items():
        if values.get(name) is None:
            values[name] = words
    steps = [fit(render(s, values), launch) for s in variant["steps"]]
    if seen is not None:
        call = collective_call(seen.exc.frames)
        exc_name = seen.exc.type.rsplit(".", 1)[-1]
        if exc_name == "KeyboardInterrupt":
            # Python raises it for SIGINT at whatever line runs then: where the process was
            # when it was stopped, not what it did wrong
            action = f"was {'in ' + call + ' ' if call else ''}when SIGINT stopped it"
        else:
            action = f"was in {call}" if call else f"raised {exc_name}"
    elif root.failure_class == "collective-timeout" and root.role != "cause":
        action = "waited"  # a hang's report (a watchdog's stack): the process waited there
    else:
        action = None
    who = None
    if rc_rank is not None and root.captures.get("absent_rank") == str(rc_rank):
        # the traceback is a witness's: the ranks that waited for rc_rank, which never came
        who = f"the ranks waiting for rank {rc_rank}"
        action = f"were in {call}" if seen is not None and call else "waited"
    elif seen is not None and seen.exc.thread_died:
        # the exception ended a thread of the process, not the process
        name = f"thread {seen.exc.thread!r}" if seen.exc.thread else "a thread"
        who = f"{name} of rank {rc_rank}" if rc_rank is not None else name
    elif initiating is None:
        # no initiating rank: the same failure on several ranks is theirs alike, not the
        # first reporter's (its line is only where the traceback is shown)
        alike = sorted({f.rank for f in group if f.rank is not None})
        if len(alike) >= 2:
            who = "ranks " + ", ".join(map(str, alike[:-1])) + f" and {alike[-1]}"
            if action is not None and action.startswith("was in "):
                action = "were in " + action[len("was in ") :]
    where = location_step(frame, sites, rc_rank, action, launch.world, who=who)
    if facts.request_setting is not None:
        # the cause is a config value, not a line of code: the fix leads with that key, in the
        # config file the launch passed when the log shows it
        where = setting_step(facts.request_setting[:2], config_file(launch.command))
    if where is None:
        # (a variant that rests on the rank's own line quotes it: not twice)
        quotes = "rank_said_line" in values or bool(
            (variant.get("when") or {}).get("initiator_last_line")
        )
        where = waiting_step(state, root, rc_rank, masker, quote=not quotes)
    if where and sites:
        # the call sites lead, unless the variant names what made them differ (a group
        # built differently): then they are its consequence and follow its first step
        steps.insert(1 if variant.get("sites_after") and steps else 0, where)
    elif where and steps:
        steps[0] = f"{where} {steps[0]}"
    waited = waiter_step(state, root, initiating, seen, masker, values)
    if waited and steps and not any(waited.split(" ", 1)[0] in step for step in steps):
        # (not when a step already names the waiters' line: a hang's call-site step)
        steps.insert(1, waited)
    variants = sig.fix.get("variants") or []
    if odd_lead is not None and (chosen is None or is_default):
        line_lead = None  # the setting that differs leads instead (below)
    if (
        line_lead is not None
        and variants
        and variant is variants[-1]
        and not any(line_lead[1] in step for step in steps)
    ):
        # the signature's general fix, which does not use the rank's odd line: it leads
        steps.insert(0, masker.text(line_lead[0]) if masker else line_lead[0])
    elif line_lead is not None and steps and not any(line_lead[1] in step for step in steps):
        # a variant chose its own first step (a branch, a loop left early) without quoting the
        # rank's odd line: the count that singles the rank out follows that step, so the user
        # sees which value to chase (34 files where the others found 39)
        steps.insert(1, masker.text(line_lead[2]) if masker else line_lead[2])
    if odd_lead is not None and (chosen is None or is_default):
        # no variant chose its fix from this difference (none, or the default): it leads the
        # general fix
        steps.insert(0, masker.text(odd_lead) if masker else odd_lead)
    if seen is not None and seen.exc.thread_died and (chosen or {}).get("id") != "thread-died":
        # a signature's own fix for the exception, raised in a thread: say why the job died
        step = thread_handoff_step(seen.exc.thread, rc_rank)
        steps.insert(1 if steps else 0, masker.text(step) if masker else step)

    # the path the root's message names fills <path> / <output_dir> (commands.fill_path_blanks)
    named_path = values.get("path") if isinstance(values.get("path"), str) else None
    if named_path is None and sig.failure_class in _WRITE_CLASSES:
        named_path = save_target_before(state, root)
        if named_path is not None and masker is not None:  # a path of the log, masked as it is
            named_path = masker.text(named_path)
    verify = fill_path_blanks(render(variant.get("verify", sig.verify), values), named_path)
    if not variant.get("verify_quoted"):
        # a stand-in launch (``python train.py``) fitted to the launcher the log shows, its
        # unseen files blanked; a variant whose verify quotes the log's own command (bash's
        # job report of the command that died) keeps it whole, as the user typed it
        verify = unshown_launch(ready(fit(verify, launch, verify=True), launch), launch)
    if "fit_size" in values:  # the rerun tries the size the fix names, not the failing one
        verify = with_parallel_size(verify, str(values["denominator"]), str(values["fit_size"]))
    run_frames = [
        f for seen_exc in (*state.exceptions, *state.cut_tracebacks) for f in seen_exc.exc.frames
    ]
    in_notebook = (frame is not None and notebook_cell(frame.file)) or any(
        notebook_cell(f.file) for f in run_frames
    )
    if in_notebook:
        # the job ran from a notebook cell (accelerate's notebook_launcher, a DDP cell): no
        # script to rerun, the cell is rerun with the settings in the kernel's environment
        starts = any(
            # IPython names a frame's function with its parameters: "notebook_launcher(function, ...)"
            f.func.partition("(")[0] == "notebook_launcher"
            or "notebook_launcher(" in (f.code or "")
            for f in run_frames
        )
        verify = notebook_verify(verify, "notebook_launcher" if starts else None)
    elif not variant.get("verify_quoted"):
        # no launch in the log: the class's own check, which runs without it
        verify = standalone_verify(
            verify,
            variant.get("verify", sig.verify),
            launch,
            sig.failure_class,
            traceback_packages(f.file for f in seen.exc.frames) if seen is not None else [],
        )
    if masker is not None and masker.enabled:
        verify = blank_masked_hosts(verify)
    evidence = [dataclasses.replace(e) for e in root.evidence[:3]]
    for f in findings:  # supporting lines of the same class (a warning before the error)
        if (
            f is not root
            and f.failure_class == root.failure_class
            and f.rank in (root.rank, None)
            and len(evidence) < 5
        ):
            evidence.extend(dataclasses.replace(e) for e in f.evidence[:1])
    confidence = (
        0.4 + 0.0055 * sig.specificity if root.role == "cause" else 0.25 + 0.004 * sig.specificity
    )
    if len({f.rank for f in group}) > 1 and initiating is None:
        confidence -= 0.1
    return RootCause(
        signature=sig.id,
        failure_class=sig.failure_class,
        title=variant.get("title", sig.title),
        category=sig.category,
        confidence=round(max(0.05, min(0.99, confidence)), 2),
        rank=rc_rank,
        host=(state.hosts.get(rc_rank) if rc_rank is not None else None)
        or (root.host if rc_rank == root.rank else None),
        time=root.time,
        count=sum(f.count for f in group),
        ranks=sorted({f.rank for f in group if f.rank is not None}),
        evidence=evidence,
        captures=dict(root.captures),
        frames=frames,
        user_frame=frame,
        call_sites=sites,
        summary=render(variant.get("summary", sig.entry["summary"]), values),
        mechanism=render(variant.get("mechanism", sig.entry["mechanism"]), values),
        symptoms=[Symptom(s["text"], s["meaning"]) for s in sig.entry.get("symptoms", [])],
        fix=Fix(
            steps=steps,
            code={k: fit(render(v, values, keep_unknown=True), launch) for k, v in code.items()},
            variant=FixVariant(chosen["id"], chosen["why"]) if chosen is not None else None,
        ),
        confirm=[
            fit(fill_path_blanks(render(c, values), named_path), launch)
            for c in variant.get("confirm", sig.confirm)
        ],
        verify=verify,
        references=list(sig.references),
        related=[
            Related(r, library.signatures[r].title) for r in sig.related if r in library.signatures
        ],
    )
