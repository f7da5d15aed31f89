"""Masking walks the typed result (rootrank.mask_walk): every string field of a diagnosis is
masked, in every output format, including fields nobody listed, and the live events and the
triage output go through the same walk.

The secrets come from the seeded corpus (``tests/secrets/seeded.py``, through ``test_mask``):
no token literal sits in this file either.
"""

from __future__ import annotations

import dataclasses
import io
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_mask import HF, PASSWORD, _leaks, seeded

from rootrank import report, report_sarif
from rootrank.engine import diagnose_text
from rootrank.live.events import Reporter
from rootrank.live.stacks import RankStack, StackDump
from rootrank.live.tracker import Verdict
from rootrank.mask import Masker
from rootrank.mask_walk import OURS, mask_diagnosis
from rootrank.model import Diagnosis


def _strings(value: Any, path: str = "diagnosis", how: str = "text"):
    """Every string in ``value`` as ``(path, string, how)``: dataclass fields by their mask
    metadata (``"host"``, ``"ours"`` or ``"text"``), dict keys and values, list items."""
    if isinstance(value, str):
        yield path, value, how
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            inner = "ours" if how == "ours" else f.metadata.get("mask", "text")
            yield from _strings(getattr(value, f.name), f"{path}.{f.name}", inner)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]", how)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, f"{path}{{key}}", "ours" if how == "ours" else "text")
            yield from _strings(v, f"{path}[{k!r}]", how)


def _outputs(diag: Diagnosis) -> dict[str, str]:
    return {
        "json": report.to_json(diag),
        "text": report.to_text(diag, color=False, all_stacks=True),
        "markdown": report.to_markdown(diag),
        "sarif": report_sarif.to_sarif(diag),
        "github": report_sarif.to_github(diag),
    }


@pytest.mark.parametrize("seed", [7, 12])
def test_every_string_field_of_a_seeded_diagnosis_is_masked(seed: int) -> None:
    """Each string of the typed diagnosis, field by field: no planted secret, and masking it
    again changes nothing (masking is idempotent, so a string still holding a secret, a user
    name or a host in context would change). Rootrank's own words are left as written."""
    for log in seeded.build(seed):
        diag = diagnose_text(log.text, log.name)
        assert diag.root_cause is not None
        assert diag.root_cause.failure_class == log.failure_class
        found = list(_strings(diag))
        log_text = [(p, s) for p, s, how in found if how == "text"]
        hosts = [(p, s) for p, s, how in found if how == "host"]
        assert len(log_text) > 10, log.name  # evidence, captures, paths, reasoning...
        for path, s, _how in found:
            assert _leaks(s, log.planted) == [], (log.name, path)
        fresh = Masker()
        for path, s in log_text:
            assert fresh.text(s) == s, (log.name, path)
        for path, s in hosts:
            assert s.startswith(("host-", "ip-")) or s in ("localhost", "127.0.0.1"), path
        for name, out in _outputs(diag).items():
            assert _leaks(out, log.planted) == [], (log.name, name)


# -- a diagnosis with a secret in every field -------------------------------------------------

USER = "alice"
HOST = "gpu-node-018"
SECRET_LINE = (
    f"HF_TOKEN={HF} password: {PASSWORD} /home/{USER}/run/train.py --user {USER} MASTER_ADDR={HOST}"
)


def _fill(tp: Any, how: str, name: str = "") -> Any:
    """A value of type ``tp`` whose every string is :data:`SECRET_LINE` (``HOST`` for host
    fields, plain words for rootrank's own fields)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _fill(next(a for a in typing.get_args(tp) if a is not type(None)), how, name)
    if tp is str or tp is Any:
        return {"host": HOST, "ours": "our own words"}.get(how, SECRET_LINE)
    if tp is bool:
        return True
    if tp is int:
        return 3
    if tp is float:
        return 1.5
    if name == "points":  # [step, value] pairs
        return [[1, 2.0], [2, "nan"]]
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_fill(item, how)]
    if origin is dict:
        key, val = typing.get_args(tp)
        return {_fill(key, "ours" if how == "ours" else "text"): _fill(val, how)}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            inner = "ours" if how == "ours" else f.metadata.get("mask", "text")
            kwargs[f.name] = _fill(hints[f.name], inner, f.name)
        return tp(**kwargs)
    raise AssertionError(f"no value for {tp!r}")


def test_a_field_nobody_marked_is_masked_in_every_output_format() -> None:
    """Every field of every type in the diagnosis (its types read from the dataclasses, so a
    field added tomorrow is in here) holds a token, a password, a home path, a user name and
    a dotless host; after masking, no format shows any of them."""
    diag = _fill(Diagnosis, "text")
    raw = report.to_json(diag)
    for secret in (HF, PASSWORD, f"/home/{USER}", HOST):
        assert secret in raw  # the check below looks at text that had them
    ours = [p for p, _, how in _strings(diag) if how == "ours"]
    assert all(s != SECRET_LINE for p, s, how in _strings(diag) if how == "ours"), ours
    mask_diagnosis(diag, Masker())
    for path, s, how in _strings(diag):
        if how != "ours":
            assert HF not in s and PASSWORD not in s and USER not in s and HOST not in s, path
    for name, out in _outputs(diag).items():
        for secret in (HF, PASSWORD, HOST):
            assert secret not in out, (name, secret)
        assert f"/home/{USER}" not in out and f"--user {USER}" not in out, name
    assert json.loads(report.to_json(diag))["initiating_host"] == "host-1"


def test_only_rootrank_words_are_left_unmasked() -> None:
    """The fields that opt out of masking are ids, slugs and the entry's own text: a reviewer
    sees the whole list here when a new one is added."""
    marked = {
        f"{tp.__name__}.{f.name}"
        for tp in _types(Diagnosis)
        for f in dataclasses.fields(tp)
        if f.metadata.get("mask") == OURS
    }
    assert marked == {
        "CollateralGroup.failure_class",
        "CollateralGroup.role",
        "CollateralGroup.signature",
        "CollateralGroup.title",
        "Diagnosis.stack",
        "EventRef.kind",
        "EventRef.signature",
        "Explanation.rule",
        "Finding.failure_class",
        "Finding.role",
        "Finding.severity",
        "Finding.signature",
        "Finding.title",
        "Fix.code",
        "Fix.steps",
        "FixVariant.id",
        "InitiatorInfo.agreeing",
        "InitiatorInfo.strategy",
        "MetricOnset.kind",
        "MetricSeries.name",
        "Related.id",
        "Related.title",
        "RootCause.category",
        "RootCause.confirm",
        "RootCause.failure_class",
        "RootCause.mechanism",
        "RootCause.references",
        "RootCause.signature",
        "RootCause.summary",
        "RootCause.title",
        "RootCause.verify",
        "Symptom.meaning",
        "Symptom.text",
        "TimelineMark.kind",
        "TimelineMark.signature",
        "TimelineMark.title",
    }


def _types(tp: Any, seen: set[Any] | None = None) -> set[Any]:
    seen = set() if seen is None else seen
    if dataclasses.is_dataclass(tp) and tp not in seen:
        seen.add(tp)
        for hint in typing.get_type_hints(tp).values():
            _types(hint, seen)
    for arg in typing.get_args(tp):
        _types(arg, seen)
    return seen


def test_the_unclassified_exception_is_masked_where_signature_titles_are_kept() -> None:
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        f'[rank2]:   File "/home/{USER}/proj/train.py", line 3, in <module>\n'
        "[rank2]:     load()\n"
        f"[rank2]: mylib.ConfigHalted: bad config at /home/{USER}/cfg.yaml HF_TOKEN={HF}\n"
    )
    diag = diagnose_text(text, "run.log")
    assert diag.root_cause is None and diag.unclassified is not None
    assert (
        diag.unclassified.title
        == "mylib.ConfigHalted: bad config at /home/<user>/cfg.yaml HF_TOKEN=hf_***"
    )
    for out in _outputs(diag).values():
        assert HF not in out and f"/home/{USER}" not in out


# -- live and triage --------------------------------------------------------------------------


def test_live_stall_events_mask_paths_stacks_and_reasons() -> None:
    out = io.StringIO()
    reporter = Reporter(out, "json")
    where = f"/home/{USER}/proj/train.py"
    verdict = Verdict(
        kind="stall",
        suspect_rank=1,
        why=f"rank 1 on {HOST}.cluster.local stopped at step 40 (MASTER_ADDR={HOST})",
        ranks=[
            {
                "rank": 1,
                "step": 40,
                "total": None,
                "epoch": None,
                "time": 1.0,
                "path": where,
                "line": 9,
            }
        ],
        stalled=[1],
        seconds=200.0,
        threshold=180.0,
    )
    stacks = StackDump(
        stacks=[
            RankStack(
                pid=7,
                rank=1,
                frames=[{"func": "step", "file": where, "line": 12}],
                collective="all_reduce",
                where=f"in all_reduce at {where}:12",
            )
        ],
        notes=[f"pid 8: py-spy could not attach to /home/{USER}/proj (HF_TOKEN={HF})"],
    )
    reporter.verdict(verdict, stacks)
    reporter.progress(verdict.ranks)
    sent = out.getvalue()
    assert sent.count("\n") == 2
    for secret in (USER, HOST, HF):
        assert secret not in sent
    event = json.loads(sent.splitlines()[0])
    assert event["ranks"][0]["path"] == "/home/<user>/proj/train.py"
    assert event["stacks"]["stacks"][0]["frames"][0]["file"] == "/home/<user>/proj/train.py"
    assert event["suspect_rank"] == 1 and event["stalled"] == [1]
    text = io.StringIO()
    Reporter(text, "text").verdict(verdict, stacks)
    assert "/home/<user>/proj/train.py" in text.getvalue() and USER not in text.getvalue()
    raw = io.StringIO()
    Reporter(raw, "json", mask=False).verdict(verdict, stacks)
    assert where in raw.getvalue()  # --no-mask shows them: the check above looks at the right text


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_live_watch_of_a_seeded_log_leaks_nothing(fmt: str) -> None:
    log = seeded.build(11)[0]
    done = run_cli(
        "watch", "-", "--format", fmt, "--progress-every", "0.01", stdin=log.text.encode("utf-8")
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8") + done.stderr.decode("utf-8")
    assert log.failure_class in out
    assert _leaks(out, log.planted) == []


def test_triage_of_seeded_logs_leaks_nothing(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    logs = seeded.build(13)
    archive = tmp_path / "archive"
    for i, log in enumerate(logs):
        job = archive / f"job{i}"
        job.mkdir(parents=True)
        (job / log.name).write_text(log.text, encoding="utf-8")
    planted = [p for log in logs for p in log.planted]
    for fmt in ("json", "text", "markdown", "html"):
        done = run_cli(
            "triage", str(archive), "--format", fmt, "--workers", "1", "--quiet", timeout=300
        )
        assert done.returncode in (0, 1), done.stderr
        out = done.stdout.decode("utf-8")
        assert _leaks(out, planted) == [], fmt
        if fmt == "json":
            jobs = [j for j in map(json.loads, out.splitlines()) if "job" in j]
            assert len(jobs) == len(logs)
