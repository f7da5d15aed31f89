"""Per-rank progress while a job runs, and the two live verdicts drawn from it.

- **stall**: a rank (or every rank) has shown no new step for longer than the threshold
  (``--stall SECONDS``; by default :data:`MIN_DEFAULT_STALL` seconds or
  :data:`STALL_INTERVALS` times the slowest rank's median step interval, whichever is larger).
  Reported once per episode, at the first check past the threshold; a new episode starts
  only after every stalled rank has moved again.
- **straggler**: one rank's median time per step is :data:`STRAGGLER_RATIO` times the median
  of the other ranks' (over the last :data:`WINDOW` steps, once each rank has
  :data:`MIN_INTERVALS` of them), or it lags the leading rank by :data:`STRAGGLER_LAG` steps
  more than its own print stride allows, at two checks in a row. Reported once per rank.
  A rank's print stride is the median number of steps between its printed step lines (1 when
  it prints every step; 10 for ``if step % 10 == 0``): such a rank shows a step up to
  stride - 1 behind the others while it is level with them, and the time between its lines
  is stride steps' time, so both rules count per step, not per printed line.

Times are seconds since the epoch, from the arrival of the line (the live commands read
output as it is written). Which rank is the suspect of a stall: the rank whose last step is
below every other rank's (it is behind), else the rank whose last step is clearly older than
the others' (it stopped first), else none; a stack dump (:mod:`rootrank.live.stacks`) can
name it later (the only rank not inside a collective).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any

#: The default stall threshold is never below this (seconds).
MIN_DEFAULT_STALL = 180.0
#: ... and at least this many times the slowest rank's median step interval.
STALL_INTERVALS = 10.0
#: Step intervals kept per rank.
WINDOW = 32
#: Intervals a rank needs before it can be called a straggler.
MIN_INTERVALS = 5
#: A straggler's median interval is at least this times the others'.
STRAGGLER_RATIO = 2.0
#: ... or it lags the leading rank by at least this many steps (at two checks in a row).
STRAGGLER_LAG = 5
#: A rank "stopped first" when its last step is older than the others' by this many seconds
#: and by more than two median step intervals.
FIRST_STOP_MARGIN = 1.0


@dataclass
class RankProgress:
    """One rank's progress: ``step`` (int, as printed), ``total`` (int or None), ``epoch``,
    ``time`` (s since the epoch, when this step was first seen), ``first_time``,
    ``intervals`` (s between new steps, the last :data:`WINDOW`), ``line`` (1-based, in
    ``path``)."""

    rank: int | None
    step: int
    total: int | None
    epoch: int | None
    time: float
    first_time: float
    path: str
    line: int
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    lag_checks: int = 0
    #: Steps between successive printed step lines (of one epoch), the last :data:`WINDOW`.
    strides: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    #: Seconds per step between successive printed step lines (interval / stride).
    step_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "step": self.step,
            "total": self.total,
            "epoch": self.epoch,
            "time": round(self.time, 3),
            "path": self.path,
            "line": self.line,
        }

    def median_interval(self) -> float | None:
        return statistics.median(self.intervals) if self.intervals else None

    def stride(self) -> int:
        """Median steps between this rank's printed step lines (1 before two were seen)."""
        return max(1, int(statistics.median(self.strides))) if self.strides else 1

    def median_step_seconds(self) -> float | None:
        """Median seconds per step (not per printed line), or ``None`` before two lines."""
        return statistics.median(self.step_seconds) if self.step_seconds else None


@dataclass
class Verdict:
    """A stall or straggler found by :meth:`ProgressTracker.check`.

    ``kind`` is ``"stall"`` or ``"straggler"``; ``suspect_rank`` an int or None; ``why`` one
    sentence; ``ranks`` the per-rank progress (dicts of :meth:`RankProgress.to_dict`);
    ``stalled`` the ranks with no progress past the threshold; ``seconds`` how long the
    suspect (or the job) has shown none; ``threshold`` the stall threshold in force (s).
    ``follow_up``: a stall episode's second verdict, when every rank has stopped after the
    first named only some (no new stack dump is taken for it).
    """

    kind: str
    suspect_rank: int | None
    why: str
    ranks: list[dict[str, Any]]
    stalled: list[int | None]
    seconds: float
    threshold: float
    follow_up: bool = False


class ProgressTracker:
    """Feed steps with :meth:`update`; call :meth:`check` now and then (every second)."""

    def __init__(self, stall: float | None = None) -> None:
        """``stall``: the threshold in seconds, or ``None`` for the default (see the module)."""
        self.explicit_stall = stall
        self.ranks: dict[int | None, RankProgress] = {}
        self._stall_open = False
        #: Whether the open stall episode has said that every rank stopped.
        self._stall_all_told = False
        self._stragglers: set[int | None] = set()

    def update(
        self,
        rank: int | None,
        step: int,
        total: int | None,
        epoch: int | None,
        now: float,
        path: str,
        line: int,
    ) -> bool:
        """Record ``rank`` at ``step`` at time ``now`` (s). Returns ``True`` when it is new
        progress (another step or epoch than the last one seen for that rank)."""
        rp = self.ranks.get(rank)
        if rp is None:
            if rank is not None and None in self.ranks and len(self.ranks) == 1:
                del self.ranks[None]  # the job turned out to name its ranks
            self.ranks[rank] = RankProgress(rank, step, total, epoch, now, now, path, line)
            return True
        if (step, epoch) == (rp.step, rp.epoch):
            return False
        rp.intervals.append(max(0.0, now - rp.time))
        if epoch == rp.epoch and step > rp.step:
            rp.strides.append(step - rp.step)
            rp.step_seconds.append(max(0.0, now - rp.time) / (step - rp.step))
        rp.step, rp.total, rp.epoch, rp.time, rp.path, rp.line = step, total, epoch, now, path, line
        return True

    @property
    def stall_open(self) -> bool:
        """Whether a stall episode is open (reported, and some stalled rank has not moved
        since): :meth:`check` closes it once no rank is past the threshold."""
        return self._stall_open

    def reset(self) -> None:
        """Forget everything (a new run started in the watched file)."""
        self.ranks.clear()
        self._stall_open = False
        self._stall_all_told = False
        self._stragglers.clear()

    def threshold(self) -> float:
        """The stall threshold in seconds in force now."""
        if self.explicit_stall is not None:
            return self.explicit_stall
        medians = [m for m in (rp.median_interval() for rp in self.ranks.values()) if m is not None]
        return max(MIN_DEFAULT_STALL, STALL_INTERVALS * max(medians, default=0.0))

    def snapshot(self) -> list[dict[str, Any]]:
        """Per-rank progress, by rank (``None`` last)."""
        return [self.ranks[r].to_dict() for r in sorted(self.ranks, key=_rank_key)]

    def check(self, now: float) -> list[Verdict]:
        """The stall and straggler verdicts that are new at time ``now`` (s)."""
        out: list[Verdict] = []
        if not self.ranks:
            return out
        limit = self.threshold()
        stalled = [r for r, rp in self.ranks.items() if now - rp.time > limit and not _finished(rp)]
        everyone = bool(stalled) and len(stalled) == len(self.ranks)
        if not stalled:
            self._stall_open = False
        elif self._stall_open and everyone and not self._stall_all_told:
            # the episode named some ranks; the others have stopped since: say so, or "no
            # progress on rank 2" reads as if the other ranks still ran
            self._stall_all_told = True
            seconds = min(now - rp.time for rp in self.ranks.values())
            head = f"no progress on any rank for {seconds:.0f} s now: every rank has stopped"
            out.append(self._stall(head, stalled, seconds, limit, follow_up=True))
        elif not self._stall_open:
            self._stall_open = True
            self._stall_all_told = everyone
            suspect, why = self._suspect()
            ages = {r: now - self.ranks[r].time for r in stalled}
            seconds = ages[suspect] if suspect in ages else max(ages.values())
            # A job whose lines name no rank (one process, or ranks that do not tag their
            # lines) has no ranks to speak of: "on any rank" would claim ranks it never showed.
            where = (
                ""
                if set(self.ranks) == {None}
                else f" on {'any rank' if everyone else _ranks_text(stalled)}"
            )
            head = f"no progress{where} for {seconds:.0f} s (threshold {limit:.0f} s)"
            out.append(self._stall(head, stalled, seconds, limit))
        out.extend(self._check_stragglers(limit))
        return out

    def _stall(
        self,
        head: str,
        stalled: list[int | None],
        seconds: float,
        limit: float,
        follow_up: bool = False,
    ) -> Verdict:
        """A stall verdict: ``head``, then why the log points at its suspect (:meth:`_suspect`);
        ``stalled``: the ranks with no progress; ``seconds``: how long (s); ``limit``: the
        threshold (s); ``follow_up``: it adds to a stall already told (no second dump)."""
        suspect, why = self._suspect()
        return Verdict(
            "stall",
            suspect,
            f"{head}; {why}" if why else head,
            self.snapshot(),
            sorted(stalled, key=_rank_key),
            seconds,
            limit,
            follow_up=follow_up,
        )

    def _suspect(self) -> tuple[int | None, str]:
        """The rank the log points at during a stall, and why."""
        named = {r: rp for r, rp in self.ranks.items() if r is not None}
        if len(named) < 2:
            return None, ""
        keys = {r: (rp.epoch or 0, rp.step) for r, rp in named.items()}
        low = min(keys.values())
        lowest = [r for r, k in keys.items() if k == low]
        if len(lowest) == 1 and low < max(keys.values()):
            r = lowest[0]
            others = sorted({named[o].step for o in named if o != r})
            return r, (
                f"rank {r} is behind at step {named[r].step} while the other ranks reached "
                f"step {others[0] if len(others) == 1 else f'{others[0]}-{others[-1]}'}"
            )
        times = sorted((rp.time, r) for r, rp in named.items())
        (t0, r0), (t1, _) = times[0], times[1]
        medians = [m for m in (rp.median_interval() for rp in named.values()) if m is not None]
        margin = max(FIRST_STOP_MARGIN, 2 * (statistics.median(medians) if medians else 0.0))
        if t1 - t0 > margin:
            return (
                r0,
                f"rank {r0} stopped first: its last step ({named[r0].step}) came {t1 - t0:.1f} s before any other rank's",
            )
        return None, "every rank stopped at the same step"

    def _check_stragglers(self, limit: float) -> list[Verdict]:
        named = {r: rp for r, rp in self.ranks.items() if r is not None}
        out: list[Verdict] = []
        if len(named) < 2:
            return out
        lead = max(rp.step for rp in named.values())
        for r, rp in named.items():
            if r in self._stragglers:
                continue
            why = ""
            others = [
                o.median_step_seconds()
                for k, o in named.items()
                if k != r and len(o.step_seconds) >= MIN_INTERVALS
            ]
            mine = rp.median_step_seconds() if len(rp.step_seconds) >= MIN_INTERVALS else None
            if mine is not None and others:
                rest = statistics.median([m for m in others if m is not None])
                if rest > 0 and mine >= STRAGGLER_RATIO * rest and mine - rest > 0.05:
                    why = f"rank {r} takes {mine:.2f} s per step, the other ranks {rest:.2f} s (median of the last {len(rp.step_seconds)})"
            lag = (
                lead - rp.step
                if rp.epoch == max(o.epoch or 0 for o in named.values()) or rp.epoch is None
                else 0
            )
            # a rank printing every k-th step shows up to k - 1 steps behind while level; before
            # its second line its stride is unknown (a lone line is a stall's to judge)
            if rp.strides and lag >= STRAGGLER_LAG + rp.stride() - 1:
                rp.lag_checks += 1
                if rp.lag_checks >= 2 and not why:
                    why = f"rank {r} is {lag} steps behind the leading rank (step {rp.step} vs {lead})"
            else:
                rp.lag_checks = 0
            if why:
                self._stragglers.add(r)
                out.append(Verdict("straggler", r, why, self.snapshot(), [], 0.0, limit))
        return out


def _finished(rp: RankProgress) -> bool:
    """A rank whose bar reached its total (a finished loop is not a stall)."""
    return rp.total is not None and rp.step >= rp.total


def _rank_key(r: int | None) -> tuple[int, int]:
    return (1, 0) if r is None else (0, r)


def _ranks_text(ranks: list[int | None]) -> str:
    named = sorted(r for r in ranks if r is not None)
    if not named:
        return "the job"
    return f"rank {named[0]}" if len(named) == 1 else "ranks " + ",".join(map(str, named))
