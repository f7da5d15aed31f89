"""Map the engine's positions onto the editor's lines.

The engine numbers physical lines split on ``\\n`` only (a ``\\r`` inside one is a
progress-bar overwrite, :mod:`rootrank.ingest`), while an editor also breaks lines on a
lone ``\\r`` (LSP 3.17, "Text Documents"). For a text without ``\\r`` the two agree and
the map is the identity; otherwise positions go through absolute offsets.
"""

from __future__ import annotations

import bisect
import operator
from itertools import accumulate, count

from lsprotocol import types

from .documents import LogDocument, strip_break
from .positions import to_client_units


class LineMap:
    """Converts engine ``(line 1-based, column 0-based code points)`` to LSP ranges.

    Built once per analysed document version; lookups are O(log n).
    """

    def __init__(self, document: LogDocument, encoding: str) -> None:
        self.document = document
        self.encoding = encoding
        text = document.text
        # Only a lone "\r" (not part of "\r\n") makes the two numberings differ.
        self._identity = "\r" not in text or text.count("\r") == text.count("\r\n")
        self._editor_starts: list[int] = []
        self._engine_starts: list[int] = []
        if not self._identity:
            self._editor_starts = [0, *accumulate(map(len, document.lines))]
            # start of line i+1 = lengths of lines 0..i + their i+1 "\n" (C-level loops only)
            lengths = accumulate(map(len, text.split("\n")))
            self._engine_starts = [0, *map(operator.add, lengths, count(1))]

    def editor_position(self, line: int, column: int | None) -> tuple[int, int]:
        """Editor ``(line, code-point column)``, both 0-based, of an engine position.

        ``line`` is the engine's 1-based line; ``column`` a 0-based code-point offset
        into that physical line (``None`` = its start).
        """
        column = max(0, column or 0)
        if self._identity:
            return line - 1, column
        if not 1 <= line <= len(self._engine_starts):
            return line - 1, column
        offset = self._engine_starts[line - 1] + column
        editor_line = bisect.bisect_right(self._editor_starts, offset) - 1
        editor_line = max(0, min(editor_line, len(self.document.lines) - 1))
        return editor_line, offset - self._editor_starts[editor_line]

    def editor_line(self, line: int) -> int:
        """The 0-based editor line where the engine's 1-based ``line`` starts."""
        return self.editor_position(line, 0)[0]

    def range(self, line: int, start: int | None, end: int | None) -> types.Range:
        """The LSP range of engine line ``line`` (1-based) from ``start`` to ``end``.

        When the columns are unknown (``None``) the range covers the line's text
        without its leading indentation. Columns are converted to the client's encoding.
        """
        if start is None or end is None or end < start:
            first, _ = self.editor_position(line, 0)
            content = (
                strip_break(self.document.lines[first])
                if 0 <= first < len(self.document.lines)
                else ""
            )
            left = len(content) - len(content.lstrip())
            return self._lsp_range(first, left, first, len(content))
        first, first_col = self.editor_position(line, start)
        last, last_col = self.editor_position(line, end)
        return self._lsp_range(first, first_col, last, last_col)

    def _lsp_range(self, line1: int, col1: int, line2: int, col2: int) -> types.Range:
        doc = self.document
        text1 = doc.line(line1)
        text2 = text1 if line2 == line1 else doc.line(line2)
        return types.Range(
            start=types.Position(
                line=max(0, line1), character=to_client_units(text1, col1, self.encoding)
            ),
            end=types.Position(
                line=max(0, line2), character=to_client_units(text2, col2, self.encoding)
            ),
        )
