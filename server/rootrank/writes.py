"""Whole writes to a file descriptor: a line is either written entirely or the reader is gone.

Why not ``stream.write``: CPython's buffered writers (3.11) can drop the rest of a large
write when a signal arrives while a pipe is full and the write returns short, even when the
Python signal handler returns normally (measured: a 27 KB JSON line cut after 8,192 or 16,384
bytes, the next line glued to it, in about 1 of 100 Ctrl-C's during ``rootrank triage
--format json``). ``os.write`` in a loop that takes short writes and ``EINTR`` as they come
has no such gap.
"""

from __future__ import annotations

import io
import os
import time
from typing import IO


def write_all(fd: int, data: bytes) -> bool:
    """Write every byte of ``data`` to the file descriptor ``fd``, retrying short writes,
    ``EINTR`` and ``EAGAIN`` (a non-blocking descriptor: 10 ms pauses).

    Returns ``False`` (and writes nothing more) once the reader is gone: ``EPIPE`` or
    another ``OSError``. Never raises ``OSError``.
    """
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            time.sleep(0.01)
            continue
        except OSError:  # BrokenPipeError included: the reader left
            return False
        view = view[n:]
    return True


def write_text(stream: IO[str], text: str) -> bool:
    """Write ``text`` to a text ``stream`` whole: through its file descriptor with
    :func:`write_all` (after flushing what the stream already holds, encoded with the
    stream's own encoding and error handler), or with ``stream.write`` + ``flush`` for a
    stream without one (``io.StringIO``).

    Returns ``False`` once the reader is gone. Raises ``UnicodeEncodeError`` as
    ``stream.write`` would for text the stream's encoding cannot hold.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        stream.write(text)
        stream.flush()
        return True
    data = text.encode(
        getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict"
    )
    try:
        stream.flush()
    except OSError:
        return False
    return write_all(fd, data)
