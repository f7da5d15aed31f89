"""The fast start gives the same answers as the slow one (issue 11).

Start-up skips work three ways: the built-in library is read from its built JSON form
(``rootrank/library.json``, :mod:`rootrank.library_file`) instead of parsing YAML; regexes are
compiled on first use (:mod:`rootrank.lazy_regex`, signature patterns); masking runs a
pattern only where a cheap test shows it can match (``Masker(gated=True)``). Here the
eager path -- every YAML file loaded and every signature pattern compiled, every module
pattern compiled, every masking pattern run on every string -- and the default path give
byte-identical JSON for every signature fixture log, and the built file stands for the YAML
files (or says why not).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from rootrank import lazy_regex, library_file, ranks
from rootrank.engine import diagnose_paths
from rootrank.mask import Masker
from rootrank.report import to_json
from rootrank.signatures import Library, _load_dir, builtin_dir, load_library

FIXTURES = sorted(builtin_dir().rglob("*.log"))


def _seeded():
    path = Path(__file__).parent / "secrets" / "seeded.py"
    spec = importlib.util.spec_from_file_location("rootrank_tests_seeded", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


def _yaml_library() -> Library:
    lib = Library(signatures={})
    _load_dir(builtin_dir(), lib, strict=True, eager=False)
    return lib


def _fields(sig) -> dict:
    out = {}
    for f in dataclasses.fields(sig):
        if f.name == "_body":  # the built form's undecoded data: compared through data
            continue
        value = getattr(sig, f.name)
        if f.name == "patterns":
            value = [(p.literal, p.source, p.ignorecase) for p in value]
        out[f.name] = value
    return out


def test_records_give_the_yaml_signatures_field_for_field():
    yaml_lib = _yaml_library()
    root = builtin_dir()
    built = json.loads(json.dumps(library_file.build(root)))  # as written, as read
    records = built["signatures"]
    assert [r["id"] for r in records] == list(yaml_lib.signatures)  # library order
    assert len(records) > 300
    for record in records:
        sig = library_file.from_record(record, root)
        with pytest.raises(AttributeError):
            object.__getattribute__(sig, "entry")  # the entry is decoded on first use only
        want = yaml_lib.signatures[sig.id]
        assert _fields(sig) == _fields(want), sig.id
        assert sig.entry is sig.data["entry"] and sig.fix is sig.data["fix"]
        assert type(sig.tags) is tuple and type(sig.fixtures) is tuple


def test_the_built_file_is_current():
    if not library_file.BUILT.is_file():
        pytest.skip(
            f"{library_file.BUILT} is not built (pip install -e . builds it, or "
            "python -m rootrank.library_file); scripts/test-all.sh checks it with --check"
        )
    records, why = library_file.read_built(builtin_dir())
    assert records is not None, f"{library_file.BUILT} is {why}: python -m rootrank.library_file"
    assert records == library_file.build(builtin_dir())["signatures"]


def test_the_built_rows_give_the_yaml_signatures_and_decode_their_bodies_on_use():
    if not library_file.BUILT.is_file():
        pytest.skip(f"{library_file.BUILT} is not built (python -m rootrank.library_file)")
    lib = Library(signatures={})
    library_file.load_builtin(lib)
    yaml_lib = _yaml_library()
    assert list(lib.signatures) == list(yaml_lib.signatures)
    for sig in lib.signatures.values():
        body = object.__getattribute__(sig, "_body")
        assert type(body) is memoryview  # the file's bytes, not decoded at load
        want = yaml_lib.signatures[sig.id]
        assert _fields(sig) == _fields(want), sig.id
        assert sig.data == want.data and sig.entry is sig.data["entry"], sig.id


def _small_library(tmp_path: Path) -> Path:
    root = tmp_path / "signatures"
    for rel in ("memory/cuda-oom.yaml", "nccl/nccl-internal-error.yaml", "taxonomy.json"):
        src = builtin_dir() / rel
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(src.read_bytes())
    return root


def test_a_changed_added_or_removed_signature_file_makes_the_built_file_out_of_date(tmp_path):
    root = _small_library(tmp_path)
    out = tmp_path / "library.json"
    assert library_file.main(["--signatures", str(root), "--out", str(out)]) == 0
    records, why = library_file.read_built(root, out)
    assert why == "" and [r["id"] for r in records] == ["cuda-oom", "nccl-internal-error"]

    # The same size, a new mtime, new content: caught by the content hash.
    oom = root / "memory" / "cuda-oom.yaml"
    text = oom.read_text()
    oom.write_text(text.replace("specificity: 90", "specificity: 80", 1))
    assert oom.stat().st_size == len(text.encode())
    assert library_file.read_built(root, out) == (None, "out of date: memory/cuda-oom.yaml changed")
    # Only touched (a checkout, a copy): the content hash says it is the same.
    oom.write_text(text)
    os.utime(oom, ns=(1, 1))
    assert library_file.read_built(root, out)[1] == ""

    extra = root / "memory" / "extra.yaml"
    extra.write_text(text)
    assert library_file.read_built(root, out)[1] == "out of date: memory/extra.yaml was added"
    extra.unlink()
    (root / "nccl" / "nccl-internal-error.yaml").unlink()
    assert library_file.read_built(root, out)[1] == (
        "out of date: nccl/nccl-internal-error.yaml was removed"
    )
    assert library_file.main(["--check", "--signatures", str(root), "--out", str(out)]) == 1
    assert library_file.read_built(root, tmp_path / "none.json") == (None, "missing")


def test_a_stale_built_file_is_not_read_and_the_yaml_gives_the_same_library(
    tmp_path, monkeypatch, capsys
):
    stale = tmp_path / "library.json"
    data = library_file.build(builtin_dir())
    first = next(iter(data["sources"]["signatures"]))
    data["sources"]["signatures"][first][0] += 1  # a size the file does not have
    data["signatures"][0]["title"] = "WRONG"  # what a stale file would hold
    stale.write_text(json.dumps(data))
    monkeypatch.setattr(library_file, "BUILT", stale)
    monkeypatch.setattr(library_file, "_noted", False)
    lib = load_library()
    err = capsys.readouterr().err
    assert f"the built signature library ({stale}) is out of date: {first} changed" in err
    assert "python -m rootrank.library_file" in err
    yaml_lib = _yaml_library()
    assert list(lib.signatures) == list(yaml_lib.signatures)
    assert all(
        _fields(lib.signatures[i]) == _fields(yaml_lib.signatures[i]) for i in lib.signatures
    )
    load_library()
    assert capsys.readouterr().err == ""  # said once per process


def test_lazy_patterns_are_compiled_on_first_use_only():
    pattern = lazy_regex.compile(r"(?P<n>\d+) ranks?")
    assert "_compiled" not in vars(pattern)
    before = lazy_regex.compiled_count()
    assert pattern.search("world of 8 ranks")["n"] == "8"
    assert lazy_regex.compiled_count() == before + 1
    assert pattern.sub("N", "2 ranks, 3 ranks") == "N, N"
    assert pattern.pattern == r"(?P<n>\d+) ranks?" and pattern.groupindex == {"n": 1}


def test_gated_and_ungated_masking_agree_on_the_secret_corpus():
    seeded = _seeded()
    lines = [
        ln for seed in range(1, 9) for log in seeded.build(seed) for ln in log.text.splitlines()
    ]
    assert len(lines) > 1000
    gated, ungated = Masker(), Masker(gated=False)
    assert [gated.text(line) for line in lines] == [ungated.text(line) for line in lines]
    whole = "\n".join(lines)  # several lines in one string, as evidence blocks are
    assert Masker().text(whole) == Masker(gated=False).text(whole)


def test_every_fixture_gives_the_same_json_lazy_and_eager():
    """The default (built library, lazy compiles, gated masking) against the eager path, on
    every signature fixture log, masked and not."""
    assert len(FIXTURES) > 600
    fast = {}
    for path in FIXTURES:
        fast[path] = to_json(diagnose_paths([str(path)]))
    eager_lib = _yaml_library()
    for sig in eager_lib.signatures.values():
        for p in sig.patterns:
            assert p.regex is not None
    lazy_regex.compile_all()
    assert lazy_regex.compiled_count() == len(lazy_regex._made)
    differ = [
        str(path.relative_to(builtin_dir()))
        for path in FIXTURES
        if to_json(
            diagnose_paths([str(path)], library=eager_lib, new_masker=lambda: Masker(gated=False))
        )
        != fast[path]
    ]
    assert differ == []


def _strip_log_header_ungated(text: str) -> str:
    """strip_log_header as it was before its first-character test: the pattern on every
    text."""
    for _ in range(3):
        m = ranks._LOG_HEADER.match(text)
        if not m or m.end() == 0:
            return text
        text = text[m.end() :]
    return text


def test_strip_log_header_skips_only_texts_no_header_can_start():
    """The first-character test of strip_log_header changes no answer: every header kind it
    removes, texts that look close, and every line of every fixture log and example."""
    made = [
        "[E1129 10:12:01.5 x.cpp:632] NCCL error",
        "E1129 13:34:28.512 25034 api.py:1002] failed",
        "2026-11-29 09:04:28,866 - INFO - step 3",
        "[2026-11-29T09:04:28Z] [ERROR] [train.py:12] boom",
        "INFO 11-29 10:12:01 [worker.py:12] ready",
        "WARNING:root:careful",
        "CRITICAL:torch.distributed:lost",
        "(pid=4242, ip=10.0.0.1) Traceback (most recent call last):",
        "(raylet) worker died",
        "!!! Exception during processing !!! CUDA out of memory",
        "trainer-1  |  RuntimeError: CUDA error",
        "svc.a-12 | x",
        "Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory.",
        '  File "train.py", line 3, in <module>',
        "",
        "|",
        "\u0663\u0663\u0663\u0663-11-29 09:04:28 x",  # Arabic-Indic digits: \d is Unicode
        "\u00e9t\u00e9-3 | message",
    ]
    lines = made[:]
    for path in [*FIXTURES, *sorted(Path(__file__).parents[1].glob("examples/*.log"))]:
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    bodies = lines + [ln.split("]: ", 1)[-1] for ln in lines]  # also after a [rankN]: prefix
    assert len(bodies) > 10_000
    assert [ranks.strip_log_header(t) for t in bodies] == [
        _strip_log_header_ungated(t) for t in bodies
    ]
    assert ranks.strip_log_header(made[0]) == "NCCL error"  # the pattern still runs
    assert ranks.strip_log_header(made[10]) == "RuntimeError: CUDA error"


def _rank_from_path_ungated(path: str) -> tuple[int | None, bool]:
    """rank_from_path as it was before its word test: _FILE_RANK on every path."""
    m = ranks._FILE_RANK.search(str(Path(path)).replace("\\", "/"))
    if not m:
        return None, False
    if m.group("ldir") is not None:
        return int(m.group("ldir")), True
    if m.group("task") is not None:
        return int(m.group("task")), False
    return int(m.group("rank") if m.group("rank") is not None else m.group("dir")), False


def test_rank_from_path_skips_only_paths_that_name_no_rank():
    """The word test of rank_from_path changes no answer: every layout that names a rank, in
    any case (with the Kelvin sign and the long s, which fold to k and s), near misses, and
    every fixture's path."""
    paths = [
        "logs/attempt_0/3/stderr.log",
        "ATTEMPT_2/7/error.json",
        "slurm-4242-5.out",
        "SLURM-1-2.ERR",
        "\u017flurm-1-2.out",
        "runs/rank3.log",
        "RAN\u212a3.log",
        "rank\u0663.log",
        "worker-12.out",
        "proc_4.err",
        "train.rank_3.txt",
        "rank_3/stdout.log",
        "Worker.5/x.log",
        "runs/rank12-debug/train.log",
        "/tmp/rootrank-startup-ab3/tiny.log",
        "rank-s/3.log",
        "attempt_/3/stderr.log",
        "slurm-x-3.out",
        "train.log",
        "",
    ]
    paths += [str(p) for p in FIXTURES]
    got = [ranks.rank_from_path(p) for p in paths]
    assert got == [_rank_from_path_ungated(p) for p in paths]
    assert got[:4] == [(3, True), (7, True), (5, False), (2, False)]
    assert got[5:8] == [(3, False), (3, False), (3, False)]
