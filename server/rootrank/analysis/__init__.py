"""Causal analysis: from a finished scan to the root cause, the initiating rank and the
collateral.

The steps, in order (each a module of this package):

1. :func:`~rootrank.analysis.prepare.prepare`: the findings that count (``min_count``,
   local ranks made global where the log proves it, inferred findings);
2. :func:`~rootrank.analysis.graph.explain`: the explanation rules
   (:data:`~rootrank.analysis.rules.RULES`) draw edges ``(cause, effect, rule, why)``;
3. :func:`~rootrank.analysis.graph.pick_root`: the cause nothing explains, the one that
   explains most, then the earliest;
4. :func:`~rootrank.analysis.initiator.find_initiator`: the initiating rank from ordered
   strategies, or none when they cannot tell;
5. the entry filled for this job (:func:`rootrank.entry.fill_entry`), the collateral, the
   timeline and the reasoning, every sentence from :mod:`~rootrank.analysis.reasons`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from rootrank.analysis.branch_desync import branch_desync_root
from rootrank.analysis.callsite_desync import callsite_desync_root
from rootrank.analysis.collateral import (
    collateral_of,
    cut_traceback,
    earlier_unexplained,
    explanations,
    group,
    timeline,
    unclassified,
)
from rootrank.analysis.completed import RULE as COMPLETED_RULE
from rootrank.analysis.completed import set_aside_lines
from rootrank.analysis.count_desync import count_desync_root
from rootrank.analysis.env_mismatch import env_mismatch_root
from rootrank.analysis.graph import Graph, explain, pick_root
from rootrank.analysis.guarded import guard_of
from rootrank.analysis.initiator import Initiator, find_initiator, same_error_elsewhere
from rootrank.analysis.logged_handled import RULE as LOGGED_RULE
from rootrank.analysis.net_plugin import net_plugin_root
from rootrank.analysis.prepare import Context, prepare, single_node_proof
from rootrank.analysis.reasons import fmt_span, fmt_time, format_ranks, ranks_word, say, sentence
from rootrank.analysis.signal_exit import LAUNCHER_REPORTS
from rootrank.analysis.survived import RULE as SURVIVED_RULE
from rootrank.entry import fill_entry
from rootrank.model import Diagnosis, Finding, RankFacts
from rootrank.scan import ScanState
from rootrank.signatures import Library

__all__ = ["analyze", "format_ranks", "single_node_proof"]


def _last_run_finished(state: ScanState) -> tuple[str, int, str] | None:
    """The end report ``(path, line, why)`` of the run the diagnosis is about, when the log
    holds earlier runs (relaunches or other jobs, cut off before it) and that last run
    reported its own end (rootrank.scan.RUN_END_REPORT: torchrun's "worker group
    successfully finished", the loop's "training finished"...) with no exception after the
    report: a healthy run after a failed one, whose log says nothing of the earlier failure.
    ``None`` otherwise (one run, or the last run's end is not in the log)."""
    if not (state.attempt_starts or state.other_runs) or not state.run_ended:
        return None
    path, line, why = state.run_ended[-1]
    start = max([*state.attempt_starts, *(r.end + 1 for r in state.other_runs)])
    if line < start or any(seen.exc.log_line >= line for seen in state.exceptions):
        return None
    return path, line, why


def analyze(state: ScanState, library: Library, masker: Any = None) -> Diagnosis:
    """Turn a finished scan into a :class:`~rootrank.model.Diagnosis`.

    ``masker`` (a :class:`rootrank.mask.Masker`, optional) masks the values taken from the
    log before they fill the entry's templates, so the fix and verification text (ours)
    is never itself rewritten; the engine masks the rest of the log-derived text after."""
    ctx = prepare(state, library)
    graph = explain(ctx)
    root = pick_root(graph, ctx)
    diag = _empty_diagnosis(ctx)
    if state.other_runs:
        runs = "; ".join(f"{r.label()}: {r.why}" for r in state.other_runs[-5:])
        more = len(state.other_runs) - 5
        runs = (f"{more} earlier runs and " if more > 0 else "") + runs
        start = state.other_runs[-1].end + 1
        n = len(state.other_runs) + 1
        diag.reasoning.append(say("other_runs", n=n, line=start, runs=runs))
        where = state.sources[0] if state.sources else "the log"
        diag.warnings.append(say("other_runs_note", path=where, n=n, line=start, runs=runs))
    finished = _last_run_finished(state) if root is None else None
    if state.other_runs and finished is not None and not state.attempt_starts:
        path, end, why = finished
        start = state.other_runs[-1].end + 1
        diag.reasoning.append(
            say("other_runs_finished", line=start, why=why, where=f"{path}:{end}")
        )
    for line, why in state.node_sections:
        diag.reasoning.append(say("node_sections", line=line, why=why))
    if state.quiet_tail is not None:
        quiet, failed = state.quiet_tail
        diag.reasoning.append(say("quiet_tail", line=quiet, first=failed, before=quiet - 1))
    if state.attempt_starts:
        restart = root is not None and ctx.from_earlier_attempt(root)
        start = state.attempt_starts[-1]
        if finished is not None:
            path, end, why = finished
            first = state.other_runs[-1].end + 1 if state.other_runs else 1
            diag.reasoning.append(
                say(
                    "attempts_finished",
                    n=diag.attempts,
                    line=start,
                    why=why,
                    where=f"{path}:{end}",
                    first=first,
                    before=start - 1,
                )
            )
        else:
            key = "attempts_restart" if restart else "attempts"
            diag.reasoning.append(say(key, n=diag.attempts, line=start))
    diag.reasoning.extend(_survived_reasons(ctx))
    for f in ctx.handled[:4]:
        e = f.evidence[0]
        diag.reasoning.append(
            say(
                "value_survived",
                title=f.captures.get("why") or f.title,
                where=f"{e.path}:{e.line}",
                after=f.captures.get("finite_after"),
                rule=SURVIVED_RULE,
            )
        )
    done = ctx.completed
    if done is not None:
        diag.reasoning.append(
            say(
                "run_completed",
                n=done.lines,
                where=f"{done.path}:{done.line}",
                why=done.why,
                rule=COMPLETED_RULE,
            )
        )
        if not any(p is not None for p in ctx.state.progress.last().values()):
            diag.reasoning.append(say("completed_no_steps"))
    if root is None:
        diag.collateral = group(
            [
                *(f for s in ctx.survived for f in s.findings),
                *(done.findings if done else ()),
                *ctx.handled,
            ]
        )
        if done is not None:
            set_aside = [
                g for g in diag.collateral if g.signature in {f.signature for f in done.findings}
            ]
            diag.reasoning.extend(set_aside_lines(set_aside, ctx.state))
        return _no_known_failure(ctx, diag)
    initiator = find_initiator(ctx, root)
    group_of_root = [f for f in ctx.findings if f.signature == root.signature]
    if initiator.rank is not None and initiator.rank != root.rank:
        root = next((f for f in group_of_root if f.rank == initiator.rank), root)
    desync = (
        count_desync_root(ctx, root, initiator)
        or branch_desync_root(ctx, root, initiator)
        or callsite_desync_root(ctx, root, initiator)
    )
    if desync is not None:
        # sizes far apart after one rank's count differed, a hang at a step whose branch
        # differed on one rank, or one rank waiting at a call site of its own: the ranks ran
        # different collectives, a desync
        root, group_of_root = desync, [desync]
    env = env_mismatch_root(ctx, root, initiator)
    if env is not None:
        # the setting the failure names was printed with another value on the failing
        # rank's node: the environment differs between nodes
        root, group_of_root = env, [env]
    plugin = net_plugin_root(ctx, root, initiator)
    if plugin is not None:
        # every rank waited in a collective no rank started, over NCCL's network plugin
        root, group_of_root = plugin, [plugin]
    report = _launcher_report_for(ctx, root, group_of_root, initiator.rank)
    if report is not None:
        root, group_of_root = report, [report]
    diag.initiating_rank = initiator.rank
    diag.initiator = initiator.info()
    host = state.hosts.get(initiator.rank) if initiator.rank is not None else None
    if host is None and initiator.rank is not None and root.rank == initiator.rank:
        host = root.host
    diag.initiating_host = host
    collateral = collateral_of(ctx.findings, root)
    apart = earlier_unexplained(collateral, root, graph, state.exceptions)
    collateral = [f for f in collateral if f not in apart]
    diag.reasoning.extend(_reasoning(ctx, graph, root, initiator, group_of_root, collateral))
    diag.root_cause = fill_entry(
        library.signatures[root.signature],
        root,
        group=group_of_root,
        findings=ctx.findings,
        state=state,
        library=library,
        initiating=initiator.rank,
        initiating_host=host,
        masker=masker,
        initiator=diag.initiator,
    )
    diag.root_cause.confidence = _confidence(root, initiator, graph, group_of_root)
    diag.collateral = group([*collateral, *(f for s in ctx.survived for f in s.findings)])
    _retitle(diag, library.signatures[root.signature].title)
    diag.timeline = timeline(ctx.findings, root, apart)
    diag.reasoning.extend(
        say(
            "earlier_unexplained",
            text=f.evidence[0].text.strip()[:160],
            where=f"{f.evidence[0].path}:{f.evidence[0].line}",
        )
        for f in apart
        if f.evidence
    )
    diag.explanations = explanations(graph, root)
    return diag


def _retitle(diag: Diagnosis, title: str) -> None:
    """When the chosen fix variant names the failure more narrowly than its signature's
    ``title`` (a variant's ``title``, :mod:`rootrank.entry.variants`), say it the same way
    everywhere the report names it: in the initiating rank's sentences and in the collateral
    groups of the same signature, so the headline and the text below it agree."""
    rc = diag.root_cause
    if rc is None or rc.title == title:
        return
    diag.reasoning = [r.replace(f'"{title}"', f'"{rc.title}"') for r in diag.reasoning]
    for g in diag.collateral:
        if g.signature == rc.signature and g.title == title:
            g.title = rc.title


def _launcher_report_for(
    ctx: Context, root: Finding, group_of_root: list[Finding], rank: int | None
) -> Finding | None:
    """The launcher's report of a failed worker (:data:`~rootrank.analysis.signal_exit.
    LAUNCHER_REPORTS`), on ``rank``, to stand as the root cause in place of ``root``, or
    ``None``: when ``root`` only reports that a peer went away (``explained_by: [peer]``:
    gloo's "Connection closed by peer") and the initiating rank, found elsewhere (the one
    rank torchelastic's table shows exiting by itself), has no finding of ``root``'s
    signature. The peers' reports are then that rank's collateral, and what the log shows of
    the rank itself is the launcher's report of its exit: nothing deeper is visible."""
    if rank is None or not ctx.peer_report(root) or any(f.rank == rank for f in group_of_root):
        return None
    reports = [f for f in ctx.findings if f.signature in LAUNCHER_REPORTS]
    if not reports:
        return None
    best = next((f for f in reports if f.rank == rank), reports[0])
    return dataclasses.replace(best, rank=rank)


def _empty_diagnosis(ctx: Context) -> Diagnosis:
    st = ctx.state
    return Diagnosis(
        sources=list(st.sources),
        root_cause=None,
        initiating_rank=None,
        initiating_host=None,
        reasoning=[],
        collateral=[],
        findings=ctx.findings,
        ranks=RankFacts(
            seen=sorted(ctx.known_ranks()),
            hosts=dict(sorted(st.hosts.items())),
            world_size=st.world_size,
        ),
        stack=sorted(st.stacks),
        lines_read=st.lines_total,
        attempts=1 + len(st.attempt_starts),
    )


def _survived_reasons(ctx: Context) -> list[str]:
    """One sentence per exception its process survived (:mod:`rootrank.analysis.survived`),
    at most 8: what it was, where, and the step that shows the process went on."""
    out = []
    for s in ctx.survived[:8]:
        exc = s.seen.exc
        title = s.findings[0].title if s.findings else f"{exc.type}: {exc.message}"[:160]
        if s.logged:
            again = s.after.line < exc.log_line  # the same handler's error, after the last step
            out.append(
                say(
                    "logged_handled_again" if again else "logged_handled",
                    title=title,
                    where=f"{s.seen.path}:{exc.log_line}",
                    after=s.after.step,
                    after_line=s.after.line,
                    rule=LOGGED_RULE,
                )
            )
            continue
        out.append(
            say(
                "survived",
                title=title,
                where=f"{s.seen.path}:{exc.log_line}",
                who=s.who,
                after=s.after.step,
                after_line=s.after.line,
                before=s.before,
                rule=SURVIVED_RULE,
            )
        )
    return out


def _no_known_failure(ctx: Context, diag: Diagnosis) -> Diagnosis:
    """No signature explains the failure: the last exception is shown as unclassified."""
    if ctx.state.exceptions:
        last = ctx.state.exceptions[-1]
        diag.unclassified = unclassified(last)
        diag.initiating_rank = last.rank
        diag.reasoning.append(
            say(
                "no_known_failure",
                rank_part=f" (rank {last.rank})" if last.rank is not None else "",
                type=last.exc.type,
                where=f"{last.path}:{last.exc.log_line}",
            )
        )
        same = (
            same_error_elsewhere(ctx.state, last.path, last.exc.log_line, last.rank)
            if last.rank is not None
            else []
        )
        if same and last.rank is not None:
            # every rank that speaks shows the same error: the last one printed started nothing
            diag.initiating_rank = None
            diag.reasoning.append(
                sentence(
                    say(
                        "same_error_elsewhere",
                        rank=last.rank,
                        others=ranks_word(same),
                        ranks=format_ranks(sorted({*same, last.rank})),
                    )
                )
            )
        guard = guard_of(ctx.state, last) if not same else None
        if guard is not None:
            # it failed waiting in the barrier of guarded work (rootrank.analysis.guarded):
            # the rank doing that work alone is the one it waited for
            diag.initiating_rank = guard.holder
            diag.reasoning.append(
                sentence(
                    say(
                        "guarded_work",
                        Ranks=f"rank {last.rank}",
                        collective=guard.collective,
                        func=guard.func,
                        where=guard.where,
                        rank=guard.holder,
                    )
                )
            )
    elif cuts := [
        # a faulthandler dump has no exception line by design: it is whole, not a traceback
        # the log's end cut; in a run that reached its end after it (rule run_completed: a
        # watchdog's "Timeout" stacks on a slow step) it is no failure under way
        c
        for c in ctx.state.cut_tracebacks
        if not (ctx.completed is not None and c.exc.header == "faulthandler")
    ]:  # no exception line at all: the log stops inside one
        cut = cuts[-1]
        diag.unclassified = cut_traceback(cut)
        where = f"{cut.path}:{cut.exc.log_line}"
        diag.reasoning.append(
            say(
                "log_ends_in_traceback",
                rank_part=f" of rank {cut.rank}" if cut.rank is not None else "",
                where=where,
            )
        )
        diag.warnings.append(f"{where}: the log ends inside a traceback (cut before its exception)")
    diag.timeline = timeline(ctx.findings, None)
    return diag


def _reasoning(
    ctx: Context,
    graph: Graph,
    root: Finding,
    initiator: Initiator,
    group_of_root: list[Finding],
    collateral: list[Finding],
) -> list[str]:
    """The report's sentences, in the order a reader checks them."""
    out: list[str] = []
    ev = root.evidence[0]
    when = f" at {fmt_time(root.time)}" if root.time is not None else ""
    where = f"{ev.path}:{ev.line}"
    group_ranks = sorted({f.rank for f in group_of_root if f.rank is not None})
    initiating = initiator.rank
    reporters = sorted(
        {
            int(f.captures["reporter"])
            for f in group_of_root
            if f.captures.get("reporter", "").isdigit()
        }
    )
    hang = (
        root.role == "symptom"
        and initiating is not None
        and group_ranks
        and initiating not in group_ranks
    )
    # Who printed the root's message: the ranks it names as reporters, or in a hang the
    # victims (the initiator is the rank they waited for).
    printed_by = reporters or (group_ranks if hang else [])
    if printed_by:
        out.append(
            say(
                "root_reported_by",
                Reporters=ranks_word(printed_by),
                title=root.title,
                when=when,
                where=where,
            )
        )
    elif root.rank is None:
        out.append(say("root_no_rank", title=root.title, when=when, where=where))
    else:
        out.append(say("root_on_rank", rank=root.rank, title=root.title, when=when, where=where))
    why = initiator.why or root.captures.pop("why", "")
    if why:
        out.append(sentence(why) + (f" [{initiator.strategy}]" if initiator.strategy else ""))
    if initiator.agreeing:
        out.append(sentence(say("agree", strategies=", ".join(initiator.agreeing))))
    if ctx.local_why and root.captures.get("local_rank") and root.rank is not None:
        out.append(sentence(ctx.local_why))
    # Why the other candidate causes are not the root: what explains them.
    for f in graph.nodes:
        if f is root or f.role != "cause":
            continue
        edges = graph.explained(f)
        if not edges:
            continue
        e = next((x for x in edges if x.cause is root), edges[0])
        fev = f.evidence[0] if f.evidence else None
        out.append(
            say(
                "explained",
                cause_title=f'"{e.cause.title}"'
                + (f" (rank {e.cause.rank})" if e.cause.rank is not None else ""),
                effect_title=f'"{f.title}"',
                effect_where=f" ({fev.path}:{fev.line})" if fev else "",
                why=e.why,
                rule=e.rule,
            )
        )
        if len(out) > 12:
            break
    victims = sorted(
        {
            f.rank
            for f in collateral
            if f.role == "symptom"
            and f.rank is not None
            and f.rank != initiating
            and f.rank not in group_ranks
        }
    )
    if victims:
        kinds = Counter(f.title for f in collateral if f.role == "symptom" and f.rank in victims)
        kind = kinds.most_common(1)[0][0]
        detail = ""
        for f in collateral:
            if f.title == kind and f.captures.get("optype"):
                detail = f" in {f.captures['optype']}" + (
                    f" SeqNum {f.captures['seqnum']}" if f.captures.get("seqnum") else ""
                )
                break
        out.append(say("victims", Victims=ranks_word(victims), kind=kind, detail=detail))
    if ctx.kind(root) == "terminal" and initiating is None:
        out.extend(_behind_at_stop(ctx, root))
    elastic_root = [e for e in ctx.state.elastic if e.root_cause and e.rank is not None]
    if elastic_root and initiating is not None and elastic_root[0].rank != initiating:
        out.append(say("elastic_named_victim", rank=elastic_root[0].rank))
    return out


def _behind_at_stop(ctx: Context, root: Finding) -> list[str]:
    """A stop from outside (a time limit, a cancellation, the agent's death signal) with one
    rank behind the others' progress: the sentence that says so, and why the log cannot
    tell whether the job had hung (no times on the progress, or a silence too short to
    call a hang, :data:`~rootrank.analysis.stall.STALL_MIN_SECONDS`)."""
    from rootrank.analysis.stall import stalled_rank

    rank, _ = stalled_rank(ctx)
    if rank is None:
        return []
    last = ctx.state.progress.last()
    top = max(p.step for r, p in last.items() if r is not None)
    own = f"step {last[rank].step}" if rank in last else "no step at all"
    timed = [p.time for p in last.values() if p.time is not None]
    if not timed or root.time is None:
        timing = "the progress lines carry no times"
    else:
        timing = f"the last progress came {fmt_span(root.time - max(timed))} before the stop"
    return [sentence(say("behind_at_stop", rank=rank, own=own, top=top, timing=timing))]


def _confidence(
    root: Finding, initiator: Initiator, graph: Graph, group_of_root: list[Finding]
) -> float:
    """0.05..0.99 from the evidence: a cause (not a bare symptom) that explains what else
    failed, an initiating rank named by a strategy, and other strategies agreeing; less
    when several ranks report it and none is named."""
    score = 0.55 if root.role == "cause" else 0.35
    effects = len(graph.effects(root))
    others = len(graph.nodes) - 1
    if others > 0:
        score += 0.15 * effects / others
    if initiator.rank is not None:
        score += 0.1 + 0.05 * min(3, len(initiator.agreeing))
    elif len({f.rank for f in group_of_root}) > 1:
        score -= 0.1
    return round(max(0.05, min(0.99, score)), 2)
