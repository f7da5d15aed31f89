"""A traceback a logging handler printed (issue #8, "no root cause on a healthy log"), on
fixtures of our own in Ray's forwarded-output format: a Ray actor that logs a per-sample error
with its traceback (``ERROR:<time>:Traceback ...`` on the header's line, or
``logger.exception``'s record line above a bare header) and goes on, while the driver's
iterations advance and nothing dies, is a handled error, not a root cause, even when the log
ends after the handler's last traceback (a log cut mid-run). The near miss logs the same error
and re-raises it: the driver's ``RayTaskError`` traceback reaches the top level, and the run
is a failure of the user's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.tracebacks import TracebackReader

HERE = Path(__file__).parent / "r25logged"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


@pytest.mark.parametrize(
    ("name", "last_error", "last_step"),
    [("ray-logged-handled.log", 38, 32), ("ray-logger-exception-handled.log", 39, 32)],
)
def test_a_ray_actors_logged_per_sample_errors_in_a_run_that_advances_are_no_root_cause(
    name, last_error, last_step
):
    # before: user-code-exception at the last logged KeyError (no step of the actor's own
    # followed it: the survived-error rule could not see it go on)
    d = _diag(name)
    assert d.root_cause is None
    assert d.initiating_rank is None
    # the earlier ones are the survived-error rule's (the untagged iterations advance past
    # them); the last, after the last iteration, is the same handler's again
    last = next(r for r in d.reasoning if "[logged_handled]" in r)
    assert f"{name}:{last_error}) was handled: the same logging handler printed the same" in last
    assert f"(to step 3, line {last_step})" in last


def test_a_logged_then_reraised_error_is_still_the_failure():
    d = _diag("ray-logged-reraised.near-miss.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "user-code-exception"
    assert rc.signature == "user-code-exception"
    assert rc.evidence[0].line == 31
    assert d.initiating_rank is None
    assert "[logged_handled]" not in " ".join(d.reasoning)


def _read(lines: list[tuple[str, str]]):
    reader = TracebackReader()
    out = []
    for number, (text, raw) in enumerate(lines, 1):
        exc = reader.feed(text, number, raw)
        if exc is not None:
            out.append(exc)
    return out


def test_the_reader_marks_a_handlers_traceback_as_logged():
    frame = ('  File "/srv/app/job.py", line 9, in run', '  File "/srv/app/job.py", line 9, in run')
    tail = [frame, ("    go()", "    go()"), ("OSError: disk gone", "OSError: disk gone")]
    # the record's level on the header's own line (the cleaning leaves the header unmatched,
    # the traceback starts at its first frame)
    inline = [("ERROR:12:00:01,5:Traceback (most recent call last):",) * 2, *tail]
    # logger.exception: the record, then a plain header
    record = [
        ("ERROR:app:could not run job 3",) * 2,
        ("Traceback (most recent call last):",) * 2,
        *tail,
    ]
    # sys.excepthook's: a plain header after an ordinary line
    plain = [("loading job 3",) * 2, ("Traceback (most recent call last):",) * 2, *tail]
    assert [e.logged for e in _read(inline)] == [True]
    assert [e.logged for e in _read(record)] == [True]
    assert [e.logged for e in _read(plain)] == [False]
