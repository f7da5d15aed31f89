"""The engine's entry points: diagnose files, folders, streams or text.

Everything the other faces (CLI, language server, VS Code, live, triage) show comes from
here, already masked when ``mask=True`` (the default): every string of the diagnosis passes
through one :class:`rootrank.mask.Masker` (:func:`rootrank.mask_walk.mask_diagnosis`)
before it leaves.
"""

from __future__ import annotations

import functools
import gc
import io
import os
import stat
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import BinaryIO, TypeVar

from rootrank import lazy_regex
from rootrank.analysis import analyze
from rootrank.ingest import (
    Block,
    InputError,
    cut_short,
    decompressed,
    open_log,
    prefixed,
    read_blocks,
    strip_compression,
    text_blocks,
)
from rootrank.mask import Masker
from rootrank.mask_walk import mask_diagnosis
from rootrank.match import Matcher
from rootrank.metrics import onset_findings
from rootrank.model import Diagnosis
from rootrank.redirected import rank_log_folder
from rootrank.runs import pick_run, unrelated_names
from rootrank.scan import Scanner, ScanState
from rootrank.signatures import Library, load_library

#: Names of files a folder scan reads (torchrun --log-dir trees, SLURM, plain logs); of
#: JSON files only torchelastic's error files (``error.json``) are logs.
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
LOG_NAMES = ("error.json",)
#: The first bytes of rootrank's own reports (rootrank.report: the text headline, plain or
#: coloured, and Markdown's; the JSON contract's schema; GitHub annotations; ``rootrank eval``'s
#: summary): a report saved
#: beside the logs (``rootrank diagnose logs/ > logs/diagnosis.txt``) is no log of the job
#: (new-user trial r20 finding 10: it was read and quoted as evidence).
_OWN_REPORT = lazy_regex.compile(
    r"\A(?:\xef\xbb\xbf)?(?:\x1b\[[0-9;]*m)*"
    r"(?:Root cause: |No known failure found|Unclassified failure: |## Root cause: |## rootrank: "
    r"|cases: \d+ \(\d+ failing"
    r'|::(?:error|warning|notice) [^\n]*title=rootrank%3A|\{\s*"schema": "rootrank\.)'
)
#: How many bytes of a folder's file are read to tell a saved report (:func:`own_report`).
OWN_REPORT_HEAD = 256
#: A folder scan stops after this many files (a hostile folder cannot make it run forever).
MAX_FOLDER_FILES = 10_000


@lru_cache(maxsize=1)
def default_library() -> Library:
    """The built-in library, loaded once per process."""
    return load_library()


_MATCHERS: list[tuple[Library, Matcher]] = []


def matcher_for(library: Library) -> Matcher:
    """A :class:`Matcher` for ``library``, built once and kept for the last few libraries
    (the language server reloads the library when its settings change)."""
    for lib, matcher in _MATCHERS:
        if lib is library:
            return matcher
    matcher = Matcher.from_library(library)
    _MATCHERS.insert(0, (library, matcher))
    del _MATCHERS[4:]
    return matcher


def readable_paths(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the paths that can be read, one problem line per path that cannot), in order: a path
    must exist, a folder hold logs (:func:`expand_paths`) and a file open with a text head
    (:func:`rootrank.ingest.check_log`: not binary, not a compressed file that cannot be
    decompressed). ``rootrank diagnose`` and each job of ``rootrank triage`` diagnose the
    readable ones and name the others as ``not read: <problem>`` in the warnings; only when
    none is readable is the input an error. ``-`` (standard input) is the caller's."""
    from rootrank.ingest import check_log

    readable: list[str] = []
    problems: list[str] = []
    for path in paths:
        try:
            expand_paths([path], [])  # a missing path; a folder without logs
            if not os.path.isdir(path):
                check_log(path)
        except InputError as exc:
            problems.append(str(exc))
        else:
            readable.append(path)
    return readable, problems


def own_report(path: str) -> bool:
    """Whether the file at ``path`` is one of rootrank's own reports (:data:`_OWN_REPORT` on
    its first :data:`OWN_REPORT_HEAD` bytes). ``False`` when it cannot be read (the reader
    reports that later)."""
    try:
        with open(path, "rb") as f:
            head = f.read(OWN_REPORT_HEAD)
    except OSError:
        return False
    return _OWN_REPORT.match(head.decode("latin-1")) is not None  # (a UTF-8 BOM as 3 chars)


def expand_paths(paths: Iterable[str], notes: list[str] | None = None) -> list[tuple[str, bool]]:
    """Turn files and folders into the log files to read, in a stable order, each with
    ``True`` when it was found in a folder (such a file is skipped, not fatal, when it
    turns out unreadable or binary).

    A folder yields its log files (by :data:`LOG_SUFFIXES`, recursively, symlinks to folders
    not followed) of one run only: the newest when it holds several SLURM jobs or torchrun
    attempts (:func:`rootrank.runs.pick_run`); ``-`` stays as standard input. What was left
    out (older runs, subfolders that cannot be read, rootrank's own reports saved there:
    :func:`own_report`) is appended to ``notes`` as sentences.

    Raises:
        InputError: a path does not exist, or a folder holds no log file or too many files.
    """
    if notes is None:
        notes = []
    out: list[tuple[str, bool]] = []
    for p in paths:
        if p == "-":
            out.append((p, False))
            continue
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise InputError(f"{p}: no such file or folder") from None
        except OSError as exc:
            raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISDIR(st.st_mode):
            found: list[str] = []
            seen = 0
            unreadable: list[str] = []

            def _unreadable(exc: OSError, unreadable: list[str] = unreadable) -> None:
                unreadable.append(f"{exc.filename}: {exc.strerror or exc}")

            for dirpath, dirs, names in os.walk(p, followlinks=False, onerror=_unreadable):
                dirs.sort()
                for name in sorted(names):
                    seen += 1
                    if seen > MAX_FOLDER_FILES:
                        raise InputError(
                            f"{p}: more than {MAX_FOLDER_FILES} files; name the log files instead"
                        )
                    full = os.path.join(dirpath, name)
                    low = strip_compression(name.lower())  # train.log.gz is a log too
                    if (low.endswith(LOG_SUFFIXES) or low in LOG_NAMES) and os.path.isfile(full):
                        found.append(full)
            notes.extend(f"skipped the folder {u} (its logs were not read)" for u in unreadable)
            reports = [f for f in found if own_report(f)]
            if reports:
                found = [f for f in found if f not in reports]
                shown = ", ".join(os.path.relpath(f, p) for f in reports[:3])
                more = ", ..." if len(reports) > 3 else ""
                notes.append(f"{p}: left out rootrank's own saved reports ({shown}{more})")
            if not found:
                raise InputError(
                    f"{p}: no log files (*{', *'.join(LOG_SUFFIXES)}, error.json) in this folder"
                )
            # a newest run with empty files only (a restart attempt stuck before its first
            # line) is passed over for the one that wrote the failure
            found, note = pick_run(found, size=os.path.getsize, root=p)
            if note:
                notes.append(f"{p}: {note}")
            if note := unrelated_names(found, p):
                notes.append(f"{p}: {note}")
            out.extend((f, True) for f in found)
        else:
            out.append((p, False))
    return out


#: At most this many bytes of standard input are looked at for file names (a peek of its
#: buffer, then, when that shows names only, a read to its end: see stdin_log); a longer
#: input is read as a log.
STDIN_NAMES_BYTES = 8192


def names_instead_of_log(head: bytes) -> list[str]:
    """The file names standard input holds instead of a log (``ls logs/ | rootrank diagnose
    -``, ``echo logs/ | rootrank diagnose -``, ``find . -name '*.log' | ...``), or ``[]``
    when it may hold log text. ``head`` is all of the input seen so far (bytes).

    Names are what is there when every non-blank line of ``head`` names a path that exists
    (from the current folder), or is one word naming a log file or a folder (``rank0.log``,
    ``slurm-7.out.gz``, ``error.json``, ``logs/``: what ``ls logs/`` prints, relative to that
    folder). A log's lines hold words and spaces, a timestamp, a prefix or a message; no
    healthy or failed run's log is only file names. A ``head`` of :data:`STDIN_NAMES_BYTES`
    or more is not judged (a listing that long is no longer "a few paths").
    """
    if not head or len(head) >= STDIN_NAMES_BYTES or b"\x00" in head:
        return []
    lines = [line.strip() for line in head.decode("utf-8", errors="replace").splitlines()]
    names = [line for line in lines if line]
    if not names:
        return []
    for name in names:
        if os.path.exists(name):
            continue
        if any(c.isspace() for c in name) or ":" in name or "\ufffd" in name:
            return []
        low = strip_compression(name.lower())
        if not (low.endswith((*LOG_SUFFIXES, "/")) or os.path.basename(low) in LOG_NAMES):
            return []
    return names


def stdin_log(stdin: BinaryIO) -> BinaryIO:
    """The stream to read standard input's log from: ``stdin`` itself, or, when the bytes
    its buffer shows (a peek of at most :data:`STDIN_NAMES_BYTES`) look like file names
    only and it had to be read to its end to tell, a stream that gives those bytes back
    first (:func:`rootrank.ingest.prefixed`).

    Raises:
        InputError: the whole input is file names (:func:`names_instead_of_log`), with a
            sentence saying the paths go as arguments (``rootrank diagnose logs/``).
    """
    peek = getattr(stdin, "peek", None)
    if peek is None or not names_instead_of_log(peek(STDIN_NAMES_BYTES)[:STDIN_NAMES_BYTES]):
        return stdin
    # The start is names; the input must have ended for them to be all of it (a training
    # script's first line, unbuffered into a live pipe, may be a path with more to come).
    head = stdin.read(STDIN_NAMES_BYTES)  # io.BufferedReader.read(n): n bytes or the end
    names = names_instead_of_log(head)
    if not names:
        return prefixed(head, stdin)
    import shlex  # an error path only

    shown = " ".join(shlex.quote(n) for n in names[:3]) + (" ..." if len(names) > 3 else "")
    given = shown if all(os.path.exists(n) for n in names) else "FOLDER/"
    raise InputError(
        f"standard input holds file names ({shown}), not a log: give the paths as arguments"
        f" (rootrank diagnose {given})"
    )


#: Capture names whose value is a machine's name or address (masked as a host).
HOST_CAPTURES = ("host", "node", "store")


_T = TypeVar("_T")


def _without_collection(func: Callable[..., _T]) -> Callable[..., _T]:
    """``func`` run with the cyclic garbage collector paused (as it was after). The analysis
    of a 1,024-rank log allocates ~10^6 small objects that live until it returns (each rank's
    abort explained by every rank's timeout: ~10^6 explanation edges), and the collections
    their growth set off walked them again and again: ~1.3 s of a ~13 s diagnose of the
    11 MB, 1,025-file folder (CPU). What the analysis leaves as garbage is collected after;
    memory is bounded by the findings either way (peak unchanged, measured)."""

    @functools.wraps(func)
    def paused(*args: object, **kwargs: object) -> _T:
        was = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return paused


@_without_collection
def _finish(
    state: ScanState,
    timeouts: dict[str, int],
    library: Library,
    mask: bool,
    new_masker: Callable[[], Masker] = Masker,
    warnings: Iterable[str] = (),
) -> Diagnosis:
    """The diagnosis of a finished scan's ``state``, with a warning per signature whose
    pattern timed out (``timeouts``: lines per signature id, emptied here) and ``warnings``
    (sentences about the input, from the log's own names), masked as a whole when ``mask``
    is on."""
    masker = new_masker() if mask else None
    if masker is not None:
        masker.sources(state.sources)  # "<source>:<line>" is a location, not host:port
        hosts = state.hosts
        for r in sorted(hosts):  # host-1 is the host of the lowest rank
            masker.host(hosts[r])
        for h in sorted(state.launch.hosts):
            masker.host(h)
        masker.learn(state.users)  # from any line of the inputs, before any line is masked
        # Learn the hosts the findings' lines name ("can't resolve 'trainjob-master-0'") before
        # the entry is filled: a capture masked alone has no context to be known as a host.
        for f in state.findings.values():
            # a host a signature captured by name (Megatron's "Rank 2, node gpu-07, ...",
            # srun's "srun: error: node7: task 3: ..."): a bare name has no shape to be
            # known as a host by (a GPU's "node-3" number is not one)
            for name in HOST_CAPTURES:
                value = f.captures.get(name)
                if value and not value.isdigit():
                    masker.host(value)
            for e in f.evidence:
                masker.text(e.text)
    # a run appended to one file: its curves are the last attempt's (the findings are)
    since = (
        (state.sources[0], state.attempt_starts[-1])
        if state.attempt_starts and len(state.sources) == 1
        else None
    )
    # Training curves: onsets join the findings (causes that explain what follows them); the
    # progress and the series go into the diagnosis, their paths masked like evidence paths.
    # An onset before the last attempt's start is an earlier attempt's, set aside with that
    # attempt's other faults (ScanState.earlier_findings): a loss spike in a run that was
    # started again is no cause of how the last run ended.
    for onset in onset_findings(state.metrics, library):
        at = onset.evidence[0]
        if since is not None and at.path == since[0] and at.line < since[1]:
            state.earlier_findings.append(onset)
            continue
        state.findings.setdefault(
            (onset.signature, onset.rank, at.path if onset.rank is None else None),
            onset,
        )
    diag = analyze(state, library, masker)
    diag.progress = state.progress.report(state.end_time)
    diag.metrics = state.metrics.report(since)
    if timeouts:
        diag.warnings.extend(
            f"signature {sid}: pattern timed out on {n} line(s) and was skipped"
            for sid, n in sorted(timeouts.items())
        )
        timeouts.clear()
    diag.warnings.extend(warnings)
    if masker is not None:
        mask_diagnosis(diag, masker)
    return diag


def diagnose_blocks(
    sources: Iterable[tuple[str, Iterable[Block]]],
    *,
    library: Library | None = None,
    mask: bool = True,
) -> Diagnosis:
    """Diagnose sources given as ``(name, blocks)`` pairs, scanned in order."""
    lib = library or default_library()
    scanner = Scanner(matcher_for(lib), learn_users=mask)
    for name, blocks in sources:
        scanner.scan_source(name, blocks)
    return _finish(scanner.state, scanner.matcher.timeouts, lib, mask)


def diagnose_text(
    text: str,
    name: str = "<text>",
    *,
    library: Library | None = None,
    mask: bool = True,
    progress: Callable[[int, int], None] | None = None,
    first_line: int = 1,
) -> Diagnosis:
    """Diagnose text already in memory (a selection, terminal output, an editor buffer).

    ``name`` is used as the path in evidence (and may name the rank, e.g. ``rank3.log``).
    ``progress``, when given, is called after each block with (characters read, total
    characters), for a client's progress bar. ``first_line`` is the 1-based line of
    ``name`` the text starts at (a selection of a file): every line number in the diagnosis
    (evidence, reasoning, frames of the log) is then the file's.
    """
    blocks: Iterable[Block] = text_blocks(text, first_line)
    if progress is not None:
        blocks = _reporting(blocks, len(text), progress)
    return diagnose_blocks([(name, blocks)], library=library, mask=mask)


def diagnose_utf8(
    data: bytes,
    name: str = "<text>",
    *,
    chars: int,
    library: Library | None = None,
    mask: bool = True,
    progress: Callable[[int, int], None] | None = None,
    first_line: int = 1,
) -> Diagnosis:
    """:func:`diagnose_text` of a text given as its UTF-8 bytes, ``text.encode("utf-8",
    "replace")`` (the language server's buffer as its engine process receives it): the same
    blocks, without decoding the whole text first and encoding it again. ``chars`` is the
    text's length in code points, the total given to ``progress``; ``first_line`` as in
    :func:`diagnose_text`."""
    blocks: Iterable[Block] = read_blocks(io.BytesIO(data), sniff=False, first_line=first_line)
    if progress is not None:
        blocks = _reporting(blocks, chars, progress)
    return diagnose_blocks([(name, blocks)], library=library, mask=mask)


def _reporting(
    blocks: Iterable[Block], total: int, progress: Callable[[int, int], None]
) -> Iterable[Block]:
    done = 0
    for block in blocks:
        yield block
        done = min(total, done + len(block.text) + 1)
        progress(done, total)


def diagnose_stream(
    stream: BinaryIO, name: str = "<stdin>", *, library: Library | None = None, mask: bool = True
) -> Diagnosis:
    """Diagnose a binary stream read line by line (standard input, a pipe), decompressed
    first when its magic bytes say gzip, xz or zstd (:func:`rootrank.ingest.decompressed`).

    Raises:
        InputError: the stream holds binary data, or corrupt compressed data.
    """
    return diagnose_blocks(
        [(name, read_blocks(decompressed(stream, name)))], library=library, mask=mask
    )


def _note_cut_short(
    fh: BinaryIO,
    name: str,
    lines: int,
    notes: list[str],
    on_warning: Callable[[str], None] | None,
) -> None:
    """Add to ``notes`` (and tell ``on_warning``) that the compressed input ``name``, read to
    its end through ``fh`` (``lines`` lines), was cut short (:func:`rootrank.ingest.cut_short`):
    the log goes on past what was read, so a later failure, or the end of the run, is not in
    the diagnosis."""
    what = cut_short(fh)
    if what is None:
        return
    note = (
        f"{name}: the {what} data ends early (cut short before its end marker): only its"
        f" first {lines:,} line(s) were read, and the log may go on past them"
    )
    notes.append(note)
    if on_warning is not None:
        on_warning(note)


#: Bytes of an ``error.json`` parsed to check it (torchelastic's are a few KiB; a larger one
#: is read as text only).
_ERROR_FILE_CHECK_BYTES = 16 << 20


def _note_broken_error_file(
    path: str, notes: list[str], on_warning: Callable[[str], None] | None
) -> None:
    """Add to ``notes`` (and tell ``on_warning``) that ``path``, a torchelastic error file
    (``error.json``), is not what torchelastic writes: a JSON object with a ``"message"``
    (torch/distributed/elastic/multiprocessing/errors/error_handler.py,
    ``ErrorHandler.record_exception``: ``{"message": {"message": ..., "extraInfo":
    {"py_callstack": ..., "timestamp": ...}}}``). One cut short (a worker killed while it
    wrote) or overwritten is still read as text, so what it holds is used, but the rank's
    error may be missing: the user should know the file was broken, not find it ignored."""
    import json  # only error.json files

    try:
        if os.path.getsize(path) > _ERROR_FILE_CHECK_BYTES:
            return
        with open_log(path) as fh:
            raw = fh.read()
    except (OSError, InputError):
        return  # read (or named unreadable) by the scan itself
    why = None
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        if not raw.strip():
            why = "it is empty"
        else:
            why = f"it is not valid JSON ({exc})"
    else:
        if not isinstance(doc, dict) or "message" not in doc:
            why = 'it holds no "message" (torchelastic writes {"message": {...}})'
    if why is None:
        return
    note = (
        f"{path}: a torchelastic error file, but {why}: read as text, the rank's error may be"
        " missing from it (a worker killed while writing it leaves it cut)"
    )
    notes.append(note)
    if on_warning is not None:
        on_warning(note)


def diagnose_paths(
    paths: list[str],
    *,
    library: Library | None = None,
    mask: bool = True,
    new_masker: Callable[[], Masker] = Masker,
    stdin: BinaryIO | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Diagnosis:
    """Diagnose files and folders (``-`` is standard input: ``stdin``, by default
    ``sys.stdin.buffer``), streaming each file once.

    ``new_masker`` makes the masker of this diagnosis when ``mask`` is on (fleet triage
    passes one whose host pseudonyms hold across a whole archive; the default numbers hosts
    ``host-1``... within this diagnosis).

    A compressed input whose data ends before its end-of-stream marker
    (:func:`rootrank.ingest.cut_short`) is diagnosed from the lines it holds, with a warning
    that says so; ``on_warning`` (the CLI: one ``rootrank: warning:`` line on stderr) is
    also called with it, unmasked.

    Raises:
        InputError: a path is missing, unreadable, binary, a folder with no logs, or every
            input is empty (0 bytes).
    """
    lib = library or default_library()
    notes: list[str] = []
    files = expand_paths(paths, notes)
    scanner, skipped = _scan_files(files, lib, mask, stdin, notes, on_warning)
    ranks_folder = (
        rank_log_folder(files[0][0], scanner.state.launch.command)
        if len(files) == 1 and not files[0][1]
        else None
    )
    if ranks_folder is not None:
        # torchrun --redirects wrote the workers' output to files beside this terminal log:
        # the ranks' own errors are there (rootrank.redirected)
        where = os.path.relpath(ranks_folder, os.path.dirname(os.path.abspath(files[0][0])))
        notes.append(
            f"read the workers' own output from {where}/ beside the log: the launch's "
            "--redirects sent it there, and the terminal holds only torchrun's lines"
        )
        files = expand_paths([files[0][0], ranks_folder], notes)
        scanner, skipped = _scan_files(files, lib, mask, stdin, [], None)
    programs = separate_programs(scanner.state, [p for p, in_folder in files if in_folder])
    if programs is not None:
        kept, note = programs
        notes.append(note)
        files = [(p, in_folder) for p, in_folder in files if not in_folder or p in kept]
        scanner, skipped = _scan_files(files, lib, mask, stdin, [], None)
    if skipped and len(skipped) == len(files):
        raise InputError(
            f"no readable log: {skipped[0]}"
            + (f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else "")
        )
    if files and not scanner.state.lines_total:
        # 0 bytes (an empty `kubectl logs`, a job that never started) is no evidence of a
        # healthy run: nothing was read, so nothing can be said
        names = ", ".join("<stdin>" if p == "-" else p for p, _ in files[:3])
        if len(files) > 3:
            names += f" (and {len(files) - 3} more)"
        raise InputError(f"{names}: empty input (0 bytes read): nothing to diagnose")
    return _finish(
        scanner.state,
        scanner.matcher.timeouts,
        lib,
        mask,
        new_masker,
        [*notes, *(f"skipped {s}" for s in skipped)],
    )


def separate_programs(
    state: ScanState, folder_files: list[str], mtime: Callable[[str], float] = os.path.getmtime
) -> tuple[set[str], str] | None:
    """The files of a folder's newest run, and the sentence that names the others, when the
    folder's files (``folder_files``: found in a folder, with no SLURM or torchrun run key,
    :func:`rootrank.runs.pick_run`) ran different programs; ``None`` when they did not.

    Each file's programs are the entry scripts its tracebacks began in
    (:func:`rootrank.runs.entry_script`: the outermost ``<module>`` frame of the user's
    script, from ``state.exceptions``). One job's files (per-rank or per-node logs) run one
    script; two or more files whose scripts do not overlap at all are separate runs, as two
    runs one after the other in one file are (:func:`rootrank.runs.separate_run`: "it ran
    x.py, the next run y.py"), and the newest (by modification time, seconds) is diagnosed
    with the files that show no script. New-user trial r19 finding 1: a folder holding a run
    of ``fail_data.py`` and a later run of ``fail_hang.py`` was read as one job, and the older
    run's error was given as the newer run's root cause."""
    from rootrank.runs import entry_script

    scripts: dict[str, set[str]] = {}
    for seen in state.exceptions:
        if seen.path in folder_files:
            name = entry_script(seen.exc.type, seen.exc.frames)
            if name:
                scripts.setdefault(seen.path, set()).add(name)
    if len(scripts) < 2:
        return None
    named = list(scripts)
    for i, a in enumerate(named):
        for b in named[i + 1 :]:
            if scripts[a] & scripts[b]:
                return None

    def when(path: str) -> float:
        try:
            return mtime(path)
        except OSError:
            return float("-inf")

    newest = max(named, key=lambda p: (when(p), p))
    kept = {p for p in folder_files if p == newest or p not in scripts}
    others = ", ".join(
        f"{os.path.basename(p)} ran {', '.join(sorted(scripts[p]))}"
        for p in sorted(named, key=when)
        if p != newest
    )
    note = (
        f"the folder's files ran different programs: diagnosed the newest, "
        f"{os.path.basename(newest)} ({', '.join(sorted(scripts[newest]))}); left out {others}"
        " (name a file to diagnose it, or `rootrank triage` the files for every run)"
    )
    return kept, note


def _scan_files(
    files: list[tuple[str, bool]],
    lib: Library,
    mask: bool,
    stdin: BinaryIO | None,
    notes: list[str],
    on_warning: Callable[[str], None] | None,
) -> tuple[Scanner, list[str]]:
    """Scan ``files`` (as :func:`expand_paths` gives them) with a new :class:`Scanner`;
    returns it and the unreadable files found in a folder (skipped, not fatal).

    Raises:
        InputError: a file named on its own cannot be read."""
    import sys

    scanner = Scanner(matcher_for(lib), learn_users=mask)  # user names serve the masking only
    skipped: list[str] = []
    for path, in_folder in files:
        before = scanner.state.lines_total
        if path == "-":
            # compressed or not, by its magic bytes (`gzip -c train.log | rootrank diagnose -`)
            stream = decompressed(stdin if stdin is not None else sys.stdin.buffer)
            scanner.scan_source("<stdin>", read_blocks(stream))
            _note_cut_short(
                stream, "<stdin>", scanner.state.lines_total - before, notes, on_warning
            )
            continue
        try:
            with open_log(path) as fh:
                try:
                    scanner.scan_source(path, read_blocks(fh))
                except InputError as exc:
                    raise InputError(f"{path}: {exc}") from None
                except OSError as exc:
                    raise InputError(f"{path}: read failed ({exc.strerror or exc})") from None
                _note_cut_short(fh, path, scanner.state.lines_total - before, notes, on_warning)
            if os.path.basename(path) in LOG_NAMES:
                _note_broken_error_file(path, notes, on_warning)
        except InputError as exc:
            if not in_folder:
                raise
            skipped.append(str(exc))
    return scanner, skipped
