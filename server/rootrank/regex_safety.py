"""Catastrophic-backtracking probe for signature patterns.

A signature regex runs on every log line, so one pattern with nested or overlapping
quantifiers (``(a|aa)+b``, ``(\\w+\\s?)+$``) could stall the engine on one hostile line. This
module builds adversarial lines for a pattern and times the match on each:

- the pattern is parsed with Python's own regex parser (``re._parser``; ``sre_parse`` before
  3.11) into a tree; for every quantified item an example of what its body matches is *pumped*
  (repeated up to the probe length) inside an example of the whole pattern, and the line is
  ended by a character that makes the match fail (the "pumping" attack of ReDoS studies);
- runs of each character class a quantifier accepts, alternations of two accepted characters,
  and near-misses (an example of the whole pattern minus its last character, repeated) are
  added, each after the signature's ``literal`` so they pass the engine's pre-filter;
- patterns the stdlib parser cannot read (``regex``-only syntax) still get the generic lines.

:func:`probe` returns the slowest line's time; :func:`check` turns that into a message for the
signature loader. Matching uses the ``regex`` module's ``timeout=`` so a probe itself never
hangs (the module checks its timeout periodically: a run can overshoot by a few times).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

try:  # Python >= 3.11
    from re import _constants as _c
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

#: Characters of a probe line (the engine cuts matched text at 16384 characters).
PROBE_CHARS = 16384
#: A pattern whose slowest adversarial line takes longer than this (seconds) is unsafe.
BUDGET_S = 0.25
#: At most this many adversarial lines are tried per pattern.
MAX_LINES = 80

_FAIL_TAILS = ("\x00", "!", " ", "\n")
_GENERIC = ("a", "0", " ", "a ", "a.", "a-", "a:", "0.", "\t", "a0", "A", "_", "/", "=")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The outcome of :func:`probe`: ``worst_s`` seconds on the slowest line (``kind`` says how
    that line was built), ``timed_out`` when the regex module's timeout fired, ``lines`` tried."""

    worst_s: float
    kind: str
    timed_out: bool
    lines: int


def _category_chars(cat: Any) -> list[str]:
    table = {
        _c.CATEGORY_DIGIT: ["0", "7"],
        _c.CATEGORY_NOT_DIGIT: ["a", " "],
        _c.CATEGORY_SPACE: [" ", "\t"],
        _c.CATEGORY_NOT_SPACE: ["a", "0", "."],
        _c.CATEGORY_WORD: ["a", "Z", "0", "_"],
        _c.CATEGORY_NOT_WORD: [" ", ".", "-"],
    }
    return table.get(cat, ["a"])


def _in_chars(items: list[Any]) -> list[str]:
    negate = any(op is _c.NEGATE for op, _ in items)
    chars: list[str] = []
    for op, av in items:
        if op is _c.LITERAL:
            chars.append(chr(av))
        elif op is _c.RANGE:
            lo, hi = av
            chars.extend({chr(lo), chr(hi), chr((lo + hi) // 2)})
        elif op is _c.CATEGORY:
            chars.extend(_category_chars(av))
    if negate:
        excluded = set(chars)
        return [ch for ch in ("a", "0", " ", ".", "-", "Z", "_", ":") if ch not in excluded][:3]
    return chars or ["a"]


def _first_chars(tree: Any, depth: int = 0) -> list[str]:
    """Characters that can start a match of ``tree`` (a parsed sub-pattern), a few of each."""
    if depth > 20:
        return ["a"]
    out: list[str] = []
    for op, av in tree:
        if op is _c.LITERAL:
            return [chr(av)]
        if op is _c.NOT_LITERAL:
            return [ch for ch in ("a", " ", "0") if ord(ch) != av][:2]
        if op is _c.ANY:
            return ["a", " ", "."]
        if op is _c.IN:
            return _in_chars(av)
        if op is _c.SUBPATTERN:
            return _first_chars(av[-1], depth + 1)
        if op is _c.BRANCH:
            for alt in av[1]:
                out.extend(_first_chars(alt, depth + 1))
            return out or ["a"]
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
            out.extend(_first_chars(av[2], depth + 1))
            if av[0] > 0:
                return out
            continue
        if op is getattr(_c, "ATOMIC_GROUP", None):
            return _first_chars(av, depth + 1)
        # anchors, lookarounds, backreferences: no character of their own
    return out or ["a"]


def _example(
    tree: Any, pump: int | None, n: int, counter: list[int], depth: int = 0
) -> tuple[str, bool]:
    """One string ``tree`` matches; the ``pump``-th quantifier (pre-order) is repeated ``n``
    times. Returns ``(text, pumped)``; generation stops right after the pumped run so the
    caller can append a failing tail."""
    if depth > 30:
        return "", False
    parts: list[str] = []
    for op, av in tree:
        if op is _c.LITERAL:
            parts.append(chr(av))
        elif op is _c.NOT_LITERAL:
            parts.append("a" if av != ord("a") else "b")
        elif op is _c.ANY:
            parts.append("a")
        elif op is _c.IN:
            parts.append(_in_chars(av)[0])
        elif op is _c.SUBPATTERN:
            text, done = _example(av[-1], pump, n, counter, depth + 1)
            parts.append(text)
            if done:
                return "".join(parts), True
        elif op is _c.BRANCH:
            text, done = _example(av[1][0], pump, n, counter, depth + 1)
            parts.append(text)
            if done:
                return "".join(parts), True
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
            lo, hi, body = av
            index = counter[0]
            counter[0] += 1
            if pump == index:
                once, _ = _example(body, None, n, [0], depth + 1)
                once = once or _first_chars(body)[0]
                reps = max(1, min(n // max(1, len(once)), hi if hi != _c.MAXREPEAT else n))
                parts.append(once * reps)
                return "".join(parts), True
            for _ in range(max(lo, 0) if lo < 50 else 50):
                text, done = _example(body, pump, n, counter, depth + 1)
                parts.append(text)
                if done:
                    return "".join(parts), True
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            text, done = _example(av, pump, n, counter, depth + 1)
            parts.append(text)
            if done:
                return "".join(parts), True
        elif op is _c.GROUPREF:
            pass
        # AT (anchors), ASSERT, ASSERT_NOT: nothing to emit
    return "".join(parts), False


def _repeat_count(tree: Any, depth: int = 0) -> int:
    count = 0
    for op, av in tree:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
            count += 1 + _repeat_count(av[2], depth + 1)
        elif op is _c.SUBPATTERN:
            count += _repeat_count(av[-1], depth + 1)
        elif op is _c.BRANCH:
            count += sum(_repeat_count(alt, depth + 1) for alt in av[1])
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            count += _repeat_count(av, depth + 1)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            count += _repeat_count(av[1], depth + 1)
    return count


def _repeat_bodies(tree: Any, depth: int = 0) -> list[Any]:
    bodies: list[Any] = []
    for op, av in tree:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op is getattr(_c, "POSSESSIVE_REPEAT", None):
            bodies.append(av[2])
            bodies.extend(_repeat_bodies(av[2], depth + 1))
        elif op is _c.SUBPATTERN:
            bodies.extend(_repeat_bodies(av[-1], depth + 1))
        elif op is _c.BRANCH:
            for alt in av[1]:
                bodies.extend(_repeat_bodies(alt, depth + 1))
        elif op is getattr(_c, "ATOMIC_GROUP", None):
            bodies.extend(_repeat_bodies(av, depth + 1))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            bodies.extend(_repeat_bodies(av[1], depth + 1))
    return bodies


def adversarial_lines(
    source: str, literal: str = "", *, length: int = PROBE_CHARS, ignorecase: bool = False
) -> list[tuple[str, str]]:
    """Adversarial lines for the pattern ``source``: ``[(kind, line)]``, each line at most
    ``length`` characters and containing ``literal`` (the engine's pre-filter) when given."""
    lead = (literal + " ") if literal else ""
    room = max(16, length - len(lead) - 2)
    lines: list[tuple[str, str]] = []
    try:
        flags = _c.SRE_FLAG_IGNORECASE if ignorecase else 0
        tree = _sre_parse.parse(source, flags)
    except Exception:  # noqa: BLE001 - regex-only syntax (re.error, RecursionError...): generic lines only
        tree = None
    if tree is not None:
        whole, _ = _example(tree, None, 0, [0])
        n_rep = _repeat_count(tree)
        for index in range(min(n_rep, 24)):
            pumped, done = _example(tree, index, room, [0])
            if not done:
                continue
            for tail in _FAIL_TAILS[:2]:
                lines.append((f"pump#{index}+{tail!r}", lead + pumped[:room] + tail))
        if whole and len(whole) > 1:
            near = whole[:-1]
            lines.append(("near-miss-repeated", lead + (near + " ") * (room // (len(near) + 1))))
            lines.append(("prefix-then-run", lead + whole[: len(whole) // 2] + "a" * room))
        for body in _repeat_bodies(tree)[:24]:
            chars = _first_chars(body)
            for ch in chars[:3]:
                lines.append((f"run {ch!r}", lead + ch * room + "\x00"))
            if len(chars) >= 2:
                pair = chars[0] + chars[1]
                lines.append((f"run {pair!r}", lead + pair * (room // 2) + "\x00"))
    for unit in _GENERIC:
        lines.append((f"generic {unit!r}", lead + unit * (room // len(unit)) + "!"))
    seen: set[str] = set()
    unique = []
    for kind, line in lines:
        line = line[:length]
        if line not in seen:
            seen.add(line)
            unique.append((kind, line))
    return unique[:MAX_LINES]


def probe(
    compiled: Any, literal: str = "", *, budget_s: float = BUDGET_S, length: int = PROBE_CHARS
) -> ProbeResult:
    """Time ``compiled.search`` (a ``regex`` pattern) on every adversarial line.

    Returns the slowest line's time in seconds; ``timed_out`` is set when a search hit the
    ``timeout=budget_s`` limit (then ``worst_s`` is at least ``budget_s``). Never raises for a
    slow pattern."""
    import time

    ignorecase = bool(compiled.flags & regex.IGNORECASE)
    lines = adversarial_lines(compiled.pattern, literal, length=length, ignorecase=ignorecase)
    worst, worst_kind, timed_out = 0.0, "", False
    for kind, line in lines:
        start = time.perf_counter()
        try:
            compiled.search(line, timeout=budget_s)
        except TimeoutError:
            timed_out = True
        elapsed = time.perf_counter() - start
        if elapsed > worst:
            worst, worst_kind = elapsed, kind
        if timed_out:
            break
    return ProbeResult(worst, worst_kind, timed_out, len(lines))


def _time(compiled: Any, line: str, budget_s: float) -> float:
    """CPU seconds of the fastest of three searches of ``line``, so that other processes on a
    busy machine never make a linear pattern look like backtracking; a search is stopped after
    ``20 * budget_s`` wall seconds and then counts as ten times the budget."""
    import time

    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        try:
            compiled.search(line, timeout=budget_s * 20)
        except TimeoutError:
            return budget_s * 10
        best = min(best, time.thread_time() - start)
    return best


def check(
    compiled: Any, literal: str = "", *, budget_s: float = BUDGET_S, length: int = PROBE_CHARS
) -> str | None:
    """``None`` when ``compiled`` is safe, else a one-line reason for a :class:`SignatureError`.

    Unsafe means: the slowest adversarial ``length``-character line takes more than
    ``budget_s`` seconds *and* the time grows faster than the line (the same kind of line a
    quarter as long is more than 6 times faster; linear growth gives 4), or even the short
    line hits the timeout (exponential backtracking). The growth test keeps a slow but linear
    pattern on a loaded machine from being refused."""
    result = probe(compiled, literal, budget_s=budget_s, length=length)
    if not result.timed_out and result.worst_s <= budget_s:
        return None
    ignorecase = bool(compiled.flags & regex.IGNORECASE)
    full = dict(adversarial_lines(compiled.pattern, literal, length=length, ignorecase=ignorecase))
    quarter = dict(
        adversarial_lines(compiled.pattern, literal, length=length // 4, ignorecase=ignorecase)
    )
    line, short = full.get(result.kind), quarter.get(result.kind)
    if line is None or short is None:
        return None
    t_full = _time(compiled, line, budget_s)
    if t_full <= budget_s:
        return None
    t_short = _time(compiled, short, budget_s)
    if t_short > budget_s or t_full / max(t_short, 1e-3) > 6:
        return (
            f"backtracks catastrophically: over {budget_s:.2f} s on an adversarial "
            f"{length}-character line ({result.kind}), growing faster than the line"
        )
    return None
