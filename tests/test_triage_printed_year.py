"""Triage dates a job by the year its log prints, not the year of the file's last write (new-user
trial r20, finding 11: a job whose log says ``CANCELLED AT 2020-01-16T23:05:49``, copied in
2026 without its times, was listed as failing on 2026-01-16). The engine keeps a log time's
month, day and time only (rootrank.ranks.parse_time); rootrank.triage.work.printed_years finds
the year the log prints for that month and day; a log that prints none (glog's ``E0116``) keeps
the year of the mtime."""

from __future__ import annotations

import calendar
import os
from pathlib import Path

from rootrank.triage.work import printed_years, with_year

# 2000-01-16 23:05:49 as the engine keeps it: seconds since 2000-01-01 within the year 2000
T = calendar.timegm((2000, 1, 16, 23, 5, 49)) - calendar.timegm((2000, 1, 1, 0, 0, 0))
MTIME = calendar.timegm((2026, 3, 1, 0, 0, 0))


def test_the_year_the_log_prints_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "slurm-1.out"
    log.write_text(
        "srun: error: node1: task 0: Segmentation fault\n"
        "slurmstepd: error: *** STEP 1.0 ON node1 CANCELLED AT 2020-01-16T23:05:49 ***\n"
    )
    os.utime(log, (MTIME, MTIME))
    years = printed_years([str(log)])
    assert years == {(1, 16): 2020}
    assert with_year(T, MTIME, years) == calendar.timegm((2020, 1, 16, 23, 5, 49))


def test_a_log_without_a_year_takes_the_mtime_year(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("E0116 23:05:49.000000 12 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog ...\n")
    years = printed_years([str(log)])
    assert years == {}
    assert with_year(T, MTIME, years) == calendar.timegm((2026, 1, 16, 23, 5, 49))


def test_a_day_the_log_prints_no_year_for_takes_the_nearest_printed_date() -> None:
    """Trial r21 finding 7: a log printed ``2025-05-03`` near its start and the failure's
    ``E0504`` line had no year: the job is 2025's (not the mtime's 2026), and across the turn
    of a year a January line after a printed December date is the next year's."""
    may4 = calendar.timegm((2000, 5, 4, 13, 29, 28)) - calendar.timegm((2000, 1, 1, 0, 0, 0))
    assert with_year(may4, MTIME, {(5, 3): 2025}) == calendar.timegm((2025, 5, 4, 13, 29, 28))
    jan2 = calendar.timegm((2000, 1, 2, 1, 0, 0)) - calendar.timegm((2000, 1, 1, 0, 0, 0))
    assert with_year(jan2, MTIME, {(12, 30): 2024}) == calendar.timegm((2025, 1, 2, 1, 0, 0))
    # a printed date months away says nothing of this day's year: the mtime's
    assert with_year(T, MTIME, {(9, 1): 2020}) == calendar.timegm((2026, 1, 16, 23, 5, 49))


def test_a_job_whose_findings_carry_no_time_is_dated_by_its_printed_lines(tmp_path: Path) -> None:
    """Trial r21 finding 7: jobs whose findings have no timestamp took their copy's mtime,
    although their lines print ``[2023-08-01 01:04:13]``: the day is the latest one printed."""
    from rootrank.engine import diagnose_paths
    from rootrank.triage.work import _log_time

    log = tmp_path / "train.log"
    log.write_text(
        "[2023-08-01 01:04:13] INFO step 1 loss 2.0\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    x = batch['pixel_values']\n"
        "KeyError: 'pixel_values'\n"
    )
    os.utime(log, (MTIME, MTIME))
    diag = diagnose_paths([str(log)])
    assert diag.root_cause is not None and diag.root_cause.time is None
    assert _log_time(diag, MTIME, [str(log)]) == calendar.timegm((2023, 8, 1, 0, 0, 0))
