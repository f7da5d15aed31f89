"""CI faces of ``rootrank diagnose``: ``--format sarif`` (validated against the official
SARIF 2.1.0 JSON schema, vendored from github.com/oasis-tcs/sarif-spec
``sarif-2.1/schema/sarif-schema-2.1.0.json`` into tests/data) and ``--format github``
(workflow commands); and the verdict-first text and Markdown."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
DDP = ROOT / "examples" / "ddp-unused-parameters.log"
HANG = ROOT / "examples" / "multi-rank-hang.log"
OOM_SAMPLE = ROOT / "extension" / "samples" / "torchrun-8gpu-oom.log"


def sarif(path) -> dict:
    proc = run_cli("diagnose", str(path), "--format", "sarif")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "log", [DDP, HANG, OOM_SAMPLE, ROOT / "examples" / "chained-traceback.log"]
)
def test_sarif_validates_against_the_official_schema(log):
    doc = sarif(log)
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    assert doc["version"] == "2.1.0"


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda d: d / "missing.log", "no such file or folder"),
        (
            lambda d: (d / "bin.log").write_bytes(bytes(range(256)) * 8) and d / "bin.log",
            "binary data",
        ),
    ],
)
def test_sarif_of_a_missing_or_binary_input_is_a_valid_log_saying_why(tmp_path, make, said):
    path = make(tmp_path)
    proc = run_cli("diagnose", str(path), "--format", "sarif")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    (note,) = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert said in note["message"]["text"]


def test_sarif_of_an_empty_input_is_a_valid_log_saying_why(tmp_path):
    """An empty log still exits 2, and stdout (redirected to the file CI uploads) holds a valid
    SARIF log with no result and the reason as the run's error notification."""
    empty = tmp_path / "train.log"
    empty.write_bytes(b"")
    proc = run_cli("diagnose", str(empty), "--format", "sarif")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    errors = list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    (run,) = doc["runs"]
    assert run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "empty input (0 bytes read)" in note["message"]["text"]
    assert "empty input" in proc.stderr.decode()


def test_sarif_root_cause_at_the_user_frame_and_collateral_at_log_lines():
    doc = sarif(DDP)
    run = doc["runs"][0]
    results = run["results"]
    root = results[0]
    assert root["level"] == "error" and root["ruleId"] == "ddp-unused-parameters"
    assert root["properties"]["rank"] == 2
    # The traceback's innermost user frame: /home/user/project/scenarios/ddp_unused_parameters.py
    # line 45, mapped to the repository's scenarios/ file.
    loc = root["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "scenarios/ddp_unused_parameters.py"
    assert loc["region"]["startLine"] == 45
    # The log line is a related location.
    related = root["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"] == "examples/ddp-unused-parameters.log"
    assert related["region"]["startLine"] == 24
    collateral = [r for r in results if r["properties"]["role"] == "collateral"]
    assert collateral and all(r["level"] == "note" for r in collateral)
    first = collateral[0]
    assert first["ruleId"] == "connection-reset-by-peer"
    # Its traceback has a user frame too (main, line 50); the log line is related.
    at = first["locations"][0]["physicalLocation"]
    assert (at["artifactLocation"]["uri"], at["region"]["startLine"]) == (
        "scenarios/ddp_unused_parameters.py",
        50,
    )
    assert first["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 41
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)


XID = ROOT / "signatures" / "hardware" / "nvrm-xid-hardware.positive.log"


def test_sarif_without_user_frame_is_at_the_log_line():
    # A kernel log: no traceback, so no user frame; the result sits on the log line.
    root = sarif(XID)["runs"][0]["results"][0]
    loc = root["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "signatures/hardware/nvrm-xid-hardware.positive.log"
    assert loc["region"]["startLine"] == 3
    assert root["message"]["text"].startswith("Root cause: The NVIDIA driver logged a hardware Xid")


def test_sarif_of_a_hang_is_at_the_initiating_ranks_own_call():
    root = sarif(HANG)["runs"][0]["results"][0]
    loc = root["locations"][0]["physicalLocation"]
    assert (loc["artifactLocation"]["uri"], loc["region"]["startLine"]) == (
        "scenarios/skip_collective.py",
        45,
    )
    related = root["relatedLocations"][0]["physicalLocation"]
    assert (related["artifactLocation"]["uri"], related["region"]["startLine"]) == (
        "examples/multi-rank-hang.log",
        19,
    )


def test_github_annotations():
    proc = run_cli("diagnose", str(HANG), "--format", "github")
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    # At the initiating rank's own call (rank 2's barrier in skip_collective.py).
    assert lines[0].startswith(
        "::error file=scenarios/skip_collective.py,line=45,title=rootrank%3A Ranks timed out"
    )
    # One message, newlines escaped: the verdict, then the fix and the verification command.
    message = lines[0].split("::", 2)[2]
    assert "\n" not in message and "%0AFix: " in message and "%0AVerify: " in message
    assert lines[1].startswith("::notice file=examples/multi-rank-hang.log,line=30,")
    assert "on ranks 0, 1, 3: collateral of" in lines[1]


def test_github_nothing_found_exits_1():
    proc = run_cli("diagnose", "-", "--format", "github", stdin=b"step 1 loss 0.5\n")
    assert proc.returncode == 1
    assert proc.stdout.decode() == "::notice title=rootrank::No known failure found\n"


def test_text_and_markdown_lead_with_the_verdict():
    text = run_cli("diagnose", str(DDP)).stdout.decode().splitlines()
    assert text[0] == (
        "Root cause: DDP reduction did not finish because some parameters received no gradient"
        " on rank 2, host localhost"
    )
    assert text[1].startswith("  at /home/user/project/scenarios/ddp_unused_parameters.py:45 · ")
    assert text[1].endswith("examples/ddp-unused-parameters.log:24")
    assert text[2].startswith(
        "Fix: ddp_unused_parameters.py:45 (in main), where rank 2 raised RuntimeError: "
    )
    # the log names rank 2 as the rank whose parameters got no grad: the fix leads with
    # find_unused_parameters (or a uniform branch), the rerun keeps the job's 4 processes
    # (the one-line fix is cut to the location and the action: rootrank.headline; the whole
    # step, with Rank 2's backward, is in the fix list)
    assert text[2] == (
        "Fix: ddp_unused_parameters.py:45 (in main), where rank 2 raised RuntimeError: Pass"
        " find_unused_parameters=True to DistributedDataParallel (the reducer then marks the"
        " skipped parameters ready; one extra graph traversal per step)."
    )
    assert any(t.startswith("  1. ") and "Rank 2's backward" in t for t in text)
    assert text[3].startswith("Verify: TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=4")
    md = run_cli("diagnose", str(DDP), "--format", "markdown").stdout.decode().splitlines()
    assert md[0].startswith("## Root cause: DDP reduction did not finish") and md[0].endswith(
        "on rank 2, host localhost"
    )
    assert md[2].startswith("- **At:** `/home/user/project/scenarios/ddp_unused_parameters.py:45`")
    assert md[3].startswith("- **Fix:** ") and md[4].startswith(
        "- **Verify:** `TORCH_DISTRIBUTED_DEBUG=DETAIL"
    )


def test_plurals_when_nothing_found():
    out = run_cli("diagnose", "-", stdin=b"step 1 loss 0.5\n").stdout.decode()
    assert "1 line read from 1 source." in out
    assert "lines read" not in out and "source(s)" not in out


def test_markdown_opens_only_the_detected_stack():
    md = run_cli("diagnose", str(DDP), "--format", "markdown").stdout.decode()
    # A plain PyTorch run: PyTorch's code shown, the other stacks' code folded.
    assert "**PyTorch**\n" in md
    folded = [line for line in md.splitlines() if line.startswith("<details><summary>")]
    assert folded == [
        "<details><summary>Hugging Face Trainer / Accelerate</summary>",
        "<details><summary>DeepSpeed</summary>",
    ]


def test_a_windows_frame_is_no_checkout_path_in_sarif_or_annotations():
    """A traceback from a Windows machine (``C:\\Users\\<user>\\...``, masked) names no file of
    the checkout: the root cause sits at the log's own line in SARIF and in the annotation,
    never at a path made relative to the runner's checkout (``C%3A/Users/...``)."""
    log = ROOT / "tests" / "fix_variants" / "nccl-backend-without-gpu" / "windows.log"
    doc = sarif(log)
    (root,) = [r for r in doc["runs"][0]["results"] if r["properties"]["role"] == "root_cause"]
    where = root["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"].endswith("windows.log")
    assert where["region"]["startLine"] == 10
    gh = run_cli("diagnose", str(log), "--format", "github").stdout.decode()
    first = gh.splitlines()[0]
    assert first.startswith("::error file=") and "windows.log,line=10," in first
    assert "C%3A" not in gh


def test_a_compressed_log_is_located_by_its_decompressed_lines(tmp_path):
    """A ``.gz`` log's line numbers count the decompressed text's lines (trial r16 finding 11):
    SARIF locates the result at the file with no region (a line of the gzip bytes would point
    into binary data) and names the line in the location's message; a workflow command has
    ``file=`` and no ``line=``, and its message says which line of the decompressed text."""
    import gzip

    plain = tmp_path / "hang.log"
    plain.write_bytes(HANG.read_bytes())
    packed = tmp_path / "hang.log.gz"
    packed.write_bytes(gzip.compress(HANG.read_bytes()))
    lines = [
        loc["physicalLocation"]["region"]["startLine"]
        for r in sarif(plain)["runs"][0]["results"]
        for loc in r["locations"]
        if loc["physicalLocation"]["artifactLocation"]["uri"].endswith("hang.log")
    ]
    assert lines
    doc = sarif(packed)
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    at_gz = [
        loc
        for r in doc["runs"][0]["results"]
        for loc in r["locations"]
        if loc["physicalLocation"]["artifactLocation"]["uri"].endswith("hang.log.gz")
    ]
    assert len(at_gz) == len(lines)
    for loc, line in zip(at_gz, lines, strict=True):
        assert "region" not in loc["physicalLocation"]
        assert f"line {line} of the decompressed hang.log.gz" in loc["message"]["text"]

    plain_gh = run_cli("diagnose", str(plain), "--format", "github").stdout.decode().splitlines()
    gh = run_cli("diagnose", str(packed), "--format", "github").stdout.decode().splitlines()
    assert len(gh) == len(plain_gh) and gh
    for cmd, plain_cmd in zip(gh, plain_gh, strict=True):
        if "hang.log," not in plain_cmd:
            continue  # located at a frame, not at the log
        line = int(plain_cmd.split(",line=", 1)[1].split(",", 1)[0])
        assert "hang.log.gz," in cmd and ",line=" not in cmd
        assert f", at line {line} of the decompressed hang.log.gz." in cmd


def test_a_log_on_stdin_is_no_file_to_annotate():
    """``... | rootrank diagnose - --format github|sarif``: standard input is no file, so no
    annotation says ``file=<stdin>`` and no SARIF location or artifact is ``%3Cstdin%3E``;
    the root cause (its frame masked away, so it would sit at its log line) is then an
    annotation on the job and a result with no location, and the SARIF log stays valid."""
    log = ROOT / "tests" / "fix_variants" / "nccl-backend-without-gpu" / "windows.log"
    gh = run_cli("diagnose", "-", "--format", "github", stdin=log.read_bytes()).stdout.decode()
    first = gh.splitlines()[0]
    assert first.startswith("::error title=rootrank%3A The NCCL backend was requested on Windows")
    assert "stdin" not in gh.split("::")[1]  # the properties, not the message
    assert "%0ALog: <stdin>:10" not in first  # no frame: the message names no second place
    proc = run_cli("diagnose", "-", "--format", "sarif", stdin=log.read_bytes())
    doc = json.loads(proc.stdout)
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    run = doc["runs"][0]
    assert run["artifacts"] == []
    (root,) = run["results"]
    assert root["properties"]["role"] == "root_cause" and root["locations"] == []
    assert "stdin" not in json.dumps(run)
    # the same log as a file keeps its location (the rule is about stdin, not this log)
    assert sarif(log)["runs"][0]["results"][0]["locations"] != []
