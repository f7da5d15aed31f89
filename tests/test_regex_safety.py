"""Regex safety: no signature or masking pattern backtracks catastrophically, a pathological
pattern is stopped by the ``regex`` module's timeout and reported (never fatal), and a
hostile signature folder is refused while the built-in library keeps working.

Adversarial lines come from :mod:`rootrank.regex_safety` (pumped quantifiers, runs of every
character class a quantifier accepts, near-misses of an example match), each carrying the
pattern's literal so it passes the engine's pre-filter, at the engine's own line cut
(``match.MAX_MATCH_CHARS``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import regex
from conftest import ROOT, run_cli

from rootrank import match as match_mod
from rootrank.engine import diagnose_text
from rootrank.mask import MAX_TEXT, PATTERNS
from rootrank.regex_safety import adversarial_lines, check
from rootrank.signatures import Library, load_library

#: A pattern is safe when its slowest adversarial line (16 K characters) finishes inside the
#: matcher's own per-line timeout, doubled for a loaded 2-core CI machine.
BUDGET_S = 2 * match_mod.REGEX_TIMEOUT_S


def _builtin_patterns():
    lib = load_library()
    for sig in sorted(lib.signatures.values(), key=lambda s: s.id):
        for i, pattern in enumerate(sig.patterns):
            rel = os.path.relpath(sig.path, ROOT)
            yield pytest.param(pattern, id=f"{rel}:patterns[{i}]")


@pytest.mark.parametrize("pattern", list(_builtin_patterns()))
def test_signature_pattern_is_safe(pattern) -> None:
    problem = check(
        pattern.regex, pattern.literal, budget_s=BUDGET_S, length=match_mod.MAX_MATCH_CHARS
    )
    assert problem is None, (
        f"{problem}; bound the quantifiers (\\s{{0,8}}, .{{0,500}}?) or remove overlapping "
        f"ones: {pattern.regex.pattern[:120]}"
    )


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_mask_pattern_is_safe(name: str) -> None:
    assert check(PATTERNS[name], budget_s=0.25, length=MAX_TEXT + 64) is None


# -- the probe finds what it must --------------------------------------------------------------

KNOWN_BAD = [r"(a|aa)+b", r"(\w+\s?)+$", r"^(\d+)*$", r"(x+x+)+y", r"(.*,){15}X"]
KNOWN_GOOD = [
    r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ ?[KMGT]?i?B)",
    (
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seqnum>\d+), "
        r"OpType=(?P<optype>\w+)"
    ),
    r"exitcode\s{0,8}:\s{0,8}(?P<exitcode>-?\d{1,4})",
]


@pytest.mark.parametrize("source", KNOWN_BAD)
def test_probe_flags_backtracking(source: str) -> None:
    message = check(regex.compile(source), budget_s=0.05)
    assert message is not None and message.startswith("backtracks catastrophically")


@pytest.mark.parametrize("source", KNOWN_GOOD)
def test_probe_passes_linear_patterns(source: str) -> None:
    assert check(regex.compile(source), budget_s=0.05) is None


def test_adversarial_lines_carry_the_literal_and_respect_the_length() -> None:
    lines = adversarial_lines(
        r"NCCL WARN (?P<what>\w+)\s+failed: (.*?) errno (\d+)", "NCCL WARN", length=4096
    )
    assert len(lines) >= 10
    assert all(line.startswith("NCCL WARN") and len(line) <= 4096 for _, line in lines)
    kinds = {kind.split("#")[0].split(" ")[0] for kind, _ in lines}
    assert {"pump", "run", "near-miss-repeated", "generic"} <= kinds


# -- the matcher's timeout: a pathological pattern is reported, not fatal ----------------------


def _library_with_bad_pattern(tmp_path: Path) -> Library:
    """The built-in library plus one signature whose regex backtracks, bypassing the loader's
    safety check (to test the matcher's own guard)."""
    from dataclasses import replace

    from rootrank.signatures import Pattern

    lib = load_library()
    base = lib.signatures["cuda-oom"]
    bad = Pattern("HOSTILE", r"HOSTILE (a|aa)+b")
    sig = replace(
        base,
        id="hostile-backtracking",
        patterns=(bad,),
        specificity=1,
        path=str(tmp_path / "hostile-backtracking.yaml"),
    )
    signatures = dict(lib.signatures)
    signatures[sig.id] = sig
    return Library(signatures=signatures)


def test_timed_out_pattern_is_reported_and_the_diagnosis_goes_on(tmp_path: Path) -> None:
    lib = _library_with_bad_pattern(tmp_path)
    oom = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")
    hostile = "HOSTILE " + "a" * 5000 + "\n"
    text = hostile * 3 + oom
    start = time.perf_counter()
    diag = diagnose_text(text, "hostile.log", library=lib)
    elapsed = time.perf_counter() - start
    assert diag.root_cause is not None and diag.root_cause.signature == "cuda-oom"
    assert any("hostile-backtracking" in w and "time" in w.lower() for w in diag.warnings), (
        diag.warnings
    )
    assert elapsed < 30, f"{elapsed:.1f} s"  # 3 lines x timeout (+ the regex module's overshoot)


# -- hostile signature folders -----------------------------------------------------------------

_VALID = """\
id: {id}
title: A team signature
failure_class: user-code-exception
category: team
severity: error
role: cause
specificity: 50
tags: [team]
affects: [pytorch]
patterns:
  - literal: "TEAM"
    regex: '{regex}'
entry: {{summary: s, mechanism: m, symptoms: []}}
fix: {{steps: [do it]}}
confirm: [look]
verify: "test -f done.flag"
references: [https://example.org/x]
fixture: {{initiating_rank: null, line: 1}}
"""


def _team_dir(tmp_path: Path) -> Path:
    d = tmp_path / "team"
    d.mkdir()
    return d


def _oom_text() -> str:
    return (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")


def test_backtracking_signature_is_refused(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    (d / "team-bad.yaml").write_text(_VALID.format(id="team-bad", regex=r"TEAM (a|aa)+b"))
    (d / "team-good.yaml").write_text(_VALID.format(id="team-good", regex=r"TEAM failure (\d+)"))
    lib = load_library([d])
    assert "team-good" in lib.signatures and "team-bad" not in lib.signatures
    assert [p.field for p in lib.problems] == ["patterns[0].regex"]
    assert "backtrack" in str(lib.problems[0]) and "team-bad.yaml" in str(lib.problems[0])
    diag = diagnose_text(_oom_text(), library=lib)
    assert diag.root_cause.signature == "cuda-oom"


def test_megabyte_pattern_is_refused(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    (d / "team-huge.yaml").write_text(
        _VALID.format(id="team-huge", regex="TEAM " + "x" * (1 << 20))
    )
    lib = load_library([d])
    assert "team-huge" not in lib.signatures
    assert len(lib.problems) == 1 and "larger than" in str(lib.problems[0])
    assert diagnose_text(_oom_text(), library=lib).root_cause.signature == "cuda-oom"


def test_long_pattern_in_small_file_is_refused(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    (d / "team-long.yaml").write_text(_VALID.format(id="team-long", regex="TEAM " + "y" * 5000))
    lib = load_library([d])
    assert [p.field for p in lib.problems] == ["patterns[0].regex"]
    assert "longer than" in str(lib.problems[0])


def test_hundred_thousand_entries_are_refused(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    entries = "".join(f"  - literal: TEAM\n    regex: 'TEAM {i}'\n" for i in range(100_000))
    body = _VALID.format(id="team-many", regex="TEAM").replace(
        "patterns:\n  - literal: \"TEAM\"\n    regex: 'TEAM'\n", "patterns:\n" + entries
    )
    (d / "team-many.yaml").write_text(body)
    many = tmp_path / "many-files"
    many.mkdir()
    for i in range(2_001):
        (many / f"s{i}.yaml").write_text("id: x\n")
    start = time.perf_counter()
    lib = load_library([d, many])
    assert time.perf_counter() - start < 30
    problems = " | ".join(str(p) for p in lib.problems)
    assert "team-many.yaml: (file): larger than" in problems
    assert "more than 2000 signature files" in problems
    assert diagnose_text(_oom_text(), library=lib).root_cause.signature == "cuda-oom"


def test_yaml_cannot_run_code(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    marker = tmp_path / "pwned"
    (d / "team-code.yaml").write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    (d / "team-alias.yaml").write_text(  # a billion-laughs style alias bomb stays small
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nid: team-alias\n"
    )
    lib = load_library([d])
    assert not marker.exists()
    problems = {Path(p.path).name: str(p) for p in lib.problems}
    assert "not valid YAML" in problems["team-code.yaml"]
    assert "team-alias.yaml" in problems  # refused on the schema, without expanding anything
    assert len(lib.signatures) == len(load_library().signatures)


def test_cli_reports_bad_folder_in_one_line_and_still_diagnoses(tmp_path: Path) -> None:
    d = _team_dir(tmp_path)
    (d / "team-bad.yaml").write_text(_VALID.format(id="team-bad", regex=r"TEAM (a|aa)+b"))
    log = tmp_path / "oom.log"
    log.write_text(_oom_text(), encoding="utf-8")
    done = run_cli("diagnose", str(log), "--signatures", str(d), "--format", "json")
    assert done.returncode == 0
    warnings = [ln for ln in done.stderr.decode().splitlines() if ln.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("rootrank: warning: ")
    assert "team-bad.yaml" in warnings[0] and "backtrack" in warnings[0]
    assert b'"signature": "cuda-oom"' in done.stdout
