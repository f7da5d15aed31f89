"""The hover text: a finding's library entry as Markdown.

The verdict first, as an engineer reads it at 3 a.m.: the finding's title and role (on
which rank, host, when), the root cause's one-line fix and its verification command; then,
after a rule, the entry: what happened, why (the mechanism), the fix (steps, then code for
the stack seen in the log), how to confirm, related failures. Placeholders the log does
not fill read as words (``rootrank.entry.render``), never ``None``.
The text comes from the signature (``rootrank.signatures``) and the diagnosis; nothing
here matches log text.
"""

from __future__ import annotations

import re
import time as _time
from typing import Any

from rootrank import re_code
from rootrank.entry import render
from rootrank.signatures import STACKS, Library, Signature

from .diagnostics import FindingAt

_PLACEHOLDER = re_code.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_template(text: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders (signature template syntax); a missing value renders
    as ``<name>``, as :mod:`rootrank.signatures` specifies."""

    def fill(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        return f"<{match.group(1)}>" if value is None or value == "" else str(value)

    return _PLACEHOLDER.sub(fill, text)


def template_values(finding: dict[str, Any], diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The values a finding offers to templates: its captures, ``rank`` and ``host``."""
    values: dict[str, Any] = dict(finding.get("captures") or {})
    if not values:
        for other in diagnosis.get("findings") or []:
            if other.get("signature") == finding.get("signature") and other.get(
                "rank"
            ) == finding.get("rank"):
                values = dict(other.get("captures") or {})
                break
    values["rank"] = finding.get("rank")
    values["host"] = finding.get("host")
    return values


def pick_stack(signature: Signature, diagnosis: dict[str, Any]) -> str | None:
    """The ``fix.code`` stack to show: the first stack the log shows that has code, else
    ``pytorch``, else the first one the signature has."""
    code = signature.fix.get("code") or {}
    for stack in diagnosis.get("stack") or []:
        if stack in code:
            return str(stack)
    if "pytorch" in code:
        return "pytorch"
    return next((s for s in STACKS if s in code), None)


def format_time(seconds: Any) -> str | None:
    """A UTC time for a finding (``None`` when unknown); a log that printed only the
    time of day (dated 1970-01-01 by the engine) shows only the time."""
    if not isinstance(seconds, (int, float)):
        return None
    stamp = _time.gmtime(seconds)
    if stamp.tm_year == 1970:
        return _time.strftime("%H:%M:%S", stamp)
    return _time.strftime("%Y-%m-%d %H:%M:%S UTC", stamp)


def verify_command(signature: Signature, finding: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    """The verification command with the finding's values filled in."""
    if finding is diagnosis.get("root_cause") and isinstance(finding.get("verify"), str):
        return str(finding["verify"])
    return render_template(signature.verify, template_values(finding, diagnosis))


def _where(rank: Any, host: Any, bold: bool = True) -> str:
    b = "**" if bold else ""
    parts = []
    if rank is not None:
        parts.append(f"rank {b}{rank}{b}")
    if host:
        parts.append(f"host {b}{host}{b}")
    return ", ".join(parts)


def verdict_markdown(diagnosis: dict[str, Any], library: Library) -> list[str]:
    """The diagnosis's answer in three lines of Markdown: the root cause with its
    initiating rank and host, the one-line fix (the first fix step), the verification
    command (a code block). ``[]`` without a root cause."""
    root = diagnosis.get("root_cause") or {}
    if not root:
        return []
    rank = diagnosis.get("initiating_rank")
    if rank is None and root.get("rank") is not None:
        # the engine names no initiating rank (victims only, or conflicting evidence): the
        # rank of the root finding's line only reported it, as the CLI's details say
        where = f"reported on rank **{root['rank']}**"
    else:
        where = _where(rank, diagnosis.get("initiating_host") or root.get("host"))
    out = [
        f"**Root cause:** {root.get('title') or root.get('signature')}"
        + (f" — {where}" if where else "")
    ]
    steps = (root.get("fix") or {}).get("steps") if isinstance(root.get("fix"), dict) else None
    if steps:
        out += ["", f"**Fix:** {steps[0]}"]
    verify = root.get("verify")
    if not verify:
        signature = library.get(str(root.get("signature")))
        verify = signature.verify if signature else None
    if verify:
        out += ["", "**Verify:**", "```sh", str(verify), "```"]
    return out


#: What the hover of a root-cause line takes from ``root_cause`` over the matching finding:
#: its facts, and the entry fields the engine renders for the log (rootrank.entry).
_ROOT_FACTS = ("confidence", "host", "title")
_ROOT_ENTRY = ("summary", "mechanism", "symptoms", "fix", "confirm")


def hover_markdown(at: FindingAt, diagnosis: dict[str, Any], library: Library) -> str:
    """The Markdown shown when hovering a line of ``at``'s finding.

    The verdict comes first (the finding's title, its role with rank and host, then the
    root cause's one-line fix and verification command); the entry's details follow a rule."""
    finding = at.finding
    root = diagnosis.get("root_cause") or {}
    if at.kind == "root" and root:
        # The root cause's own facts (confidence, host) over the matching finding's, and its
        # entry as the engine rendered it for this log (the fix steps and confirm name the
        # script and launch the log shows: `python train_bad_data.py`, not the library's
        # `python train.py`); a finding of the same signature and rank carries neither.
        finding = {
            **finding,
            **{
                k: root[k]
                for k in (*_ROOT_FACTS, *_ROOT_ENTRY)
                if root.get(k) is not None and root.get(k) != ""
            },
        }
    sig_id = str(finding.get("signature"))
    signature = library.get(sig_id)
    title = finding.get("title") or (signature.title if signature else sig_id)
    out: list[str] = [f"### {title}", ""]

    where = []
    if finding.get("rank") is not None:
        # the root finding's rank is the answer only when the engine names it initiating
        reported = at.kind == "root" and diagnosis.get("initiating_rank") != finding["rank"]
        where.append(f"{'reported on ' if reported else ''}rank **{finding['rank']}**")
    if finding.get("host"):
        where.append(f"host **{finding['host']}**")
    when = format_time(finding.get("time"))
    if when:
        where.append(f"at {when}")
    if at.kind == "root":
        line = "**Root cause**"
        if isinstance(finding.get("confidence"), (int, float)):
            line += f" (confidence {finding['confidence']:.2f})"
    elif at.kind == "collateral":
        line = "**Collateral**: explained by the root cause " + (
            f"`{root.get('signature')}`"
            + (
                f" on rank {diagnosis['initiating_rank']}"
                if diagnosis.get("initiating_rank") is not None
                else (f" reported on rank {root['rank']}" if root.get("rank") is not None else "")
            )
        )
    else:
        line = "**Also seen**"
    if where:
        line += " — " + ", ".join(where)
    count = finding.get("count")
    if isinstance(count, int) and count > 1:
        line += f" ({count} lines)"
    out += [line, ""]
    verdict = verdict_markdown(diagnosis, library)
    if at.kind == "root":
        verdict = verdict[1:]  # the title and the rank are already above
        while verdict and not verdict[0]:
            verdict = verdict[1:]
        verdict = ["#### Verify" if v == "**Verify:**" else v for v in verdict]
    if verdict:
        out += [*verdict, ""]
    facts = [f"`{sig_id}`"]
    if finding.get("failure_class"):
        facts.append(f"class `{finding['failure_class']}`")
    out += ["---", "", " · ".join(facts), ""]

    if signature is None:
        return "\n".join(out).rstrip() + "\n"
    values = template_values(finding, diagnosis)
    # The root cause arrives with its entry already rendered by the engine; other
    # findings are rendered here from their signature.
    rendered = at.kind == "root"
    entry = signature.entry

    def field(name: str, fallback: Any) -> Any:
        value = finding.get(name) if rendered else None
        return value if value else fallback

    summary = field("summary", render(str(entry.get("summary", "")), values))
    mechanism = field("mechanism", render(str(entry.get("mechanism", "")), values))
    out += ["#### What happened", str(summary).strip(), ""]
    out += ["#### Why", str(mechanism).strip(), ""]
    symptoms = field("symptoms", entry.get("symptoms") or [])
    if symptoms:
        out += [f"- `{s.get('text')}`: {s.get('meaning')}" for s in symptoms if isinstance(s, dict)]
        out.append("")
    out.append("#### Fix")
    fix = field("fix", None)
    fix = fix if isinstance(fix, dict) else {}
    steps = fix.get("steps") or [render(str(s), values) for s in signature.fix.get("steps") or []]
    for number, step in enumerate(steps, start=1):
        out.append(f"{number}. {step}")
    stack = pick_stack(signature, diagnosis)
    if stack:
        code = (fix.get("code") or {}).get(stack) or signature.fix["code"][stack]
        language = "json" if stack == "deepspeed" else "sh" if stack == "megatron" else "python"
        out += ["", f"For **{stack}**:", f"```{language}", str(code).rstrip(), "```"]
    out.append("")
    confirm = field("confirm", [render(c, values) for c in signature.confirm])
    if confirm:
        out.append("#### Confirm")
        out += [f"- {c}" for c in confirm]
        out.append("")
    if at.kind != "root":  # the root cause's command is in the verdict above
        out += ["#### Verify", "```sh", verify_command(signature, finding, diagnosis), "```", ""]
    if signature.related:
        related = []
        for rel in signature.related:
            other = library.get(rel)
            related.append(f"`{rel}`" + (f" ({other.title})" if other else ""))
        out += ["#### Related", ", ".join(related), ""]
    if signature.references:
        out.append("References: " + " · ".join(f"<{ref}>" for ref in signature.references))
    return "\n".join(out).rstrip() + "\n"
