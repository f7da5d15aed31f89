"""``schema/diagnosis.schema.json`` describes ``rootrank.diagnosis/1`` as the engine really
writes it: every real output validates (the bundled examples, every signature's positive
fixture, the healthy logs, an empty log, the CLI's JSON), the schema refuses what breaks the
contract, and the fields added this round validate in their documented shape."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from jsonschema import Draft202012Validator

from rootrank.engine import diagnose_paths, diagnose_text

SCHEMA = json.loads((ROOT / "schema" / "diagnosis.schema.json").read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA)

LOGS = sorted(
    [
        *ROOT.glob("examples/*.log"),
        *ROOT.glob("signatures/*/*.positive.log"),
        *ROOT.glob("tests/healthy/*.log"),
    ]
)


def _errors(obj: object) -> list[str]:
    """Every validation error as ``"path/to/field: message"``; for a value that fits no
    branch of an ``anyOf`` (``X or null``), the errors of the non-null branch."""
    out = []
    pending = list(VALIDATOR.iter_errors(obj))
    while pending:
        error = pending.pop(0)
        branches = [
            e for e in error.context or [] if e.validator != "type" or e.validator_value != "null"
        ]
        if branches:
            pending.extend(branches)
        else:
            out.append(f"{'/'.join(map(str, error.absolute_path))}: {error.message}")
    return out


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_outputs_validate(path: Path):
    diag = diagnose_paths([str(path)]).to_dict()
    assert _errors(diag) == []


def test_the_cli_json_and_an_empty_log_validate(tmp_path: Path):
    out = run_cli("diagnose", "examples/multi-rank-hang.log", "--format", "json")
    diag = json.loads(out.stdout)
    assert diag["root_cause"]["failure_class"] == "collective-desync"
    assert _errors(diag) == []
    empty = diagnose_text("", "empty.log").to_dict()
    assert empty["root_cause"] is None and _errors(empty) == []


def _example() -> dict:
    return diagnose_paths([str(ROOT / "examples" / "multi-rank-hang.log")]).to_dict()


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.pop("initiating_rank"), "'initiating_rank' is a required property"),
        (
            lambda d: d.update(schema="rootrank.diagnosis/2"),
            "schema: 'rootrank.diagnosis/1' was expected",
        ),
        (
            lambda d: d.update(unknown_field=1),
            "Additional properties are not allowed ('unknown_field'",
        ),
        (
            lambda d: d["root_cause"]["evidence"][0].update(line=0),
            "root_cause/evidence/0/line: 0 is less than the minimum of 1",
        ),
        (
            lambda d: d["root_cause"].update(confidence=1.5),
            "root_cause/confidence: 1.5 is greater than the maximum of 1",
        ),
        (
            lambda d: d["collateral"][0].update(role="victim"),
            "collateral/0/role: 'victim' is not one of ['cause', 'symptom']",
        ),
        (
            lambda d: d["root_cause"]["captures"].update(x=1),
            "root_cause/captures/x: 1 is not of type 'string'",
        ),
    ],
)
def test_the_schema_refuses_what_breaks_the_contract(change, where: str):
    diag = _example()
    change(diag)
    assert any(where in e for e in _errors(diag)), _errors(diag)


def test_the_fields_added_this_round_validate_in_their_documented_shape():
    diag = _example()
    ref = {
        "kind": "finding",
        "signature": "gloo-collective-timeout",
        "rank": 0,
        "path": "x.log",
        "line": 30,
    }
    diag.update(
        explanations=[
            {
                "cause": dict(ref, rank=2, line=19),
                "effect": ref,
                "rule": "cause_explains_watchdogs",
                "why": "w",
            }
        ],
        initiator={
            "rank": 2,
            "strategy": "odd_value_out",
            "why": "w",
            "candidates": [2],
            "agreeing": ["call_site"],
        },
        progress={
            "ranks": [{"rank": 0, "step": 100, "time": 1.5, "path": "x.log", "line": 3}],
            "end_time": 9.0,
            "silent_seconds": 7.5,
            "behind": [2],
        },
        metrics=[
            {
                "name": "loss",
                "rank": 0,
                "points": [[1, 2.5], [2, "nan"]],
                "onsets": [
                    {"kind": "nan", "step": 2, "rank": 0, "line": 9, "path": "x.log", "why": "w"}
                ],
            }
        ],
        attempts=2,
    )
    diag["root_cause"]["user_frame"] = {"file": "train.py", "line": 40, "func": "main"}
    diag["root_cause"]["call_sites"] = [
        {"rank": 2, "file": "train.py", "line": 41, "func": "main", "collective": "barrier"}
    ]
    diag["root_cause"]["fix"]["variant"] = {"id": "join", "why": "uneven inputs"}
    assert _errors(diag) == []
    bad = copy.deepcopy(diag)
    bad["metrics"][0]["points"][0] = [1, "NaN"]
    bad["explanations"][0]["cause"]["kind"] = "guess"
    problems = {e.split(":")[0] for e in _errors(bad)}
    assert problems == {"metrics/0/points/0/1", "explanations/0/cause/kind"}
