"""The LSP base protocol's framing on stdin, for pygls' message loop (``pygls.io_.run_async``).

A message is a header part and a content part (LSP specification, "Base Protocol"): header
fields ``Name: value`` each ending in ``\\r\\n``, then an empty ``\\r\\n`` line, then exactly
``Content-Length`` bytes of JSON. ``Content-Length`` is required; ``Content-Type`` is
optional (its charset, when given, must be UTF-8: ``utf-8``, or ``utf8`` for older clients).
Header names are read case-insensitively, as in HTTP, whose header format LSP reuses.

pygls' loop takes a reader with ``readline()`` (header lines) and ``readexactly(n)`` (the
content), and looks only for the exact line ``Content-Length: N\\r\\n``. After a header block
it cannot use (a line that is no header field, no ``Content-Length``) it would read the next
message's content as header lines and lose every message after it. :class:`FramedReader`
sits between stdin and that loop: it reads a whole header block itself, hands the loop the
canonical ``Content-Length: N\\r\\n`` and ``\\r\\n`` lines of a valid one, and after an
unusable one skips the input up to the next ``Content-Length:`` header (the start of the
next message) and reports the skipped byte count through ``on_skip``.

A header block whose content cannot be JSON-RPC at all (``Content-Length: 0``, a charset
other than UTF-8) has its content read and dropped here, and ``on_unreadable`` is told why:
the server answers it as a Parse error (-32700, ``id: null``), as JSON-RPC 2.0 asks for a
message that is not valid JSON.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from rootrank import re_code

#: Most bytes read from stdin in one call while looking for a header (a header line is far
#: shorter; skipped garbage is searched piece by piece, so memory stays bounded by this).
PIECE_BYTES = 64 * 1024
#: A header line longer than this (bytes) is not a header: the block is skipped.
MAX_HEADER_LINE = 8 * 1024
#: A header part (all its lines) longer than this (bytes) is not one: it is skipped.
MAX_HEADER_PART = 64 * 1024

_HEADER = re_code.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r?\n")
_NEXT_MESSAGE = re_code.compile(rb"content-length:", re.IGNORECASE)
_UTF8 = {b"utf-8", b"utf8"}


class FramedReader:
    """An async reader of LSP messages from a binary stream, for ``pygls.io_.run_async``.

    Args:
        stream: the binary input (``sys.stdin.buffer``); read in ``executor``'s threads.
        executor: where the blocking reads run (``None``: the event loop's default).
        on_skip: called with (bytes skipped, why) after input that was not a message was
            skipped (a garbage header block and what followed it up to the next header).
        on_unreadable: called with why, for a framed message whose content cannot be JSON
            (its content has been read and dropped).
    """

    def __init__(
        self,
        stream: BinaryIO,
        executor: ThreadPoolExecutor | None = None,
        *,
        on_skip: Callable[[int, str], None],
        on_unreadable: Callable[[str], None],
    ) -> None:
        self._stream = stream
        self._executor = executor
        self._on_skip = on_skip
        self._on_unreadable = on_unreadable
        self._buffer = b""  # bytes read from the stream and not yet handed on
        self._eof = False
        self._lines: deque[bytes] = deque()  # canonical header lines for the loop

    # ------------------------------------------------------------ pygls' reader interface
    async def readline(self) -> bytes:
        """The next header line for pygls' loop: ``Content-Length: N\\r\\n`` then ``\\r\\n``
        of the next usable message; ``b""`` at the end of the input."""
        if not self._lines:
            length = await self._next_header_block()
            if length is None:
                return b""
            self._lines.extend((b"Content-Length: %d\r\n" % length, b"\r\n"))
        return self._lines.popleft()

    async def readexactly(self, n: int) -> bytes:
        """The ``n`` content bytes that follow the header block (fewer at the input's end)."""
        take, self._buffer = self._buffer[:n], self._buffer[n:]
        missing = n - len(take)
        if missing > 0 and not self._eof:
            more = await self._read(self._stream.read, missing)
            if len(more) < missing:
                self._eof = True
            take += more
        return take

    # ------------------------------------------------------------------------ the framing
    async def _next_header_block(self) -> int | None:
        """The Content-Length of the next header block this reader can hand on, skipping
        and reporting what cannot be; ``None`` at the end of the input."""
        while True:
            fields: dict[bytes, bytes] = {}
            problem = ""
            block = b""  # the header block's bytes, read so far
            while True:
                line = await self._header_line()
                if line is None:
                    if block.strip():
                        self._on_skip(len(block), "the input ended inside a header")
                    return None
                block += line
                if line in (b"\r\n", b"\n"):
                    if not fields:
                        block = b""  # blank lines between messages: nothing to skip
                        continue
                    break
                m = _HEADER.fullmatch(line)
                if m is None:
                    problem = f"not a header field: {_shown(line)}"
                    break
                name = m.group(1).lower()
                if name in fields and fields[name] != m.group(2):
                    problem = f"two different {m.group(1).decode()} headers"
                    break
                fields[name] = m.group(2)
                if len(block) > MAX_HEADER_PART:
                    problem = f"a header part longer than {MAX_HEADER_PART} bytes"
                    break
            length_text = fields.get(b"content-length")
            if not problem and length_text is None:
                problem = "a header block without Content-Length"
            elif not problem and not length_text.isdigit():  # type: ignore[union-attr]
                problem = f"Content-Length is not a number: {_shown(length_text or b'')}"
            if problem:
                self._on_skip(await self._skip_to_next_message(block), problem)
                continue
            length = int(length_text)  # type: ignore[arg-type]
            charset = _charset(fields.get(b"content-type", b""))
            if length == 0:
                self._on_unreadable("Content-Length: 0 (an empty message is not JSON)")
                continue
            if charset is not None and charset not in _UTF8:
                await self.readexactly(length)
                self._on_unreadable(
                    f"charset {charset.decode('ascii', 'replace')} (LSP messages are UTF-8)"
                )
                continue
            return length

    async def _header_line(self) -> bytes | None:
        """The next line (with its ``\\n``) from the input, or its first
        :data:`MAX_HEADER_LINE` bytes when no newline comes that soon; ``None`` at the end."""
        while True:
            end = self._buffer.find(b"\n", 0, MAX_HEADER_LINE)
            if end != -1:
                line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
                return line
            if len(self._buffer) >= MAX_HEADER_LINE or (self._eof and self._buffer):
                line, self._buffer = self._buffer[:MAX_HEADER_LINE], self._buffer[MAX_HEADER_LINE:]
                return line
            if not await self._fill():
                if self._buffer:
                    continue  # the last line, without its newline
                return None

    async def _skip_to_next_message(self, block: bytes) -> int:
        """Drop input up to the next ``Content-Length:`` (any case), which starts the next
        message; returns the bytes dropped. The bad ``block`` is searched too, after its
        first byte: a bad message's content glued to the next header puts that header
        mid-line (``{}Content-Length: 52``). At most :data:`PIECE_BYTES` are held at once."""
        self._buffer = block[1:] + self._buffer
        skipped = 1
        keep = len("content-length:") - 1  # a header cut between two pieces
        while True:
            m = _NEXT_MESSAGE.search(self._buffer)
            if m is not None:
                skipped += m.start()
                self._buffer = self._buffer[m.start() :]
                return skipped
            drop = max(0, len(self._buffer) - keep)
            skipped += drop
            self._buffer = self._buffer[drop:]
            if not await self._fill():
                skipped += len(self._buffer)
                self._buffer = b""
                return skipped

    async def _fill(self) -> bool:
        """Read more of the input into the buffer; ``False`` at its end."""
        if self._eof:
            return False
        piece = await self._read(self._stream.readline, PIECE_BYTES)
        if not piece:
            self._eof = True
            return False
        self._buffer += piece
        return True

    async def _read(self, method: Callable[[int], bytes], n: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(self._executor, method, n)


def _charset(content_type: bytes) -> bytes | None:
    """The charset parameter of a Content-Type value, lower-cased; ``None`` when absent."""
    m = re.search(rb";\s*charset\s*=\s*\"?([^\";\s]+)", content_type, re.IGNORECASE)
    return m.group(1).lower() if m else None


def _shown(raw: bytes, limit: int = 40) -> str:
    """A short printable rendering of some input bytes, for a log message."""
    text = raw.rstrip(b"\r\n").decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")
