"""Step 2 and 3: draw the explanation edges, then pick the root cause.

The root cause is the cause that nothing explains; among several, the one that explains
most, then the earliest (timestamps, else log order). A symptom is the root only when no
cause is left (a bare watchdog timeout is a ``collective-timeout``). ``specificity`` only
breaks a tie between findings of the same time and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rootrank.analysis.prepare import EXCEPTION_SIGNATURE, Context
from rootrank.analysis.rules import RULES, Edge, inert_warning
from rootrank.model import Finding


@dataclass
class Graph:
    """The findings the rules reasoned about (``nodes``) and the edges they drew.

    ``edges`` only grows (:func:`explain` appends). :meth:`explained` and :meth:`effects`
    read an index of the edges by effect and by cause, built on first use and again whenever
    ``edges`` grew: a walk over every edge per question cost O(findings x edges), ~87% of the
    CPU of a 1,024-rank log (each rank's watchdog timeout explained by the root: ~3,000
    symptoms asked about ~3,000 edges each, 65 s of a 75 s diagnose of 10 MB)."""

    nodes: list[Finding]
    edges: list[Edge] = field(default_factory=list)
    #: (how many edges are indexed, edges by id of effect, edges by id of cause), in edge order
    _index: tuple[int, dict[int, list[Edge]], dict[int, list[Edge]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def _indexed(self) -> tuple[int, dict[int, list[Edge]], dict[int, list[Edge]]]:
        index = self._index
        if index is None or index[0] != len(self.edges):
            by_effect: dict[int, list[Edge]] = {}
            by_cause: dict[int, list[Edge]] = {}
            for e in self.edges:
                if e.cause is not e.effect:  # an edge from a finding to itself explains nothing
                    by_effect.setdefault(id(e.effect), []).append(e)
                    by_cause.setdefault(id(e.cause), []).append(e)
            # ids of findings the edges hold (alive as long as the graph): no other object's
            index = self._index = (len(self.edges), by_effect, by_cause)
        return index

    def explained(self, f: Finding) -> list[Edge]:
        """The edges that explain ``f`` (from another finding), in the order they were drawn."""
        return list(self._indexed()[1].get(id(f), ()))

    def effects(self, f: Finding) -> list[Edge]:
        """The edges from ``f`` to what it explains, in the order they were drawn."""
        return list(self._indexed()[2].get(id(f), ()))


def explain(ctx: Context) -> Graph:
    """Run every rule of :data:`~rootrank.analysis.rules.RULES` over the failure findings;
    one edge per (cause, effect) pair, from the first rule that drew it. A pair a signature's
    YAML already ordered (``explained_by``: rule ``declared_explanations``, the watchdog's
    timeout explaining the abort banner it caused) gets no edge the other way from a generic
    rule (a cause explains the symptoms): the declared order is the mechanism."""
    nodes = [
        f
        for f in ctx.usable()
        if f.role == "cause" or (f.role == "symptom" and f.severity == "error")
    ]
    graph = Graph(nodes)
    seen: set[tuple[int, int]] = set()
    declared: set[tuple[int, int]] = set()
    for rule in RULES:
        for edge in rule(ctx, nodes):
            key = (id(edge.cause), id(edge.effect))
            if edge.cause is edge.effect or key in seen or (key[1], key[0]) in declared:
                continue
            seen.add(key)
            if edge.rule == "declared_explanations":
                declared.add(key)
            graph.edges.append(edge)
    return graph


def _earliest(pool: list[Finding]) -> Finding:
    """The first of ``pool``: by timestamps where both findings have one, else by log
    order (a timed line is not earlier than an untimed one printed before it); the more
    specific on a tie."""

    def first(a: Finding, b: Finding) -> Finding:
        if a.time is not None and b.time is not None and a.time != b.time:
            return a if a.time < b.time else b
        if a.order != b.order:
            return a if a.order < b.order else b
        return a if a.specificity >= b.specificity else b

    best = pool[0]
    for f in pool[1:]:
        best = first(best, f)
    return best


def _ended_processes(ctx: Context) -> set[tuple[str, int]]:
    """``(path, 1-based line)`` of the exception lines whose traceback a process unwound and
    died of: a rank's traceback; or, on no rank, a worker's traceback (no launcher frame)
    when the launcher reports a worker that exited by itself (torchrun's "failed (exitcode:
    1) local_rank: 1", its summary): the untagged traceback is that worker's last words.
    Exceptions Python ignored (``Exception ignored in``) ended nothing."""
    from rootrank.analysis.events import launcher_exits
    from rootrank.analysis.initiator import _AGENT_FRAME

    worker_died = bool(launcher_exits(ctx.events))
    ended: set[tuple[str, int]] = set()
    for s in ctx.state.exceptions:
        if not s.exc.frames or s.exc.ignored:
            continue
        if s.rank is not None or (
            worker_died and not any(_AGENT_FRAME.search(fr.file) for fr in s.exc.frames)
        ):
            ended.add((s.path, s.exc.log_line))
    return ended


def _last_words_of_one_process(ctx: Context) -> set[tuple[str, int]]:
    """``(path, 1-based line)`` of the last traceback's exception line of each file, in a log
    that shows no rank, no launcher and no worker exit at all (one process: ``oumi train``
    driving every GPU through nn.DataParallel, a plain ``python train.py``): Python prints an
    uncaught exception's traceback as the process exits. Empty otherwise."""
    from rootrank.analysis.events import launcher_exits
    from rootrank.analysis.initiator import _AGENT_FRAME

    st = ctx.state
    if st.ranks_seen or st.launch.launchers or launcher_exits(ctx.events):
        return set()
    last: dict[str, int] = {}
    for s in st.exceptions:
        if not s.exc.frames or s.exc.ignored or s.rank is not None:
            continue
        if any(_AGENT_FRAME.search(fr.file) for fr in s.exc.frames):
            continue
        last[s.path] = max(last.get(s.path, 0), s.exc.log_line)
    return set(last.items())


def _category(ctx: Context, f: Finding) -> str | None:
    """The ``category`` of ``f``'s signature (``memory``, ``data``, ``cuda``...), or ``None``."""
    return getattr(ctx.library.signatures.get(f.signature), "category", None)


def _prefer_what_ended_a_process(free: list[Finding], ctx: Context) -> list[Finding]:
    """Among causes nothing explains: when some are the exception a process's traceback
    ended with (it died of it, :func:`_ended_processes`) and the others are on no rank and
    ended nothing (a warning the program logged and survived, such as DeepSpeed's
    "FusedAdam CUDA build failed ... falling back to torch.optim.AdamW", or transformers'
    load-time "Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes"
    advisory, after which the run went on), the ones that ended a process. An unranked
    exception wins only over findings printed before it: the run went on after them. In a log
    of one process, its last traceback ended it, and wins over the warnings before it."""
    ended = _ended_processes(ctx)
    fatal = [f for f in free if any((e.path, e.line) in ended for e in f.evidence)]
    if not fatal:
        # one process's last traceback (:func:`_last_words_of_one_process`) ended it, and
        # wins over warnings of another domain than its own signature's (a tokenizer's
        # "Token indices sequence length is longer ..." that packing went past, before an
        # OOM): not over an error line (it may be what the process died of), nor over a
        # warning of the failure's own category (a GPU-arch warning before a cuBLAS error)
        # or before a plain exception no signature names (NumPy's failed init before a
        # TypeError from torch.from_numpy): those warnings may be its cause
        words = _last_words_of_one_process(ctx)
        fatal = [
            f
            for f in free
            if f.signature != EXCEPTION_SIGNATURE
            and any((e.path, e.line) in words for e in f.evidence)
        ]
        kinds = {_category(ctx, f) for f in fatal}
        if any(
            f.severity != "warning" or _category(ctx, f) in kinds for f in free if f not in fatal
        ):
            return free
    loose = [f for f in free if f not in fatal]
    if not fatal or not loose or any(f.rank is not None for f in loose):
        return free
    if all(f.rank is None for f in fatal):
        last_order = max(f.order for f in fatal)
        if any(f.order > last_order for f in loose):
            return free
    return fatal


#: The step a rank's last progress line must have reached after a warning for the run to
#: have trained past it: a bar drawn at 0 (or a first step that may be where it failed)
#: shows nothing went on.
OUTLIVED_STEP = 2


def _outlived(ctx: Context, w: Finding, errors: list[Finding]) -> bool:
    """Whether the run is shown to have trained past the warning ``w`` and then failed: a
    rank's last progress line (:class:`rootrank.progress.ProgressModel`), at step
    :data:`OUTLIVED_STEP` or later, of a rank whose step went up between its progress lines
    (:meth:`~rootrank.progress.ProgressModel.advanced`), was printed after the warning's last
    line and before the first line of the ``errors`` left to report, in the same file. A
    process that keeps taking steps was not stopped by what it warned about; one lone step line,
    or progress after the errors too, shows no training past it (the fuzz test's step lines)."""
    last = max((e.line for e in w.evidence), default=0)
    path = w.evidence[0].path if w.evidence else None
    ends = [e.line for f in errors for e in f.evidence if e.path == path]
    first_error = min(ends) if ends else None
    model = ctx.state.progress
    return any(
        p.path == path
        and model.advanced(p.rank)
        and p.line > last
        and (first_error is None or p.line < first_error)
        and p.step >= OUTLIVED_STEP
        for p in model.last().values()
    )


def _drop_outlived_warnings(free: list[Finding], graph: Graph, ctx: Context) -> list[Finding]:
    """``free`` without the warnings (``severity: warning``, explaining nothing) the run
    trained past (:func:`_outlived`), when an error is left to report. A warning ends no
    process: it is a root cause only as the cause of a later failure, and a condition the run
    took steps under did not cause the stop that came after them (held-out r20b case 07: a
    load-time dtype advisory, then 21 training steps, then a worker killed)."""
    errors = [f for f in free if f.severity != "warning"]
    if not errors:
        return free
    gone = [
        f
        for f in free
        if f.severity == "warning" and not graph.effects(f) and _outlived(ctx, f, errors)
    ]
    return [f for f in free if f not in gone]


def pick_root(graph: Graph, ctx: Context | None = None) -> Finding | None:
    """The root cause of ``graph``, or ``None`` when it holds no failure.

    Among causes nothing explains, one the log states in its own words wins over one a
    detector read from the training curves (a loss spike does not explain a DDP error
    printed later, nor does the error explain the spike; the error is what ended the job)."""
    causes = [f for f in graph.nodes if f.role == "cause"]
    symptoms = [f for f in graph.nodes if f.role == "symptom"]
    if ctx is not None and any(f.severity == "error" and not graph.explained(f) for f in symptoms):
        # a warning that explains nothing stopped nothing: an error nothing explains (a
        # timeout, an abort) is the failure to report, not the warning printed before it
        causes = [f for f in causes if graph.effects(f) or not inert_warning(ctx, f)]
    for pool in (causes, symptoms):
        free = [f for f in pool if not graph.explained(f)]
        if ctx is not None:
            stated = [
                f
                for f in free
                if getattr(ctx.library.signatures.get(f.signature), "detector", None)
                in (None, "analysis")
            ]
            free = stated or free
        if ctx is not None and len(free) > 1:
            free = _drop_outlived_warnings(free, graph, ctx)
            effects = {id(f): len(graph.effects(f)) for f in free}
            from rootrank.analysis.outlived import (
                outlived_errors,
            )  # loaded for the logs that get here

            gone = outlived_errors(free, effects, ctx)
            free = [f for f in free if f not in gone]
            free = _prefer_what_ended_a_process(free, ctx)
        if free:
            most = max(len(graph.effects(f)) for f in free)
            return _earliest([f for f in free if len(graph.effects(f)) == most])
    pool = causes or symptoms  # everything explains everything else: a cycle; the earliest
    return _earliest(pool) if pool else None
