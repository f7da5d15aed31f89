"""The diagnosis is the same before and after a change to how the scan runs (issue 11).

Every signature fixture (``signatures/**/*.log``), every log under ``tests/`` and, when the
shared corpus is present, every ``../shared/corpus/*/input.log`` is diagnosed in-process
(masked, as the CLI shows it) and the SHA-256 of its JSON (keys sorted) is compared with the
digest recorded in ``tests/data/scan_digests.json``. The digests were recorded from the engine
as it was before the throughput work (commit efa763c), so any change of a finding, an evidence
line or column, a rank, a count, the order of findings or the reasoning shows up here.

Paths are relative (the repository root, or the corpus folder), so the digests do not depend
on where the checkout lives.

A change that is *meant* to change diagnoses re-records the file, and says so in its commit::

    PYTHONPATH=server python tests/test_scan_identical.py --record
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import CORPUS  # noqa: E402

DIGESTS = ROOT / "tests" / "data" / "scan_digests.json"


def inputs() -> list[tuple[str, Path, str]]:
    """``(key, working folder, path to diagnose from it)`` for every log compared."""
    out: list[tuple[str, Path, str]] = []
    for pattern in ("signatures/**/*.log", "tests/**/*.log"):
        for p in sorted(ROOT.glob(pattern)):
            rel = p.relative_to(ROOT).as_posix()
            if "/.data/" in rel or "node_modules" in rel:
                continue
            out.append((rel, ROOT, rel))
    if CORPUS.is_dir():
        for p in sorted(CORPUS.glob("*/input.log")):
            rel = p.relative_to(CORPUS).as_posix()
            out.append((f"corpus/{rel}", CORPUS, rel))
    return out


def digest(cwd: Path, path: str) -> tuple[str, str]:
    """(SHA-256 hex of the masked diagnosis JSON, a one-line summary for messages)."""
    from rootrank.engine import diagnose_paths
    from rootrank.ingest import InputError

    here = os.getcwd()
    os.chdir(cwd)
    try:
        try:
            diag = diagnose_paths([path]).to_dict()
        except InputError as exc:
            diag = {"input_error": str(exc)}
    finally:
        os.chdir(here)
    data = json.dumps(diag, sort_keys=True, ensure_ascii=True, default=str)
    rc = diag.get("root_cause") or {}
    summary = f"{rc.get('signature')} rank={diag.get('initiating_rank')} findings={len(diag.get('findings') or [])}"
    return hashlib.sha256(data.encode()).hexdigest(), summary


def _recorded() -> dict[str, dict[str, str]]:
    return json.loads(DIGESTS.read_text(encoding="utf-8"))


def test_every_fixture_and_test_log_is_diagnosed_as_recorded():
    recorded = _recorded()
    diffs = []
    compared = 0
    for key, cwd, path in inputs():
        if key.startswith("corpus/"):
            continue
        if key not in recorded:
            continue  # a log added after the recording: nothing to compare with
        compared += 1
        got, summary = digest(cwd, path)
        if got != recorded[key]["sha256"]:
            diffs.append(f"{key}: now {summary}, recorded {recorded[key]['summary']}")
    assert compared >= 600, f"only {compared} recorded logs found"
    assert not diffs, "diagnoses changed:\n" + "\n".join(diffs)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_every_corpus_log_is_diagnosed_as_recorded():
    recorded = _recorded()
    diffs = []
    compared = 0
    for key, cwd, path in inputs():
        if not key.startswith("corpus/") or key not in recorded:
            continue
        compared += 1
        got, summary = digest(cwd, path)
        if got != recorded[key]["sha256"]:
            diffs.append(f"{key}: now {summary}, recorded {recorded[key]['summary']}")
    assert compared >= 90, f"only {compared} recorded corpus logs found"
    assert not diffs, "diagnoses changed:\n" + "\n".join(diffs)


def record() -> None:
    """Write the digests of the engine on the path (``PYTHONPATH``) now."""
    out = {}
    for key, cwd, path in inputs():
        sha, summary = digest(cwd, path)
        out[key] = {"sha256": sha, "summary": summary}
    DIGESTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {len(out)} digests in {DIGESTS}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(__doc__)
    record()
