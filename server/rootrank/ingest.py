"""Ingestion: bytes in, cleaned logical lines out, each pointing at its original line.

What real terminals and launchers leave in a log, and what happens to it here:

- invalid UTF-8 is kept as U+FFFD (``errors="replace"``); a UTF-16 file (PowerShell's ``>``
  writes UTF-16LE with a BOM) is decoded as UTF-16, once its content confirms the BOM (a
  UTF-16 mark before UTF-8 text is dropped and the text read as UTF-8); a UTF-32 file with
  its BOM (``iconv -t utf-32``: ``FF FE 00 00`` little-endian, ``00 00 FE FF`` big-endian) is
  decoded as UTF-32, checked before UTF-16 since its little-endian mark begins with UTF-16LE's;
- ANSI escape sequences are removed, and so are their escape-less leftovers (``[1;36m``,
  ``1;36m``) that remain when a tool strips the ESC byte only;
- ``\\r`` progress-bar overwrites are collapsed to what the terminal last showed (the text
  after the last ``\\r``); a trailing ``\\r`` (CRLF) is dropped;
- the output of two ranks glued on one line (``...loss 0.23[rank1]: Traceback``) is split
  where a launcher rank prefix starts mid-line; both parts keep the original line number;
- torchelastic error files hold a traceback as one JSON string with ``\\n`` escapes: such a
  line is expanded into one logical line per escaped line, all with the original number;
- a line longer than :data:`MAX_LINE_BYTES` (megabytes of ``\\r`` progress frames, a
  minified JSON dump) is read whole, in pieces of at most that size, each cut where the text
  allows (a ``\\r`` frame, an escaped ``\\n``, a space): every piece is searched as the
  same line number (:attr:`Block.continues`), so an error at the end of a 20 MB line is found.

Memory is bounded by one block (:data:`BLOCK_BYTES`) plus one line piece
(:data:`MAX_LINE_BYTES`); files are never read whole.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from rootrank import lazy_regex, re_code

#: A physical line longer than this (bytes) is read in pieces of at most this size.
MAX_LINE_BYTES = 1 << 20
#: Bytes at the end of a piece searched for a place to cut it (see :func:`_piece_end`).
CUT_WINDOW_BYTES = 64 << 10

_ANSI = lazy_regex.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL/ST (terminal titles, links)
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\[(?:\d{1,3};)*\d{1,3}m"  # leftover "[1;36m" after the ESC was stripped
    r"|(?<![\w.:/])(?:\d{1,3};)+\d{1,3}m(?=\S|$)"  # leftover "1;36m" (needs a ';')
    r"|\[0m|\[m(?![a-z])"  # leftover reset "[0m" / "[m" (not the "[m" of "[missing")
)

#: A launcher rank prefix (or an application's ``[rank N] `` tag) that may start mid-line
#: when two ranks' writes are glued: ``[rank 0] step 3 loss 0.62[rank 1] step 3 loss nan``,
#: ``[rank2] step 6/12 loss 1.6776[rank1] step 6/12 loss 1.6776`` (unbuffered output of two
#: processes sharing one terminal line), ``rank 1 step 5 loss 0.3971rank 0 step 5 loss 0.2907``.
_GLUED = lazy_regex.compile(
    r"(?<=\S)(?<!\]:)(?=\[(?:rank|default)\d{1,6}\]:|\[(?:rank|RANK|Rank) ?\d{1,6}\] )"
    # a bare ``rank N step ...`` tag glued right after the other rank's last number
    r"|(?<=\d)(?=rank \d{1,6}[ :,])"
)

_JSON_TRACEBACK = lazy_regex.compile(r"Traceback \(most recent call last\):\\n")


@dataclass(slots=True)
class RawLine:
    """One logical line: ``number`` is 1-based in the file, ``raw`` the physical line as
    decoded, ``text`` the cleaned message (evidence columns index ``raw``). ``offset`` is
    where ``raw`` starts in its physical line (code points; not 0 only for a piece of a line
    longer than :data:`MAX_LINE_BYTES`): a column in ``raw`` plus it is the line's column."""

    number: int
    raw: str
    text: str
    offset: int = 0


class InputError(Exception):
    """The input cannot be read as a log. ``str(e)`` is one line for the user."""


def strip_ansi(s: str) -> str:
    """Remove ANSI escape sequences and their escape-less leftovers from ``s``."""
    if not _may_have_ansi(s):
        return s
    return _ANSI.sub("", s)


#: What every escape-less leftover :data:`_ANSI` removes ends in: ``[`` or ``;``, up to three
#: digits, ``m`` (``[0m``, ``[m``, ``[1;36m``, ``1;36m``). A line without it and without ESC has
#: nothing to strip (a ``[rank3]: ... mem 61.0GiB`` line used to pay a full ``_ANSI.sub``).
_ANSI_LEFTOVER = lazy_regex.compile(r"[\[;]\d{0,3}m")


def _may_have_ansi(s: str) -> bool:
    return "\x1b" in s or (
        "m" in s and ("[" in s or ";" in s) and _ANSI_LEFTOVER.search(s) is not None
    )


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
    return split_glued(s)


def split_glued(s: str) -> list[str]:
    """``s`` (one cleaned line) cut before every rank prefix that starts mid-line
    (:data:`_GLUED`: two ranks' writes glued on one line), or ``[s]``."""
    if ("]:" in s or "ank" in s or "ANK" in s) and _GLUED.search(s):
        out: list[str] = []
        start = 0
        for m in _GLUED.finditer(s):
            out.append(s[start : m.start()])
            start = m.start()
        out.append(s[start:])
        return out
    return [s]


#: Characters a text log does not hold: undecodable bytes (U+FFFD), DEL and the C0 controls
#: other than tab, newline, \v, \f, \r and ESC. Counted natively (0.03 ms an 8 KiB head, where
#: a Python loop took 0.3 ms: a folder of 1,024 per-rank files sniffs 1,024 heads).
#: A run of zero bytes (a block a node crash left unwritten), dropped before the binary sniff.
_ZERO_FILL = re_code.compile(rb"\x00{16,}")
_NOT_TEXT = re_code.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")


#: What a tar archive given as a log is told (its headers are mostly NUL padding, which the
#: binary test forgives as a crash's zero-filled block, and its members are text: read as one
#: log, 20 jobs' files would make one confident, wrong diagnosis).
TAR_MESSAGE = "a tar archive, not a text log: extract it (tar xf) and pass its folder"


def is_tar_header(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, after decompression) starts with a tar header:
    a 512-byte block whose checksum field (bytes 148-155, octal) is the sum of the block's
    bytes with that field read as spaces, and ``ustar`` at byte 257 (POSIX ustar and GNU tar;
    the layout is Python's ``tarfile`` module's and POSIX pax's, IEEE Std 1003.1 "ustar
    Interchange Format"). Never raises."""
    if len(head) < 512 or head[257:262] != b"ustar":
        return False
    field = head[148:156].replace(b"\x00", b" ").strip()
    try:
        stored = int(field, 8)
    except ValueError:
        return False
    block = head[:512]
    return stored == sum(block[:148]) + 8 * 0x20 + sum(block[156:512])


def _sniff(head: bytes) -> str:
    """Pick the decoding for a file from its first bytes.

    Raises:
        InputError: when the bytes look binary (over 10% control or undecodable bytes).
    """
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)) and _utf32_content(head):
        return "utf-32"  # before UTF-16: FF FE 00 00 also starts with UTF-16LE's mark
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
    if is_tar_header(head):
        raise InputError(TAR_MESSAGE)
    # Zero-filled blocks (a log cut by a node crash) are not binary; other control bytes
    # and undecodable bytes are counted.
    sample = _ZERO_FILL.sub(b"", head[:8192])
    if sample:
        decoded = sample.decode("utf-8", errors="replace")
        bad = len(_NOT_TEXT.findall(decoded))
        if bad > 0.1 * len(decoded):
            raise InputError("binary data, not a text log")
    return "utf-8"


def _utf32_content(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, starting with a UTF-32 byte-order mark) is
    UTF-32 text: every 4-byte unit of the sample (cut to whole units) is a code point below
    U+110000 and not U+0000. A UTF-16LE file whose BOM is followed by a U+0000 character
    would start with the same four bytes; its next units fail this check."""
    big = head.startswith(codecs.BOM_UTF32_BE)
    sample = head[4 : 4 + 4096]
    sample = sample[: len(sample) - len(sample) % 4]
    for i in range(0, len(sample), 4):
        cp = int.from_bytes(sample[i : i + 4], "big" if big else "little")
        if cp == 0 or cp >= 0x110000:
            return False
    return True


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
    1-based number of the block's first line. ``continues`` is true for a piece of a line
    longer than :data:`MAX_LINE_BYTES` after its first: ``text`` is then that one piece
    (no ``\\n``), ``first_line`` the number of the line it belongs to and ``offset`` where
    the piece starts in that line (code points). ``newlines`` is the number of ``\\n`` in
    ``text`` when the reader counted them (-1: not counted).
    """

    text: str
    lower_bytes: bytes
    first_line: int
    continues: bool = False
    offset: int = 0
    newlines: int = -1


def read_blocks(
    stream: BinaryIO, *, block_bytes: int = BLOCK_BYTES, sniff: bool = True, first_line: int = 1
) -> Iterator[Block]:
    """Read a binary stream as blocks of whole lines, never holding more than one block
    plus one line piece (:data:`MAX_LINE_BYTES`) in memory: a longer line ends its block
    with its first piece and its other pieces follow as blocks of their own
    (:attr:`Block.continues`). ``first_line`` is the 1-based number the stream's first
    line gets (a selection's first line in its file).

    Raises:
        InputError: ``sniff`` is on and the stream holds binary data.
    """
    buffered: io.BufferedReader = (
        stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    )
    encoding = _sniff(buffered.peek(8192)[:8192]) if sniff else "utf-8"
    if encoding != "utf-8":
        yield from _reencoded_blocks(buffered, encoding, block_bytes, first_line)
        return
    number = first_line
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
            if _cr_line_ends(buf):
                buffered = io.BufferedReader(_CrLineEnds(buf, buffered), buffer_size=1 << 16)
                buf = buffered.read(block_bytes)
        rest, goes_on = b"", False
        if not buf.endswith(b"\n"):
            tail = buffered.readline(MAX_LINE_BYTES)
            buf += tail
            if tail and not tail.endswith(b"\n"):
                nxt = buffered.peek(1)[:1]
                if nxt == b"\n":  # the line ends right at the limit
                    buf += buffered.read(1)
                elif nxt:  # it goes on: its other pieces follow as blocks of their own
                    start = buf.rfind(b"\n") + 1
                    cut = _piece_end(buf, start, len(buf))
                    buf, rest, goes_on = buf[:cut], buf[cut:], True
        block = _block(buf, number)
        number += block.newlines + int(buf.endswith(b"\n"))  # buf.count(b"\n"), counted once
        yield block
        if goes_on:
            yield from _pieces(buffered, rest, number, len(block.text) - block.text.rfind("\n") - 1)
            number += 1


def _cr_line_ends(head: bytes) -> bool:
    """Whether a log's first block (``head``, bytes) ends its lines with ``\\r`` alone: it
    holds a ``\\r`` between two lines' text and no ``\\n`` but a last one (a file written by a
    classic Mac OS tool, a terminal capture that kept the carriage returns only).

    A ``\\r`` inside a ``\\n`` line is a progress frame (tqdm redraws its bar with ``\\r``),
    so one ``\\n`` between lines in the head keeps every ``\\r`` of the file a frame
    (:func:`clean`); a log of frames only with no ``\\n`` at all is read one frame a line.
    """
    body = head.rstrip(b"\r\n")
    return b"\r" in body and b"\n" not in body


class _CrLineEnds(io.RawIOBase):
    """A stream whose line ends are ``\\r`` read with ``\\n`` ones: ``head`` (bytes already
    read from ``rest``), then ``rest``, each ``\\r`` and ``\\r\\n`` given as ``\\n`` (a ``\\r``
    at the end of a read waits for the next byte, so a ``\\r\\n`` cut by a read is one line
    end). Line numbers are then those of an editor that breaks lines at ``\\r``."""

    _CHUNK = 1 << 16

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._rest = rest
        self._out = b""
        self._at = 0  # how much of ``_out`` was given
        self._cr = False  # the last read ended in a "\r" not given yet
        self._ended = False
        self._translate(head)

    def readable(self) -> bool:
        return True

    def _translate(self, data: bytes) -> None:
        if self._cr:
            data = b"\r" + data
        self._cr = data.endswith(b"\r")
        if self._cr:
            data = data[:-1]
        self._out, self._at = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), 0

    def readinto(self, buf: Any) -> int:
        while self._at >= len(self._out):
            if self._ended:
                return 0
            read1 = getattr(self._rest, "read1", self._rest.read)
            data = read1(self._CHUNK)
            if not data:
                self._ended = True
                self._out, self._at, self._cr = (b"\n" if self._cr else b""), 0, False
                continue
            self._translate(data)
        n = min(len(buf), len(self._out) - self._at)
        buf[:n] = self._out[self._at : self._at + n]
        self._at += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._rest.close()
        super().close()


def _pieces(buffered: io.BufferedReader, rest: bytes, number: int, offset: int) -> Iterator[Block]:
    """The pieces after the first of line ``number`` (1-based), as continuing blocks: the
    line's bytes already read (``rest``), then the stream up to and including the
    line's ``\\n`` (or its end), at most :data:`MAX_LINE_BYTES` per piece. ``offset`` is
    the first piece's length in code points (where the next piece starts)."""
    pending = rest
    ended = False
    while True:
        while not ended and len(pending) < MAX_LINE_BYTES:
            more = buffered.readline(MAX_LINE_BYTES - len(pending))
            pending += more
            ended = not more or more.endswith(b"\n")
        if ended and len(pending) <= MAX_LINE_BYTES:
            piece = pending.rstrip(b"\n")
            if piece:
                yield _piece(piece, number, offset)
            return
        cut = _piece_end(pending, 0, MAX_LINE_BYTES)
        block = _piece(pending[:cut], number, offset)
        offset += len(block.text)
        yield block
        pending = pending[cut:]


def _piece(data: bytes, number: int, offset: int) -> Block:
    text = data.decode("utf-8", errors="replace")
    return Block(text, data.lower(), number, continues=True, offset=offset)


def _piece_end(data: Any, start: int, end: int) -> int:
    """Where to cut a piece of an over-long line that starts at ``start`` in ``data``, at
    most at ``end`` (byte offsets): in its last :data:`CUT_WINDOW_BYTES`, before the last
    ``\\r`` (the next piece starts with a whole progress frame), else after the last escaped
    ``\\n`` (a JSON string's line break: a traceback in a JSON dump keeps whole lines),
    else after the last space; else at ``end``, moved back to a UTF-8 character boundary.
    ``data`` is bytes (a stream's line) or str (a line of a block, offsets in characters)."""
    low = max(start + 1, end - CUT_WINDOW_BYTES)
    cr_mark, marks = (b"\r", (b"\\n", b" ")) if isinstance(data, bytes) else ("\r", ("\\n", " "))
    cr = data.rfind(cr_mark, low, end)
    if cr > start:
        return cr
    for mark in marks:
        at = data.rfind(mark, low, end)
        if at != -1 and at + len(mark) <= end:
            return at + len(mark)
    cut = end
    if isinstance(data, bytes):
        while cut > low and cut < len(data) and data[cut] & 0xC0 == 0x80:
            cut -= 1  # not inside a multi-byte character
    return cut


def _block(buf: bytes, number: int) -> Block:
    """The block of the lines in ``buf`` (a last ``\\n`` dropped), its newlines counted once
    here (on bytes: a decode never adds or drops a ``\\n``) for the reader and the scan."""
    if buf.endswith(b"\n"):
        buf = buf[:-1]
    text = buf.decode("utf-8", errors="replace")
    return Block(text, buf.lower(), number, newlines=buf.count(b"\n"))


def _reencoded_blocks(
    buffered: io.BufferedReader, encoding: str, block_bytes: int, first_line: int = 1
) -> Iterator[Block]:
    text_stream = io.TextIOWrapper(buffered, encoding=encoding, errors="replace", newline="\n")
    number = first_line
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


#: A line that starts with a non-blank character (then a block has no common indent).
_UNINDENTED = re_code.compile(r"^[^\s]", re.MULTILINE)


def dedented(blocks: Iterable[Block]) -> Iterator[Block]:
    """``blocks`` with the indent every non-blank line of the first block shares removed: a
    log pasted as a Markdown code block, or per-rank files that keep the space after a
    ``[rankN]:`` prefix, read like the unindented log (a traceback whose lines are all
    shifted right is otherwise read as frame lines only). The indent (spaces/tabs) comes
    from the first block; a later block loses it only when all its non-blank lines carry it,
    so :attr:`Block.offset` (set to the indent's length) keeps evidence columns exact.
    Pieces of an over-long line (:attr:`Block.continues`) pass through unchanged."""
    prefix: str | None = None
    lacking = strip = _UNINDENTED  # the lines without the indent, the indent (set below)
    for block in blocks:
        if block.continues or prefix == "":
            yield block
            continue
        text = block.text
        if prefix is None:  # the first block: the indent its non-blank lines share
            if _UNINDENTED.search(text):
                prefix = ""
                yield block
                continue
            indents = [
                line[: len(line) - len(line.lstrip(" \t"))]
                for line in text.split("\n")
                if line.strip()
            ]
            prefix = os.path.commonprefix(indents) if indents else ""
            if not prefix:
                yield block
                continue
            lacking = re.compile(f"^(?!{re.escape(prefix)})(?=[^\\n]*\\S)", re.MULTILINE)
            strip = re.compile(f"^{re.escape(prefix)}", re.MULTILINE)
        if lacking.search(text):  # a non-blank line without the indent: left as it is
            yield block
            continue
        text = strip.sub("", text)
        data = text.encode("utf-8", errors="replace")
        yield Block(
            text,
            data.lower(),
            block.first_line,
            offset=len(prefix),
            newlines=block.newlines,  # (only indents removed)
        )


def text_blocks(text: str, first_line: int = 1) -> Iterator[Block]:
    """Blocks of text already in memory (an editor buffer, a selection whose first line is
    line ``first_line`` of its file, 1-based): no binary check."""
    yield from read_blocks(
        io.BytesIO(text.encode("utf-8", errors="replace")), sniff=False, first_line=first_line
    )


def logical_lines(number: int, raw: str, offset: int = 0) -> list[RawLine]:
    """Clean one physical line (1-based ``number``) into its logical lines; ``raw`` starts
    ``offset`` code points into the line (a piece of a longer one, see :class:`Block`)."""
    if len(raw) > MAX_LINE_BYTES:  # searched whole, in pieces (see _piece_end)
        out: list[RawLine] = []
        start = 0
        while len(raw) - start > MAX_LINE_BYTES:
            cut = _piece_end(raw, start, start + MAX_LINE_BYTES)
            out += logical_lines(number, raw[start:cut], offset + start)
            start = cut
        return out + logical_lines(number, raw[start:], offset + start)
    if "\x00" in raw:
        raw = raw.replace("\x00", "")
    if (
        "\r" not in raw
        and "]:" not in raw
        and "\\n" not in raw
        and not _may_have_ansi(raw)
        and "ank" not in raw
        and "ANK" not in raw
    ):
        return [RawLine(number, raw, raw, offset)]
    return [RawLine(number, raw, text, offset) for text in clean(raw)]


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
    return decompressed(fh, path)


def check_log(path: str | os.PathLike[str]) -> None:
    """Check, before a diagnosis, that ``path`` can be read as a log: it opens, and its first
    8 KiB (after decompression) are text. A named pipe is not read (its data would be lost);
    a folder is not checked here (``rootrank.engine.expand_paths`` reads folders).

    Raises:
        InputError: as :func:`open_log` (missing, a folder, unreadable, a device), binary
            data, or a compressed file that cannot be decompressed; the message names ``path``.
    """
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):
            return
    except OSError:
        pass  # open_log says what is wrong
    with open_log(path) as fh:
        try:
            head = fh.read(8192)
        except (OSError, EOFError, ValueError) as exc:
            raise InputError(f"{path}: cannot be read ({exc})") from None
    try:
        _sniff(head)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


# --- compressed logs ----------------------------------------------------------------------
# Archived logs are often compressed (logrotate's gzip, `xz`, `zstd`). They are recognised by
# their magic bytes, whatever their name, and decompressed as a stream (memory stays bounded by
# one block). A truncated file yields what it holds; corrupt data is an InputError.

#: Names of compressed logs a folder scan also reads (``train.log.gz``, ``slurm-12.out.zst``).
COMPRESSED_SUFFIXES = (".gz", ".zst", ".xz", ".bz2")
_GZIP_MAGIC = b"\x1f\x8b"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: bzip2: "BZh", the block size ('1'..'9'), then the first block's magic (pi's digits,
#: 0x314159265359) or, for an empty stream, the end-of-stream magic (sqrt(pi), 0x177245385090)
#: (bzip2's format: https://sourceware.org/bzip2/manual/manual.html and its source,
#: compress.c); "BZh" alone can start a text line.
_BZIP2_MAGIC = re_code.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
#: Bytes enough to tell every compression above from text.
_MAGIC_BYTES = 10


def strip_compression(name: str) -> str:
    """``name`` without a compression suffix (``a.log.gz`` -> ``a.log``)."""
    low = name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


class _Decompressed(io.RawIOBase):
    """A decompressing reader over an open file; closing it closes the file.

    ``new`` makes a decompressor (``zlib.decompressobj`` for gzip, ``lzma.LZMADecompressor``
    for xz, ``bz2.BZ2Decompressor`` for bzip2, :class:`_ZstdChunks` for zstd through the
    ``zstandard`` package), or is ``None`` when ``reader`` is already a decompressing file
    object (zstd through Python 3.14's ``compression.zstd``). Concatenated members, streams
    or frames are read one after another; a stream cut short ends at the last byte that
    decompressed (a job killed while its log was compressed); corrupt data raises
    :class:`InputError`, so callers see one kind of error. ``cut_short`` tells, once the
    reader has given its last byte, that the data ended before its end-of-stream marker
    (gzip's trailer, xz's stream footer, bzip2's end-of-stream magic, a zstd frame's end;
    ``compression.zstd``'s reader says so itself)."""

    _CHUNK = 1 << 16

    def __init__(self, raw: BinaryIO, new: Any, what: str, reader: Any = None) -> None:
        self._raw, self._new, self.what, self._reader = raw, new, what, reader
        self._dec: Any = new() if new else None  # a decompressor object, or None with ``reader``
        self._input = b""
        self.cut_short = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        try:
            if self._reader is not None:
                return self._reader.readinto(buf)
            return self._decode_into(buf)
        except InputError:
            raise
        except (
            EOFError
        ):  # compression.zstd: "Compressed file ended before the end-of-stream marker"
            self.cut_short = True
            return 0
        except Exception as exc:  # noqa: BLE001 - zlib.error, lzma.LZMAError, zstandard.ZstdError
            raise InputError(f"corrupt {self.what} data ({exc})") from None

    def _decode_into(self, buf: Any) -> int:
        want = len(buf)
        while want:
            dec = self._dec
            if dec.eof:  # the next gzip member / xz stream, if any
                tail = dec.unused_data or self._raw.read(self._CHUNK)
                if not tail.strip(b"\0"):  # end of file, or the zero padding of a tape/block device
                    return 0
                self._dec, self._input = self._new(), tail
                continue
            if not self._input and getattr(dec, "needs_input", True):
                self._input = self._raw.read(self._CHUNK)
                if not self._input:
                    self.cut_short = True
                    return 0  # cut short: end at what decompressed
            out = dec.decompress(self._input, want)
            self._input = getattr(dec, "unconsumed_tail", b"")  # zlib keeps unread input there
            if out:
                buf[: len(out)] = out
                return len(out)
        return 0

    def close(self) -> None:
        if not self.closed:
            try:
                if self._reader is not None:
                    self._reader.close()
            finally:
                self._raw.close()
        super().close()


def compression_of(head: bytes) -> str | None:
    """The compression (``"gzip"``, ``"xz"``, ``"zstd"``, ``"bzip2"``) whose magic number
    ``head`` (a file's first bytes, :data:`_MAGIC_BYTES` of them tell) starts with; ``None``
    for anything else."""
    for magic, what in ((_GZIP_MAGIC, "gzip"), (_XZ_MAGIC, "xz"), (_ZSTD_MAGIC, "zstd")):
        if head.startswith(magic):
            return what
    if _BZIP2_MAGIC.match(head):
        return "bzip2"
    return None


def check_text(head: bytes) -> None:
    """Check that ``head`` (a file's first bytes, as stored) is text a log can hold (UTF-8,
    UTF-16, with or without a BOM).

    Raises:
        InputError: "binary data, not a text log" (over 10% control or undecodable bytes).
    """
    _sniff(head)


class _ZstdChunks:
    """A ``zstandard`` decompression object (one frame) with the interface of
    ``bz2.BZ2Decompressor``/``lzma.LZMADecompressor`` that :class:`_Decompressed` drives:
    ``decompress(data, max_length)``, ``eof``, ``needs_input``, ``unused_data``. zstandard's
    ``decompress`` takes no ``max_length``; what it gave past it waits in ``_out`` (at most
    what one 64 KiB read of input decompresses to). Its ``eof`` (the frame's end was read) is
    what tells a whole file from one cut short: its ``stream_reader`` ends silently at a cut."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj
        self._out = b""

    @property
    def eof(self) -> bool:
        return bool(self._obj.eof) and not self._out

    @property
    def needs_input(self) -> bool:
        return not self._out and not self._obj.eof

    @property
    def unused_data(self) -> bytes:
        return bytes(self._obj.unused_data)

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if data:
            self._out += self._obj.decompress(data)
        out, self._out = self._out[:max_length], self._out[max_length:]
        return out


def cut_short(fh: BinaryIO) -> str | None:
    """The compression (``"gzip"``, ``"xz"``, ``"zstd"``, ``"bzip2"``) of ``fh``, a reader from
    :func:`decompressed` or :func:`open_log` read to its end, when its data ended before
    the end-of-stream marker (``gzip -c train.log | head -c 900``, a copy stopped midway):
    the lines read are all the file holds, not the whole log. ``None`` when it ended whole
    or is not compressed."""
    raw = getattr(fh, "raw", None)
    if isinstance(raw, _Decompressed) and raw.cut_short:
        return raw.what
    return None


def decompressed(fh: BinaryIO, name: str | os.PathLike[str] = "<stdin>") -> BinaryIO:
    """``fh`` itself, or a decompressing reader when its first bytes are gzip, xz or zstd.

    The magic bytes decide, not a name: standard input (``gzip -c train.log | rootrank
    diagnose -``, ``kubectl logs job/x | gzip | ...``) and named pipes are read like a
    ``.gz`` file. Nothing of ``fh`` is lost (see :func:`_head`). Closing the reader closes
    ``fh``. ``name`` only goes into error messages.

    Raises:
        InputError: a zstd stream and neither ``compression.zstd`` (Python 3.14) nor the
            ``zstandard`` package is available.
    """
    head, fh = _head(fh, _MAGIC_BYTES)
    what = compression_of(head)
    if what is None:
        return fh
    return _decompressing(fh, what, name)


def _head(fh: BinaryIO, n: int) -> tuple[bytes, BinaryIO]:
    """The first ``n`` bytes of ``fh`` (fewer when it ends sooner), and a stream that still
    starts with them: ``fh`` itself moved back where it was when it can seek (a file, stdin
    redirected from a file); ``fh`` itself when its buffer shows them without consuming
    (``io.BufferedReader.peek`` on a pipe); else, when the pipe's first write was shorter
    than ``n``, a stream that gives them back before the rest (:class:`_Prefixed`)."""
    try:
        seekable = fh.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        at = fh.tell()
        head = fh.read(n)
        fh.seek(at)
        return head, fh
    peek = getattr(fh, "peek", None)
    if peek is not None:
        head = peek(n)[:n]
        if len(head) >= n:
            return head, fh
    head = fh.read(n)  # io.BufferedReader.read(n) waits for n bytes or the end
    return head, prefixed(head, fh)


def prefixed(head: bytes, rest: BinaryIO) -> BinaryIO:
    """A buffered stream of ``head`` (bytes already read from ``rest``), then ``rest``:
    what was read to look at a pipe's start is given back. Closing it closes ``rest``."""
    return io.BufferedReader(_Prefixed(head, rest))  # type: ignore[return-value]


class _Prefixed(io.RawIOBase):
    """``head`` (bytes already read from ``rest``), then ``rest``; closing closes ``rest``."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        read1 = getattr(self._rest, "read1", self._rest.read)  # what one read of a pipe gives
        data = read1(len(buf))
        buf[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._rest.close()
        super().close()


def _decompressing(fh: BinaryIO, what: str, path: str | os.PathLike[str]) -> BinaryIO:
    """A decompressing reader over ``fh``, whose first bytes are the magic number of ``what``
    (:func:`compression_of`: gzip, xz, zstd or bzip2; :func:`decompressed`). A stream cut
    short is noticed (:func:`cut_short`) for all of them, zstd included: the ``zstandard``
    package is driven frame by frame (:class:`_ZstdChunks`), whose ``eof`` says a frame
    ended.

    Raises:
        InputError: a zstd stream and neither ``compression.zstd`` (Python 3.14) nor the
            ``zstandard`` package is available.
    """
    reader: Any = None
    new: Any  # a decompressor factory, or None when ``reader`` decompresses itself
    if what == "gzip":
        import zlib

        def new() -> Any:  # a gzip member (its header included)
            return zlib.decompressobj(16 + zlib.MAX_WBITS)

    elif what == "xz":
        import lzma

        new = lzma.LZMADecompressor
    elif what == "bzip2":
        import bz2

        new = bz2.BZ2Decompressor  # one stream; pbzip2's several follow one another
    elif what == "zstd":
        new = None
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14

            reader = zstd.ZstdFile(fh, mode="rb")
        except ImportError:
            try:
                import zstandard
            except ImportError:
                fh.close()
                from rootrank.extras import install_hint  # an error path only

                raise InputError(
                    f"{path}: a zstd-compressed log needs the zstandard package"
                    f" ({install_hint('fleet')}) or Python 3.14"
                ) from None
            dctx = zstandard.ZstdDecompressor()

            def new() -> Any:  # one zstd frame; the next (pzstd, appended files) follow
                return _ZstdChunks(dctx.decompressobj())

    else:  # pragma: no cover - decompressed() passes a magic number
        return fh
    return io.BufferedReader(_Decompressed(fh, new, what, reader), buffer_size=1 << 16)  # type: ignore[return-value]
