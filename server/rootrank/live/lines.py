"""Bytes as they arrive, cut into whole lines.

A training job writes in chunks that end anywhere; a progress bar (tqdm, Lightning, the HF
Trainer) redraws itself with ``\\r`` and writes its ``\\n`` only when the loop ends. The
splitter hands out whole lines (with their ``\\r`` frames, as :mod:`rootrank.ingest` expects
them) and, for a line still being drawn, its last finished ``\\r`` frame (what the terminal
shows now), so progress is seen while the bar runs.

Memory is bounded: a partial line longer than :data:`MAX_PARTIAL_BYTES` keeps only its text
after the last ``\\r`` (what a terminal would show), or is cut as :mod:`rootrank.ingest` cuts
lines (:data:`rootrank.ingest.MAX_LINE_BYTES`).
"""

from __future__ import annotations

from rootrank.ingest import MAX_LINE_BYTES

#: A partial line holding ``\r`` frames is compacted past this many bytes.
MAX_PARTIAL_BYTES = 64 * 1024


class LineSplitter:
    """Feed bytes with :meth:`feed`; get whole lines (bytes, without their ``\\n``)."""

    def __init__(self) -> None:
        self._partial = bytearray()
        self._frame_seen = 0  # bytes of the partial line already looked at for frames
        self._skipping = False  # inside the excess of an over-long line

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the lines it completed (without ``\\n``)."""
        if not data:
            return []
        if self._skipping:
            nl = data.find(b"\n")
            if nl == -1:
                return []
            self._skipping = False
            data = data[nl:]
        buf = self._partial
        buf += data
        cut = buf.rfind(b"\n")
        if cut == -1:
            self._compact()
            return []
        lines = bytes(buf[:cut]).split(b"\n")
        del buf[: cut + 1]
        self._frame_seen = 0
        self._compact()
        return [ln if len(ln) <= MAX_LINE_BYTES else _cut(ln) for ln in lines]

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
        """The unfinished last line at the end of the stream, if any."""
        if not self._partial:
            return None
        rest = bytes(self._partial)
        self._partial.clear()
        self._frame_seen = 0
        return rest if len(rest) <= MAX_LINE_BYTES else _cut(rest)

    def _compact(self) -> None:
        buf = self._partial
        if len(buf) <= MAX_PARTIAL_BYTES:
            return
        cr = buf.rfind(b"\r", 0, len(buf) - 1)
        if cr > 0:
            del buf[:cr]  # keep "\r<last frame>": the terminal shows only that
            self._frame_seen = 0
        elif len(buf) > MAX_LINE_BYTES:
            del buf[MAX_LINE_BYTES:]
            self._skipping = True


def _cut(line: bytes) -> bytes:
    cr = line.rfind(b"\r", len(line) - MAX_LINE_BYTES)
    return line[cr:] if cr != -1 else line[:MAX_LINE_BYTES]
