"""Run a triage on Dask: a local cluster of processes by default, or an existing
``dask.distributed`` scheduler (``--scheduler tcp://host:8786``).

The driver walks the archive lazily, sends jobs in small batches (:data:`BATCH_JOBS` jobs or
:data:`BATCH_BYTES` bytes of logs per task, so thousands of small logs do not each pay a task's
overhead), keeps at most a bounded number of batches between submission and output, and
hands each result to the caller in job order as soon as its predecessors are done. Results
are small (a record, plus the masked diagnosis when the output needs it), and the summary is
folded as they arrive, so the driver's memory does not grow with the archive.

The workers read the logs themselves: on a cluster, the archive must be at the same path on
every worker (a shared file system), and rootrank must be installed there.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rootrank.ingest import InputError
from rootrank.triage import discover
from rootrank.triage.cache import Cache
from rootrank.triage.discover import Job
from rootrank.triage.progress import Progress
from rootrank.triage.summary import Summary
from rootrank.triage.work import Options, diagnose_batch

#: A task holds at most this many jobs...
BATCH_JOBS = 16
#: ...or this many bytes of logs (a bigger job is a task of its own).
BATCH_BYTES = 16 << 20
#: Batches between submission and output, per worker (bounds the driver's memory).
WINDOW_PER_WORKER = 8


@dataclass
class RunStats:
    """What a run did: jobs and bytes done (``bytes``: on disk), ``total_jobs`` found,
    ``cached`` jobs taken from the cache, ``seconds`` of wall time once the workers were up
    (``startup_seconds`` before that: starting or connecting to the cluster), ``workers`` used,
    ``interrupted`` (Ctrl-C), and each worker's peak resident memory in bytes
    (``worker_peak_rss``, by worker address; empty when it could not be asked)."""

    jobs: int = 0
    bytes: int = 0
    total_jobs: int = 0
    total_bytes: int = 0
    cached: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    workers: int = 0
    interrupted: bool = False
    worker_peak_rss: dict[str, int] = field(default_factory=dict)


def _need_dask() -> Any:
    try:
        import distributed
    except ImportError as exc:
        from rootrank.extras import install_hint  # an error path only

        raise InputError(
            f"rootrank triage runs on Dask ({exc.name} is missing): {install_hint('fleet')}"
        ) from None
    return distributed


def peak_rss() -> int:
    """This process's peak resident memory in bytes (``getrusage``; psutil's peak working
    set on Windows)."""
    try:
        import resource
    except ImportError:  # Windows
        import psutil

        return int(getattr(psutil.Process().memory_info(), "peak_wset", 0))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import sys

    return int(peak if sys.platform == "darwin" else peak * 1024)


@contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler``, or to a new local cluster of
    ``workers`` single-threaded processes (all cores by default) listening on 127.0.0.1 only,
    with no dashboard. The local workers ignore Ctrl-C (the driver stops them cleanly).

    Dask's scheduler and workers always open an HTTP server (``distributed.node.ServerNode.
    start_http_server``; ``dashboard_address=None`` only means the default port, 8787, where
    a taken port gets a ``UserWarning`` on stderr and another port), so each is given
    127.0.0.1 and a port the system picks (``127.0.0.1:0``: no warning, nothing on another
    interface) and no HTTP routes (``distributed.{scheduler,worker}.http.routes``: every
    request gets 404), and ``dashboard=False`` (no Bokeh pages).

    Raises:
        InputError: Dask is not installed, or the scheduler cannot be reached.
    """
    distributed = _need_dask()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        try:
            yield client
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    previous = signal.getsignal(signal.SIGINT)
    try:  # workers spawned while SIGINT is ignored keep ignoring it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        previous = None
    try:
        import dask  # installed with distributed

        with dask.config.set(
            {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
        ):
            cluster = distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                worker_dashboard_address=None,
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.ERROR,
            )
        client = distributed.Client(cluster)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    try:
        yield client
    finally:
        with _quiet_shutdown():
            client.close()
            cluster.close()


#: The loggers that report a connection closed under them while a local cluster shuts down.
_SHUTDOWN_LOGGERS = ("distributed", "tornado", "asyncio")


@contextmanager
def _quiet_shutdown() -> Iterator[None]:
    """Silence Dask's own logging while the local cluster stops.

    After a Ctrl-C the driver cancels futures and closes the cluster at once; a worker's
    comm may then close under a pending message, and ``distributed`` logs that at ERROR with
    a "Stream is closed" traceback (seen once in about 270 interrupted triages). The user
    asked the run to stop, and the results already printed are complete, so shutdown noise
    is not shown. Every logger under those names is raised above CRITICAL (Dask's config
    gives some children, such as ``distributed.client``, a level of their own), and each
    level is restored afterwards.
    """
    names = [
        name
        for name in list(logging.Logger.manager.loggerDict)
        if name.split(".")[0] in _SHUTDOWN_LOGGERS
    ]
    loggers = [logging.getLogger(name) for name in {*_SHUTDOWN_LOGGERS, *names}]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _batches(jobs: Iterator[Job]) -> Iterator[list[Job]]:
    batch: list[Job] = []
    size = 0
    for job in jobs:
        if batch and (len(batch) >= BATCH_JOBS or size + job.bytes > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(job)
        size += job.bytes
    if batch:
        yield batch


def _failed(batch: list[Job], why: str, options: Options) -> list[dict[str, Any]]:
    from rootrank.triage.work import job_head, record

    out = []
    for job in batch:
        masker = options.new_masker()
        job_id = masker.text(job.id)
        error = masker.text(why)
        out.append(
            {
                "job": job_head(job, masker),
                "diagnosis": None,
                "error": error,
                "record": record(job, job_id, None, error, 0.0),
                "hashes": None,
            }
        )
    return out


def triage(
    paths: list[str],
    options: Options,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    since: float | None = None,
    cache: Cache | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    progress: Progress | bool = True,
    notes: list[str] | None = None,
) -> tuple[Summary, RunStats]:
    """Diagnose every job under ``paths`` and fold the summary.

    ``on_result`` gets each job's result (:func:`rootrank.triage.work.diagnose_job`) in job
    order. Ctrl-C stops the run: the jobs done so far are in the summary (and were given to
    ``on_result``), and ``RunStats.interrupted`` is set. ``progress=True`` reports on stderr.

    Raises:
        InputError: a path is missing, Dask is missing, or the scheduler cannot be reached.
    """
    if notes is None:
        notes = []
    total_jobs, total_bytes = discover.count(paths, since=since)  # raises on a missing path
    summary = Summary()
    stats = RunStats(total_jobs=total_jobs, total_bytes=total_bytes)
    if total_jobs == 0:
        if since is None:
            raise InputError(
                f"{', '.join(paths)}: no log files (*.log, *.out, *.err, *.txt, error.json, compressed or not)"
            )
        return summary, stats  # a nightly run with nothing new
    bar: Progress | None
    if progress is True:
        bar = Progress(total_jobs, total_bytes)
    else:
        bar = progress or None
    start = time.monotonic()
    pending: dict[int, dict[str, Any]] = {}
    next_index = 0

    def deliver(result: dict[str, Any], cached: bool) -> None:
        nonlocal next_index
        pending[result["job"]["index"]] = result
        while next_index in pending:
            r = pending.pop(next_index)
            next_index += 1
            emit(r)
        if cached:
            stats.cached += 1
        if bar:
            bar.update(1, result["job"]["bytes"], 1 if cached else 0)

    def emit(r: dict[str, Any]) -> None:
        summary.add(r["record"])
        stats.jobs += 1
        stats.bytes += r["job"]["bytes"]
        if on_result:
            on_result(r)

    distributed = _need_dask()
    with dask_client(scheduler, workers) as client:
        stats.startup_seconds = time.monotonic() - start
        start = time.monotonic()
        if bar:
            bar.begin()  # the rate counts from here, as stats.seconds does
        stats.workers = len(client.scheduler_info().get("workers", {})) or (workers or 1)
        window = max(4, WINDOW_PER_WORKER * stats.workers)
        ac = distributed.as_completed(loop=client.loop)
        batches: dict[str, list[Job]] = {}
        in_window = 0
        jobs = discover.discover(paths, since=since, notes=notes)
        stream = _batches(_uncached(jobs, cache, lambda r: deliver(r, True)) if cache else jobs)
        try:
            exhausted = False
            with _ctrl_c() as stop:
                while True:
                    if stop():
                        raise KeyboardInterrupt
                    while not exhausted and in_window < window:
                        batch = next(stream, None)
                        if batch is None:
                            exhausted = True
                            break
                        fut = client.submit(diagnose_batch, batch, options, pure=False)
                        batches[fut.key] = batch
                        ac.add(fut)
                        in_window += 1
                    if not batches:
                        break
                    if not ac.has_ready():  # wait in short steps, so Ctrl-C is seen between results
                        time.sleep(0.02)
                        continue
                    fut = next(ac)
                    batch = batches.pop(fut.key)
                    in_window -= 1
                    try:
                        results = fut.result()
                    except Exception as exc:  # noqa: BLE001 - the worker died (killed, out of memory)
                        results = _failed(
                            batch, f"the worker was lost ({type(exc).__name__}: {exc})", options
                        )
                    fut.release()
                    for job, r in zip(batch, results, strict=True):
                        if cache:
                            cache.store(job, r)
                        r.pop("hashes", None)
                        deliver(r, False)
        except KeyboardInterrupt:
            stats.interrupted = True
            for f in list(ac.futures):
                f.cancel()
            # Completed jobs waiting for an earlier one are still reported.
            for index in sorted(pending):
                emit(pending.pop(index))
        if not stats.interrupted:
            try:
                stats.worker_peak_rss = {k: int(v) for k, v in client.run(peak_rss).items()}
            except Exception:  # noqa: BLE001 - a worker that left; the figures are a report
                stats.worker_peak_rss = {}
    stats.seconds = time.monotonic() - start
    if bar:
        bar.finish(elapsed=stats.seconds)
    return summary, stats


@contextmanager
def _ctrl_c() -> Iterator[Callable[[], bool]]:
    """While inside, the first Ctrl-C (SIGINT) only asks the run to stop: the loop sees it
    between two results (so no output line is cut in half) and stops cleanly; a second one
    interrupts at once. Outside the main thread, Ctrl-C is left as it is."""
    asked: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield lambda: False
        return
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)


def _uncached(
    jobs: Iterator[Job], cache: Cache, hit: Callable[[dict[str, Any]], None]
) -> Iterator[Job]:
    for job in jobs:
        result = cache.lookup(job)
        if result is None:
            yield job
        else:
            hit(result)
