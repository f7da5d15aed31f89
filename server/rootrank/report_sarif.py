"""CI renderers for a :class:`~rootrank.model.Diagnosis`: SARIF 2.1.0 and GitHub Actions
workflow commands.

- :func:`to_sarif`: one SARIF 2.1.0 log (OASIS standard, schema in
  ``tests/data/sarif-schema-2.1.0.json``) with one run. The root cause is an ``error``
  result, each collateral group a ``note`` result. A result is located at the user's own
  frame when its traceback has one (``root_cause.user_frame``, or the innermost frame with
  ``user`` true), else at the log line; the log line is then a related location. Each
  signature used is a rule (``tool.driver.rules``) with its title, summary and fix steps.
- :func:`to_github`: ``::error file=..,line=..,title=..::message`` lines (one for the
  root cause, ``::notice`` for collateral) that GitHub Actions turns into annotations.

Paths: an absolute path under the current directory is written relative to it (so code
scanning maps it to the repository), as is one whose tail names a file under it (a
traceback printed on another machine); in SARIF such a ``uri`` carries
``"uriBaseId": "%SRCROOT%"`` (the checkout's root, as GitHub code scanning reads it; the
checkout's own absolute path is never written). Masking runs before rendering, so a path
can hold a placeholder (``/home/<user>/proj/train.py``): its tail still maps to the
checkout when the file is there; when it does not map, the path names no file of the
repository and no file on the reader's machine, so it is no location: the result is placed
at the next place that maps (the log line), and the masked path stays in the message text
(in workflow commands the annotation then has no ``file=``). Other absolute paths (no
placeholder: ``/opt/conda/.../torch/x.py``) become ``file://`` URIs in SARIF and stay as they
are in workflow commands. Lines are 1-based everywhere.

A compressed log (``r38.log.gz``: a name ending in a suffix ingest decompresses,
:data:`rootrank.ingest.COMPRESSED_SUFFIXES`) is located at the file with no line: its lines
are the decompressed text's, and a line of the compressed bytes would point into binary data.
The line goes into the text instead ("line 52 of the decompressed r38.log.gz").
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from rootrank import __version__
from rootrank.analysis.reasons import format_ranks
from rootrank.ingest import strip_compression
from rootrank.model import Diagnosis
from rootrank.report import user_frame, verdict

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_VERSION = "2.1.0"


def _absolute(path: str) -> bool:
    """Whether ``path`` is absolute on the machine that printed it: this system's own rule,
    or a Windows drive path (``C:\\Users\\...``, ``C:/...``) read on any system (a log from
    a Windows machine diagnosed on a Linux CI runner)."""
    return os.path.isabs(path) or (len(path) > 2 and path[1] == ":" and path[2] in "\\/")


def _relative(path: str, cwd: str | None = None) -> str:
    """``path`` relative to ``cwd`` (default: the current directory) when it lies under it."""
    cwd = cwd or os.getcwd()
    if _absolute(path):
        rel = ".."
        if os.path.isabs(path):
            try:
                rel = os.path.relpath(path, cwd)
            except ValueError:  # another drive (Windows)
                return path
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
        # A traceback from another machine (/home/user/project/scenarios/x.py): the longest
        # tail of the path that exists under cwd (scenarios/x.py), so the result maps to the
        # repository's file.
        parts = PurePosixPath(path.replace("\\", "/")).parts[1:]
        for i in range(1, len(parts)):
            tail = "/".join(parts[i:])
            if os.path.isfile(os.path.join(cwd, tail)):
                return tail
    return path


#: The SARIF base id of relative URIs: the root of the checkout (GitHub code scanning).
SRCROOT = "%SRCROOT%"


def _masked_away(rel: str) -> bool:
    """Whether ``rel`` (after :func:`_relative`) is an absolute path that masking changed
    (a ``<user>``-style placeholder: every one :mod:`rootrank.mask` writes into a path is in
    angle brackets) and that maps to no file under the current directory."""
    return _absolute(rel) and "<" in rel and ">" in rel


def _pseudo_file(path: str) -> bool:
    """Whether ``path`` is a name in angle brackets that stands for no file: standard input
    (``<stdin>``, how ``diagnose -`` names its log), what ``rootrank run`` read from its
    command (``<command output>``), Python's own names for code with no file (``File
    "<string>"`` of ``python -c``, ``<frozen runpy>``). No file on any machine has that name,
    so it is no location to annotate."""
    return len(path) > 2 and path[0] == "<" and path[-1] == ">"


def _mappable(path: str | None) -> str | None:
    """``path`` as written in a report (:func:`_relative`), or ``None`` when it names no file:
    masking made it name none (see :func:`_masked_away`) or it never did
    (:func:`_pseudo_file`: ``<stdin>``)."""
    if not path or _pseudo_file(path):
        return None
    rel = _relative(path)
    return None if _masked_away(rel) else rel


def _artifact(path: str) -> dict[str, str] | None:
    """A SARIF ``artifactLocation``: a relative ``uri`` on ``%SRCROOT%``, a ``file://`` URI,
    or ``None`` when masking made ``path`` name no file."""
    rel = _mappable(path)
    if rel is None:
        return None
    if _absolute(rel):
        posix = rel.replace("\\", "/")
        posix = posix if posix.startswith("/") else "/" + posix  # file:///C:/Users/...
        return {"uri": "file://" + quote(PurePosixPath(posix).as_posix(), safe="/:")}
    return {"uri": quote(rel.replace("\\", "/")), "uriBaseId": SRCROOT}


def _compressed(path: str | None) -> bool:
    """Whether ``path`` names a compressed log (by its suffix), whose line numbers count the
    decompressed text's lines."""
    return bool(path) and strip_compression(str(path)) != path


def _decompressed_line(path: str, line: int) -> str:
    """``line 52 of the decompressed r38.log.gz``: where a line of a compressed log is."""
    return f"line {max(1, int(line))} of the decompressed {os.path.basename(path)}"


def _location(path: str, line: int, message: str | None = None) -> dict[str, Any] | None:
    """A SARIF location, or ``None`` when ``path`` names no file (see :func:`_artifact`). A
    compressed log's location has no region: the line is named in its message instead."""
    artifact = _artifact(path)
    if artifact is None:
        return None
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if _compressed(path):
        where = _decompressed_line(path, line)
        message = f"{message}, {where}" if message else where
    else:
        physical["region"] = {"startLine": max(1, int(line))}
    loc: dict[str, Any] = {"physicalLocation": physical}
    if message:
        loc["message"] = {"text": message}
    return loc


def _located(
    frame: Any, evidence: list[Any], label_lines: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """``(locations, related locations, text to add to the message)`` of a result: at the
    user's frame (``in <function>``) when it maps to a file, else at the first log line
    that does; the other log lines (up to five in all) are related locations, labelled
    ``log line of rank N`` when ``label_lines``. A frame that masking made unmappable is
    named in the returned text instead (`` Raised at /home/<user>/x.py:12 ...``)."""
    lines = [
        loc
        for e in evidence[:5]
        if (loc := _location(e.path, e.line, _line_label(e) if label_lines else None))
    ]
    note = ""
    if frame:
        at = _location(frame.file, frame.line, f"in {frame.func or 'the user code'}")
        if at is not None:
            return [at], lines, note
        note = f" Raised at {frame.file}:{frame.line} (not a file of this checkout)."
    if not lines:
        return [], [], note
    # the primary location's label is dropped (the result's message says what it is), but a
    # compressed log's line is only in that label
    first = lines[0]
    if "region" in first["physicalLocation"]:
        first = {k: v for k, v in first.items() if k != "message"}
    return [first], lines[1:], note


def _line_label(e: Any) -> str:
    return f"log line{'' if e.rank is None else ' of rank ' + str(e.rank)}"


def _rule(
    sig: str, title: str, failure_class: str, summary: str | None, steps: list[str], refs: list[str]
) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": sig,
        "name": sig,
        "shortDescription": {"text": title},
        "properties": {"failure_class": failure_class, "tags": ["training-failure", failure_class]},
    }
    if summary:
        rule["fullDescription"] = {"text": summary}
    if steps:
        rule["help"] = {"text": "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))}
    http = [r for r in refs if r.startswith(("https://", "http://"))]
    if http:
        rule["helpUri"] = http[0]
    return rule


def to_sarif_dict(diag: Diagnosis) -> dict[str, Any]:
    """The SARIF 2.1.0 log as a dict (see the module docstring)."""
    rules: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    rc = diag.root_cause
    v = verdict(diag)
    if rc is not None and v is not None:
        rules.append(
            _rule(
                rc.signature,
                rc.title,
                rc.failure_class,
                rc.summary,
                list(rc.fix.steps),
                list(rc.references),
            )
        )
        text = (
            f"Root cause: {v['title']}" + (f" {v['on']} {v['where']}" if v["where"] else "") + "."
        )
        if v["fix"]:
            text += f" Fix: {v['fix']}"
        if v["verify"]:
            text += f" Verify: {v['verify']}"
        frame = user_frame(rc)
        locations, related, note = _located(frame, list(rc.evidence), label_lines=True)
        text += note
        result: dict[str, Any] = {
            "ruleId": rc.signature,
            "ruleIndex": 0,
            "level": "error",
            "kind": "fail",
            "message": {"text": text},
            "locations": locations,
            "properties": {
                "role": "root_cause",
                "failure_class": rc.failure_class,
                "rank": v["rank"],
                "host": v["host"],
                "confidence": rc.confidence,
                "verify": v["verify"],
            },
        }
        if related:
            result["relatedLocations"] = [dict(r, id=i) for i, r in enumerate(related)]
        results.append(result)
    for group in diag.collateral:
        sig = group.signature
        if all(r["id"] != sig for r in rules):
            rules.append(_rule(sig, group.title or sig, group.failure_class or "", None, [], []))
        index = next(i for i, r in enumerate(rules) if r["id"] == sig)
        ranks = group.ranks
        on = f" on rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}" if ranks else ""
        text = f"Collateral: {group.title or sig}{on}, explained by the root cause"
        text += f" ({rc.title})." if rc else "."
        evidence = group.evidence
        # A collateral finding's own user frame, when a finding of that signature has one.
        frame = next(
            (uf for f in diag.findings if f.signature == sig and (uf := user_frame(f)) is not None),
            None,
        )
        locations, related, note = _located(frame, list(evidence), label_lines=False)
        text += note
        result = {
            "ruleId": sig,
            "ruleIndex": index,
            "level": "note",
            "kind": "informational",
            "message": {"text": text},
            "locations": locations,
            "properties": {"role": "collateral", "ranks": list(ranks), "count": group.count},
        }
        if related:
            result["relatedLocations"] = [dict(r, id=i) for i, r in enumerate(related)]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "rootrank",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "artifacts": [
                    {"location": artifact}
                    for s in diag.sources
                    if s and s != "-" and (artifact := _artifact(s)) is not None
                ],
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def to_sarif(diag: Diagnosis) -> str:
    """The SARIF 2.1.0 log as indented JSON text."""
    return json.dumps(to_sarif_dict(diag), indent=2, ensure_ascii=False) + "\n"


def unread_input(reason: str) -> str:
    """A SARIF 2.1.0 log for a run that read no log (an empty, missing or unreadable input):
    no results, and ``reason`` (the CLI's error text) as the run's tool execution
    notification, with ``executionSuccessful`` false. A CI step that redirects the output to
    a file then uploads a valid log that says why, not an empty file the upload rejects."""
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "rootrank", "version": __version__, "rules": []}},
                "invocations": [
                    {
                        "executionSuccessful": False,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": reason}}
                        ],
                    }
                ],
                "results": [],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    # GitHub's workflow-command escaping (actions/toolkit, command.ts escapeData).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, message: str, path: str | None, line: int | None, title: str) -> str:
    props = []
    path = _mappable(path)
    if path:
        props.append(f"file={_escape_property(path)}")
        if line and _compressed(path):  # on the message's first line, before Fix/Verify
            head, nl, rest = message.partition("\n")
            message = f"{head.rstrip('.')}, at {_decompressed_line(path, line)}.{nl}{rest}"
        elif line:
            props.append(f"line={int(line)}")
    props.append(f"title={_escape_property(title)}")
    return f"::{kind} {','.join(props)}::{_escape_data(message)}"


def to_github(diag: Diagnosis) -> str:
    """GitHub Actions workflow commands: ``::error`` for the root cause (at the user's frame
    when the traceback has one, else the log line), ``::notice`` per collateral group. With
    no root cause: one ``::notice`` saying so (the unclassified exception when there is one)."""
    out: list[str] = []
    rc = diag.root_cause
    v = verdict(diag)
    if rc is None or v is None:
        u = diag.unclassified
        if u is not None and u.evidence:
            ev = u.evidence[0]
            out.append(
                _command(
                    "notice",
                    f"No known failure; last exception: {u.title}",
                    ev.path,
                    ev.line,
                    "rootrank: unclassified",
                )
            )
        else:
            out.append("::notice title=rootrank::No known failure found")
        return "\n".join(out) + "\n"
    raised = user_frame(rc)
    evidence = rc.evidence[0] if rc.evidence else None
    # a frame that masking made name no file: the annotation goes to the log line
    frame = raised if raised and _mappable(raised.file) is not None else None
    path, line = (
        (frame.file, frame.line)
        if frame
        else (evidence.path, evidence.line)
        if evidence
        else (None, None)
    )
    message = f"{v['title']}" + (f" {v['on']} {v['where']}" if v["where"] else "") + "."
    if frame and evidence:
        message += f"\nLog: {evidence.path}:{evidence.line}"
    elif raised and not frame:
        message += f"\nRaised at {raised.file}:{raised.line} (not a file of this checkout)"
    if v["fix"]:
        message += f"\nFix: {v['fix']}"
    if v["verify"]:
        message += f"\nVerify: {v['verify']}"
    out.append(_command("error", message, path, line, f"rootrank: {v['title']}"))
    for group in diag.collateral:
        first = group.evidence[0] if group.evidence else None
        ranks = group.ranks
        on = f" on rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}" if ranks else ""
        out.append(
            _command(
                "notice",
                f"{group.title or group.signature}{on}: collateral of {v['title']}.",
                first.path if first else None,
                first.line if first else None,
                "rootrank: collateral",
            )
        )
    return "\n".join(out) + "\n"
