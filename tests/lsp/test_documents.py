"""Unit tests of the adapter's pure parts: lines, positions, edits, globs, settings."""

from __future__ import annotations

import operator
from itertools import accumulate, count

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from rootrank.lsp.documents import DEFAULT_GLOBS, LogDocument, is_log_document, split_lines
from rootrank.lsp.lines import LineMap, engine_line_starts
from rootrank.lsp.positions import UTF8, UTF16, UTF32, from_client_units, to_client_units
from rootrank.lsp.settings import Settings


def doc(text: str) -> LogDocument:
    return LogDocument.open(
        types.TextDocumentItem(uri="file:///w/a.log", language_id="log", version=1, text=text)
    )


def edit(
    document: LogDocument, l1: int, c1: int, l2: int, c2: int, text: str, encoding: str = UTF16
) -> None:
    document.apply(
        types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=l1, character=c1),
                end=types.Position(line=l2, character=c2),
            ),
            text=text,
        ),
        encoding,
    )


def test_split_lines_uses_lsp_breaks_only() -> None:
    assert split_lines("a\nb\r\nc\rd") == ["a\n", "b\r\n", "c\r", "d"]
    assert split_lines("a\x0cb\u2028c\n") == ["a\x0cb\u2028c\n"]  # not str.splitlines()
    assert split_lines("") == []


def test_positions_count_utf16_units() -> None:
    line = "ok 😀 é x"  # the emoji is 2 UTF-16 units, 4 UTF-8 bytes; é is 2 UTF-8 bytes
    x = line.index("x")
    assert to_client_units(line, x, UTF16) == x + 1
    assert to_client_units(line, x, UTF8) == x + 4
    assert to_client_units(line, x, UTF32) == x
    assert from_client_units(line, x + 1, UTF16) == x
    assert from_client_units(line, 10_000, UTF16) == len(line)


def test_incremental_edits_splice_lines() -> None:
    document = doc("one\ntwo 😀 three\nfour\n")
    edit(document, 1, 7, 1, 8, "X")  # after the emoji (UTF-16 column 7 = code point 6)
    assert document.text == "one\ntwo 😀 Xhree\nfour\n"
    edit(document, 0, 3, 2, 0, "")  # join lines 0..2
    assert document.lines == ["onefour\n"]
    edit(document, 5, 0, 5, 0, "tail\n")  # past the end appends
    assert document.text == "onefour\ntail\n"
    edit(document, 0, 0, 0, 0, "a\nb\n")
    assert document.lines == ["a\n", "b\n", "onefour\n", "tail\n"]


def test_line_map_follows_lone_carriage_returns() -> None:
    # The engine counts "\n" lines (a lone "\r" is a progress-bar overwrite); editors break there.
    document = doc("10%\r50%\r100% done\nRuntimeError: boom\n")
    line_map = LineMap(document, UTF16)
    assert line_map.editor_position(2, 0) == (3, 0)
    assert line_map.editor_position(1, 8) == (2, 0)
    rng = line_map.range(2, 0, 12)
    assert (rng.start.line, rng.start.character, rng.end.character) == (3, 0, 12)
    crlf = LineMap(doc("a\r\nb\r\n"), UTF16)
    assert crlf.editor_position(2, 1) == (1, 1)


def test_which_names_are_logs() -> None:
    globs = DEFAULT_GLOBS
    assert is_log_document("file:///r/slurm-99.out", "plaintext", globs)
    assert is_log_document("file:///r/attempt_0/3/stderr.log", "plaintext", globs)
    assert is_log_document("file:///r/attempt_0/3/error.json", "json", globs)
    assert is_log_document("untitled:Untitled-1", "log", globs)
    assert not is_log_document("file:///r/train.py", "python", globs)
    assert not is_log_document("file:///r/notes.md", "markdown", globs)
    assert not is_log_document("file:///r/run.log", "python", globs)


def test_settings_accept_both_shapes_and_keep_good_values() -> None:
    settings = Settings().updated({"rootrank": {"signatureFolders": ["team"], "mask": False}}, "/w")
    assert settings.signature_folders == ("/w/team",) and settings.mask is False
    kept = settings.updated({"mask": "no", "documentGlobs": ["*.log"]}, "/w")
    assert kept.mask is False and kept.document_globs == ("*.log",)
    assert kept.problems == ("rootrank.mask must be true or false",)
    assert kept.updated({"documentGlobs": []}).document_globs == DEFAULT_GLOBS


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "😀", "\n", "\r", "\r\n", " "]), max_size=40))
def test_engine_line_starts_are_those_of_the_text_split_on_newlines(parts: list[str]) -> None:
    # The map's engine line starts come from the editor's lines (no copy of the text as a
    # list of strings); they must be the offsets text.split("\n") gives, past-the-end included.
    text = "".join(parts)
    lines = split_lines(text)
    editor_starts = [0, *accumulate(map(len, lines))]
    lengths = accumulate(map(len, text.split("\n")))
    assert list(engine_line_starts(lines, editor_starts)) == [
        0,
        *map(operator.add, lengths, count(1)),
    ]
    # And every engine position lands where the offsets say (the map with a lone "\r").
    line_map = LineMap(doc(text), UTF32)
    offset = 0
    for number, piece in enumerate(text.split("\n"), start=1):
        line, column = line_map.editor_position(number, len(piece))
        assert sum(map(len, lines[:line])) + column == offset + len(piece)
        offset += len(piece) + 1
