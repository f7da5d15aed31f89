"""Renderers for a :class:`~rootrank.model.Diagnosis`: text (for people), JSON, Markdown.

The order is fixed for every format: root cause, initiating rank with the reasoning,
collateral (one line per kind), the fix (with code for the stack seen in the log), how to
confirm and the verification command, related failures.
"""

from __future__ import annotations

import json
from typing import Any

import regex

from rootrank.analyze import format_ranks
from rootrank.model import Diagnosis
from rootrank.taxonomy import describe

# A blank the user fills in (<gpus>, <failing step + 10>): never to be run as it stands, since
# a shell reads "<gpus> train.py" as redirections (it would truncate train.py).
# A bare "..." word stands for the rest of the user's command line.
_PLACEHOLDER = regex.compile(r"<[A-Za-z][^<>\n]{0,60}>|(?<![^\s])\.\.\.(?![^\s])")


def unfilled_placeholders(command: str) -> list[str]:
    """The blanks in ``command`` (``<placeholder>`` and a bare ``...``), in order, each once."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(command.split("  # ", 1)[0])))

_STACK_NAMES = {
    "pytorch": "PyTorch",
    "hf": "Hugging Face Trainer / Accelerate",
    "deepspeed": "DeepSpeed",
    "megatron": "Megatron-LM",
    "vllm": "vLLM",
}


def to_json(diag: Diagnosis) -> str:
    """The ``rootrank.diagnosis/1`` JSON document (indented, UTF-8 safe)."""
    return json.dumps(diag.to_dict(), indent=2, ensure_ascii=False)


def _stacks_to_show(diag: Diagnosis, code: dict[str, str]) -> list[str]:
    chosen = [s for s in diag.stack if s in code]
    if not chosen and "pytorch" in code:
        chosen = ["pytorch"]
    if not chosen and code:
        chosen = [next(iter(code))]
    return chosen


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, s: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if self.color else s

    def bold(self, s: str) -> str:
        return self._wrap("1", s)

    def red(self, s: str) -> str:
        return self._wrap("1;31", s)

    def dim(self, s: str) -> str:
        return self._wrap("2", s)

    def cyan(self, s: str) -> str:
        return self._wrap("36", s)


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _loc(e: dict[str, Any]) -> str:
    return f"{e['path']}:{e['line']}"


def to_text(diag: Diagnosis, *, color: bool = False, all_stacks: bool = False) -> str:
    """A compact report for a terminal; ``color`` adds ANSI colour (use only on a TTY)."""
    st = _Style(color)
    out: list[str] = []
    rc = diag.root_cause
    if rc is None:
        out.append(st.bold("No known failure found."))
        if diag.unclassified:
            u = diag.unclassified
            ev = u.evidence[0]
            rank = f" on rank {u.rank}" if u.rank is not None else ""
            out.append(f"Last exception{rank} (unclassified): {u.title}")
            out.append(st.dim(f"  {ev.path}:{ev.line}"))
        elif diag.findings:
            out.append("Only warnings were found; nothing in the log shows a failure:")
            for f in diag.findings[:5]:
                out.append(f"  - {f.title} ({f.evidence[0].path}:{f.evidence[0].line})")
        out.append(st.dim(f"{diag.lines_read} lines read from {len(diag.sources)} source(s)."))
        return "\n".join(out) + "\n"
    where = []
    if rc["rank"] is not None:
        same = diag.initiating_rank == rc["rank"]
        where.append(f"rank {rc['rank']}" if same else f"reported on rank {rc['rank']}")
    if rc.get("host"):
        where.append(f"host {rc['host']}")
    out.append(st.red("Root cause: ") + st.bold(rc["title"]))
    out.append(
        f"  class {rc['failure_class']} · signature {rc['signature']} · confidence {rc['confidence']:.2f}"
        + (f" · {', '.join(where)}" if where else "")
    )
    if about := describe(rc["failure_class"]):
        out.append(st.dim(f"  {rc['failure_class']}: {about}"))
    for e in rc["evidence"]:
        out.append(st.dim(f"  {_loc(e)}: ") + _cut(e["text"].strip()))
    out.append("")
    if diag.initiating_rank is not None:
        host = f" on {diag.initiating_host}" if diag.initiating_host else ""
        out.append(st.bold(f"Initiating rank: {diag.initiating_rank}{host}"))
    else:
        out.append(st.bold("Initiating rank: unknown (the log does not tell)"))
    for r in diag.reasoning:
        out.append(f"  {r}")
    if diag.collateral:
        out.append("")
        out.append(st.bold("Collateral:"))
        for g in diag.collateral:
            ranks = (f"rank{'s' if len(g['ranks']) > 1 else ''} {format_ranks(g['ranks'])}") if g["ranks"] else "no rank"
            first = g["evidence"][0] if g["evidence"] else None
            loc = f" (first at {_loc(first)})" if first else ""
            out.append(f"  - {g['title']} — {ranks} ({g['count']} line{'s' if g['count'] != 1 else ''}){loc}")
    out.append("")
    out.append(st.bold("Fix:"))
    for i, step in enumerate(rc["fix"]["steps"], 1):
        out.append(f"  {i}. {step}")
    code = rc["fix"].get("code", {})
    for stack in (list(code) if all_stacks else _stacks_to_show(diag, code)):
        out.append(st.cyan(f"  [{_STACK_NAMES.get(stack, stack)}]"))
        out.extend(f"    {line}" for line in code[stack].rstrip().splitlines())
    out.append("")
    out.append(st.bold("Confirm:"))
    out.extend(f"  - {c}" for c in rc["confirm"])
    out.append(st.bold("Verify: ") + rc["verify"])
    if blanks := unfilled_placeholders(rc["verify"]):
        out.append(st.dim(f"  (fill in {', '.join(blanks)} before running it)"))
    if rc["related"]:
        out.append(st.bold("Related: ") + ", ".join(f"{r['title']} ({r['id']})" for r in rc["related"]))
    if rc["references"]:
        out.append(st.dim("References: " + " ".join(rc["references"])))
    for w in diag.warnings:
        out.append(st.dim(f"warning: {w}"))
    return "\n".join(out) + "\n"


def to_markdown(diag: Diagnosis) -> str:
    """The report as Markdown (for issues, PR comments and CI summaries)."""
    rc = diag.root_cause
    out: list[str] = []
    if rc is None:
        out.append("## rootrank: no known failure found\n")
        if diag.unclassified:
            u = diag.unclassified
            ev = u.evidence[0]
            rank = f" on rank {u.rank}" if u.rank is not None else ""
            out.append(f"Last exception{rank} (unclassified): `{u.title}` at `{ev.path}:{ev.line}`\n")
        return "\n".join(out)
    out.append(f"## Root cause: {rc['title']}\n")
    meta = [f"class `{rc['failure_class']}`", f"signature `{rc['signature']}`", f"confidence {rc['confidence']:.2f}"]
    if rc["rank"] is not None:
        meta.append(f"rank {rc['rank']}")
    if rc.get("host"):
        meta.append(f"host `{rc['host']}`")
    out.append(" · ".join(meta) + "\n")
    if about := describe(rc["failure_class"]):
        out.append(f"*{rc['failure_class']}*: {about}\n")
    out.append("```text")
    out.extend(f"{_loc(e)}: {_cut(e['text'].strip())}" for e in rc["evidence"])
    out.append("```\n")
    out.append(f"{rc['summary']}\n")
    out.append("### Initiating rank\n")
    if diag.initiating_rank is not None:
        host = f" on `{diag.initiating_host}`" if diag.initiating_host else ""
        out.append(f"**Rank {diag.initiating_rank}**{host}.\n")
    else:
        out.append("Unknown: the log does not tell.\n")
    out.extend(f"- {r}" for r in diag.reasoning)
    out.append("")
    if diag.collateral:
        out.append("### Collateral\n")
        out.append("| kind | ranks | lines |")
        out.append("| --- | --- | --- |")
        for g in diag.collateral:
            out.append(f"| {g['title']} | {format_ranks(g['ranks']) or '-'} | {g['count']} |")
        out.append("")
    out.append("### Fix\n")
    out.extend(f"{i}. {s}" for i, s in enumerate(rc["fix"]["steps"], 1))
    out.append("")
    code = rc["fix"].get("code", {})
    for stack in code:
        out.append(f"**{_STACK_NAMES.get(stack, stack)}**\n")
        out.append("```")
        out.append(code[stack].rstrip())
        out.append("```\n")
    out.append("### Confirm\n")
    out.extend(f"- [ ] {c}" for c in rc["confirm"])
    out.append("\n**Verify:**\n")
    out.append("```bash")
    out.append(rc["verify"])
    out.append("```\n")
    if blanks := unfilled_placeholders(rc["verify"]):
        out.append(f"Fill in {', '.join(f'`{b}`' for b in blanks)} before running it.\n")
    if rc["related"]:
        out.append("### Related\n")
        out.extend(f"- {r['title']} (`{r['id']}`)" for r in rc["related"])
        out.append("")
    if rc["references"]:
        out.append("References: " + ", ".join(f"<{u}>" for u in rc["references"]))
    return "\n".join(out) + "\n"
