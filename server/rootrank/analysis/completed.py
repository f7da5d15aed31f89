"""Errors printed before a run's visible end were survived (rule ``run_completed``).

Mechanism: a training run that reached its end -- its progress at its own total (``step 8/8``,
a bar at ``12/12``), the Hugging Face Trainer's end-of-run summary (``train_runtime``),
Lightning's "`Trainer.fit` stopped: `max_epochs=N` reached", torchtitan's "Training
completed", Megatron-LM's "[after training is done]", DeepSpeed's launcher reporting a
worker "exits successfully" (return code 0),
or torchelastic's agent
reporting its worker group "successfully finished" (logged only when every local worker
exited 0: ``WorkerState.SUCCEEDED``, rootrank.scan.RUN_END_REPORT) -- went on past every
error it had printed before that line. A process that dies of an error
trains no further, and the run's end is printed after the last step of training (rank 0
prints the Trainer's summary only once every rank left the training loop, since the last
optimizer step holds a collective). So when the log's run reached its end, no launcher
reports a worker that failed or was killed, no traceback reached the script's top level
(``<module>``: the process ended with it) -- unless every rank's lines after it were written
as printed, broken up by the other ranks' lines, not one flushed block (a top-level retry
loop's ``traceback.print_exc()``: rootrank.analysis.went_on) -- and no error comes at or after the end line, the
errors before it were caught and survived: a retried allocation that printed the allocator's
message, a logger's failed upload printed with ``logger.exception``, a cleanup's
``traceback.print_exc()``.

This reaches what :mod:`rootrank.analysis.survived` cannot: an error line with no rank (an
untagged traceback of a multi-rank log) or of a rank that prints no progress of its own (only
rank 0 logs, as the Trainer does). It needs the whole run's end, not one process's next step.

It is not used when the end is no proof: a log of several sources (per-rank files: one
file's end says nothing of the others) -- except when every error and exception of the other
sources is a copy of one the end's source printed before its end (``_mirrored``: a folder with
the terminal's output and torchrun's ``--log-dir`` per-rank files, which repeat the same caught
tracebacks; heldout r23e case 12) --, a log cut inside a traceback, and a run whose
training curves went wrong (a NaN or a spike read from the metrics is a failure the run
trained through, not an error it survived). Except a non-finite loss whose series printed a
finite loss again later (``finite_after``, rootrank.metrics.onset_findings): a NaN that
reached the weights makes every later loss NaN, so a finite loss after it means that step's
update was skipped (a guard's "non-finite loss ...; skipping the optimizer step", AMP's
scaler): handled, and with the run's end survived (heldout r19b case 12). And a gradient-norm
explosion the loss did not follow (``loss_steady``, rootrank.metrics._loss_steady): the logged
norm is the raw one, before clipping; an update that really threw the weights off shows in the
losses after it, so a run that kept its loss level to its end absorbed that batch (heldout r24a
cases 13 and 14: one pre-clip norm 30x its median, loss unchanged, the run at its last step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rootrank.analysis.events import events_of
from rootrank.analysis.survived import caught
from rootrank.analysis.went_on import went_on_after
from rootrank.model import CollateralGroup, Evidence, Finding
from rootrank.ranks import RankTagger
from rootrank.scan import _RANK_END, ScanState, body_rank
from rootrank.signatures import Library

#: The rule's name, as the reasoning line shows it.
RULE = "run_completed"

#: The category of the signatures read from the training curves (rootrank.metrics onsets):
#: a run can train to its end through them, so they are never set aside by this rule.
_CURVES = "training"


@dataclass(frozen=True, slots=True)
class Completed:
    """The run's end that shows its earlier errors were survived.

    Attributes:
        path: the source the end line is in.
        line: 1-based line of the end (the progress at its total, or the Trainer's summary).
        why: how the run's end shows (``its progress reached step 8 of 8``).
        findings: the error findings set aside (all before ``line``).
        lines: how many distinct lines of the log those findings and the exceptions set
            aside begin on (one error read both ways counts once).
    """

    path: str
    line: int
    why: str
    findings: tuple[Finding, ...] = ()
    lines: int = 0


def completed_run(state: ScanState, findings: list[Finding], library: Library) -> Completed | None:
    """The end of ``state``'s run when it shows the errors before it were survived (the
    module's docstring gives the rule), else ``None``. ``findings`` are the analysis's
    findings after :mod:`rootrank.analysis.survived` set its own aside."""
    if not state.sources or state.traceback_cut:
        return None
    errors = [f for f in findings if f.severity == "error"]
    if len(state.sources) != 1:
        return _completed_mirrored(state, errors, findings, library)
    ended = state.run_ended[-1] if state.run_ended else tail_rank_ends(state)
    if ended is None:
        return None
    path, line, why = ended
    if path != state.sources[0]:
        return None
    return _completed_in(state, errors, library, path, line, why)


def _completed_in(
    state: ScanState, errors: list[Finding], library: Library, path: str, line: int, why: str
) -> Completed | None:
    """The rule of :func:`completed_run` for the end at ``path``:``line`` (1-based) of the
    one source ``path``; ``errors`` are the error findings (of that source only)."""
    if not errors and not state.exceptions:
        return None
    if any(
        library.signatures[f.signature].category == _CURVES
        and not f.captures.get("finite_after")
        and not f.captures.get("loss_steady")
        for f in errors
    ):
        return None
    last = state.last_error_line.get(path)
    for f in errors:
        if not f.evidence:
            return None
        if f.count > len(f.evidence) and (last is None or last >= line):
            return None  # lines the evidence does not hold may come after the end
        if any(e.path != path or e.line >= line for e in f.evidence):
            return None
    for seen in state.exceptions:
        if seen.exc.ignored and seen.path == path and seen.exc.log_line > line:
            # "Exception ignored in: <function X.__del__>": Python printed and swallowed it
            # (a finalizer, an atexit hook) while the process ended after its last record
            continue
        if seen.path != path or seen.exc.log_line >= line:
            return None
        if not caught(seen) and not went_on_after(state, seen):
            return None
    if any(e.exitcode not in (None, 0) for e in state.elastic):
        return None
    for e in events_of(state, errors, library):
        if e.kind in ("exit", "summary", "signal") and e.code not in (None, 0):
            return None
    where = {e.line for f in errors for e in f.evidence}
    where.update(seen.exc.log_line for seen in state.exceptions)
    return Completed(path, line, why, tuple(errors), len(where))


def _completed_mirrored(
    state: ScanState, errors: list[Finding], findings: list[Finding], library: Library
) -> Completed | None:
    """:func:`completed_run` for a log of several sources: the end of one source (the latest
    the scan noted in it) speaks for the others when every error finding and exception of
    the others is a copy of one that source printed, caught, before its end
    (:func:`_mirrored`). Per-rank files written beside the terminal's output (torchrun's
    ``--log-dir``/``--tee``) hold the same lines as the terminal: its end is the job's.
    ``None`` when no source's end speaks for all."""
    ends: dict[str, tuple[int, str]] = {}
    for path, line, why in state.run_ended:
        ends[path] = (line, why)
    for path, (line, why) in sorted(ends.items(), key=lambda kv: -_ranks_in(state, kv[0])):
        if not _mirrored(state, errors, path, line):
            continue
        own = [dataclasses.replace(f, evidence=_in(f, path)) for f in errors if _in(f, path)]
        view = dataclasses.replace(state)
        view.exceptions = type(state.exceptions)(
            (s for s in state.exceptions if s.path == path), maxlen=state.exceptions.maxlen
        )
        view.sources = [path]
        done = _completed_in(view, own, library, path, line, why)
        if done is not None:
            return dataclasses.replace(done, findings=tuple(errors))
    return None


def _ranks_in(state: ScanState, path: str) -> int:
    """How many ranks the exceptions printed in ``path`` name (the terminal's output, which
    interleaves every rank's lines, names more than one rank's own file)."""
    return len({s.rank for s in state.exceptions if s.path == path})


def _in(f: Finding, path: str) -> list[Evidence]:
    """The evidence of ``f`` in the source ``path``."""
    return [e for e in f.evidence if e.path == path]


def _mirrored(state: ScanState, errors: list[Finding], path: str, line: int) -> bool:
    """Whether every error finding and exception of the sources other than ``path`` is a copy
    of one ``path`` printed before ``line`` (1-based): a finding of a signature ``path``
    shows before the end, an exception caught (rootrank.analysis.survived.caught) whose rank,
    type and message ``path`` printed, caught, before the end. ``False`` when another source
    holds anything the end's source did not show (its end says nothing of that source)."""
    shown = {
        f.signature for f in errors if any(e.path == path and e.line < line for e in f.evidence)
    }
    if any(f.signature not in shown for f in errors):
        return False
    printed: dict[tuple[str, str], set[int | None]] = {}
    for s in state.exceptions:
        if s.path == path and s.exc.log_line < line and caught(s):
            rank = s.rank if s.rank is not None else s.local_rank
            printed.setdefault((s.exc.type, s.exc.message), set()).add(rank)
    for s in state.exceptions:
        if s.path == path:
            continue
        ranks = printed.get((s.exc.type, s.exc.message))
        if not caught(s) or ranks is None:
            return False
        if s.rank is not None and None not in ranks and s.rank not in ranks:
            return False
    return True


def tail_rank_ends(state: ScanState) -> tuple[str, int, str] | None:
    """``(path, line, why)`` of the run's end when the one source's kept tail
    (``ScanState.tails``) shows, for every rank the scan saw, a last line of that rank that is
    its own end-of-run record (rootrank.scan._RANK_END: ``rank 2: finished run r18b-13``),
    else ``None``. The scan notes such records only on the lines its gate chooses
    (``ScanState.run_ended``); an end record with no gate word (no step, no progress, no
    signature's literal) is read here, after the scan, from the tail alone, so the per-line
    path pays nothing for it. A line of no rank (an untagged ``Exception ignored in`` after
    the records) does not end a rank's lines."""
    if len(state.tails) != 1 or not state.ranks_seen:
        return None
    path, first, text = state.tails[0]
    if path != state.sources[0]:
        return None
    tagger = RankTagger(path=path)
    last: dict[int, tuple[int, str | None]] = {}
    for i, raw in enumerate(text.split("\n")):
        number = first + i
        tagged = tagger.tag(raw, number)
        rank = tagged.rank if tagged.rank is not None else tagged.local_rank
        body = tagged.text
        if rank is None and "rank" in body:
            rank = body_rank(body)
        if rank is None:
            continue
        m = _RANK_END.search(body)
        last[rank] = (number, body[m.start() :].strip()[:60] if m else None)
    if any(r not in last or last[r][1] is None for r in state.ranks_seen | set(last)):
        return None
    line = max(n for n, _ in last.values())
    shown = ", ".join(f"rank {r}: '{last[r][1]}'" for r in sorted(last)[:4])
    more = f" and {len(last) - 4} more" if len(last) > 4 else ""
    return path, line, f"every rank's last line is its own end-of-run record ({shown}{more})"


def set_aside(
    state: ScanState, findings: list[Finding], completed: Completed | None
) -> tuple[ScanState, list[Finding]]:
    """``state`` seen without its exceptions (a shallow copy: the scan is not changed) and
    ``findings`` without the error findings ``completed`` set aside; unchanged when it is
    ``None``."""
    if completed is None:
        return state, findings
    gone = {id(f) for f in completed.findings}
    view = dataclasses.replace(state)
    view.exceptions = type(state.exceptions)((), maxlen=state.exceptions.maxlen)
    return view, [f for f in findings if id(f) not in gone]


#: At most this many of the errors a completed run set aside are named in the reasoning.
MAX_SET_ASIDE_NAMED = 3


def set_aside_lines(groups: list[CollateralGroup], state: ScanState) -> list[str]:
    """One reasoning sentence per signature of the errors a completed run set aside
    (``groups``: the diagnosis's collateral groups of :attr:`Completed.findings`), at most
    :data:`MAX_SET_ASIDE_NAMED`: its title, where it first shows and on how many lines, the
    ranks that printed it, and, when every rank the log shows printed it, that every rank ran
    on without what failed there (a fallback path, a skipped feature: a run that ends well can
    still be slower or do less). Empty when there is none."""
    from rootrank.analysis.reasons import say

    seen = sorted(r for r in state.ranks_seen if r is not None)
    out: list[str] = []
    for group in [g for g in groups if g.evidence][:MAX_SET_ASIDE_NAMED]:
        first = group.evidence[0]
        every = len(seen) >= 2 and group.ranks == seen
        out.append(
            say(
                "completed_set_aside",
                title=group.title,
                where=f"{first.path}:{first.line}, {group.count} line(s)",
                ranks=f", ranks {', '.join(map(str, group.ranks))}" if group.ranks else "",
                every=(
                    ": every rank printed it and ran on, so every rank ran without what failed"
                    " there (a fallback path, a skipped feature): the run ended, possibly slower"
                    " or doing less; fix it as that entry says"
                    if every
                    else ": the run went on past it, possibly without what failed there (a"
                    " fallback path, a skipped feature)"
                ),
            )
        )
    return out
