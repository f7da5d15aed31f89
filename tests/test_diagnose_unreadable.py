"""``rootrank diagnose good.log missing.log``: an input that cannot be read is named in one
``rootrank:`` line on stderr and in the report's warnings; the readable inputs are still
diagnosed (the same root cause, rank and line as alone), and the exit code is that
diagnosis's own (0, 1 or 3). Exit 2 only when no input can be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

GOOD = ROOT / "tests" / "lsp" / "fixtures" / "workspace" / "logs" / "ddp-unused-rank2.log"


def _errors(stderr: bytes) -> list[str]:
    """stderr's lines, without the note a source checkout prints about the built library."""
    return [line for line in stderr.decode().splitlines() if "note:" not in line]


def _bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    binary = tmp_path / "core.log"
    binary.write_bytes(bytes(range(256)) * 64)
    empty_folder = tmp_path / "no-logs"
    empty_folder.mkdir()
    (empty_folder / "notes.txt.bak").write_text("x")
    return {
        "missing": (tmp_path / "missing.log", "no such file or folder"),
        "binary": (binary, "binary data, not a text log"),
        "folder-without-logs": (empty_folder, "no log files"),
    }


@pytest.mark.parametrize("kind", ["missing", "binary", "folder-without-logs"])
@pytest.mark.parametrize("bad_first", [False, True], ids=["bad-last", "bad-first"])
def test_readable_inputs_are_still_diagnosed(tmp_path: Path, kind: str, bad_first: bool):
    alone = run_cli("diagnose", str(GOOD), "--format", "json")
    assert alone.returncode == 0
    expected = json.loads(alone.stdout)["root_cause"]
    bad, why = _bad_inputs(tmp_path)[kind]
    paths = [str(bad), str(GOOD)] if bad_first else [str(GOOD), str(bad)]
    proc = run_cli("diagnose", *paths, "--format", "json")
    assert proc.returncode == 0  # the diagnosis's own exit code: a root cause was found
    [error] = _errors(proc.stderr)  # one line, naming the input and what is wrong
    assert error.startswith(f"rootrank: {bad}: {why}")
    diag = json.loads(proc.stdout)
    got = diag["root_cause"]
    assert (got["signature"], got["rank"], got["evidence"][0]["line"]) == (
        expected["signature"],
        expected["rank"],
        expected["evidence"][0]["line"],
    )
    assert (got["signature"], got["rank"]) == ("ddp-unused-parameters", 2)
    assert [w for w in diag["warnings"] if w.startswith("not read: ")] == [
        "not read: " + error.removeprefix("rootrank: ")
    ]


def test_the_text_report_names_the_unread_input(tmp_path: Path):
    missing = tmp_path / "missing.log"
    proc = run_cli("diagnose", str(GOOD), str(missing))
    assert proc.returncode == 0
    assert f"warning: not read: {missing}: no such file or folder" in proc.stdout.decode()


def test_the_exit_code_is_the_diagnosis_of_what_was_read(tmp_path: Path):
    healthy = tmp_path / "train.log"
    healthy.write_text("".join(f"step {i} loss {1 / (i + 1):.3f}\n" for i in range(50)))
    assert run_cli("diagnose", str(healthy)).returncode == 1
    proc = run_cli("diagnose", str(healthy), str(tmp_path / "missing.log"))
    assert proc.returncode == 1
    assert _errors(proc.stderr) == [f"rootrank: {tmp_path / 'missing.log'}: no such file or folder"]


def test_exit_2_when_no_input_can_be_read(tmp_path: Path):
    inputs = _bad_inputs(tmp_path)
    paths = [str(p) for p, _ in inputs.values()]
    proc = run_cli("diagnose", *paths, "--format", "json")
    assert proc.returncode == 2 and proc.stdout == b""
    errors = _errors(proc.stderr)
    assert len(errors) == 3
    for line, (path, why) in zip(errors, inputs.values(), strict=True):
        assert line.startswith(f"rootrank: {path}: {why}")


def test_help_documents_the_exit_codes():
    out = run_cli("diagnose", "--help").stdout.decode()
    assert "Exit 2 only when none of the inputs can be read" in out
    assert "3  the log shows a failure (an exception) that no signature names" in out
