"""The first plain lines each rank printed before the run failed, for comparison.

Ranks of one job run the same code, so the set-up lines they print (``rank R: shard 1 -> 32
records (torch.float32)``, ``creating tp groups [[0, 1], [2, 3]]``, ``resuming from
ckpt/step-200``) are the same on every rank once the rank's own number is taken out; the
analysis compares them (:mod:`rootrank.analysis.oddline`).

The scan does not read these lines (its gate passes only lines a signature, a progress or a
rank word may match): it keeps each source's first characters (``ScanState.heads``), and
:func:`rank_lines` reads them only when the analysis asks, with a rank tagger of its own (the
scan's tagger state is not touched). It keeps, per rank, the first :data:`MAX_LINES` lines
that carry a rank (a launcher prefix, the line's own ``rank N:`` tag, a per-rank file) in the
last attempt, up to the launcher's final report (torchrun's ``ChildFailedError`` summary;
its agent's ``closing signal`` lines come earlier, while the workers' buffered output is
still being relayed): none indented (a traceback's frames), none
longer than :data:`MAX_CHARS`, none that shows the process failing (a traceback header, an
exception line, a C++ abort: :data:`_FAILING`; each rank's first such line is returned).
A rank's own failure does not end its lines: a worker's stdout and stderr are two pipes
(torchrun's ``--tee``), so its traceback may be printed before set-up lines it wrote earlier.

A rank's LAST own lines (the phase a rank stopped in, what it said before the others' error)
are read by :func:`own_lines` / :func:`last_own_line`, the one reader of the kept heads and
tails for them; each caller says how a line names its rank (:data:`LineOwner`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rootrank import lazy_regex
from rootrank.ranks import RankTagger, rank_from_path
from rootrank.scan import RANK_SELF_LINES, ScanState, Settings, glued_ranks, note_settings

#: Ranks that must print a line for it to be compared (rootrank.analysis.oddline; rootrank.entry
#: skips the odd-line lead below it without importing oddline): with two, each is the other's
#: odd one.
MIN_RANKS = 3
#: Lines kept per rank: set-up lines come first, and a step loop fills the rest.
MAX_LINES = 64
#: Ranks (identities) kept: a larger job's other ranks are not compared.
MAX_WHO = 2048
#: Characters of a kept line at most: longer lines are dumps (configs, tensors), not set-up.
MAX_CHARS = 240

#: Who printed a line: ``(global rank, None, None)`` or ``(None, local rank, host)``.
Who = tuple[int | None, int | None, str | None]


@dataclass(frozen=True, slots=True)
class RankLine:
    """One kept line: ``path``, its 1-based ``line`` and its ``text`` with prefixes peeled."""

    path: str
    line: int
    text: str


#: How one source's lines name their rank: given a line's text and its 1-based number, the
#: rank it is the own line of and the text to quote of it, or ``None`` when the line is no
#: rank's own (or not one to quote). Made once per source, it may keep state from line to
#: line (a :class:`RankTagger` learns a source's prefixes as it reads).
LineOwner = Callable[[str, int], tuple[int | None, str] | None]
#: Kept text of the log: ``(path, 1-based number of its first line, text)``, as
#: ``ScanState.heads`` and ``ScanState.tails`` hold it.
KeptText = tuple[str, int, str]


#: A line that shows its process failing: a traceback's header, an exception line, a C++
#: abort. A rank's lines from its first such line on are not compared.
_FAILING = lazy_regex.compile(
    r"^(?:Traceback \(most recent call last\)|terminate called|\S*(?:Error|Exception)\b:?|"
    r".*\b(?:Fatal|FATAL|Aborted|Segmentation fault)\b)"
)
#: A script's own bare rank tag starting a line's body: ``rank 2 normalized 10/60 records``
#: (read by :func:`rank_lines` only when asked: ``body_tags``).
BODY_RANK = lazy_regex.compile(r"^[Rr]ank[ =#]?(?P<n>\d{1,5})[:,]?\s+(?=\S)")
#: A line of the launcher's final report (torchrun's failure summary): every worker has exited.
_ATTEMPT_END = lazy_regex.compile(r"ChildFailedError|^\S+ FAILED\s*$")


def rank_lines(
    state: ScanState, body_tags: bool = False
) -> tuple[dict[Who, list[RankLine]], set[Who], dict[Who, int]]:
    """Each rank's kept lines in log order, the ranks whose quota of :data:`MAX_LINES`
    filled up (a missing line of theirs may lie past it), and the line of each rank's own
    first failure. Costs one tagging pass over ``state.heads`` (at most ``HEAD_CHARS`` per
    source).

    ``body_tags``: a line the tagger gives no rank whose body (prefixes peeled) starts with
    a bare ``rank N`` (:data:`BODY_RANK`: a script's ``print(f"rank {rank} normalized
    {i}/{n}")``) is that rank's too. The tagger does not read that form (``rank 2 of 8``,
    ``rank 3 ranked ...`` name no process by themselves); a caller that asks must check the
    numbers it got form the job's ranks (dense from 0)."""
    since = 0
    if len(state.sources) == 1:
        # the diagnosed attempt's lines: after the last restart, and after the other jobs
        # the file holds before the diagnosed one (their attempt ends would stop the read)
        if state.attempt_starts:
            since = state.attempt_starts[-1]
        if state.other_runs:
            since = max(since, state.other_runs[-1].end + 1)
    lines: dict[Who, list[RankLine]] = {}
    full: set[Who] = set()
    failed: dict[Who, int] = {}
    for path, first, text in state.heads:
        path_rank, is_local = rank_from_path(path)
        tagger = RankTagger(path=path, path_rank=path_rank, path_rank_is_local=is_local)
        # what the scan's sweeps learn of a block first (stacked prefixes, ``rank N:`` tags)
        tagger.learn_stacked(text)
        tagger.learn_user_tags(text)
        tagger.learn_collector_labels(text)
        for number, raw in enumerate(text.split("\n"), first):
            if number < since or not raw or len(raw) > MAX_CHARS + 80:
                continue
            tagged = tagger.tag(raw, number)
            body = tagged.text
            if tagged.rank is not None:
                who: Who = (tagged.rank, None, None)
            elif tagged.local_rank is not None:
                who = (None, tagged.local_rank, tagged.host)
            elif body_tags and (bm := BODY_RANK.match(body)) is not None:
                who = (int(bm["n"]), None, None)
                body = body[bm.end() :]
            else:
                if _ATTEMPT_END.search(body):
                    break  # the launcher saw a worker fail: the attempt is over
                continue
            if who in full or not body or len(body) > MAX_CHARS or body[0] in " \t":
                continue
            if _FAILING.match(body):
                failed.setdefault(who, number)  # its own failure is not a set-up line
                continue
            kept = lines.get(who)
            if kept is None:
                if len(lines) >= MAX_WHO:
                    continue
                kept = lines[who] = []
            kept.append(RankLine(path, number, body))
            if len(kept) >= MAX_LINES:
                full.add(who)
    return lines, full, failed


#: The last scan state :func:`rank_settings` read, and what it found.
_settings_read: tuple[weakref.ref[ScanState], dict[int, Settings]] | None = None


#: A line a script prints about its rank with the rank in a bracket of its own before the
#: words (``print(f"[rank{rank}] kept {n}/{total} records -> {steps} steps/epoch")``), not
#: torchrun's ``[rank0]:`` tag on a line the process printed (its colon: a traceback's lines
#: carry it): the ``name value`` pairs after it are that rank's settings, as with
#: :data:`rootrank.scan.RANK_SELF_LINES`.
BRACKET_RANK_LINES = lazy_regex.compile(
    r"(?im)^\[rank ?(?P<n>\d{1,6})\](?!:)[ \t]+(?P<rest>[^\n]{1,400})"
)


def rank_settings(state: ScanState) -> dict[int, Settings]:
    """Each rank's numeric settings: those the scan read on the lines it chose
    (:attr:`ScanState.rank_settings`) with those of the set-up lines a rank printed of itself
    at the start of each source (``ScanState.heads``: ``[node1] rank 3/4 host vm TP_SIZE=3``,
    ``[16:41:22] INFO shards rank2: RLIMIT_NOFILE soft=256``), which the gate passes by: they
    hold no signature's word, yet one rank's value apart from every other's is the evidence
    (rootrank.scan.odd_setting). Costs one native regex pass over the heads (at most
    ``HEAD_CHARS`` per source), once per scan state; ``state`` is not changed."""
    global _settings_read
    if _settings_read is not None and _settings_read[0]() is state:
        return _settings_read[1]
    out = {rank: dict(mine) for rank, mine in state.rank_settings.items()}
    seen = {(v[1], v[2]) for mine in out.values() for v in mine.values() if v is not None}
    for path, first, text in state.heads:
        if "ank" not in text:
            continue
        for pattern in (RANK_SELF_LINES, BRACKET_RANK_LINES):
            number, at = first, 0
            for m in pattern.finditer(text):
                number += text.count("\n", at, m.start())
                at = m.start()
                if (path, number) in seen:  # a line the scan read already
                    continue
                for who, part in glued_ranks(int(m["n"]), m["rest"]):
                    note_settings(out.setdefault(who, {}), part, path, number)
    _settings_read = (weakref.ref(state), out)
    return out


def own_lines(
    sources: Iterable[KeptText],
    rank: int,
    owner: Callable[[str], LineOwner],
    *,
    path: str | None = None,
    before: int | None = None,
    once: bool = False,
) -> Iterator[RankLine]:
    """The lines of ``sources`` (the scan's kept heads and tails, :data:`KeptText`) that
    ``rank`` printed, in source order, each as a :class:`RankLine` whose text is the one
    ``owner`` quotes. ``owner(path)`` is called once per kept text and gives the
    :data:`LineOwner` that reads that text's lines in order. With ``path``, only that
    source's texts are read; with ``before``, only lines numbered below it. A source's head
    and tail may hold the same line number twice (they overlap on a short log; a head cut at
    a line's end ends with an empty line): every copy is read, or with ``once`` only the
    first copy of a ``(path, number)`` (the owner does not see the others). Reads only the
    kept text (at most ``HEAD_CHARS`` and ``TAIL_CHARS`` characters per source); raises
    nothing of its own."""
    seen: set[tuple[str, int]] = set()
    for src, first, text in sources:
        if path is not None and src != path:
            continue
        read = owner(src)
        for number, raw in enumerate(text.split("\n"), first):
            if before is not None and number >= before:
                break
            if once:
                if (src, number) in seen:
                    continue
                seen.add((src, number))
            got = read(raw, number)
            if got is not None and got[0] == rank:
                yield RankLine(src, number, got[1])


def last_own_line(lines: Iterable[RankLine]) -> RankLine | None:
    """The last (highest-numbered) of ``lines`` (:func:`own_lines`' output), the first of two
    at one number; ``None`` when there is none. Mechanism: a rank stopped printing where it
    stopped working, so its last own line before the others' error names the phase it was
    in."""
    best: RankLine | None = None
    for line in lines:
        if best is None or line.line > best.line:
            best = line
    return best
