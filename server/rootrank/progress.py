"""Training progress per rank: the step each rank reached and when, from what frameworks print.

One model for the live commands (``rootrank run`` / ``watch``, times are arrival times) and the
post-mortem engine (times are the log's own timestamps). Formats read (each from the
framework's source; the examples are what they print):

- ``megatron``: Megatron-LM ``training_log`` (``megatron/training/training.py``):
  `` [2024-05-01 10:00:00] iteration      120/    1000 | consumed samples: ...``;
- ``deepspeed``: the engine's ``log_dist`` step line ``step=120, skipped=3, lr=[...], mom=[...]``,
  its ThroughputTimer ``epoch=0/micro_step=480/global_step=120, RunningAvgSamplesPerSec=...``
  and the pipeline engine's ``steps: 120 loss: 2.31 iter time (s): ...``;
- ``torchtitan``: ``metrics.py`` ``step: 120  loss:  2.3100  grad_norm: ...  memory: ...`` (ANSI
  colours are removed by ingestion before this module sees the line);
- ``lightning``: Lightning's tqdm bar ``Epoch 3:  45%|████▌     | 45/100 [00:01<00:02, 25.00it/s, v_num=0]``
  (the step in the bar counts batches within the epoch; ``epoch * total + n`` is returned when the
  total is known);
- ``tqdm``: any other training bar as tqdm's ``format_meter`` draws it, with no description (Hugging
  Face Trainer's bar ``  12%|█▎        | 5/40 [00:00<00:00, 106.26it/s]``) or a training-like one
  (``Steps``, ``Training``, ``train``, ``Iteration``); bars of data preparation, evaluation or
  downloads (``Map``, ``Validation``, ``Evaluating``...) are not progress;
- ``plain``: ``step 120``, ``Step 120/1000``, ``iter 120: loss ...`` (nanoGPT), ``[step 120]``,
  ``global_step=120``, ``Epoch [2/10], Step [100/600]`` (the PyTorch tutorials' format, turned
  into a global step when both totals are printed).

Hugging Face Trainer's metric dicts (``{'loss': '6.369', 'grad_norm': ...}``) carry no step: the
metrics reader takes it from the bar, see :mod:`rootrank.metrics`.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from rootrank import lazy_regex, re_code
from rootrank.model import RankStep, TrainingProgress

#: Lower-case substrings one of which every progress or metric line contains: the scanner runs
#: :meth:`ProgressModel.observe` and the metrics reader only on lines holding one of them
#: (found with the same Aho-Corasick pass as the signatures' literals).
#: The nouns of the sizes a rank prints of what it built or loaded ("2,050 trainable
#: parameters", "12,000 samples", "24 layers"), each after the space that follows its count:
#: gate words here and the cheap test before :data:`rootrank.metrics._COUNTED` runs, which reads
#: them for the odd rank out (rootrank.analysis.initiator.odd_printed_value). Lower case: the
#: gate folds case; the test in metrics is given the line lower-cased.
COUNT_NOUNS: tuple[str, ...] = (
    " param",  # params, parameters
    " samples",
    " examples",
    " sequences",
    " layers",
    " blocks",
)

#: The keys of sizes printed before their value ("len(train_dataset) = 1000", "dataset length
#: 1000", "numel 4096", "vocab size 32000"; ``vocab_size=``, ``num_batches:`` are one word, read
#: like any key; not a watchdog's ``NumelIn=``, which the SeqNum/Numel strategies read):
#: gate words here and the cheap test before :data:`rootrank.metrics._SIZED` runs. Lower case.
SIZE_KEYS: tuple[str, ...] = ("len(", "length", "numel ", "numel:", "numel=", "vocab", "num_")

LITERALS: tuple[str, ...] = (
    "step",  # step N, global_step=, steps:, Skipping step (loss-scale overflow)
    "iter",  # iteration N/ M, iter N:
    "%|",  # a tqdm bar
    "loss",  # every loss print, loss scale, 'loss':
    "grad_norm",
    "grad norm",
    "learning_rate",
    "learning rate",
    "lr=",
    "lr:",
    "overflow",  # fp16 loss-scale overflow lines
    "throughput",
    "samples/sec",
    "tokens/sec",
    *COUNT_NOUNS,
    *SIZE_KEYS,
)

# Megatron-LM training_log: " iteration      120/    1000 |"
_MEGATRON = lazy_regex.compile(
    r"\biteration\s{1,12}(?P<n>\d{1,12})/\s{0,12}(?P<t>\d{1,12})\s{0,4}\|"
)
# DeepSpeed engine: "step=120, skipped=3, lr=[...]"; ThroughputTimer "global_step=120,";
# pipeline engine "steps: 120 loss: 2.3100 iter time (s): ..."
_DEEPSPEED = lazy_regex.compile(
    r"(?:^|\s|\])step=(?P<n>\d{1,12}), skipped=\d+"
    r"|\bmicro_step=\d+/global_step=(?P<g>\d{1,12}),"
    r"|^steps: (?P<p>\d{1,12}) loss: "
)
# torchtitan metrics.py: "step: 120  loss: ..." (also "step:  1  loss:")
_TITAN = lazy_regex.compile(r"(?:^|\s)step:\s{1,8}(?P<n>\d{1,12})\s{2}\S")
# tqdm format_meter: "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate}{postfix}]"
_BAR = lazy_regex.compile(
    r"^(?:(?P<desc>[^|\r\n]{0,120}?):\s{1,3})?\s{0,3}(?P<pct>\d{1,3})%\|[^|]{0,200}\|\s{0,3}"
    r"(?P<n>\d{1,12})/(?P<t>\d{1,12}|\?)\s\["
)
_LIGHTNING_DESC = lazy_regex.compile(r"^Epoch (?P<e>\d{1,9})$")
# Bar descriptions of a training loop (accelerate/diffusers "Steps", "Training", "train",
# "Iteration", "global step"); any other description is not training progress.
_TRAIN_DESC = lazy_regex.compile(
    r"(?i)^(?:steps?|training|train|iterations?|iters?|global[ _]steps?|optimization steps)$"
)
# PyTorch tutorial style: "Epoch [2/10], Step [100/600], Loss: 0.21"
_EPOCH_STEP = lazy_regex.compile(
    r"(?i)\bepoch\s{0,2}\[?\s{0,2}(?P<e>\d{1,9})\s{0,2}/\s{0,2}(?P<et>\d{1,9})\]?\W{1,4}step\s{0,2}\[?\s{0,2}"
    r"(?P<n>\d{1,12})\s{0,2}/\s{0,2}(?P<t>\d{1,12})\]?"
)
# Plain prints: the word first (after an optional "[" or "|"), or a key=value / key: value.
# (a JSON record's key is quoted: ``{"step": 7, "loss": 0.12}``, as ``json.dumps`` writes it)
_PLAIN = lazy_regex.compile(
    r"(?i)(?:^[\[|(]?\s{0,2}|[\s,|\[({])(?P<q>\"?)(?:global[_ ]step|step|iter(?:ation)?)(?P=q)"
    r"(?:\s{0,2}[=:#]\s{0,2}|\s{1,3})(?P<n>\d{1,12})(?:\s{0,2}/\s{0,2}(?P<t>\d{1,12}))?(?=$|[\s,;:|\])}])"
)
# Phrases in which "step N" is not the current step of the run.
_NOT_CURRENT = lazy_regex.compile(
    r"(?i)\b(?:warm-?up|max|total|num|every|until|decay|scheduler|save_steps|eval_steps)\b[^,;|]{0,20}$"
)


# Numbers in a line, for its shape: the line with every number cut out. Lines of one shape differ
# only in their numbers, so what a regex read from one (which number is the step, which the loss)
# holds for all: :func:`read_step` and :func:`rootrank.metrics.read_metrics` remember it per
# shape and read the next line of that shape by position (a log of ten million
# "step N loss X" lines costs one regex pass per line, not a dozen).
# (The standard library's engine: this simple pattern means the same there, and its split is
# ~30% faster on a step line -- it runs on every progress/metric line.)
_NUMBER_BODY = r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_NUMBER = re_code.compile(rf"([-+]?{_NUMBER_BODY})")
#: Shapes remembered (then the memory is dropped and refilled).
MAX_SHAPES = 512
_last_shape: list = ["", ("", [])]
#: A shape seen this many times gets a template (below); at most MAX_TEMPLATES are kept (the
#: latest), for shapes of at most TEMPLATE_NUMBERS numbers.
TEMPLATE_AFTER = 4
MAX_TEMPLATES = 4
TEMPLATE_NUMBERS = 64
_templates: tuple[tuple[re.Pattern[str], str], ...] = ()
_shape_seen: dict[str, int] = {}


def _template(parts: list[str]) -> re.Pattern[str]:
    """A pattern that fully matches exactly the texts that :data:`_NUMBER` splits into these
    literal parts (``parts[0::2]``) with other numbers, and captures those numbers.

    Each number is a lookahead capture consumed by its backreference, so it is taken greedily
    and never given back (as the split takes it). The literals hold no digit, so no number can
    start inside one, except at a sign that ends it: after a literal ending in ``-``/``+`` the
    number must carry its own sign (a digit there would make the split take the literal's sign).
    """
    out = [re.escape(parts[0])]
    for group, i in enumerate(range(1, len(parts), 2), start=1):
        sign = "[-+]" if parts[i - 1].endswith(("-", "+")) else "[-+]?"
        out.append(rf"(?=({sign}{_NUMBER_BODY}))\{group}")
        out.append(re.escape(parts[i + 1]))
    return re.compile("".join(out))


def shape(text: str) -> tuple[str, list[str]]:
    """``(key, numbers)``: the text with its numbers replaced by a marker, and the numbers as
    printed (signed, decimal or exponent). The last result is remembered (both readers ask for
    the same line in a row).

    A shape seen :data:`TEMPLATE_AFTER` times is learnt as a template (:func:`_template`): a
    line of that shape is then read by one match of it (~1.6 us on a step line, where the
    split and the key cost ~6 us); any other line is split as before. The result is the same.
    """
    global _templates
    if _last_shape[0] is text:
        return _last_shape[1]
    templates = _templates
    for i, (template, key) in enumerate(templates):
        m = template.fullmatch(text)
        if m is not None:
            got = (key, list(m.groups()))
            if i:  # the template of the last line first
                _templates = (templates[i], *templates[:i], *templates[i + 1 :])
            break
    else:
        parts = _NUMBER.split(text)
        got = ("\x00".join(parts[0::2]), parts[1::2])
        if 0 < len(got[1]) <= TEMPLATE_NUMBERS:
            seen = _shape_seen.get(got[0], 0) + 1
            if len(_shape_seen) >= MAX_SHAPES:
                _shape_seen.clear()
            _shape_seen[got[0]] = seen
            if seen == TEMPLATE_AFTER:
                _templates = ((_template(parts), got[0]), *templates[: MAX_TEMPLATES - 1])
    _last_shape[0], _last_shape[1] = text, got
    return got


def _unique_index(
    numbers: list[str], value: float, factor: float = 1.0, integer: bool = False
) -> int | None:
    """The index of the one number that reads as ``value`` (times ``factor``), or ``None`` when
    none or several do."""
    found = None
    for i, n in enumerate(numbers):
        if integer and not n.isdigit():
            continue
        try:
            v = float(n) * factor
        except ValueError:
            continue
        if v == value or (value != 0 and abs(v - value) <= 1e-9 * abs(value)):
            if found is not None:
                return None
            found = i
    return found


_STEP_PLANS: dict[str, tuple[str, int, int | None] | None] = {}
_NO_PLAN = ("", -1, None)


def _plan_step(text: str) -> tuple[int, int | None, str] | None:
    key, numbers = shape(text)
    plan = _STEP_PLANS.get(key, _NO_PLAN)
    if plan is None:
        return None
    if plan is not _NO_PLAN:
        kind, i, j = plan
        try:
            return int(numbers[i]), (int(numbers[j]) if j is not None else None), kind
        except (IndexError, ValueError):
            pass
    got = _read_step(text)
    if plan is _NO_PLAN:
        if len(_STEP_PLANS) >= MAX_SHAPES:
            _STEP_PLANS.clear()
        if got is None:
            _STEP_PLANS[key] = None
        else:
            step, total, kind = got
            at_step = _unique_index(numbers, step, integer=True)
            at_total = _unique_index(numbers, total, integer=True) if total is not None else None
            if (
                kind != "lightning"
                and at_step is not None
                and (total is None or (at_total is not None and at_total != at_step))
            ):
                _STEP_PLANS[key] = (kind, at_step, at_total)
            # else: no plan yet (a number repeated, or a step computed): try the next line
    return got


@dataclass(frozen=True, slots=True)
class Progress:
    """The latest step one rank reached.

    Attributes:
        rank: global rank, or ``None`` when the line names none.
        step: the step (iteration, global batch) the rank reported, as printed (0- or 1-based as
            the framework counts; Lightning's per-epoch count turned global when the total is known).
        total: the total the line printed (``1000`` of ``iteration 120/ 1000``), or ``None``.
        time: seconds since the epoch of that line (its timestamp, or its arrival when live), or
            ``None``.
        path: the source the line came from.
        line: its 1-based line number.
        kind: the format that printed it: ``"megatron"``, ``"deepspeed"``, ``"torchtitan"``,
            ``"lightning"``, ``"tqdm"`` or ``"plain"``.
    """

    rank: int | None
    step: int
    total: int | None
    time: float | None
    path: str
    line: int
    kind: str

    def rank_step(self) -> RankStep:
        """The contract's per-rank progress entry (``rootrank.diagnosis/1`` ``progress.ranks[]``)."""
        return RankStep(
            rank=self.rank, step=self.step, time=self.time, path=self.path, line=self.line
        )


def read_step(text: str) -> tuple[int, int | None, str] | None:
    """The step one line reports, as ``(step, total or None, kind)``, or ``None``.

    ``text`` is one line's body with its launcher rank prefix already removed (a logger header
    and timestamp in front are fine). ``kind`` is as in :class:`Progress`. Never raises.
    """
    if len(text) > 4096:
        text = text[:4096]
    return _plan_step(text)


def _read_step(text: str) -> tuple[int, int | None, str] | None:
    """:func:`read_step` by the regexes (no memory of shapes)."""
    if len(text) > 4096:
        text = text[:4096]
    low = text.lower() if "%|" not in text else ""
    if "%|" in text:
        m = _BAR.search(text)
        if m is None:
            return None
        total = None if m.group("t") == "?" else int(m.group("t"))
        n = int(m.group("n"))
        desc = (m.group("desc") or "").strip()
        if desc:
            lm = _LIGHTNING_DESC.match(desc)
            if lm:
                epoch = int(lm.group("e"))
                return (epoch * total + n if total else n), total, "lightning"
            # a description ends in the word before ": NN%|" (tqdm puts "desc: " first)
            if not _TRAIN_DESC.match(desc):
                return None
        return n, total, "tqdm"
    if "iteration" in low:
        m = _MEGATRON.search(text)
        if m:
            return int(m.group("n")), int(m.group("t")), "megatron"
    if "step" in low:
        m = _DEEPSPEED.search(text)
        if m:
            digits = m.group("n") or m.group("g") or m.group("p")
            return int(digits), None, "deepspeed"
        m = _TITAN.search(text)
        if m:
            return int(m.group("n")), None, "torchtitan"
        if "epoch" in low:
            m = _EPOCH_STEP.search(text)
            if m:
                e, n, t = int(m.group("e")), int(m.group("n")), int(m.group("t"))
                return max(e - 1, 0) * t + n, int(m.group("et")) * t, "plain"
    if "step" in low or "iter" in low:
        for m in _PLAIN.finditer(text):
            if _NOT_CURRENT.search(text, 0, m.start()):
                continue
            of = m.group("t")
            return int(m.group("n")), int(of) if of else None, "plain"
    return None


#: Distinct step increments, and transitions that broke a rank's usual one, kept per rank
#: (:meth:`ProgressModel.step_breaks`).
MAX_BREAKS = 16


class ProgressModel:
    """The last step per rank, fed one line at a time.

    Bars without a description are locked to one bar per rank (the one with the largest total):
    Hugging Face's evaluation bars, drawn while the training bar exists, are not progress.
    Memory: one :class:`Progress` per rank, one integer per rank and at most
    :data:`MAX_BREAKS` increments and breaks per rank.
    """

    def __init__(self) -> None:
        self._last: dict[int | None, Progress] = {}
        self._bar_total: dict[int | None, int] = {}
        #: Per rank, its step increments between consecutive progress lines of one format and
        #: source (not tqdm bars, which redraw): how often each was seen, and the running
        #: most common one (:meth:`step_breaks`).
        self._increments: dict[int | None, dict[int, int]] = {}
        self._usual: dict[int | None, int] = {}
        #: Per rank, the transitions whose increment was not the rank's usual one so far:
        #: ``(step before, step, 1-based line)``, at most :data:`MAX_BREAKS`.
        self._breaks: dict[int | None, list[tuple[int, int, int]]] = {}
        # Seconds between a rank's consecutive timed progress lines (the last 64).
        self._gaps: deque[float] = deque(maxlen=64)
        #: The ranks whose step went up between two progress lines of one kind and source.
        self._advanced: set[int | None] = set()

    def observe(
        self, text: str, *, rank: int | None, time: float | None, path: str, line: int
    ) -> Progress | None:
        """Read one line body (rank prefix removed; ``line`` 1-based); return the progress it
        shows (now the rank's last), or ``None`` when it shows none."""
        got = read_step(text)
        if got is None:
            return None
        step, total, kind = got
        if kind == "tqdm" and total is not None:
            locked = self._bar_total.get(rank)
            if locked is not None and total < locked:
                return None  # an evaluation bar under the training bar
            self._bar_total[rank] = total
        p = Progress(rank, step, total, time, path, line, kind)
        before = self._last.get(rank)
        if before is not None and before.kind == kind and before.path == path:
            if kind != "tqdm":
                self._see_increment(rank, before.step, step, line)
            if step > before.step:
                self._advanced.add(rank)
        if (
            before is not None
            and before.time is not None
            and time is not None
            and step > before.step
        ):
            self._gaps.append(time - before.time)
        self._last[rank] = p
        return p

    def _see_increment(self, rank: int | None, before: int, step: int, line: int) -> None:
        counts = self._increments.setdefault(rank, {})
        inc = step - before
        if inc not in counts and len(counts) >= MAX_BREAKS:
            return
        counts[inc] = counts.get(inc, 0) + 1
        usual = self._usual.get(rank)
        if usual is None or counts[inc] > counts.get(usual, 0):
            self._usual[rank] = usual = inc
        if inc != usual:
            breaks = self._breaks.setdefault(rank, [])
            if len(breaks) < MAX_BREAKS:
                breaks.append((before, step, line))

    def step_breaks(self) -> dict[int | None, tuple[int, int, list[tuple[int, int, int]]]]:
        """Per rank: ``(its usual step increment, how many transitions had it, the transitions
        that broke it: [(step before, step, 1-based line), ...])``. A rank that printed every
        step has increment 1 and no breaks; one that skipped step 6 has the break ``(5, 7,
        line)``. Consecutive lines of one format and source only (tqdm bars excluded)."""
        return {
            r: (self._usual[r], counts[self._usual[r]], list(self._breaks.get(r, ())))
            for r, counts in self._increments.items()
            if r in self._usual
        }

    def forget(self, ranks: set[int]) -> None:
        """Drop the progress of ``ranks`` (ranks of another job of the same file)."""
        for r in ranks:
            self._last.pop(r, None)
            self._bar_total.pop(r, None)
            self._increments.pop(r, None)
            self._usual.pop(r, None)
            self._breaks.pop(r, None)
            self._advanced.discard(r)

    def typical_gap(self) -> float | None:
        """The median time (seconds) between a rank's consecutive progress lines, over the
        last 64 seen; ``None`` without two timed progress lines of one rank."""
        if not self._gaps:
            return None
        ordered = sorted(self._gaps)
        return ordered[len(ordered) // 2]

    def advanced(self, rank: int | None) -> bool:
        """Whether ``rank``'s step went up between two of its progress lines of one kind and
        source (a run that trains, not one repeated or lone progress line)."""
        return rank in self._advanced

    def last(self) -> dict[int | None, Progress]:
        """The last progress per rank (``None`` for lines that named no rank)."""
        return dict(self._last)

    def report(self, end_time: float | None) -> TrainingProgress | None:
        """The contract's ``progress`` object, or ``None`` when no progress was seen.

        ``end_time`` (seconds since the epoch) is the time of the log's last timestamped line;
        ``silent_seconds`` is ``end_time`` minus the latest progress time (``None`` when either is
        unknown, never negative). ``behind`` lists the ranks whose last step is below every other
        rank's (with at least two ranks known).
        """
        if not self._last:
            return None
        entries = sorted(self._last.values(), key=lambda p: (p.rank is not None, p.rank or 0))
        times = [p.time for p in entries if p.time is not None]
        silent = None
        if end_time is not None and times:
            silent = max(0.0, end_time - max(times))
        ranked = {p.rank: p.step for p in entries if p.rank is not None}
        behind = []
        if len(ranked) >= 2:
            for r, s in ranked.items():
                if all(s < o for q, o in ranked.items() if q != r):
                    behind.append(r)
        return TrainingProgress(
            ranks=[p.rank_step() for p in entries],
            end_time=end_time,
            silent_seconds=silent,
            behind=sorted(behind),
        )


# --- Did the process that raised go on training? ---------------------------------------------
#
# A process that dies of an exception prints no further step; one that caught it (a retried OOM,
# a logger's failed upload, a traceback logged at warning level) may. Printing *a* progress line
# is no proof: a tqdm bar is redrawn at the same step as the exception closes it, a resumed loop
# prints a step it had already passed. The proof is an advance: a step greater than every step
# that process printed before the exception in the same format (one counter: a tqdm bar and a
# "step N" log line may count different things), in the same section of the log (the same run
# and attempt). :class:`AdvanceWatch` gathers it while the scan reads, one :class:`Advance` per
# exception, in bounded memory.

#: Who printed a line, as far as one source can tell: ``(path, host, global rank, local rank)``
#: (the local rank only when the line names no global rank). Lines with equal keys are read as
#: one process's.
ProcessKey = tuple[str, str | None, int | None, int | None]


@dataclass(slots=True)
class Advance:
    """Whether the process that raised an exception advanced past its step after it.

    Attributes:
        key: the process that raised it (:data:`ProcessKey`).
        line: the exception's 1-based line in its source.
        before: the highest step the process printed before ``line`` in the same section of the
            log, per format (:attr:`Progress.kind`); empty when it printed none there (or the
            scan could not tell: then nothing counts as an advance).
        after: the first progress of the same process after ``line``, in the same section,
            whose step is greater than ``before`` of its format; ``None`` while none is seen.
    """

    key: ProcessKey
    line: int
    before: dict[str, int]
    after: Progress | None = None

    def passes(self, p: Progress) -> bool:
        """Whether ``p`` (a later line of the same process) is past every earlier step of its
        format."""
        top = self.before.get(p.kind)
        return top is not None and p.line > self.line and p.step > top


class AdvanceWatch:
    """The highest step per process (:data:`ProcessKey`) and format since its section began,
    and the exceptions waiting to see their process advance (:class:`Advance`).

    The scanner calls :meth:`see` for every progress line it reads, :meth:`watch` for every
    exception, and :meth:`new_section` where a later run or attempt starts (what was printed
    before no longer counts, and the earlier exceptions stop watching). Memory: per process,
    one integer per format, the last :data:`RECENT` progress lines and at most
    :data:`MAX_WATCHES` exceptions.
    """

    #: Progress lines kept per process, for an exception the reader reports a few lines late
    #: (its message went on): steps on lines before the exception's count as "before" it.
    RECENT = 16
    MAX_WATCHES = 64

    def __init__(self) -> None:
        # the highest step per format among the lines that left the recent ones
        self._peak: dict[ProcessKey, dict[str, int]] = {}
        self._recent: dict[ProcessKey, deque[Progress]] = {}
        self._watches: dict[ProcessKey, deque[Advance]] = {}

    def see(self, key: ProcessKey, p: Progress) -> None:
        """One progress line of process ``key`` (read in order within its source)."""
        recent = self._recent.get(key)
        if recent is None:
            recent = self._recent[key] = deque(maxlen=self.RECENT)
        if len(recent) == self.RECENT:
            oldest = recent[0]
            peak = self._peak.setdefault(key, {})
            if oldest.step > peak.get(oldest.kind, -1):
                peak[oldest.kind] = oldest.step
        recent.append(p)
        watches = self._watches.get(key)
        if not watches:
            return
        for a in watches:
            if a.after is None and a.passes(p):
                a.after = p
        while watches and watches[0].after is not None:
            watches.popleft()  # decided: nothing later changes it

    def watch(self, key: ProcessKey, line: int) -> Advance:
        """An exception of process ``key`` at 1-based ``line``: its :class:`Advance`, filled
        in as the scan goes on (progress already read on later lines counts too)."""
        recent = self._recent.get(key, ())
        if recent and recent[0].line >= line and key in self._peak:
            return Advance(key, line, {})  # lines between it and the recent ones were dropped
        before = dict(self._peak.get(key, {}))
        for p in recent:
            if p.line < line and p.step > before.get(p.kind, -1):
                before[p.kind] = p.step
        a = Advance(key, line, before)
        if not before:
            return a
        a.after = next((p for p in recent if a.passes(p)), None)
        if a.after is None:
            watches = self._watches.get(key)
            if watches is None:
                watches = self._watches[key] = deque(maxlen=self.MAX_WATCHES)
            watches.append(a)
        return a

    def new_section(self, path: str | None = None) -> None:
        """A later run or attempt starts (in ``path``, or in every source when ``None``): the
        steps printed so far are forgotten and the exceptions before stop watching."""
        for store in (self._peak, self._recent, self._watches):
            for key in [k for k in store if path is None or k[0] == path]:
                del store[key]
