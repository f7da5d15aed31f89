"""Renderers for a :class:`~rootrank.model.Diagnosis`: text (for people), JSON, Markdown.

The order is fixed for every format: root cause, initiating rank with the reasoning,
collateral (one line per kind), the fix (with code for the stack seen in the log), how to
confirm and the verification command, related failures.
"""

from __future__ import annotations

import json
from typing import Any

from rootrank import lazy_regex
from rootrank.analysis.reasons import format_ranks
from rootrank.entry.variants import GENERAL_WHY
from rootrank.headline import headline
from rootrank.mask import USER, pseudonyms_in
from rootrank.model import Diagnosis, Evidence, Finding, RootCause, UserFrame
from rootrank.taxonomy import describe

# A blank the user fills in (<gpus>, <failing step + 10>): never to be run as it stands, since
# a shell reads "<gpus> train.py" as redirections (it would truncate train.py).
# A bare "..." word stands for the rest of the user's command line.
#: The initiator strategy of a run ``rootrank run`` started as one process
#: (rootrank.analysis.initiator.one_process): no rank exists to name.
ONE_PROCESS = "one_process"
_PLACEHOLDER = lazy_regex.compile(r"<[A-Za-z][^<>\n]{0,60}>|(?<![^\s])\.\.\.(?![^\s])")


#: What a verification's blank stands for, said beside it when the log could not fill it
#: (rootrank.entry.commands fills each one the log tells: the script, the process count...).
BLANK_MEANING = {
    "<train.py>": "the script your launch runs",
    "<n>": "processes per node, as you launched",
    "<gpus>": "GPUs per node",
    "<node rank>": "this node's index, 0 on the first node",
    "<nnodes>": "the number of nodes",
    "<master host>": "the first node's host name",
    "<hostfile>": "the DeepSpeed hostfile that lists the job's nodes",
    "<port>": "a free port, the same on every node",
    "<ds_config.json>": "the DeepSpeed config your launch passes",
    "<your launch command>": "the command that started the job",
    "<your launch script>": "the job script that starts the launch",
    "<first host>": "the first node's host name",
    "<free port>": "a port no other job uses",
    "...": "the rest of your launch command",
}


def blanks_said(blanks: list[str], quote: str = "") -> str:
    """``blanks`` joined for the "fill in" note, each with what it stands for
    (:data:`BLANK_MEANING`) when known: ``<train.py> (the script your launch runs), <x>``;
    ``quote`` wraps each blank (a backtick for Markdown)."""
    return ", ".join(
        f"{quote}{b}{quote}" + (f" ({BLANK_MEANING[b]})" if b in BLANK_MEANING else "")
        for b in blanks
    )


def unfilled_placeholders(command: str) -> list[str]:
    """The blanks in ``command`` (``<placeholder>`` and a bare ``...``), in order, each once."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(command.split("  # ", 1)[0])))


_STACK_NAMES = {
    "pytorch": "PyTorch",
    "hf": "Hugging Face Trainer / Accelerate",
    "deepspeed": "DeepSpeed",
    "megatron": "Megatron-LM",
    "vllm": "vLLM",
    "lightning": "PyTorch Lightning",
    "fsdp": "PyTorch FSDP",
    "sglang": "SGLang",
    "lmdeploy": "LMDeploy",
    "verl": "verl",
    "openrlhf": "OpenRLHF",
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


def _alike(diag: Diagnosis, signature: str) -> str:
    """The note a collateral group of the root's own signature gets when no initiating rank
    was named: those ranks failed the same way, and the log does not tell who was first (the
    root is only the copy shown), so they are not the root's effects; else ``""``."""
    rc = diag.root_cause
    if rc is None or diag.initiating_rank is not None or signature != rc.signature:
        return ""
    return " (the same failure as the root cause's; the log does not tell which rank was first)"


def _loc(e: Evidence) -> str:
    return f"{e.path}:{e.line}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 line"``, ``"2 lines"`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def user_frame(finding: RootCause | Finding) -> UserFrame | None:
    """The innermost frame in the user's own code: the root cause's ``user_frame`` when the
    engine found one, else the last ``frames`` entry with ``user`` true (frames are innermost
    last); ``None`` when the traceback has none."""
    if isinstance(finding, RootCause) and finding.user_frame and finding.user_frame.file:
        return finding.user_frame
    for f in reversed(finding.frames):
        if f.get("user") and f.get("file") and isinstance(f.get("line"), int):
            return UserFrame(file=str(f["file"]), line=f["line"], func=str(f.get("func") or ""))
    return None


def waited_for(rc: RootCause, rank: int | None) -> bool:
    """Whether the initiating ``rank`` is the one the root cause's reporters waited for: the
    ranks that reported it (``rc.ranks``: the victims' watchdog timeouts) do not include it
    (it was silent, or failed otherwise), so the headline reads "... caused by rank 2", never
    "... on rank 2" as if rank 2 had printed it. The extension applies the same rule
    (``extension/src/report/diagnosis.ts`` waitedFor)."""
    return rank is not None and bool(rc.ranks) and rank not in rc.ranks


def verdict(diag: Diagnosis) -> dict[str, Any] | None:
    """The answer in a few facts, for the first lines of every face: ``title``, ``where``
    ("rank 5 on host node-b", or ``None`` when the log tells neither), ``rank``, ``host``,
    ``on`` (the words before ``where``: ``"on"``, or ``"caused by"`` when the ranks that
    reported the root cause do not include it: :func:`waited_for`), ``fix`` (the first fix step, or ``None``), ``verify`` (the command, or ``None``),
    ``blanks`` (its unfilled placeholders), ``log`` (``path:line`` of the first evidence line)
    and ``code`` (``file:line`` of the user's own frame, or ``None``). ``None`` without a
    root cause."""
    rc = diag.root_cause
    if rc is None:
        return None
    # The headline names a rank only when it started the failure: a rank that only reported
    # it (a victim's watchdog line) is shown in the details, never as the answer.
    rank = diag.initiating_rank
    host = diag.initiating_host or (rc.host if rc.rank is None else None)
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if host:
        parts.append(f"host {host}")
    steps = rc.fix.steps
    verify = rc.verify or None
    first = rc.evidence[0] if rc.evidence else None
    frame = user_frame(rc)
    return {
        "title": rc.title,
        "rank": rank,
        "host": host,
        "where": ", ".join(parts) if parts else None,
        "on": "caused by" if waited_for(rc, rank) else "on",
        # the first step cut to its location, cause and action (the whole step is in the list)
        "fix": headline(steps[0]) if steps else None,
        "verify": verify,
        "blanks": unfilled_placeholders(verify) if verify else [],
        # host pseudonyms the masking put into the command: the user must put the real name
        "masked": pseudonyms_in(verify) if verify else [],
        "log": _loc(first) if first else None,
        "code": f"{frame.file}:{frame.line}" if frame else None,
        "func": frame.func if frame else None,
    }


def _weighed(diag: Diagnosis) -> list[str]:
    """The reasoning of a diagnosis with no root cause, but the sentence its heading already
    says: what was weighed and set aside (an error its process survived, the runs)."""
    return [r for r in diag.reasoning if not r.startswith("No known failure found.")]


def to_text(diag: Diagnosis, *, color: bool = False, all_stacks: bool = False) -> str:
    """A compact report for a terminal; ``color`` adds ANSI colour (use only on a TTY).

    The first lines are the verdict (root cause, initiating rank and host, the one-line
    fix, the verification command); the details follow."""
    st = _Style(color)
    out: list[str] = []
    rc = diag.root_cause
    v = verdict(diag)
    if rc is None or v is None:
        if diag.unclassified:  # a failure (exit 3), not a healthy run: say so first
            u = diag.unclassified
            ev = u.evidence[0]
            rank = f" on rank {u.rank}" if u.rank is not None else ""
            out.append(st.red("Unclassified failure") + st.bold(f"{rank}: {u.title}"))
            out.append(st.dim(f"  at {ev.path}:{ev.line}"))
            out.append("No signature names this exception: read it and its traceback above it.")
        else:
            out.append(st.bold("No known failure found."))
        out.extend(f"  {r}" for r in _weighed(diag))
        if not diag.unclassified and diag.findings:
            out.append("Only warnings were found; nothing in the log shows a failure:")
            for f in diag.findings[:5]:
                out.append(f"  - {f.title} ({f.evidence[0].path}:{f.evidence[0].line})")
        if diag.metrics:  # training curves (rootrank.charts)
            from rootrank.charts import text_lines  # imported only for a log with curves

            out.append(st.bold("Training curves:"))
            out.extend(text_lines(diag.metrics))
        out.append(
            st.dim(
                f"{plural(diag.lines_read, 'line')} read from {plural(len(diag.sources), 'source')}."
            )
        )
        for w in diag.warnings:  # what was left out: a healthy verdict covers only what was read
            out.append(st.dim(f"warning: {w}"))
        return "\n".join(out) + "\n"
    out.append(
        st.red("Root cause: ")
        + st.bold(v["title"])
        + (f" {v['on']} {v['where']}" if v["where"] else "")
    )
    at = [x for x in (v["code"], v["log"]) if x]
    if at:
        out.append(st.dim("  at " + " · ".join(at)))
    if v["fix"]:
        out.append(st.bold("Fix: ") + v["fix"])
    if v["verify"]:
        out.append(st.bold("Verify: ") + v["verify"])
        if v["blanks"]:
            masked = f"; `--no-mask` shows the real {USER}" if USER in v["blanks"] else ""
            out.append(st.dim(f"  (fill in {blanks_said(v['blanks'])} before running it{masked})"))
        if v["masked"]:
            out.append(st.dim(f"  ({', '.join(v['masked'])}: masked names; use the real ones)"))
    out.append("")
    where = []
    if rc.rank is not None:
        same = diag.initiating_rank == rc.rank
        where.append(f"rank {rc.rank}" if same else f"reported on rank {rc.rank}")
    if rc.host:
        where.append(f"host {rc.host}")
    out.append(st.bold("Details"))
    out.append(
        f"  class {rc.failure_class} · signature {rc.signature} · confidence {rc.confidence:.2f}"
        + (f" · {', '.join(where)}" if where else "")
    )
    if about := describe(rc.failure_class):
        out.append(st.dim(f"  {rc.failure_class}: {about}"))
    for e in rc.evidence:
        out.append(st.dim(f"  {_loc(e)}: ") + _cut(e.text.strip()))
    if uf := rc.user_frame:  # the user's own line (issue 15)
        out.append(f"  in your code: {uf.file}:{uf.line}" + (f" ({uf.func})" if uf.func else ""))
    out.append("")
    if diag.initiating_rank is not None:
        host = f" on {diag.initiating_host}" if diag.initiating_host else ""
        out.append(st.bold(f"Initiating rank: {diag.initiating_rank}{host}"))
    elif diag.initiator is not None and diag.initiator.strategy == ONE_PROCESS:
        out.append(st.bold("Initiating rank: none (one process, no ranks)"))
    else:
        out.append(st.bold("Initiating rank: unknown (the log does not tell)"))
    for r in diag.reasoning:
        out.append(f"  {r}")
    if diag.collateral:
        out.append("")
        out.append(st.bold("Collateral:"))
        for g in diag.collateral:
            ranks = (
                (f"rank{'s' if len(g.ranks) > 1 else ''} {format_ranks(g.ranks)}")
                if g.ranks
                else "no rank"
            )
            first = g.evidence[0] if g.evidence else None
            loc = f" (first at {_loc(first)})" if first else ""
            alike = _alike(diag, g.signature)
            out.append(f"  - {g.title} — {ranks} ({plural(g.count, 'line')}){loc}{alike}")
    out.append("")
    variant = rc.fix.variant
    note = variant.why if variant is not None and variant.why != GENERAL_WHY else ""
    # "Fix (for this log, because the log gives collective barrier):": the variant's reason
    # as a clause, so the heading reads as one sentence
    out.append(
        st.bold("Fix") + (st.dim(f" (for this log, because {note})") if note else "") + st.bold(":")
    )
    for i, step in enumerate(rc.fix.steps, 1):
        out.append(f"  {i}. {step}")
    code = rc.fix.code
    for stack in list(code) if all_stacks else _stacks_to_show(diag, code):
        out.append(st.cyan(f"  [{_STACK_NAMES.get(stack, stack)}]"))
        out.extend(f"    {line}" for line in code[stack].rstrip().splitlines())
    out.append("")
    out.append(st.bold("Confirm:"))
    out.extend(f"  - {c}" for c in rc.confirm)
    if rc.related:
        out.append(st.bold("Related: ") + ", ".join(f"{r.title} ({r.id})" for r in rc.related))
    if rc.references:
        out.append(st.dim("References: " + " ".join(rc.references)))
    if diag.metrics:  # training curves (rootrank.charts)
        from rootrank.charts import text_lines  # imported only for a log with curves

        out.append(st.bold("Training curves:"))
        out.extend(text_lines(diag.metrics))
    for w in diag.warnings:
        out.append(st.dim(f"warning: {w}"))
    return "\n".join(out) + "\n"


#: An inline code span of Markdown (its text is shown as is, so it is not escaped).
_CODE_SPAN = lazy_regex.compile(r"(`[^`\n]*`)")


def _md(text: str) -> str:
    """``text`` (which may quote the log) safe as Markdown prose: ``&``, ``<`` and ``>``
    outside inline code spans become entities, so ``(in <module>)`` shows as written and a
    log's ``<script>`` or ``<img onerror=...>`` stays text; code spans are kept whole."""
    parts = _CODE_SPAN.split(text)
    return "".join(
        p if i % 2 else p.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for i, p in enumerate(parts)
    )


def to_markdown(diag: Diagnosis) -> str:
    """The report as Markdown (for issues, PR comments and CI summaries)."""
    rc = diag.root_cause
    out: list[str] = []
    if rc is None:
        if diag.unclassified:  # a failure (exit 3), not a healthy run
            u = diag.unclassified
            ev = u.evidence[0]
            rank = f" on rank {u.rank}" if u.rank is not None else ""
            out.append(f"## rootrank: unclassified failure{rank}\n")
            out.append(
                f"`{u.title}` at `{ev.path}:{ev.line}`: no signature names this exception.\n"
            )
        else:
            out.append("## rootrank: no known failure found\n")
        if weighed := _weighed(diag):
            out.extend(f"- {_md(r)}" for r in weighed)
            out.append("")
        out.extend(_markdown_curves(diag))
        return "\n".join(out)
    v = verdict(diag)
    assert v is not None
    out.append(
        f"## Root cause: {_md(rc.title)}"
        + (f" {v['on']} {_md(v['where'])}" if v["where"] else "")
        + "\n"
    )
    verdict_lines = []
    at = [f"`{x}`" for x in (v["code"], v["log"]) if x]
    if at:
        verdict_lines.append(f"- **At:** {' · '.join(at)}")
    if v["fix"]:
        verdict_lines.append(f"- **Fix:** {_md(v['fix'])}")
    if v["verify"]:
        verdict_lines.append(f"- **Verify:** `{v['verify']}`")
    if verdict_lines:
        out.extend(verdict_lines)
        out.append("")
    out.append("### Details\n")
    meta = [
        f"class `{rc.failure_class}`",
        f"signature `{rc.signature}`",
        f"confidence {rc.confidence:.2f}",
    ]
    if rc.rank is not None:
        meta.append(f"rank {rc.rank}")
    if rc.host:
        meta.append(f"host `{rc.host}`")
    out.append(" · ".join(meta) + "\n")
    if about := describe(rc.failure_class):
        out.append(f"*{rc.failure_class}*: {about}\n")
    out.append("```text")
    out.extend(f"{_loc(e)}: {_cut(e.text.strip())}" for e in rc.evidence)
    out.append("```\n")
    out.append(f"{_md(rc.summary)}\n")
    out.append("### Initiating rank\n")
    if diag.initiating_rank is not None:
        host = f" on `{diag.initiating_host}`" if diag.initiating_host else ""
        out.append(f"**Rank {diag.initiating_rank}**{host}.\n")
    elif diag.initiator is not None and diag.initiator.strategy == ONE_PROCESS:
        out.append("None: one process, no ranks.\n")
    else:
        out.append("Unknown: the log does not tell.\n")
    out.extend(f"- {_md(r)}" for r in diag.reasoning)
    out.append("")
    if diag.collateral:
        out.append("### Collateral\n")
        out.append("| kind | ranks | lines |")
        out.append("| --- | --- | --- |")
        for g in diag.collateral:
            kind = _md(g.title) + _md(_alike(diag, g.signature))
            out.append(f"| {kind} | {format_ranks(g.ranks) or '-'} | {g.count} |")
        out.append("")
    out.append("### Fix\n")
    if (variant := rc.fix.variant) and variant.why != GENERAL_WHY:
        out.append(f"_Chosen for this log because {_md(variant.why)}._\n")
    out.extend(f"{i}. {_md(s)}" for i, s in enumerate(rc.fix.steps, 1))
    out.append("")
    code = rc.fix.code
    shown = _stacks_to_show(diag, code)
    for stack in shown:
        out.append(f"**{_STACK_NAMES.get(stack, stack)}**\n")
        out.append("```")
        out.append(code[stack].rstrip())
        out.append("```\n")
    # The other stacks' code one click away (GitHub renders <details>).
    for stack in (s for s in code if s not in shown):
        out.append(f"<details><summary>{_STACK_NAMES.get(stack, stack)}</summary>\n")
        out.append("```")
        out.append(code[stack].rstrip())
        out.append("```\n")
        out.append("</details>\n")
    out.append("### Confirm\n")
    out.extend(f"- [ ] {_md(c)}" for c in rc.confirm)
    out.append("\n**Verification command:**\n")
    out.append("```bash")
    out.append(rc.verify)
    out.append("```\n")
    if blanks := unfilled_placeholders(rc.verify):
        out.append(f"Fill in {blanks_said(blanks, '`')} before running it.\n")
    if rc.related:
        out.append("### Related\n")
        out.extend(f"- {_md(r.title)} (`{r.id}`)" for r in rc.related)
        out.append("")
    out.extend(_markdown_curves(diag))
    if rc.references:
        out.append("References: " + ", ".join(f"<{u}>" for u in rc.references))
    return "\n".join(out) + "\n"


def _markdown_curves(diag: Diagnosis) -> list[str]:
    """The training curves as an embedded SVG image and their onsets as a list."""
    if not diag.metrics:
        return []
    from rootrank.charts import svg_data_uri  # imported only for a log with curves

    uri = svg_data_uri(diag.metrics)
    if uri is None:
        return []
    out = ["### Training curves\n", f"![training curves]({uri})\n"]
    out.extend(
        f"- `{o.kind}` in {m.name}"
        + (f" (rank {o.rank})" if o.rank is not None else "")
        + f" at step {o.step}, `{o.path}:{o.line}`: {o.why}"
        for m in diag.metrics
        for o in m.onsets
    )
    out.append("")
    return out
