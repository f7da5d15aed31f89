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


#: Field metadata read by :func:`rootrank.mask_walk.mask_result` (``field(metadata=...)``):
#: a string field is masked as log text unless it says otherwise. ``HOST`` fields hold a
#: host name (masked to its pseudonym); ``OURS`` fields hold rootrank's own words (ids,
#: slugs, the entry's text rendered from values masked before they filled it), never
#: rewritten. ``ABOUT_PATH`` fields hold rootrank's sentences that begin with the path they
#: are about (``"tl2: the folder holds 2 runs ..."``): the path is masked as a path, the rest
#: as text, so a folder's name before ``": "`` is not read as a pdsh host prefix.
HOST = {"mask": "host"}
OURS = {"mask": "ours"}
ABOUT_PATH = {"mask": "about_path"}


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

    signature: str = field(metadata=OURS)
    failure_class: str = field(metadata=OURS)
    #: The signature's title; the unclassified finding's quotes the exception and is masked
    #: as log text (:func:`rootrank.mask_walk.mask_diagnosis`).
    title: str = field(metadata=OURS)
    role: str = field(metadata=OURS)
    severity: str = field(metadata=OURS)
    specificity: int
    rank: int | None
    host: str | None = field(metadata=HOST)
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

    def recast(self, sig: Any, captures: dict[str, str] | None = None) -> Finding:
        """This finding read as signature ``sig`` (an analysis that narrowed its cause: a
        timeout that is a desync): the same rank, host, time, order, lines and count, with
        ``captures`` (default: a copy of its own)."""
        return Finding.of(
            sig,
            rank=self.rank,
            host=self.host,
            time=self.time,
            order=self.order,
            evidence=list(self.evidence),
            captures=dict(self.captures) if captures is None else captures,
            count=self.count,
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
class Symptom:
    """A line a user may see with this failure (from the signature's entry) and its meaning."""

    text: str = field(metadata=OURS)
    meaning: str = field(metadata=OURS)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "meaning": self.meaning}


@dataclass(slots=True)
class FixVariant:
    """Which of the signature's fix variants the evidence chose (``id``) and why (``why``
    quotes what the log said, masked)."""

    id: str = field(metadata=OURS)
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "why": self.why}


@dataclass(slots=True)
class Fix:
    """The fix, rendered for this job: ``steps`` in order, ``code`` per stack (``pytorch``,
    ``hf``, ``deepspeed``, ``megatron``, ``vllm``) and the chosen ``variant`` (``None`` for
    the signature's default fix)."""

    steps: list[str] = field(default_factory=list, metadata=OURS)
    code: dict[str, str] = field(default_factory=dict, metadata=OURS)
    variant: FixVariant | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "code": dict(self.code),
            "variant": self.variant.to_dict() if self.variant else None,
        }


@dataclass(slots=True)
class Related:
    """Another signature the entry points to: its ``id`` and ``title``."""

    id: str = field(metadata=OURS)
    title: str = field(metadata=OURS)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title}


@dataclass(slots=True)
class UserFrame:
    """The initiating rank's innermost frame in the user's own code: ``file`` (as the log
    printed it, masked), ``line`` (1-based in that file) and ``func``."""

    file: str
    line: int
    func: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "func": self.func}


@dataclass(slots=True)
class CallSite:
    """One rank's call site of a collective: its innermost user frame (``file``, 1-based
    ``line``, ``func``) and the collective it waited in (``None`` when the traceback does not
    show one)."""

    rank: int | None
    file: str
    line: int
    func: str
    collective: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "file": self.file,
            "line": self.line,
            "func": self.func,
            "collective": self.collective,
        }


@dataclass(slots=True)
class RootCause:
    """The finding nothing else explains, with its signature's entry rendered for this log
    (:func:`rootrank.entry.fill_entry`).

    ``rank``/``host`` are the initiating rank and its host when the analysis named one, else
    the finding's; ``ranks`` every rank that reported this root cause; ``count`` the lines
    they matched; ``confidence`` 0.05..0.99. ``evidence`` holds up to 5 lines (the finding's
    first 3, then supporting lines of the same class); ``frames`` the traceback
    (``{"file", "line", "func", "user"}``, innermost last). ``summary``, ``mechanism``,
    ``symptoms``, ``fix``, ``confirm``, ``verify`` come from the signature's entry with the
    log's values (masked) filled in; ``user_frame`` and ``call_sites`` from the tracebacks
    (:mod:`rootrank.entry.frames`).
    """

    signature: str = field(metadata=OURS)
    failure_class: str = field(metadata=OURS)
    title: str = field(metadata=OURS)
    category: str = field(metadata=OURS)
    confidence: float = 0.0
    rank: int | None = None
    host: str | None = field(default=None, metadata=HOST)
    time: float | None = None
    count: int = 1
    ranks: list[int] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)
    frames: list[dict[str, Any]] = field(default_factory=list)
    user_frame: UserFrame | None = None
    call_sites: list[CallSite] = field(default_factory=list)
    summary: str = field(default="", metadata=OURS)
    mechanism: str = field(default="", metadata=OURS)
    symptoms: list[Symptom] = field(default_factory=list)
    fix: Fix = field(default_factory=Fix)
    confirm: list[str] = field(default_factory=list, metadata=OURS)
    verify: str = field(default="", metadata=OURS)
    references: list[str] = field(default_factory=list, metadata=OURS)
    related: list[Related] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "failure_class": self.failure_class,
            "title": self.title,
            "category": self.category,
            "confidence": self.confidence,
            "rank": self.rank,
            "host": self.host,
            "time": self.time,
            "count": self.count,
            "ranks": list(self.ranks),
            "evidence": [e.to_dict() for e in self.evidence],
            "captures": dict(self.captures),
            "frames": list(self.frames),
            "user_frame": self.user_frame.to_dict() if self.user_frame else None,
            "call_sites": [c.to_dict() for c in self.call_sites],
            "summary": self.summary,
            "mechanism": self.mechanism,
            "symptoms": [s.to_dict() for s in self.symptoms],
            "fix": self.fix.to_dict(),
            "confirm": list(self.confirm),
            "verify": self.verify,
            "references": list(self.references),
            "related": [r.to_dict() for r in self.related],
        }


@dataclass(slots=True)
class CollateralGroup:
    """The findings of one signature that the root cause explains: the ``ranks`` that
    reported it (sorted), how many lines matched (``count``), up to 8 ``evidence`` lines (the
    first of each finding) and the first finding's ``captures``."""

    signature: str = field(metadata=OURS)
    failure_class: str = field(metadata=OURS)
    title: str = field(default="", metadata=OURS)
    role: str = field(default="symptom", metadata=OURS)
    ranks: list[int] = field(default_factory=list)
    count: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "failure_class": self.failure_class,
            "title": self.title,
            "role": self.role,
            "ranks": list(self.ranks),
            "count": self.count,
            "evidence": [e.to_dict() for e in self.evidence],
            "captures": dict(self.captures),
        }


@dataclass(slots=True)
class RankFacts:
    """What the log told about the job's ranks: the ranks ``seen`` (sorted), each rank's
    host (``hosts``) and the world size (``None`` when no line prints it)."""

    seen: list[int] = field(default_factory=list)
    hosts: dict[int, str] = field(default_factory=dict, metadata=HOST)
    world_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The contract's ``ranks`` object (host keys are the ranks as strings)."""
        return {
            "seen": list(self.seen),
            "hosts": {str(r): h for r, h in sorted(self.hosts.items())},
            "world_size": self.world_size,
        }


@dataclass(slots=True)
class TimelineMark:
    """One finding on the timeline: rank, time (seconds since the epoch, or ``None``),
    ``order`` across all sources (0-based), ``kind`` (``root``, ``collateral`` or
    ``finding`` when there is no root cause) and its first line (``path``, 1-based
    ``line``)."""

    rank: int | None
    time: float | None
    order: int
    signature: str = field(metadata=OURS)
    title: str = field(default="", metadata=OURS)
    kind: str = field(default="finding", metadata=OURS)
    path: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "time": self.time,
            "order": self.order,
            "signature": self.signature,
            "title": self.title,
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
        }


@dataclass(slots=True)
class EventRef:
    """An event the causal analysis named: its ``kind`` (``finding``, ``exception``,
    ``exit``...), signature, rank and first line (``path``, 1-based ``line``)."""

    kind: str = field(metadata=OURS)
    signature: str | None = field(default=None, metadata=OURS)
    rank: int | None = None
    path: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "signature": self.signature,
            "rank": self.rank,
            "path": self.path,
            "line": self.line,
        }


@dataclass(slots=True)
class Explanation:
    """An edge the causal analysis drew: ``cause`` explains ``effect`` by ``rule`` (the rule's
    name, :data:`rootrank.analysis.rules.RULES`), ``why`` in a sentence."""

    cause: EventRef
    effect: EventRef
    rule: str = field(metadata=OURS)
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause.to_dict(),
            "effect": self.effect.to_dict(),
            "rule": self.rule,
            "why": self.why,
        }


@dataclass(slots=True)
class InitiatorInfo:
    """How the initiating rank was found: the ``rank`` (``None`` when the strategies cannot
    tell), the ``strategy`` that named it, ``why`` in a sentence, the ``candidates`` it chose
    from (sorted) and the other strategies ``agreeing``."""

    rank: int | None = None
    strategy: str | None = field(default=None, metadata=OURS)
    why: str = ""
    candidates: list[int] = field(default_factory=list)
    agreeing: list[str] = field(default_factory=list, metadata=OURS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "strategy": self.strategy,
            "why": self.why,
            "candidates": list(self.candidates),
            "agreeing": list(self.agreeing),
        }


@dataclass(slots=True)
class RankStep:
    """One rank's last training step seen: ``step``, its time (seconds since the epoch, or
    ``None``) and the line that showed it (``path``, 1-based ``line``)."""

    rank: int | None
    step: int
    time: float | None
    path: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "step": self.step,
            "time": self.time,
            "path": self.path,
            "line": self.line,
        }


@dataclass(slots=True)
class TrainingProgress:
    """How far training got (:meth:`rootrank.progress.ProgressModel.report`): each rank's
    last step (``ranks``), the time of the log's last timestamped line (``end_time``), the
    seconds from the last progress to it (``silent_seconds``) and the ranks ``behind`` all
    others."""

    ranks: list[RankStep] = field(default_factory=list)
    end_time: float | None = None
    silent_seconds: float | None = None
    behind: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ranks": [r.to_dict() for r in self.ranks],
            "end_time": self.end_time,
            "silent_seconds": self.silent_seconds,
            "behind": list(self.behind),
        }


@dataclass(slots=True)
class MetricOnset:
    """Where a training curve went wrong (:mod:`rootrank.metrics`): the detector's ``kind``,
    the ``step``, the rank (``None`` for all), the line (``path``, 1-based ``line``) and
    ``why`` in a sentence."""

    kind: str = field(metadata=OURS)
    step: int = 0
    rank: int | None = None
    line: int = 0
    path: str = ""
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "step": self.step,
            "rank": self.rank,
            "line": self.line,
            "path": self.path,
            "why": self.why,
        }


@dataclass(slots=True)
class MetricSeries:
    """One training curve (``loss``, ``grad_norm``...) of one rank (``None``: the job's):
    ``points`` as ``[step, value]`` (non-finite values as ``"nan"``/``"inf"``/``"-inf"``, at
    most 500) and its ``onsets``."""

    name: str = field(metadata=OURS)
    rank: int | None = None
    points: list[list[Any]] = field(default_factory=list)
    onsets: list[MetricOnset] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rank": self.rank,
            "points": [list(p) for p in self.points],
            "onsets": [o.to_dict() for o in self.onsets],
        }


@dataclass(slots=True)
class Diagnosis:
    """The answer for one log (or one set of per-rank logs).

    ``root_cause`` is ``None`` when nothing known explains the failure; then
    ``unclassified`` may hold the last exception seen, as a finding with signature
    ``"unclassified"``. ``collateral`` groups the findings the root cause explains,
    one entry per signature with its ranks. ``ranks`` is what was learned about the
    job's ranks. Every string field is masked by :func:`rootrank.mask_walk.mask_result`
    unless its field says it holds a host or rootrank's own words (:data:`HOST`,
    :data:`OURS`).
    """

    sources: list[str]
    root_cause: RootCause | None
    initiating_rank: int | None
    initiating_host: str | None = field(metadata=HOST)
    reasoning: list[str]
    collateral: list[CollateralGroup]
    findings: list[Finding]
    ranks: RankFacts
    unclassified: Finding | None = None
    stack: list[str] = field(default_factory=list, metadata=OURS)
    timeline: list[TimelineMark] = field(default_factory=list)
    lines_read: int = 0
    warnings: list[str] = field(default_factory=list, metadata=ABOUT_PATH)
    #: The causal edges that decided.
    explanations: list[Explanation] = field(default_factory=list)
    #: How the initiating rank was found.
    initiator: InitiatorInfo | None = None
    #: How many runs the log holds (appended attempts); the diagnosis is about the last.
    attempts: int = 1
    #: Training progress (the contract's ``progress`` object, or ``None``) and metric series
    #: (``metrics``), from :mod:`rootrank.progress` and :mod:`rootrank.metrics`.
    progress: TrainingProgress | None = None
    metrics: list[MetricSeries] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``rootrank.diagnosis/1`` JSON object."""
        return {
            "schema": SCHEMA,
            "sources": list(self.sources),
            "root_cause": self.root_cause.to_dict() if self.root_cause else None,
            "initiating_rank": self.initiating_rank,
            "initiating_host": self.initiating_host,
            "reasoning": list(self.reasoning),
            "collateral": [g.to_dict() for g in self.collateral],
            "findings": [f.to_dict() for f in self.findings],
            "unclassified": self.unclassified.to_dict() if self.unclassified else None,
            "ranks": self.ranks.to_dict(),
            "stack": list(self.stack),
            "timeline": [t.to_dict() for t in self.timeline],
            "lines_read": self.lines_read,
            "warnings": list(self.warnings),
            "explanations": [e.to_dict() for e in self.explanations],
            "initiator": self.initiator.to_dict() if self.initiator else None,
            "attempts": self.attempts,
            "progress": self.progress.to_dict() if self.progress else None,
            "metrics": [m.to_dict() for m in self.metrics],
        }
