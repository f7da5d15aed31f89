"""The patterns parsed at build time (:mod:`rootrank.regex_code`) are the ones ``regex``
compiles: the same arguments to the native constructor for every stored pattern (the code up
to the order of a character set's members, which ``regex`` lists in set order and which
differs from one process to the next for ~20% of patterns: ``^(4|8|10)$`` starts with the set
{4, 8, 1} as ``4 8 1`` in one run and ``8 4 1`` in another), and the same matches; any other
pattern, or a file from another ``regex``, is compiled as before; the functions and flags
:mod:`rootrank.regex_code` offers are ``regex``'s, and a start that needs only stored patterns
loads ``regex``'s native module alone."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
import regex

from rootrank import built_code, regex_code

SERVER = Path(__file__).resolve().parents[1] / "server"

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
        built, fresh = regex_code._native().compile(*args), regex.compile(pattern, flags)
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


def test_flags_are_regex_own() -> None:
    assert regex_code.IGNORECASE == int(regex.IGNORECASE)
    assert regex_code.LOCALE == int(regex.LOCALE)
    assert regex_code.VERBOSE == int(regex.VERBOSE)
    assert regex_code.VERSION0 == int(regex.VERSION0)


@pytest.mark.parametrize("stored", [True, False])
def test_functions_are_regex_own(monkeypatch: pytest.MonkeyPatch, stored: bool) -> None:
    if not stored:
        monkeypatch.setattr(regex_code, "_table", {})
        monkeypatch.setattr(regex_code, "_made", {})
    rx, flags = r"(?P<rank>\d+)[:,]?", int(regex.IGNORECASE)
    if stored:
        table = dict(regex_code.load())
        table[(rx, flags)] = marshal.dumps(regex_code.arguments(rx, flags))
        monkeypatch.setattr(regex_code, "_table", table)
    for text in (*_SAMPLES, "ranks 3, 5 and 12:"):
        assert regex_code.findall(rx, text, flags) == regex.findall(rx, text, flags=flags)
        assert regex_code.split(rx, text, 1, flags) == regex.split(rx, text, 1, flags=flags)
        assert regex_code.sub(rx, r"<\g<rank>>", text, 2, flags) == regex.sub(
            rx, r"<\g<rank>>", text, 2, flags=flags
        )
        for name in ("search", "match", "fullmatch"):
            got = getattr(regex_code, name)(rx, text, flags)
            want = getattr(regex, name)(rx, text, flags=flags)
            assert (got and got.span()) == (want and want.span())
    assert regex_code.escape("a.b*") == regex.escape("a.b*")
    assert regex_code.error is regex.error


def test_a_tiny_log_starts_without_the_regex_package(tmp_path: Path) -> None:
    """Every pattern a 3-line OOM log needs is stored: only ``regex``'s native module is
    loaded, and ``regex``, when imported after, uses that same module."""
    if not regex_code.load():
        pytest.skip("regex_code.bin is not built (python -m rootrank.library_file)")
    log = tmp_path / "train.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 3, in <module>\n'
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    code = (
        "import sys\n"
        "from rootrank import cli\n"
        f"sys.argv = ['rootrank', 'diagnose', {str(log)!r}]\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "loaded = 'regex' in sys.modules, 'regex._regex' in sys.modules\n"
        "native = sys.modules['regex._regex']\n"
        "import regex\n"
        "from regex import _regex\n"
        "print(loaded, _regex is native, regex.search('a+', 'baa').span(), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert "cuda-oom" in out.stdout.lower() or "out of memory" in out.stdout.lower()
    assert out.stderr.strip().splitlines()[-1] == "(False, True) True (1, 3)"
