"""What a worker does with one job: diagnose it as ``rootrank diagnose`` would, masked there.

Runs inside a Dask worker process (or any process): it imports no Dask. What it returns
already went through the job's masker, so no raw secret, user name or (unless asked) host
name leaves the worker: the full ``rootrank.diagnosis/1`` object when the output needs it
(``--format json``), and always a small :func:`record` (a few hundred bytes) that the summary
is folded from.
"""

from __future__ import annotations

import calendar
import datetime
import hashlib
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rootrank import lazy_regex
from rootrank.engine import default_library, diagnose_paths, readable_paths
from rootrank.ingest import InputError, strip_compression
from rootrank.mask import Masker
from rootrank.mask_walk import mask_result
from rootrank.model import Diagnosis
from rootrank.signatures import Library, load_library
from rootrank.triage.discover import Job
from rootrank.triage.hosts import ArchiveMasker, RawHostMasker

#: A log time from this on (2000-01-01 UTC, s since the epoch) already has its year.
DATED_AFTER = 946_684_800.0
#: An evidence text kept in a record is cut to this many characters.
MAX_TEXT = 300


@dataclass(frozen=True)
class Options:
    """How every job of a run is diagnosed (sent once per task; small and picklable).

    Attributes:
        mask: ``"archive"`` (archive-wide host pseudonyms), ``"keep-hosts"`` (hosts raw, the
            rest masked) or ``"off"`` (``--no-mask``: everything raw).
        key: the host key for ``"archive"`` (:func:`rootrank.triage.hosts.new_key`).
        signatures: extra signature folders (``--signatures``), read by each worker.
        full: return the full diagnosis (JSON output) or only the record.
        hashes: return each file's content hash (for ``--cache``).
    """

    mask: str = "archive"
    key: bytes = b""
    signatures: tuple[str, ...] = ()
    full: bool = True
    hashes: bool = False

    def new_masker(self) -> Masker:
        """A fresh masker for one job (a new one per job, as ``rootrank diagnose`` does)."""
        if self.mask == "keep-hosts":
            return RawHostMasker()
        if self.mask == "off":
            return Masker(enabled=False)
        return ArchiveMasker(self.key)


@lru_cache(maxsize=4)
def _library(folders: tuple[str, ...]) -> Library:
    if not folders:
        return default_library()
    return load_library(list(folders), strict=False)


def content_hash(path: str) -> str:
    """BLAKE2b (16-byte digest, hex) of a file's bytes as stored (compressed if it is).

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def diagnose_job(job: Job, options: Options) -> dict[str, Any]:
    """Diagnose one job; never raises for a bad job (its error is in the result).

    Returns ``{"job": {"index", "id", "kind", "bytes", "files"}, "diagnosis": dict | None,
    "error": str | None, "record": dict, "hashes": [str] | None}`` where ``diagnosis`` is
    ``rootrank.diagnosis/1`` exactly as ``rootrank diagnose PATHS --format json`` prints it
    (with archive-wide host pseudonyms instead of ``host-1``...), ``None`` when not asked for
    or when the job could not be read (``error`` says why, masked). A file of the job that
    cannot be read (binary, a broken archive) is skipped as ``rootrank diagnose`` skips it:
    ``not read: <why>`` in the diagnosis's ``warnings`` and the record's ``not_read``; the
    job is an error only when none of its paths can be read. A compressed file cut short
    (``.gz`` ending before its end marker) is read up to the cut, and the diagnosis's warning
    saying so is in ``not_read`` too (a file read in part).
    """
    start = time.perf_counter()
    masker = options.new_masker()
    job_id = masker.text(job.id)
    result: Diagnosis | None = None
    error = None
    unread: list[str] = []
    cut: list[str] = []
    try:
        # as `rootrank diagnose PATHS`: a path that cannot be read (a binary file beside the
        # logs) is named in the warnings and the others are diagnosed; none readable: an error
        paths, unread = readable_paths(job.paths)
        if not paths:
            raise InputError(
                unread[0] + (f" (and {len(unread) - 1} more)" if len(unread) > 1 else "")
            )
        result = diagnose_paths(
            paths,
            library=_library(options.signatures),
            mask=options.mask != "off",
            new_masker=options.new_masker,
            on_warning=cut.append,  # a compressed file cut short, a broken error.json: read in part
        )
        result.warnings.extend(f"not read: {masker.text(p)}" for p in unread)
    except InputError as exc:
        error = masker.text(str(exc))
    except MemoryError:
        error = "out of memory while reading this job"
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the archive; the job says so
        error = masker.text(f"internal error: {type(exc).__name__}: {exc}")
    hashes = None
    if options.hashes:
        try:
            hashes = [content_hash(p) for p, _, _ in job.files]
        except OSError:
            hashes = None
    seconds = time.perf_counter() - start
    rec = record(job, job_id, result, error, seconds)
    if result is not None:
        rec["not_read"] = [masker.text(p) for p in [*unread, *cut]]
    head = job_head(job, masker)
    return {
        "job": head,
        "diagnosis": result.to_dict() if options.full and result is not None else None,
        "error": error,
        "record": rec,
        "hashes": hashes,
    }


def job_head(job: Job, masker: Masker) -> dict[str, Any]:
    """The ``"job"`` object of the JSON Lines output: ``index`` (0-based, archive order),
    ``id``, ``kind``, ``paths`` (what ``rootrank diagnose`` is given to reproduce this job),
    ``bytes`` (on disk) and ``files``; every text masked by ``masker``
    (:func:`rootrank.mask_walk.mask_result`)."""
    head = {
        "index": job.index,
        "id": job.id,
        "kind": job.kind,
        "paths": list(job.paths),
        "bytes": job.bytes,
        "files": len(job.files),
    }
    return mask_result(head, masker)


def diagnose_batch(jobs: list[Job], options: Options) -> list[dict[str, Any]]:
    """:func:`diagnose_job` for each job of a batch (one Dask task), in order."""
    return [diagnose_job(job, options) for job in jobs]


#: A date printed with its year at a time of day (ISO ``2020-01-16T23:05:49``, torchelastic's
#: ``2023-04-18_10:00:00``, Python logging's ``2023-04-18 10:00:00,123``, ``2023/04/18``).
_DATED = lazy_regex.compile(r"\b((?:19|20)\d\d)[-/](\d\d)[-/](\d\d)[T _]\d\d:\d\d")
#: Bytes read from the head and from the tail of a job's file for its printed years.
YEAR_SCAN_BYTES = 65536
#: At most this many of a job's files are read for printed years.
YEAR_SCAN_FILES = 4


def printed_years(paths: list[str]) -> dict[tuple[int, int], int]:
    """The year each ``(month, day)`` is printed with in the first and last
    :data:`YEAR_SCAN_BYTES` of the job's uncompressed files (the first
    :data:`YEAR_SCAN_FILES`), the latest line's winning; ``{}`` when none prints a year or the
    files cannot be read (new-user trial r20 finding 11: a 2020 job was dated 2026, the year
    of its copy's mtime)."""
    years: dict[tuple[int, int], int] = {}
    for path in paths[:YEAR_SCAN_FILES]:
        if strip_compression(path) != path:
            continue
        try:
            with open(path, "rb") as f:
                head = f.read(YEAR_SCAN_BYTES)
                f.seek(0, 2)
                size = f.tell()
                tail = b""
                if size > YEAR_SCAN_BYTES:
                    f.seek(max(YEAR_SCAN_BYTES, size - YEAR_SCAN_BYTES))
                    tail = f.read(YEAR_SCAN_BYTES)
        except OSError:
            continue
        for m in _DATED.finditer((head + b"\n" + tail).decode("latin-1")):
            years[(int(m.group(2)), int(m.group(3)))] = int(m.group(1))
    return years


def with_year(t: float, mtime: float, years: dict[tuple[int, int], int] | None = None) -> float:
    """A log time with its year: the engine keeps a log's month, day and time but not its
    year (glog's ``E1129 17:40:34`` has none), as seconds since 2000-01-01 within the year 2000
    (:func:`rootrank.ranks.parse_time`); the year is the one the log prints with that month and
    day (``years``: :func:`printed_years`), else the one that puts the time at or before the
    file's last write (``mtime``, s since the epoch; a day of slack for clocks)."""
    if t >= DATED_AFTER:
        return t
    when = (datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=t)).timetuple()
    year = time.gmtime(mtime).tm_year
    printed = (years or {}).get((when.tm_mon, when.tm_mday))
    if printed is None and years:
        printed = _nearest_year(when.tm_mon, when.tm_mday, years)
    if printed is not None:
        try:
            return (
                calendar.timegm(
                    (printed, when.tm_mon, when.tm_mday, when.tm_hour, when.tm_min, when.tm_sec)
                )
                + t % 1
            )
        except (ValueError, OverflowError):
            pass
    for y in (year, year - 1):
        try:
            cand = (
                calendar.timegm(
                    (y, when.tm_mon, when.tm_mday, when.tm_hour, when.tm_min, when.tm_sec)
                )
                + t % 1
            )
        except (ValueError, OverflowError):
            continue
        if cand <= mtime + 86400:
            return cand
    return t


#: Days apart within which a date the log prints with its year gives its year to an undated
#: line's month and day (a job's lines span hours to days, a long one weeks).
NEAR_DAYS = 45


def _nearest_year(month: int, day: int, years: dict[tuple[int, int], int]) -> int | None:
    """The year of ``month``/``day`` from the nearest date the log prints with a year
    (``years``, :func:`printed_years`) at most :data:`NEAR_DAYS` away, across the turn of a
    year (a job printed ``2024-12-31`` then an undated ``E0101``: 2025); ``None`` when none is
    that near. (Why: a long log prints its year on some lines only, often outside the bytes
    read: new-user trial r21 finding 7, a 2025 job dated 2026 from its copy's mtime.)"""
    target = datetime.date(2000, month, day)
    best: tuple[int, int] | None = None
    for (m, d), y in years.items():
        try:
            seen = datetime.date(2000, m, d)
        except ValueError:
            continue
        # the undated day in the same year as the dated one, the year after, the year before
        for shift, year in ((0, y), (366, y + 1), (-366, y - 1)):
            gap = (target - seen).days + shift
            if abs(gap) <= NEAR_DAYS and (best is None or abs(gap) < best[0]):
                best = (abs(gap), year)
    return best[1] if best else None


def _printed_day(years: dict[tuple[int, int], int]) -> float | None:
    """The latest date the log prints with its year (``years``, :func:`printed_years`), as
    seconds since the epoch at 00:00 UTC; ``None`` when it prints none."""
    days = []
    for (m, d), y in years.items():
        try:
            days.append(calendar.timegm((y, m, d, 0, 0, 0)))
        except (ValueError, OverflowError):
            continue
    return float(max(days)) if days else None


def _log_time(diag: Diagnosis, mtime: float, paths: list[str]) -> float | None:
    """When the job failed, from its log (its files ``paths``): the root cause's time, else the
    earliest finding's, with the year the log prints (:func:`with_year`); when no finding is
    timed, the latest day the log prints with its year (its lines' dates come before the file's
    mtime, which a copy resets: new-user trial r21 finding 7); ``None`` when the log gives at
    most a time of day (under a day after the epoch) and prints no dated line."""
    rc = diag.root_cause
    times = [rc.time] if rc is not None and rc.time is not None else [f.time for f in diag.findings]
    dated = [float(t) for t in times if t is not None and t >= 86400]
    years = printed_years(paths)
    if dated:
        return with_year(min(dated), mtime, years)
    return _printed_day(years)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def record(
    job: Job, job_id: str, diag: Diagnosis | None, error: str | None, seconds: float
) -> dict[str, Any]:
    """The small summary of one job the archive summary is folded from (already masked).

    Keys: ``index``, ``id``, ``bytes``, ``seconds`` (wall time of the diagnosis, s),
    ``status`` (``"failed"`` a root cause, ``"unclassified"`` only an exception no signature
    knows, ``"healthy"`` neither, ``"error"`` unreadable), ``failure_class``, ``signature``,
    ``title``, ``category``, ``rank``, ``host`` (the initiating host), ``hosts`` (every host the
    job ran on), ``evidence`` (the root cause's first line: ``{"path", "line", "text"}``),
    ``exception`` (the unclassified exception: ``{"path", "line", "text"}``), ``time`` (s since
    the epoch) and ``time_source`` (``"log"``: the first dated failure line; ``"mtime"``: the
    newest file's modification time, when the log carries no date), ``error``, ``not_read``
    (why each file of a diagnosed job was skipped, ``"<path>: binary data, not a text log"``,
    or read in part, ``"<path>: the gzip data ends early ..."``; set by :func:`diagnose_job`).
    """
    rec: dict[str, Any] = {
        "index": job.index,
        "id": job_id,
        "bytes": job.bytes,
        "seconds": round(seconds, 6),
        "status": "error",
        "failure_class": None,
        "signature": None,
        "title": None,
        "category": None,
        "rank": None,
        "host": None,
        "hosts": [],
        "evidence": None,
        "exception": None,
        "time": job.mtime,
        "time_source": "mtime",
        "error": error,
        "not_read": [],
    }
    if diag is None:
        return rec
    t = _log_time(diag, job.mtime, [f[0] for f in job.files])
    if t is not None:
        rec["time"], rec["time_source"] = t, "log"
    hosts = {h for h in diag.ranks.hosts.values() if h}
    if diag.initiating_host:
        hosts.add(diag.initiating_host)
    rec["hosts"] = sorted(hosts)
    rc = diag.root_cause
    if rc is not None:
        ev = rc.evidence[0] if rc.evidence else None
        rec.update(
            status="failed",
            failure_class=rc.failure_class,
            signature=rc.signature,
            title=rc.title,
            category=rc.category,
            rank=diag.initiating_rank,
            host=diag.initiating_host,
            evidence={"path": ev.path, "line": ev.line, "text": _cut(ev.text)} if ev else None,
        )
        return rec
    unc = diag.unclassified
    if unc is not None:
        first = unc.evidence[0] if unc.evidence else None
        rec.update(
            status="unclassified",
            rank=unc.rank,
            host=unc.host or (diag.ranks.hosts.get(unc.rank) if unc.rank is not None else None),
            exception={
                "path": first.path if first else None,
                "line": first.line if first else None,
                "text": _cut(first.text if first else unc.title or ""),
            },
        )
        return rec
    rec["status"] = "healthy"
    return rec
