"""One streaming pass over the lines of one or more logs, collecting findings.

Memory is bounded by the findings, not by the log: a finding keeps a count and its first
:data:`MAX_EVIDENCE` lines; the last :data:`MAX_EXCEPTIONS` Python exceptions are kept for
the "unclassified" answer; per-stream state is a few small dicts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import regex

from rootrank.ingest import Block, RawLine, logical_lines
from rootrank.match import Hit, Matcher
from rootrank.model import Evidence, Finding
from rootrank.ranks import ElasticFailure, RankTagger, parse_time, rank_from_path, ranks_in
from rootrank.tracebacks import PyException, TracebackReader, collective_call

MAX_EVIDENCE = 5
MAX_EXCEPTIONS = 64
#: Lines looked back over (in the current block) for an untimed finding's rank's time.
MAX_LOOKBACK_LINES = 20000
#: Characters at the head of each block (after the first) swept for rank prefixes.
RANK_SWEEP_CHARS = 65536

#: Words that tell which framework the log comes from (for the fix's code), by stack.
_STACK_WORDS = (
    ("deepspeed", ("deepspeed", "DeepSpeed")),
    ("megatron", ("megatron", "Megatron")),
    ("vllm", ("vllm", "vLLM")),
    ("hf", ("transformers", "accelerate", "Trainer")),
)


@dataclass(slots=True)
class SeenException:
    """A Python exception with where it was seen."""

    exc: PyException
    path: str
    rank: int | None
    host: str | None
    time: float | None
    raw: str
    order: int


@dataclass
class ScanState:
    """Everything one pass learns; :class:`Scanner` fills it, the analysis reads it."""

    findings: dict[tuple[str, int | None, str | None], Finding] = field(default_factory=dict)
    exceptions: deque[SeenException] = field(default_factory=lambda: deque(maxlen=MAX_EXCEPTIONS))
    elastic: list[ElasticFailure] = field(default_factory=list)
    ranks_seen: set[int] = field(default_factory=set)
    hosts: dict[int, str] = field(default_factory=dict)
    world_size: int | None = None
    stacks: set[str] = field(default_factory=set)
    lines_total: int = 0  # physical lines in all sources
    sources: list[str] = field(default_factory=list)
    pending_pid: list[tuple[Finding, str | None, int]] = field(default_factory=list)


class Scanner:
    """Feeds lines through rank attribution, traceback reading and matching.

    Use one Scanner per diagnosis: :meth:`scan_source` once per file (or text), then read
    :attr:`state`.
    """

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.state = ScanState()
        self._order = 0
        self._block_text: str | None = None
        self._line_start = 0
        self._path_rank: int | None = None
        # rank -> (block text, line start the last walk began at, time it found)
        self._walks: dict[int, tuple[str, int, float | None]] = {}

    def scan_source(self, path: str, blocks: Iterable[Block]) -> None:
        """Scan one source given as blocks of whole lines. ``path`` names it in evidence;
        its rank may come from the path.

        Only lines the :class:`~rootrank.match.Gate` selects go through the per-line path,
        plus every line after them while a traceback, a torchelastic summary or an
        ``mp.spawn`` banner is open (those states need consecutive lines).
        """
        st = self.state
        st.sources.append(path)
        path_rank, is_local = rank_from_path(path)
        tagger = RankTagger(path=path, path_rank=path_rank, path_rank_is_local=is_local)
        self._path_rank = path_rank
        readers: dict[int | None, TracebackReader] = {}
        gate = self.matcher.gate
        assert gate is not None
        following = False
        for block in blocks:
            text = block.text
            size = len(text)
            number = block.first_line
            counted = 0  # offset up to which newlines are counted into `number`
            # Which ranks exist: the whole first block and the head of every later one
            # (a sweep over every line would cost as much as the gate itself).
            st.ranks_seen.update(ranks_in(text if block.first_line == 1 else text[:RANK_SWEEP_CHARS]))
            if block.first_line == 1:  # framework names: the first block, then gated lines
                for stack, words in _STACK_WORDS:
                    if stack not in st.stacks and any(w in text for w in words):
                        st.stacks.add(stack)
            starts = gate.line_starts(block)
            cur = 0 if following else next(starts, -1)
            while cur != -1 and cur < size:
                number += text.count("\n", counted, cur)
                counted = cur
                end = text.find("\n", cur)
                if end == -1:
                    end = size
                self._block_text, self._line_start = text, cur
                for raw in logical_lines(number, text[cur:end]):
                    self._line(raw, path, tagger, readers)
                following = tagger.following() or any(r.open for r in readers.values())
                nxt = end + 1
                if following:
                    cur = nxt
                else:
                    cur = next(starts, -1)
                    while cur != -1 and cur < nxt:
                        cur = next(starts, -1)
            st.lines_total += text.count("\n") + 1
        if path_rank is not None and st.lines_total:
            st.ranks_seen.add(tagger.local_to_global.get((None, path_rank), path_rank) if is_local else path_rank)
        st.elastic.extend(tagger.elastic)
        for rank, host in tagger.hosts.items():
            st.hosts.setdefault(rank, host)
        if tagger.world_size:
            st.world_size = max(st.world_size or 0, tagger.world_size)
        # Findings whose rank is only known from a later NCCL "comm ... rank R" line.
        for finding, host, pid in st.pending_pid:
            if finding.rank is None and (host, pid) in tagger.pid_rank:
                finding.rank = tagger.pid_rank[(host, pid)]
        st.pending_pid.clear()

    def _line(self, raw: RawLine, path: str, tagger: RankTagger, readers: dict[int | None, TracebackReader]) -> None:
        st = self.state
        tagged = tagger.tag(raw.text, raw.number)
        text = tagged.text
        rank = tagged.rank
        need_time = tagged.time is None and rank is not None
        if rank is not None:
            st.ranks_seen.add(rank)
        reader = readers.get(rank)
        if reader is None:
            reader = readers[rank] = TracebackReader()
        exc = reader.feed(text, raw.number)
        if exc is not None and exc.ignored:
            return  # an exception Python ignored (in __del__...) ended nothing
        if exc is not None:
            if need_time:
                tagged.time = self._time_before(rank, tagger)
                need_time = False
            self._order += 1
            st.exceptions.append(SeenException(exc, path, rank, tagged.host, tagged.time, raw.raw, self._order))
        if reader.code_line:
            return  # source code quoted in a traceback is not a message
        for stack, words in _STACK_WORDS:
            if stack not in st.stacks and any(w in text for w in words):
                st.stacks.add(stack)
        hits = list(self.matcher.match(text))
        if len(hits) > 1:  # one line, one explanation: the most specific signature
            hits = [max(hits, key=lambda h: h.signature.specificity)]
        if hits and need_time:
            tagged.time = self._time_before(rank, tagger)
        for hit in hits:
            finding = self._record(hit, raw, tagged.rank, tagged.host, tagged.pid, tagged.time, path, text)
            if exc is not None and not finding.frames and exc.frames:
                finding.frames = [
                    {"file": f.file, "line": f.line, "func": f.func, "user": f.user} for f in exc.frames[-12:]
                ]
                call = collective_call(exc.frames)
                if call:
                    finding.captures.setdefault("collective", call)

    def _time_before(self, rank: int | None, tagger: RankTagger) -> float | None:
        """The latest timestamp of ``rank`` before the current line, looking back through
        the lines of the current block the gate skipped (``[rankN]:`` lines, or every line
        of a file whose path names the rank), then what the tagger saw on gated lines.

        A walk stops where the previous walk for the same rank in the same block started,
        so a block is walked at most once per rank.
        """
        text = self._block_text
        found: float | None = None
        if text is not None and rank is not None:
            memo = self._walks.get(rank)
            floor = memo[1] if memo is not None and memo[0] is text else -1
            prefix = f"[rank{rank}]:"
            whole_file = (
                self._path_rank is not None
                and tagger.local_to_global.get((None, self._path_rank), self._path_rank) == rank
            )
            end = self._line_start - 1
            for _ in range(MAX_LOOKBACK_LINES):
                if end < 0:
                    break
                if end < floor:
                    found = memo[2] if memo is not None else None
                    break
                start = text.rfind("\n", 0, end) + 1
                line = text[start:end]
                body = line[len(prefix) :] if line.startswith(prefix) else (line if whole_file else None)
                if body is not None and ":" in body:
                    t = parse_time(body)
                    if t is not None:
                        found = t
                        break
                end = start - 1
            self._walks[rank] = (text, self._line_start, found)
        return found if found is not None else tagger.last_time(rank)

    def _record(
        self,
        hit: Hit,
        raw: RawLine,
        rank: int | None,
        host: str | None,
        pid: int | None,
        time: float | None,
        path: str,
        text: str,
    ) -> Finding:
        st = self.state
        sig = hit.signature
        if "rank" in hit.captures:
            try:
                rank = int(hit.captures["rank"])
            except ValueError:
                pass
        elif "ranks" in hit.captures:
            # The message names the faulty ranks; the line's own rank only reported them.
            named = regex.findall(r"\d+", hit.captures["ranks"])
            rank = int(named[0]) if len(set(named)) == 1 else None
        if "host" in hit.captures and host is None:
            host = hit.captures["host"]
        key = (sig.id, rank, path if rank is None else None)
        self._order += 1
        col = raw.raw.find(hit.matched) if hit.matched else -1
        evidence = Evidence(
            path=path,
            line=raw.number,
            text=raw.text if raw.text == text else text,
            rank=rank,
            column_start=col if col >= 0 else None,
            column_end=col + len(hit.matched) if col >= 0 else None,
        )
        finding = st.findings.get(key)
        if finding is None:
            finding = Finding(
                signature=sig.id,
                failure_class=sig.failure_class,
                title=sig.title,
                role=sig.role,
                severity=sig.severity,
                specificity=sig.specificity,
                rank=rank,
                host=host,
                time=time,
                order=self._order,
                count=1,
                evidence=[evidence],
                captures=dict(hit.captures),
            )
            st.findings[key] = finding
            if rank is None and pid is not None:
                st.pending_pid.append((finding, host, pid))
            return finding
        else:
            finding.count += 1
            if len(finding.evidence) < MAX_EVIDENCE:
                finding.evidence.append(evidence)
            if finding.time is None and time is not None:
                finding.time = time
            if finding.host is None and host is not None:
                finding.host = host
            for k, v in hit.captures.items():
                finding.captures.setdefault(k, v)
        return finding

