"""Scoring the engine on labelled cases (``rootrank eval``).

A case is a folder with ``input.log`` and ``expected.json`` holding ``failure_class``
(``null``/``"healthy"`` for a run that did not fail), optional ``also_acceptable`` (other
classes a careful reader could defend) and ``initiating_rank`` (int, or ``null`` where the
log cannot tell). Folders of cases are searched one level deep.

A folder that cannot be scored (no ``input.log``, no ``expected.json``, an ``expected.json``
that is not JSON or holds a field of the wrong type) is not scored and not counted in the
figures: it is listed in :attr:`EvalReport.skipped` with why, and ``rootrank eval`` names
each on stderr, so a case lost to a typo never passes for a case scored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from rootrank.engine import diagnose_paths
from rootrank.ingest import InputError
from rootrank.signatures import Library

HEALTHY = (None, "", "none", "healthy")
#: ``got_class`` of a case the engine reported as an unclassified failure (no signature named
#: it, the CLI exits 3): a claim that the run failed, counted on healthy logs.
UNCLASSIFIED = "unclassified"


@dataclass
class CaseResult:
    """One case: what was expected and what the engine said."""

    name: str
    expected_class: str | None
    acceptable: list[str]
    expected_rank: int | None
    got_class: str | None
    got_rank: int | None
    got_signature: str | None
    error: str | None = None

    @property
    def healthy(self) -> bool:
        return self.expected_class in HEALTHY

    @property
    def class_ok(self) -> bool:
        if self.healthy:
            return self.got_class is None
        return self.got_class == self.expected_class or self.got_class in self.acceptable

    @property
    def rank_labelled(self) -> bool:
        return self.expected_rank is not None

    @property
    def rank_ok(self) -> bool:
        return self.got_rank == self.expected_rank


@dataclass
class SkippedCase:
    """A case folder that was not scored: ``folder`` as found, ``why`` one sentence."""

    folder: str
    why: str


@dataclass
class EvalReport:
    """All case results with the summary figures (fractions in 0..1), and the folders that
    could not be scored (not in the figures)."""

    cases: list[CaseResult] = field(default_factory=list)
    skipped: list[SkippedCase] = field(default_factory=list)

    @property
    def failing(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.healthy]

    @property
    def class_accuracy(self) -> float:
        cases = self.failing
        return sum(c.class_ok for c in cases) / len(cases) if cases else 1.0

    @property
    def rank_accuracy(self) -> float:
        cases = [c for c in self.failing if c.rank_labelled]
        return sum(c.rank_ok for c in cases) / len(cases) if cases else 1.0

    @property
    def overclaimed(self) -> list[CaseResult]:
        """Failing cases labelled "the log cannot tell" (no ``initiating_rank``) where a rank
        was claimed anyway, in case order."""
        return [c for c in self.failing if not c.rank_labelled and c.got_rank is not None]

    @property
    def rank_overclaims(self) -> int:
        """How many :attr:`overclaimed` cases there are."""
        return len(self.overclaimed)

    @property
    def healthy_claims(self) -> int:
        return sum(1 for c in self.cases if c.healthy and c.got_class is not None)

    def to_dict(self) -> dict[str, Any]:
        labelled = sum(1 for c in self.failing if c.rank_labelled)
        return {
            "cases": len(self.cases),
            # null where nothing was measured (no failing case, no rank label), as the text
            # says "n/a": never a perfect score out of nothing
            "class_accuracy": round(self.class_accuracy, 4) if self.failing else None,
            "rank_accuracy": round(self.rank_accuracy, 4) if labelled else None,
            "rank_labelled": labelled,
            "healthy_cases": sum(1 for c in self.cases if c.healthy),
            "healthy_claims": self.healthy_claims,
            "rank_overclaims": self.rank_overclaims,
            "skipped": [{"case": c.folder, "why": c.why} for c in self.skipped],
            "misses": [
                {
                    "case": c.name,
                    "expected_class": c.expected_class,
                    "got_class": c.got_class,
                    "got_signature": c.got_signature,
                    "expected_rank": c.expected_rank,
                    "got_rank": c.got_rank,
                    "error": c.error,
                }
                for c in self.cases
                if not c.class_ok or (c.rank_labelled and not c.rank_ok) or c.error
            ],
            "rank_overclaimed": [
                {
                    "case": c.name,
                    "got_rank": c.got_rank,
                    "expected_class": c.expected_class,
                    "got_class": c.got_class,
                    "got_signature": c.got_signature,
                }
                for c in self.overclaimed
            ],
        }


def find_cases(paths: list[str]) -> list[str]:
    """Case folders under ``paths`` (a case folder itself, or a folder of case folders)."""
    return [c for c in _case_folders(paths) if os.path.isfile(os.path.join(c, "expected.json"))]


def _case_folders(paths: list[str]) -> list[str]:
    """The folders that are, or should be, cases: a path holding ``input.log`` or
    ``expected.json``, else every folder in it (not hidden), one level deep."""
    out: list[str] = []
    for p in paths:
        if _has_case_file(p):
            out.append(p)
        elif os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                sub = os.path.join(p, name)
                if not name.startswith(".") and os.path.isdir(sub):
                    out.append(sub)
    return out


def _has_case_file(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, n)) for n in ("expected.json", "input.log"))


def _labels(folder: str) -> dict[str, Any]:
    """The case's ``expected.json``, checked field by field.

    Raises:
        ValueError: a sentence saying why the folder is not a case that can be scored.
    """
    has_labels = os.path.isfile(os.path.join(folder, "expected.json"))
    has_log = os.path.isfile(os.path.join(folder, "input.log"))
    if not has_labels and not has_log:
        raise ValueError("no input.log and no expected.json (cases are searched one level deep)")
    if not has_labels:
        raise ValueError("no expected.json (the labels)")
    if not has_log:
        raise ValueError("no input.log (the log to diagnose)")
    try:
        with open(os.path.join(folder, "expected.json"), encoding="utf-8") as fh:
            expected = json.load(fh)
    except UnicodeDecodeError as exc:
        raise ValueError(f"expected.json is not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"expected.json is not JSON ({exc})") from None
    except OSError as exc:
        raise ValueError(f"expected.json cannot be read ({exc.strerror or exc})") from None
    if not isinstance(expected, dict):
        raise ValueError(f"expected.json holds a {type(expected).__name__}, not one JSON object")
    if "failure_class" not in expected:
        raise ValueError('expected.json has no "failure_class" (null for a healthy run)')
    if not isinstance(expected["failure_class"], (str, type(None))):
        raise ValueError('expected.json: "failure_class" must be a string or null')
    rank = expected.get("initiating_rank")
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 0):
        raise ValueError('expected.json: "initiating_rank" must be a rank (0, 1, ...) or null')
    acceptable = expected.get("also_acceptable")
    if acceptable is not None and not (
        isinstance(acceptable, list) and all(isinstance(a, str) for a in acceptable)
    ):
        raise ValueError('expected.json: "also_acceptable" must be a list of class names')
    return expected


def evaluate(paths: list[str], *, library: Library | None = None) -> EvalReport:
    """Diagnose every case under ``paths`` and compare with its ``expected.json``; a folder
    that cannot be scored goes to :attr:`EvalReport.skipped` (see the module docstring).

    Raises:
        InputError: no folder under ``paths`` is or should be a case.
    """
    folders = _case_folders(paths)
    if not folders:
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise InputError(f"{missing[0]}: no such folder")
        raise InputError(f"no case folders (with expected.json) under {', '.join(paths)}")
    report = EvalReport()
    for case in folders:
        try:
            expected = _labels(case)
        except ValueError as exc:
            report.skipped.append(SkippedCase(case, str(exc)))
            continue
        result = CaseResult(
            name=os.path.basename(os.path.normpath(case)),
            expected_class=expected.get("failure_class"),
            acceptable=list(expected.get("also_acceptable") or []),
            expected_rank=expected.get("initiating_rank"),
            got_class=None,
            got_rank=None,
            got_signature=None,
        )
        try:
            diag = diagnose_paths([os.path.join(case, "input.log")], library=library, mask=False)
        except InputError as exc:
            result.error = str(exc)
        else:
            if diag.root_cause:
                result.got_class = diag.root_cause.failure_class
                result.got_signature = diag.root_cause.signature
            elif diag.unclassified is not None:
                # the report calls the log a failure (exit 3, "Unclassified failure"): on a
                # healthy log that is a false alarm as much as a named cause, so it counts
                result.got_class = UNCLASSIFIED
                result.got_signature = diag.unclassified.signature
            result.got_rank = diag.initiating_rank
        report.cases.append(result)
    return report


def to_text(report: EvalReport) -> str:
    """The human summary: figures first, then every miss with what was expected, then every
    case where a rank was claimed though its label says the log cannot tell."""
    d = report.to_dict()
    failing = len(report.failing)
    # every case read right: the failing ones' class, and nothing claimed on a healthy one (the
    # class figure below counts failing runs only: a false alarm shows here and in the claims)
    right = sum(c.class_ok for c in report.cases)
    total = len(report.cases)
    lines = [
        f"cases: {d['cases']} ({failing} failing runs, {d['healthy_cases']} healthy)",
        f"read right overall: {_percent(right / total if total else 0.0, total)} ({right}/{total}:"
        " the failing runs' class, nothing claimed on the healthy logs)",
        f"class accuracy on the failing runs: {_percent(report.class_accuracy, failing)} "
        f"({sum(c.class_ok for c in report.failing)}/{failing})",
        f"initiating-rank accuracy: {_percent(report.rank_accuracy, d['rank_labelled'])} "
        f"({sum(c.rank_ok for c in report.failing if c.rank_labelled)}/{d['rank_labelled']} labelled)",
        f"root causes claimed on healthy logs: {d['healthy_claims']}"
        + (" (no healthy cases)" if not d["healthy_cases"] else f" of {d['healthy_cases']}"),
        f"ranks claimed where the label says the log cannot tell: {d['rank_overclaims']}",
    ]
    if report.skipped:
        lines.append(
            f"skipped: {len(report.skipped)} case folder(s) not scored (not in the figures;"
            " why on stderr)"
        )
    if d["misses"]:
        lines.append("misses:")
        for m in d["misses"]:
            parts = []
            if m["error"]:
                parts.append(f"error: {m['error']}")
            if m["expected_class"] != m["got_class"]:
                parts.append(
                    f"class {m['got_class']} ({m['got_signature']}), expected {m['expected_class']}"
                )
            if m["expected_rank"] is not None and m["expected_rank"] != m["got_rank"]:
                parts.append(f"rank {m['got_rank']}, expected {m['expected_rank']}")
            lines.append(f"  {m['case']}: " + "; ".join(parts))
    if d["rank_overclaimed"]:
        lines.append("rank over-claims:")
        for o in d["rank_overclaimed"]:
            lines.append(
                f"  {o['case']}: rank {o['got_rank']}, expected none (the label says the log"
                f" cannot tell); class {o['got_class']} ({o['got_signature']})"
            )
    return "\n".join(lines) + "\n"


def _percent(value: float, n: int) -> str:
    """``value`` as a percentage, or ``n/a`` when there was nothing to score (``n == 0``)."""
    return f"{value:.1%}" if n else "n/a"
