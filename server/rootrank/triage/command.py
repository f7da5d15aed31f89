"""``rootrank triage``: the subcommand's arguments and what it prints (cli.py hooks it in).

Exit codes: 0 the report was written (whatever the jobs' outcomes), 2 usage or input error,
130 interrupted (the report of the jobs done so far is still written).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rootrank import re_code
from rootrank.ingest import InputError
from rootrank.writes import write_text

HELP = "diagnose every job of a log archive on Dask and rank the hosts that start failures"

_EPILOG = """\
what a job is: a torchrun --log-dir run folder (attempt_N inside), the slurm-<id>.out /
slurm-<id>-<task>.out files of one job id, the other log files of one folder, or a file named
on the command line. Compressed logs (.gz, .zst, .xz) are read.

examples:
  rootrank triage /archive/slurm-logs                      # text table
  rootrank triage /archive --format html > report.html     # offline report with charts
  rootrank triage /archive --format json | jq -c .summary  # JSON Lines: each job, then the summary
  rootrank triage /archive --since 2026-11-01 --cache ~/.cache/rootrank-triage
  rootrank triage /archive --scheduler tcp://10.0.0.5:8786 # an existing Dask cluster

Hosts get one pseudonym across the whole archive (a keyed hash; the key is random per run, or
kept in the --cache folder); --keep-hosts shows them raw with the rest still masked. Needs
.venv/bin/pip install '.[fleet]' in the rootrank clone (it is not on PyPI).
"""

_DATE = re_code.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?Z?$")


def since_date(text: str) -> float:
    """``--since``: ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM[:SS]`` in UTC, as seconds since the
    epoch (argparse type; raises ArgumentTypeError)."""
    m = _DATE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)"
        )
    import calendar  # on first use: every rootrank start builds this parser

    parts = [int(x) if x else 0 for x in m.groups()]
    try:
        return float(
            calendar.timegm((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, 0))
        )
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid date") from None


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if n < 1:
        raise argparse.ArgumentTypeError("--workers must be at least 1")
    return n


def add_parser(sub: Any) -> None:
    """Add ``triage`` to the CLI's subparsers."""
    t = sub.add_parser(
        "triage",
        help=HELP,
        description=HELP + ".",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("paths", nargs="+", metavar="PATH", help="archive folders or log files")
    t.add_argument("--format", "-f", choices=("text", "json", "markdown", "html"), default="text")
    masking = t.add_mutually_exclusive_group()
    masking.add_argument(
        "--no-mask", action="store_true", help="show raw text (secrets and hosts unmasked)"
    )
    masking.add_argument(
        "--keep-hosts", action="store_true", help="show host names raw; mask everything else"
    )
    t.add_argument(
        "--since",
        type=since_date,
        metavar="DATE",
        help="only jobs with a file modified since DATE (UTC)",
    )
    t.add_argument(
        "--cache", metavar="DIR", help="keep results in DIR and skip unchanged jobs next time"
    )
    t.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="an existing dask.distributed scheduler (tcp://host:8786)",
    )
    t.add_argument(
        "--workers", type=_workers, metavar="N", help="local worker processes (default: all cores)"
    )
    t.add_argument(
        "--signatures", action="append", default=[], metavar="DIR", help="an extra signature folder"
    )
    t.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace, library_check: Any) -> int:
    """Run ``rootrank triage`` (``library_check(folders)`` validates ``--signatures``)."""
    from rootrank.triage import render
    from rootrank.triage.cache import Cache
    from rootrank.triage.hosts import new_key
    from rootrank.triage.progress import format_rate, format_throughput
    from rootrank.triage.run import triage
    from rootrank.triage.work import Options

    if args.signatures:
        library_check(args.signatures)
    if args.scheduler and args.workers:
        raise InputError(
            "--workers is for the local cluster; an existing --scheduler has its own workers"
        )
    mask = "off" if args.no_mask else "keep-hosts" if args.keep_hosts else "archive"
    cache = Cache(args.cache, mask=mask, signatures=tuple(args.signatures)) if args.cache else None
    key = cache.host_key() if cache and mask == "archive" else new_key()
    options = Options(
        mask=mask,
        key=key,
        signatures=tuple(args.signatures),
        full=args.format == "json" or cache is not None,
        hashes=cache is not None,
    )
    out = sys.stdout

    def on_result(result: dict[str, Any]) -> None:
        if args.format == "json":
            # whole, and at once: a pipeline sees each job as soon as it is done, and a
            # Ctrl-C never cuts a line in half
            write_text(out, render.job_line(result) + "\n")

    notes: list[str] = []
    summary, stats = triage(
        args.paths,
        options,
        scheduler=args.scheduler,
        workers=args.workers,
        since=args.since,
        cache=cache,
        on_result=on_result,
        progress=not args.quiet,
        notes=notes,
    )
    s = summary.to_dict()
    s["interrupted"] = stats.interrupted
    s["jobs_found"] = stats.total_jobs
    s["host_names"] = "pseudonyms" if mask == "archive" else "names"
    if args.format == "json":
        out.write(render.summary_line(s) + "\n")
    elif args.format == "markdown":
        out.write(render.to_markdown(s))
    elif args.format == "html":
        out.write(render.to_html(s))
    else:
        out.write(render.to_text(s))
    out.flush()
    if args.since is not None:
        # the filter reads file times; the report's dates are the logs' own: say which is which
        day = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(args.since)).removesuffix(" 00:00:00")
        notes.append(
            f"--since {day} kept the jobs with a file modified then or later (file times, UTC);"
            " the dates in the report are the failures' dates in the logs, which can be earlier"
        )
    for note in notes:
        print(f"rootrank: note: {note}", file=sys.stderr)
    if not args.quiet:
        cached = f", {stats.cached} from the cache" if cache else ""
        print(
            f"rootrank: {stats.jobs:,} jobs in {stats.seconds:.1f} s ({format_rate(stats.jobs, stats.seconds)}, "
            f"{format_throughput(stats.bytes, stats.seconds)}) on {stats.workers} worker(s){cached}, "
            f"after {stats.startup_seconds:.1f} s starting the workers",
            file=sys.stderr,
        )
    if stats.interrupted:
        print(
            f"rootrank: interrupted: the report covers {stats.jobs:,} of {stats.total_jobs:,} jobs",
            file=sys.stderr,
        )
        return 130
    return 0
