"""Bytes as they arrive, cut into whole lines.

A training job writes in chunks that end anywhere; a progress bar (tqdm, Lightning, the HF
Trainer) redraws itself with ``\\r`` and writes its ``\\n`` only when the loop ends. The
splitter hands out whole lines (with their ``\\r`` frames, as :mod:`rootrank.ingest` expects
them) and, for a line still being drawn, its last finished ``\\r`` frame (what the terminal
shows now), so progress is seen while the bar runs.

Memory is bounded: a partial line longer than :data:`MAX_PARTIAL_BYTES` keeps only its text
after the last ``\\r`` (what a terminal would show, and what the scan reads of a line of
frames). A line longer than :data:`rootrank.ingest.MAX_LINE_BYTES` (1 MiB) with no frame to
drop is handed out whole, in pieces, by the scan's own rule (:func:`rootrank.ingest._piece_end`:
at most 1 MiB each, cut at a ``\\r``, an escaped ``\\n`` or a space): each piece is a
:class:`Piece` that knows where it starts in its line, so the live scan searches every byte
of a 20 MB line under that line's one number, as ``rootrank diagnose`` does, and
:func:`joined` writes the line back unchanged.
"""

from __future__ import annotations

from rootrank.ingest import MAX_LINE_BYTES
from rootrank.ingest import _piece_end as piece_end  # the scan's one rule for a cut

#: A partial line holding ``\r`` frames is compacted past this many bytes.
MAX_PARTIAL_BYTES = 64 * 1024


class Piece(bytes):
    """A piece of a line longer than :data:`~rootrank.ingest.MAX_LINE_BYTES` (bytes, at
    most that many). ``offset``: where it starts in its line (code points; 0 for the first
    piece, which counts as the line); ``last``: it ends the line (the pieces before it are
    followed by no ``\\n``)."""

    offset: int
    last: bool

    def __new__(cls, data: bytes, offset: int, last: bool) -> Piece:
        piece = super().__new__(cls, data)
        piece.offset = offset
        piece.last = last
        return piece


def joined(lines: list[bytes], last: bool = False) -> bytes:
    """``lines`` as :meth:`LineSplitter.feed` gave them, as the bytes that were written: each
    followed by ``\\n``, except a :class:`Piece` that does not end its line (and the last
    item when ``last``: a stream's unfinished line from :meth:`LineSplitter.flush`)."""
    out = b"".join(ln if isinstance(ln, Piece) and not ln.last else ln + b"\n" for ln in lines)
    if last and out.endswith(b"\n") and not (isinstance(lines[-1], Piece) and not lines[-1].last):
        out = out[:-1]
    return out


class LineSplitter:
    """Feed bytes with :meth:`feed`; get whole lines (bytes, without their ``\\n``), and the
    pieces of an over-long line as :class:`Piece` items."""

    def __init__(self) -> None:
        self._partial = bytearray()
        self._frame_seen = 0  # bytes of the partial line already looked at for frames
        self._offset = 0  # code points of the current line already handed out as pieces

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the lines (and pieces of lines) it completed."""
        if not data:
            return []
        buf = self._partial
        buf += data
        out: list[bytes] = []
        cut = buf.rfind(b"\n")
        if cut != -1:
            lines = bytes(buf[:cut]).split(b"\n")
            del buf[: cut + 1]
            self._frame_seen = 0
            for ln in lines:
                out += self._pieces(ln, ends=True)
        self._compact()
        if len(buf) > MAX_LINE_BYTES:  # no frame to drop: hand out whole pieces
            rest = bytes(buf)
            buf.clear()
            self._frame_seen = 0
            out += self._pieces(rest, ends=False)
        return out

    def frame(self) -> bytes | None:
        """The last finished ``\\r`` frame of the line still being written (a progress bar's
        current state), once per new frame; ``None`` when there is no new one."""
        buf = self._partial
        end = buf.rfind(b"\r")
        if end <= self._frame_seen:
            return None
        start = buf.rfind(b"\r", 0, end) + 1
        self._frame_seen = end
        return bytes(buf[start:end])

    def flush(self) -> bytes | None:
        """The unfinished last line at the end of the stream, if any (a :class:`Piece` when
        pieces of it were handed out already)."""
        if not self._partial and not self._offset:
            return None
        rest = bytes(self._partial)
        self._partial.clear()
        self._frame_seen = 0
        if self._offset:
            piece = Piece(rest, self._offset, True)
            self._offset = 0
            return piece
        return rest

    def _pieces(self, line: bytes, ends: bool) -> list[bytes]:
        """``line`` (the rest of the current line; ``ends``: its ``\\n`` came) as items: the
        line itself when it is short and nothing of it was handed out before, else pieces of
        at most :data:`MAX_LINE_BYTES` cut by :func:`rootrank.ingest._piece_end`; a
        line that does not end keeps its last bytes (at most that many) in the buffer."""
        if self._offset == 0 and len(line) <= MAX_LINE_BYTES:
            return [line]
        out: list[bytes] = []
        start = 0
        while len(line) - start > MAX_LINE_BYTES:
            cut = piece_end(line, start, start + MAX_LINE_BYTES)
            out.append(Piece(line[start:cut], self._offset, False))
            self._offset += len(line[start:cut].decode("utf-8", errors="replace"))
            start = cut
        if ends:
            out.append(Piece(line[start:], self._offset, True))
            self._offset = 0
        else:
            self._partial += line[start:]
        return out

    def _compact(self) -> None:
        buf = self._partial
        if len(buf) <= MAX_PARTIAL_BYTES:
            return
        cr = buf.rfind(b"\r", 0, len(buf) - 1)
        if cr > 0:
            del buf[:cr]  # keep "\r<last frame>": the terminal shows only that
            self._frame_seen = 0
