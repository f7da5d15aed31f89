"""Two launches in one file (``tee -a``, a requeue, a retry loop writing to one ``.out``)
where the second prints no launch banner: the file is split where the second launch begins,
the launch that ended the file is diagnosed, and the first is named as another job only when
the log shows it is one (rootrank.runs.separate_run, other_env, time_jump; the scanner's cut
at a worker's ``[defaultN]:`` line after torchrun's failure summary).

Fixtures: tests/appended/ (real torchrun runs, see its README.md)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.runs import SectionFacts, other_env, python_env, time_jump

HERE = Path(__file__).resolve().parent / "appended"
KEYERROR = "torchrun-keyerror-rank1-utc.log"  # 64 lines
OTHER_VENV = "torchrun-size-mismatch-other-venv.log"  # 61 lines
GMT_MINUS8 = "torchrun-size-mismatch-gmt-minus8.log"  # 61 lines
TEE = "torchrun-size-mismatch-tee.log"  # 61 lines


def read(name: str, first: int = 1) -> str:
    """The fixture ``name`` from its 1-based line ``first`` (5: after the launch banner)."""
    return "".join((HERE / name).read_text(encoding="utf-8").splitlines(True)[first - 1 :])


def runs_note(d) -> str:
    return next((r for r in d.reasoning if r.startswith("The log holds")), "")


def test_fixture_lengths():
    lengths = {n: len(read(n).splitlines()) for n in (KEYERROR, OTHER_VENV, GMT_MINUS8, TEE)}
    assert lengths == {KEYERROR: 64, OTHER_VENV: 61, GMT_MINUS8: 61, TEE: 61}


def test_each_second_run_alone():
    for name in (OTHER_VENV, GMT_MINUS8, TEE):
        d = diagnose_text(read(name))
        assert d.root_cause is not None
        assert (d.root_cause.signature, d.initiating_rank) == ("gloo-size-mismatch", 0)


def test_a_run_from_another_python_environment_is_another_job():
    """The second run's frames come from another virtualenv's site-packages: a relaunch runs
    in the same environment, so the first run is another job (no restart of it), and the
    diagnosis is the second's alone."""
    d = diagnose_text(read(KEYERROR) + read(OTHER_VENV, 5))
    assert d.root_cause is not None
    assert (d.root_cause.signature, d.initiating_rank) == ("gloo-size-mismatch", 0)
    note = runs_note(d)
    assert "2 different runs" in note and "from line 65" in note
    assert "/work/main/.venv/lib/python3.11/site-packages" in " ".join(d.reasoning)
    assert d.attempts == 1


def test_a_run_timed_hours_before_the_first_is_still_the_one_diagnosed():
    """The second run's lines are timed 8 h before the first's last line (another time zone:
    within what two loggers of one job may show, so no claim of another job from the clock
    alone, runs.EARLIER_JOB_S); the second launch is still the one diagnosed."""
    d = diagnose_text(read(KEYERROR) + read(GMT_MINUS8, 5))
    assert d.root_cause is not None
    assert (d.root_cause.signature, d.initiating_rank) == ("gloo-size-mismatch", 0)
    assert d.attempts == 2 and "from line 65" in runs_note(d)


def test_a_worker_line_after_torchruns_summary_starts_the_next_launch():
    """torchrun prints its failure summary once every worker exited: a ``[default0]:`` worker
    line after it is a new launch's. Before: the cut came at the next traceback, the second
    run's gloo enforce lines stayed with the first, and the answer was elastic-child-failed."""
    d = diagnose_text(read(KEYERROR) + read(TEE, 5))
    assert d.root_cause is not None
    assert (d.root_cause.signature, d.initiating_rank) == ("gloo-size-mismatch", 0)
    assert "from line 65" in runs_note(d)  # the first line after the summary


def test_healthy_then_failing_diagnoses_the_failure():
    d = diagnose_text(read("tee-a-healthy-then-keyerror.log"))
    assert d.root_cause is not None
    assert (d.root_cause.failure_class, d.initiating_rank) == ("user-code-exception", 1)
    assert "2 different runs" in runs_note(d)


def test_failing_then_healthy_is_not_called_failed():
    d = diagnose_text(read("tee-a-keyerror-then-healthy.log"))
    assert d.root_cause is None
    assert d.initiating_rank is None
    assert d.attempts == 2


def test_python_env():
    assert python_env("/work/.venv/lib/python3.11/site-packages/torch/x.py") == (
        "/work/.venv/lib/python3.11/site-packages"
    )
    assert python_env("/usr/lib/python3/dist-packages/a/b.py") == "/usr/lib/python3/dist-packages"
    assert python_env("C:\\py\\Lib\\site-packages\\torch\\x.py") == "C:/py/Lib/site-packages"
    assert python_env("/home/u/train.py") is None


def test_other_env_needs_both_and_none_shared():
    a, b = SectionFacts(envs={"/a/site-packages"}), SectionFacts(envs={"/b/site-packages"})
    assert other_env(a, b) is not None
    assert other_env(a, SectionFacts()) is None
    assert other_env(a, SectionFacts(envs={"/a/site-packages", "/b/site-packages"})) is None


def test_time_jump():
    day = 86400.0
    s = 100 * day
    assert time_jump(s, 97 * day)[0] is True  # three days back: another job, appended
    assert time_jump(s, 100 * day - 8 * 3600) is None  # another time zone's logger
    assert time_jump(s, 100 * day - 600) is None  # clocks' skew, buffering
    assert time_jump(s, 100 * day + 3600) is None  # a long timeout's lines
    assert time_jump(s, 102 * day)[0] is False  # days later: a later launch
    late = 365.9 * day  # 31 December 21:36 (2000 is a leap year); then
    assert time_jump(late, 0.1 * day) is None  # 1 January 02:24: the year turning
