"""``rootrank signatures ID``: find one library entry by its id (or part of it) and show it
whole, as text or JSON.

The entry shown is the one the editor's "Browse Failure Library" shows
(:func:`rootrank.lsp.entry_view.readable_entry`, which needs no pygls): prose placeholders
read as words ("the requested size"), code and commands keep visible ``<name>`` blanks.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import Any

from rootrank.lsp.entry_view import readable_entry
from rootrank.signatures import Library, Signature

#: Most ids named in an error about a query that matched none or several.
MAX_NAMED = 8


class NoSuchSignature(LookupError):
    """A query that names no single signature. ``str(e)`` is one line for the user."""


def find_signature(library: Library, query: str) -> Signature:
    """The signature ``query`` names: its exact id, else the only id that contains it
    (case-insensitive). A part of an id that several ids contain names none of them: they
    are listed (``oom`` is in cuda-oom, host-oom-killer and five more).

    Raises:
        NoSuchSignature: none matches (the message names the closest ids) or several do
            (the message names them, at most :data:`MAX_NAMED`).
    """
    ids = sorted(library.signatures)
    q = query.strip().lower()
    if q in library.signatures:
        return library.signatures[q]
    matches = [i for i in ids if q in i]
    if len(matches) == 1:
        return library.signatures[matches[0]]
    if matches:
        shown = ", ".join(matches[:MAX_NAMED])
        more = f" and {len(matches) - MAX_NAMED} more" if len(matches) > MAX_NAMED else ""
        raise NoSuchSignature(
            f"{query!r} matches {len(matches)} signatures: {shown}{more}; give more of the id"
        )
    close = difflib.get_close_matches(q, ids, n=5, cutoff=0.5)
    hint = f"; closest ids: {', '.join(close)}" if close else ""
    raise NoSuchSignature(
        f"no signature id matches {query!r}{hint} (rootrank signatures lists them all)"
    )


def entry_json(signature: Signature) -> dict[str, Any]:
    """The whole entry as JSON: ``Signature.to_entry()`` made readable, plus ``kind``."""
    entry = readable_entry(signature.to_entry())
    entry["kind"] = signature.kind or signature.role
    return entry


def entry_text(signature: Signature, width: int = 100) -> str:
    """The whole entry as text: title, class, kind, what it means, symptoms, the fix with
    each of its variants (steps, code per stack, verify), confirm, verify, references."""
    e = entry_json(signature)
    body, fix = e.get("entry") or {}, e.get("fix") or {}
    out = [f"{e['id']}: {e['title']}", ""]
    out.append(
        f"class: {e['failure_class']}   category: {e['category']}   kind: {e['kind']}"
        f"   severity: {e['severity']}"
    )
    if e.get("affects"):
        out.append(f"affects: {', '.join(e['affects'])}")
    if e.get("tags"):
        out.append(f"tags: {', '.join(e['tags'])}")

    def para(text: str, indent: str = "  ", hang: str = "") -> None:
        """``text`` wrapped at ``width``; lines after the first indented by ``hang`` more."""
        lines = textwrap.wrap(
            " ".join(str(text).split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent + hang,
        )
        out.extend(lines or [indent.rstrip()])

    def code_blocks(code: dict[str, str], indent: str) -> None:
        for stack, snippet in code.items():
            out.append(f"{indent}{stack}:")
            out.extend(f"{indent}    {line}" for line in str(snippet).rstrip("\n").splitlines())

    out += ["", "What it means:"]
    for key in ("summary", "mechanism"):
        if body.get(key):
            para(body[key])
    if body.get("symptoms"):
        out += ["", "Symptoms:"]
        for s in body["symptoms"]:
            if isinstance(s, dict):
                out.append(f"  - {s.get('text', '')}")
                if s.get("meaning"):
                    para(s["meaning"], "      ")
    out += ["", "Fix:"]
    for n, step in enumerate(fix.get("steps") or [], 1):
        para(f"{n}. {step}", "  ", "   ")
    if isinstance(fix.get("code"), dict):
        code_blocks(fix["code"], "  ")
    for v in fix.get("variants") or []:
        when = v.get("when") or {}
        cond = "; ".join(f"{k} matches /{pat}/" for k, pat in when.items()) or "otherwise"
        out += ["", f"  variant {v.get('id', '?')} (when {cond}):"]
        if v.get("title"):
            out.append(f"    title: {v['title']}")
        for n, step in enumerate(v.get("steps") or [], 1):
            para(f"{n}. {step}", "    ", "   ")
        if isinstance(v.get("code"), dict):
            code_blocks(v["code"], "    ")
        if v.get("verify"):
            out.append(f"    verify: {v['verify']}")
    if e.get("confirm"):
        out += ["", "Confirm:"]
        for c in e["confirm"]:
            para(f"- {c}", "  ", "  ")
    if e.get("verify"):
        out += ["", "Verify:", f"  {e['verify']}"]
    if e.get("references"):
        out += ["", "References:", *(f"  {r}" for r in e["references"])]
    if e.get("related"):
        out += ["", f"Related: {', '.join(e['related'])}"]
    return "\n".join(out) + "\n"
