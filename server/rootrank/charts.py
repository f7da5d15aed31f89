"""Pictures of the training curves for the reports: unicode sparklines (text) and an SVG chart
(Markdown, as a ``data:`` URI image). Input is the diagnosis's ``metrics``
(:class:`rootrank.model.MetricSeries`: points ``[step, value|"nan"|"inf"|"-inf"]``, onsets).

Values spanning more than two decades on positive data (learning rates, loss scales) are drawn
on a log scale. Non-finite values are drawn as ``×`` (text) or a red cross at the top (SVG).
"""

from __future__ import annotations

import math
from typing import Any

from rootrank.model import MetricSeries

_BARS = "▁▂▃▄▅▆▇█"
#: Series drawn in the SVG, in this order, when present (others only when they have an onset).
CHART_NAMES = ("loss", "grad_norm", "loss_scale", "lr", "throughput", "step_time")
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")


def _finite(points: list[list[Any]]) -> list[tuple[int, float]]:
    return [
        (int(s), float(v)) for s, v in points if isinstance(v, (int, float)) and math.isfinite(v)
    ]


def _log_scale(values: list[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) / min(values) > 100


def sparkline(points: list[list[Any]], width: int = 24) -> str:
    """``points`` as at most ``width`` block characters (the highest value of each slice; ``×``
    where a slice holds a non-finite value). Empty string for no points."""
    if not points:
        return ""
    n = len(points)
    slices = (
        [points[i * n // width : (i + 1) * n // width] for i in range(min(width, n))]
        if n > width
        else [[p] for p in points]
    )
    finite = [v for _, v in _finite(points)]
    log = _log_scale(finite)
    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    lo, hi = (min(map(f, finite)), max(map(f, finite))) if finite else (0.0, 0.0)
    out = []
    for sl in slices:
        if any(not isinstance(v, (int, float)) or not math.isfinite(v) for _, v in sl):
            out.append("×")
            continue
        v = f(max(float(v) for _, v in sl))
        i = 0 if hi == lo else round((v - lo) / (hi - lo) * (len(_BARS) - 1))
        out.append(_BARS[i])
    return "".join(out)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def text_lines(metrics: list[MetricSeries], limit: int = 12) -> list[str]:
    """One line per series: name and rank, sparkline, ``last <value>``, the steps it spans and
    its onsets (kind, step, line)."""
    out = []
    for m in metrics[:limit]:
        who = f"{m.name}" + (f" (rank {m.rank})" if m.rank is not None else "")
        pts = m.points
        last = pts[-1][1] if pts else None
        tail = (
            f" last {last}"
            if isinstance(last, str)
            else (f" last {_fmt(last)}" if last is not None else "")
        )
        steps = f" steps {pts[0][0]}–{pts[-1][0]}" if pts else ""
        marks = "; ".join(f"{o.kind} at step {o.step} (line {o.line})" for o in m.onsets)
        out.append(f"  {who:<24} {sparkline(pts)}{tail}{steps}" + (f"  ← {marks}" if marks else ""))
    if len(metrics) > limit:
        out.append(f"  ... and {len(metrics) - limit} more series (see --format json)")
    return out


def svg(metrics: list[MetricSeries], width: int = 640, panel: int = 120) -> str | None:
    """An SVG chart: one panel per metric name (``CHART_NAMES`` first, then any with an onset),
    a line per rank, each onset a red dashed line with its kind. ``None`` when nothing to draw."""
    names = [n for n in CHART_NAMES if any(m.name == n for m in metrics)]
    names += sorted({m.name for m in metrics if m.onsets and m.name not in names})
    names = names[:6]
    if not names:
        return None
    from html import escape  # here, not at start: only a report with metrics draws a chart

    left, right, top_pad = 70, 12, 22
    height = len(names) * (panel + top_pad) + 24
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>'
    ]
    steps = [int(s) for m in metrics if m.name in names for s, _ in m.points]
    x0, x1 = (min(steps), max(steps)) if steps else (0, 1)
    x1 = x1 if x1 > x0 else x0 + 1

    def x(step: float) -> float:
        return left + (step - x0) / (x1 - x0) * (width - left - right)

    for row, name in enumerate(names):
        top = row * (panel + top_pad) + top_pad
        series = [m for m in metrics if m.name == name]
        finite = [v for m in series for _, v in _finite(m.points)]
        log = _log_scale(finite)
        f = (lambda v: math.log10(v)) if log else (lambda v: v)
        lo, hi = (min(map(f, finite)), max(map(f, finite))) if finite else (0.0, 1.0)
        hi = hi if hi > lo else lo + 1.0

        def y(v: float, top: int = top, lo: float = lo, hi: float = hi, f: Any = f) -> float:
            return top + panel - (f(v) - lo) / (hi - lo) * panel

        parts.append(
            f'<text x="4" y="{top - 6}" font-weight="bold">{escape(name)}{" (log)" if log else ""}</text>'
        )
        parts.append(
            f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{panel}" fill="none" stroke="#ccc"/>'
        )
        top_label = 10**hi if log else hi
        low_label = 10**lo if log else lo
        parts.append(
            f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{_fmt(top_label)}</text>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{top + panel}" text-anchor="end">{_fmt(low_label)}</text>'
        )
        for i, m in enumerate(series):
            color = _COLORS[i % len(_COLORS)]
            run: list[str] = []
            for s, v in m.points:
                if isinstance(v, (int, float)) and math.isfinite(v):
                    run.append(f"{x(int(s)):.1f},{y(float(v)):.1f}")
                else:
                    if len(run) > 1:
                        parts.append(
                            f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{" ".join(run)}"/>'
                        )
                    run = []
                    cx = x(int(s))
                    parts.append(
                        f'<text x="{cx:.1f}" y="{top + 10}" fill="#d62728" text-anchor="middle">×</text>'
                    )
            if len(run) > 1:
                parts.append(
                    f'<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{" ".join(run)}"/>'
                )
            if len(series) > 1:
                label = f"rank {m.rank}" if m.rank is not None else "all"
                parts.append(
                    f'<text x="{width - right - 4 - 60 * i}" y="{top - 6}" fill="{color}" text-anchor="end">{escape(label)}</text>'
                )
            for o in m.onsets:
                ox = x(int(o.step))
                parts.append(
                    f'<line x1="{ox:.1f}" y1="{top}" x2="{ox:.1f}" y2="{top + panel}" stroke="#d62728" stroke-dasharray="4,3"/>'
                )
                parts.append(
                    f'<text x="{ox + 3:.1f}" y="{top + panel - 4}" fill="#d62728">{escape(o.kind)} @ {o.step}</text>'
                )
    parts.append(f'<text x="{left}" y="{height - 6}">step {x0}</text>')
    parts.append(f'<text x="{width - right}" y="{height - 6}" text-anchor="end">step {x1}</text>')
    parts.append("</svg>")
    return "".join(parts)


def svg_data_uri(metrics: list[MetricSeries]) -> str | None:
    """:func:`svg` as a ``data:image/svg+xml;base64,...`` URI, or ``None``."""
    doc = svg(metrics)
    if doc is None:
        return None
    import base64

    return "data:image/svg+xml;base64," + base64.b64encode(doc.encode("utf-8")).decode("ascii")
