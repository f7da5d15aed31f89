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
