"""Open log documents, kept as lists of lines so that edits stay cheap on 50 MB files.

pygls' own ``TextDocument`` re-splits the whole text on every incremental change, which
makes 1,000 rapid ``didChange`` events on a 20 MB log take minutes; here an edit splices
only the lines it touches. Lines follow the LSP definition of a line break (``\\n``,
``\\r\\n`` or ``\\r``; LSP 3.17, "Text Documents"), so line numbers are the editor's.
"""

from __future__ import annotations

import fnmatch
import posixpath

from lsprotocol import types

from rootrank import re_code

from .positions import from_client_units

_BREAK = re_code.compile(r"\r\n|\r|\n")
#: Characters ``str.splitlines`` breaks at that LSP does not (VT, FF, FS, GS, RS, NEL, LS, PS).
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")

#: The documents diagnosed by default (the ``rootrank.documentGlobs`` setting replaces it).
#: ``stdout.log``/``stderr.log``/``error.json`` are the files torchrun writes under
#: ``--log-dir`` (torch.distributed.elastic, "Log files").
DEFAULT_GLOBS: tuple[str, ...] = (
    "*.log",
    "*.out",
    "*.err",
    "*.txt",
    "slurm-*.out",
    "stdout.log",
    "stderr.log",
    "error.json",
)


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines that keep their line break (LSP breaks only).

    ``"".join(split_lines(t)) == t`` always holds. A text ending in a break has no
    empty last element.
    """
    if "\r" not in text:
        parts = text.split("\n")
        lines = [part + "\n" for part in parts[:-1]]
        if parts[-1]:
            lines.append(parts[-1])
        return lines
    if not any(char in text for char in _OTHER_BREAKS):
        return text.splitlines(keepends=True)  # same breaks here, at C speed
    lines = []
    start = 0
    for match in _BREAK.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def strip_break(line: str) -> str:
    """``line`` without its trailing line break."""
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


def is_log_document(uri: str, language_id: str | None, globs: tuple[str, ...]) -> bool:
    """Whether a document is diagnosed.

    Language id ``log`` always is; Python sources (``python`` or ``*.py``) never are;
    anything else is when its file name (or, for a glob with a ``/``, its path) matches
    one of ``globs`` (``fnmatch`` syntax, case-sensitive).
    """
    path = uri.split("?", 1)[0].split("#", 1)[0]
    name = posixpath.basename(path)
    if language_id == "python" or name.endswith((".py", ".pyi")):
        return False
    if language_id == "log":
        return True
    for glob in globs:
        target = path if "/" in glob else name
        if fnmatch.fnmatchcase(target, glob) or (
            "/" in glob and fnmatch.fnmatchcase(target, "*/" + glob.lstrip("/"))
        ):
            return True
    return False


class LogDocument:
    """One open document: its lines (with breaks), version and language id.

    ``version`` is the client's document version (LSP ``VersionedTextDocumentIdentifier``).
    A document opened whole (``didOpen``, a whole-text change) keeps the text and splits it
    into lines on first use, so the analysis can start before the split (it runs while the
    engine process reads the text, :meth:`split`).
    """

    __slots__ = ("_lines", "_text", "language_id", "uri", "version")

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        lines: list[str] | None = None,
        _text: str | None = None,
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self._lines = lines if lines is not None or _text is not None else []
        self._text = _text

    @classmethod
    def open(cls, item: types.TextDocumentItem) -> LogDocument:
        """Build the document from ``textDocument/didOpen``'s item (lines split later)."""
        return cls(item.uri, item.language_id, item.version, None, item.text)

    @property
    def lines(self) -> list[str]:
        """The lines, each with its break (split from the text on first use)."""
        if self._lines is None:
            self._lines = split_lines(self._text or "")
        return self._lines

    @lines.setter
    def lines(self, value: list[str]) -> None:
        self._lines = value

    def split(self) -> None:
        """Split the text into lines now, if not done yet."""
        _ = self.lines

    @property
    def text(self) -> str:
        """The whole text (joined once per version and cached)."""
        if self._text is None:
            self._text = "".join(self.lines)
        return self._text

    @property
    def size(self) -> int:
        """Length of the text in code points."""
        return sum(map(len, self.lines)) if self._text is None else len(self._text)

    def line(self, number: int) -> str:
        """The 0-based line ``number`` without its break ("" past the end)."""
        if 0 <= number < len(self.lines):
            return strip_break(self.lines[number])
        return ""

    def apply(self, change: types.TextDocumentContentChangeEvent, encoding: str) -> None:
        """Apply one ``contentChanges`` entry (whole-text or ranged, client units)."""
        if not isinstance(change, types.TextDocumentContentChangePartial):
            self._lines = None  # split on first use
            self._text = change.text
            return
        lines = self.lines  # split before the text is dropped
        self._text = None
        if not lines:
            self.lines = split_lines(change.text)
            return
        start_line, start = self._offset(change.range.start, encoding)
        end_line, end = self._offset(change.range.end, encoding)
        if (end_line, end) < (start_line, start):
            start_line, start, end_line, end = end_line, end, start_line, start
        spliced = lines[start_line][:start] + change.text + lines[end_line][end:]
        lines[start_line : end_line + 1] = split_lines(spliced)

    def _offset(self, position: types.Position, encoding: str) -> tuple[int, int]:
        """(line index, code-point offset into that line *with* its break)."""
        last = len(self.lines) - 1
        if position.line > last:
            return last, len(self.lines[last])
        content = strip_break(self.lines[position.line])
        return position.line, from_client_units(content, position.character, encoding)


class DocumentStore:
    """The open documents by URI (all of them, so that a change of globs takes effect)."""

    def __init__(self) -> None:
        self._documents: dict[str, LogDocument] = {}

    def __contains__(self, uri: object) -> bool:
        return uri in self._documents

    def __len__(self) -> int:
        return len(self._documents)

    def get(self, uri: str) -> LogDocument | None:
        """The open document, or ``None``."""
        return self._documents.get(uri)

    def put(self, document: LogDocument) -> None:
        """Add or replace a document."""
        self._documents[document.uri] = document

    def remove(self, uri: str) -> LogDocument | None:
        """Forget a document; returns it if it was open."""
        return self._documents.pop(uri, None)

    def uris(self) -> list[str]:
        """The URIs of the open documents."""
        return list(self._documents)
