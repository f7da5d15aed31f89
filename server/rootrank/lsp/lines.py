"""Map the engine's positions onto the editor's lines.

The engine numbers physical lines split on ``\\n`` only (a ``\\r`` inside one is a
progress-bar overwrite, :mod:`rootrank.ingest`), while an editor also breaks lines on a
lone ``\\r`` (LSP 3.17, "Text Documents"). For a text without ``\\r`` the two agree and
the map is the identity; otherwise positions go through absolute offsets.
"""

from __future__ import annotations

import bisect
import operator
from array import array
from collections.abc import Sequence
from itertools import accumulate, compress, islice

from lsprotocol import types

from .documents import LogDocument, strip_break
from .positions import to_client_units


def engine_line_starts(lines: list[str], editor_starts: Sequence[int]) -> array[int]:
    """Offsets (code points) where the engine's lines start, split on ``\\n`` only, as
    ``[0, *(offset after each "\\n"), len(text) + 1]`` (the last one past the end, where
    ``text.split("\\n")``'s last piece would be followed by a line).

    ``lines`` are the editor's lines (:func:`~rootrank.lsp.documents.split_lines`) and
    ``editor_starts`` their starts (``[0, *accumulate(map(len, lines))]``). Every ``\\n``
    ends an editor line (alone or in ``\\r\\n``) and an editor line ends in ``\\n`` only
    at one, so the engine's lines start where the editor lines after those do: the same
    offsets as from ``text.split("\\n")``, without a second copy of the text as a list of
    strings (73 MB for a 54 MB log of 389,000 lines) nor a list of boxed ints.
    """
    starts = array("q", [0])
    starts.extend(
        compress(
            islice(editor_starts, 1, None), map(operator.methodcaller("endswith", "\n"), lines)
        )
    )
    starts.append(editor_starts[-1] + 1)
    return starts


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
        self._editor_starts: Sequence[int] = ()
        self._engine_starts: Sequence[int] = ()
        if not self._identity:
            lines = document.lines
            self._editor_starts = editor_starts = array("q", [0])
            editor_starts.extend(accumulate(map(len, lines)))
            self._engine_starts = engine_line_starts(lines, editor_starts)

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
