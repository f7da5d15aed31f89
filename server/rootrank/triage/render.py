"""The triage summary as a terminal table, Markdown, JSON Lines or a self-contained HTML page.

Every function takes the summary dict (:meth:`rootrank.triage.summary.Summary.to_dict`),
already masked by the workers. The HTML page has its charts drawn here as inline SVG and its
style inline: it fetches nothing and opens offline.
"""

from __future__ import annotations

import html
import json
from typing import Any

from rootrank.taxonomy import host_kinds

#: Hosts shown in the text, Markdown and HTML reports (the JSON has all of them).
MAX_HOSTS_SHOWN = 25
#: Classes drawn separately in the by-day chart; the rest are summed as "other".
MAX_CHART_CLASSES = 8
_COLOURS = (
    "#d62728",
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
)


def _mb(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items())


def headline(s: dict[str, Any]) -> str:
    """One line: jobs, size, failed, healthy, unclassified, unreadable."""
    line = (
        f"{s['jobs']:,} jobs ({_mb(s['bytes'])}): {s['failed']:,} failed with a known root cause, "
        f"{s['healthy']:,} healthy, {s['unclassified']:,} unclassified, {s['errors']:,} unreadable"
    )
    if s.get("interrupted"):
        line += f" (interrupted: {s['jobs']:,} of {s.get('jobs_found', s['jobs']):,} jobs done)"
    return line


def _date_range(s: dict[str, Any]) -> str:
    if not s["days"]:
        return "no jobs"
    return (
        f"jobs from {s['days'][0]['day']} to {s['days'][-1]['day']} (UTC; the date of the failure in the log, "
        f"or the file's modification time for the {s['undated_jobs']:,} job(s) whose log carries no date)"
    )


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = ["  " + "  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    for r in rows:
        out.append(
            "  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
        )
    return out


def _host_notes(s: dict[str, Any]) -> list[str]:
    """What the host table leaves out, under it: the failed jobs that named no initiating
    host (``failed_without_host``, of which ``failed_local_host`` named only ``localhost``), and, when the names are pseudonyms (``host_names ==
    "pseudonyms"``, set by the command), how to see the real ones."""
    notes = []
    missing = s.get("failed_without_host", 0)
    if missing and s["hosts"]:
        local = s.get("failed_local_host", 0)
        only_local = f" ({local:,} named only localhost, which is no one machine)" if local else ""
        notes.append(
            f"  {missing:,} of {s['failed']:,} failed jobs named no initiating host{only_local}"
            " and are not in this table (their classes are below)"
        )
    if s["hosts"] and s.get("host_names") == "pseudonyms":
        notes.append(
            "  Host names are pseudonyms, one per machine across the archive: --keep-hosts"
            " shows the real names (--cache DIR keeps the pseudonyms from run to run)"
        )
    return notes


def to_text(s: dict[str, Any]) -> str:
    """The terminal report."""
    out = [f"rootrank triage: {headline(s)}", f"  {_date_range(s)}", ""]
    hosts = s["hosts"][:MAX_HOSTS_SHOWN]
    out.append(
        "Hosts that initiated failures, worst first (HOST-CAUSED = the host's doing: "
        + ", ".join(sorted(host_kinds()))
        + " kinds)"
    )
    if hosts:
        rows = [
            [
                h["host"],
                h["jobs"],
                h["host_caused"],
                h["ran_in"],
                _counts(h["kinds"]),
                _counts(h["classes"]),
            ]
            for h in hosts
        ]
        table = _table(rows, ["HOST", "JOBS", "HOST-CAUSED", "RAN IN", "KINDS", "CLASSES"])
        out.append(table[0])
        for h, line in zip(hosts, table[1:], strict=False):
            out.append(line)
            for e in h["evidence"][:2]:
                out.append(f"      {e['job']}: {e['path']}:{e['line']}: {e['text']}")
        if len(s["hosts"]) > len(hosts):
            out.append(
                f"  ... {len(s['hosts']) - len(hosts)} more hosts (--format json lists them all)"
            )
    else:
        out.append("  (no failure named its initiating host)")
    out.extend(_host_notes(s))
    out.append("")
    out.append("Failure classes")
    out.extend(
        _table(
            [
                [
                    c["failure_class"],
                    c["kind"],
                    c["jobs"],
                    f"{c['share']:.1%}",
                    c["first_seen"] or "",
                    c["last_seen"] or "",
                ]
                for c in s["classes"]
            ],
            ["CLASS", "KIND", "JOBS", "SHARE", "FIRST SEEN", "LAST SEEN"],
        )
        if s["classes"]
        else ["  (none)"]
    )
    out.append("")
    out.append("Signatures (new = first seen on the last day of the archive)")
    out.extend(
        _table(
            [
                [
                    g["signature"],
                    g["jobs"],
                    f"{g['share']:.1%}",
                    g["first_seen"] or "",
                    g["last_seen"] or "",
                    "new" if g["new"] else "",
                ]
                for g in s["signatures"]
            ],
            ["SIGNATURE", "JOBS", "SHARE", "FIRST SEEN", "LAST SEEN", ""],
        )
        if s["signatures"]
        else ["  (none)"]
    )
    if s["unclassified_jobs"]:
        out += ["", f"Unclassified failures, for review ({s['unclassified']:,})"]
        for u in s["unclassified_jobs"]:
            out.append(f"  {u['job']}: {u.get('path')}:{u.get('line')}: {u.get('text')}")
        if s["unclassified"] > len(s["unclassified_jobs"]):
            out.append(
                f"  ... and {s['unclassified'] - len(s['unclassified_jobs'])} more (--format json lists every job)"
            )
    if s.get("healthy_jobs"):
        out += ["", f"Healthy jobs ({s['healthy']:,})", "  " + ", ".join(s["healthy_jobs"])]
        if s["healthy"] > len(s["healthy_jobs"]):
            out.append(f"  ... and {s['healthy'] - len(s['healthy_jobs'])} more")
    if s["error_jobs"]:
        out += ["", f"Jobs that could not be read ({s['errors']:,})"]
        out.extend(f"  {e['job']}: {e['error']}" for e in s["error_jobs"])
    if s.get("not_read_files"):
        out += [
            "",
            f"Files skipped / read in part in jobs that were diagnosed ({s['files_not_read']:,})",
        ]
        out.extend(f"  {e['job']}: {e['error']}" for e in s["not_read_files"])
    if s["days"]:
        out += ["", "By day"]
        out.extend(
            _table(
                [
                    [
                        d["day"],
                        d["jobs"],
                        d["failed"],
                        d["healthy"],
                        d["unclassified"],
                        _counts(dict(list(d["classes"].items())[:3])),
                    ]
                    for d in s["days"]
                ],
                ["DAY", "JOBS", "FAILED", "HEALTHY", "UNCLASSIFIED", "TOP CLASSES"],
            )
        )
    return "\n".join(out) + "\n"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def to_markdown(s: dict[str, Any]) -> str:
    """The report as Markdown (tables; evidence lines in code spans)."""
    out = [
        "# rootrank triage",
        "",
        headline(s) + ".",
        "",
        _date_range(s) + ".",
        "",
        "## Hosts that initiated failures (worst first)",
        "",
    ]
    if s["hosts"]:
        out += [
            "| host | jobs initiated | host-caused | ran in | kinds | classes | evidence |",
            "|---|---:|---:|---:|---|---|---|",
        ]
        for h in s["hosts"][:MAX_HOSTS_SHOWN]:
            ev = "<br>".join(
                f"{_md(e['job'])}: `{_md(e['path'])}:{e['line']}: {_md(e['text'])}`"
                for e in h["evidence"][:2]
            )
            out.append(
                f"| {_md(h['host'])} | {h['jobs']} | {h['host_caused']} | {h['ran_in']} | "
                f"{_md(_counts(h['kinds']))} | {_md(_counts(h['classes']))} | {ev} |"
            )
    else:
        out.append("No failure named its initiating host.")
    notes = [n.strip() for n in _host_notes(s)]
    if notes:
        out += ["", *(f"_{_md(n)}_" for n in notes)]
    out += [
        "",
        "## Failure classes",
        "",
        "| class | kind | jobs | share | first seen | last seen |",
        "|---|---|---:|---:|---|---|",
    ]
    for c in s["classes"]:
        out.append(
            f"| {c['failure_class']} | {c['kind']} | {c['jobs']} | {c['share']:.1%} | {c['first_seen'] or ''} | {c['last_seen'] or ''} |"
        )
    out += [
        "",
        "## Signatures",
        "",
        "| signature | class | jobs | share | first seen | last seen | new |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for g in s["signatures"]:
        out.append(
            f"| {g['signature']} | {g['failure_class']} | {g['jobs']} | {g['share']:.1%} | {g['first_seen'] or ''} | "
            f"{g['last_seen'] or ''} | {'new' if g['new'] else ''} |"
        )
    if s["unclassified_jobs"]:
        out += ["", f"## Unclassified failures, for review ({s['unclassified']})", ""]
        out += [
            f"- {_md(u['job'])}: `{_md(u.get('path'))}:{u.get('line')}: {_md(u.get('text'))}`"
            for u in s["unclassified_jobs"]
        ]
    if s.get("healthy_jobs"):
        out += ["", f"## Healthy jobs ({s['healthy']})", ""]
        out += [f"- {_md(j)}" for j in s["healthy_jobs"]]
    if s["error_jobs"]:
        out += ["", f"## Jobs that could not be read ({s['errors']})", ""]
        out += [f"- {_md(e['job'])}: {_md(e['error'])}" for e in s["error_jobs"]]
    if s.get("not_read_files"):
        out += [
            "",
            f"## Files skipped / read in part in jobs that were diagnosed ({s['files_not_read']})",
            "",
        ]
        out += [f"- {_md(e['job'])}: {_md(e['error'])}" for e in s["not_read_files"]]
    if s["days"]:
        out += [
            "",
            "## By day",
            "",
            "| day | jobs | failed | healthy | unclassified | top classes |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for d in s["days"]:
            out.append(
                f"| {d['day']} | {d['jobs']} | {d['failed']} | {d['healthy']} | {d['unclassified']} | {_md(_counts(dict(list(d['classes'].items())[:3])))} |"
            )
    return "\n".join(out) + "\n"


def job_line(result: dict[str, Any]) -> str:
    """One JSON Lines object for a job: ``{"job", "diagnosis", "error"}``."""
    return json.dumps(
        {"job": result["job"], "diagnosis": result["diagnosis"], "error": result["error"]},
        ensure_ascii=False,
    )


def summary_line(s: dict[str, Any]) -> str:
    """The last JSON Lines object: ``{"summary": ...}``."""
    return json.dumps({"summary": s}, ensure_ascii=False)


# --- HTML ----------------------------------------------------------------------------------


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _chart_classes(s: dict[str, Any]) -> list[str]:
    return [c["failure_class"] for c in s["classes"][:MAX_CHART_CLASSES]]


def svg_by_day(s: dict[str, Any], width: int = 900, height: int = 260) -> str:
    """A stacked bar chart of failed jobs per day and class (inline SVG), or ``""`` with no dates."""
    days = s["days"]
    if not days:
        return ""
    shown = _chart_classes(s)
    left, bottom, top = 44, 40, 16
    plot_w, plot_h = width - left - 10, height - bottom - top
    peak = max(max(d["failed"] for d in days), 1)
    bar_w = plot_w / len(days)
    label = (
        (lambda d: d) if days[0]["day"][:4] != days[-1]["day"][:4] else (lambda d: d[5:])
    )  # MM-DD in one year
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="failed jobs per day by class">'
    ]
    for frac in (0, 0.5, 1):
        y = top + plot_h * (1 - frac)
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{round(peak * frac)}</text>'
        )
    for i, d in enumerate(days):
        x = left + i * bar_w
        y = top + plot_h
        segments = [(c, d["classes"].get(c, 0)) for c in shown]
        segments.append(("other", d["failed"] - sum(v for _, v in segments)))
        for j, (c, v) in enumerate(segments):
            if v <= 0:
                continue
            h = plot_h * v / peak
            y -= h
            colour = _COLOURS[j] if c != "other" else _COLOURS[-1]
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{_e(d['day'])}: {_e(c)} {v}</title></rect>"
            )
        if len(days) <= 31 or i % max(1, len(days) // 15) == 0:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 14}" font-size="10" text-anchor="middle">{_e(label(d["day"]))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def svg_classes(s: dict[str, Any], width: int = 900) -> str:
    """A horizontal bar chart of jobs per failure class (inline SVG)."""
    rows = s["classes"]
    if not rows:
        return ""
    bar_h, label_w = 20, 260
    height = bar_h * len(rows) + 10
    peak = max(r["jobs"] for r in rows)
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="jobs per failure class">'
    ]
    shown = _chart_classes(s)
    for i, r in enumerate(rows):
        y = 5 + i * bar_h
        w = (width - label_w - 100) * r["jobs"] / peak
        colour = (
            _COLOURS[shown.index(r["failure_class"])]
            if r["failure_class"] in shown
            else _COLOURS[-1]
        )
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" font-size="12">{_e(r["failure_class"])}</text>'
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{max(w, 1):.1f}" height="{bar_h - 6}" fill="{colour}"/>'
        )
        parts.append(
            f'<text x="{label_w + w + 4:.1f}" y="{y + 14}" font-size="12">{r["jobs"]} ({r["share"]:.1%})</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right}td b{white-space:nowrap}code{font:12px ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-all}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.new{color:#b00;font-weight:600}
"""


def to_html(s: dict[str, Any]) -> str:
    """The report as one HTML page with inline style and SVG charts (no script, no fetch)."""
    shown = _chart_classes(s)
    legend = "".join(
        f'<span><i style="background:{_COLOURS[i]}"></i>{_e(c)}</span>' for i, c in enumerate(shown)
    )
    legend += f'<span><i style="background:{_COLOURS[-1]}"></i>other</span>'
    o = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        "<title>rootrank triage</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>rootrank triage</h1>",
        f"<p>{_e(headline(s))}.<br>{_e(_date_range(s))}.</p>",
        "<h2>Hosts that initiated failures (worst first)</h2>",
    ]
    if s["hosts"]:
        o.append(
            "<table><tr><th>host</th><th>jobs initiated</th><th>host-caused</th><th>ran in</th><th>kinds</th><th>classes</th><th>evidence</th></tr>"
        )
        for h in s["hosts"][:MAX_HOSTS_SHOWN]:
            ev = "".join(
                f"<div>{_e(e['job'])}: <code>{_e(e['path'])}:{e['line']}: {_e(e['text'])}</code></div>"
                for e in h["evidence"][:3]
            )
            o.append(
                f"<tr><td><b>{_e(h['host'])}</b></td><td class=n>{h['jobs']}</td>"
                f"<td class=n>{h['host_caused']}</td><td class=n>{h['ran_in']}</td>"
                f"<td>{_e(_counts(h['kinds']))}</td><td>{_e(_counts(h['classes']))}</td><td>{ev}</td></tr>"
            )
        o.append("</table>")
    else:
        o.append("<p>No failure named its initiating host.</p>")
    if s["days"]:
        o += [
            "<h2>Failed jobs per day, by class</h2>",
            f'<div class="legend">{legend}</div>',
            svg_by_day(s),
        ]
    o += ["<h2>Failure classes</h2>", svg_classes(s)]
    o.append(
        "<table><tr><th>class</th><th>kind</th><th>jobs</th><th>share</th><th>first seen</th><th>last seen</th></tr>"
    )
    for c in s["classes"]:
        o.append(
            f"<tr><td>{_e(c['failure_class'])}</td><td>{_e(c['kind'])}</td><td class=n>{c['jobs']}</td>"
            f"<td class=n>{c['share']:.1%}</td><td>{_e(c['first_seen'] or '')}</td><td>{_e(c['last_seen'] or '')}</td></tr>"
        )
    o.append("</table><h2>Signatures</h2>")
    o.append(
        "<table><tr><th>signature</th><th>class</th><th>jobs</th><th>share</th><th>first seen</th><th>last seen</th><th></th></tr>"
    )
    for g in s["signatures"]:
        o.append(
            f'<tr><td title="{_e(g["title"])}">{_e(g["signature"])}</td><td>{_e(g["failure_class"])}</td><td class=n>{g["jobs"]}</td>'
            f"<td class=n>{g['share']:.1%}</td><td>{_e(g['first_seen'] or '')}</td><td>{_e(g['last_seen'] or '')}</td>"
            f"<td>{'<span class=new>new</span>' if g['new'] else ''}</td></tr>"
        )
    o.append("</table>")
    if s["unclassified_jobs"]:
        o.append(f"<h2>Unclassified failures, for review ({s['unclassified']})</h2><ul>")
        o += [
            f"<li>{_e(u['job'])}: <code>{_e(u.get('path'))}:{u.get('line')}: {_e(u.get('text'))}</code></li>"
            for u in s["unclassified_jobs"]
        ]
        o.append("</ul>")
    if s["error_jobs"]:
        o.append(f"<h2>Jobs that could not be read ({s['errors']})</h2><ul>")
        o += [f"<li>{_e(e['job'])}: {_e(e['error'])}</li>" for e in s["error_jobs"]]
        o.append("</ul>")
    if s.get("not_read_files"):
        o.append(
            f"<h2>Files skipped / read in part in jobs that were diagnosed ({s['files_not_read']})</h2><ul>"
        )
        o += [f"<li>{_e(e['job'])}: {_e(e['error'])}</li>" for e in s["not_read_files"]]
        o.append("</ul>")
    if s["days"]:
        o.append(
            "<h2>By day</h2><table><tr><th>day</th><th>jobs</th><th>failed</th><th>healthy</th><th>unclassified</th><th>top classes</th></tr>"
        )
        for d in s["days"]:
            o.append(
                f"<tr><td>{_e(d['day'])}</td><td class=n>{d['jobs']}</td><td class=n>{d['failed']}</td><td class=n>{d['healthy']}</td>"
                f"<td class=n>{d['unclassified']}</td><td>{_e(_counts(dict(list(d['classes'].items())[:3])))}</td></tr>"
            )
        o.append("</table>")
    o.append(
        "<p><small>Made by rootrank triage, offline. Host names are pseudonyms unless --keep-hosts was given.</small></p>"
    )
    o.append("</body></html>")
    return "\n".join(o) + "\n"
