"""Training curves: metric series per rank read from the log, and the onsets where training went wrong.

What is read (one line at a time, the rank prefix already removed):

- Hugging Face Trainer's dicts ``{'loss': '6.369', 'grad_norm': '5.263', 'learning_rate': '0.009',
  'epoch': '0.1562'}`` (values quoted since transformers 5, bare before); they carry no step: the
  step is the one the Trainer's bar shows when it is redrawn right after the dict (tqdm's
  ``write`` redraws the bar), i.e. the next progress line of the rank. A dict that names its own
  ``step`` / ``global_step`` takes that step. When no bar follows (``python train.py > train.log``
  sends tqdm to the terminal's stderr; ``disable_tqdm=True``), a dict's step is its ordinal: the
  number of training metric lines (not ``eval_``/``test_``/``predict_``/``val_`` only) the rank has
  printed since its last bar, added to that bar's step (1, 2, 3... when the log shows no bar). The
  Trainer logs every ``logging_steps``, so the ordinal counts logged steps, not optimizer steps
  (``epoch`` is not used: it gives the step only with the unknown steps per epoch);
- Megatron-LM's ``|``-separated ``training_log`` (``lm loss: 1.051E+01 | loss scale: 1.0 | grad norm: 12.1``);
- torchtitan's ``step: 1  loss: 12.2265  grad_norm: 4.1  memory: 10.12GiB(10.65%)  tps: 562``;
- tqdm / Lightning postfixes (``loss=2.310, lr=0.0001``), DeepSpeed's ``step=10, skipped=2, lr=[...]``,
  ``CurrSamplesPerSec=..., MemAllocated=1.2GB``, and its / Apex's / Megatron's fp16 overflow lines
  (``Attempted loss scale: 65536, reducing to 32768``, ``reducing loss scale to 32768.0``);
- plain ``key=value`` / ``key: value`` prints, and ``key value`` for metric words (nanoGPT's
  ``iter 100: loss 4.1234, time 30.12ms``).

Names are normalised: ``loss``, ``grad_norm``, ``loss_scale``, ``lr``, ``throughput``,
``step_time`` (seconds), ``memory`` (GiB); any other key keeps its own lower-case name. The
metrics of an epoch's summary line (``[Epoch 8] Loss: 1314.3, Epoch Time: 444.6s``: no step of
its own) get :data:`EPOCH_SUFFIX` (``loss_per_epoch``): an epoch's aggregate is not a step's value. A series is
reported when it has at least :data:`MIN_POINTS` points.

Memory is bounded whatever the log's length: at most :data:`MAX_SERIES` series, each kept as at
most :data:`MAX_BUCKETS` buckets (a bucket keeps its lowest, highest and first non-finite point;
two neighbours merge when the buckets run out), and constant-size detector state per series.

Onsets (kind, the signature id under ``signatures/training/``):

- ``metric-nonfinite``: the first NaN/Inf loss (or perplexity) of a rank;
- ``loss-spike``: a loss far above its rolling median (more than :data:`SPIKE_Z` robust deviations
  -- 1.4826 x MAD -- and more than :data:`SPIKE_RATIO` x the median), after :data:`MIN_HISTORY` points;
- ``grad-norm-explosion``: a finite gradient norm :data:`EXPLOSION_RATIO` x its rolling median and
  :data:`SPIKE_Z` robust deviations above it;
- ``loss-scale-collapse``: the fp16 loss scale fell to 1 or less, or, once settled, fell
  :data:`COLLAPSE_FACTOR` x in one run of halvings; or :data:`SKIP_RUN` logged gradient norms in
  a row were non-finite (every step skipped). Warm-up halvings (from 2^16 or DeepSpeed's 2^32
  down to where the gradients fit) stay silent;
- ``resume-divergence``: a spike, explosion or non-finite value within :data:`RESUME_POINTS` points
  after the run resumed (the step went back, or a "resuming from checkpoint" line);
- ``straggler-rank``: one rank's throughput, compared with the other ranks' median at the same
  step, below :data:`STRAGGLER_RATIO` of it (or its step time above 1/that) in the median of
  :data:`SUSTAIN` logged steps;
- ``training-slowdown``: every rank's throughput (the median of :data:`SUSTAIN` logged steps)
  fell below :data:`SLOWDOWN_RATIO` x its own early baseline (or its step time above 1/that), and
  had not come back to it (a slow stretch followed by :data:`SUSTAIN` steps at the early pace
  passed and is not reported).

A pace is judged on a median of several steps because a shared machine's single steps vary by
several times (measured on the scenario runs: 2,700 to 22,000 samples/s within ten steps).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding, MetricOnset, MetricSeries
from rootrank.progress import COUNT_NOUNS, MAX_SHAPES, SIZE_KEYS, Progress, _unique_index, shape

#: Points a series needs before it is reported.
MIN_POINTS = 3
#: Series kept per scan (later new names are ignored).
MAX_SERIES = 64
#: Buckets kept per series (each yields up to 3 points: <= 480 points, plus the last and onsets).
MAX_BUCKETS = 160
#: Points emitted per series at most (the contract's bound).
MAX_POINTS = 500
#: Rolling window (points) for the median and MAD of the loss and grad norm.
WINDOW = 25
#: Values the window may change by before its median and spread are recomputed for the cheap test.
STATS_EVERY = 4
#: Steps remembered per series where a value passed half the spike thresholds.
MAX_ELEVATED = 256
#: Points of history before a spike can be called.
MIN_HISTORY = 8
SPIKE_Z = 10.0
SPIKE_RATIO = 2.0
EXPLOSION_RATIO = 10.0
COLLAPSE_FACTOR = 2.0**8
#: Non-finite gradient norms in a row that mean every step is skipped (from the series' first
#: point, warm-up skips from an initial 2^32 scale can reach 32: then :data:`WARMUP_SKIP_RUN`).
SKIP_RUN = 10
WARMUP_SKIP_RUN = 40
RESUME_POINTS = 10
STRAGGLER_RATIO = 0.6
SLOWDOWN_RATIO = 0.5
#: Logged steps over which a pace (throughput or step time) is judged: its median must be slow.
SUSTAIN = 8
#: Steps of per-step values kept for comparing the ranks' pace at the same step.
PACE_STEPS = 64
#: Points skipped at the start of a throughput series (warm-up, compilation) before its baseline.
WARMUP_POINTS = 3
BASELINE_POINTS = 8
#: A step that goes back to at most this (or to 1% of the step before) starts another run;
#: a resume goes back to a checkpoint's step.
NEW_RUN_STEP = 10

_NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"
_END = r"(?=$|[\s,;|)\]}'\"/(])"
_UNIT = r"(?P<u>ms|s|GiB|GB|MiB|MB|%)?"
_DICT_PAIR = lazy_regex.compile(
    r"""['"](?P<k>[^'"]{1,60})['"]\s*:\s*['"]?(?P<v>""" + _NUM + r""")['"]?""" + _END
)
_KV = lazy_regex.compile(
    r"(?<![\w./-])(?P<k>[A-Za-z_][\w./-]{0,40}?)\s{0,3}(?P<sep>[=:])\s{0,3}\[?\s{0,2}(?P<v>"
    + _NUM
    + r")"
    + _UNIT
    + _END
)
# A source file's name: "name.py:123" is a code location (Hugging Face's logging format
# "[INFO|trainer.py:2128] ... >> ...", a warning's "train.py:40:"), never a metric named name.py.
_SOURCE_FILE = lazy_regex.compile(r"\.(?:py|pyx|cc|cpp|cxx|cu|c|h|hpp|rs|go|js|ts)$")
# A memory address (8+ hex digits after 0x): a line that prints one describes an operation on
# memory (an RDMA transfer's "source_addr: 0x7fd2fc000800, ... dest_rkey: 2136660, retry_cnt: 0",
# a fault's address), not a training step; its key=value fields are ids and counters.
_ADDRESS = lazy_regex.compile(r"\b0x[0-9a-fA-F]{8,16}\b")
# "key value" for metric words only (nanoGPT's "loss 4.1234, time 30.12ms, mfu 12.34%"), a
# loss named by a word before it included ("local_loss 0.9333 mean_loss 0.9846", "val_loss 2.01")
_SPACED = lazy_regex.compile(
    r"(?i)(?<![\w./-])(?P<k>(?:[a-z][a-z0-9]{0,20}_)?loss|lm loss|lr|grad[_ ]norm|gnorm|scale|loss scale|time|dt|mfu|tps|ppl|mem(?:ory)?)"
    r"\s{1,3}(?P<v>" + _NUM + r")" + _UNIT + _END
)
# "<size word> <value>" with or without "=" / ":" for the sizes a rank prints of what it built or
# loaded where the key is not one word (_KV reads "vocab_size=32000"): "len(train_dataset) = 1000",
# "dataset length 1000", "numel 4096", "vocab size 32000". A value every rank should print alike
# (rootrank.analysis.initiator.odd_printed_value reads the rank that differs).
_SIZED = lazy_regex.compile(
    r"(?i)(?<![\w./-])(?P<k>len\([\w.\[\]'\"]{1,40}\)|vocab(?:ulary)?[ _]size|length|numel)"
    r"\s{0,3}[=:]?\s{0,3}(?P<v>\d{1,3}(?:,\d{3})+(?!\d)|\d+)" + _END
)
#: Series names of the sizes :data:`_SIZED` and :data:`_COUNTED` read (``len(x)``, ``length``,
#: ``numel``, ``vocab_size``, ``trainable_parameters``, ``samples``, ...): constants a rank
#: prints once, for the odd rank out, never a training curve (:meth:`MetricsReader.report`
#: leaves them out).
_SIZE_NAME = lazy_regex.compile(
    r"len\(.*\)|length|numel|vocab(?:ulary)?_size|(?:trainable_|total_)?param(?:eter)?s"
    r"|samples|examples|sequences|layers|blocks"
)
# "<count> <noun>" for the sizes a rank prints of what it built or loaded ("model built, 2,050
# trainable parameters", "loaded 12,000 samples", "24 layers"): a value that should be the same
# on every rank (rootrank.analysis.initiator.odd_printed_value reads the rank that differs).
_COUNTED = lazy_regex.compile(
    r"(?i)(?<![\w.,/-])(?P<v>\d{1,3}(?:,\d{3})+(?!\d)|\d+)\s(?P<k>(?:trainable\s|total\s)?"
    r"param(?:eter)?s|samples|examples|sequences|layers|blocks)\b"
)
_MEGATRON_PART = lazy_regex.compile(
    r"^\s*(?P<k>[A-Za-z][\w /().-]{0,60}?)\s*:?\s+(?P<v>" + _NUM + r")\s*$"
)
_OVERFLOW = lazy_regex.compile(
    r"Attempted loss scale: (?P<a>[\d.eE+-]+), reducing to (?P<v>[\d.eE+-]+)"
    r"|reducing loss scale to (?P<w>[\d.eE+-]+)"
)
_DICT_STEP = lazy_regex.compile(
    r"""['"](?:global_)?step['"]\s*:\s*['"]?(?P<s>\d{1,12})['"]?""" + _END
)
#: Metric-name prefixes of evaluation lines: they do not count as a logged training step.
_EVAL_PREFIXES = ("eval_", "eval/", "test_", "test/", "predict_", "val_", "val/", "validation_")
#: The series name of a process's host (CPU) memory, in GiB: its resident set size as a script
#: prints it (WeNet's ``rank 0 RSS MEM USE: 5.11G``, ``rss 312MB``, ``host_mem=3.2GB``,
#: ``cpu memory: 12.5 GiB``), read by :data:`_HOST_MEMORY` (device memory is ``memory``).
HOST_MEMORY = "host_memory"
# a host-memory field: the word (not part of a longer one: the kernel's "anon-rss:" is not
# the process's own print), optional "mem"/"use" words, then a value with its unit
_HOST_MEMORY = lazy_regex.compile(
    r"(?i)(?<![\w./-])(?:rss|resident(?:[ _]set)?|host[ _]mem(?:ory)?|cpu[ _]mem(?:ory)?|ram)"
    r"(?:[ _]mem(?:ory)?)?(?:[ _](?:use|used|usage))?\s{0,3}[=:]?\s{0,3}"
    r"(?P<v>\d+(?:\.\d+)?)\s?(?P<u>[KMGT])(?:i?B)?(?![\w])"
)
#: GiB per unit of :data:`_HOST_MEMORY`.
_HOST_UNITS = {"K": 1.0 / 1024**2, "M": 1.0 / 1024, "G": 1.0, "T": 1024.0}
_RESUME = lazy_regex.compile(
    r"(?i)\b(?:resum(?:e|ed|ing)\s(?:training|from)|continuing training from|loaded checkpoint|"
    r"loading checkpoint (?:from|at)|restored from checkpoint)"
)

_ALIASES = {
    "loss": (
        "loss",
        "lm_loss",
        "train_loss",
        "training_loss",
        "train/loss",
        "total_loss",
        "step_loss",
        "avg_loss",
        "train/lm_loss",
        "loss_train",
    ),
    "grad_norm": (
        "grad_norm",
        "gradient_norm",
        "grad_norm_total",
        "gnorm",
        "train/grad_norm",
        "total_norm",
    ),
    "loss_scale": ("loss_scale", "scale", "cur_scale", "loss_scaler", "grad_scale", "scaler_scale"),
    "lr": ("lr", "learning_rate", "train/learning_rate", "train/lr"),
    "throughput": (
        "tps",
        "tokens/sec",
        "tokens_per_sec",
        "tokens_per_second",
        "samples/sec",
        "samples_per_sec",
        "samples_per_second",
        "throughput",
        "currsamplespersec",
        "tok/s",
        "tokens/s",
        "throughput_(token/sec/gpu)",
        "throughput_per_gpu_(tflop/s/gpu)",
        "it/s",
        "samples/s",
    ),
    "step_time": (
        "elapsed_time_per_iteration_(ms)",
        "step_time",
        "iter_time_(s)",
        "time",
        "dt",
        "batch_time",
        "iteration_time",
        "time_per_step",
        "elapsed_time_per_step",
    ),
    "memory": (
        "memory",
        "mem",
        "memallocated",
        "max_memory_allocated",
        "memory_allocated",
        "max_mem",
        "maxmemallocated",
        "mem_gb",
        "max_reserved",
    ),
}
_CANON = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
#: Keys that count or identify, never a curve.
_SKIP = frozenset(
    "epoch step steps global_step iter iteration iterations micro_step v_num skipped rank local_rank world_size "
    "consumed_samples global_batch_size batch_size number_of_skipped_iterations number_of_nan_iterations "
    "train_runtime total_flos pid seed mom runningavgsamplespersec consumed_tokens skipped_samples "
    "elapsed remaining it num_zeros".split()
)
_LOSSY = ("loss", "ppl", "perplexity")


def _value(text: str) -> float:
    t = text.replace(",", "").lower()
    if "nan" in t:
        return math.nan
    if "inf" in t:
        return -math.inf if t.startswith("-") else math.inf
    return float(t)


@lru_cache(maxsize=4096)
def _name(key: str) -> str | None:
    """The series name of a printed key (``None``: a counter or an id, not a curve)."""
    k = "_".join(key.lower().split())
    if not k or k in _SKIP:
        return None
    return _CANON.get(k, k)


def _canonical(key: str, unit: str | None, value: float) -> tuple[str, float] | None:
    name = _name(key)
    if name is None:
        return None
    k = key
    if name == "step_time" and ("ms" in k or unit == "ms"):
        value = value / 1000.0
    elif name == "memory" and unit in ("MiB", "MB"):
        value = value / 1024.0
    return name, value


_PLANS: dict[str, tuple[tuple[str, int, float], ...] | None] = {}
_NO_PLAN: tuple = ()
_FACTORS = (1.0, 1e-3, 1.0 / 1024.0)


def read_metrics(text: str) -> list[tuple[str, float]]:
    """The numeric metrics one line prints, as ``(name, value)`` in line order, each name once.

    ``text`` is one line body (rank prefix removed). Values may be NaN or +/-Inf. Names are
    normalised as the module docstring says. A Trainer end-of-run summary (the ``train_runtime``
    dict, ``TrainOutput(global_step=..., training_loss=<run average>, ...)``) is not a training
    point and yields nothing, nor is a line that prints a memory address (an RDMA transfer's
    failed slice: ``dest_rkey``/``retry_cnt`` are ids and counters). Never raises.

    What the regexes read from a line is remembered for its shape (:func:`rootrank.progress.shape`):
    the next line of the same shape is read by the positions of its numbers.
    """
    if len(text) > 4096:
        text = text[:4096]
    key, numbers = shape(text)
    plan = _PLANS.get(key, _NO_PLAN)
    if plan is None:
        return []
    if plan is not _NO_PLAN:
        try:
            return [(name, float(numbers[i]) * f) for name, i, f in plan]
        except (IndexError, ValueError):
            pass
    got = _read_metrics(text)
    if plan is _NO_PLAN:
        if len(_PLANS) >= MAX_SHAPES:
            _PLANS.clear()
        if not got:
            _PLANS[key] = None
        else:
            built: list[tuple[str, int, float]] = []
            for name, value in got:
                idx = next(
                    (
                        (i, f)
                        for f in _FACTORS
                        if (i := _unique_index(numbers, value, f)) is not None
                    ),
                    None,
                )
                if idx is None or any(idx[0] == b[1] for b in built):
                    break  # a repeated or computed number: try again on the next line of this shape
                built.append((name, idx[0], idx[1]))
            else:
                _PLANS[key] = tuple(built)
    return got


def _read_metrics(text: str) -> list[tuple[str, float]]:
    """:func:`read_metrics` by the regexes (no memory of shapes)."""
    out: dict[str, float] = {}

    def put(key: str, raw: str, unit: str | None = None) -> None:
        try:
            v = _value(raw)
        except ValueError:
            return
        got = _canonical(key, unit, v)
        if got is not None and got[0] not in out:
            out[got[0]] = got[1]

    if "train_runtime" in text or "TrainOutput(" in text:
        return []  # the Trainer's end-of-run summary (run averages, not a step's values)
    if "0x" in text and _ADDRESS.search(text):
        return []  # an operation on memory (a transfer, a fault), not a training step
    stripped = text.lstrip()
    if stripped.startswith("{") and ("':" in text or '":' in text):
        for pair in _DICT_PAIR.finditer(text):
            put(pair.group("k"), pair.group("v"))
        return list(out.items())
    if "reducing" in text:
        m = _OVERFLOW.search(text)
        if m:
            put("loss_scale", m.group("v") or m.group("w"))
            return list(out.items())
    if " | " in text and "iteration" in text:
        for part in text.split("|")[1:]:
            m = _MEGATRON_PART.match(part)
            if m:
                put(m.group("k"), m.group("v"))
        return list(out.items())
    low = text.lower()
    if "rss" in low or "mem" in low or "ram" in low or "resident" in low:
        m = _HOST_MEMORY.search(text)
        if m is not None:
            gib = float(m.group("v")) * _HOST_UNITS[m.group("u").upper()]
            out[HOST_MEMORY] = gib
            text = text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
    for m in _KV.finditer(text):
        if m.group("sep") == ":" and _SOURCE_FILE.search(m.group("k")):
            continue  # a logger's location ("[INFO|trainer.py:2128]"), not a metric
        put(_qualified(text, m.start("k"), m.group("k")), m.group("v"), m.group("u"))
    for m in _SPACED.finditer(text):
        put(_qualified(text, m.start("k"), m.group("k")), m.group("v"), m.group("u"))
    lowered = text.lower()
    if any(w in lowered for w in COUNT_NOUNS):
        for m in _COUNTED.finditer(text):
            put(m.group("k"), m.group("v"))
    if any(w in lowered for w in SIZE_KEYS):
        for m in _SIZED.finditer(text):
            put(m.group("k"), m.group("v"))
    return list(out.items())


#: The suffix of the series of a metric printed on an epoch's summary line
#: (``loss_per_epoch``): its own curve, never merged with the per-step values of the same name.
EPOCH_SUFFIX = "_per_epoch"
# "[Epoch 8] Loss: ...", "Epoch 3 | train loss ...", "epoch 4, loss ...", "Epoch: 3 Train Loss: ...":
# a line labelled with an epoch number (after at most a short prefix such as a bracket, a
# logger's level or "Train"), read only when no step of its own was found on it
_EPOCH_LABEL = lazy_regex.compile(
    r"(?i)^(?:[^\w\n]{0,4}|.{0,48}?[\s\]|-]\s?)epoch\b\s*[:#\[]?\s*\d+(?:\s*/\s*\d+)?\s*\]?\s*(?:[:|,;-]|\s)"
)
# what makes a line one step's (or one batch's) print, not an epoch's summary: a step or batch
# counter ("it 12"), a bracketed position ("[950/7330]"), a tqdm meter ("57it [00:05, 10.31it/s, ...]", "1.48s/it"), a "[640/60000 (1%)]" position
_STEP_MARK = lazy_regex.compile(
    r"(?i)\b(?:step|steps|iter|iters|iteration|batch)\b|\bit\s?[:=#]?\s?\d|\d\s?it\s\[|it/s\b|s/it\b|%\|"
    r"|\d+\s*/\s*\d+\s*\(\s*\d+(?:\.\d+)?%"
    # a bracket holding only a position, mmcv/mmengine's iteration log "Epoch [1][950/7330]"
    r"|\[\s*\d+\s*/\s*\d+\s*\]"
)


def epoch_summary(text: str) -> bool:
    """Whether ``text`` (one line body) is an epoch's summary: labelled with an epoch number
    and printing no step, batch position or progress meter of its own.

    Mechanism: a training script's end-of-epoch print (``[Epoch 8] Loss: 1314.31, Epoch Time:
    444.65s``) reports the epoch's aggregate -- often the *sum* of the batch losses, the epoch's
    duration -- while tqdm's postfix or a step print of the same run reports one step's value
    under the same name: merged into one curve by log order, every summary looks like a spike of
    hundreds of times the median and every epoch's duration like a slow step. Its values go to
    their own series (:data:`EPOCH_SUFFIX`)."""
    if "poch" not in text or len(text) > 600:
        return False
    return _EPOCH_LABEL.search(text) is not None and _STEP_MARK.search(text) is None


#: Words that, printed just before a metric's key, make its value a running average of it
#: (MLPerf SSD's ``Average Loss:``, ``running loss``, ``smoothed loss``, ``avg. loss``).
_AVERAGING = frozenset("average avg running smoothed smooth ema moving mean".split())
#: The suffix of such a series' name (``loss_running_average``): charted, never a spike.
AVERAGED_SUFFIX = "_running_average"
_WORD_BEFORE = lazy_regex.compile(r"([A-Za-z]+)\.?\s{1,3}$")


def _qualified(text: str, start: int, key: str) -> str:
    """``key``, or ``key`` + :data:`AVERAGED_SUFFIX` when the word printed just before it
    (within three spaces, an abbreviation's dot allowed) is an averaging word.

    Mechanism: a running average (``avg = 0.999 * avg + 0.001 * loss``, or the mean since the
    epoch began) fills from its start value over the first steps and lags every change; its rise
    at the start of a run is the average filling, not the loss spiking, and a real spike shows
    in the step's own value printed beside it."""
    m = _WORD_BEFORE.search(text, max(0, start - 16), start)
    if m is not None and m.group(1).lower() in _AVERAGING:
        return f"{key}{AVERAGED_SUFFIX}"
    return key


def _constant_at_most_one(series: Series) -> bool:
    """Whether a loss-scale series only ever printed one value, at most 1 (no dynamic loss
    scaling: Megatron's bf16 runs print ``loss scale: 1.0`` every iteration)."""
    value = series.constant()
    return value is not None and value <= 1.0


@dataclass(slots=True)
class Point:
    """One value of a series: ``step`` as the log counts it, ``line`` 1-based in ``path``, ``text``
    the line's body (cut at 240 characters), ``order`` the scanner's event counter at that line."""

    step: int
    value: float
    line: int
    path: str
    time: float | None = None
    text: str = ""
    order: int = 0


@dataclass(slots=True)
class Onset:
    """Where a series went wrong: ``kind`` is the signature id, ``why`` a sentence with the values."""

    kind: str
    name: str
    rank: int | None
    point: Point
    why: str

    def metric_onset(self) -> MetricOnset:
        """The contract's Onset."""
        return MetricOnset(
            kind=self.kind,
            step=self.point.step,
            rank=self.rank,
            line=self.point.line,
            path=self.point.path,
            why=self.why,
        )


@dataclass(slots=True)
class _Bucket:
    """One bucket of a metric series' sampled points: its lowest and highest points, its first
    non-finite one, and how many points fell in it."""

    lo: Point | None = None
    hi: Point | None = None
    bad: Point | None = None
    n: int = 0

    def add(self, p: Point) -> None:
        self.n += 1
        if not math.isfinite(p.value):
            if self.bad is None:
                self.bad = p
            return
        if self.lo is None or p.value < self.lo.value:
            self.lo = p
        if self.hi is None or p.value > self.hi.value:
            self.hi = p

    def merge(self, other: _Bucket) -> _Bucket:
        out = _Bucket(n=self.n + other.n, bad=self.bad or other.bad)
        for p in (self.lo, other.lo):
            if p is not None and (out.lo is None or p.value < out.lo.value):
                out.lo = p
        for p in (self.hi, other.hi):
            if p is not None and (out.hi is None or p.value > out.hi.value):
                out.hi = p
        return out


def median(values: Any) -> float:
    """``statistics.median``, imported on first use (``statistics`` brings ``random``,
    ``fractions`` and ``decimal``: milliseconds of every start, for logs with no metrics)."""
    from statistics import median as statistics_median

    return statistics_median(values)


def _median(values) -> float:
    """The median of a small collection (faster than ``statistics.median`` for 25 values)."""
    xs = sorted(values)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0


def _slow_stretch(window: deque, ratio: float, higher: bool) -> Point | None:
    """The first slow point of ``window`` (``(point, relative pace)`` pairs) when the window is
    full and its median pace is slow (below ``ratio``, or above ``1 / ratio`` when a higher value
    is slower), else ``None``."""
    if len(window) < (window.maxlen or 0):
        return None
    rel = median(r for _, r in window)
    slow = rel > 1.0 / ratio if higher else rel < ratio
    if not slow:
        return None
    return next(p for p, r in window if (r > 1.0 / ratio if higher else r < ratio))


def _pace_restored(window: deque, ratio: float, higher: bool) -> bool:
    """Whether ``window`` (``(point, relative pace)`` pairs) is full and its median pace is no
    longer slow by :func:`_slow_stretch`'s test (the run is back near its early pace)."""
    if len(window) < (window.maxlen or 0):
        return False
    rel = median(r for _, r in window)
    return rel <= 1.0 / ratio if higher else rel >= ratio


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v:.4g}"


@dataclass
class Series:
    """One metric of one rank, downsampled as it streams, with its own detectors (see the module
    docstring). Memory: :data:`MAX_BUCKETS` buckets plus a :data:`WINDOW`-value deque.

    Its steps are the log's (a bar, a ``step`` field, ``iteration N``); for lines that print no
    step and no bar after them (Trainer dicts in ``python train.py > train.log``), the line's
    ordinal among the rank's training metric lines since its last bar (the epoch is not used)."""

    name: str
    rank: int | None
    buckets: list[_Bucket] = field(default_factory=list)
    width: int = 1
    count: int = 0
    last: Point | None = None
    onsets: list[Onset] = field(default_factory=list)
    window: deque = field(default_factory=lambda: deque(maxlen=WINDOW))
    resumed_at: int | None = None  # self.count when the run resumed
    restart: Point | None = None  # the last point whose step went back to the start (a relaunch)
    scale_max: float = 0.0
    scale_last: float | None = None
    scale_run_start: Point | None = None
    scale_settled: bool = False
    bad_run: int = 0
    bad_run_start: Point | None = None
    bad_run_first: bool = False  # the run began at the series' first point (warm-up)
    early: list = field(default_factory=list)  # first WARMUP_POINTS + BASELINE_POINTS values
    pace: deque = field(default_factory=lambda: deque(maxlen=SUSTAIN))  # (point, value / baseline)
    slow_from: Point | None = None  # first slow point of the first slow stretch
    behind: deque = field(default_factory=lambda: deque(maxlen=SUSTAIN))  # (point, value / others)
    cached: tuple[float, float] | None = None  # window median and spread, recomputed now and then
    role: str = ""  # which detectors run: "loss", "grad", "scale", "pace" or "" (none)
    kinds: set = field(default_factory=set)  # the kinds in self.onsets
    elevated: set = field(default_factory=set)  # steps whose value passed half the spike thresholds
    cached_age: int = 0

    def add(self, p: Point, per_epoch: bool = False) -> None:
        """Add one point (``per_epoch``: its step counts within an epoch, so a step that goes
        back is a new epoch, not a resumed run)."""
        last = self.last
        if last is not None and p.step < last.step and not per_epoch:
            if p.step <= max(NEW_RUN_STEP, last.step // 100):
                # Back to the start: another run of the job (a relaunch, a log appended to),
                # not a resume from a checkpoint: its curve is compared with itself only.
                self.window.clear()
                self.early.clear()
                self.elevated.clear()
                self.cached = None
                self.resumed_at = None
                self.restart = p
            else:
                self.resumed_at = self.count
        self.count += 1
        self.last = p
        buckets = self.buckets
        if not buckets or buckets[-1].n >= self.width:
            if len(buckets) >= MAX_BUCKETS:
                old = buckets
                self.buckets = buckets = [
                    old[i].merge(old[i + 1]) if i + 1 < len(old) else old[i]
                    for i in range(0, len(old), 2)
                ]
                self.width *= 2
            if not buckets or buckets[-1].n >= self.width:
                buckets.append(_Bucket())
        # _Bucket.add, inlined (the hot path: every point of every series)
        b = buckets[-1]
        b.n += 1
        v = p.value
        if v - v != 0.0:  # NaN or +/-Inf (math.isfinite, without the call)
            if b.bad is None:
                b.bad = p
        else:
            lo, hi = b.lo, b.hi
            if lo is None or v < lo.value:
                b.lo = p
            if hi is None or v > hi.value:
                b.hi = p
        if self.role:
            self._detect(p)

    def constant(self) -> float | None:
        """The one value this series always printed (a numel, a vocab size, a fixed loss
        scale), or ``None`` when it changed or was never finite."""
        lows = [b.lo.value for b in self.buckets if b.lo is not None]
        highs = [b.hi.value for b in self.buckets if b.hi is not None]
        if not lows or min(lows) != max(highs):
            return None
        return float(lows[0])

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    def onset(self, kind: str, p: Point, why: str) -> None:
        if (
            self.resumed_at is not None
            and self.count - self.resumed_at <= RESUME_POINTS
            and kind in ("loss-spike", "grad-norm-explosion", "metric-nonfinite")
        ):
            why = f"{why}, {self.count - self.resumed_at} logged step(s) after the run resumed"
            kind = "resume-divergence"
        if not self.has(kind):
            self.add_onset(Onset(kind, self.name, self.rank, p, why))

    def add_onset(self, onset: Onset) -> None:
        self.onsets.append(onset)
        self.kinds.add(onset.kind)

    def __post_init__(self) -> None:
        n = self.name
        self.role = (
            ""
            if n.endswith(AVERAGED_SUFFIX)
            else "scale"
            if n == "loss_scale"
            else "grad"
            if n == "grad_norm"
            else "loss"
            if any(w in n for w in _LOSSY)
            else "pace"
            if n in ("throughput", "step_time")
            else ""
        )

    def _detect(self, p: Point) -> None:
        role = self.role
        if not role:
            return
        name, v = self.name, p.value
        if role == "scale":
            self._scale(p)
            return
        lossy = role == "loss"
        if not math.isfinite(v):
            if name == "grad_norm":
                if self.bad_run == 0:
                    self.bad_run_start = p
                    self.bad_run_first = self.count == 1
                self.bad_run += 1
                need = WARMUP_SKIP_RUN if self.bad_run_first else SKIP_RUN
                if self.bad_run == need and self.bad_run_start is not None:
                    self.onset(
                        "loss-scale-collapse",
                        self.bad_run_start,
                        f"grad_norm was non-finite on {need} logged steps in a row from step "
                        f"{self.bad_run_start.step}: the loss scaler skips every step",
                    )
            elif lossy:
                self.onset("metric-nonfinite", p, f"{name} became {_fmt(v)} at step {p.step}")
            return
        self.bad_run = 0
        if lossy or name == "grad_norm":
            w = self.window
            kind = "grad-norm-explosion" if name == "grad_norm" else "loss-spike"
            resuming = self.resumed_at is not None and self.count - self.resumed_at <= RESUME_POINTS
            if (
                len(w) >= MIN_HISTORY
                and (resuming or not self.has(kind))
                and self._candidate(v, name)
            ):
                if len(self.elevated) < MAX_ELEVATED:
                    self.elevated.add(p.step)
                med, spread = self._stats()
                z = (v - med) / spread
                if name == "grad_norm":
                    if z > SPIKE_Z and v > EXPLOSION_RATIO * abs(med):
                        self.onset(
                            "grad-norm-explosion",
                            p,
                            f"grad_norm {_fmt(v)} at step {p.step} is {v / med:.3g}x its rolling median {_fmt(med)}",
                        )
                elif z > SPIKE_Z and v - med > (SPIKE_RATIO - 1.0) * abs(med):
                    self.onset(
                        "loss-spike",
                        p,
                        f"{name} {_fmt(v)} at step {p.step} against a rolling median of {_fmt(med)} "
                        f"({min(z, 1e6):.0f} robust deviations above it)",
                    )
            w.append(v)
        elif name in ("throughput", "step_time"):
            self._pace(p, slower_is_higher=name == "step_time")

    def _stats(self) -> tuple[float, float]:
        """Median and robust spread (1.4826 x MAD) of the window, remembered until it changes
        by :data:`STATS_EVERY` values."""
        w = self.window
        med = _median(w)
        spread = 1.4826 * _median([abs(x - med) for x in w]) + 1e-9 * max(1.0, abs(med))
        self.cached = (med, spread)
        self.cached_age = 0
        return med, spread

    def _candidate(self, v: float, name: str) -> bool:
        """Whether ``v`` may be a spike: checked against the remembered median and spread with
        half the thresholds (only a candidate gets the exact test)."""
        self.cached_age += 1
        if self.cached is None or self.cached_age > STATS_EVERY:
            self._stats()
        med, spread = self.cached  # type: ignore[misc]
        ratio = EXPLOSION_RATIO if name == "grad_norm" else SPIKE_RATIO
        return v - med > 0.5 * max(SPIKE_Z * spread, (ratio - 1.0) * abs(med))

    def _pace(self, p: Point, slower_is_higher: bool) -> None:
        """Track the pace against the early baseline: the first slow stretch sets
        :attr:`slow_from`; a later stretch back at the early pace clears it (the slowdown
        passed: a slow epoch -- profiling, a checkpoint, a busy file system -- in a run that
        then went on at its old speed is not what stopped it), and the next slow stretch
        may set it again."""
        if len(self.early) < WARMUP_POINTS + BASELINE_POINTS:
            self.early.append(p.value)
            return
        base = self.baseline()
        if base is None or base <= 0:
            return
        self.pace.append((p, p.value / base))
        if self.slow_from is None:
            slow = _slow_stretch(self.pace, SLOWDOWN_RATIO, slower_is_higher)
            if slow is not None:
                self.slow_from = slow
        elif _pace_restored(self.pace, SLOWDOWN_RATIO, slower_is_higher):
            self.slow_from = None
            self.pace.clear()

    def _scale(self, p: Point) -> None:
        """Collapse: the scale reached 1 or less, or -- once it had settled (held or grown at
        least once: the first halvings from the initial 2^16 or 2^32 are warm-up) -- fell
        :data:`COLLAPSE_FACTOR` below the value it fell from."""
        v = p.value
        if not math.isfinite(v):
            return
        last = self.scale_last
        if last is None or v >= last:
            # a hold ends a run of halvings as a rise does: the next run is measured from the
            # value the scale settled at, not from the warm-up's 2^32 before it
            self.scale_run_start = p
        if last is not None and v >= last:
            self.scale_settled = True
        self.scale_last = v
        self.scale_max = max(self.scale_max, v)
        start = self.scale_run_start or p
        top = start.value
        if (v <= 1.0 < self.scale_max) or (
            self.scale_settled and top / max(v, 1e-300) >= COLLAPSE_FACTOR
        ):
            self.onset(
                "loss-scale-collapse",
                start,
                f"the loss scale fell from {_fmt(top)} to {_fmt(v)} by step {p.step}, "
                f"halving from step {start.step}",
            )

    def baseline(self) -> float | None:
        vals = self.early[WARMUP_POINTS:]
        return median(vals) if len(vals) >= BASELINE_POINTS else None

    def points(self, since: tuple[str, int] | None = None) -> list[list[Any]]:
        """The downsampled points ``[[step, value], ...]`` in log order (non-finite values as
        ``"nan"`` / ``"inf"`` / ``"-inf"``), at most :data:`MAX_POINTS`: each bucket's lowest,
        highest and first non-finite point, the last point and every onset's point. ``since``
        (``(path, line)``, 1-based): the points of ``path`` before ``line`` are left out (the
        attempts before the last of a run appended to one file)."""
        keep: dict[int, Point] = {}
        for b in self.buckets:
            for p in (b.lo, b.hi, b.bad):
                if p is not None:
                    keep[id(p)] = p
        for p in [*(o.point for o in self.onsets), *([self.last] if self.last else [])]:
            keep[id(p)] = p
        if since is not None:
            keep = {k: p for k, p in keep.items() if not _before(p, since)}
        pts = sorted(keep.values(), key=lambda p: (p.order, p.path, p.line))
        if len(pts) > MAX_POINTS:
            pts = pts[: MAX_POINTS - 1] + pts[-1:]
        return [[p.step, p.value if math.isfinite(p.value) else _fmt(p.value)] for p in pts]


def _before(p: Point, since: tuple[str, int]) -> bool:
    """``p`` was printed in ``since``'s path before its line (an earlier attempt's point)."""
    return p.path == since[0] and p.line < since[1]


class MetricsReader:
    """Metric series per rank from metric lines, with their onsets. Feed it with :meth:`observe`
    (every gated line, in log order), call :meth:`finish` once at the end, read :meth:`report`.
    """

    def __init__(self) -> None:
        self.series: dict[tuple[str, int | None], Series] = {}
        self._pending: dict[int | None, list[tuple[str, Point]]] = {}
        self._step: dict[int | None, int] = {}
        # per rank: (step of its last bar or 0, training metric lines since then): the fallback
        # step of a line that waits for a bar is base + count (see the module docstring)
        self._ordinal: dict[int | None, tuple[int, int]] = {}
        self.dropped = 0  # values of series beyond MAX_SERIES, not kept
        self._finished = False
        # per pace series name: step -> {rank: point}, the last PACE_STEPS steps
        self._by_step: dict[str, dict[int, dict[int, Point]]] = {}
        # per series name: how many ranks (not None) have a series of it (kept as series are
        # made: the straggler test reads it on every throughput point)
        self._ranked: dict[str, int] = {}

    def forget_before(self, path: str, line: int) -> None:
        """Drop the series whose every point came from ``path`` before ``line`` (1-based):
        another job's curves in the same file, left out of the diagnosis with its findings
        (rootrank.scan: a section whose world size or launch differs is a separate run)."""
        for key, s in list(self.series.items()):
            last = s.last
            if last is not None and last.path == path and last.line < line:
                del self.series[key]
                if key[1] is not None and key[0] in self._ranked:
                    self._ranked[key[0]] -= 1
        for pend in self._pending.values():  # points waiting for a bar: the left-out job's
            pend[:] = [(n, p) for n, p in pend if not (p.path == path and p.line < line)]

    def observe(
        self,
        text: str,
        *,
        rank: int | None,
        time: float | None,
        path: str,
        line: int,
        progress: Progress | None = None,
        order: int = 0,
    ) -> None:
        """Read one line body (``line`` 1-based). ``progress`` is what the progress model read on
        the same line (its step is the step of this line's metrics); ``order`` the scanner's event
        counter (for sorting onsets among findings)."""
        if progress is not None:
            self._step[rank] = progress.step
            self._ordinal[rank] = (progress.step, 0)
            pend = self._pending.pop(rank, None)
            if pend:
                for name, p in pend:
                    p.step = progress.step
                    self._add(name, rank, p)
        if (
            "esum" in text
            or "ontinuing training" in text
            or "checkpoint" in text
            or "estored from" in text
        ) and _RESUME.search(text):
            for s in self.series.values():
                if s.rank == rank and s.last is not None:
                    s.resumed_at = s.count
        metrics = read_metrics(text)
        if not metrics:
            return
        if progress is None and epoch_summary(text):
            metrics = [(name + EPOCH_SUFFIX, v) for name, v in metrics]
        body = text[:240]
        if progress is not None:
            per_epoch = progress.kind == "plain" and "epoch" in text.lower()
            for name, v in metrics:
                self._add(
                    name, rank, Point(progress.step, v, line, path, time, body, order), per_epoch
                )
            return
        step = self._step.get(rank)
        is_dict = text.lstrip().startswith("{")
        if is_dict and "step" in text:
            m = _DICT_STEP.search(text)
            if m:  # the dict names its own step
                for name, v in metrics:
                    self._add(
                        name, rank, Point(int(m.group("s")), v, line, path, time, body, order)
                    )
                return
        if step is None or is_dict:
            # a Trainer dict: its step is the one of the bar redrawn right after it; until one
            # comes, it waits with its ordinal step (used when no bar follows)
            base, n = self._ordinal.get(rank, (0, 0))
            if not all(name.startswith(_EVAL_PREFIXES) for name, _ in metrics):
                n += 1
                self._ordinal[rank] = (base, n)
            pend = self._pending.setdefault(rank, [])
            if len(pend) >= 4 * MAX_SERIES:
                self._drain(rank)  # no bar for this long: the ordinal steps stand
                pend = self._pending.setdefault(rank, [])
            pend.extend(
                (name, Point(base + max(n, 1), v, line, path, time, body, order))
                for name, v in metrics
            )
            return
        for name, v in metrics:
            self._add(name, rank, Point(step, v, line, path, time, body, order))

    def _add(self, name: str, rank: int | None, p: Point, per_epoch: bool = False) -> None:
        s = self.series.get((name, rank))
        if s is None:
            if len(self.series) >= MAX_SERIES:
                self.dropped += 1
                return
            s = self.series[(name, rank)] = Series(name, rank)
            if rank is not None:
                self._ranked[name] = self._ranked.get(name, 0) + 1
        s.add(p, per_epoch)
        if name == "grad_norm" and not math.isfinite(p.value) and not s.has("metric-nonfinite"):
            scale = self.series.get(("loss_scale", rank))
            if scale is not None and _constant_at_most_one(scale):
                # No dynamic loss scaling (bf16/fp32 print a constant scale of 1): a NaN
                # gradient norm is not a skipped overflow step, it is the fault itself.
                s.onset(
                    "metric-nonfinite",
                    p,
                    f"grad_norm became {_fmt(p.value)} at step {p.step} with a constant loss scale",
                )
        if (
            rank is not None
            and name in ("throughput", "step_time")
            and s.count > WARMUP_POINTS
            and math.isfinite(p.value)
        ):
            self._straggler(name, rank, p)

    def _straggler(self, name: str, rank: int, p: Point) -> None:
        """Put ``p`` in the per-step table; once every rank with this series has reported a step
        (or the step leaves the table), compare each rank's value there with the others' median."""
        table = self._by_step.setdefault(name, {})
        table.setdefault(p.step, {})[rank] = p
        ranks = self._ranked[name]  # the ranks with this series (p's among them)
        done = [st for st, row in table.items() if len(row) >= ranks or st < p.step - PACE_STEPS]
        for st in sorted(done):
            row = table.pop(st)
            if len(row) < 2:
                continue
            for r, q in row.items():
                ref = median(o.value for rr, o in row.items() if rr != r)
                if ref > 0:
                    self._behind(name, r, q, q.value / ref, ref)

    def _behind(self, name: str, rank: int, q: Point, rel: float, ref: float) -> None:
        s = self.series[(name, rank)]
        higher = name == "step_time"
        s.behind.append((q, rel))
        first = _slow_stretch(s.behind, STRAGGLER_RATIO, higher)
        if first is not None and not any(o.has("straggler-rank") for o in self.series.values()):
            what = "step time" if higher else "throughput"
            pace = median(r for _, r in s.behind)
            s.add_onset(
                Onset(
                    "straggler-rank",
                    s.name,
                    s.rank,
                    first,
                    f"rank {s.rank}'s {what} from step {first.step} is {pace:.2g}x the other ranks' "
                    f"({_fmt(first.value)} against {_fmt(ref)}), the median of {SUSTAIN} logged steps",
                )
            )

    def _drain(self, rank: int | None) -> None:
        """Add the rank's waiting metrics at their ordinal steps (no bar came to give one)."""
        for name, p in self._pending.pop(rank, None) or ():
            self._add(name, rank, p)

    def finish(self) -> None:
        """Place the metrics still waiting for a step (at their ordinal steps: the module
        docstring) and run the whole-job detector. Idempotent."""
        if self._finished:
            return
        self._finished = True
        for rank in list(self._pending):
            self._drain(rank)
        for name, higher in (("throughput", False), ("step_time", True)):
            group = [
                s for (n, _r), s in self.series.items() if n == name and s.baseline() is not None
            ]
            if not group or any(s.slow_from is None for s in group):
                continue  # no such series, or one rank kept its pace: not the whole job
            s = min(group, key=lambda s: (s.slow_from.step, s.slow_from.order))  # type: ignore[union-attr]
            slow = s.slow_from
            assert slow is not None
            base = s.baseline() or 0.0
            what = "step time" if higher else "throughput"
            every = " (every rank slowed)" if len(group) > 1 else ""
            s.add_onset(
                Onset(
                    "training-slowdown",
                    s.name,
                    None,
                    slow,
                    f"{what} {_fmt(slow.value)} from step {slow.step} against an early {_fmt(base)}{every}, "
                    f"the median of {SUSTAIN} logged steps",
                )
            )

    def onsets(self) -> list[Onset]:
        """Every onset, earliest step first (after :meth:`finish`)."""
        self.finish()
        out = [o for s in self.series.values() for o in s.onsets]
        return sorted(out, key=lambda o: (o.point.step, o.point.order, o.point.line))

    def report(self, since: tuple[str, int] | None = None) -> list[MetricSeries]:
        """The contract's ``metrics`` list: one entry per series with at least :data:`MIN_POINTS`
        points (or an onset): loss, grad_norm, loss_scale, lr, throughput, step_time, memory first,
        then the others by name; within a name, by rank. ``since`` (``(path, line)``): the start
        of the last attempt of a run appended to one file (a relaunch after a failure, whose
        steps start again): the points and onsets before it are the failed attempts', left out
        as their findings are (:meth:`rootrank.scan.Scanner._new_attempt`), so one curve does
        not join two attempts' values, in a series whose steps went back to the start there."""
        self.finish()
        order = {
            "loss": 0,
            "grad_norm": 1,
            "loss_scale": 2,
            "lr": 3,
            "throughput": 4,
            "step_time": 5,
            "memory": 6,
        }
        out = []
        for (name, rank), s in sorted(
            self.series.items(),
            key=lambda kv: (order.get(kv[0][0], 9), kv[0][0], kv[0][1] is not None, kv[0][1] or 0),
        ):
            # the earlier attempts' points are left out where the series itself started again
            # at the attempt (steps back to the start: a relaunch from scratch); a resume from
            # a checkpoint continues the curve, and its values before the resume are the
            # baseline its onsets are read against (resume-divergence)
            cut = (
                since if since is not None and s.restart and not _before(s.restart, since) else None
            )
            onsets = [o for o in s.onsets if cut is None or not _before(o.point, cut)]
            if (s.count < MIN_POINTS and not onsets) or _SIZE_NAME.fullmatch(name):
                continue
            out.append(
                MetricSeries(
                    name=name,
                    rank=rank,
                    points=s.points(cut),
                    onsets=[o.metric_onset() for o in onsets],
                )
            )
        return out


def _decisive(group: list[Onset]) -> list[Onset]:
    """The onsets of one kind at its earliest step, narrowed to one metric's when that metric
    names a single rank: a rank's own value (its local loss, from its own batch) goes
    non-finite on that rank alone, while a value every rank all-reduces (the global loss)
    goes non-finite on every rank at the same step and tells nothing of where it began. With
    no metric of one rank (or two metrics naming different ranks) the group is kept whole."""
    by_name: dict[str, list[Onset]] = {}
    for o in group:
        by_name.setdefault(o.name, []).append(o)
    single = {
        name: onsets
        for name, onsets in by_name.items()
        if len({o.rank for o in onsets}) == 1 and onsets[0].rank is not None
    }
    if len(single) == len(by_name) or not single:
        return group
    ranks = {onsets[0].rank for onsets in single.values()}
    if len(ranks) != 1:
        return group
    return next(iter(single.values()))


def onset_findings(model: MetricsReader, library: Any) -> list[Finding]:
    """The onsets as findings (role and specificity from their ``detector: metrics`` signatures in
    ``library``), for the causal analysis: one per kind, the earliest, with evidence at the onset's
    line; its rank is the onset's, or ``None`` when several ranks showed it at the same step (a
    learning rate too high diverges every rank at once). Onsets whose signature the library lacks are left out. ``time`` is the
    onset line's timestamp (or ``None``); ``order`` the scanner's event counter at that line.
    """
    out: list[Finding] = []
    first: dict[str, list[Onset]] = {}
    for o in model.onsets():  # earliest step first
        same = first.setdefault(o.kind, [])
        if not same or o.point.step == same[0].point.step:
            same.append(o)
    for kind, group in list(first.items()):
        first[kind] = _decisive(group)
    for kind, group in first.items():
        sig = library.signatures.get(kind)
        if sig is None:
            continue
        o = group[0]
        ranks = {g.rank for g in group}
        # Several ranks at once, or the other ranks already well above their median at that
        # step (a global cause, e.g. the learning rate; one rank merely crossed first): no rank
        # started it. A bad batch leaves the other ranks normal at its step.
        others_up = [
            r
            for (n, r), s in model.series.items()
            if n == o.name and r not in ranks and r is not None and o.point.step in s.elevated
        ]
        rank = o.rank if len(ranks) == 1 and not others_up else None
        shown = sorted(r for r in ranks | set(others_up) if r is not None)
        why = (
            o.why
            if rank is not None or len(shown) < 2
            else f"{o.why} (ranks {', '.join(map(str, shown))} at the same step)"
        )
        p = o.point
        # a loss that was finite again later in the same series (the same rank's, the same
        # format): the weights stayed finite, so the non-finite value's update was skipped (a
        # guard's "skipping the optimizer step", AMP's scaler); with the run's end this is a
        # value the run survived (rootrank.analysis.completed.completed_run)
        later = model.series.get((o.name, o.rank))
        finite_after = (
            later.last.step
            if kind == "metric-nonfinite"
            and later is not None
            and later.last is not None
            and math.isfinite(later.last.value)
            and later.last.step > p.step
            else None
        )
        loss_steady = kind == "grad-norm-explosion" and _loss_steady(model, p.step)
        out.append(
            Finding.of(
                sig,
                rank=rank,
                host=None,
                time=p.time,
                order=p.order,
                evidence=[Evidence(path=p.path, line=p.line, text=p.text or why, rank=rank)],
                captures={
                    "step": str(p.step),
                    "metric": o.name,
                    "value": _fmt(p.value),
                    "why": why,
                    "same_step_ranks": ", ".join(map(str, shown)) if rank is None else "",
                    # the one rank that showed it first (others later or never): a fix variant's key
                    "first_rank": str(rank) if rank is not None else "",
                    # the series' last step, finite, after a non-finite onset (else empty)
                    "finite_after": str(finite_after) if finite_after is not None else "",
                    # a grad-norm explosion the loss did not follow (rootrank.metrics._loss_steady)
                    "loss_steady": "yes" if loss_steady else "",
                },
            )
        )
    return out


def _loss_steady(model: MetricsReader, step: int) -> bool:
    """Whether the training loss stayed at its level after a gradient-norm explosion at
    ``step``: some loss series (the step's own value, not a running average) has logged
    points after ``step``, every one finite, and no loss series has a spike or non-finite
    onset at or after ``step``.

    Mechanism: a logged gradient norm is measured before clipping (the Hugging Face Trainer,
    ms-swift, DeepSpeed and Megatron log the total norm ``clip_grad_norm_`` returns), so a
    high value is the raw gradient of one batch, not the update the optimizer applied. An
    update that really moved the weights too far shows in the losses after it (they jump, or
    go non-finite: rootrank.metrics onsets ``loss-spike`` / ``metric-nonfinite``); a loss that
    kept its level through the rest of the run means the step was absorbed. With the run's
    end (rootrank.analysis.completed) such a spike is a value the run survived, not why it
    failed. ``False`` when the log has no loss after ``step`` (nothing tells)."""
    after = False
    for (name, _rank), series in model.series.items():
        if name != "loss":
            continue
        if any(
            o.kind in ("loss-spike", "metric-nonfinite") and o.point.step >= step
            for o in series.onsets
        ):
            return False
        last = series.last
        if last is not None and last.step > step:
            if not math.isfinite(last.value):
                return False
            after = True
    return after
