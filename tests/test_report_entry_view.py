"""Library entries as a person reads them without a log (Browse Failure Library, "Open the
full entry"): no raw ``{placeholder}`` anywhere, words in prose, ``<blank>`` in commands."""

from __future__ import annotations

import json
import re

from rootrank.lsp.entry_view import readable_entry, words_for

RAW = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def test_every_library_entry_reads_without_raw_placeholders(library):
    for signature in library.signatures.values():
        entry = readable_entry(signature.to_entry())
        text = json.dumps({k: entry[k] for k in ("entry", "fix", "confirm", "verify")})
        assert not RAW.search(text), (signature.id, RAW.findall(text))
        assert "rank None" not in text and "rank ?" not in text, signature.id


def test_placeholders_read_as_words_in_prose_and_blanks_in_commands(library):
    oom = readable_entry(library.get("cuda-oom").to_entry())
    assert "could not find the requested size of free device memory" in oom["entry"]["summary"]
    assert oom["verify"].startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc-per-node=<gpus>"
    )
    watchdog = readable_entry(library.get("nccl-watchdog-timeout").to_entry())
    assert watchdog["entry"]["summary"].startswith(
        "A collective (SeqNum N, its OpType) did not complete"
    )
    assert "(N ms)" in watchdog["entry"]["summary"]
    # The signature itself is unchanged (the entry is a copy).
    assert "{seqnum}" in library.get("nccl-watchdog-timeout").entry["summary"]


def test_words_for_unlisted_names():
    assert words_for("param_index") == "the param index"
    assert words_for("size") == "the requested size"


# an article before a "the ..." reading
_ARTICLE_THE = re.compile(r"\b[Aa]n? the\b")


def test_every_library_entry_reads_as_english_without_captures(library):
    """Trial r16 finding 6: "died on a the exception type", 'The exception says: "the
    message"'. An article before a placeholder takes the indefinite reading, and a quoted
    placeholder's reading loses its quotes, in every entry's prose."""
    for signature in library.signatures.values():
        entry = readable_entry(signature.to_entry())
        text = json.dumps({k: entry[k] for k in ("entry", "fix", "confirm")}).replace('\\"', '"')
        assert not _ARTICLE_THE.search(text), (signature.id, _ARTICLE_THE.findall(text))
        raw = json.dumps(signature.to_entry()).replace('\\"', '"')
        for name in set(re.findall(r'"\{([a-z_]+)\}"', raw)):
            assert f'"{words_for(name)}"' not in text, (signature.id, name)
    user = readable_entry(library.get("user-code-exception").to_entry())
    assert user["entry"]["summary"].startswith(
        "The process died on an exception raised from Python code."
    )
    assert user["fix"]["steps"][0].startswith("The exception says: the message: its own words")


def test_no_placeholder_reads_as_words_inside_code_or_as_a_count(library, monkeypatch):
    """Trial r21 finding 14: "Dynamo recompiled a function the limit times (config.the limit
    name)". A placeholder inside code (``config.{limit_name}``, ``op={op}``,
    ``attempt_0/{rank}/``, a backquoted ``{code}``) is a ``<name>`` blank, a count
    (``{limit} times``, ``a {step}th time``) is N, and no reading follows "the" or a word's
    own letters, in every entry."""
    import rootrank.lsp.entry_view as ev

    real = ev._Words.get

    def marked(self, key, default=None):
        value = real(self, key, default)
        return value if value is None else "\u00ab" + value + "\u00bb"

    monkeypatch.setattr(ev._Words, "get", marked)
    leak = re.compile(
        r"[\w.=/`-]\u00ab|\u00bb[\w=/`]|\u00ab[^\u00bb]*\u00bb times\b|\bthe \u00abthe "
    )
    for signature in library.signatures.values():
        entry = ev.readable_entry(signature.to_entry())
        text = json.dumps({k: entry[k] for k in ("entry", "fix", "confirm")}, ensure_ascii=False)
        assert not leak.search(text), (signature.id, leak.findall(text))
    monkeypatch.undo()
    child = json.dumps(readable_entry(library.get("elastic-child-failed").to_entry()))
    # (the folder is the local rank the failure summary names, a blank when it does not)
    assert "attempt_0/<local_rank_dir>/stderr.log" in child and "/the failing rank/" not in child
    dynamo = readable_entry(library.get("dynamo-recompile-limit").to_entry())
    assert dynamo["entry"]["summary"].startswith(
        "Dynamo recompiled a function N times (config.<limit_name>) because"
    )
