"""What the live commands say: stall, straggler, failure and exit events.

``--format json`` writes one JSON object per line per event (``rootrank.live/1``)::

    {"event": "stall", "time": float (s since the epoch), "suspect_rank": int|null, "why": str,
     "seconds": float (no progress for), "threshold": float (s), "stalled": [int|null],
     "ranks": [{"rank": int|null, "step": int, "total": int|null, "epoch": int|null,
                "time": float, "path": str, "line": int (1-based)}],
     "stacks": {"stacks": [...], "notes": [str]} | null}
    {"event": "straggler", "time": ..., "suspect_rank": int, "why": str, "ranks": [...]}
    {"event": "failure", "time": ..., "diagnosis": {rootrank.diagnosis/1}, "final": bool}
    {"event": "progress", "time": ..., "ranks": [...]}            (only with --progress-every)
    {"event": "exit", "time": ..., "code": int}                    (rootrank run only)
    {"event": "withdrawn", "time": ..., "alarm": "stall"|"failure", "alarm_time": float,
     "what": str, "suspect_rank": int|null, "why": str}
    {"event": "healthy", "time": ..., "final": true, "exit_code": int|null,
     "withdrawn": [{"alarm": ..., "alarm_time": ..., "what": ..., "suspect_rank": ..., "why": ...}],
     "diagnosis": {rootrank.diagnosis/1}}

``withdrawn``: an earlier alarm turned out to be none (a stall: every stalled rank moved
again; a failure: the job survived the error). ``healthy``: the job ended with no failure
after alarms (``rootrank run``: exit code 0; ``watch``: its input ended); every alarm is
listed with why it was withdrawn.

``final`` is ``false`` for a failure seen while the job still runs and ``true`` for the
diagnosis at its end. The text form is one or a few lines per event, each starting with
``rootrank:``; a failure at the end of ``rootrank run`` is the full report of
``rootrank diagnose``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import IO, Any

from rootrank import report
from rootrank.live.stacks import StackDump
from rootrank.live.tracker import Verdict
from rootrank.mask import Masker
from rootrank.mask_walk import mask_result
from rootrank.model import Diagnosis
from rootrank.writes import write_text


def _fmt_rank(r: int | None) -> str:
    return "the job" if r is None else f"rank {r}"


class Reporter:
    """Writes events to ``out`` as ``"text"`` or ``"json"``; ``color`` for the text report.

    ``before_text`` is called before text is written (the runner uses it to start on a fresh
    line when the job's output stopped mid-line). ``mask`` masks what the stall, straggler and
    progress events quote from the job (log paths, stack frames, reasons) through one
    :class:`rootrank.mask.Masker` (:func:`rootrank.mask_walk.mask_result`); a failure's
    diagnosis comes masked from the engine. Thread-safe.
    """

    def __init__(
        self,
        out: IO[str],
        fmt: str = "text",
        *,
        color: bool = False,
        before_text: Any = None,
        mask: bool = True,
    ) -> None:
        self.out = out
        self.fmt = fmt
        self.color = color
        self.before_text = before_text
        self.masker = Masker(enabled=mask)
        self._lock = threading.Lock()
        self.emitted: list[dict[str, Any]] = []  # every event, as its JSON object (newest last)

    def _emit(self, event: dict[str, Any], text: str) -> None:
        event = {"event": event.pop("event"), "time": round(time.time(), 3), **event}
        with self._lock:
            self.emitted.append(event)
            if self.fmt == "json":
                write_text(self.out, json.dumps(event, ensure_ascii=False) + "\n")
            else:
                if self.before_text is not None:
                    self.before_text()
                write_text(self.out, text if text.endswith("\n") else text + "\n")

    def verdict(self, v: Verdict, stacks: StackDump | None = None) -> None:
        """A stall or a straggler."""
        event: dict[str, Any] = {
            "event": v.kind,
            "suspect_rank": v.suspect_rank,
            "why": v.why,
            "ranks": v.ranks,
        }
        if v.kind == "stall":
            event.update(
                seconds=round(v.seconds, 1),
                threshold=v.threshold,
                stalled=v.stalled,
                stacks=stacks.to_dict() if stacks is not None else None,
            )
        lines = [f"rootrank: {v.kind}: {v.why}"]
        if v.kind == "stall":
            now = time.time()
            for r in v.ranks:
                total = f"/{r['total']}" if r.get("total") else ""
                lines.append(
                    f"rootrank:   {_fmt_rank(r['rank'])}: step {r['step']}{total}, {now - r['time']:.0f} s ago"
                )
            if stacks is not None:
                for s in sorted(stacks.stacks, key=lambda s: (s.rank is None, s.rank or 0)):
                    who = f"rank {s.rank}" if s.rank is not None else f"pid {s.pid} (no rank)"
                    lines.append(f"rootrank:   {who} is {s.where}")
                lines.extend(f"rootrank:   stacks: {n}" for n in stacks.notes)
        with self._lock:  # one masker for every event, shared under the lock
            event = mask_result(event, self.masker)
            text = self.masker.text("\n".join(lines))
        self._emit(event, text)

    def failure(
        self,
        diag: Diagnosis,
        *,
        final: bool,
        stall: Verdict | None = None,
        exit_code: int | None = None,
    ) -> None:
        """A failure: while the job runs (``final`` False) a headline, at its end the report.
        ``stall``: the last stall reported during the run, when the output names no cause: the
        final report then says the job stalled (and where), not that no failure was found."""
        d = diag.to_dict()
        rc = diag.root_cause
        event: dict[str, Any] = {"event": "failure", "final": final, "diagnosis": d}
        if final and stall is not None and diag.root_cause is None:
            steps = ", ".join(f"{_fmt_rank(r['rank'])} at step {r['step']}" for r in stall.ranks)
            body = report.to_text(diag, color=self.color).split("\n")
            if body and "No known failure found." in body[0]:
                body[0] = "Nothing in the output names a cause."
            last = max((r["time"] for r in stall.ranks if r.get("time")), default=None)
            silent = time.time() - last if last is not None else stall.seconds
            head = (
                f"Stalled: {steps or 'no step seen'}, then no new step for {silent:.0f} s until"
                f" the job ended (reported then: {stall.why})."
            )
            event["stall"] = {
                "suspect_rank": stall.suspect_rank,
                "why": stall.why,
                "seconds": round(stall.seconds, 1),
                "ranks": stall.ranks,
            }
            self._emit(event, "\n".join([head, *body]))
            return
        if final:
            text = report.to_text(diag, color=self.color)
            if diag.root_cause is not None and exit_code == 0:
                event["exit_code_hid_failure"] = True
                text = _EXIT_HID_FAILURE + "\n" + text
            if diag.root_cause is None and exit_code:
                first, _, rest = text.partition("\n")
                if "No known failure found." in first:
                    text = _exit_without_cause(exit_code) + "\n" + rest
        else:
            where = f" on rank {diag.initiating_rank}" if diag.initiating_rank is not None else ""
            title, cls = (rc.title, rc.failure_class) if rc else ("an error", "?")
            text = f"rootrank: failure in the log so far: {title}{where} ({cls})"
        self._emit(event, text)

    def withdrawn(self, alarm: dict[str, Any]) -> None:
        """An earlier alarm (:attr:`rootrank.live.monitor.Monitor.alarms`) withdrawn."""
        with self._lock:
            event = mask_result({"event": "withdrawn", **_alarm_dict(alarm)}, self.masker)
            text = self.masker.text(
                f"rootrank: {alarm['alarm']} alarm withdrawn ({alarm['what']}): {alarm['withdrawn']}"
            )
        self._emit(event, text)

    def healthy(
        self, alarms: list[dict[str, Any]], diag: Diagnosis, *, exit_code: int | None
    ) -> None:
        """The job ended with no failure after ``alarms`` (each withdrawn, with why)."""
        code = f" (exit code {exit_code})" if exit_code is not None else ""
        lines = [
            f"rootrank: the run finished healthy{code}: nothing in its output shows a failure;"
            f" the earlier alarm{'s are' if len(alarms) > 1 else ' is'} withdrawn:"
        ]
        for a in alarms:
            when = time.strftime("%H:%M:%S", time.localtime(float(a["time"])))
            lines.append(f"rootrank:   {a['alarm']} at {when} ({a['what']}): {a['withdrawn']}")
        with self._lock:
            event: dict[str, Any] = mask_result(
                {
                    "event": "healthy",
                    "final": True,
                    "exit_code": exit_code,
                    "withdrawn": [_alarm_dict(a) for a in alarms],
                },
                self.masker,
            )
            text = self.masker.text("\n".join(lines))
        event["diagnosis"] = diag.to_dict()  # masked by the engine already
        self._emit(event, text)

    def progress(self, ranks: list[dict[str, Any]]) -> None:
        """A progress heartbeat (``--progress-every``; JSON only, for the editor's status bar)."""
        if self.fmt == "json":
            with self._lock:
                event = mask_result({"event": "progress", "ranks": ranks}, self.masker)
            self._emit(event, "")

    def exit(self, code: int) -> None:
        """The command's exit code (JSON only: in text the shell shows it)."""
        if self.fmt == "json":
            self._emit({"event": "exit", "code": code}, "")


def _alarm_dict(alarm: dict[str, Any]) -> dict[str, Any]:
    """An alarm as its JSON: ``alarm``, ``alarm_time`` (s since the epoch), ``what``,
    ``suspect_rank``, ``why`` (why it was withdrawn)."""
    return {
        "alarm": alarm["alarm"],
        "alarm_time": round(float(alarm["time"]), 3),
        "what": alarm["what"],
        "suspect_rank": alarm["suspect_rank"],
        "why": alarm["withdrawn"],
    }


#: The first line of ``rootrank run``'s final report when the output shows a failure and the
#: command exited 0: a pipeline's exit status is its last command's (bash, "Pipelines"), so
#: ``torchrun train.py 2>&1 | tee x.log`` exits with tee's 0 whatever the job did.
_EXIT_HID_FAILURE = (
    "The command exited 0, but its output shows a failure: its exit code hid it (a pipeline"
    " such as `... | tee x.log` exits with its last command's status; `set -o pipefail` passes"
    " the job's on)."
)


#: Exit codes of a command ended by a signal (the shell's 128 + N) and who usually sends it.
_SIGNALLED = {
    137: "SIGKILL: the kernel's OOM killer, a scheduler's limit or a person (dmesg -T | grep -i"
    " -e oom -e kill; the scheduler's record of the job)",
    143: "SIGTERM: a scheduler's time limit or cancellation, or a person",
    134: "SIGABRT: a C++ abort (an NCCL watchdog, a failed check)",
    139: "SIGSEGV: a native crash",
}


def _exit_without_cause(code: int) -> str:
    """The first line of ``rootrank run``'s final report when the command failed and its
    output names no cause: its exit code, and who sends that signal (exit codes 128 + N)."""
    who = _SIGNALLED.get(code)
    return (
        f"The command exited with code {code}"
        + (f" ({who})" if who else "")
        + "; nothing in its output names a cause."
    )
