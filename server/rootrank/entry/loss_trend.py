"""What the losses logged before a non-finite value say about how it came.

A loss or gradient that goes NaN/Inf arrives one of two ways. Optimisation instability builds
up: the loss rises or spikes, the gradient norm explodes, the fp16 loss scale collapses over
steps, before the first NaN (rootrank.metrics onsets ``loss-spike``, ``grad-norm-explosion``,
``loss-scale-collapse``); a lower learning rate, longer warm-up or clipping answers it. A value
out of the number format's range appears within one step from a healthy loss: fp16 holds at
most 65504, so one large attention logit, norm variance or ``exp`` overflows to inf and the
next op makes NaN, whatever the learning rate; bf16 (fp32's range) or fp32 for that block
answers it. The logged series tell the two apart as far as the log shows them."""

from __future__ import annotations

import math

from rootrank.metrics import MetricsReader

#: Metric onsets that show values building up before a non-finite one.
BUILD_UP_ONSETS = frozenset({"loss-spike", "grad-norm-explosion", "loss-scale-collapse"})


def loss_trend(model: MetricsReader) -> tuple[str, str]:
    """``(trend, why)`` of the metric series read from the log (``model``): ``"blew_up"``
    when a series has a build-up onset (:data:`BUILD_UP_ONSETS`), ``"steady"`` when a loss
    series logged a finite value and no series has one, ``""`` when the log shows no finite
    loss (nothing tells). ``why`` quotes the evidence: the onset's sentence, or the last
    finite loss and its step."""
    last: tuple[int, int, float] | None = None  # (step, line, value)
    for (name, _rank), series in model.series.items():
        for onset in series.onsets:
            if onset.kind in BUILD_UP_ONSETS:
                return "blew_up", onset.why
        if name != "loss":
            continue
        for bucket in series.buckets:
            for p in (bucket.lo, bucket.hi):
                if p is None or not math.isfinite(p.value):
                    continue
                if last is None or (p.step, p.line) >= last[:2]:
                    last = (p.step, p.line, p.value)
    if last is None:
        return "", ""
    return "steady", f"the last loss logged before it was finite ({last[2]:g}, line {last[1]})"
