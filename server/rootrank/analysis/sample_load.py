"""An exception raised while loading one sample of a dataset, naming that sample's file.

Mechanism: a map-style dataset's ``__getitem__`` (run in the main process, or in a DataLoader
worker whose exception the main process re-raises as ``Caught <Type> in DataLoader worker
process N`` + ``Original Traceback``) opens the file of the record it was asked for: the path
comes from the dataset's index (an annotation JSON, a CSV, a list file), joined with a data
folder. When one record's file is missing or unreadable, the run goes on until a batch draws
that record (often hours in) and stops on the rank that drew it; the code and the launch are
fine for every other record, so the fault is the record (class ``data-error``), and the fix is
about the index and the data, not the code.

A path whose non-ASCII letters show as two characters (``Ã©`` for ``é``, ``Ã\\xad`` for
``í``: the UTF-8 bytes read as Latin-1 / cp1252) was written or read with the wrong encoding:
the file exists under its real name and the index's string is garbled (:data:`MOJIBAKE`).

Needed: an exception the generic reading would take (no signature reads its line), of a
file-access type (:data:`FILE_ERRORS`), whose message quotes a path, raised under a frame of
the dataset's per-sample code (:data:`SAMPLE_FRAME`: ``__getitem__``/``__getitems__``, a
DataLoader worker's fetch). It runs after the framework loaders' reading
(:func:`rootrank.analysis.prepare.framework_missing_files`), whose lines it then skips.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import exceptions_per_rank
from rootrank.model import Finding
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature it makes (``detector: analysis``).
SAMPLE_SIGNATURE = "dataset-sample-unreadable"
#: The exception types of a file that cannot be opened or read (the class name).
FILE_ERRORS = frozenset(
    {
        "FileNotFoundError",
        "IsADirectoryError",
        "NotADirectoryError",
        "PermissionError",
        "UnidentifiedImageError",
        "OSError",
        "IOError",
    }
)
#: A frame of the per-sample path, read on ``<file>:<func>``: a dataset's
#: ``__getitem__``/``__getitems__``, or the DataLoader worker's fetch
#: (torch/utils/data/_utils/{worker,fetch}.py).
SAMPLE_FRAME = lazy_regex.compile(
    r":__getitems?__$|torch[/\\]utils[/\\]data[/\\]_utils[/\\](?:worker|fetch)\.py:"
)
#: The quoted path in the message (``No such file or directory: '/data/x.jpg'``, PIL's
#: ``cannot identify image file '/data/x.png'``): Python's repr of a str, so characters that
#: do not print appear as ``\\xNN`` escapes.
QUOTED_PATH = lazy_regex.compile(r"'(?P<path>[^'\n]{0,600}?[/\\][^'\n]{1,300})'")
#: UTF-8 text decoded as Latin-1 / cp1252: a lead byte C2/C3/E2 shown as ``Â``/``Ã``/``â``
#: (or lower-cased ``ã``) followed by a continuation byte 0x80-0xBF, shown as itself, as its
#: cp1252 letter, or as a ``\\xNN`` escape.
MOJIBAKE = lazy_regex.compile(r"[ÂÃâã](?:[\x80-\xbf€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]|\\x[89ab][0-9a-f])")


def repaired_name(path: str) -> str | None:
    """The path as its author wrote it, when ``path`` (as the message quotes it, with
    ``\\xNN`` escapes) reads as UTF-8 decoded as Latin-1 (:data:`MOJIBAKE`); ``None`` when it
    does not, or when re-encoding fails. A lead byte the index lower-cased (``ã`` for ``Ã``)
    is restored first."""
    if not MOJIBAKE.search(path):
        return None
    import ast  # here: most logs have no such path, and a start need not load the parser

    try:
        text = ast.literal_eval("'" + path.replace("'", "\\'") + "'")
    except (ValueError, SyntaxError):
        return None
    for candidate in (text, text.replace("ã", "Ã").replace("â", "Â")):
        for codec in ("latin-1", "cp1252"):
            try:
                return candidate.encode(codec).decode("utf-8")
            except (UnicodeEncodeError, UnicodeDecodeError):
                continue
    return None


def sample_load_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """Findings of :data:`SAMPLE_SIGNATURE`, one per rank, for the exceptions the module
    describes; captures ``path`` (as quoted), ``file`` (its last part), ``where``
    (``file:line`` of the innermost user frame, or of the innermost frame), ``func``, and
    ``repaired`` (the name re-read as UTF-8, only for a garbled one). Empty when the
    signature is missing."""
    return exceptions_per_rank(
        SAMPLE_SIGNATURE, ("Error",), findings, state, library, _sample_captures
    )


def _sample_captures(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`sample_load_errors` for ``seen`` (``path``, ``file``,
    ``where``, ``func``, maybe ``repaired``), or ``None`` when it is not a file error raised
    loading a sample that quotes the sample's path."""
    exc = seen.exc
    if exc.type.rsplit(".", 1)[-1] not in FILE_ERRORS:
        return None
    if not any(SAMPLE_FRAME.search(f"{fr.file}:{fr.func}") for fr in exc.frames):
        return None
    m = QUOTED_PATH.search(exc.message)
    if m is None:
        return None
    path = m["path"]
    frame = next((fr for fr in reversed(exc.frames) if fr.user), exc.frames[-1])
    captures = {
        "path": path,
        "file": path.replace("\\\\", "/").rsplit("/", 1)[-1],
        "where": f"{frame.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{frame.line}",
        "func": frame.func,
    }
    repaired = repaired_name(path)
    if repaired is not None:
        captures["repaired"] = repaired.replace("\\", "/").rsplit("/", 1)[-1]
    return captures
