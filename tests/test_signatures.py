"""Every signature's fixtures: the positive log is diagnosed as that signature (class,
initiating rank, evidence line); the near-miss log yields no finding of it. Plus the
library's own rules: ids unique, both fixtures present, related ids exist, every class of
the taxonomy covered."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import default_library, diagnose_paths
from rootrank.signatures import TAXONOMY, SignatureError, builtin_dir, load_signature

SIGNATURES = sorted(default_library().signatures.values(), key=lambda s: s.id)


def _fixture(sig, kind: str) -> Path:
    return Path(sig.path).with_name(f"{sig.id}.{kind}.log")


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.id)
def test_positive_fixture_is_diagnosed_as_this_signature(sig):
    diag = diagnose_paths([str(_fixture(sig, "positive"))], mask=False)
    if sig.detector == "metrics":
        # A training-curve onset: several can show in one run (a spike, then NaN), and which
        # explains the others is the causal analysis's call. Its finding must be there, at the
        # onset's line, with the rank that showed it first (None: several ranks at once).
        found = [f for f in diag.findings if f.signature == sig.id]
        assert found, "no finding"
        assert found[0].evidence[0].line == sig.fixture["line"]
        assert found[0].rank == sig.fixture["initiating_rank"]
        return
    if sig.severity == "warning" and sig.role == "symptom":
        # A warning symptom is never a root cause (it only ever accompanies one): its
        # positive fixture must show it as a finding on the stated line and rank.
        found = [f for f in diag.findings if f.signature == sig.id]
        assert found, "no finding"
        assert found[0].evidence[0].line == sig.fixture["line"]
        assert found[0].rank == sig.fixture["initiating_rank"]
        return
    assert diag.root_cause is not None, "no root cause"
    assert diag.root_cause["signature"] == sig.id
    assert diag.root_cause["failure_class"] == sig.failure_class
    assert diag.initiating_rank == sig.fixture["initiating_rank"]
    assert diag.root_cause["evidence"][0]["line"] == sig.fixture["line"]


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.id)
def test_near_miss_fixture_has_no_finding_of_this_signature(sig):
    diag = diagnose_paths([str(_fixture(sig, "near-miss"))], mask=False)
    assert sig.id not in {f.signature for f in diag.findings}


def test_every_signature_has_both_fixtures():
    missing = [
        f"{s.id}.{kind}.log"
        for s in SIGNATURES
        for kind in ("positive", "near-miss")
        if not _fixture(s, kind).is_file()
    ]
    assert missing == []


def test_library_size_and_taxonomy_coverage():
    assert len(SIGNATURES) >= 60
    covered = {s.failure_class for s in SIGNATURES}
    assert sorted(TAXONOMY - covered) == []


def test_related_ids_exist():
    ids = {s.id for s in SIGNATURES}
    dangling = [(s.id, r) for s in SIGNATURES for r in s.related if r not in ids]
    assert dangling == []


def test_every_yaml_in_the_tree_loads():
    files = sorted(builtin_dir().rglob("*.yaml"))
    assert len(files) == len(SIGNATURES)


def test_schema_error_names_file_and_field(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    src = (builtin_dir() / "memory" / "cuda-oom.yaml").read_text()
    bad = folder / "cuda-oom.yaml"
    bad.write_text(src.replace("failure_class: cuda-oom", "failure_class: out-of-memory"))
    with pytest.raises(SignatureError) as err:
        load_signature(bad)
    assert err.value.field == "failure_class"
    assert str(bad) in str(err.value)
    bad.write_text(src.replace("severity: error", "severity: loud"))
    with pytest.raises(SignatureError, match="severity"):
        load_signature(bad)
    bad.write_text(src.replace("regex: 'CUDA error: out of memory'", "regex: '(unclosed'"))
    with pytest.raises(SignatureError, match=r"patterns\[1\]\.regex"):
        load_signature(bad)


def test_every_builtin_pattern_compiles():
    for sig in SIGNATURES:
        load_signature(sig.path, eager=True)  # raises SignatureError naming the field
