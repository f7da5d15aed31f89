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


def _english(template: str) -> str:
    """``template`` with the placeholders whose words would not read as English rewritten
    first: "a {exc_type}" -> "an exception", '"{message}"' -> "the message" (no quotes: the
    words are not the log's text)."""

    def article(m: re.Match[str]) -> str:
        words = indefinite_words(m.group(2))
        return words[0].upper() + words[1:] if m.group(1) == "A" else words

    template = _ARTICLE_PLACEHOLDER.sub(article, template)
    return _QUOTED_PLACEHOLDER.sub(lambda m: "{" + m.group(1) + "}", template)


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
        return out.replace("<rank>", words_for("rank")).replace("<host>", words_for("host"))

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
