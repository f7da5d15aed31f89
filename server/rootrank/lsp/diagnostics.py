"""Engine results (``rootrank.diagnosis/1`` dicts) to LSP diagnostics, and the per-line
index that hover and code actions read.

- The root cause is one Error on its first evidence line, its range the matched text;
  ``code`` = signature id, ``codeDescription.href`` = the signature's first reference,
  ``source`` = ``rootrank``, ``relatedInformation`` = the collateral lines.
- Each collateral group (one signature of the diagnosed attempt) gives one Information
  diagnostic, at the earliest of its ranks' first matching lines; its related information
  points back at the root cause, then lists each rank's first matching line. The root
  cause's related information lists the other evidence of the same error, then each group.
- No root cause: no diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types

from rootrank.analysis.reasons import format_ranks
from rootrank.signatures import Library

from .documents import LogDocument
from .lines import LineMap

SOURCE = "rootrank"


@dataclass(slots=True)
class FindingAt:
    """A finding that a document line belongs to.

    ``kind`` is ``"root"`` (the root cause), ``"collateral"`` (explained by it) or
    ``"finding"`` (matched but neither). ``finding`` is the finding dict of the JSON
    contract (for ``"root"``, the ``root_cause`` dict).
    """

    kind: str
    finding: dict[str, Any]


@dataclass(slots=True)
class Analysis:
    """One analysed version of one document.

    Attributes:
        uri: the document.
        version: the document version that was analysed.
        diagnosis: the engine's ``rootrank.diagnosis/1`` dict.
        diagnostics: what was published.
        by_line: 0-based editor line -> the findings whose evidence is on it.
        first_error: where the initiating rank's first error is (editor range), if known.
        line_map: the position converter used.
    """

    uri: str
    version: int
    diagnosis: dict[str, Any]
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    by_line: dict[int, list[FindingAt]] = field(default_factory=dict)
    first_error: types.Range | None = None
    line_map: LineMap | None = None


def _where(rank: Any, host: Any) -> str:
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if host:
        parts.append(f"host {host}")
    return ", ".join(parts)


def verdict_where(diagnosis: dict[str, Any], root: dict[str, Any]) -> str:
    """Where the root cause is, as the CLI's headline says it: ``"rank 2, host node7"`` for
    the initiating rank; ``"reported on rank 0"`` when the engine names no initiating rank
    (``initiating_rank`` null: every rank that printed it was a victim, or they disagree)
    but the root finding's line carries one. A reporting rank is never shown as the answer
    (a wrong rank costs more than none). ``""`` when neither rank nor host is known."""
    initiating = diagnosis.get("initiating_rank")
    if initiating is not None:
        return _where(initiating, diagnosis.get("initiating_host") or root.get("host"))
    reported = root.get("rank")
    if reported is None:
        return _where(None, diagnosis.get("initiating_host") or root.get("host"))
    return f"reported on rank {reported}"


def collateral_label(finding: dict[str, Any], rank: Any) -> str:
    """``"rank 3: <title> in ALLREDUCE SeqNum 4120 (collateral)"`` for a collateral line
    (no ``rank`` prefix when the line names no rank)."""
    captures = finding.get("captures") or {}
    title = finding.get("title") or finding.get("signature")
    label = f"rank {rank}: {title}" if rank is not None else str(title)
    if captures.get("optype"):
        label += f" in {captures['optype']}"
    if captures.get("seqnum"):
        label += f" SeqNum {captures['seqnum']}"
    return label + " (collateral)"


def build_analysis(
    uri: str,
    document: LogDocument,
    diagnosis: dict[str, Any],
    library: Library,
    encoding: str,
) -> Analysis:
    """Turn one diagnosis of ``document`` into diagnostics and a per-line index.

    Evidence lines are 1-based engine lines and columns 0-based code points; ranges come
    out 0-based in the client's ``encoding``.
    """
    line_map = LineMap(document, encoding)
    analysis = Analysis(uri, document.version, diagnosis, line_map=line_map)
    findings: list[dict[str, Any]] = list(diagnosis.get("findings") or [])
    root = diagnosis.get("root_cause")
    collateral_ids = {group.get("signature") for group in diagnosis.get("collateral") or []}

    def index(evidence: dict[str, Any], at: FindingAt) -> None:
        line = line_map.editor_line(int(evidence["line"]))
        entries = analysis.by_line.setdefault(line, [])
        if all(e.finding is not at.finding for e in entries):
            entries.append(at)

    for finding in findings:
        if (
            root
            and finding.get("signature") == root.get("signature")
            and finding.get("rank") == root.get("rank")
        ):
            kind = "root"
        elif finding.get("signature") in collateral_ids:
            kind = "collateral"
        else:
            kind = "finding"
        for evidence in finding.get("evidence") or []:
            index(evidence, FindingAt(kind, finding))

    initiating = diagnosis.get("initiating_rank")
    first: tuple[int, dict[str, Any]] | None = None
    for finding in findings:
        if initiating is None or finding.get("rank") != initiating:
            continue
        for evidence in finding.get("evidence") or []:
            if first is None or int(evidence["line"]) < first[0]:
                first = (int(evidence["line"]), evidence)
    if first is not None:
        ev = first[1]
        analysis.first_error = line_map.range(
            int(ev["line"]), ev.get("column_start"), ev.get("column_end")
        )

    if not root or not root.get("evidence"):
        return analysis

    root_evidence = root["evidence"][0]
    for evidence in root["evidence"]:
        index(evidence, FindingAt("root", root))
    root_range = line_map.range(
        int(root_evidence["line"]),
        root_evidence.get("column_start"),
        root_evidence.get("column_end"),
    )
    if analysis.first_error is None:
        analysis.first_error = root_range
    signature = library.get(str(root.get("signature")))
    references = list(signature.references) if signature else list(root.get("references") or [])
    root_location = types.Location(uri=uri, range=root_range)
    where = verdict_where(diagnosis, root)
    root_title = root.get("title") or root.get("signature")

    related: list[types.DiagnosticRelatedInformation] = []
    for evidence in root["evidence"][1:]:
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=uri,
                    range=line_map.range(
                        int(evidence["line"]),
                        evidence.get("column_start"),
                        evidence.get("column_end"),
                    ),
                ),
                message=(
                    f"rank {evidence['rank']}: {root_title} (same error)"
                    if evidence.get("rank") is not None
                    else f"{root_title} (same error)"
                ),
            )
        )

    # The first finding with evidence of each (signature, rank), in the findings' order.
    first_of: dict[tuple[Any, Any], dict[str, Any]] = {}
    for finding in findings:
        if finding.get("evidence"):
            first_of.setdefault((finding.get("signature"), finding.get("rank")), finding)
    back = types.DiagnosticRelatedInformation(
        location=root_location,
        message=f"root cause: {root_title}" + (f" ({where})" if where else ""),
    )
    collateral_diagnostics: list[types.Diagnostic] = []
    for group in diagnosis.get("collateral") or []:
        diagnostic, summary = _collateral_diagnostic(
            group, first_of, line_map, uri, root_title, where, back, library
        )
        if diagnostic is not None:
            related.append(summary)
            collateral_diagnostics.append(diagnostic)

    # The verdict first: the hover shows this message above everything else.
    message = f"Root cause: {root_title}" + (f" ({where})" if where else "")
    fix = root.get("fix")
    steps = fix.get("steps") if isinstance(fix, dict) else None
    if steps:
        message += f"\nFix: {steps[0]}"
    if root.get("verify"):
        message += f"\nVerify: {root['verify']}"
    root_diagnostic = types.Diagnostic(
        range=root_range,
        message=message,
        severity=types.DiagnosticSeverity.Error,
        code=str(root.get("signature")),
        code_description=types.CodeDescription(href=references[0]) if references else None,
        source=SOURCE,
        related_information=related or None,
        data={"signature": root.get("signature"), "rank": root.get("rank"), "kind": "root"},
    )
    analysis.diagnostics = [root_diagnostic, *collateral_diagnostics]
    return analysis


def _collateral_diagnostic(
    group: dict[str, Any],
    first_of: dict[tuple[Any, Any], dict[str, Any]],
    line_map: LineMap,
    uri: str,
    root_title: Any,
    where: str,
    back: types.DiagnosticRelatedInformation,
    library: Library,
) -> tuple[types.Diagnostic | None, types.DiagnosticRelatedInformation]:
    """One collateral group (one signature of the diagnosed attempt) as one Information
    diagnostic, and the entry that lists it in the root cause's related information.

    The diagnostic sits on the earliest of its ranks' first matching lines; its related
    information is the root cause (first), then each rank's first matching line in rank
    order. A 1,024-rank job whose 1,023 survivors time out thus publishes one diagnostic
    per collateral signature, not one per rank (issue 11). ``(None, ...)`` when no rank of
    the group has an evidence line."""
    sig_id = group.get("signature")
    lines: list[tuple[Any, dict[str, Any], types.Range]] = []
    for rank in group.get("ranks") or [None]:
        finding = first_of.get((sig_id, rank))
        if finding is None:  # the group's own evidence for that rank
            evidence_list = [e for e in group.get("evidence") or [] if e.get("rank") == rank]
            if not evidence_list:
                continue
            finding = {**group, "rank": rank, "evidence": evidence_list}
        evidence = finding["evidence"][0]
        rng = line_map.range(
            int(evidence["line"]), evidence.get("column_start"), evidence.get("column_end")
        )
        lines.append((rank, finding, rng))
    if not lines:
        return None, back
    rank, finding, rng = min(
        lines, key=lambda x: (x[2].start.line, x[2].start.character, x[2].end.line)
    )
    title = finding.get("title") or group.get("title") or sig_id
    ranks = [r for r, _, _ in lines if r is not None]
    count = sum(int(f.get("count") or 1) for _, f, _ in lines)
    if len(ranks) > 1:
        message = f"{title} on {len(ranks)} ranks ({format_ranks(ranks)})"
        summary = f"{len(ranks)} ranks ({format_ranks(ranks)}): " + collateral_label(finding, None)
    else:
        message = f"{title} on rank {rank}" if rank is not None else str(title)
        summary = collateral_label(finding, rank)
    if count > len(lines):  # a rank printed it more than once
        message += f" ({count} lines)"
    # "… on rank 2, host h" / "… reported on rank 0" (no initiating rank named)
    on = "" if where.startswith("reported") else "on "
    message += f": collateral of {root_title}" + (f" {on}{where}" if where else "")
    signature = library.get(str(sig_id))
    diagnostic = types.Diagnostic(
        range=rng,
        message=message,
        severity=types.DiagnosticSeverity.Information,
        code=str(sig_id),
        code_description=types.CodeDescription(href=signature.references[0])
        if signature and signature.references
        else None,
        source=SOURCE,
        related_information=[
            back,
            *(
                types.DiagnosticRelatedInformation(
                    location=types.Location(uri=uri, range=r),
                    message=collateral_label(f, k),
                )
                for k, f, r in lines
            ),
        ],
        data={"signature": sig_id, "rank": rank, "ranks": ranks, "kind": "collateral"},
    )
    return diagnostic, types.DiagnosticRelatedInformation(
        location=types.Location(uri=uri, range=rng), message=summary
    )
