"""Ingestion: bytes in, cleaned logical lines out, each pointing at its original line.

What real terminals and launchers leave in a log, and what happens to it here:

- invalid UTF-8 is kept as U+FFFD (``errors="replace"``); a UTF-16 file (PowerShell's ``>``
  writes UTF-16LE with a BOM) is decoded as UTF-16, once its content confirms the BOM (a
  UTF-16 mark before UTF-8 text is dropped and the text read as UTF-8);
- ANSI escape sequences are removed, and so are their escape-less leftovers (``[1;36m``,
  ``1;36m``) that remain when a tool strips the ESC byte only;
- ``\\r`` progress-bar overwrites are collapsed to what the terminal last showed (the text
  after the last ``\\r``); a trailing ``\\r`` (CRLF) is dropped;
- the output of two ranks glued on one line (``...loss 0.23[rank1]: Traceback``) is split
  where a launcher rank prefix starts mid-line; both parts keep the original line number;
- torchelastic error files hold a traceback as one JSON string with ``\\n`` escapes: such a
  line is expanded into one logical line per escaped line, all with the original number;
- a line longer than :data:`MAX_LINE_BYTES` is cut there (the rest is skipped, not kept).

Memory is bounded by one block (:data:`BLOCK_BYTES`) plus one line (:data:`MAX_LINE_BYTES`);
files are never read whole.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
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
    r"|\[0m|\[m(?![a-z])"  # leftover reset "[0m" / "[m" (not the "[m" of "[missing")
)

#: A launcher rank prefix that may start mid-line when two ranks' writes are glued.
_GLUED = regex.compile(r"(?<=\S)(?<!\]:)(?=\[(?:rank|default)\d{1,6}\]:)")

_JSON_TRACEBACK = regex.compile(r"Traceback \(most recent call last\):\\n")


@dataclass(slots=True)
class RawLine:
    """One logical line: ``number`` is 1-based in the file, ``raw`` the physical line as
    decoded, ``text`` the cleaned message (evidence columns index ``raw``)."""

    number: int
    raw: str
    text: str


class InputError(Exception):
    """The input cannot be read as a log. ``str(e)`` is one line for the user."""


def strip_ansi(s: str) -> str:
    """Remove ANSI escape sequences and their escape-less leftovers from ``s``."""
    if not _may_have_ansi(s):
        return s
    return _ANSI.sub("", s)


def _may_have_ansi(s: str) -> bool:
    return "\x1b" in s or ("m" in s and ("[" in s or ";" in s))


def clean(raw: str) -> list[str]:
    """Clean one physical line into the texts of its logical lines."""
    s = raw
    if "\r" in s:
        s = s.rstrip("\r")
        cut = s.rfind("\r")
        # A line that only ends in progress output keeps its last non-empty frame.
        while cut != -1 and not s[cut + 1 :].strip():
            s = s[:cut]
            cut = s.rfind("\r")
        if cut != -1:
            s = s[cut + 1 :]
    s = strip_ansi(s)
    if "\\n" in s and _JSON_TRACEBACK.search(s):
        return s.replace("\\t", "\t").replace('\\"', '"').split("\\n")
    if "]:" in s and _GLUED.search(s):
        out: list[str] = []
        start = 0
        for m in _GLUED.finditer(s):
            out.append(s[start : m.start()])
            start = m.start()
        out.append(s[start:])
        return out
    return [s]


def _sniff(head: bytes) -> str:
    """Pick the decoding for a file from its first bytes.

    Raises:
        InputError: when the bytes look binary (over 10% control or undecodable bytes).
    """
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and _utf16_content(head[2:]):
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
        bad = sum(
            1
            for ch in decoded
            if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b") or ch == "\x7f"
        )
        if bad > 0.1 * len(decoded):
            raise InputError("binary data, not a text log")
    return "utf-8"


def _utf16_content(body: bytes) -> bool:
    """Whether the bytes after a UTF-16 byte-order mark are UTF-16 text, as the mark claims.

    A log's text holds ASCII (digits, spaces, newlines, prefixes), which UTF-16 writes with
    a zero byte each; a body with no zero byte that is valid UTF-8 (the last character may be
    cut by the sample's end) is UTF-8 behind two stray bytes (a tool that wrote a BOM and
    then UTF-8, or a log cut and glued), and decoding it as UTF-16 would turn every line
    into one of CJK-looking garbage. An empty body trusts the mark.
    """
    sample = body[:4096]
    if not sample or b"\x00" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False


#: Bytes read per block; a block always ends at a line boundary.
BLOCK_BYTES = 4 << 20


@dataclass(slots=True)
class Block:
    """Whole physical lines of a log, decoded.

    ``text`` holds the lines joined by ``\\n``; ``lower_bytes`` is the block's UTF-8 bytes with
    ASCII letters lower-cased (the gate searches it); ``first_line`` is the
    1-based number of the block's first line.
    """

    text: str
    lower_bytes: bytes
    first_line: int


def read_blocks(
    stream: BinaryIO, *, block_bytes: int = BLOCK_BYTES, sniff: bool = True
) -> Iterator[Block]:
    """Read a binary stream as blocks of whole lines, never holding more than one block
    plus one line (:data:`MAX_LINE_BYTES`; a longer line's excess is skipped) in memory.

    Raises:
        InputError: ``sniff`` is on and the stream holds binary data.
    """
    buffered: io.BufferedReader = (
        stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    )
    encoding = _sniff(buffered.peek(8192)[:8192]) if sniff else "utf-8"
    if encoding != "utf-8":
        yield from _reencoded_blocks(buffered, encoding, block_bytes)
        return
    number = 1
    first = True
    while True:
        buf = buffered.read(block_bytes)
        if not buf:
            return
        if first:
            first = False
            if buf.startswith(codecs.BOM_UTF8):
                buf = buf[3:]
            elif buf.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                buf = buf[2:]  # a UTF-16 mark before UTF-8 text (see _utf16_content): not text
        if not buf.endswith(b"\n"):
            tail = buffered.readline(MAX_LINE_BYTES)
            buf += tail
            if tail and not tail.endswith(b"\n"):
                rest = b""
                while True:  # skip the rest of an over-long line
                    piece = buffered.readline(MAX_LINE_BYTES)
                    rest = piece or rest
                    if not piece or piece.endswith(b"\n"):
                        break
                cr = rest.rfind(b"\r", 0, len(rest) - 1)
                if cr != -1:  # \r progress frames: the line's last frame is what it shows
                    buf += rest[cr:].rstrip(b"\n")
                buf += b"\n"
        block = _block(buf, number)
        number += buf.count(b"\n")
        yield block


def _block(buf: bytes, number: int) -> Block:
    if buf.endswith(b"\n"):
        buf = buf[:-1]
    return Block(buf.decode("utf-8", errors="replace"), buf.lower(), number)


def _reencoded_blocks(
    buffered: io.BufferedReader, encoding: str, block_bytes: int
) -> Iterator[Block]:
    text_stream = io.TextIOWrapper(buffered, encoding=encoding, errors="replace", newline="\n")
    number = 1
    while True:
        chunk = text_stream.read(block_bytes // 2)
        if not chunk:
            return
        if not chunk.endswith("\n"):
            chunk += text_stream.readline(MAX_LINE_BYTES)
        data = chunk.encode("utf-8", errors="replace")
        if not data.endswith(b"\n"):
            data += b"\n"
        yield _block(data, number)
        number += data.count(b"\n")


def text_blocks(text: str) -> Iterator[Block]:
    """Blocks of text already in memory (an editor buffer, a selection): no binary check."""
    yield from read_blocks(io.BytesIO(text.encode("utf-8", errors="replace")), sniff=False)


def logical_lines(number: int, raw: str) -> list[RawLine]:
    """Clean one physical line (1-based ``number``) into its logical lines."""
    if len(raw) > MAX_LINE_BYTES:
        # \r progress frames overwrite each other: the end holds what the terminal showed.
        raw = raw[-MAX_LINE_BYTES:] if "\r" in raw[-MAX_LINE_BYTES:] else raw[:MAX_LINE_BYTES]
    if "\x00" in raw:
        raw = raw.replace("\x00", "")
    if "\r" not in raw and "]:" not in raw and "\\n" not in raw and not _may_have_ansi(raw):
        return [RawLine(number, raw, raw)]
    return [RawLine(number, raw, text) for text in clean(raw)]


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a log file for reading as bytes.

    Raises:
        InputError: the path is missing, a folder, unreadable or not a regular file or pipe.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    mode = os.fstat(fh.fileno()).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        fh.close()  # a device (/dev/zero, a tty) would never end
        raise InputError(f"{path}: not a regular file or pipe")
    return fh
