"""A rank killed by SIGPIPE: quote the pipe reader's own last words.

Mechanism: the kernel sends SIGPIPE to a process that writes to a pipe after its last reader
closed its end (pipe(7)). In a training job the reader is a process the rank feeds (a
subprocess started with ``stdin=PIPE``, a ``| head`` or logger after the command), and that
process exited first: the first event of the failure is the reader's exit, not the rank's
death. A reader that exits on bad input usually says why on its own stderr, which the
terminal shows without any rank's tag (a child does not inherit the launcher's ``[rankN]:``
prefix nor the script's own ``rank 3 ...`` words) just before the launcher's report.

Needed: a ``worker-sigpipe-exit`` finding (rootrank.analysis.signal_exit, from mp.spawn's
``terminated with signal SIGPIPE``, torchrun's ``exitcode: -13`` or srun's ``Broken pipe``).
Its ``reader`` capture is set to a sentence quoting the last line of the log's heads before
the finding's line that names no rank (:func:`rootrank.ranks.ranks_in`, :data:`_RANK_WORD`),
carries no logger header (:func:`rootrank.ranks.strip_log_header`) and is not part of a
traceback or the launch command (:data:`_NOT_WORDS`), at most :data:`WINDOW` lines before it;
to a sentence saying no such line is there otherwise (the report then claims nothing).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature whose findings get the ``reader`` capture.
SIGPIPE_EXIT = "worker-sigpipe-exit"
#: Most lines before the launcher's report searched for the reader's words.
WINDOW = 40
#: A script's own words for its rank (``[rank 2]``, ``rank 1 step 3``, ``rank=0``).
_RANK_WORD = lazy_regex.compile(r"(?i)\b(?:local_)?rank\s*[=:]?\s*\d")
#: Lines that are not a process's message: a traceback and its frames, a shell prompt, blank,
#: mp.spawn's header of a child's traceback (``-- Process 1 terminated with the following error:``).
_NOT_WORDS = lazy_regex.compile(
    r"^\s*$|^\s|^\$ |^Traceback \(most recent call last\)|^[\w.]+(?:Error|Exception)\b|^\S+ FAILED$|^[=-]{8,}"
    r"|^-- Process \d+ terminated with"
)
#: Characters of the quoted line kept.
_QUOTE_CHARS = 200


def sigpipe_reader(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each ``worker-sigpipe-exit`` finding's ``reader`` capture set (see the
    module docstring) and, when a line was found, that line added to its evidence (after the report's);
    ``findings`` unchanged when there is none or the signature is not in ``library``."""
    sig = library.signatures.get(SIGPIPE_EXIT)
    if sig is None or not any(f.signature == SIGPIPE_EXIT for f in findings):
        return findings
    out: list[Finding] = []
    for f in findings:
        if f.signature != SIGPIPE_EXIT:
            out.append(f)
            continue
        reader, line = reader_sentence(f, state, "the death", "the report")
        new = f.recast(sig, {**f.captures, "reader": reader})
        if line is not None:
            new.evidence.append(line)
        out.append(new)
    return out


def reader_sentence(
    f: Finding, state: ScanState, event: str, none_before: str
) -> tuple[str, Evidence | None]:
    """A sentence quoting the reader's own last words before ``f`` (``event`` names what they
    came before: ``"the death"``), with that line as evidence; a sentence saying no line
    before ``none_before`` (``"the report"``) shows them, and ``None``, otherwise (see the
    module docstring)."""
    words = _reader_words(f, state)
    if words is None:
        return (
            f"no line before {none_before} that no rank tagged shows the reader's own words",
            None,
        )
    path, line, text = words
    quote = text[-_QUOTE_CHARS:]
    return (
        f"the last line before {event} that no rank tagged, most likely the reader's own"
        f" words on why it stopped, is line {line}: `{quote}`",
        Evidence(path, line, text, None),
    )


def _reader_words(f: Finding, state: ScanState) -> tuple[str, int, str] | None:
    """``(path, 1-based line, text)`` of the last untagged message line of ``f``'s source
    before ``f``'s first evidence line, within :data:`WINDOW` lines; None when there is none
    or ``f`` has no evidence."""
    from rootrank.ranks import ranks_in, strip_log_header

    if not f.evidence:
        return None
    at = f.evidence[0]
    for path, first, text in state.heads:
        if path != at.path:
            continue
        lines = text.split("\n")
        end = min(at.line - first, len(lines))
        for i in range(end - 1, max(end - WINDOW, 0) - 1, -1):
            body = lines[i].rstrip()
            if _NOT_WORDS.search(body) or ranks_in(body) or _RANK_WORD.search(body):
                continue
            if strip_log_header(body) != body:
                continue  # a logger's record (the launcher's own warnings), not a child's words
            return path, first + i, body
    return None
