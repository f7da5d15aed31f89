"""The live loop's checks, run about once a second (:meth:`Monitor.tick`).

- A failure is reported once the lines show a root cause and the output has been quiet for
  :data:`SETTLE` seconds (the lines of one crash arrive within a moment of each other, and
  the first of them rarely tell the whole story), or :data:`MAX_SETTLE` seconds after it was
  first seen; again only if a later root cause differs (another signature or rank), or
  belongs to a new job (:attr:`rootrank.live.feed.LiveScan.run` changed: a watched log was
  truncated or rotated, a newer job's file appeared), even when it is the same as the last.
- Stalls and stragglers come from the :class:`~rootrank.live.tracker.ProgressTracker`; with
  ``on_stall="dump"`` each rank's stack is collected first (in a thread, so the job's output
  keeps flowing) and may name the suspect.
- An alarm (a stall, a failure reported while the job ran) is **withdrawn** when the job
  shows it was none: a stall when every stalled rank moved again, a failure when the
  diagnosis of the lines so far no longer names it (the process survived the error: a later
  step, the run's end). Each is said once (``withdrawn``), and a job that ends with no failure
  after alarms ends with ``healthy``, listing them and why each was withdrawn (new-user trial
  r17c: a stall alarm of a slow rank stood after the run finished with exit code 0).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rootrank.live.events import Reporter
from rootrank.live.feed import LiveScan
from rootrank.live.stacks import StackDump, dump_job
from rootrank.live.tracker import Verdict
from rootrank.model import Diagnosis

#: Quiet seconds after a root cause is seen before it is reported.
SETTLE = 1.5
#: ... or this many seconds after it was first seen, whatever the output does.
MAX_SETTLE = 10.0
#: Seconds between two mid-stream analyses at least (more when one takes long).
MIN_SNAPSHOT_GAP = 1.0


def failure_key(diag: Diagnosis) -> tuple[str, int | None] | None:
    """What identifies a reported failure: its root cause's signature and rank."""
    if not diag.root_cause:
        return None
    return diag.root_cause.signature, diag.initiating_rank


class Monitor:
    """Checks a :class:`LiveScan` and reports through a :class:`Reporter`.

    ``job_pid`` (for ``on_stall="dump"``) is the root process of the job; ``progress_every``
    (s, or None) sends a progress heartbeat that often while steps change.
    """

    def __init__(
        self,
        scan: LiveScan,
        reporter: Reporter,
        *,
        on_stall: str = "report",
        job_pid: Callable[[], int | None] | None = None,
        progress_every: float | None = None,
    ) -> None:
        self.scan = scan
        self.reporter = reporter
        self.on_stall = on_stall
        self.job_pid = job_pid
        self.progress_every = progress_every
        #: The failure reported last for the current job (LiveScan.run), if any.
        self.reported: tuple[str, int | None] | None = None
        #: Whether any failure was reported (of any job).
        self.any_reported = False
        self._run = scan.run
        self._seen_order: tuple[object, ...] | None = None
        self._seen_changes: tuple[int, int, int] | None = None
        self._last_snapshot = 0.0
        self._gap = MIN_SNAPSHOT_GAP
        self._candidate: tuple[tuple[str, int | None], float, Diagnosis] | None = None
        self._last_heartbeat = 0.0
        self._heartbeat_state: list[tuple[int | None, int]] | None = None
        self._dumps: list[threading.Thread] = []
        #: The stalls reported so far (the final report names the last when nothing else).
        self.stalls: list[Verdict] = []
        #: Every alarm raised (a stall or a failure reported while the job ran), in order:
        #: ``{"alarm": "stall"|"failure", "time": float (s since the epoch), "what": str,
        #: "suspect_rank": int|None, "withdrawn": str|None (why, once withdrawn)}``.
        self.alarms: list[dict[str, object]] = []

    def tick(self, now: float | None = None) -> None:
        """Run the checks (call about once a second)."""
        now = time.time() if now is None else now
        self._check_failure(now)
        with self.scan.lock:
            verdicts = self.scan.tracker.check(now)
            ranks = self.scan.tracker.snapshot() if self.progress_every else None
        for v in verdicts:
            if v.kind == "stall":
                self.stalls.append(v)
                if not v.follow_up:
                    self._alarm("stall", v.why, v.suspect_rank, now)
            if (
                v.kind == "stall"
                and not v.follow_up
                and self.on_stall == "dump"
                and self.job_pid is not None
                and self.job_pid()
            ):
                t = threading.Thread(
                    target=self._dump_and_report, args=(v, self.job_pid()), daemon=True
                )
                self._dumps.append(t)
                t.start()
            else:
                self.reporter.verdict(v)
        if not verdicts and not self.scan.tracker.stall_open:
            alarm = self._open("stall")
            if alarm is not None:
                with self.scan.lock:
                    ranks = self.scan.tracker.snapshot()
                steps = ", ".join(
                    f"{'the job' if r['rank'] is None else 'rank ' + str(r['rank'])} at step {r['step']}"
                    for r in ranks
                )
                self._withdraw(alarm, f"every stalled rank moved again ({steps})")
        if (
            ranks is not None
            and self.progress_every is not None
            and now - self._last_heartbeat >= self.progress_every
        ):
            state = [(r["rank"], r["step"]) for r in ranks]
            if state != self._heartbeat_state:
                self._heartbeat_state = state
                self._last_heartbeat = now
                self.reporter.progress(ranks)

    def _check_failure(self, now: float) -> None:
        if self.scan.run != self._run:  # a new job: its failure is its own
            self._run = self.scan.run
            self.reported, self._candidate, self._seen_order = None, None, None
            self._seen_changes = None
            self.alarms = []  # the earlier job's: a new job neither confirms nor withdraws them
        changes = self.scan.changes()
        order: tuple[object, ...] = changes
        if self.reported is not None:
            # a failure is standing: new steps may show the job survived it (withdrawn)
            with self.scan.lock:
                order += tuple((r["rank"], r["step"]) for r in self.scan.tracker.snapshot())
        if order != self._seen_order and now - self._last_snapshot >= self._gap:
            self._seen_order = order
            self._seen_changes = changes
            self._last_snapshot = now
            t0 = time.perf_counter()
            diag = self.scan.snapshot()
            # an analysis never takes more than a tenth of the time
            self._gap = max(MIN_SNAPSHOT_GAP, 10 * (time.perf_counter() - t0))
            key = failure_key(diag)
            if key is None and self.reported is not None:
                # the failure reported earlier is gone from the diagnosis: the job showed
                # it survived the error (a later step, the run's end)
                self.reported = None
                alarm = self._open("failure")
                if alarm is not None:
                    self._withdraw(alarm, _why_gone(diag))
            if key is None or key == self.reported:
                self._candidate = None
            elif self._candidate is None or self._candidate[0] != key:
                self._candidate = (key, now, diag)
            else:
                self._candidate = (key, self._candidate[1], diag)
        if self._candidate is not None:
            key, first, diag = self._candidate
            quiet = now - self.scan.last_arrival >= SETTLE
            if (quiet and self._seen_changes == self.scan.changes()) or now - first >= MAX_SETTLE:
                self.reported = key
                self.any_reported = True
                self._candidate = None
                self.reporter.failure(diag, final=False)
                rc = diag.root_cause
                self._alarm("failure", rc.title if rc else "a failure", diag.initiating_rank, now)

    def _alarm(self, kind: str, what: str, suspect: int | None, now: float) -> None:
        """Record an alarm raised (``kind`` ``"stall"`` or ``"failure"``)."""
        self.alarms.append(
            {"alarm": kind, "time": now, "what": what, "suspect_rank": suspect, "withdrawn": None}
        )

    def _open(self, kind: str) -> dict[str, object] | None:
        """The latest alarm of ``kind`` not withdrawn, if any."""
        for a in reversed(self.alarms):
            if a["alarm"] == kind:
                return a if a["withdrawn"] is None else None
        return None

    def _withdraw(self, alarm: dict[str, object], why: str) -> None:
        """Withdraw ``alarm`` (``why``: one sentence) and say so."""
        alarm["withdrawn"] = why
        self.reporter.withdrawn(alarm)

    def _dump_and_report(self, v: Verdict, pid: int) -> None:
        dump = dump_job(pid)
        suspect, why = dump.suspect()
        if suspect is not None:
            if v.suspect_rank not in (None, suspect):
                v.why += f"; but the stacks point elsewhere: {why}"
            else:
                v.why += f"; {why}"
            v.suspect_rank = suspect
        self.reporter.verdict(v, dump)

    def wait_dumps(self, timeout: float = 30.0) -> None:
        """Wait for stack dumps still running (so their stall is reported before exit)."""
        end = time.time() + timeout
        for t in self._dumps:
            t.join(max(0.0, end - time.time()))

    def final(
        self, diag: Diagnosis, failed: bool, exit_code: int | None = None, ended: bool = True
    ) -> None:
        """At the end: the full diagnosis when the job failed, when a new root cause showed
        up, or (``rootrank run``) when the output shows a failure although the command exited
        0 (``cmd | tee x.log``: a pipeline's status is its last command's, so ``tee`` hid the
        job's; the report then says so). ``exit_code``: the command's (``rootrank run``;
        ``None`` for ``watch``, which knows none), said when the output names no cause.

        A job that ended (``ended``: the command exited, or the watched input ended) with no
        failure (not ``failed``, no root cause, no exit code but 0) after alarms ends with a
        ``healthy`` event: every alarm, each withdrawn with its reason (those still standing
        are withdrawn now: the job went on to its end). Not when the watched input ended during
        an open stall with no exit code and no run end in the output: the stall stands."""
        key = failure_key(diag)
        stall = self.stalls[-1] if self.stalls else None
        hidden = exit_code == 0 and key is not None
        if failed or hidden or (key is not None and key != self.reported):
            if key is not None or failed:
                self.reporter.failure(diag, final=True, stall=stall, exit_code=exit_code)
                return
        if not ended or not self.alarms or failed or key is not None or exit_code:
            return
        if diag.unclassified is not None:
            return  # an exception no signature names: no healthy run either (exit 3)
        if (
            exit_code is None
            and self.scan.tracker.stall_open
            and not any("[run_completed]" in r for r in diag.reasoning)
        ):
            # the watched output ended while the ranks were stalled, with no run end in it: the
            # job did not go on (the stream stopped: a cut log, a killed pipe), the stall stands
            return
        end = (
            f"the command exited {exit_code} with no failure in its output"
            if exit_code is not None
            else "the output ended with no failure in it"
        )
        for a in self.alarms:
            if a["withdrawn"] is None:
                why = _why_gone(diag) if a["alarm"] == "failure" else None
                a["withdrawn"] = why or f"the job went on: {end}"
        self.reporter.healthy(list(self.alarms), diag, exit_code=exit_code)


def _why_gone(diag: Diagnosis) -> str:
    """Why a failure reported earlier is no longer the diagnosis: the reasoning that set it
    aside (an error survived, caught before the run's end), else that the lines since show
    none."""
    for r in diag.reasoning:
        if "[error_survived]" in r or "[run_completed]" in r:
            return r
    return "the diagnosis of the lines since names no failure"


__all__ = ["Monitor", "StackDump", "failure_key"]
