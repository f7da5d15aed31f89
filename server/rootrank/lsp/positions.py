"""Column conversions between Python code points and the client's position encoding.

The engine reports columns as 0-based offsets in Python ``str`` code points (UTF-32
units). LSP positions count code units of the encoding negotiated at ``initialize``
(``general.positionEncodings``; UTF-16 when the client names none, per the LSP 3.17
specification, "Position"). pygls negotiates the encoding
(``ls.workspace.position_encoding``); these helpers convert one line at a time with
C-speed fast paths, so a 10 MB single-line document does not cost a Python loop per
character the way ``pygls.workspace.PositionCodec`` does.
"""

from __future__ import annotations

from lsprotocol import types

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value


def normalise_encoding(encoding: object) -> str:
    """Return ``"utf-8"``, ``"utf-16"`` or ``"utf-32"`` for a pygls/lsprotocol encoding value.

    Anything unknown (including ``None``) is UTF-16, the LSP default.
    """
    value = getattr(encoding, "value", encoding)
    if value in (UTF8, UTF32):
        return str(value)
    return UTF16


def to_client_units(line: str, column: int, encoding: str) -> int:
    """Convert a 0-based code-point ``column`` of ``line`` to client code units.

    ``column`` is clamped to ``0..len(line)``. Raises nothing.
    """
    column = max(0, min(column, len(line)))
    if encoding == UTF32:
        return column
    prefix = line[:column]
    if prefix.isascii():
        return column
    if encoding == UTF8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_client_units(line: str, units: int, encoding: str) -> int:
    """Convert a 0-based client ``units`` offset in ``line`` to a code-point column.

    An offset past the end of the line (or in the middle of a character) yields the
    next character boundary, clamped to ``len(line)``, as the LSP specification asks
    ("If the character value is greater than the line length it defaults back to the
    line length").
    """
    units = max(0, units)
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    counted = 0
    for index, char in enumerate(line):
        if counted >= units:
            return index
        code = ord(char)
        if encoding == UTF8:
            counted += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        else:
            counted += 2 if code > 0xFFFF else 1
    return len(line)
