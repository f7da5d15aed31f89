"""A BrokenPipeError raised writing to a local pipe (a child process's stdin, an ``os.pipe``,
a ``multiprocessing`` Connection, the process's own piped stdout): its reader exited, no peer.

Mechanism: ``BrokenPipeError`` (EPIPE, errno 32) is what a write gets once the other end of
a pipe or a socket is closed. On a socket it is a peer going away (read as
``connection-reset-by-peer``, a symptom). But when the frame that raised writes to a child
process's pipe (``proc.stdin.write(...)``, ``proc.stdin.flush()``, ``proc.communicate(...)``:
subprocess's own ``_stdin_write``), the closed end is the child's stdin: the child the rank
started exited (it failed on its input, it finished early, it was killed) while the rank
still wrote to it. The same holds for any local pipe the frame writes to: ``os.write`` on an
``os.pipe()`` / FIFO descriptor, ``multiprocessing.Connection.send`` (``connection.py``), the
process's own ``sys.stdout`` piped into a reader: a pipe has no network peer, its EPIPE is
its reader's exit (or its read end closed). The first event is the reader's exit, on the rank that raised: that rank
initiates, and the child's own last words, printed to the shared stderr without any rank's
tag, say why (read as :mod:`rootrank.analysis.broken_pipe` reads a SIGPIPE death's reader).

Needed: a ``connection-reset-by-peer`` finding whose first evidence line is a
``BrokenPipeError`` exception the scan kept, whose innermost frame's quoted code writes to a
pipe (:data:`_PIPE_WRITE`) or runs inside ``subprocess.py``. The finding becomes
:data:`PIPE_SIGNATURE` (same rank, lines) with a ``reader`` capture (the child's words, or
a sentence saying none is shown) and ``code``: the quoted write.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.broken_pipe import reader_sentence
from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library
from rootrank.tracebacks import Frame

#: The symptom a pipe's EPIPE is first read as.
FROM_SIGNATURE = "connection-reset-by-peer"
#: The signature it becomes (class user-code-exception, ``detector: analysis``).
PIPE_SIGNATURE = "subprocess-pipe-reader-exited"
#: A write to a child process's pipe, as the traceback quotes it: ``proc.stdin.write(x)``,
#: ``self.child.stdin.flush()``, ``p.communicate(data)``, ``print(x, file=proc.stdin)``.
_PIPE_WRITE = lazy_regex.compile(
    r"\.stdin\.(?:write|writelines|flush)\(|\.communicate\(|file\s*=\s*[\w.]*\.stdin\b"
    # a local pipe's raw file descriptor (``os.pipe()``'s write end, a FIFO opened with
    # ``os.open``): ``os.write(w, b"x")``, ``os.writev(fd, bufs)``
    r"|\bos\.writev?\("
    # the process's own stdout/stderr, piped into a reader that exited (``| head``, a logger)
    r"|\bsys\.(?:stdout|stderr)\.(?:write|flush)\("
)
#: A frame of the standard library's pipe-backed channel (``multiprocessing.Connection``'s
#: ``send``/``send_bytes``, a ``Queue``'s feeder thread): a write to a local pipe whose
#: reading process exited, as ``subprocess.py``'s frames are.
_PIPE_LIBRARY = ("subprocess.py", "multiprocessing/connection.py", "multiprocessing/queues.py")


def _writes_to_pipe(frames: list[Frame]) -> str | None:
    """The quoted code of the write (the innermost frame's, or the user's call under
    subprocess's own frames) when the stack writes to a child's pipe, else ``None``."""
    if not frames:
        return None
    last = frames[-1]
    if _PIPE_WRITE.search(last.code or ""):
        return str(last.code)
    if last.file.replace("\\", "/").endswith(_PIPE_LIBRARY):
        for fr in reversed(frames):
            if not fr.file.replace("\\", "/").endswith(_PIPE_LIBRARY):
                return str(fr.code) or None
        return str(last.code) or None
    return None


def subprocess_pipe_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each ``connection-reset-by-peer`` finding raised by a write to a
    child process's pipe (see the module docstring) replaced by a :data:`PIPE_SIGNATURE`
    finding; ``findings`` unchanged when there is none or the signature is not in
    ``library``."""
    sig = library.signatures.get(PIPE_SIGNATURE)
    if sig is None or not any(f.signature == FROM_SIGNATURE for f in findings):
        return findings
    out: list[Finding] = []
    for f in findings:
        code = _pipe_code(f, state) if f.signature == FROM_SIGNATURE else None
        if code is None:
            out.append(f)
            continue
        reader, line = reader_sentence(f, state, "the error", "the error")
        new = f.recast(sig, {**f.captures, "reader": reader, "code": code.strip()})
        if line is not None:
            new.evidence.append(line)
        out.append(new)
    return out


def _pipe_code(f: Finding, state: ScanState) -> str | None:
    """The quoted pipe write of the BrokenPipeError at ``f``'s first evidence line, if any."""
    if not f.evidence or "BrokenPipeError" not in f.evidence[0].text:
        return None
    at = f.evidence[0]
    for seen in state.exceptions:
        if seen.path == at.path and seen.exc.log_line == at.line:
            if seen.exc.type.rsplit(".", 1)[-1] != "BrokenPipeError":
                return None
            return _writes_to_pipe(seen.exc.frames)
    return None
