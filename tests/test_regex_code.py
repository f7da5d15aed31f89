"""The patterns parsed at build time (:mod:`rootrank.regex_code`) are the ones ``regex``
compiles: the same arguments to the native constructor for every stored pattern (the code up
to the order of a character set's members, which ``regex`` lists in set order and which
differs from one process to the next for ~20% of patterns: ``^(4|8|10)$`` starts with the set
{4, 8, 1} as ``4 8 1`` in one run and ``8 4 1`` in another), and the same matches; any other
pattern, or a file from another ``regex``, is compiled as before."""

from __future__ import annotations

import marshal
from pathlib import Path

import regex

from rootrank import built_code, regex_code

_SAMPLES = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    '  File "/home/u/train.py", line 12, in <module>',
    "Traceback (most recent call last):",
    "[E ProcessGroupNCCL.cpp:1191] [Rank 5] Watchdog caught collective operation timeout",
    "torchrun --nproc_per_node 8 train.py --lr 3e-4",
    "",
)


def test_every_stored_pattern_is_what_regex_compiles(tmp_path: Path) -> None:
    assert "parsed patterns" in built_code.build(tmp_path)
    table = regex_code.load(tmp_path / "regex_code.bin")
    assert len(table) > 1000  # module-level, signature and condition patterns
    for (pattern, flags), stored in table.items():
        args, again = marshal.loads(stored), regex_code.arguments(pattern, flags)
        assert again is not None
        assert args[:2] + args[3:] == again[:2] + again[3:], pattern
        assert sorted(args[2]) == sorted(again[2]), pattern  # the code, up to set order
        built, fresh = regex_code._regex.compile(*args), regex.compile(pattern, flags)
        assert (built.pattern, built.flags, built.groupindex) == (
            fresh.pattern,
            fresh.flags,
            fresh.groupindex,
        )
        for text in _SAMPLES:
            got, want = built.search(text), fresh.search(text)
            assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups()))


def test_compile_falls_back_to_regex(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(regex_code, "_table", {})
    pat = regex_code.compile(r"(?P<n>\d+) ranks?", regex.IGNORECASE)
    assert pat.search("on 12 Ranks").group("n") == "12"
    assert regex_code.search(r"lo+p", "a looop") is not None
    out = tmp_path / "regex_code.bin"
    out.write_bytes(marshal.dumps((("0.0", 0), {("x", 0): b""})))
    assert regex_code.load(out) == {}
    out.write_bytes(b"\x00garbage")
    assert regex_code.load(out) == {}


def test_locale_patterns_are_not_stored() -> None:
    assert regex_code.arguments(r"(?L)\w+") is None
    assert regex_code.arguments(r"\w+", regex.LOCALE) is None
    assert regex_code.arguments(r"\w+") is not None
