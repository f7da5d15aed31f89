"""Every signature's fixtures: each positive case (``<id>.positive.log``,
``<id>.positive-2.log``...) is diagnosed as that signature (class, initiating rank, evidence
line); each near-miss log (``<id>.near-miss.log``, ``<id>.near-miss-2.log``...) yields no
finding of it. Plus the library's own rules: ids unique, at least one positive and one
near-miss per signature and no fixture log without its signature's case, related ids exist,
every class of the taxonomy covered, ``kind`` set where the story ends or hardware speaks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rootrank.engine import default_library, diagnose_paths
from rootrank.signatures import KINDS, TAXONOMY, SignatureError, builtin_dir, load_signature

SIGNATURES = sorted(default_library().signatures.values(), key=lambda s: s.id)


def _fixture(sig, kind: str) -> Path:
    return Path(sig.path).with_name(f"{sig.id}.{kind}.log")


def _near_misses(sig) -> list[Path]:
    folder = Path(sig.path).parent
    cases = folder.glob(f"{sig.id}.near-miss*.log")
    return sorted(
        p
        for p in cases
        if p.name[len(sig.id) + 1 : -4] == "near-miss"
        or p.name[len(sig.id) + 1 : -4].startswith("near-miss-")
    )


POSITIVE_CASES = [
    pytest.param(sig, case, id=f"{sig.id}:{case['case']}")
    for sig in SIGNATURES
    for case in sig.fixtures
]
NEAR_MISS_CASES = [
    pytest.param(sig, path, id=f"{sig.id}:{path.name[len(sig.id) + 1 : -4]}")
    for sig in SIGNATURES
    for path in _near_misses(sig)
]


@pytest.mark.parametrize(("sig", "case"), POSITIVE_CASES)
def test_positive_fixture_is_diagnosed_as_this_signature(sig, case):
    diag = diagnose_paths([str(_fixture(sig, case["case"]))], mask=False)
    if sig.detector == "metrics":
        # A training-curve onset: several can show in one run (a spike, then NaN), and which
        # explains the others is the causal analysis's call. Its finding must be there, at the
        # onset's line, with the rank that showed it first (None: several ranks at once).
        found = [f for f in diag.findings if f.signature == sig.id]
        assert found, "no finding"
        assert found[0].evidence[0].line == case["line"]
        assert found[0].rank == case["initiating_rank"]
        return
    if sig.severity == "warning" and sig.role == "symptom":
        # A warning symptom is never a root cause (it only ever accompanies one): its
        # positive fixture must show it as a finding on the stated line and rank.
        found = [f for f in diag.findings if f.signature == sig.id]
        assert found, "no finding"
        assert found[0].evidence[0].line == case["line"]
        assert found[0].rank == case["initiating_rank"]
        return
    assert diag.root_cause is not None, "no root cause"
    assert diag.root_cause.signature == sig.id
    assert diag.root_cause.failure_class == sig.failure_class
    assert diag.initiating_rank == case["initiating_rank"]
    assert diag.root_cause.evidence[0].line == case["line"]


@pytest.mark.parametrize(("sig", "path"), NEAR_MISS_CASES)
def test_near_miss_fixture_has_no_finding_of_this_signature(sig, path):
    diag = diagnose_paths([str(path)], mask=False)
    assert sig.id not in {f.signature for f in diag.findings}


def test_every_signature_has_a_positive_and_a_near_miss():
    missing = [
        f"{s.id}.{c['case']}.log"
        for s in SIGNATURES
        for c in s.fixtures
        if not _fixture(s, c["case"]).is_file()
    ]
    missing += [f"{s.id}.positive.log" for s in SIGNATURES if not _fixture(s, "positive").is_file()]
    missing += [
        f"{s.id}.near-miss.log" for s in SIGNATURES if not _fixture(s, "near-miss").is_file()
    ]
    assert missing == []


def test_every_fixture_log_belongs_to_a_case():
    """A log beside the signatures is a declared positive case or a near-miss of a known id:
    a misspelt or orphaned fixture would otherwise never run."""
    known = {}
    for s in SIGNATURES:
        folder = Path(s.path).parent
        for c in s.fixtures:
            known[folder / f"{s.id}.{c['case']}.log"] = s.id
        for path in _near_misses(s):
            known[path] = s.id
    orphans = sorted(
        str(p.relative_to(builtin_dir())) for p in builtin_dir().rglob("*.log") if p not in known
    )
    assert orphans == []
    assert len(NEAR_MISS_CASES) == sum(len(_near_misses(s)) for s in SIGNATURES)


def test_ids_are_unique_across_folders():
    stems = Counter(p.stem for p in builtin_dir().rglob("*.yaml"))
    assert [stem for stem, n in stems.items() if n > 1] == []


def test_kind_is_valid_and_marks_the_end_of_the_story():
    assert {s.kind for s in SIGNATURES} <= set(KINDS)
    assert all(s.kind == s.role for s in SIGNATURES if "kind" not in s.data)
    by_id = {s.id: s.kind for s in SIGNATURES}
    # The ones issue 8 names: scheduler limits and preemption, the agent's kill, MPI's abort.
    for sig_id in ("slurm-time-limit", "slurm-preemption", "agent-sigterm-to-workers"):
        assert by_id[sig_id] == "terminal", sig_id
    for sig_id in (
        "nvrm-xid-hardware",
        "gpu-fallen-off-bus",
        "uncorrectable-ecc-error",
        "nvlink-error",
    ):
        assert by_id[sig_id] == "hardware", sig_id


def test_fixture_cases_schema(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    src = (builtin_dir() / "memory" / "cuda-oom.yaml").read_text()
    head, _, _ = src.partition("\nfixture:")
    bad = folder / "cuda-oom.yaml"
    bad.write_text(
        head
        + "\nfixture:\n  - {case: positive, initiating_rank: 0, line: 3}\n  - {case: positive-2, initiating_rank: null, line: 1}\n"
    )
    sig = load_signature(bad)
    assert [c["case"] for c in sig.fixtures] == ["positive", "positive-2"]
    assert sig.fixture == {"case": "positive", "initiating_rank": 0, "line": 3}
    assert sig.kind == "cause"
    bad.write_text(
        head
        + "\nfixture:\n  - {case: positive, initiating_rank: 0, line: 3}\n  - {case: positive, initiating_rank: 1, line: 2}\n"
    )
    with pytest.raises(SignatureError, match=r"fixture\[1\]\.case"):
        load_signature(bad)
    bad.write_text(head + "\nfixture:\n  - {case: positive-2, initiating_rank: one, line: 3}\n")
    with pytest.raises(SignatureError, match=r"fixture\[0\]\.initiating_rank"):
        load_signature(bad)
    bad.write_text(head + "\nkind: fatal\nfixture: {initiating_rank: 0, line: 3}\n")
    with pytest.raises(SignatureError, match="kind"):
        load_signature(bad)


def test_library_size_and_taxonomy_coverage():
    assert len(SIGNATURES) >= 300
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
