"""An exception raised while the job opened its dataset, the same on every rank, before training.

Mechanism: every rank builds its data loader at start-up from the same arguments: a data
directory (a container mount, a ``--data``/``input_dir`` option, an environment variable) and
a format (packed or unpacked samples, a record or cache file the loader expects). When the
file is not at that path (``[Errno 2] No such file or directory: '<path>'``, a native
reader's ``Could not open file <path>``) or the files there do not hold what the loader
asks for (h5py's ``Unable to open object (object '<field>' doesn't exist)``), every rank
raises the same exception at the same line, before its first training step. The code line
that opened it is fine: the data's location or format disagrees with the job's
configuration (class ``config-error``), so the fix names the path or field and where the
log shows it set (the mount on the launch line, the printed option). One record's file
failing mid-training, on the rank that drew it, is another kind
(:mod:`rootrank.analysis.sample_load`).

Needed: an exception the generic reading would take (no signature reads its line) whose
message says a file or an object in a file could not be opened (:data:`OPEN_FAILED`),
raised before the process printed any training step (:attr:`rootrank.scan.SeenException.advance`),
under a frame of data loading (:data:`_DATA_FRAME`: a config file read at launch stays the
user's exception, with its every-rank variant), not under a per-sample frame (a user
``__getitem__``, the DataLoader worker's fetch), nor in a thread or under ``subprocess``;
raised by two or more processes, and by every rank the log shows when they are tagged (one
node's rank alone is a file that node lacks); and no rank raising another exception first.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature it makes (``detector: analysis``).
OPEN_SIGNATURE = "dataset-open-failed"
#: The exception types an open of a missing file or object raises: Python's own, h5py's
#: ``KeyError`` for a missing object, a native reader's ``RuntimeError`` (DALI's
#: ``std_file.cc`` assert).
OPEN_TYPES = ("FileNotFoundError", "OSError", "IOError", "KeyError", "RuntimeError")
#: A message that says a file or an object in a file could not be opened: Python's ENOENT
#: (``[Errno 2] No such file or directory: '<path>'``), a native reader's ``Could not open
#: file <path>: No such file or directory``, h5py's ``Unable to (synchronously) open object
#: (object '<field>' doesn't exist)`` and ``Unable to (synchronously) open file (unable to
#: open file: name = '<path>', errno = 2, ...)``.
OPEN_FAILED = lazy_regex.compile(
    r"No such file or directory: ['\"](?P<path>[^'\"]+)['\"]"
    r"|[Cc]ould not open (?:file )?(?P<path2>/[^\s:'\"]+):? No such file or directory"
    r"|Unable to (?:synchronously )?open object \(object ['\"](?P<field>[^'\"]+)['\"] doesn't exist"
    r"|Unable to (?:synchronously )?open file \(unable to open file: name = ['\"](?P<path3>[^'\"]+)['\"]"
)
#: A per-sample frame: a dataset's ``__getitem__`` in the user's code, or the DataLoader
#: worker's fetch (torch/utils/data/_utils/{worker,fetch}.py).
_WORKER_FETCH = lazy_regex.compile(r"torch[/\\]utils[/\\]data[/\\]_utils[/\\](?:worker|fetch)\.py$")
#: A frame of data loading, read on its function and its file's name: a dataset's or a
#: loader's construction (``create_pretraining_dataset``, ``get_dali_classification_iterator``,
#: ``ShardSet.__init__`` in ``shards.py``), a reader of record or HDF5 files.
_DATA_FRAME = lazy_regex.compile(
    r"(?i)data|loader|iterator|shard|record|hdf5|h5py|reader|pipeline|dali|corpus|sample|feature"
)
#: A mount on a launch line: enroot/pyxis ``--container-mounts=src:dst[,src:dst]``, docker's
#: ``-v src:dst`` / ``--volume src:dst``, singularity's ``--bind``/``-B src:dst`` (group
#: ``list``: the comma-separated entries).
_MOUNT = lazy_regex.compile(
    r"(?:--container-mounts[= ]|(?<!\S)-v\s+|--volume[= ]|--bind[= ]|(?<!\S)-B\s+)(?P<list>\S+)"
)
#: A printed setting ``name=value`` / ``name='value'`` / ``"name": value`` (an argparse
#: Namespace, a config dump), group ``name`` and ``value``.
_SETTING = lazy_regex.compile(
    r"(?<![\w-])['\"]?(?P<name>[A-Za-z_][A-Za-z0-9_]{2,60})['\"]?\s*[=:]\s*"
    r"(?P<value>'[^'\n]{0,300}'|\"[^\"\n]{0,300}\"|[^\s,)}]{1,300})"
)
#: A setting's name that says it holds the data's folder (``data_dir``, ``input_dir``,
#: ``shard_root``, ``train_path``).
_DATA_NAME = lazy_regex.compile(r"(?i)data|input|shard|root|dir|path|folder")
#: Words of a field's name too common to tie it to an option (``packed_input_len`` is tied
#: to ``packed_samples`` by ``packed``, not to ``input_dir`` by ``input``).
_COMMON_WORDS = frozenset({"input", "output", "data", "file", "path", "name", "size", "length"})
#: Most lines of the log's start read for the mount or setting (the launch and args print early).
MAX_LINES = 4000


def dataset_open_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """Findings of :data:`OPEN_SIGNATURE`, one per rank, for the exceptions the module
    describes; captures ``action`` (what to change, naming where the log sets it; a generic
    sentence when it shows nothing), ``what`` (``the file "<path>"`` or ``the field "<field>"``),
    ``copies`` (how many processes raised it, as a sentence part), ``source`` (where the log
    sets the path or the format: a mount, a printed option; ``""`` when it shows neither),
    ``check`` (a command that shows the file or field is there) and ``where``
    (``file:line`` of the raising frame, ``""`` when the traceback shows none). The mount or
    setting line joins the evidence. Empty when the signature is missing or a rank raised
    another exception before (a cause of its own)."""
    from rootrank.analysis.prepare import _exception_finding, _unread_exceptions

    sig = library.signatures.get(OPEN_SIGNATURE)
    if sig is None:
        return []
    hits: list[tuple[SeenException, dict[str, str]]] = []
    for type_name in OPEN_TYPES:
        for seen in _unread_exceptions(state, findings, type_name):
            m = OPEN_FAILED.search(seen.exc.message)
            if m is None or _after_progress(seen) or _per_sample(seen) or not _loading(seen):
                continue
            path = m.group("path") or m.group("path2") or m.group("path3") or ""
            hits.append((seen, {"path": path, "field": m.group("field") or ""}))
    if not hits:
        return []
    first = min(s.order for s, _ in hits)
    types = {s.exc.type for s, _ in hits}
    if any(
        not s.exc.ignored
        and s.exc.chain_index == 0
        and s.order < first
        and s.exc.frames
        and s.exc.type not in types  # the same error's piece that interleaving split off
        for s in state.exceptions
    ):
        return []  # another exception came first: that one is the cause to read
    copies = len({(s.path, s.exc.log_line) for s, _ in hits})
    ranks = {s.rank for s, _ in hits if s.rank is not None}
    if ranks and not set(state.ranks_seen) <= ranks:
        return []  # some ranks opened it: a file one node lacks, not the job's setting
    if copies < 2 and not hits[0][0].exc.frames:
        # interleaved output: one exception line read whole, its copies cut into pieces
        copies = _printed_copies(state, hits[0][0].exc.message)
    if copies < 2:
        return []  # one process: a setting read at launch or a file reached later, unknown
    out: dict[int | None, Finding] = {}
    for seen, got in sorted(hits, key=lambda h: h[0].order):
        if seen.rank in out:
            continue
        source, line = _source(state, got["path"], got["field"])
        raising = next((fr for fr in reversed(seen.exc.frames) if fr.code), None)
        what = (
            f'the file "{got["path"]}"'
            if got["path"]
            else f'the field "{got["field"]}" in the data files'
        )
        found = _exception_finding(
            sig,
            seen,
            {
                "what": what,
                "copies": f"{copies} processes raised it"
                if copies > 1
                else "the process raised it",
                "action": source
                or f"Make {what} exist where the job looks for it, or point the job at the"
                " data that has it.",
                "check": _check(state, got["path"], got["field"]),
                "where": (
                    f"{raising.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{raising.line}"
                    if raising is not None
                    else ""
                ),
            },
        )
        if line is not None:
            found.evidence.append(Evidence(path=line[0], line=line[1], text=line[2], rank=None))
        out[seen.rank] = found
    return list(out.values())


def _loading(seen: SeenException) -> bool:
    """Whether ``seen`` was raised while data was being loaded: a frame whose function or
    file names data loading (:data:`_DATA_FRAME`), or no frames at all (interleaved output cut
    them off); not in a thread that died (its process went on) nor under ``subprocess`` (a
    program that is not there: command-not-found)."""
    exc = seen.exc
    if exc.thread_died:
        return False
    if not exc.frames:
        return True
    for fr in exc.frames:
        path = fr.file.replace("\\", "/")
        if path.endswith("/subprocess.py"):
            return False
    return any(
        _DATA_FRAME.search(fr.func)
        or _DATA_FRAME.search(fr.file.replace("\\", "/").rsplit("/", 1)[-1])
        for fr in exc.frames
    )


def _printed_copies(state: ScanState, message: str) -> int:
    """How many times the sources' ends (``ScanState.tails``) print the open failure of
    ``message`` (its first :data:`OPEN_FAILED` match): once per process that raised it, when
    interleaving cut the tracebacks apart and glued their pieces (two copies on one line)."""
    m = OPEN_FAILED.search(message)
    if m is None:
        return 0
    return sum(text.count(m.group(0)) for _src, _first, text in state.tails)


def _after_progress(seen: SeenException) -> bool:
    """Whether the process printed a training step before it raised ``seen``."""
    return seen.advance is not None and bool(seen.advance.before)


def _per_sample(seen: SeenException) -> bool:
    """Whether ``seen`` was raised under a per-sample frame: a user ``__getitem__`` or the
    DataLoader worker's fetch."""
    for fr in seen.exc.frames:
        if fr.user and fr.func in ("__getitem__", "__getitems__"):
            return True
        if _WORKER_FETCH.search(fr.file.replace("\\", "/")):
            return True
    return False


def _error_line(text: str) -> bool:
    """Whether ``text`` is part of an error report (an exception, a frame, an errno), not a
    line that sets something."""
    return any(w in text for w in ("Error", "Errno", 'File "', "No such file", "Traceback"))


def _lines(state: ScanState) -> list[tuple[str, int, str]]:
    """The first :data:`MAX_LINES` lines of each source's start (``ScanState.heads``):
    ``(source, 1-based line, text)``."""
    out: list[tuple[str, int, str]] = []
    for src, first, text in state.heads:
        for i, line in enumerate(text.split("\n")[:MAX_LINES]):
            out.append((src, first + i, line))
    return out


def _mounts(lines: list[tuple[str, int, str]]) -> list[tuple[str, str, tuple[str, int, str]]]:
    """Every ``(host path, container path, line)`` a launch line mounts (:data:`_MOUNT`)."""
    out: list[tuple[str, str, tuple[str, int, str]]] = []
    for line in lines:
        for m in _MOUNT.finditer(line[2]):
            for entry in m.group("list").split(","):
                parts = entry.strip("'\"").split(":")
                if len(parts) >= 2 and parts[0].startswith(("/", ".")) and parts[1].startswith("/"):
                    out.append((parts[0], parts[1].rstrip("/") or "/", line))
    return out


def _under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _data_dir(lines: list[tuple[str, int, str]]) -> tuple[str, str, tuple[str, int, str]] | None:
    """The first printed setting whose name says data and whose value is an absolute path:
    ``(name, path, line)``."""
    for line in lines:
        if _error_line(line[2]):
            continue
        for m in _SETTING.finditer(line[2]):
            value = m.group("value").strip("'\"")
            name = m.group("name")
            if value.startswith("/") and _DATA_NAME.search(name):
                return name, value, line
    return None


def _source(state: ScanState, path: str, field: str) -> tuple[str, tuple[str, int, str] | None]:
    """Where the log sets what the loader opened, as a sentence (``""`` when it shows
    nothing), and that line: for a path, the mount whose container path holds it (its host
    path), else a printed setting whose value holds it; for a field, the printed data folder
    (with its mount) and the printed settings named like the field (the format option that
    asks for it: ``packed_samples=True`` for ``packed_input_len``)."""
    lines = _lines(state)
    mounts = _mounts(lines)
    if path:
        best = max(
            (mt for mt in mounts if _under(path, mt[1])), key=lambda mt: len(mt[1]), default=None
        )
        if best is not None:
            host, target, line = best
            inner = path[len(target) :].lstrip("/")
            real = f"{host.rstrip('/')}/{inner}" if inner else host
            return (
                f'Put the file at "{real}", or mount the folder that holds it at "{target}": the'
                f' launch on line {line[1]} mounts "{host}" at "{target}", so the loader\'s'
                f' "{path}" is "{real}" on the host, and it is not there.',
                line,
            )
        for line in lines:
            if _error_line(line[2]):
                continue
            for m in _SETTING.finditer(line[2]):
                value = m.group("value").strip("'\"")
                if value.startswith("/") and len(value) > 1 and _under(path, value):
                    return (
                        f'Put "{path}" in place, or set {m.group("name")} to the folder that'
                        f" holds it: the log sets {m.group('name')}={value} on line {line[1]},"
                        " and there is no such file under it.",
                        line,
                    )
        return "", None
    found: tuple[str, int, str] | None = None
    holder = "The data files"
    data = _data_dir(lines)
    if data is not None:
        name, value, found = data
        mount = next((mt for mt in mounts if _under(value, mt[1])), None)
        where = f' (mounted from "{mount[0]}", line {mount[2][1]})' if mount else ""
        holder = f"The files under {name}={value}{where}"
    words = {w for w in field.lower().split("_") if len(w) >= 4} - _COMMON_WORDS
    for line in lines:
        if _error_line(line[2]):
            continue
        named: list[str] = []
        for m in _SETTING.finditer(line[2]):
            name = m.group("name")
            text = f"{name}={m.group('value')}"
            if words & set(name.lower().split("_")) and name != field and text not in named:
                named.append(text)
        if named:
            option = ", ".join(named[:3])
            return (
                f"Turn {option} off for these files, or point the job at data made with"
                f' "{field}" (or convert the files): {holder[0].lower()}{holder[1:]} have no'
                f' "{field}", which {option} (line {line[1]}) asks for.',
                found or line,
            )
    if data is None:
        return "", None
    return (
        f'{holder} have no "{field}". Point the job at data that holds it, or convert the files.',
        found,
    )


def _check(state: ScanState, path: str, field: str) -> str:
    """A command that shows the file (on the host, through the mount) or the field is there."""
    if path:
        for host, target, _line in _mounts(_lines(state)):
            if _under(path, target):
                inner = path[len(target) :].lstrip("/")
                return f"ls -l {host.rstrip('/')}/{inner}" if inner else f"ls -l {host}"
        return f"ls -l {path}"
    lines = _lines(state)
    data = _data_dir(lines)
    folder = data[1] if data else "<data folder>"
    for host, target, _line in _mounts(lines):
        if _under(folder, target):
            inner = folder[len(target) :].lstrip("/")
            folder = f"{host.rstrip('/')}/{inner}" if inner else host
            break
    return (
        'python -c "import glob, h5py; f = h5py.File(sorted(glob.glob('
        f"'{folder}/*'))[0]); print('{field}' in f, list(f))\""
    )
