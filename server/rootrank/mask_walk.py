"""Masking by walking a result: every string a face can show goes through one
:class:`rootrank.mask.Masker`, field by field, without a list of fields to forget.

:func:`mask_result` walks dataclass fields recursively (a :class:`rootrank.model.Diagnosis`
and everything in it), lists, tuples and dicts, and masks each string it meets: dict keys and
values alike. A field opts out only by saying what it holds, in its metadata
(``field(metadata=HOST)`` or ``field(metadata=OURS)``, :mod:`rootrank.model`):

- ``{"mask": "host"}``: a host name, replaced by its pseudonym (:meth:`Masker.host`, so a
  bare ``gpu-node-018`` is masked even with no word around it);
- ``{"mask": "ours"}``: rootrank's own words (signature ids, class slugs, the entry's text
  rendered from values that were masked before they filled it), never rewritten;
- ``{"mask": "about_path"}``: rootrank's sentences that begin with the path they are about,
  ``"<path>: <what>"`` (the report's warnings): the path and the rest are masked apart
  (:func:`_about_path`), so ``tl2: the folder ...`` keeps its folder name where the whole
  line would read as a pdsh host prefix (``node01: ...``);
- anything else, including a new field nobody marked: log text, :meth:`Masker.text`.

So a field added to the contract is masked by default; leaving it raw takes a decision
written next to the field.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

from rootrank.mask import Masker
from rootrank.model import Diagnosis

TEXT, HOST, OURS, ABOUT_PATH = "text", "host", "ours", "about_path"


T = TypeVar("T")


def mask_result(value: T, masker: Masker, how: str = TEXT) -> T:
    """``value`` with every string masked by ``masker``: a dataclass instance is masked in
    place (each field as its metadata says, :data:`TEXT` when it says nothing) and returned;
    lists, tuples and dicts come back as new containers (dict keys masked as text); other
    values (numbers, ``None``, booleans) unchanged. ``how`` says how the strings of ``value``
    itself are masked: :data:`TEXT`, :data:`HOST` or :data:`OURS` (left as they are).
    Returns ``value`` itself when the masker is disabled. Never raises for a masking timeout
    (:meth:`Masker.text` withholds the string instead)."""
    if not masker.enabled:
        return value
    return cast(T, _walk(value, masker, how))


def _walk(value: Any, masker: Masker, how: str) -> Any:
    if how == OURS:
        return value
    if isinstance(value, str):
        if how == HOST:
            return masker.host(value)
        return _about_path(value, masker) if how == ABOUT_PATH else masker.text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            how_f = f.metadata.get("mask", TEXT)
            setattr(value, f.name, _walk(getattr(value, f.name), masker, how_f))
        return value
    if isinstance(value, list):
        return [_walk(v, masker, how) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, masker, how) for v in value)
    if isinstance(value, dict):
        return {_walk(k, masker, TEXT): _walk(v, masker, how) for k, v in value.items()}
    return value


def _about_path(sentence: str, masker: Masker) -> str:
    """``sentence`` masked as ``"<path>: <rest>"``: the part before the first ``": "``, when
    it has no space (a path, ``tl2``, ``logs/slurm-7.out``), masked on its own (user names,
    and a host only where a path shows one, as the report's ``sources`` are), the rest as log
    text; a sentence of another shape (``"not read: ..."``) as log text whole."""
    head, sep, rest = sentence.partition(": ")
    if not sep or not head or any(c.isspace() for c in head):
        return masker.text(sentence)
    return masker.text(head) + sep + masker.text(rest)


def mask_diagnosis(diag: Diagnosis, masker: Masker) -> Diagnosis:
    """Mask, in place, every string of ``diag`` (:func:`mask_result`) and return it. Hosts
    become stable pseudonyms ``host-1``...; the mapping stays in ``masker``, which the engine
    seeds in rank order before the analysis, so ``host-1`` is the host of the lowest rank.

    Every host the evidence lines name is learned first (a ``MASTER_ADDR=`` line may come
    after a line that names the same host in passing), so one host reads the same in every
    field. Evidence columns still index the original line. A finding's title is its
    signature's (rootrank's words, which masking would garble: ``FSDP2: ...`` reads as a
    host and port), except the unclassified finding's, which quotes the exception."""
    for f in [*diag.findings, *([diag.unclassified] if diag.unclassified else [])]:
        for e in f.evidence:
            masker.text(e.text)
    if diag.unclassified is not None:
        diag.unclassified.title = masker.text(diag.unclassified.title)
    return mask_result(diag, masker)
