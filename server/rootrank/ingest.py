"""Ingestion: bytes in, cleaned logical lines out, each pointing at its original line.

What real terminals and launchers leave in a log, and what happens to it here:

- invalid UTF-8 is kept as U+FFFD (``errors="replace"``); a UTF-16 file (PowerShell's ``>``
  writes UTF-16LE with a BOM) is decoded as UTF-16;
- ANSI escape sequences are removed, and so are their escape-less leftovers (``[1;36m``,
  ``1;36m``) that remain when a tool strips the ESC byte only;
- ``\\r`` progress-bar overwrites are collapsed to what the terminal last showed (the text
  after the last ``\\r``); a trailing ``\\r`` (CRLF) is dropped;
- the output of two ranks glued on one line (``...loss 0.23[rank1]: Traceback``) is split
  where a launcher rank prefix starts mid-line; both parts keep the original line number;
- torchelastic error files hold a traceback as one JSON string with ``\\n`` escapes: such a
  line is expanded into one logical line per escaped line, all with the original number;
- a line longer than :data:`MAX_LINE_BYTES` is cut there (the rest is skipped, not kept).

Memory is bounded by one line (:data:`MAX_LINE_BYTES`) plus the reader's buffer; files are
never read whole.
"""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import regex

#: A physical line longer than this (bytes) is cut; the remainder is skipped.
MAX_LINE_BYTES = 1 << 20

_ANSI = regex.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL/ST (terminal titles, links)
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\[(?:\d{1,3};)*\d{1,3}m"  # leftover "[1;36m" after the ESC was stripped
    r"|(?<![\w.:/])(?:\d{1,3};)+\d{1,3}m(?=\S|$)"  # leftover "1;36m" (needs a ';')
    r"|\[0?m"  # leftover reset "[0m" / "[m"
)

#: A launcher rank prefix that may start mid-line when two ranks' writes are glued.
_GLUED = regex.compile(r"(?<=\S)(?=\[(?:rank|default)\d{1,6}\]:)")

_JSON_TRACEBACK = regex.compile(r"Traceback \(most recent call last\):\\n")


@dataclass(slots=True)
class RawLine:
    """One logical line: ``number`` is 1-based in the file; ``offset`` is the 0-based index
    in ``raw`` where ``text`` starts when ``text`` is a substring of ``raw`` (else ``None``)."""

    number: int
    raw: str
    text: str
    offset: int | None


class InputError(Exception):
    """The input cannot be read as a log. ``str(e)`` is one line for the user."""


def strip_ansi(s: str) -> str:
    """Remove ANSI escape sequences and their escape-less leftovers from ``s``."""
    if not _may_have_ansi(s):
        return s
    return _ANSI.sub("", s)


def _may_have_ansi(s: str) -> bool:
    return "\x1b" in s or ("m" in s and ("[" in s or ";" in s))


def clean(raw: str) -> list[tuple[str, int | None]]:
    """Clean one physical line into logical lines.

    Returns a list of ``(text, offset)``; ``offset`` is where ``text`` starts in ``raw``
    when cleaning removed nothing inside it, else ``None``.
    """
    s = raw
    base = 0
    if "\r" in s:
        s = s.rstrip("\r")
        cut = s.rfind("\r")
        # A line that only ends in progress output keeps its last non-empty frame.
        while cut != -1 and not s[cut + 1 :].strip():
            s = s[:cut]
            cut = s.rfind("\r")
        if cut != -1:
            base = cut + 1
            s = s[cut + 1 :]
    if _may_have_ansi(s):
        stripped = _ANSI.sub("", s)
        exact = stripped == s
        s = stripped
    else:
        exact = True
    if "\\n" in s and _JSON_TRACEBACK.search(s):
        parts = s.replace("\\t", "\t").replace('\\"', '"').split("\\n")
        return [(p, None) for p in parts]
    if "]:" in s and _GLUED.search(s):
        out: list[tuple[str, int | None]] = []
        start = 0
        for m in _GLUED.finditer(s):
            out.append((s[start : m.start()], base + start if exact else None))
            start = m.start()
        out.append((s[start:], base + start if exact else None))
        return out
    return [(s, base if exact else None)]


def _sniff(head: bytes) -> str:
    """Pick the decoding for a file from its first bytes.

    Raises:
        InputError: when the bytes look binary (over 10% control or undecodable bytes).
    """
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16"
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if b"\x00" in head:
        sample = head[:4096]
        even = sample[0::2].count(0)
        odd = sample[1::2].count(0)
        half = max(1, len(sample) // 2)
        if odd > 0.4 * half and even < 0.05 * half:
            return "utf-16-le"
        if even > 0.4 * half and odd < 0.05 * half:
            return "utf-16-be"
    # Zero-filled blocks (a log cut by a node crash) are not binary; other control bytes
    # and undecodable bytes are counted.
    sample = regex.sub(rb"\x00{16,}", b"", head[:8192])
    if sample:
        decoded = sample.decode("utf-8", errors="replace")
        bad = sum(1 for ch in decoded if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b") or ch == "\x7f")
        if bad > 0.1 * len(decoded):
            raise InputError("binary data, not a text log")
    return "utf-8"


def read_lines(stream: BinaryIO) -> Iterator[RawLine]:
    """Yield the cleaned logical lines of a binary stream, one physical line at a time.

    Raises:
        InputError: the stream holds binary data (see :func:`_sniff`).
    """
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    head = buffered.peek(8192)[:8192]
    encoding = _sniff(head)
    if encoding != "utf-8":
        text_stream = io.TextIOWrapper(buffered, encoding=encoding, errors="replace", newline="\n")
        number = 0
        while True:
            line = text_stream.readline(MAX_LINE_BYTES)
            if not line:
                return
            number += 1
            if not line.endswith("\n"):
                rest = line
                while rest and not rest.endswith("\n"):
                    rest = text_stream.readline(MAX_LINE_BYTES)
            yield from _logical(number, line.rstrip("\n"))
        return
    number = 0
    readline = buffered.readline
    while True:
        chunk = readline(MAX_LINE_BYTES)
        if not chunk:
            return
        number += 1
        if not chunk.endswith(b"\n"):
            rest = chunk
            while rest and not rest.endswith(b"\n"):
                rest = readline(MAX_LINE_BYTES)
        else:
            chunk = chunk[:-1]
        if number == 1 and chunk.startswith(codecs.BOM_UTF8):
            chunk = chunk[3:]
        raw = chunk.decode("utf-8", errors="replace")
        if "\x00" in raw:
            raw = raw.replace("\x00", "")
        yield from _logical(number, raw)


def _logical(number: int, raw: str) -> Iterator[RawLine]:
    if "\r" not in raw and "]:" not in raw and "\\n" not in raw and not _may_have_ansi(raw):
        yield RawLine(number, raw, raw, 0)
        return
    for text, offset in clean(raw):
        yield RawLine(number, raw, text, offset)


def read_text(text: str) -> Iterator[RawLine]:
    """Yield the cleaned logical lines of text already in memory (an editor buffer)."""
    number = 0
    for physical in text.split("\n"):
        number += 1
        yield from _logical(number, physical[:MAX_LINE_BYTES])
    return


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a log file for reading as bytes.

    Raises:
        InputError: the path is missing, a folder, unreadable or not a regular file or pipe.
    """
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
