"""The rank whose own printed line differs from every other rank's, or that never printed it.

Mechanism: the ranks of one job run the same program on the same configuration, so the set-up
lines they print before the first collective are the same text on every rank once the rank's
own number is taken out. When one rank's line differs in one token from the line every other
rank printed (``rank 1: shard 1 -> 32 records (torch.float64)`` where ranks 0, 2, 3 printed
``(torch.float32)``; ``creating tp groups [[2, 3], [0, 1]]`` where the others printed
``[[0, 1], [2, 3]]``; a resume path naming another step), that rank took another branch: a
tensor of another dtype or size, process groups created in another order, another checkpoint.
The collective that then fails is detected by a peer (gloo's receiver aborts on the extra
bytes, every rank's watchdog times out, torchrun's summary names the first process to exit),
so the rank the failure shows on is a victim, and the odd rank is where the run diverged
(:func:`odd_line`). Likewise a line every other rank printed and one rank never printed (``tp
group ready``) is a milestone that rank did not reach: it is the one stuck
(:func:`missing_milestone`), as a rank missing from the step lines is
(:mod:`rootrank.analysis.stall`).

Read from :func:`rootrank.ranklines.rank_lines`: each rank's first
:data:`~rootrank.ranklines.MAX_LINES` plain lines before the first failure. Never compared,
because they differ by design: decimals (losses, timings, throughputs), clock times,
addresses and ports, hex values, amounts with a unit (``12 ms``, ``3.1 GB``, ``85%``), the
number after a counter or per-process id word (step, iter, epoch, pid, port, seed, time), the
rank's own number after a rank or device word (``rank=3``, ``cuda:3``, ``local_rank 3``) or
inside a file name (``rank-3.pt``, ``shard-0003``), boolean and role words (``True``,
``master``). The number after ``id``, ``job`` or ``jobid`` is compared: a run or job id is
one value for the whole job, so a rank printing another one derived it differently (an id
hashed from a string under another ``PYTHONHASHSEED``); a per-process id differs on every
rank and singles none out.
A line printed more than :data:`MAX_REPEATS` times by a rank is a per-step line, not set-up.
Three ranks at least must print the line, all but one the same text: between two ranks the
log does not say which one diverged.
"""

from __future__ import annotations

import weakref
from collections import Counter
from typing import TYPE_CHECKING

from rootrank import lazy_regex, re_code, regex_code
from rootrank.analysis.prepare import Context, single_node_proof
from rootrank.analysis.reasons import format_ranks, say
from rootrank.ranklines import MIN_RANKS, RankLine, rank_lines
from rootrank.scan import ScanState

if TYPE_CHECKING:  # the type only: rootrank.regex_code builds patterns without the package
    import regex

#: A line printed more often than this by one rank is a per-step line (progress, metrics).
MAX_REPEATS = 4
#: Longest differing text quoted as one token (a list, a path, a dtype).
MAX_SPAN = 60
#: Characters of the odd rank's line quoted in the reason.
MAX_QUOTE = 120

_RANK_WORD = r"(?i)(\b(?:global_|local_)?rank[\s=:_-]{0,3}|\[rank|\bcuda:|\bdevice[\s=:]{1,3}|\bgpu[\s=:_-]{0,3}|\bworker[\s=:_-]{0,3})0*"
#: Values that differ between ranks by design, each replaced by a placeholder.
_BY_DESIGN = re_code.compile(
    r"""(?ix)
    \b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b            # an IPv4 address, with its port
    | \[[0-9a-f:]*::[0-9a-f:]*\](?::\d+)?           # an IPv6 address
    | \b0x[0-9a-f]+\b                               # a hex value (an address, a handle)
    | \b\d+:\d\d(?::\d\d)?(?:[.,]\d+)?\b            # a clock time
    | \d{4}-\d\d-\d\d                               # a date
    | (?<![\w.])[-+]?\d*\.\d+(?:e[-+]?\d+)?         # a decimal: a loss, a time, a rate
    | \b\d+(?:e[-+]?\d+)\b                          # a number in exponent form
    | \b\d+\s?(?:ns|us|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?
                |msecs?|usecs?|nanoseconds?|microseconds?|milliseconds?
                |[kmgt]i?b|bytes|it/s|s/it|samples/s|tokens/s|tok/s|%)(?![\w])
                                                    # an amount with a unit (a duration the
                                                    # process measured: "ran for 1800013
                                                    # milliseconds" differs by clock jitter)
    | (?<![/\w-])(?:step|steps|iter|iteration|epoch|batch|pid|port|seed|time|took|elapsed
          |eta|tid|uid|attempt|restart|retry|try|loss|lr|norm)
      [\s=:#_-]{0,3}\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:\s?(?:ns|us|ms|s|sec)\b)?
      (?![\w/])                                     # the number after a counter or id word
                                                    # (not a path's part: ckpt/step-200/)
    """
)
#: Words whose difference between ranks is a role by design (rank 0 writes, the others read).
_ROLE_WORDS = frozenset(
    "true false yes no none null on off enabled disabled master main leader primary "
    "coordinator driver writer reader chief head worker".split()
)
_DIGITS = lazy_regex.compile(r"\d+")
#: A number after a rank or device word (group 1 the word, group 2 the number).
_RANK_NUMBER = lazy_regex.compile(_RANK_WORD + r"(\d+)(?!\d)")
_NUMBER = lazy_regex.compile(r"\d+")
_FILE_NAME = lazy_regex.compile(r"[A-Za-z][-_.]\d|\d\.[A-Za-z]{1,5}\b")
#: A leading ``rank <R>:`` tag (the tagger peels it off some lines only).
_OWN_TAG = lazy_regex.compile(r"^\[?(?i:rank)[\s=_-]?<R>\]?:?\s*")


def normalize(text: str, rank: int) -> str:
    """``text`` as every rank would print it: ``rank``'s own number after a rank or device
    word and inside file names replaced by ``<R>``, by-design values (:data:`_BY_DESIGN`) by
    ``<V>``, a leading ``rank <R>:`` tag dropped."""
    own = str(rank)
    if own in text:

        def mine(m: regex.Match[str]) -> str:
            return m.group(1) + "<R>" if int(m.group(2)) == rank else m.group(0)

        text = _RANK_NUMBER.sub(mine, text)
        if own in text:
            text = " ".join(
                _NUMBER.sub(lambda m: "<R>" if int(m.group(0)) == rank else m.group(0), tok)
                if _filename(tok)
                else tok
                for tok in text.split(" ")
            )
    return _OWN_TAG.sub("", _BY_DESIGN.sub("<V>", text), count=1)


def _filename(token: str) -> bool:
    """Whether ``token`` is a path or a file name (``ckpt/rank-3.pt``, ``shard-0003``,
    ``part_3.bin``): a rank's own number inside one is its own file."""
    return "/" in token or _FILE_NAME.search(token) is not None


_Lines = tuple[dict[int, list[RankLine]], set[int], dict[int, int]]
#: ``{template: {rank: [(normalized text, line), ...]}}`` (:func:`_series`).
_Series = dict[str, dict[int, list[tuple[str, RankLine]]]]
#: The last scan state read, and what :func:`_rank_lines` found in it (both strategies ask).
_last: tuple[weakref.ref[ScanState], _Lines, _Series] | None = None


def _rank_lines(ctx: Context) -> _Lines:
    """Each global rank's kept lines (:func:`rootrank.ranklines.rank_lines`), in log order,
    the ranks whose quota filled up, and the line of each rank's own first failure: a local
    rank counts as its global rank when the log proves a single node
    (:func:`~rootrank.analysis.prepare.single_node_proof`). Read once per scan state."""
    return _state_lines(ctx.state)


def _state_lines(state: ScanState) -> _Lines:
    """:func:`_rank_lines` of a scan state."""
    global _last
    if _last is not None and _last[0]() is state:
        return _last[1]
    found = _read_rank_lines(state)
    _last = (weakref.ref(state), found, _series(found[0]))
    return found


def _rank_series(ctx: Context) -> dict[str, dict[int, list[tuple[str, RankLine]]]]:
    """:func:`_series` of :func:`_rank_lines`, read once per scan state."""
    return _state_series(ctx.state)


def _state_series(state: ScanState) -> dict[str, dict[int, list[tuple[str, RankLine]]]]:
    """:func:`_rank_series` of a scan state."""
    _state_lines(state)
    assert _last is not None
    return _last[2]


def _read_rank_lines(state: ScanState) -> _Lines:
    """:func:`_rank_lines`, read."""
    lines, full, failed = rank_lines(state)
    out: dict[int, list[RankLine]] = {}
    filled: set[int] = set()
    failed_at: dict[int, int] = {}
    for who in set(lines) | set(failed):
        rank, local, _host = who
        if rank is None and local is not None and single_node_proof(state, local):
            rank = local
        if rank is None:
            continue
        out.setdefault(rank, []).extend(lines.get(who, []))
        if who in full:
            filled.add(rank)
        if who in failed:
            failed_at[rank] = min(failed_at.get(rank, failed[who]), failed[who])
    for kept in out.values():
        kept.sort(key=lambda x: (x.path, x.line))
    return {r: v for r, v in out.items() if v}, filled, failed_at


def _series(by_rank: dict[int, list[RankLine]]) -> _Series:
    """``{template: {rank: [(normalized text, line), ...]}}``: a template is a normalized
    line with its digits masked; a template some rank printed more than :data:`MAX_REPEATS`
    times is dropped (a per-step line)."""
    out: dict[str, dict[int, list[tuple[str, RankLine]]]] = {}
    for rank, lines in by_rank.items():
        for ln in lines:
            text = normalize(ln.text, rank)
            out.setdefault(_DIGITS.sub("#", text), {}).setdefault(rank, []).append((text, ln))
    _merge_lone_templates(out)
    return {k: v for k, v in out.items() if all(len(x) <= MAX_REPEATS for x in v.values())}


def _merge_lone_templates(out: _Series) -> None:
    """Fold, in place, a template only one rank printed into the one template the other ranks
    (at least ``MIN_RANKS - 1``, not that rank) printed that is one space-separated token
    apart from it, when that rank printed no line of that template itself: the same line with
    a word that differs, not only a number (``(int32)`` where the others printed
    ``(uint16)``: the digits are masked, the word is not)."""
    for key in [k for k, v in out.items() if len(v) == 1]:
        (rank,) = out[key]
        near = [
            k
            for k, v in out.items()
            if k != key and len(v) >= MIN_RANKS - 1 and rank not in v and _one_token_apart(k, key)
        ]
        if len(near) == 1:
            out[near[0]][rank] = out.pop(key)[rank]


def rank_templates(ctx: Context) -> tuple[dict[int, dict[str, tuple[int, str]]], dict[int, int]]:
    """Each rank's kept lines as ``{rank: {template: (first line, text)}}`` (a template is
    the line normalized with its digits masked, as :func:`_series` makes it), and the line
    of each rank's own first failure."""
    by_rank, _, failed_at = _rank_lines(ctx)
    out: dict[int, dict[str, tuple[int, str]]] = {}
    for rank, lines in by_rank.items():
        mine = out.setdefault(rank, {})
        for ln in lines:
            mine.setdefault(_DIGITS.sub("#", normalize(ln.text, rank)), (ln.line, ln.text))
    return out, failed_at


def _span(odd: str, usual: str) -> tuple[str, str]:
    """The differing part of two lines, widened to whole space-separated tokens:
    ``("(torch.float64)", "(torch.float32)")``."""
    i = 0
    while i < min(len(odd), len(usual)) and odd[i] == usual[i]:
        i += 1
    j = 0
    while j < min(len(odd), len(usual)) - i and odd[-1 - j] == usual[-1 - j]:
        j += 1
    start = max(odd.rfind(" ", 0, i), usual.rfind(" ", 0, i)) + 1
    start = min(start, i)

    def end(s: str, stop: int) -> int:
        k = s.find(" ", stop)
        return len(s) if k < 0 else k

    a = odd[start : end(odd, len(odd) - j)].strip()
    b = usual[start : end(usual, len(usual) - j)].strip()
    while a[1:] and b[1:] and a[-1] == b[-1] and a[-1] in ",;:.":
        a, b = a[:-1], b[:-1]  # a list's separator after the token is not part of it
    if not regex_code.search(r"[A-Za-z]", a + b):  # a bare number: quote the word before it
        words = odd[:start].split()
        if words and regex_code.search(r"[A-Za-z]", words[-1]) and "<" not in words[-1]:
            a, b = f"{words[-1]} {a}", f"{words[-1]} {b}"
    return a, b


def _telling(a: str, b: str) -> bool:
    """Whether a differing span is a divergence, not a by-design difference: short, no
    placeholder in it, not a role word."""
    if not a or not b or len(a) > MAX_SPAN or len(b) > MAX_SPAN:
        return False
    if "<R>" in a + b or "<V>" in a + b:
        return False
    words = {w.lower() for w in regex_code.findall(r"[A-Za-z]+", a + " " + b)}
    return not (words & _ROLE_WORDS)


def _one_token_apart(a: str, b: str) -> bool:
    """Whether two lines differ in exactly one space-separated token."""
    ta, tb = a.split(), b.split()
    return len(ta) == len(tb) and sum(x != y for x, y in zip(ta, tb, strict=True)) == 1


def odd_line(ctx: Context) -> tuple[int, str] | None:
    """The one rank whose line differs in one token (or one list) from the same line of at
    least two other ranks that all agree, with the reason (``odd_line``), or ``None`` when no
    line singles out one rank, or lines single out different ranks."""
    found = odd_line_parts(ctx)
    return None if found is None else _told("odd_line", found)


def _told(key: str, found: tuple[int, str, str, list[int], RankLine]) -> tuple[int, str]:
    """``(rank, the reason)`` for an odd line's parts, in the words of reason ``key``
    (:data:`rootrank.analysis.reasons`: ``odd_line``, ``odd_step_line``), its text cut to
    :data:`MAX_QUOTE` characters."""
    rank, a, b, others, ln = found
    text = ln.text if len(ln.text) <= MAX_QUOTE else ln.text[: MAX_QUOTE - 3] + "..."
    return rank, say(
        key,
        rank=rank,
        value=a,
        usual=b,
        others=format_ranks(others),
        line=ln.line,
        text=text,
    )


def odd_line_parts(ctx: Context) -> tuple[int, str, str, list[int], RankLine] | None:
    """:func:`odd_line`'s finding as its parts: ``(rank, its differing text, the others'
    text, the other ranks, its line)``, or ``None``."""
    return odd_line_parts_in(ctx.state)


def odd_line_parts_in(state: ScanState) -> tuple[int, str, str, list[int], RankLine] | None:
    """:func:`odd_line_parts` of a scan state (for the fix of a root that names its rank
    itself, read by rootrank.entry)."""
    by_rank, _, _ = _state_lines(state)
    if len(by_rank) < MIN_RANKS:
        return None
    series = _state_series(state)
    found: list[tuple[int, int, str, str, list[int], RankLine]] = []
    for per_rank in series.values():
        if len(per_rank) < MIN_RANKS:
            continue
        for k in range(min(len(v) for v in per_rank.values())):
            texts = {r: v[k][0] for r, v in per_rank.items()}
            hit = _odd_of(texts)
            if hit is None:
                column = _odd_column(texts)
                if column is not None:
                    rank, a, b = column
                    others = sorted(r for r in texts if r != rank)
                    ln = per_rank[rank][k][1]
                    found.append((ln.line, rank, a, b, others, ln))
                    continue
            if hit is not None:
                rank, usual = hit
                a, b = _span(texts[rank], usual)
                if _telling(a, b):
                    others = sorted(r for r in texts if r != rank)
                    ln = per_rank[rank][k][1]
                    found.append((ln.line, rank, a, b, others, ln))
    found.extend(_word_apart(series))
    if not found or len({f[1] for f in found}) != 1:
        return None
    _, rank, a, b, others, ln = min(found, key=lambda f: f[0])
    return rank, a, b, others, ln


def _odd_of(texts: dict[int, str]) -> tuple[int, str] | None:
    """``(rank, the others' text)`` when every rank but one printed the same text."""
    counts = Counter(texts.values())
    if len(counts) != 2:
        return None
    (usual, n_usual), (odd, n_odd) = counts.most_common(2)
    if n_odd != 1 or n_usual < MIN_RANKS - 1:
        return None
    return next(r for r, t in texts.items() if t == odd), usual


def _odd_column(texts: dict[int, str]) -> tuple[int, str, str] | None:
    """``(rank, its token, the others' token)`` when the ranks' lines (three at least, as
    many tokens each) differ in columns of two kinds only: columns where every rank has its
    own value (its slice ``16..25``, its offset: per-rank by design) and columns where one
    rank's token stands alone against a value every other rank shares (``(10`` where the
    others print ``(8``), all naming the same rank. That rank's share diverged: ``rank 2:
    evaluating records 16..25 (10 records)`` against ``rank 1: ... 8..15 (8 records)``.
    ``None`` when no column singles out a rank, columns single out different ranks, or a
    column splits the ranks otherwise (a 2-2 split, a dp/tp coordinate)."""
    if len(texts) < MIN_RANKS:
        return None
    rows = {r: t.split() for r, t in texts.items()}
    if len({len(v) for v in rows.values()}) != 1:
        return None
    width = len(next(iter(rows.values())))
    odd: set[int] = set()
    spans: list[tuple[str, str]] = []
    for i in range(width):
        column = {r: v[i] for r, v in rows.items()}
        counts = Counter(column.values())
        if len(counts) == 1 or len(counts) == len(column):
            continue  # the same everywhere, or every rank its own value
        hit = _odd_of(column)
        if hit is None:
            return None
        rank, usual = hit
        a, b = column[rank], usual
        if not regex_code.search(r"[A-Za-z]", a + b) and i + 1 < width:
            after = rows[rank][i + 1]
            a, b = f"{a} {after}", f"{b} {after}"  # a bare number: quote the word after it
        if not _telling(a, b):
            return None
        odd.add(rank)
        spans.append((a, b))
    if len(odd) != 1:
        return None
    a, b = spans[0]
    return odd.pop(), a, b


def _word_apart(
    series: dict[str, dict[int, list[tuple[str, RankLine]]]],
) -> list[tuple[int, int, str, str, list[int], RankLine]]:
    """Odd lines whose differing token is a word (``torch.bfloat16`` for ``torch.float32``):
    a line only one rank printed, one token apart from a line every other rank printed once
    (at least two of them), and that rank printed no line of that template."""
    shared = {t: v for t, v in series.items() if len(v) >= MIN_RANKS - 1}
    ranks = {r for v in series.values() for r in v}
    out = []
    for per_rank in series.values():
        if len(per_rank) != 1:
            continue
        ((rank, lines),) = per_rank.items()
        if len(lines) != 1:
            continue
        text, ln = lines[0]
        for other in shared.values():
            if rank in other or set(other) != ranks - {rank}:
                continue
            usual = {v[0][0] for v in other.values() if len(v) == 1}
            if len(usual) != 1 or any(len(v) != 1 for v in other.values()):
                continue
            u = usual.pop()
            if _one_token_apart(text, u):
                a, b = _span(text, u)
                if _telling(a, b):
                    out.append((ln.line, rank, a, b, sorted(other), ln))
    return out


#: Tokens at most in which the odd rank's last line may differ from the others' (a count and
#: the list it decided: ``n_images=2 ... order=['vision', 'text']``).
MAX_LAST_TOKENS = 3


def odd_step_line(ctx: Context) -> tuple[int, str] | None:
    """:func:`odd_step_line_parts`'s rank with the reason (``odd_step_line``), or ``None``."""
    found = odd_step_line_parts(ctx)
    return None if found is None else _told("odd_step_line", found)


def odd_step_line_parts(ctx: Context) -> tuple[int, str, str, list[int], RankLine] | None:
    """The odd line of the step the ranks stopped at, as ``(rank, its differing text, the
    others' text, the other ranks, its line)``, or ``None``: every rank's last kept line is
    the line it prints each step, every other rank (two at least) printed it the same, and
    one rank printed it differing in at most
    :data:`MAX_LAST_TOKENS` tokens, words among them (numbers alone are a rank a step
    behind, or a count), after printing the usual text at earlier steps (the same code
    path, so the difference is this step's own: ``step 3 n_images=2 sync
    order=['vision', 'text']`` where the others printed ``n_images=0 sync order=['text',
    'vision']``). That step's decision (which collectives, in which order, on which group)
    differed on that rank, and the hang that follows is the others waiting in the other
    branch. Ranks whose quota of kept lines filled up are left out (their last kept line is
    not their last line), so a long run's later steps are not read
    (:data:`rootrank.ranklines.MAX_LINES`)."""
    by_rank, filled, _ = _rank_lines(ctx)
    last: dict[int, tuple[str, RankLine, set[str]]] = {}
    for rank, lines in by_rank.items():
        if rank in filled or not lines:
            continue
        texts = [normalize(ln.text, rank) for ln in lines]
        last[rank] = (texts[-1], lines[-1], {_DIGITS.sub("#", t) for t in texts[:-1]})
    if len(last) < MIN_RANKS:
        return None
    hit = _odd_of({r: v[0] for r, v in last.items()})
    if hit is None:
        return None
    rank, usual = hit
    text, ln, earlier = last[rank]
    if _DIGITS.sub("#", usual) not in earlier:  # the usual line, at an earlier step
        return None
    if _DIGITS.sub("#", text) == _DIGITS.sub("#", usual):
        return None  # numbers only: a rank a step behind, or a count (not a branch's words)
    ta, tb = text.split(), usual.split()
    if len(ta) != len(tb):
        return None
    if not 0 < sum(x != y for x, y in zip(ta, tb, strict=True)) <= MAX_LAST_TOKENS:
        return None
    a, b = _span(text, usual)
    if not _telling(a, b):
        return None
    return rank, a, b, sorted(r for r in last if r != rank), ln


def missing_milestone(ctx: Context) -> tuple[int, str] | None:
    """The one rank that never printed a line every other rank printed (three at least),
    although it printed a line every other rank printed before that one (it was running the
    same code up to there) and its quota of kept lines did not fill up, with the reason
    (``missing_milestone``); ``None`` when no line, or lines missing on different ranks,
    single one out. Positions are compared within a rank only: ranks' output interleaves in
    the order it was flushed."""
    by_rank, filled, _ = _rank_lines(ctx)
    if len(by_rank) < MIN_RANKS + 1:
        return None
    ranks = set(by_rank)
    series = _rank_series(ctx)
    found: list[tuple[int, int, str, list[int]]] = []
    for tmpl, per_rank in series.items():
        missing = ranks - set(per_rank)
        if len(missing) != 1 or len(per_rank) < MIN_RANKS:
            continue
        rank = missing.pop()
        if rank in filled:
            continue
        texts = {v[0][0] for v in per_rank.values()}
        if len(texts) != 1:
            continue
        # templates every other rank printed before this line, and this rank printed too
        before = None
        for q, v in per_rank.items():
            at = v[0][1].line
            earlier = {t for t, pr in series.items() if q in pr and pr[q][0][1].line < at}
            before = earlier if before is None else before & earlier
        if not before or not any(rank in series[t] for t in before if t != tmpl):
            continue
        first = min(v[0][1].line for v in per_rank.values())
        found.append((first, rank, texts.pop(), sorted(per_rank)))
    if not found or len({f[1] for f in found}) != 1:
        return None
    first, rank, text, others = min(found)
    return rank, say(
        "missing_milestone",
        rank=rank,
        text=text.replace("<R>", "N"),
        others=format_ranks(others),
        line=first,
    )


#: A floating-point dtype a line names (group 1), as torch spells it (``torch.float64``,
#: ``float16``) or as scripts say it (``fp16``, ``bf16``, ``double precision``, ``.half()``).
_DTYPE_WORD = lazy_regex.compile(
    r"(?i)(?<![\w.])(?:torch\.)?(float64|float32|float16|bfloat16|fp64|fp32|fp16|bf16"
    r"|double(?=\s+precision|\(\))|half(?=\s+precision|\(\)))(?![\w])"
)
#: Each dtype word's canonical torch name.
_DTYPE_NAME = {
    "fp64": "float64",
    "double": "float64",
    "fp32": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
}


def lone_dtype(ctx: Context) -> tuple[int, str, int, str] | None:
    """The one rank whose own lines before the failure name a floating-point dtype that no
    other rank's lines name: ``(rank, the dtype's torch name, 1-based line, its text)``, or
    ``None`` when no dtype, or dtypes named by different ranks, single one out, or the log
    knows fewer than two ranks.

    Mechanism: a script that converts its model or tensors on one branch says so on that
    branch (``[rank 2] input max 9120.4 > 1e3, casting the model to float64``); the ranks that
    did not take it print nothing of the kind. In a collective whose byte counts are a dtype
    width apart that rank sent the odd tensor (:func:`rootrank.analysis.initiator.lone_dtype_line`
    gates on the ratio). Read from :func:`_rank_lines` (each rank's kept lines before its own
    failure)."""
    by_rank, _, _ = _rank_lines(ctx)
    if len(ctx.known_ranks() | set(by_rank)) < 2:
        return None
    first: dict[str, dict[int, RankLine]] = {}
    for rank, lines in by_rank.items():
        for ln in lines:
            for m in _DTYPE_WORD.finditer(ln.text):
                word = m.group(1).lower()
                name = _DTYPE_NAME.get(word, word)
                first.setdefault(name, {}).setdefault(rank, ln)
    lone = {name: held for name, held in first.items() if len(held) == 1}
    ranks = {r for held in lone.values() for r in held}
    if len(ranks) != 1:
        return None
    (rank,) = ranks
    name, ln = min(((n, held[rank]) for n, held in lone.items()), key=lambda x: x[1].line)
    text = ln.text if len(ln.text) <= MAX_QUOTE else ln.text[: MAX_QUOTE - 3] + "..."
    return rank, name, ln.line, text


#: A rank's print of its point-to-point peers: ``send to 3``, ``sending to rank 3``,
#: ``dst=3``; ``recv from 2``, ``receiving from rank 2``, ``src=2`` (``None``: no peer).
_P2P_DST = lazy_regex.compile(r"(?i)\b(?:send(?:s|ing)?\s+to|dst\s*=)\s*(?:rank\s*)?(\d+|None)\b")
_P2P_SRC = lazy_regex.compile(
    r"(?i)\b(?:recv|receiv(?:e|es|ing))\s+from\s*(?:rank\s*)?(\d+|None)\b|\bsrc\s*=\s*(\d+|None)\b"
)


def p2p_unmatched(ctx: Context) -> tuple[int, list[str], RankLine] | None:
    """The one rank whose point-to-point peers do not pair with theirs, from the peers each
    rank printed (``[stage 1] recv from 0, send to 3``; :func:`_rank_lines`): ``(rank, the
    unpaired sends/recvs in words, that rank's line)``, or ``None``.

    Mechanism: ``dist.send(dst=d)`` on rank ``r`` completes only when rank ``d`` posts
    ``dist.recv(src=r)`` (gloo and NCCL pair them by source and destination, no matching by
    content). A send to a rank that receives from another, or a receive from a rank that
    sends elsewhere, waits until the timeout on both sides, and every rank downstream waits
    for them: the whole pipeline times out together, so the ranks' tracebacks do not tell
    the culprit. Pairing every printed ``dst`` with its peer's ``src`` does: each unpaired
    side names two ranks, and the one rank in every unpaired side is the one whose peer
    table is wrong. Needs at least three ranks that printed peers and one rank common to
    every unpaired side (a consistent table, or two wrong ranks, gives ``None``)."""
    by_rank, _, _ = _rank_lines(ctx)
    dst: dict[int, set[int | None]] = {}
    src: dict[int, set[int | None]] = {}
    where: dict[int, RankLine] = {}
    for rank, lines in by_rank.items():
        for ln in lines:
            dsts = [m.group(1) for m in _P2P_DST.finditer(ln.text)]
            srcs = [m.group(1) or m.group(2) for m in _P2P_SRC.finditer(ln.text)]
            if not dsts and not srcs:
                continue
            where.setdefault(rank, ln)
            for v in dsts:
                dst.setdefault(rank, set()).add(None if v == "None" else int(v))
            for v in srcs:
                src.setdefault(rank, set()).add(None if v == "None" else int(v))
    if len(where) < 3:
        return None
    sides: list[tuple[frozenset[int], str]] = []
    for r, targets in dst.items():
        for d in targets:
            if d is not None and d in src and r not in src[d]:
                sides.append(
                    (
                        frozenset({r, d}),
                        f"rank {r} sends to {d}, which receives from {_peers(src[d])}",
                    )
                )
    for r, sources in src.items():
        for s in sources:
            if s is not None and s in dst and r not in dst[s]:
                sides.append(
                    (
                        frozenset({r, s}),
                        f"rank {r} receives from {s}, which sends to {_peers(dst[s])}",
                    )
                )
    if not sides:
        return None
    common = frozenset.intersection(*(pair for pair, _ in sides))
    if len(common) != 1:
        return None
    (rank,) = common
    if rank not in where:
        return None
    return rank, [text for _, text in sides], where[rank]


def _peers(values: set[int | None]) -> str:
    """The peers of a printed set, in words (``2``, ``2 and 3``, ``none``)."""
    named = sorted(v for v in values if v is not None)
    return " and ".join(str(v) for v in named) if named else "none"
