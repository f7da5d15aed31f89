"""``rootrank signatures --check DIR`` and :func:`load_signature` report every problem of a
signature folder in one run: every wrong field of every file, each naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from rootrank.signatures import SignatureProblems, load_signature


def _broken_copy(tmp_path: Path, category: str, sig_id: str, edits: list[tuple[str, str]]) -> Path:
    """A team folder holding a copy of a built-in signature with ``edits`` (old, new) applied."""
    text = (ROOT / "signatures" / category / f"{sig_id}.yaml").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    folder = tmp_path / "team" / category
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{sig_id}.yaml"
    target.write_text(text, encoding="utf-8")
    return target


@pytest.fixture
def team_folder(tmp_path: Path) -> Path:
    """Two broken files (three and two problems) and one valid file."""
    _broken_copy(
        tmp_path,
        "memory",
        "cuda-oom",
        [
            ("severity: error", "severity: fatal"),
            ("\nverify:", "\nverify_command:"),
            ("specificity: 90", "specificity: 190"),
        ],
    )
    _broken_copy(
        tmp_path,
        "memory",
        "cpu-alloc-failed",
        [("failure_class: cpu-oom", "failure_class: ram-oom"), ("role: cause", "role: trigger")],
    )
    _broken_copy(tmp_path, "memory", "cublas-alloc-failed", [])
    return tmp_path / "team"


def test_load_signature_lists_every_wrong_field(team_folder: Path):
    with pytest.raises(SignatureProblems) as err:
        load_signature(team_folder / "memory" / "cuda-oom.yaml")
    found = [(p.field, p.problem) for p in err.value.problems]
    assert found == [
        ("severity", "must be error or warning"),
        ("specificity", "must be 0..100"),
        ("verify", "missing"),
    ]
    assert str(err.value).endswith(
        "severity: must be error or warning (and 2 more problem(s) in this file)"
    )


def test_check_command_reports_all_problems_in_one_run(team_folder: Path):
    proc = run_cli("signatures", "--check", str(team_folder))
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 2
    cpu = team_folder / "memory" / "cpu-alloc-failed.yaml"
    oom = team_folder / "memory" / "cuda-oom.yaml"
    assert lines == [
        f"{cpu}: failure_class: 'ram-oom' is not in signatures/taxonomy.json",
        f"{cpu}: role: must be cause or symptom",
        f"{oom}: severity: must be error or warning",
        f"{oom}: specificity: must be 0..100",
        f"{oom}: verify: missing",
        "1 signature(s) valid, 5 problem(s)",
    ]


def test_a_valid_folder_passes_the_check(tmp_path: Path):
    _broken_copy(tmp_path, "memory", "cuda-oom", [])
    proc = run_cli("signatures", "--check", str(tmp_path / "team"))
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == ["1 signature(s) valid, 0 problem(s)"]


def test_a_folder_with_no_signature_file_is_an_input_error(tmp_path: Path):
    """Round-12 trial, item 11: ``--check logs/`` said "0 signature(s) valid, 0 problem(s)"
    and exit 0, as if an empty library were a valid one."""
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "train.log").write_text("step 1\n")
    (logs / "sub" / "notes.md").write_text("# notes\n")
    proc = run_cli("signatures", "--check", str(logs))
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode() == (
        f"rootrank: {logs}: no signature files (*.yaml, *.yml) in this folder or below it\n"
    )


def test_a_missing_id_or_category_says_what_to_write(tmp_path: Path):
    # the file name is the id and the folder the category: both are written in the file too
    target = _broken_copy(
        tmp_path,
        "memory",
        "cuda-oom",
        [("id: cuda-oom\n", ""), ("category: memory\n", "")],
    )
    target.rename(target.with_name("my-oom.yaml"))
    proc = run_cli("signatures", "--check", str(tmp_path / "team"))
    bad = tmp_path / "team" / "memory" / "my-oom.yaml"
    assert proc.returncode == 2
    assert proc.stdout.decode().splitlines() == [
        f"{bad}: id: missing: write `id: my-oom` (the file name)",
        f"{bad}: category: missing: write `category: memory` (the folder name)",
        "0 signature(s) valid, 2 problem(s)",
    ]
