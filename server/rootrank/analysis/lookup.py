"""A ``KeyError`` from a label or vocabulary table indexed by a value the data holds.

Mechanism: a table that maps a class id to its name (``ID2LABEL[t]``, ``label2id[name]``,
``classes[y]``, ``vocab[tok]``) is built once from the configuration, while the key comes from
the data (a record's label, a token). A record whose label is not in the table (a class id
beyond ``num_labels``, a label spelled otherwise, a shard made for another label set) raises
``KeyError: 3`` at the first line that looks it up, on the rank that read that record; the
others wait for it or are stopped. The table and the code are fine for every other record: the
data is what differs (class ``data-error``), and the fix names the value and the table
(heldout r20c case 05: ``name = ID2LABEL[t]`` raising ``KeyError: 3`` on rank 1 only).

Needed: the exception is a ``KeyError`` the generic reading would take (no signature reads its
line), raised at a user line whose code subscripts a name of a lookup table
(:data:`LOOKUP_TABLE`) with a bare variable (a literal key is the code's, not the data's), and
the key the message quotes is a short scalar (an integer or a word).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.prepare import exceptions_per_rank
from rootrank.model import Finding
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature it makes (``detector: analysis``).
LOOKUP_SIGNATURE = "label-lookup-missing-key"
#: ``TABLE[var]``: a lookup table's name (labels, classes, a vocabulary, an x2y map) indexed
#: by a bare variable or attribute (group ``table``, ``var``).
LOOKUP_TABLE = lazy_regex.compile(
    r"(?i)(?<![\w.])(?P<table>(?:\w+\.)?(?:id_?2_?label|label_?2_?id|idx_?2_?\w{1,20}|\w{1,20}_?2_?idx"
    r"|labels?(?:_(?:map|names|dict|lookup|table|to_\w{1,20}))?|class(?:es|_names|_map|_to_\w{1,20})?"
    r"|categor(?:y|ies)(?:_(?:map|names))?|vocab(?:ulary)?|token_?2_?id|id_?2_?token|stoi|itos"
    r"|\w{1,20}_?to_?(?:label|name|class|id|idx)s?))\s*\[\s*(?P<var>[A-Za-z_][\w.]{0,40})\s*\]"
)
#: A key as KeyError prints it: an integer, or a short quoted word.
_SCALAR_KEY = lazy_regex.compile(r"^(?:-?\d{1,12}|'[^']{1,40}'|\"[^\"]{1,40}\")$")


def label_lookup_errors(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """Findings of :data:`LOOKUP_SIGNATURE`, one per rank, for the KeyErrors the module
    describes; captures ``key`` (as printed, quotes dropped), ``table``, ``var``, ``code`` and
    ``where`` (``file:line``). Empty when the signature is missing."""
    return exceptions_per_rank(
        LOOKUP_SIGNATURE, ("KeyError",), findings, state, library, _lookup_captures
    )


def _lookup_captures(seen: SeenException) -> dict[str, str] | None:
    """The captures of :func:`label_lookup_errors` for ``seen`` (``key``, ``table``, ``var``,
    ``code``, ``where``, ``func``), or ``None`` when its user line indexes no table by a
    scalar key."""
    if not seen.exc.frames:
        return None
    key = seen.exc.message.strip()
    if not _SCALAR_KEY.match(key):
        return None
    raising = next((fr for fr in reversed(seen.exc.frames) if fr.code), None)
    if raising is None or not raising.user:
        return None
    m = LOOKUP_TABLE.search(raising.code)
    if m is None:
        return None
    return {
        "key": key.strip("'\""),
        "table": m["table"],
        "var": m["var"],
        "code": raising.code.strip(),
        "where": f"{raising.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{raising.line}",
        "func": raising.func,
    }
