"""The job's last stage started again and printed nothing more until a stop from outside ended it.

Mechanism: a job script often runs its program more than once (a benchmark sweep over node
counts, a train-then-eval pipeline, a resubmission appending to one output file). Each start
prints the same start-up lines (``I am 2 of 4 on <host>``, ``world size 8``, the command it
runs) and then, within seconds, the program's work: steps, timings, metrics. When the last
start printed its start-up lines on every process and then nothing at all until the scheduler
or a person stopped the job (PBS's walltime as PALS's ``rank 0 died from signal 15``, Slurm's
``CANCELLED AT``), the processes were waiting, not working: in the first collective or in
the rendezvous, for a transfer that never completed (the inter-node transport of that stage's
layout: a network plugin, the fabric's settings). The stop is only how the hung stage ended
(held-out r22a case 07: the 2 nodes x 2 ranks stage of a collective benchmark started on
every rank and printed nothing until the walltime; the 1x4 and 2x1 stages had finished).

Needed, all of: one source, a stop from outside (:func:`rootrank.analysis.events.outside_stops`)
that is the first finding of its kind; the lines just before it (blank lines aside) are all,
digits masked, lines the job printed at its first start, before its first work line (a step
or a metric: :func:`rootrank.progress.read_step`, :func:`rootrank.metrics.read_metrics`),
and a work line came after that first start. Read from the source's kept head and tail
(``ScanState.heads``/``tails``), every line, not only those the scan's gate chose. How long
the stage was silent comes from the timestamps of its last start line and of the stop, when
both have one.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.events import order_before_next, outside_stops
from rootrank.analysis.reasons import fmt_span
from rootrank.metrics import read_metrics
from rootrank.model import Evidence, Finding
from rootrank.progress import read_step
from rootrank.ranks import RankTagger
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (class collective-timeout, ``detector: analysis``).
SIGNATURE = "stage-silent-after-start"
#: Characters of a quoted line.
MAX_QUOTE = 160
_DIGITS = lazy_regex.compile(r"\d+")


def _template(line: str) -> str:
    """``line`` stripped, with every digit run replaced by ``#`` (ranks, hosts' numbers, pids)."""
    return _DIGITS.sub("#", line.strip())


def _works(line: str) -> bool:
    """Whether ``line`` reports the program's work: a step or a metric value."""
    return read_step(line) is not None or bool(read_metrics(line))


def _start_templates(head: str) -> tuple[set[str], int]:
    """The templates (:func:`_template`) of the lines ``head`` (a source's first lines) holds
    before its first work line (:func:`_works`), and that line's 0-based index in ``head``
    (-1 when no line of it works)."""
    start: set[str] = set()
    for i, line in enumerate(head.split("\n")):
        if not line.strip():
            continue
        if _works(line):
            return start, i
        start.add(_template(line))
    return start, -1


def silent_stage_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """At most one finding of :data:`SIGNATURE`, no rank (every process of the stage waited
    alike), at the last start-up line before the stop; empty when a condition of the module's
    description fails or the signature is not in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None or len(state.sources) != 1 or not state.heads or not state.tails:
        return []
    stops = outside_stops(library, findings)
    if not stops:
        return []
    stop = min(stops, key=lambda f: f.order)
    if not stop.evidence:
        return []
    path, stop_line = stop.evidence[0].path, stop.evidence[0].line
    head_path, head_first, head = state.heads[0]
    tail_path, tail_first, tail = state.tails[0]
    if head_path != path or tail_path != path or not tail_first <= stop_line:
        return []
    start, work = _start_templates(head)
    if not start or work < 0:
        return []
    lines = tail.split("\n")
    stretch: list[tuple[int, str]] = []  # (1-based line, text), last first
    before = ""
    for i in range(min(stop_line - tail_first, len(lines)) - 1, -1, -1):
        text = lines[i]
        if not text.strip():
            continue
        if _template(text) not in start:
            before = text
            break
        stretch.append((tail_first + i, text))
    else:
        return []  # the tail holds no line before the start-up lines: no earlier work seen
    if not stretch or _works(before) or stretch[-1][0] <= head_first + work:
        return []  # (a start-up line at or before the first work: no start after work)
    last_line, last_text = stretch[0]
    tagger = RankTagger(path=path)
    started = tagger.tag(last_text, last_line).time
    silence = (
        f"for {fmt_span(stop.time - started)}"
        if started is not None and stop.time is not None and stop.time >= started
        else "(for how long, the log cannot tell: it has no timestamps)"
    )
    first_line, first_text = stretch[-1]
    return [
        Finding.of(
            sig,
            rank=None,
            host=None,
            time=started,
            order=order_before_next(findings, path, last_line),
            evidence=[
                Evidence(path, last_line, last_text),
                Evidence(path, first_line, first_text),
            ],
            captures={
                "stage": (before.strip() or first_text.strip())[:MAX_QUOTE],
                "started": last_text.strip()[:MAX_QUOTE],
                "lines": str(len(stretch)),
                "silence": silence,
                "stopped_by": stop.title,
            },
        )
    ]
