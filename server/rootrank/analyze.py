"""Causal analysis: from findings to the root cause, the initiating rank and the collateral.

The rules, each kept as a sentence of reasoning for the report:

1. A finding of role ``cause`` explains findings of role ``symptom`` (watchdog timeouts,
   connection resets, SIGTERMs from the agent, torchrun's summary). The cause with the
   highest specificity is the root cause; ties go to the earliest event (timestamps where
   the log has them, else the order in the log). A symptom is the root cause only when no
   cause is found (a bare watchdog timeout is a ``collective-timeout``).
2. Warnings (``severity: warning``) count only when the log also shows a failure.
3. The initiating rank is the root cause's rank. When the same signature fires on several
   ranks: the rank whose OpType/shape/Numel/SeqNum differs from the rest (the odd one out;
   between two ranks, the one that is behind: a lower SeqNum, or a BARRIER against a
   training collective); for symptoms such as timeouts, the one known rank that is
   missing from the set; else the earliest by timestamp.
4. torchelastic's "Root Cause (first observed failure)" is evidence, not truth: it is used
   only when nothing above names a rank, and preferring a real failure exit code over a
   SIGTERM/SIGKILL from the agent.
5. A torchrun agent's ``failed (exitcode: -9) local_rank: 3 (pid: 123)`` names a *local*
   rank. It becomes a global rank only when the log proves it: the summary entry with the
   same pid (its ``rank`` field is global), or a run that provably had one node (see
   :func:`single_node_proof`); otherwise the finding keeps no rank.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import Counter
from typing import Any

import regex

from rootrank.entry import render  # noqa: F401  (importable from here for existing callers)
from rootrank.entry import fill_entry
from rootrank.model import Diagnosis, Finding
from rootrank.ranks import ElasticFailure
from rootrank.scan import MAX_EVIDENCE, ScanState
from rootrank.signatures import Library, Signature

_COMPARE_KEYS = ("optype", "shape", "numel", "dtype", "seqnum", "collective")
_SIGTERM_CODES = (-15, 15, 143, -9, 9, 137)
#: A rank this many collectives behind the others is lagging; further apart, the SeqNums
#: come from different process groups (old watchdog messages do not name the group).
MAX_SEQNUM_LAG = 8


def _fmt_time(t: float | None) -> str:
    if t is None:
        return ""
    stamp = _dt.datetime(2000, 1, 1) + _dt.timedelta(seconds=t)
    return stamp.strftime("%H:%M:%S")


def format_ranks(ranks: list[int]) -> str:
    """``[0, 1, 2, 3, 6, 7]`` -> ``"0-3, 6, 7"``."""
    out: list[str] = []
    values = sorted(set(ranks))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{values[i]}-{values[j]}")
        else:
            out.extend(str(v) for v in values[i : j + 1])
        i = j + 1
    return ", ".join(out)


def _sort_key(f: Finding) -> tuple[Any, ...]:
    return (-f.specificity, f.time if f.time is not None else float("inf"), f.order)


def _odd_one_out(group: list[Finding], keys: tuple[str, ...] = _COMPARE_KEYS) -> tuple[int | None, str, bool]:
    """The rank whose capture differs from the others' in ``group``.

    A finding may also describe a peer (``peer_rank`` with ``peer_<key>`` captures, as
    TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprint reports do); a peer's own report, when
    present, wins over what another rank said of it. Returns ``(rank, why, undecided)``:
    ``undecided`` is true when ranks differ but nothing tells which one diverged (two
    ranks, no SeqNum or BARRIER to break the tie).
    """
    by_rank = {f.rank: f for f in group if f.rank is not None}
    for key in keys:
        values = {r: f.captures[key] for r, f in by_rank.items() if f.captures.get(key)}
        for f in group:
            peer, value = f.captures.get("peer_rank"), f.captures.get(f"peer_{key}")
            if peer is not None and value and peer.isdigit() and int(peer) not in values:
                values[int(peer)] = value
        if len(values) < 2 or len(set(values.values())) < 2:
            continue
        counts = Counter(values.values())
        if len(values) >= 3:
            least = min(counts.values())
            minority = [r for r, v in values.items() if counts[v] == least]
            if len(minority) == 1 and least < max(counts.values()):
                r = minority[0]
                majority = counts.most_common(1)[0][0]
                if key == "collective":
                    return r, f"rank {r} was waiting in {values[r]} while the other ranks were in {majority}", False
                if key == "optype":
                    return r, f"rank {r} was running {values[r]} while the other ranks were running {majority}", False
                return r, f"rank {r} passed {key} {values[r]} where the other ranks passed {majority}", False
        if key == "seqnum":
            try:
                numeric = {r: int(v) for r, v in values.items()}
            except ValueError:
                continue
            low = min(numeric.values())
            behind = [r for r, v in numeric.items() if v == low]
            # SeqNums far apart belong to different process groups, not to a lagging rank.
            if len(behind) == 1 and max(numeric.values()) - low <= MAX_SEQNUM_LAG:
                r = behind[0]
                return r, f"rank {r} is behind (SeqNum {low}; the others are at {max(numeric.values())})", False
        if key in ("optype", "collective") and len(values) == 2:
            barrier = [r for r, v in values.items() if v.upper() in ("BARRIER", "MONITORED_BARRIER")]
            if len(barrier) == 1:
                r = barrier[0]
                other = next(v for rr, v in values.items() if rr != r)
                return r, f"rank {r} entered {values[r]} while the other rank was in {other}: it left the loop early", False
        if len(values) == 2:
            a, b = sorted(values)
            return None, (
                f"ranks {a} and {b} disagree ({key} {values[a]} vs {values[b]}) and the log does not tell which one diverged"
            ), True
    return None, "", False


def _infer(findings: list[Finding], library: Library) -> list[Finding]:
    """Findings of ``inferred`` signatures: the rank whose capture differs from the others'
    among the findings of the signatures named in ``inferred.from`` (at the same SeqNum
    when the findings carry one)."""
    out: list[Finding] = []
    for sig in library.signatures.values():
        if not sig.inferred:
            continue
        group = [f for f in findings if f.signature in sig.inferred["from"]]
        seqnums = {f.captures.get("seqnum") for f in group}
        if len(seqnums) > 1:
            continue
        odd, why, _ = _odd_one_out(group, (sig.inferred["differs"],))
        if odd is None:
            continue
        base = next(f for f in group if f.rank == odd)
        out.append(Finding(
            signature=sig.id, failure_class=sig.failure_class, title=sig.title, role=sig.role,
            severity=sig.severity, specificity=sig.specificity, rank=odd, host=base.host,
            time=base.time, order=base.order, count=1, evidence=list(base.evidence[:1]),
            captures={**base.captures, "why": why},
        ))
    # Several comparisons may single out the same rank (its OpType and its size differ):
    # one explanation per rank, the most specific.
    best: dict[int | None, Finding] = {}
    for f in out:
        if f.rank not in best or f.specificity > best[f.rank].specificity:
            best[f.rank] = f
    return list(best.values())


def _known_ranks(state: ScanState) -> set[int]:
    known = set(state.ranks_seen)
    known.update(e.rank for e in state.elastic if e.rank is not None and e.rank >= 0)
    if state.world_size:
        known.update(range(state.world_size))
    return known


def _summary_root_of(entry: ElasticFailure, entries: list[ElasticFailure]) -> ElasticFailure | None:
    """The "Root Cause (first observed failure)" entry of the summary ``entry`` sits in.

    torchelastic prints one agent's ``Failures:`` entries first, then its root cause: the
    failure with the smallest timestamp (``ChildFailedError.get_first_failure`` in
    ``torch/distributed/elastic/multiprocessing/errors/__init__.py``). So the first root
    entry after ``entry`` in the same file, with no summary end in between that we can see,
    bounds ``entry``'s time from below. ``None`` when no root entry follows."""
    later = [e for e in entries if e.root_cause and e.path == entry.path and e.line > entry.line]
    return min(later, key=lambda e: e.line) if later else None


def _elastic_rank(state: ScanState) -> tuple[int | None, str]:
    """The rank torchelastic's failure summaries point at, when they can tell: the only rank
    with a real failure exit code (not a SIGTERM/SIGKILL the agent sent), or the one whose
    failure is strictly the earliest. Several summaries (one per node agent) are merged.

    An entry whose ``time`` field is not in the log (a paste cut inside ``Failures:``) is
    not earlier than its own summary's root-cause entry (torchelastic picks the minimum
    timestamp), so it does not stand in the way of that root entry or of an earlier one; an
    entry with neither a time nor a following root entry leaves the order unknown."""
    entries = [e for e in state.elastic if e.rank is not None and e.rank >= 0]
    if not entries:
        return None, ""
    real = [e for e in entries if e.exitcode is not None and e.exitcode not in _SIGTERM_CODES and e.exitcode != 0]
    pool = real or entries
    ranks = sorted({e.rank for e in pool if e.rank is not None})
    if len(ranks) == 1:
        e = pool[0]
        if len(entries) > 1 and real:
            return e.rank, f"torchelastic's summary shows rank {e.rank} exited with code {e.exitcode} while the others were stopped by the agent"
        return e.rank, f"torchelastic's summary names rank {e.rank} (exit code {e.exitcode}); no other rank's failure is in the log"
    timed = [e for e in pool if e.time is not None]
    if timed:
        first = min(timed, key=lambda e: e.time or 0.0)
        unique = sum(1 for e in timed if e.time == first.time and e.rank != first.rank) == 0
        bounded = True
        siblings: list[int] = []  # untimed entries of `first`'s own summary
        for e in pool:
            if e.time is not None or e.rank == first.rank:
                continue
            root = _summary_root_of(e, entries)
            if root is None or root.time is None:
                bounded = False
            elif root is first:
                siblings.append(e.rank or 0)
            elif root.time <= (first.time or 0.0):
                bounded = False  # it may have failed as early as `first`
        if unique and bounded:
            others = format_ranks([r for r in ranks if r != first.rank])
            if siblings:
                return first.rank, (
                    f"torchelastic's summary names rank {first.rank} (exit code {first.exitcode}) as the first observed "
                    f"failure: the earliest timestamp of its summary, which also lists rank{'s' if len(siblings) > 1 else ''} "
                    f"{format_ranks(sorted(siblings))}"
                )
            return first.rank, (
                f"torchelastic's summaries show rank {first.rank} failed first (exit code {first.exitcode}), "
                f"before ranks {others}"
            )
    return None, f"ranks {format_ranks(ranks)} all failed at the same time (torchelastic's summary); the log does not tell which one started"


def single_node_proof(state: ScanState) -> str | None:
    """Why the log shows a single-node run (so a local rank is the global rank), or ``None``.

    Proofs, any one of which is enough unless the log shows several nodes (``--nnodes=2``,
    ``group_rank=1``, ``max_nodes : 4``, two hosts among the ranks or in torchelastic's
    summaries): ``--nnodes=1`` / ``--nnodes 1:1`` / ``nnodes=1`` / ``max_nodes : 1`` /
    ``group_world_size=1`` (torchrun's agent) or ``--standalone``; the world size equal to
    ``--nproc-per-node``; one agent that stopped or lost at least world-size workers (so it
    ran them all); a printed ``torchrun``/``torch.distributed.run``/``launch`` command with
    no node flag anywhere in the log (``--nnodes`` defaults to ``1:1``). One host in a
    summary is *not* a proof: every agent's summary lists only its own node's workers.
    """
    facts = state.launch
    hosts = set(state.hosts.values()) | {e.host for e in state.elastic if e.host}
    if facts.multi_node or len(hosts) > 1:
        return None
    if facts.single_node:
        return f"the log sets one node ({facts.single_node[0]})"
    world = state.world_size
    if world and facts.nproc_per_node and world == facts.nproc_per_node:
        return f"the world size {world} equals --nproc-per-node {facts.nproc_per_node}"
    if facts.nproc_per_node and world and world > facts.nproc_per_node:
        return None
    sizes = facts.parallel_sizes
    if world is None and len(sizes) == 3:
        world = sizes["data"] * sizes["pipeline"] * sizes["tensor"]
    if world and len(facts.agent_pids) >= world:
        return f"torchrun's agent ran all {world} workers of the job itself (pids {', '.join(str(p) for p in sorted(facts.agent_pids))})"
    if facts.launch_command and not facts.node_flags:
        return f"the torchrun command ({facts.launch_command}) sets no --nnodes, which defaults to one node"
    return None


def _global_ranks_from_local(findings: list[Finding], state: ScanState) -> str:
    """Give a global rank to findings that only carry torchrun's ``local_rank`` capture
    (rule 5), merging a mapped finding into the rank's own finding of the same signature
    (``findings`` is changed in place). Returns the sentence of reasoning, or ``""`` when
    nothing was mapped."""
    local_only = [f for f in findings if f.rank is None and f.captures.get("local_rank", "").isdigit()]
    if not local_only:
        return ""
    by_pid = {e.pid: e for e in state.elastic if e.pid is not None and e.rank is not None and e.rank >= 0}
    proof: str | None | bool = False  # False: not computed yet
    why = ""
    for f in local_only:
        local = int(f.captures["local_rank"])
        pid = f.captures.get("pid", "")
        entry = by_pid.get(int(pid)) if pid.isdigit() else None
        if entry is not None and (entry.local_rank is None or entry.local_rank == local):
            f.rank = entry.rank
            why = why or f"torchrun's summary gives pid {pid} (local_rank {local}) the global rank {entry.rank}"
            continue
        if proof is False:
            proof = single_node_proof(state)
        if proof:
            f.rank = local
            why = why or f"local_rank {local} is global rank {local}: {proof}"
    if why:
        for f in local_only:
            if f.rank is None:
                continue
            for e in f.evidence:
                e.rank = f.rank
            state.ranks_seen.add(f.rank)
            # The rank's own finding of the same signature stays the one reported; the
            # agent's line joins it as further evidence.
            own = next((g for g in findings if g is not f and g.signature == f.signature and g.rank == f.rank), None)
            if own is not None:
                own.count += f.count
                own.evidence.extend(f.evidence[: max(0, MAX_EVIDENCE - len(own.evidence))])
                own.order = min(own.order, f.order)
                if own.time is None:
                    own.time = f.time
                for k, v in f.captures.items():
                    own.captures.setdefault(k, v)
                findings.remove(f)
    return why


def analyze(state: ScanState, library: Library, masker: Any = None) -> Diagnosis:
    """Turn a finished scan into a :class:`Diagnosis`.

    ``masker`` (a :class:`rootrank.mask.Masker`, optional) masks the values taken from the
    log before they fill the entry's templates, so the fix and verification text (ours)
    is never itself rewritten; the engine masks the rest of the log-derived text after."""
    totals: Counter[str] = Counter()
    for f in state.findings.values():
        totals[f.signature] += f.count
    findings = [
        f for f in state.findings.values()
        if totals[f.signature] >= library.signatures[f.signature].min_count
    ]
    local_why = _global_ranks_from_local(findings, state)
    findings.extend(_infer(findings, library))
    findings.sort(key=lambda f: f.order)
    failure_present = (
        any(f.severity == "error" for f in findings)
        or bool(state.exceptions)
        or any(e.exitcode not in (None, 0) for e in state.elastic)
    )
    usable = [f for f in findings if f.severity == "error" or failure_present]
    causes = [f for f in usable if f.role == "cause" and (f.severity == "error" or failure_present)]
    symptoms = [f for f in usable if f.role == "symptom" and f.severity == "error"]
    reasoning: list[str] = []
    root: Finding | None = None
    if causes:
        root = min(causes, key=_sort_key)
    elif symptoms:
        root = min(symptoms, key=_sort_key)

    ranks_info = {
        "seen": sorted(_known_ranks(state)),
        "hosts": {str(r): h for r, h in sorted(state.hosts.items())},
        "world_size": state.world_size,
    }
    diag = Diagnosis(
        sources=list(state.sources),
        root_cause=None,
        initiating_rank=None,
        initiating_host=None,
        reasoning=reasoning,
        collateral=[],
        findings=findings,
        ranks=ranks_info,
        stack=sorted(state.stacks),
        lines_read=state.lines_total,
    )
    if root is None:
        if state.exceptions:
            last = state.exceptions[-1]
            exc = last.exc
            diag.unclassified = Finding(
                signature="unclassified",
                failure_class="unclassified",
                title=f"{exc.type}: {exc.message}"[:300],
                role="cause",
                severity="error",
                specificity=0,
                rank=last.rank,
                host=last.host,
                time=last.time,
                order=last.order,
                evidence=[_evidence_of(last)],
            )
            diag.initiating_rank = last.rank
            reasoning.append(
                "No known failure found. The last exception"
                + (f" (rank {last.rank})" if last.rank is not None else "")
                + f" is {exc.type} at {last.path}:{exc.log_line}."
            )
        diag.timeline = _timeline(findings, None)
        return diag

    sig = library.signatures[root.signature]
    group = [f for f in findings if f.signature == root.signature]
    initiating, why = _initiating_rank(root, group, findings, state, sig)
    why = why or root.captures.pop("why", "")
    if initiating is not None and initiating != root.rank:
        same = [f for f in group if f.rank == initiating]
        if same:
            root = same[0]
    diag.initiating_rank = initiating
    diag.initiating_host = state.hosts.get(initiating) if initiating is not None else None
    if diag.initiating_host is None and initiating is not None and root.rank == initiating:
        diag.initiating_host = root.host

    ev = root.evidence[0]
    when = f" at {_fmt_time(root.time)}" if root.time is not None else ""
    group_ranks = sorted({f.rank for f in group if f.rank is not None})
    if root.role == "symptom" and initiating is not None and group_ranks and initiating not in group_ranks:
        # A hang: the reporters are the victims; the initiator is the rank they waited for.
        reasoning.append(
            f"Rank{'s' if len(group_ranks) > 1 else ''} {format_ranks(group_ranks)} reported \"{root.title}\"{when} ({ev.path}:{ev.line})."
        )
    elif root.rank is None:
        reasoning.append(f"The log reports \"{root.title}\"{when} ({ev.path}:{ev.line}), with no rank named on that line.")
    else:
        reasoning.append(f"Rank {root.rank} hit \"{root.title}\"{when} ({ev.path}:{ev.line}).")
    if why:
        reasoning.append(why[:1].upper() + why[1:] + ".")
    if local_why and root.captures.get("local_rank") and root.rank is not None:
        reasoning.append(local_why[:1].upper() + local_why[1:] + ".")
    # The root cause's own lines read by a more general signature (rank 3's watchdog line
    # under the desync one) are not collateral: they leave the collateral groups.
    root_lines = {(e.path, e.line) for e in root.evidence}
    collateral = []
    for f in findings:
        if f is root:
            continue
        own = [e for e in f.evidence if (e.path, e.line) in root_lines]
        if own:
            if len(own) == len(f.evidence) and f.count <= len(own):
                continue
            f = dataclasses.replace(
                f, evidence=[e for e in f.evidence if e not in own], count=max(1, f.count - len(own))
            )
        collateral.append(f)
    victims = sorted({
        f.rank for f in collateral
        if f.role == "symptom" and f.rank is not None and f.rank != initiating and f.rank not in group_ranks
    })
    if victims:
        kinds = Counter(f.title for f in collateral if f.role == "symptom" and f.rank in victims)
        kind = kinds.most_common(1)[0][0]
        detail = ""
        for f in collateral:
            if f.title == kind and f.captures.get("optype"):
                detail = f" in {f.captures['optype']}" + (f" SeqNum {f.captures['seqnum']}" if f.captures.get("seqnum") else "")
                break
        reasoning.append(f"Rank{'s' if len(victims) > 1 else ''} {format_ranks(victims)} then showed \"{kind}\"{detail}: collateral.")
    elastic_root = [e for e in state.elastic if e.root_cause and e.rank is not None]
    if elastic_root and initiating is not None and elastic_root[0].rank != initiating:
        reasoning.append(
            f"torchrun's \"first observed failure\" names rank {elastic_root[0].rank}, which was a victim, not the initiator."
        )

    diag.root_cause = fill_entry(
        sig, root, group=group, findings=findings, state=state, library=library,
        initiating=initiating, initiating_host=diag.initiating_host, masker=masker,
    )
    diag.collateral = _group(collateral)
    diag.timeline = _timeline(findings, root)
    return diag


def _initiating_rank(
    root: Finding, group: list[Finding], findings: list[Finding], state: ScanState, sig: Signature
) -> tuple[int | None, str]:
    ranks_with = sorted({f.rank for f in group if f.rank is not None})
    suspects = _suspect_ranks(root)
    if len(suspects) > 1:
        return None, f"ranks {format_ranks(suspects)} are named together and the log does not tell which one started"
    odd, why, undecided = _odd_one_out(group)
    if odd is not None or undecided:
        return odd, why
    if root.role == "symptom":
        # Timeouts are reported by the victims: the reporters are never the answer. The
        # suspect is the one known rank that reported no failure of this kind at all.
        reporters = {f.rank for f in findings if f.failure_class == root.failure_class and f.rank is not None}
        # A hang or a lost peer: who never reported? (Not for the launcher's own reports
        # about workers, which name the ranks it stopped.)
        if reporters and root.failure_class not in ("elastic-child-failed", "preemption-sigterm"):
            known = _known_ranks(state)
            if len(reporters) >= 3:
                # Ranks are 0..world_size-1: with three or more reporters, a single gap
                # below the highest is the rank that printed nothing (a pasted excerpt
                # with two ranks says too little to fill gaps).
                known |= set(range(max(reporters) + 1))
            missing = sorted(known - reporters)
            if len(missing) == 1:
                r = missing[0]
                return r, f"rank {r} is the one known rank that did not report it, so it is the rank the others waited for"
        r, why = _elastic_rank(state)
        if r is not None:
            return r, why
        if ranks_with:
            return None, (
                f"rank{'s' if len(ranks_with) > 1 else ''} {format_ranks(ranks_with)} only reported the consequence "
                "(a victim's view); the log does not show which rank started it"
            )
        return None, why
    if len(ranks_with) == 1:
        other = _unexplained_failure_elsewhere(ranks_with[0], root, findings, state)
        if other is not None:
            return None, (
                f"rank {other} also failed with an exception no signature explains, and the log does not "
                f"show which of ranks {format_ranks(sorted({other, ranks_with[0]}))} failed first"
            )
        return ranks_with[0], ""
    if len(ranks_with) > 1:
        # The first rank to report a *cause* started it.
        timed = [f for f in group if f.rank is not None and f.time is not None]
        if len(timed) == len([f for f in group if f.rank is not None]):
            first = min(timed, key=lambda f: f.time or 0.0)
            if sum(1 for f in timed if f.time == first.time) == 1:
                return first.rank, f"rank {first.rank} reported it first, at {_fmt_time(first.time)}"
        return None, f"ranks {format_ranks(ranks_with)} all report it and the log does not tell which one started"
    r, why = _elastic_rank(state)
    if r is None and sig.implied_rank is not None:
        return sig.implied_rank, f"this failure happens on rank {sig.implied_rank} by design ({sig.implied_rank_reason})"
    return r, why


def _unexplained_failure_elsewhere(rank: int, root: Finding, findings: list[Finding], state: ScanState) -> int | None:
    """Another rank whose Python exception no finding covers (an error no signature knows,
    printed no later than the root cause as far as the log shows) or whose traceback the log
    cuts before its exception line: then ``rank`` is not proven to be the first. ``None`` when
    there is none."""
    explained = {(e.path, e.line) for f in findings for e in f.evidence}
    for seen in state.exceptions:
        if seen.rank is None or seen.rank == rank or seen.exc.ignored:
            continue
        if (seen.path, seen.exc.log_line) in explained:
            continue
        if root.time is not None and seen.time is not None and seen.time > root.time:
            continue
        return seen.rank
    cut = sorted(state.cut_traceback_ranks - {rank})
    return cut[0] if cut else None


def _suspect_ranks(finding: Finding) -> list[int]:
    """Ranks a message names as the faulty ones (a ``ranks`` capture such as
    ``Ranks 4, 5, 6, 7 failed to pass monitoredBarrier``)."""
    raw = finding.captures.get("ranks", "")
    return sorted({int(x) for x in regex.findall(r"\d+", raw)}) if raw else []


def _group(collateral: list[Finding]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for f in collateral:
        g = groups.get(f.signature)
        if g is None:
            g = groups[f.signature] = {
                "signature": f.signature,
                "failure_class": f.failure_class,
                "title": f.title,
                "role": f.role,
                "ranks": [],
                "count": 0,
                "evidence": [],
                "captures": dict(f.captures),
            }
        if f.rank is not None and f.rank not in g["ranks"]:
            g["ranks"].append(f.rank)
        g["count"] += f.count
        if len(g["evidence"]) < 8:
            g["evidence"].extend(e.to_dict() for e in f.evidence[:1])
    for g in groups.values():
        g["ranks"].sort()
    return list(groups.values())


def _timeline(findings: list[Finding], root: Finding | None) -> list[dict[str, Any]]:
    out = []
    for f in findings:
        out.append({
            "rank": f.rank,
            "time": f.time,
            "order": f.order,
            "signature": f.signature,
            "title": f.title,
            "kind": "root" if f is root else ("collateral" if root is not None else "finding"),
            "path": f.evidence[0].path if f.evidence else None,
            "line": f.evidence[0].line if f.evidence else None,
        })
    return out


def _evidence_of(seen: Any) -> Any:
    from rootrank.model import Evidence

    text = f"{seen.exc.type}: {seen.exc.message}" if seen.exc.message else seen.exc.type
    col = seen.raw.find(seen.exc.type)
    if col < 0 and seen.exc.message:  # a C++ abort's what() line does not repeat the type
        col = seen.raw.find(seen.exc.message[:60])
    return Evidence(
        path=seen.path,
        line=seen.exc.log_line,
        text=text,
        rank=seen.rank,
        column_start=col if col >= 0 else None,
        column_end=len(seen.raw) if col >= 0 else None,
    )
