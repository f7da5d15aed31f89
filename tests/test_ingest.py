"""Ingestion: decoding, ANSI, progress bars, glued ranks, JSON tracebacks, line numbers."""

from __future__ import annotations

import codecs
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank.ingest import (
    MAX_LINE_BYTES,
    InputError,
    clean,
    logical_lines,
    read_blocks,
    strip_ansi,
    text_blocks,
)


def _flatten(blocks):
    out = []
    for block in blocks:
        for i, physical in enumerate(block.text.split("\n")):
            out.extend(logical_lines(block.first_line + i, physical))
    return out


def lines_of(data: bytes, **kw):
    return _flatten(read_blocks(io.BytesIO(data), **kw))


def test_blocks_end_on_line_boundaries_and_number_lines_across_blocks():
    data = b"".join(b"line %d\n" % i for i in range(1, 2001))
    blocks = list(read_blocks(io.BytesIO(data), block_bytes=1000))
    assert len(blocks) > 5
    assert all(not b.text.endswith("\n") for b in blocks)
    got = lines_of(data, block_bytes=1000)
    assert [(l.number, l.text) for l in got] == [(i, f"line {i}") for i in range(1, 2001)]
    assert all(b.lower_bytes == b.text.encode().lower() for b in blocks)


def test_invalid_utf8_is_kept_as_replacement_and_numbers_hold():
    out = lines_of(b"ok\nbad \xff\xfe byte\nlast\n")
    assert [(l.number, l.text) for l in out] == [
        (1, "ok"),
        (2, "bad \ufffd\ufffd byte"),
        (3, "last"),
    ]


def test_ansi_codes_and_escapeless_leftovers_are_removed():
    assert strip_ansi("\x1b[1;31mRuntimeError\x1b[0m: boom") == "RuntimeError: boom"
    assert strip_ansi("[1;36mINFO[0m started") == "INFO started"
    assert strip_ansi("1;36mwarning text") == "warning text"
    # ordinary text with digits and 'm' is untouched
    assert strip_ansi("timeout 10m at [rank3]: step 5") == "timeout 10m at [rank3]: step 5"
    assert strip_ansi("op_0 [missing ranks: 0] [model]") == "op_0 [missing ranks: 0] [model]"
    assert strip_ansi("[0mINFO done") == "INFO done"


def test_progress_bar_overwrites_collapse_to_last_frame():
    raw = " 10%|#         | 1/10\r 50%|#####     | 5/10\r100%|##########| 10/10"
    assert clean(raw) == ["100%|##########| 10/10"]
    # CRLF: the trailing \r is dropped, nothing else changes
    out = lines_of(b"first\r\nsecond\r\n")
    assert [l.text for l in out] == ["first", "second"]


def test_glued_rank_output_is_split_and_keeps_the_line_number():
    out = lines_of(b"x\n[rank0]: step 3 loss 0.1[rank1]: Traceback (most recent call last):\n")
    assert [(l.number, l.text) for l in out] == [
        (1, "x"),
        (2, "[rank0]: step 3 loss 0.1"),
        (2, "[rank1]: Traceback (most recent call last):"),
    ]


def test_json_traceback_is_expanded_into_lines():
    line = '{"message": {"message": "ValueError: bad", "extraInfo": {"py_callstack": "Traceback (most recent call last):\\n  File \\"/w/train.py\\", line 3, in <module>\\n    main()\\nValueError: bad\\n"}}}'
    out = _flatten(text_blocks(line))
    texts = [l.text for l in out]
    assert "ValueError: bad" in texts
    assert '  File "/w/train.py", line 3, in <module>' in texts
    assert {l.number for l in out} == {1}


def test_utf16_log_is_decoded():
    data = codecs.BOM_UTF16_LE + "line one\r\nRuntimeError: CUDA error: out of memory\r\n".encode(
        "utf-16-le"
    )
    out = lines_of(data)
    assert [l.text for l in out] == ["line one", "RuntimeError: CUDA error: out of memory"]


def test_binary_data_is_refused_with_one_clear_error():
    with pytest.raises(InputError, match="binary"):
        lines_of(bytes(range(256)) * 64)


def test_overlong_line_is_read_whole_in_pieces_and_the_next_line_keeps_its_number():
    data = b"a" * (MAX_LINE_BYTES * 2 + 10) + b"\nnext\n"
    out = lines_of(data)
    assert [l.number for l in out] == [1, 1, 1, 2]  # three pieces of line 1, none lost
    assert [len(l.text) for l in out[:3]] == [MAX_LINE_BYTES, MAX_LINE_BYTES, 10]
    assert out[3].text == "next"


def test_empty_input_yields_nothing():
    assert lines_of(b"") == []


def test_an_error_after_megabytes_of_progress_frames_on_one_line_is_kept():
    import io

    from rootrank.ingest import MAX_LINE_BYTES, logical_lines, read_blocks

    frames = "".join(f"\r {i}%|{'#' * (i // 5)}| {i}/100" for i in range(100))
    oom = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    for copies in (MAX_LINE_BYTES // len(frames) + 2, 6 * MAX_LINE_BYTES // len(frames)):
        data = ("step 1\n" + frames * copies + "\r" + oom + "\nstep 2\n").encode()
        lines = [
            (raw.number, raw.text)
            for block in read_blocks(io.BytesIO(data))
            for n, physical in enumerate(block.text.split("\n"), block.first_line)
            for raw in logical_lines(n, physical)
        ]
        # each piece of the long line shows its last frame; the error is the line's last
        assert lines[0] == (1, "step 1") and lines[-2:] == [(2, oom), (3, "step 2")], copies
        middle = lines[1:-2]
        assert middle and all(n == 2 and "%|" in text for n, text in middle), copies


@given(
    st.lists(
        st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),  # any bytes: bad UTF-8 too
        max_size=60,
    ),
    st.sampled_from([b"", b"\n"]),
    st.integers(min_value=8, max_value=256),
)
@settings(max_examples=300, deadline=None)
def test_a_blocks_newlines_are_its_texts_and_number_the_next_block(lines, end, size):
    """The reader counts a block's newlines once, on its bytes (a decode with replacement
    never adds or drops a ``\\n``): the count is the text's, and the next block's first line
    follows from it, whatever the bytes."""
    data = b"\n".join(lines) + end
    blocks = list(read_blocks(io.BytesIO(data), block_bytes=size, sniff=False))
    number = 1
    for block in blocks:
        assert block.first_line == number
        if not block.continues:
            assert block.newlines == block.text.count("\n")
            number = block.first_line + block.newlines + 1
