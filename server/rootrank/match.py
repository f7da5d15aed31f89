"""Matching signature patterns against cleaned lines: cheap literals before any regex.

Patterns are grouped by their literal. For each line, only the literals are checked
(``in``, a C substring search); a regex runs only on lines that contain its literal, with
the ``regex`` module's ``timeout`` so a pathological line can never hang the caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import regex

from rootrank.signatures import Library, Pattern, Signature

#: Seconds one regex may spend on one line before it is abandoned (and reported).
REGEX_TIMEOUT_S = 0.05

#: Lines longer than this (characters) are matched on their first part only.
MAX_MATCH_CHARS = 16384


@dataclass(slots=True)
class Hit:
    """One pattern matched on one line: ``span`` is the 0-based [start, end) in the text."""

    signature: Signature
    span: tuple[int, int]
    captures: dict[str, str]
    matched: str


@dataclass
class Matcher:
    """All patterns of a library, ready to run on lines. Build with :meth:`from_library`."""

    sensitive: list[tuple[str, list[tuple[Pattern, Signature]]]]
    insensitive: list[tuple[str, list[tuple[Pattern, Signature]]]]
    timeouts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_library(cls, library: Library) -> Matcher:
        by_literal: dict[tuple[str, bool], list[tuple[Pattern, Signature]]] = {}
        for sig in library.signatures.values():
            for pattern in sig.patterns:
                by_literal.setdefault((pattern.literal, pattern.ignorecase), []).append((pattern, sig))
        sensitive = [(lit, pats) for (lit, ic), pats in by_literal.items() if not ic]
        insensitive = [(lit, pats) for (lit, ic), pats in by_literal.items() if ic]
        return cls(sensitive=sensitive, insensitive=insensitive)

    def literals(self) -> list[str]:
        """Every literal (case-sensitive ones as written, insensitive ones lower-case)."""
        return [lit for lit, _ in self.sensitive] + [lit for lit, _ in self.insensitive]

    def match(self, text: str) -> Iterator[Hit]:
        """Yield every signature that matches ``text`` (at most one hit per signature)."""
        if len(text) > MAX_MATCH_CHARS:
            text = text[:MAX_MATCH_CHARS]
        seen: set[str] | None = None
        for literal, patterns in self.sensitive:
            if literal in text:
                for pattern, sig in patterns:
                    if seen is not None and sig.id in seen:
                        continue
                    hit = self._run(pattern, sig, text)
                    if hit is not None:
                        if seen is None:
                            seen = set()
                        seen.add(sig.id)
                        yield hit
        if self.insensitive:
            lower = text.lower()
            for literal, patterns in self.insensitive:
                if literal in lower:
                    for pattern, sig in patterns:
                        if seen is not None and sig.id in seen:
                            continue
                        hit = self._run(pattern, sig, text)
                        if hit is not None:
                            if seen is None:
                                seen = set()
                            seen.add(sig.id)
                            yield hit

    def _run(self, pattern: Pattern, sig: Signature, text: str) -> Hit | None:
        try:
            m = pattern.regex.search(text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            self.timeouts[sig.id] = self.timeouts.get(sig.id, 0) + 1
            return None
        if m is None:
            return None
        captures = {k: v for k, v in m.groupdict().items() if v is not None}
        return Hit(sig, m.span(), captures, m.group(0))


def compile_literal_gate(literals: list[str]) -> regex.Pattern[str]:
    """One regex that matches any of ``literals`` (case-insensitively): a line that does not
    match it cannot match any signature."""
    alternatives = sorted({regex.escape(lit.lower()) for lit in literals}, key=len, reverse=True)
    return regex.compile("|".join(alternatives), regex.IGNORECASE)
