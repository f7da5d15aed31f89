"""Step 5: what the root cause explains, as the report shows it: collateral groups, the
timeline, the edges, and the unclassified exception when nothing is known."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from rootrank import lazy_regex
from rootrank.analysis.graph import Graph
from rootrank.analysis.prepare import GPU_FACT_SIGNATURE
from rootrank.model import (
    CollateralGroup,
    EventRef,
    Evidence,
    Explanation,
    Finding,
    TimelineMark,
)
from rootrank.scan import ScanState, SeenException

#: Signatures that record a fact of the job for the analysis (rootrank.analysis.prepare's
#: GPU architecture check), not a failure or an effect of one.
FACTS = frozenset({GPU_FACT_SIGNATURE})


def collateral_of(findings: list[Finding], root: Finding) -> list[Finding]:
    """Every finding but the root and the facts the analysis reads (:data:`FACTS`: the GPU
    model or CUDA build a line names is no event the root cause explains: new-user trial r20
    finding 12); the root's own lines read by a more general signature (rank 3's watchdog
    line under the desync one) leave the collateral."""
    root_lines = {(e.path, e.line) for e in root.evidence}
    out = []
    for f in findings:
        if f is root or f.signature in FACTS:
            continue
        own = [e for e in f.evidence if (e.path, e.line) in root_lines]
        if own:
            if len(own) == len(f.evidence) and f.count <= len(own):
                continue
            f = dataclasses.replace(
                f,
                evidence=[e for e in f.evidence if e not in own],
                count=max(1, f.count - len(own)),
            )
        out.append(f)
    return out


#: A traceback frame of a launcher that reports its workers' failure (torchrun's agent,
#: ``mp.spawn``'s join): an exception raised there is the report of a worker's, an effect.
_LAUNCHER_FRAME = lazy_regex.compile(
    r"(?:[/\\]bin[/\\]torchrun$|distributed[/\\]run\.py$|distributed[/\\]launch(?:er[/\\]api)?\.py$"
    r"|distributed[/\\]elastic[/\\]|multiprocessing[/\\]spawn\.py$)"
)


def earlier_unexplained(
    collateral: list[Finding], root: Finding, graph: Graph, exceptions: Iterable[SeenException]
) -> list[Finding]:
    """The findings of ``collateral`` that are not the root's effects: an error of their own
    on no rank, read from the exception line of a traceback (one of ``exceptions``, the
    scan's) none of whose frames is a launcher's (:data:`_LAUNCHER_FRAME`: mp.spawn's
    ``Exception`` reports a worker's error), printed before the root cause, another signature
    than the root's, that no rule explains. The root cause was chosen over it because the run
    went on after it (:func:`rootrank.analysis.graph.pick_root`: an unranked exception wins
    only over what was printed before it), so it is an earlier failure of its own, not
    collateral: a launch script's own snippet failing before the job started (new-user trial
    r18 finding 7: ``KeyError: 'GPU_IDS_STR'`` from ``<stdin>`` in the preamble was listed as
    explained by a node's missing file). Warnings and NCCL's WARN lines before the root (its
    own context: ``Duplicate GPU detected`` before ``invalid usage``) stay collateral."""
    raised = {
        (s.path, s.exc.log_line)
        for s in exceptions
        if s.rank is None
        and s.exc.frames
        and not s.exc.ignored
        and not any(_LAUNCHER_FRAME.search(fr.file) for fr in s.exc.frames)
    }
    return [
        f
        for f in collateral
        if f.role == "cause"
        and f.severity == "error"
        and f.rank is None
        and f.signature != root.signature
        and f.order < root.order
        and any((e.path, e.line) in raised for e in f.evidence)
        and not graph.explained(f)
    ]


def group(collateral: list[Finding]) -> list[CollateralGroup]:
    """Collateral findings grouped by signature, each with its ranks (sorted), count and
    up to 8 evidence lines."""
    groups: dict[str, CollateralGroup] = {}
    for f in collateral:
        g = groups.get(f.signature)
        if g is None:
            g = groups[f.signature] = CollateralGroup(
                signature=f.signature,
                failure_class=f.failure_class,
                title=f.title,
                role=f.role,
                captures=dict(f.captures),
            )
        if f.rank is not None and f.rank not in g.ranks:
            g.ranks.append(f.rank)
        g.count += f.count
        if len(g.evidence) < 8:
            g.evidence.extend(dataclasses.replace(e) for e in f.evidence[:1])
    for g in groups.values():
        g.ranks.sort()
    return list(groups.values())


def timeline(
    findings: list[Finding], root: Finding | None, apart: list[Finding] | None = None
) -> list[TimelineMark]:
    """One mark per finding: rank, time, order, kind (``root``/``collateral``/``finding``)
    and its first line (1-based). ``apart`` are findings the root does not explain
    (:func:`earlier_unexplained`): marked ``finding``."""
    out = []
    kept_apart = {id(f) for f in apart or ()}
    for f in findings:
        out.append(
            TimelineMark(
                rank=f.rank,
                time=f.time,
                order=f.order,
                signature=f.signature,
                title=f.title,
                kind="root"
                if f is root
                else ("collateral" if root is not None and id(f) not in kept_apart else "finding"),
                path=f.evidence[0].path if f.evidence else None,
                line=f.evidence[0].line if f.evidence else None,
            )
        )
    return out


def event_ref(f: Finding) -> EventRef:
    """A finding as the contract's EventRef."""
    ev = f.evidence[0] if f.evidence else None
    return EventRef(
        kind="finding",
        signature=f.signature,
        rank=f.rank,
        path=ev.path if ev else None,
        line=ev.line if ev else None,
    )


def explanations(graph: Graph, root: Finding, limit: int = 40) -> list[Explanation]:
    """The edges that decided, for the JSON ``explanations``: every edge into a candidate
    cause (why it is not the root), then the root's own edges; at most ``limit``."""
    decided = [e for e in graph.edges if e.effect.role == "cause" and e.effect is not root]
    own = [e for e in graph.edges if e.cause is root and e not in decided]
    return [
        Explanation(event_ref(e.cause), event_ref(e.effect), e.rule, e.why)
        for e in (decided + own)[:limit]
    ]


def unclassified(last: SeenException) -> Finding:
    """The last exception as a finding with signature ``unclassified``."""
    exc = last.exc
    text = f"{exc.type}: {exc.message}" if exc.message else exc.type
    col = last.raw.find(exc.type)
    if col < 0 and exc.message:  # a C++ abort's what() line does not repeat the type
        col = last.raw.find(exc.message[:60])
    evidence = Evidence(
        path=last.path,
        line=exc.log_line,
        text=text,
        rank=last.rank,
        column_start=col if col >= 0 else None,
        column_end=len(last.raw) if col >= 0 else None,
    )
    return _unclassified_finding(last, f"{exc.type}: {exc.message}", evidence)


def cut_traceback(last: SeenException) -> Finding:
    """A traceback the end of the log cut before its exception line, as a finding with
    signature ``unclassified``: a failure was under way (the log was truncated, or the process
    was killed while printing it), and the user's innermost frame is where it was."""
    frame = last.exc.user_frame  # the user's own innermost frame, else None
    where = f" (in your code at {frame.file}:{frame.line})" if frame is not None else ""
    text = "The log ends inside a traceback: its exception line is cut off" + where
    evidence = Evidence(path=last.path, line=last.exc.log_line, text=text, rank=last.rank)
    return _unclassified_finding(last, text, evidence)


def _unclassified_finding(seen: SeenException, title: str, evidence: Evidence) -> Finding:
    """The ``unclassified`` finding of ``seen`` (its rank, host, time and order), titled
    ``title`` (cut to 300 characters) with ``evidence`` as its one line."""
    return Finding(
        signature="unclassified",
        failure_class="unclassified",
        title=title[:300],
        role="cause",
        severity="error",
        specificity=0,
        rank=seen.rank,
        host=seen.host,
        time=seen.time,
        order=seen.order,
        evidence=[evidence],
    )


def last_unexplained_exception(state: ScanState) -> SeenException | None:
    """The last exception the scan saw, or ``None``."""
    return state.exceptions[-1] if state.exceptions else None
