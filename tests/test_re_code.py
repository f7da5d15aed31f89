"""The standard-library patterns compiled at build time (:mod:`rootrank.re_code`) are the
ones ``re.compile`` makes: ``re.Pattern`` equality compares the pattern text, its flags and
its compiled code, so an equal pattern matches alike; every module-level pattern made through
:func:`rootrank.re_code.compile` is stored; any other pattern, or a file from another
interpreter, is compiled as before."""

from __future__ import annotations

import marshal
import re
from pathlib import Path

from rootrank import built_code, dataclass_code, re_code


def test_every_stored_pattern_is_what_re_compiles(tmp_path: Path) -> None:
    assert "compiled standard-library patterns" in built_code.build(tmp_path)
    table = re_code.load(tmp_path / "re_code.bin")
    assert len(table) > 30  # rank tags, masking's pre-tests, the binary sniff, the LSP's...
    for (pattern, flags), stored in table.items():
        built = re_code._sre.compile(*marshal.loads(stored))
        fresh = re.compile(pattern, flags)
        assert built == fresh, pattern  # same text, flags and code
        assert (built.groups, built.groupindex) == (fresh.groups, fresh.groupindex)
    dataclass_code.import_all()
    assert set(re_code._made) <= set(table)  # every module-level pattern is stored


def test_a_module_pattern_is_the_stored_one() -> None:
    from rootrank import ranks

    got = ranks._LINE_RANK
    assert type(got) is re.Pattern
    assert got == re.compile(got.pattern)


def test_compile_falls_back_to_re(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(re_code, "_table", {})
    monkeypatch.setattr(re_code, "_made", {})  # (not module-level patterns)
    pat = re_code.compile(r"(?P<n>\d+) ranks?", re.IGNORECASE)
    assert pat.search("on 12 Ranks").group("n") == "12"
    assert re_code.compile(rb"BZh[1-9]").match(b"BZh9") is not None
    out = tmp_path / "re_code.bin"
    out.write_bytes(marshal.dumps(((0, 0), {("x", 0): b""})))
    assert re_code.load(out) == {}
    out.write_bytes(b"\x00garbage")
    assert re_code.load(out) == {}
