"""`rootrank eval` names every case folder it cannot score (no input.log, no expected.json, a
malformed expected.json) on stderr, one line each, scores the rest, and counts the skipped in
its summary (``rootrank.evaluate``)."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

from rootrank.evaluate import evaluate

OOM_LOG = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_bytes()
OOM_LABELS = '{"failure_class": "cuda-oom", "initiating_rank": null}'

#: folder -> (input.log?, expected.json text or None, the reason eval gives)
BROKEN = {
    "c02-no-log": (False, OOM_LABELS, "no input.log (the log to diagnose)"),
    "c03-no-labels": (True, None, "no expected.json (the labels)"),
    "c04-trailing-comma": (
        True,
        '{"failure_class": "cuda-oom",}',
        "expected.json is not JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 30 (char 29))",
    ),
    "c05-a-list": (True, "[]", "expected.json holds a list, not one JSON object"),
    "c06-rank-as-text": (
        True,
        '{"failure_class": "cuda-oom", "initiating_rank": "3"}',
        'expected.json: "initiating_rank" must be a rank (0, 1, ...) or null',
    ),
    "c07-class-misspelt": (
        True,
        '{"failure-class": "cuda-oom"}',
        'expected.json has no "failure_class" (null for a healthy run)',
    ),
    "c08-acceptable-a-string": (
        True,
        '{"failure_class": "cuda-oom", "also_acceptable": "host-oom"}',
        'expected.json: "also_acceptable" must be a list of class names',
    ),
    "notes": (False, None, "no input.log and no expected.json (cases are searched one level deep)"),
}


def _cases(tmp_path):
    good = tmp_path / "c01-oom"
    good.mkdir()
    (good / "input.log").write_bytes(OOM_LOG)
    (good / "expected.json").write_text(OOM_LABELS)
    for name, (has_log, labels, _why) in BROKEN.items():
        case = tmp_path / name
        case.mkdir()
        if has_log:
            (case / "input.log").write_bytes(OOM_LOG)
        if labels is not None:
            (case / "expected.json").write_text(labels)
    (tmp_path / ".git").mkdir()  # hidden folders are no cases
    (tmp_path / "README.md").write_text("cases\n")  # nor are files
    return tmp_path


def test_each_skipped_folder_is_one_stderr_line_and_the_rest_is_scored(tmp_path):
    _cases(tmp_path)
    proc = run_cli("eval", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode().splitlines()
    assert err == [
        f"rootrank: skipped {tmp_path / name}: {why}" for name, (_, _, why) in BROKEN.items()
    ]
    out = proc.stdout.decode()
    assert "cases: 1 (1 failing runs, 0 healthy)" in out
    assert "class accuracy on the failing runs: 100.0% (1/1)" in out
    assert (
        f"skipped: {len(BROKEN)} case folder(s) not scored (not in the figures; why on stderr)"
        in out
    )


def test_skipped_folders_are_in_the_json_and_the_report(tmp_path):
    _cases(tmp_path)
    proc = run_cli("eval", str(tmp_path), "--format", "json")
    assert proc.returncode == 0
    d = json.loads(proc.stdout)
    assert d["cases"] == 1 and d["class_accuracy"] == 1.0 and d["misses"] == []
    assert d["skipped"] == [
        {"case": str(tmp_path / name), "why": why} for name, (_, _, why) in BROKEN.items()
    ]
    report = evaluate([str(tmp_path)])
    assert [c.name for c in report.cases] == ["c01-oom"]
    assert len(report.skipped) == len(BROKEN)


def test_a_gate_fails_when_a_folder_was_skipped(tmp_path):
    # 8 of 9 folders unreadable: a 100% class accuracy on the one left is no passed gate
    _cases(tmp_path)
    for gate in (["--min-class", "1.0"], ["--min-rank", "0.5"]):
        gated = run_cli("eval", str(tmp_path), *gate)
        assert gated.returncode == 1
        assert gated.stderr.decode().splitlines()[-1] == (
            f"rootrank: below the bar: {len(BROKEN)} of {len(BROKEN) + 1} case folder(s)"
            " skipped, not scored (--allow-skipped to gate on the rest)"
        )
    ungated = run_cli("eval", str(tmp_path))
    assert ungated.returncode == 0  # no gate asked: the figures and the skipped are shown


def test_allow_skipped_gates_on_what_was_scored(tmp_path):
    _cases(tmp_path)
    gated = run_cli("eval", str(tmp_path), "--min-class", "1.0", "--allow-skipped")
    assert gated.returncode == 0  # c02-no-log is no miss: the bar holds on what was scored
    assert "below the bar" not in gated.stderr.decode()
    # a miss still fails it: the bar itself is kept
    bad = tmp_path / "c09-wrong-label"
    bad.mkdir()
    (bad / "input.log").write_bytes(OOM_LOG)
    (bad / "expected.json").write_text('{"failure_class": "nccl-timeout"}')
    gated = run_cli("eval", str(tmp_path), "--min-class", "1.0", "--allow-skipped")
    assert gated.returncode == 1
    assert gated.stderr.decode().splitlines()[-1] == (
        "rootrank: below the bar: class accuracy 50.0% < 100.0%"
    )


def test_only_unscorable_folders_exit_2(tmp_path):
    case = tmp_path / "c02-no-log"
    case.mkdir()
    (case / "expected.json").write_text(OOM_LABELS)
    proc = run_cli("eval", str(case))
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode().splitlines() == [
        f"rootrank: skipped {case}: no input.log (the log to diagnose)",
        "rootrank: no case could be scored (1 skipped)",
    ]
