"""The entry filled for this job: the root cause's signature entry (summary, mechanism,
fix, confirm, verify) rendered with the values the log gives (captures, rank, host, world
size) and the launch facts the scan saw (entry script, launcher, processes per node).

Moved out of :mod:`rootrank.analyze`, which decides *what* the root cause is; this module
decides *what to tell the user to do* about it.
"""

from __future__ import annotations

from typing import Any

import regex

from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library, Signature

_PLACEHOLDER = regex.compile(r"\{([a-z_][a-z0-9_]*)\}")

_UNKNOWN = {"rank": "<rank>", "host": "<host>"}
#: "rank {rank}" / "host {host}" when the log does not tell: a phrase, not a placeholder.


def render(template: str, values: dict[str, Any], *, keep_unknown: bool = False) -> str:
    """Fill ``{name}`` placeholders from ``values``. An unknown name becomes ``<name>``
    (``rank``/``host``: "the failing rank"/"the failing host"), or stays as written with
    ``keep_unknown`` (code, where braces may be Python's). Other braces (JSON, shell
    ``${VAR}``) are left alone."""

    if not keep_unknown:
        for key, phrase in (("rank", "the failing rank"), ("host", "the failing host")):
            if values.get(key) is None:
                template = regex.sub(r"\b[Rr]ank \{" + key + r"\}" if key == "rank" else r"\b[Hh]ost \{host\}", phrase, template)

    def sub(m: regex.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0) if keep_unknown else _UNKNOWN.get(m.group(1), f"<{m.group(1)}>")
        return str(value)

    return _PLACEHOLDER.sub(sub, template)


#: Entries write the user's entry script as ``train.py`` (verify commands, fix code).
_TRAIN_PY = regex.compile(r"(?<![\w./-])train\.py\b")


def entry_script(state: ScanState, root: Finding) -> str | None:
    """The entry script: as the launcher names it (torchelastic's ``x.py FAILED`` title, a
    printed ``torchrun ... x.py``), else the file name of the user's ``<module>`` frame in the
    root cause's traceback; ``None`` when the log names none."""
    if state.launch.script:
        return state.launch.script
    frames = [(str(f.get("file", "")), f.get("func"), f.get("user")) for f in root.frames]
    # A chained traceback keeps its <module> frame in another link of the chain.
    frames += [(f.file, f.func, f.user) for seen in state.exceptions for f in seen.exc.frames]
    for file, func, user in frames:
        name = file.replace("\\", "/").rsplit("/", 1)[-1]
        if func == "<module>" and user and name.endswith(".py"):
            return name
    return None


#: The entries' launch command, and how the other launchers spell it (their CLIs' own flags:
#: ``deepspeed --num_gpus``, ``accelerate launch --num_processes``).
_TORCHRUN = regex.compile(r"\btorchrun --nproc-per-node=(?P<n>\S+)")
_LAUNCH_AS = {"deepspeed": "deepspeed --num_gpus {n}", "accelerate": "accelerate launch --num_processes {n}"}


def with_script(text: str, script: str | None, gpus: int | None = None, launcher: str | None = None) -> str:
    """``text`` with the entries' stand-ins filled from the log: ``train.py`` becomes the log's
    own entry script, ``<gpus>`` the launcher's ``--nproc-per-node``, and ``torchrun
    --nproc-per-node=N`` the launcher the log used (``deepspeed``/``accelerate``), when the
    log shows them."""
    if gpus is not None and "<gpus>" in text:
        text = text.replace("<gpus>", str(gpus))
    if launcher in _LAUNCH_AS and "torchrun --nproc-per-node=" in text:
        text = _TORCHRUN.sub(lambda m: _LAUNCH_AS[launcher].format(n=m["n"]), text)
    if not script or script == "train.py" or "train.py" not in text:
        return text
    return _TRAIN_PY.sub(script.replace("\\", "\\\\"), text)


def fill_entry(
    sig: Signature, root: Finding, *, group: list[Finding], findings: list[Finding], state: ScanState,
    library: Library, initiating: int | None, initiating_host: str | None, masker: Any | None,
) -> dict[str, Any]:
    """The ``root_cause`` dict of the diagnosis (schema ``rootrank.diagnosis/1``) for the
    root-cause finding ``root`` of signature ``sig``: ``group`` holds the findings of the
    same signature, ``findings`` all findings, ``initiating``/``initiating_host`` what the
    causal analysis concluded (``None`` when the log does not tell). ``masker`` (a
    :class:`rootrank.mask.Masker`, optional) masks the log's values before they fill the
    templates."""
    values: dict[str, Any] = {k: (masker.text(v) if masker else v) for k, v in root.captures.items()}
    rc_rank = initiating if initiating is not None else root.rank
    host_value = initiating_host or root.host
    values.update({"rank": rc_rank, "host": masker.host(host_value) if masker and host_value else host_value})
    if state.world_size:
        values["world_size"] = state.world_size
    script = entry_script(state, root)
    gpus = state.launch.nproc_per_node
    launcher = state.launch.launcher
    if script and masker:
        script = masker.text(script)
    evidence = [e.to_dict() for e in root.evidence[:3]]
    for f in findings:  # supporting lines of the same class (a warning before the error)
        if f is not root and f.failure_class == root.failure_class and f.rank in (root.rank, None) and len(evidence) < 5:
            evidence.extend(e.to_dict() for e in f.evidence[:1])
    confidence = 0.4 + 0.0055 * sig.specificity if root.role == "cause" else 0.25 + 0.004 * sig.specificity
    if len({f.rank for f in group}) > 1 and initiating is None:
        confidence -= 0.1
    return {
        "signature": sig.id,
        "failure_class": sig.failure_class,
        "title": sig.title,
        "category": sig.category,
        "confidence": round(max(0.05, min(0.99, confidence)), 2),
        "rank": rc_rank,
        "host": (state.hosts.get(rc_rank) if rc_rank is not None else None) or (root.host if rc_rank == root.rank else None),
        "time": root.time,
        "count": sum(f.count for f in group),
        "ranks": sorted({f.rank for f in group if f.rank is not None}),
        "evidence": evidence,
        "captures": dict(root.captures),
        "frames": list(root.frames),
        "summary": render(sig.entry["summary"], values),
        "mechanism": render(sig.entry["mechanism"], values),
        "symptoms": sig.entry.get("symptoms", []),
        "fix": {
            "steps": [with_script(render(s, values), script, gpus, launcher) for s in sig.fix["steps"]],
            "code": {
                k: with_script(render(v, values, keep_unknown=True), script, gpus, launcher) for k, v in sig.fix.get("code", {}).items()
            },
        },
        "confirm": [with_script(render(c, values), script, gpus, launcher) for c in sig.confirm],
        "verify": with_script(render(sig.verify, values), script, gpus, launcher),
        "references": list(sig.references),
        "related": [
            {"id": r, "title": library.signatures[r].title} for r in sig.related if r in library.signatures
        ],
    }
