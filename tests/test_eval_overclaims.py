"""`rootrank eval` names each case where a rank was claimed though the label says the log
cannot tell (``"initiating_rank": null``), in the text and the JSON, as it names the misses
(round-12 trial, item 8: only the count was given)."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

from rootrank.evaluate import evaluate, to_text

#: rank 2's call-site divergence (class collective-desync, signature timeout-call-site-divergence)
HANG = (ROOT / "examples" / "multi-rank-hang.log").read_bytes()


def _cases(tmp_path):
    for name, rank in (("a-cannot-tell", None), ("b-rank-2", 2), ("c-rank-1", 1)):
        case = tmp_path / name
        case.mkdir()
        (case / "input.log").write_bytes(HANG)
        (case / "expected.json").write_text(
            json.dumps({"failure_class": "collective-desync", "initiating_rank": rank})
        )
    return tmp_path


def test_the_over_claims_are_listed_with_the_rank_claimed(tmp_path):
    report = evaluate([str(_cases(tmp_path))])
    d = report.to_dict()
    assert d["rank_overclaims"] == 1
    assert d["rank_overclaimed"] == [
        {
            "case": "a-cannot-tell",
            "got_rank": 2,
            "expected_class": "collective-desync",
            "got_class": "collective-desync",
            "got_signature": "timeout-call-site-divergence",
        }
    ]
    assert [m["case"] for m in d["misses"]] == ["c-rank-1"]  # the rank miss, as before
    text = to_text(report)
    assert text.endswith(
        "misses:\n"
        "  c-rank-1: rank 2, expected 1\n"
        "rank over-claims:\n"
        "  a-cannot-tell: rank 2, expected none (the label says the log cannot tell);"
        " class collective-desync (timeout-call-site-divergence)\n"
    )


def test_the_cli_prints_them_in_text_and_json(tmp_path):
    _cases(tmp_path)
    text = run_cli("eval", str(tmp_path))
    assert text.returncode == 0, text.stderr.decode()
    assert "rank over-claims:\n  a-cannot-tell: rank 2, expected none" in text.stdout.decode()
    as_json = json.loads(run_cli("eval", str(tmp_path), "--format", "json").stdout)
    assert [o["case"] for o in as_json["rank_overclaimed"]] == ["a-cannot-tell"]


def test_no_over_claim_no_section(tmp_path):
    case = tmp_path / "b-rank-2"
    case.mkdir()
    (case / "input.log").write_bytes(HANG)
    (case / "expected.json").write_text(
        '{"failure_class": "collective-desync", "initiating_rank": 2}'
    )
    report = evaluate([str(tmp_path)])
    assert report.to_dict()["rank_overclaimed"] == []
    assert "over-claims" not in to_text(report)


def test_nothing_measured_is_null_not_a_perfect_score(tmp_path):
    """Only "cannot tell" labels: the JSON's rank accuracy is null (the text says n/a)."""
    case = tmp_path / "a-cannot-tell"
    case.mkdir()
    (case / "input.log").write_bytes(HANG)
    (case / "expected.json").write_text(
        '{"failure_class": "collective-desync", "initiating_rank": null}'
    )
    d = evaluate([str(tmp_path)]).to_dict()
    assert d["rank_labelled"] == 0 and d["rank_accuracy"] is None
    assert d["class_accuracy"] == 1.0
    assert "initiating-rank accuracy: n/a (0/0 labelled)" in to_text(evaluate([str(tmp_path)]))
