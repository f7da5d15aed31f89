"""A file one rank does not find, read against what the log says about that file: a file
named by the rank that the data step never wrote (the launch has more ranks than the data
has parts), or a file another rank writes only after this one looked for it (a hand-off
between ranks with no barrier).

Mechanisms:

- *Per-rank file beyond the data's count* (:data:`PER_RANK_SIGNATURE`): code that opens
  ``shard_{rank}.pt`` / ``part{rank:02d}.npy`` assumes one prepared file per rank, i.e. a
  world size equal to the number of files written. Launched with more processes than that,
  the ranks at or above the count find no file; the lower ranks find theirs. Evidence: the
  missing path's name holds the failing rank's own number, and either the raising frame's
  code builds the path from the rank, or the log's data step says it wrote fewer files than
  that rank's number (``wrote 2 shards``). A missing file that every rank lacks, rank 0's
  too, is a wrong path or a step not run: left as it was.
- *Hand-off without a barrier* (:data:`HANDOFF_SIGNATURE`): one rank writes a file
  (``torch.save`` on rank 0) that the others then read; without ``dist.barrier()`` between
  the write and the reads, a reader that gets there first finds nothing. Evidence: a line
  *after* the reader's FileNotFoundError, of another rank (or of no rank), says the same path
  was saved or written. The path is right; the order is not.

Both replace the finding that read the exception (a missing checkpoint, or the generic
exception) on the same line, rank and time (:meth:`rootrank.model.Finding.recast`).
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature of a per-rank file the data step never wrote (class user-code-exception).
PER_RANK_SIGNATURE = "per-rank-file-beyond-data-count"
#: The signature of a file read before the rank that writes it has written it.
HANDOFF_SIGNATURE = "file-handoff-without-barrier"
#: The findings these passes may replace: a missing checkpoint by its path's format, and the
#: generic exception (a ``.npy``/``.bin`` data path no signature claims).
REPLACEABLE = frozenset({"checkpoint-file-missing", "user-code-exception"})
#: Python's message for a missing file, with the path.
_MISSING = lazy_regex.compile(r"No such file or directory: ['\"](?P<path>[^'\"]+)['\"]")
#: A data step's count of the files it wrote: ``wrote 2 shards``, ``made 4 parts in parts/``,
#: ``saved 8 files``, ``3 shards written``.
_COUNT = lazy_regex.compile(
    r"(?i)\b(?:wrote|written|made|saved|created|prepared|generated|built|exported)\s+"
    r"(?P<n>\d{1,6})\s+(?:[\w-]{1,20}\s+)?(?:shards?|files?|parts?|splits?|partitions?|chunks?"
    r"|pieces?)\b"
    r"|\b(?P<n2>\d{1,6})\s+(?:[\w-]{1,20}\s+)?(?:shards?|files?|parts?|splits?|partitions?"
    r"|chunks?|pieces?)\s+(?:were\s+)?(?:written|made|saved|created|prepared|generated|built)\b"
)
#: Code that builds a path from the process's rank: ``{rank}``, ``{local_rank:02d}``,
#: ``% rank``, ``.format(rank)``, ``get_rank()``, ``LOCAL_RANK``.
_RANK_IN_CODE = lazy_regex.compile(r"(?i)\brank\b|_rank\b|get_rank\(|\bRANK\b")
#: A line that says a file was written: ``saved out/x.pt``, ``checkpoint written to ...``.
_WROTE = lazy_regex.compile(
    r"(?i)\b(?:sav(?:ed|ing)|wr(?:ote|itten|iting)|export(?:ed|ing)|dump(?:ed|ing)|stored"
    r"|created|copied|moved)\b"
)
#: Lines that are about the failure, not a write: an error, a traceback's frame or code.
_NOT_A_WRITE = lazy_regex.compile(
    r"(?i)No such file|Error\b|Errno|Traceback|^\s*(?:\[[^\]]*\]:?\s*)?File \"|\btorch\.load\("
)
#: A rank named by a line's own text when no prefix names it: ``[r0]``, ``rank 0:``.
_TEXT_RANK = lazy_regex.compile(r"(?i)(?:\[r|\brank\s?)(?P<rank>\d{1,5})\b")
#: A number in a file name.
_NUMBER = lazy_regex.compile(r"\d{1,6}")
#: Most lines of the log's heads read per missing path.
MAX_LINES = 200000
#: Characters of a quoted line kept in the captures.
MAX_LINE = 160


def rank_file_misses(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each finding of :data:`REPLACEABLE` on a ``FileNotFoundError`` line
    replaced by a finding of :data:`HANDOFF_SIGNATURE` when a later line of another rank says
    the same path was written (:func:`_later_write`), else by one of
    :data:`PER_RANK_SIGNATURE` when the path is the rank's own file beyond the data's count
    (:func:`_beyond_count`). Captures: ``path``, ``rank``, ``where`` (``file:line`` of the
    innermost user frame), ``code`` (its quoted code); for a hand-off ``writer`` (its rank or
    ``another process``), ``writer_line`` and ``writer_text``; for a per-rank file ``count``
    and ``count_text`` when the log says how many were written, ``lowest`` (the lowest
    failing rank) and ``world`` (the launch's process count, or ``""``). Unchanged when a
    signature is missing from the library."""
    handoff = library.signatures.get(HANDOFF_SIGNATURE)
    per_rank = library.signatures.get(PER_RANK_SIGNATURE)
    if handoff is None or per_rank is None:
        return findings
    misses = [(f, _missing(f, state)) for f in findings]
    failing = {f.rank for f, m in misses if m is not None and f.rank is not None}
    out: list[Finding] = []
    for f, seen in misses:
        if seen is None or f.rank is None:
            out.append(f)
            continue
        path = _MISSING.search(seen.exc.message)
        assert path is not None  # _missing checked it
        base = _base_captures(seen, path.group("path"), f.rank)
        wrote = _later_write(state, seen, path.group("path"), f.rank)
        if wrote is not None:
            src, number, text, writer = wrote
            moved = f.recast(
                handoff,
                {
                    **base,
                    "writer": f"rank {writer}" if writer is not None else "another process",
                    "writer_line": str(number),
                    "writer_text": text.strip()[:MAX_LINE],
                },
            )
            moved.evidence.append(Evidence(path=src, line=number, text=text, rank=writer))
        else:
            count = _beyond_count(state, seen, path.group("path"), f.rank, failing)
            if count is None:
                out.append(f)
                continue
            world = _world(state)
            moved = f.recast(
                per_rank,
                {
                    **base,
                    "count": count[0],
                    "count_text": count[1],
                    "lowest": str(min(failing)),
                    "world": str(world) if world else "",
                },
            )
            if count[2] is not None:
                moved.evidence.append(count[2])
        moved.frames = f.frames
        out.append(moved)
    return out


def _missing(f: Finding, state: ScanState) -> SeenException | None:
    """The FileNotFoundError the scan saw on ``f``'s first line and rank, when ``f`` is of
    :data:`REPLACEABLE` and the message names the path; else ``None``."""
    if f.signature not in REPLACEABLE or not f.evidence:
        return None
    at = f.evidence[0]
    for seen in state.exceptions:
        exc = seen.exc
        if (
            seen.path == at.path
            and exc.log_line == at.line
            and seen.rank == f.rank
            and exc.type.endswith("FileNotFoundError")
            and _MISSING.search(exc.message)
        ):
            return seen
    return None


def _base_captures(seen: SeenException, path: str, rank: int) -> dict[str, str]:
    """``path``, ``rank``, and the innermost user frame's ``where`` (``file:line``, ``""``
    without one) and ``code``."""
    user = [fr for fr in seen.exc.frames if fr.user]
    where = code = ""
    if user:
        fr = user[-1]
        where = f"{fr.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{fr.line}"
        code = fr.code[:MAX_LINE]
    return {"path": path, "rank": str(rank), "where": where, "code": code}


def _lines(state: ScanState) -> Iterator[tuple[str, int, str]]:
    """Each line of the log's heads: ``(source, 1-based line, text)``, at most
    :data:`MAX_LINES`."""
    n = 0
    for src, first, text in state.heads:
        for i, line in enumerate(text.split("\n")):
            n += 1
            if n > MAX_LINES:
                return
            yield src, first + i, line


def _line_rank(tagger: RankTagger, text: str, number: int) -> int | None:
    """The rank a line names: its prefix (``[rank0]:``) or its own words (``[r0]``,
    ``rank 0:``); ``None`` when neither does."""
    tagged = tagger.tag(text, number)
    if tagged.rank is not None:
        return tagged.rank
    m = _TEXT_RANK.search(text)
    return int(m.group("rank")) if m else None


def _later_write(
    state: ScanState, seen: SeenException, path: str, rank: int
) -> tuple[str, int, str, int | None] | None:
    """The first line after ``seen``'s exception line (same source) that names ``path`` and
    says it was written (:data:`_WROTE`, not :data:`_NOT_A_WRITE`), printed by a rank other
    than ``rank`` (or by none): ``(source, 1-based line, text, its rank)``; ``None`` when
    there is none."""
    taggers: dict[str, RankTagger] = {}
    for src, number, text in _lines(state):
        if src != seen.path or number <= seen.exc.log_line or path not in text:
            continue
        if not _WROTE.search(text) or _NOT_A_WRITE.search(text):
            continue
        tagger = taggers.setdefault(src, RankTagger(path=src))
        who = _line_rank(tagger, text, number)
        if who != rank:
            return src, number, text, who
    return None


def _rank_numbers(path: str) -> list[int]:
    """The numbers in ``path``'s file name (``part03.pt`` -> ``[3]``)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return [int(m.group()) for m in _NUMBER.finditer(name)]


def _beyond_count(
    state: ScanState, seen: SeenException, path: str, rank: int, failing: set[int]
) -> tuple[str, str, Evidence | None] | None:
    """``(count, the count's line, its evidence)`` when ``path`` is ``rank``'s own file
    beyond the data's count (see the module's docstring); ``("", "", None)`` when the code
    names the rank and rank 0 did not fail but the log prints no count; ``None`` otherwise."""
    if rank not in _rank_numbers(path):
        return None
    names_rank = any(fr.user and _RANK_IN_CODE.search(fr.code) for fr in seen.exc.frames)
    count: tuple[str, str, Evidence | None] | None = None
    for src, number, text in _lines(state):
        m = _COUNT.search(text)
        if m is None or (src == seen.path and number >= seen.exc.log_line):
            continue
        n = int(m.group("n") or m.group("n2"))
        if 0 < n <= rank:
            count = (
                str(n),
                text.strip()[:MAX_LINE],
                Evidence(path=src, line=number, text=text, rank=None),
            )
            break
    if count is not None and (names_rank or 0 not in failing):
        return count
    if names_rank and failing and 0 not in failing:
        return ("", "", None)
    return None


def _world(state: ScanState) -> int | None:
    """The launch's process count: the world size the log names, else nodes x processes
    per node, else ``None``."""
    if state.world_size:
        return state.world_size
    per = state.launch.nproc_per_node
    return per * (state.launch.nnodes or 1) if per else None
