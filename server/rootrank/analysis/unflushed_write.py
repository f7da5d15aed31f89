"""A rank that fails to parse a file another rank just wrote: the writer is where it started.

Mechanism: one rank writes a shared file (a label index, a vocabulary, a pickled config) and
the others read it after a barrier or a wait. When the writer leaves the file object open (no
``with``, no ``close()``/``flush()`` before signalling), the bytes still in its userspace
buffer are not in the file yet: Python's ``open()`` buffers ``io.DEFAULT_BUFFER_SIZE`` (8192)
bytes and writes whole blocks, so the readers see the file cut at a multiple of the block
size, and their parser stops just before it (``JSONDecodeError: ... (char 16384)``, pickle's
``Ran out of input`` / ``pickle data was truncated``, ``EOFError``). The readers' tracebacks
are all the log shows of the failure, and a launcher's summary names one of them; the rank
that caused it is the one that said it wrote the file (``[rank 2] saved ... to run/x.json``).

Needed: the root's reading is an exception finding (:data:`READER_SIGNATURES`) whose type
and message are a parse of a cut file (:data:`_CUT_PARSE`), and a line before it, tagged with
another rank alone (:func:`rootrank.entry.hang_capture.rank_own_lines`), that says it
wrote a file (:data:`_WROTE`). The finding is recast as :data:`WRITER_SIGNATURE` on the
writer's rank; its captures gain ``writer_line`` (``line N: `...` ``), ``writer_rank``,
``written`` (the path the line names), ``readers`` (the ranks that failed to parse) and, when
the message gives a character offset within :data:`NEAR_BLOCK` below a multiple of
:data:`BLOCK` bytes, ``block_cut`` (that multiple).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature the recast finding takes.
WRITER_SIGNATURE = "shared-file-read-before-written"
#: Findings that read a reader's exception.
READER_SIGNATURES = frozenset({"user-code-exception", "data-decode-error"})
#: A parse that stopped at the end of a cut file: JSON's position, pickle's and EOF's words.
_CUT_PARSE = lazy_regex.compile(
    r"(?i)(?:JSONDecodeError|UnpicklingError|EOFError)$"
    r"|\(char \d+\)|ran out of input|pickle data was truncated|unterminated string|"
    r"unexpected end of|end of file"
)
#: A process's own words that it wrote a file, with the file (``saved ... to out/v.json``).
_WROTE = lazy_regex.compile(
    r"(?i)\b(?:wrote|written|writing|saved|saving|published|publishing|dumped|exported|stored)\b"
    r".*?(?P<path>[\w./~-]*\w\.(?:json|jsonl|pkl|pickle|pt|pth|npy|npz|ya?ml|txt|csv|tsv|bin|msgpack))\b"
)
#: The character offset JSON's decoder reports (``line 1 column 16385 (char 16384)``).
_CHAR = lazy_regex.compile(r"\(char (?P<n>\d+)\)")
#: The size of the blocks a buffered writer hands to the file (a multiple of 4096 bytes:
#: io.DEFAULT_BUFFER_SIZE is 8192, a file system's block 4096).
BLOCK = 4096
#: How far below a block's end the parser may stop (it reports where the cut token began).
NEAR_BLOCK = 64


def writer_of_read_file(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each reader's parse error (see the module docstring) recast on the
    rank that said it wrote a file before it; unchanged when no such line is in the log or the
    signature is missing."""
    sig = library.signatures.get(WRITER_SIGNATURE)
    if sig is None:
        return findings
    readers = sorted(
        {
            f.rank
            for f in findings
            if f.signature in READER_SIGNATURES and f.rank is not None and _cut_parse(f)
        }
    )
    if not readers:
        return findings
    out: list[Finding] = []
    for f in findings:
        moved = _recast(f, state, sig, readers) if f.signature in READER_SIGNATURES else None
        out.append(moved or f)
    return out


def _cut_parse(f: Finding) -> bool:
    """Whether ``f``'s exception is a parse that stopped at the end of a cut file."""
    return bool(
        _CUT_PARSE.search(f.captures.get("exc_type", ""))
        and (_CUT_PARSE.search(f.captures.get("message", "")) or not f.captures.get("message"))
    )


#: A rank a line names (``[rank2]``, ``rank 0``, ``rank=1``): the candidates whose own lines
#: (:func:`rootrank.entry.hang_capture.rank_own_lines`) are then read.
_RANK_NUMBER = lazy_regex.compile(r"(?i)\brank\W{0,2}(\d+)")


def _writing_ranks(texts: list[tuple[str, int, str]], path: str, before: int) -> set[int]:
    """The ranks named on lines of ``path`` before line ``before`` (1-based) that say a file
    was written (:data:`_WROTE`), read from the kept heads and tails ``texts`` (``(path, first
    line, text)``)."""
    ranks: set[int] = set()
    for where, first, text in texts:
        if where != path or first >= before:
            continue
        for line in text.split("\n")[: before - first]:
            if "ank" in line and _WROTE.search(line):
                ranks.update(int(n) for n in _RANK_NUMBER.findall(line))
    return ranks


def _recast(f: Finding, state: ScanState, sig: object, readers: list[int]) -> Finding | None:
    """The :data:`WRITER_SIGNATURE` finding for reader ``f``, or ``None``."""
    from rootrank.entry.hang_capture import rank_own_lines

    if f.rank is None or not f.evidence or not _cut_parse(f):
        return None
    at = f.evidence[0]
    texts = [*state.heads, *state.tails]
    said: list[tuple[int, int, str, str]] = []
    for rank in sorted(_writing_ranks(texts, at.path, at.line) - set(readers)):
        for line, text in rank_own_lines(texts, at.path, at.line, rank):
            m = _WROTE.search(text)
            if m:
                said.append((line, rank, text, m["path"]))
    if not said:
        return None
    line, rank, text, path = max(said)  # the last write before the reader's error
    captures = {
        **f.captures,
        "writer_rank": str(rank),
        "writer_line": f"line {line}: `{text}`",
        "written": path,
        "readers": ", ".join(str(r) for r in readers),
    }
    char = _CHAR.search(f.captures.get("message", ""))
    if char:
        n = int(char["n"])
        block = -(-n // BLOCK) * BLOCK
        if block - n <= NEAR_BLOCK and block > 0:
            captures["block_cut"] = str(block)
    new = f.recast(sig, captures)
    new.rank = rank
    new.frames = list(f.frames)
    new.evidence.append(Evidence(at.path, line, text, rank))
    return new
