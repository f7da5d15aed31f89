"""SARIF after masking: a path printed under a user's home (masked to /home/<user>/...) is
written as a file of the checkout (relative, on %SRCROOT%) when its tail is one; when it is
not, it is no location (never ``file:///home/%3Cuser%3E/...``, which code scanning cannot
map): the result is placed at its log line and the masked path is named in the message."""

from __future__ import annotations

import json

import jsonschema
from conftest import ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())

OOM = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "{path}", line 17, in main\n'
    "[rank1]:     loss.backward()\n"
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    " GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)


def _sarif(tmp_path, frame_path: str) -> tuple[dict, str]:
    log = tmp_path / "train.log"
    log.write_text(OOM.format(path=frame_path))
    proc = run_cli("diagnose", str(log), "--format", "sarif")
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    errors = list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    assert not errors, [e.message for e in errors]
    github = run_cli("diagnose", str(log), "--format", "github").stdout.decode()
    return doc, github


def test_a_masked_frame_outside_the_checkout_is_no_location(tmp_path):
    doc, github = _sarif(tmp_path, "/home/alice/proj/train_gpt.py")
    text = json.dumps(doc)
    assert "%3C" not in text and "alice" not in text
    root = doc["runs"][0]["results"][0]
    loc = root["locations"][0]["physicalLocation"]
    # the log line (the log lives in tmp_path: outside the checkout, no placeholder)
    assert loc["artifactLocation"] == {"uri": (tmp_path / "train.log").as_uri()}
    assert loc["region"]["startLine"] == 4
    assert root["message"]["text"].endswith(
        " Raised at /home/<user>/proj/train_gpt.py:17 (not a file of this checkout)."
    )
    err = github.splitlines()[0]
    assert err.startswith(f"::error file={tmp_path / 'train.log'},line=4,")
    assert "Raised at /home/<user>/proj/train_gpt.py:17" in err


def test_a_masked_frame_whose_tail_is_in_the_checkout_maps_to_it(tmp_path):
    doc, github = _sarif(tmp_path, "/home/alice/work/repo/scenarios/ddp_unused_parameters.py")
    root = doc["runs"][0]["results"][0]
    loc = root["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {
        "uri": "scenarios/ddp_unused_parameters.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert loc["region"]["startLine"] == 17
    assert root["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert github.startswith("::error file=scenarios/ddp_unused_parameters.py,line=17,")
