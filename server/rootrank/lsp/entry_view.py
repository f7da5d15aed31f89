"""A library entry as a person reads it when no log fills it (Browse Failure Library, and
"Open the full entry" on a finding): every ``{placeholder}`` of the signature's prose
becomes words ("the requested size"), every placeholder of a command or code becomes a
visible blank (``<size>``) that the user types, never raw template syntax. Filling is
``rootrank.entry.render``; only the words for names live here (presentation text).
"""

from __future__ import annotations

import re
from typing import Any

from rootrank import re_code
from rootrank.entry import render

#: Names whose plain-words reading is not "the <name with spaces>".
_WORDS = {
    "size": "the requested size",
    "expected_size": "the expected size",
    "seqnum": "N",
    "optype": "its OpType",
    "op": "the operation",
    "timeout_ms": "N",
    "rank": "the failing rank",
    "peer_rank": "the peer rank",
    "host": "the failing host",
    "port": "the port",
    "pid": "the process id",
    "xid": "the Xid code",
    "pci": "the GPU's PCI address",
    "hca": "the InfiniBand adapter",
    "iface": "the network interface",
    "numel": "the element count",
    "jobid": "the job id",
    "exc_type": "the exception type",
    "exc": "the exception",
    "kv_tokens": "the KV-cache size in tokens",
    "world_size": "the world size",
}


#: Names whose reading after an indefinite article ("died on a {exc_type}") is not
#: "a/an <words without 'the'>".
_INDEFINITE = {"exc_type": "an exception", "exc": "an exception"}

# A placeholder after "a"/"an" (whose words start with "the": "a the exception type"), and a
# quoted one ('says: "{message}"', whose words in quotes read as the log's own text).
_ARTICLE_PLACEHOLDER = re_code.compile(r"\b([Aa])n? \{([A-Za-z_]\w*)\}")
_QUOTED_PLACEHOLDER = re_code.compile(r"[\"\u201c]\{([A-Za-z_]\w*)\}[\"\u201d]")


def indefinite_words(name: str) -> str:
    """The reading of placeholder ``name`` after an indefinite article, the article included:
    ``"exc_type"`` -> ``"an exception"``, ``"port"`` -> ``"a port"``."""
    if name in _INDEFINITE:
        return _INDEFINITE[name]
    bare = words_for(name).removeprefix("the ")
    return ("an " if bare[:1].lower() in "aeiou" else "a ") + bare


# A placeholder inside code or a command in prose (``config.{limit_name}``, ``op={op}``,
# ``--exclude={host}``, ``attempt_0/{rank}/stderr.log``, ``returncode -{signum}``): next to
# an identifier's or option's characters, where words would read as part of the code.
_CODE_PLACEHOLDER = re_code.compile(
    r"(?<=[\w.=/:`-])\{([A-Za-z_]\w*)\}|\{([A-Za-z_]\w*)\}(?=[\w=/`])"
)
# A placeholder right after another (``rank {rank}{note}``): an optional suffix the log fills
# (" (printed ...)") or leaves empty; with no log it is left out.
_SUFFIX_PLACEHOLDER = re_code.compile(r"(?<=\})\{[A-Za-z_]\w*\}")
# A placeholder that counts (``{limit} times``, ``a {step}th time``): a number, not a noun.
_COUNT_PLACEHOLDER = re_code.compile(r"(?:\b(an?) )?\{([A-Za-z_]\w*)\}(?: times\b|th\b)")
# "the {size}" whose words begin with "the" themselves ("the the requested size").
# (or after another determiner: "has no {attr}", "its {where}").
_THE_PLACEHOLDER = re_code.compile(
    r"\b((?:[Tt]he|[Nn]o|[Ii]ts|[Aa]ny|[Ee]ach|[Ee]very|[Tt]his|[Tt]hat) )\{([A-Za-z_]\w*)\}"
)
# A ``<rank>``/``<host>`` blank an entry wrote in prose, not inside a path or an option.
_PROSE_BLANK = re_code.compile(r"(?<![\w./=:`-])<(rank|host)>(?![\w/=`])")
# How _english marks a code placeholder until the words are filled: \x00name\x01 (a
# ``<name>`` written at once would meet prose()'s ``<rank>``/``<host>`` words).
_CODE_MARK = re_code.compile(r"\x00(\w+)\x01")


def _english(template: str) -> str:
    """``template`` with the placeholders whose words would not read as English rewritten
    first: "a {exc_type}" -> "an exception", '"{message}"' -> "the message" (no quotes: the
    words are not the log's text), "the {size}" -> "the requested size" (one "the"; likewise
    after "no", "its", "each"...), a count
    ("{limit} times", "a {step}th time") -> "N times", "an N-th time", an optional suffix right
    after another placeholder ("rank {rank}{note}") left out, and a placeholder inside
    code (``config.{limit_name}``, ``op={op}``, ``attempt_0/{rank}/``) -> a mark that
    :func:`_code_blanks` turns into a visible ``<name>`` blank (words there read as code: new-user
    trial r21 finding 14, "config.the limit name")."""

    def article(m: re.Match[str]) -> str:
        words = indefinite_words(m.group(2))
        return words[0].upper() + words[1:] if m.group(1) == "A" else words

    def count(m: re.Match[str]) -> str:
        times = " times" if m.group(0).endswith(" times") else "-th"
        lead = {"a": "an ", "A": "An ", "an": "an ", "An": "An "}.get(m.group(1) or "", "")
        return f"{lead}N{times}"

    def the(m: re.Match[str]) -> str:
        words = words_for(m.group(2))
        if not words.startswith("the "):
            return m.group(0)
        return m.group(1) + words.removeprefix("the ")

    template = _SUFFIX_PLACEHOLDER.sub("", template)
    template = _COUNT_PLACEHOLDER.sub(count, template)
    template = _CODE_PLACEHOLDER.sub(
        lambda m: "\x00" + (m.group(1) or m.group(2)) + "\x01", template
    )
    template = _ARTICLE_PLACEHOLDER.sub(article, template)
    template = _QUOTED_PLACEHOLDER.sub(lambda m: "{" + m.group(1) + "}", template)
    return _THE_PLACEHOLDER.sub(the, template)


def _code_blanks(text: str) -> str:
    """``text`` with :func:`_english`'s code marks as ``<name>`` blanks."""
    return _CODE_MARK.sub(r"<\1>", text)


def words_for(name: str) -> str:
    """The reading of placeholder ``name`` in prose: ``"size"`` -> ``"the requested size"``,
    an unlisted ``"param_index"`` -> ``"the param index"``."""
    return _WORDS.get(name) or "the " + name.replace("_", " ")


class _Words(dict):  # type: ignore[type-arg]
    """Template values that read every name as words (``render`` asks ``.get``)."""

    def get(self, key: Any, default: Any = None) -> Any:
        # rank/host: None, so render() writes its phrases ("rank {rank}" -> "the failing rank").
        return None if key in ("rank", "host") else words_for(str(key))


class _Blanks(dict):  # type: ignore[type-arg]
    """Template values that leave every name as a visible blank ``<name>``."""

    def get(self, key: Any, default: Any = None) -> Any:
        return f"<{key}>"


def readable_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """``Signature.to_entry()`` with its templates filled for reading: prose (summary,
    mechanism, symptom meanings, fix steps, confirm) in words, code and the verification
    command with ``<name>`` blanks. Returns a new dict; ``entry`` is not changed."""
    words, blanks = _Words(), _Blanks()

    def prose(text: Any) -> str:
        out = render(_english(str(text)), words)
        # a written ``<rank>``/``<host>`` blank reads as words, but inside a path or option
        # (``attempt_0/<rank>/stderr.log``, ``--exclude=<host>``), where it stays the blank
        out = _PROSE_BLANK.sub(lambda m: words_for(m.group(1)), out)
        return _code_blanks(out)

    out = dict(entry)
    body = dict(entry.get("entry") or {})
    for key in ("summary", "mechanism"):
        if isinstance(body.get(key), str):
            body[key] = prose(body[key])
    if isinstance(body.get("symptoms"), list):
        body["symptoms"] = [
            {**s, "meaning": prose(s.get("meaning", ""))} if isinstance(s, dict) else s
            for s in body["symptoms"]
        ]
    out["entry"] = body
    fix = dict(entry.get("fix") or {})
    if isinstance(fix.get("steps"), list):
        fix["steps"] = [prose(s) for s in fix["steps"]]
    if isinstance(fix.get("code"), dict):
        fix["code"] = {k: render(str(v), blanks) for k, v in fix["code"].items()}
    if isinstance(fix.get("variants"), list):  # fixes chosen by evidence (rootrank.entry.variants)
        fix["variants"] = [
            {
                **v,
                "steps": [prose(s) for s in v.get("steps") or []],
                # a variant's own summary and mechanism (a thread's death, not the process's)
                **{k: prose(v[k]) for k in ("summary", "mechanism") if isinstance(v.get(k), str)},
                **(
                    {"code": {k: render(str(c), blanks) for k, c in v["code"].items()}}
                    if isinstance(v.get("code"), dict)
                    else {}
                ),
                **(
                    {"verify": render(v["verify"], blanks)}
                    if isinstance(v.get("verify"), str)
                    else {}
                ),
            }
            if isinstance(v, dict)
            else v
            for v in fix["variants"]
        ]
    out["fix"] = fix
    out["confirm"] = [prose(c) for c in entry.get("confirm") or []]
    if isinstance(entry.get("verify"), str):
        out["verify"] = render(entry["verify"], blanks)
    return out
