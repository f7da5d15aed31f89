"""The archive summary, folded from per-job records: a reduction whose size does not grow
with the number of jobs.

:class:`Summary` holds counters (per status, failure class, signature, host, day) and, for the
lists a reader reviews (unclassified jobs, unreadable jobs, a host's jobs and evidence), only
the first few by job order. ``add`` and ``merge`` commute, so partial summaries built in any
order (one per worker, or as results arrive) give the same :meth:`Summary.to_dict`: a run on a
cluster and a run on one machine print the same report.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rootrank import taxonomy
from rootrank.mask import KEEP_HOSTS

#: How many unclassified / unreadable jobs the summary lists (the first by job order; the
#: JSON Lines output has every job).
MAX_LISTED = 200
#: Per host: how many of its jobs and evidence lines are listed.
MAX_HOST_JOBS = 20
MAX_HOST_EVIDENCE = 5


def kind_of(failure_class: str | None) -> str:
    """The kind of a failure class (``signatures/taxonomy.json``: ``hardware``, ``network``,
    ``job-resources``, ``segfault``, ``software``...; ``software`` for an unknown class)."""
    return taxonomy.kind_of(failure_class)


def host_caused(failure_class: str | None) -> bool:
    """Whether a failure of this class is the doing of the host that initiated it: its kind
    is marked ``"host": true`` in the taxonomy (hardware, the network below the job, the
    host's OOM killer, its disk), not a user's OOM or exception that any host would have
    raised the same way."""
    return kind_of(failure_class) in taxonomy.host_kinds()


def day_of(t: float) -> str:
    """The UTC day ``YYYY-MM-DD`` of ``t`` (seconds since the epoch)."""
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def iso(t: float | None) -> str | None:
    """``t`` (seconds since the epoch) as ``YYYY-MM-DDTHH:MM:SSZ``, or ``None``."""
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class _First:
    """The ``k`` items with the smallest keys (job index), whatever order they come in."""

    k: int
    heap: list[tuple[int, int, Any]] = field(default_factory=list)  # (-key, tiebreak, item)
    seen: int = 0

    def add(self, key: int, item: Any) -> None:
        self.seen += 1
        entry = (-key, len(self.heap), item)
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, entry)
        elif -self.heap[0][0] > key:
            heapq.heapreplace(self.heap, entry)

    def merge(self, other: _First) -> None:
        seen = self.seen + other.seen
        for neg, _, item in other.heap:
            self.add(-neg, item)
        self.seen = seen

    def items(self) -> list[Any]:
        return [item for _, _, item in sorted(self.heap, key=lambda e: (-e[0], e[1]))]


@dataclass
class _Span:
    """How many jobs a group counts, and the first and last of their times (seconds, as the
    jobs give them; ``None`` until a job with a time is added)."""

    jobs: int = 0
    first: float | None = None
    last: float | None = None

    def add(self, t: float | None, n: int = 1) -> None:
        self.jobs += n
        if t is not None:
            self.first = t if self.first is None else min(self.first, t)
            self.last = t if self.last is None else max(self.last, t)

    def merge(self, other: _Span) -> None:
        self.add(other.first, other.jobs)
        if other.last is not None:
            self.add(other.last, 0)


@dataclass
class _Host:
    """What the summary gathers of one host: the jobs it initiated and ran in, their classes
    and kinds, their time span, and the first job ids and evidence lines."""

    jobs: int = 0  # jobs this host initiated
    host_caused: int = 0  # of those, jobs whose class is the host's doing (host_caused())
    ran_in: int = 0  # jobs that ran on it
    classes: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    span: _Span = field(default_factory=_Span)
    job_ids: _First = field(default_factory=lambda: _First(MAX_HOST_JOBS))
    evidence: _First = field(default_factory=lambda: _First(MAX_HOST_EVIDENCE))

    def merge(self, other: _Host) -> None:
        self.jobs += other.jobs
        self.host_caused += other.host_caused
        self.ran_in += other.ran_in
        self.classes.update(other.classes)
        self.kinds.update(other.kinds)
        self.span.merge(other.span)
        self.job_ids.merge(other.job_ids)
        self.evidence.merge(other.evidence)


@dataclass
class Summary:
    """Counters over the jobs added so far (see the module docstring)."""

    jobs: int = 0
    bytes: int = 0
    status: Counter[str] = field(default_factory=Counter)
    classes: dict[str, _Span] = field(default_factory=dict)
    signatures: dict[str, _Span] = field(default_factory=dict)
    signature_info: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (class, title)
    hosts: dict[str, _Host] = field(default_factory=dict)
    days: dict[str, Counter[str]] = field(default_factory=dict)
    undated: int = 0
    unclassified: _First = field(default_factory=lambda: _First(MAX_LISTED))
    errors: _First = field(default_factory=lambda: _First(MAX_LISTED))
    #: Files skipped (a binary file beside the logs) or read in part (a ``.gz`` cut short)
    #: in jobs that were diagnosed.
    not_read: _First = field(default_factory=lambda: _First(MAX_LISTED))
    #: Failed jobs whose diagnosis named no initiating host (not in the host table).
    no_host: int = 0
    #: Of :attr:`no_host`, the jobs whose diagnosis named a host that is no one machine
    #: (``localhost``: :func:`_counts`).
    local_host: int = 0
    #: The healthy jobs' ids (the first :data:`MAX_LISTED` by order in the archive).
    healthy: _First = field(default_factory=lambda: _First(MAX_LISTED))

    def add(self, rec: dict[str, Any]) -> None:
        """Fold one job's record (:func:`rootrank.triage.work.record`) in."""
        self.jobs += 1
        self.bytes += rec["bytes"]
        status = rec["status"]
        self.status[status] += 1
        t = rec["time"]
        day = self.days.setdefault(day_of(t), Counter())  # the log's date, else the file's
        day["jobs"] += 1
        day[status] += 1
        if rec["failure_class"]:
            day["class:" + rec["failure_class"]] += 1
        if rec["time_source"] != "log":
            self.undated += 1
        index, job = rec["index"], rec["id"]
        for why in rec.get("not_read") or []:
            self.not_read.add(index, {"job": job, "error": why})
        if status == "error":
            self.errors.add(index, {"job": job, "error": rec["error"]})
        elif status == "healthy":
            self.healthy.add(index, job)
        elif status == "unclassified":
            exc = rec["exception"] or {}
            self.unclassified.add(
                index, {"job": job, **exc, "host": rec["host"], "rank": rec["rank"]}
            )
        for h in rec["hosts"]:
            if _counts(h):
                self.hosts.setdefault(h, _Host()).ran_in += 1
        if status != "failed":
            return
        cls, sig = rec["failure_class"], rec["signature"]
        self.classes.setdefault(cls, _Span()).add(t)
        self.signatures.setdefault(sig, _Span()).add(t)
        self.signature_info.setdefault(sig, (cls, rec["title"] or sig))
        h = rec["host"]
        if not (h and _counts(h)):
            self.no_host += 1
            self.local_host += bool(h)
        if h and _counts(h):
            host = self.hosts.setdefault(h, _Host())
            if h not in rec["hosts"]:
                host.ran_in += 1
            host.jobs += 1
            host.host_caused += host_caused(cls)
            host.classes[cls] += 1
            host.kinds[kind_of(cls)] += 1
            host.span.add(t)
            host.job_ids.add(index, job)
            if rec["evidence"]:
                host.evidence.add(index, {"job": job, "failure_class": cls, **rec["evidence"]})

    def merge(self, other: Summary) -> None:
        """Fold another partial summary in (``a.merge(b)`` equals adding b's jobs to a)."""
        self.jobs += other.jobs
        self.bytes += other.bytes
        self.status.update(other.status)
        for mine, theirs in ((self.classes, other.classes), (self.signatures, other.signatures)):
            for k, span in theirs.items():
                mine.setdefault(k, _Span()).merge(span)
        for k, v in other.signature_info.items():
            self.signature_info.setdefault(k, v)
        for h, host in other.hosts.items():
            self.hosts.setdefault(h, _Host()).merge(host)
        for d, c in other.days.items():
            self.days.setdefault(d, Counter()).update(c)
        self.undated += other.undated
        self.unclassified.merge(other.unclassified)
        self.errors.merge(other.errors)
        self.not_read.merge(other.not_read)
        self.no_host += other.no_host
        self.local_host += other.local_host
        self.healthy.merge(other.healthy)

    def ranked_hosts(self) -> list[tuple[str, _Host]]:
        """Hosts that initiated at least one failure, worst first: most jobs failed with a
        class that is the host's doing (:func:`host_caused`), then most jobs initiated, then
        most distinct classes, then the fewest jobs run (a higher share), then by name."""
        rows = [(h, v) for h, v in self.hosts.items() if v.jobs]
        return sorted(
            rows,
            key=lambda hv: (
                -hv[1].host_caused,
                -hv[1].jobs,
                -len(hv[1].classes),
                hv[1].ran_in,
                hv[0],
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON summary (``{"summary": ...}`` in the JSON Lines output); shares are of all
        jobs, times are UTC ISO strings, ``hosts`` is ordered worst first."""
        n = max(self.jobs, 1)
        last_day = max(self.days) if self.days else None
        multi_day = len(self.days) > 1

        def span(s: _Span) -> dict[str, Any]:
            return {
                "jobs": s.jobs,
                "share": round(s.jobs / n, 4),
                "first_seen": iso(s.first),
                "last_seen": iso(s.last),
            }

        classes = [
            {"failure_class": c, "kind": kind_of(c), **span(s)}
            for c, s in sorted(self.classes.items(), key=lambda kv: (-kv[1].jobs, kv[0]))
        ]
        signatures = [
            {
                "signature": sig,
                "failure_class": self.signature_info[sig][0],
                "title": self.signature_info[sig][1],
                **span(s),
                "new": bool(multi_day and s.first is not None and day_of(s.first) == last_day),
            }
            for sig, s in sorted(self.signatures.items(), key=lambda kv: (-kv[1].jobs, kv[0]))
        ]
        hosts = [
            {
                "host": h,
                "jobs": v.jobs,
                "host_caused": v.host_caused,
                "classes": dict(sorted(v.classes.items(), key=lambda kv: (-kv[1], kv[0]))),
                "kinds": dict(sorted(v.kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
                "ran_in": v.ran_in,
                "first_seen": iso(v.span.first),
                "last_seen": iso(v.span.last),
                "job_ids": v.job_ids.items(),
                "evidence": v.evidence.items(),
            }
            for h, v in self.ranked_hosts()
        ]
        days = []
        for d in sorted(self.days):
            c = self.days[d]
            days.append(
                {
                    "day": d,
                    "jobs": c["jobs"],
                    "failed": c["failed"],
                    "unclassified": c["unclassified"],
                    "healthy": c["healthy"],
                    "error": c["error"],
                    "classes": {
                        k[6:]: v
                        for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
                        if k.startswith("class:")
                    },
                }
            )
        return {
            "jobs": self.jobs,
            "bytes": self.bytes,
            "failed": self.status["failed"],
            "healthy": self.status["healthy"],
            "unclassified": self.status["unclassified"],
            "errors": self.status["error"],
            "classes": classes,
            "signatures": signatures,
            "hosts": hosts,
            "hosts_seen": len(self.hosts),
            "failed_without_host": self.no_host,
            "failed_local_host": self.local_host,
            "healthy_jobs": self.healthy.items(),
            "days": days,
            "undated_jobs": self.undated,
            "unclassified_jobs": self.unclassified.items(),
            "error_jobs": self.errors.items(),
            "files_not_read": self.not_read.seen,
            "not_read_files": self.not_read.items(),
        }


def _counts(host: str) -> bool:
    """Whether a host name identifies a machine across jobs (``localhost`` does not)."""
    return host.strip().lower() not in KEEP_HOSTS
