"""The engine's data types: lines, findings and the diagnosis.

Every position is 1-based for lines (as editors and ``path:line`` show them) and
0-based, in Python ``str`` code points, for columns. Times are seconds since the
epoch as ``float`` (a log that prints only a time of day gets the date 1970-01-01,
which still orders events within one run).

The JSON form of :class:`Diagnosis` is the public contract ``rootrank.diagnosis/1``:
extend it, never break it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA = "rootrank.diagnosis/1"


@dataclass(slots=True)
class Evidence:
    """A line that supports a finding.

    ``column_start``/``column_end`` are 0-based code-point offsets into the original
    line (``raw``) covering the matched text; both ``None`` when unknown.
    """

    path: str
    line: int
    text: str
    rank: int | None = None
    column_start: int | None = None
    column_end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "rank": self.rank,
            "column_start": self.column_start,
            "column_end": self.column_end,
        }


@dataclass(slots=True)
class Finding:
    """A signature matched in a log (one per signature per rank per source, repeats counted).

    Attributes:
        signature: the signature id (``"unclassified"`` for an exception no signature knows).
        failure_class: its class from ``taxonomy.md``.
        title: the signature's title.
        role: ``"cause"`` or ``"symptom"``.
        severity: ``"error"`` or ``"warning"``.
        specificity: 0..100, how much this finding explains (from the signature).
        rank: global rank, or ``None``.
        host: host name, or ``None``.
        time: seconds since the epoch of the first occurrence, or ``None``.
        order: global order of the first occurrence across all sources (0-based).
        count: how many lines matched.
        evidence: the first few matched lines (bounded).
        captures: named groups captured by the first match (``seqnum``, ``optype``, ``size``...).
        frames: when the first match is a Python exception line, that traceback's frames,
            innermost last, as ``{"file", "line" (1-based in that file), "func", "user"}``
            (``user`` is false for site-packages, the standard library and torch).
    """

    signature: str
    failure_class: str
    title: str
    role: str
    severity: str
    specificity: int
    rank: int | None
    host: str | None
    time: float | None
    order: int
    count: int = 1
    evidence: list[Evidence] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)
    frames: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        sig: Any,
        *,
        rank: int | None,
        host: str | None,
        time: float | None,
        order: int,
        evidence: list[Evidence],
        captures: dict[str, str],
        count: int = 1,
    ) -> Finding:
        """A finding of signature ``sig`` (a :class:`rootrank.signatures.Signature`: its id,
        class, title, role, severity and specificity are copied)."""
        return cls(
            signature=sig.id,
            failure_class=sig.failure_class,
            title=sig.title,
            role=sig.role,
            severity=sig.severity,
            specificity=sig.specificity,
            rank=rank,
            host=host,
            time=time,
            order=order,
            count=count,
            evidence=evidence,
            captures=captures,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "failure_class": self.failure_class,
            "title": self.title,
            "role": self.role,
            "severity": self.severity,
            "rank": self.rank,
            "host": self.host,
            "time": self.time,
            "count": self.count,
            "captures": dict(self.captures),
            "evidence": [e.to_dict() for e in self.evidence],
            "frames": list(self.frames),
        }


@dataclass(slots=True)
class Diagnosis:
    """The answer for one log (or one set of per-rank logs).

    ``root_cause`` is ``None`` when nothing known explains the failure; then
    ``unclassified`` may hold the last exception seen, as a finding with signature
    ``"unclassified"``. ``collateral`` groups the findings the root cause explains,
    one entry per signature with its ranks. ``ranks`` is what was learned about the
    job: ``{"seen": [int], "hosts": {rank: host}, "world_size": int|None}``.
    """

    sources: list[str]
    root_cause: dict[str, Any] | None
    initiating_rank: int | None
    initiating_host: str | None
    reasoning: list[str]
    collateral: list[dict[str, Any]]
    findings: list[Finding]
    ranks: dict[str, Any]
    unclassified: Finding | None = None
    stack: list[str] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    lines_read: int = 0
    warnings: list[str] = field(default_factory=list)
    #: The causal edges that decided: ``{"cause", "effect", "rule", "why"}`` (EventRefs).
    explanations: list[dict[str, Any]] = field(default_factory=list)
    #: How the initiating rank was found: ``{"rank", "strategy", "why", "candidates", "agreeing"}``.
    initiator: dict[str, Any] | None = None
    #: How many runs the log holds (appended attempts); the diagnosis is about the last.
    attempts: int = 1
    #: Training progress (the contract's ``progress`` object, or ``None``) and metric series
    #: (``metrics``), from :mod:`rootrank.progress` and :mod:`rootrank.metrics`.
    progress: dict[str, Any] | None = None
    metrics: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``rootrank.diagnosis/1`` JSON object."""
        return {
            "schema": SCHEMA,
            "sources": list(self.sources),
            "root_cause": self.root_cause,
            "initiating_rank": self.initiating_rank,
            "initiating_host": self.initiating_host,
            "reasoning": list(self.reasoning),
            "collateral": self.collateral,
            "findings": [f.to_dict() for f in self.findings],
            "unclassified": self.unclassified.to_dict() if self.unclassified else None,
            "ranks": self.ranks,
            "stack": list(self.stack),
            "timeline": self.timeline,
            "lines_read": self.lines_read,
            "warnings": list(self.warnings),
            "explanations": list(self.explanations),
            "initiator": self.initiator,
            "attempts": self.attempts,
            "progress": self.progress,
            "metrics": self.metrics,
        }
