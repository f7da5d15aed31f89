"""The new-user trial of round 17 (r17c), re-run for real: its four findings.

``tests/data/trial_r17c/`` holds the real runs (torch 2.13 CPU, gloo, torchrun; ``run.sh``
gives each command, ``trial.py`` the job, ``prefetcher.cpp`` its native prefetcher):

- ``snapshot-enospc-3.log`` (``rootrank run --log``, 3 ranks, steps printed ``rank R: step
  N``): rank 1 saves a snapshot in a thread at step 3 to a full device (``/dev/full``: ENOSPC),
  ``threading.excepthook`` prints the thread's traceback with no rank, every rank trains to
  step 12 and the command exits 0. ``rootrank run`` said the exit code hid a failure
  (disk-full): an exception on no rank in a multi-rank log could never be shown survived.
- ``keyerror-abort-tee-3.log`` (``torchrun --tee 3``, the worker run through ``bash -c``):
  rank 2's batch lacks ``labels`` (KeyError at trial.py:79), and at exit the native
  prefetcher's thread throws: ``terminate called after throwing an instance of
  'std::runtime_error'`` and bash's ``Aborted (core dumped)`` follow on rank 2. The trial's
  report (the headline named the abort) was not reproduced in this or three other real
  shapes (no wrapper, ``rootrank run`` with a terminal, the KeyError before
  ``init_process_group``); the test holds what the engine says.
- ``snapshot-slow-3.log`` (the output ``rootrank watch --stall 4 --format json -`` read): the
  snapshot thread dies at step 3, rank 1 sleeps 8 s at step 4, the run ends with exit 0. The
  failure and the stall alarms raised while it ran stood to the end: nothing withdrew them.
- ``prefetch-thread-2.log`` (``rootrank run --log``, 2 ranks, steps with no rank): rank 1's
  prefetch thread dies on a bad sample (trial.py:47), rank 1 blocks on its queue, rank 0
  times out in all_reduce and the agent stops rank 1. The report named rank 0 (the
  timeout's): with one rank reporting the timeout, the quiet rank was not trusted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from rootrank.engine import diagnose_paths

DATA = Path(__file__).parent / "data" / "trial_r17c"


# -- 1. a thread the run survived is no failure, whatever the exit code ---------------------


def test_a_dead_thread_of_a_run_that_trained_to_its_end_is_survived() -> None:
    d = diagnose_paths([str(DATA / "snapshot-enospc-3.log")], mask=False)
    assert d.root_cause is None
    assert d.unclassified is None
    survived = [r for r in d.reasoning if "[error_survived]" in r]
    assert survived, d.reasoning
    assert "snapshot-enospc-3.log:16) was survived" in survived[0]
    assert "every rank of 0, 1, 2 printed a later step" in survived[0]


def test_the_same_exception_is_no_survivor_when_a_rank_stopped_after_it() -> None:
    # the hang of finding 4: the thread's rank blocked, so not every rank went on
    d = diagnose_paths([str(DATA / "prefetch-thread-2.log")], mask=False)
    assert d.root_cause is not None
    assert not any("[error_survived]" in r for r in d.reasoning)


def _replay(tmp_path: Path, name: str, pause_after: int | None = None, pause: float = 0.0) -> Path:
    """A job that prints the real run's output (to stdout) and exits 0; ``pause`` seconds
    after line ``pause_after`` (1-based), where the real run paused."""
    job = tmp_path / "replay.py"
    job.write_text(
        "import sys, time\n"
        f"lines = open({str(DATA / name)!r}, 'rb').read().split(b'\\n')\n"
        "for i, line in enumerate(lines, 1):\n"
        "    sys.stdout.buffer.write(line + b'\\n'); sys.stdout.flush()\n"
        f"    time.sleep({pause} if i == {pause_after or 0} else 0.04)\n",
        encoding="utf-8",
    )
    return job


def _rootrank(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "rootrank", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def test_rootrank_run_says_nothing_of_a_hidden_failure_when_the_thread_was_survived(
    tmp_path: Path,
) -> None:
    job = _replay(tmp_path, "snapshot-enospc-3.log")
    proc = _rootrank("run", "--", sys.executable, str(job))
    assert proc.returncode == 0
    err = proc.stderr.decode()
    assert "exit code hid" not in err
    assert "Root cause" not in err


# -- 2. a Python exception, then the C++ abort of the same rank ------------------------------


def test_the_keyerror_is_the_root_and_the_abort_after_it_is_not() -> None:
    d = diagnose_paths([str(DATA / "keyerror-abort-tee-3.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class, rc.rank) == (
        "user-code-exception",
        "user-code-exception",
        2,
    )
    assert rc.evidence[0].line == 16 and "KeyError: 'labels'" in rc.evidence[0].text
    assert rc.fix.steps[0].startswith("trial.py:79 (in main), where rank 2 raised KeyError")
    assert d.initiator.rank == 2


# -- 3. alarms raised while the job ran are withdrawn when it ends healthy -------------------

# snapshot-slow-3.log: line 29 is the thread's last traceback line; the real run then paused
# 8 s (rank 1's sleep at step 4) before the step-4 lines
_PAUSE_AFTER = 29


def _events(out: bytes) -> list[dict]:
    return [json.loads(x) for x in out.decode().splitlines() if x.startswith("{")]


def _check_withdrawn(evs: list[dict], exit_code: int | None) -> None:
    kinds = [e["event"] for e in evs]
    assert "stall" in kinds and "failure" in kinds, kinds
    failure = next(e for e in evs if e["event"] == "failure")
    assert failure["final"] is False
    assert failure["diagnosis"]["root_cause"]["failure_class"] == "disk-full"
    withdrawn = {e["alarm"]: e for e in evs if e["event"] == "withdrawn"}
    assert withdrawn["stall"]["why"].startswith("every stalled rank moved again")
    assert "[error_survived]" in withdrawn["failure"]["why"]
    final = evs[-2] if exit_code is not None else evs[-1]
    assert final["event"] == "healthy" and final["final"] is True
    assert final["exit_code"] == exit_code
    assert final["diagnosis"]["root_cause"] is None
    alarms = [a["alarm"] for a in final["withdrawn"]]
    assert "stall" in alarms and "failure" in alarms
    assert all(a["why"] for a in final["withdrawn"])
    assert not any(e["event"] == "failure" and e["final"] for e in evs)
    if exit_code is not None:
        assert (evs[-1]["event"], evs[-1]["code"]) == ("exit", exit_code)


def test_rootrank_run_withdraws_its_alarms_when_the_run_ends_healthy(tmp_path: Path) -> None:
    job = _replay(tmp_path, "snapshot-slow-3.log", _PAUSE_AFTER, 4.0)
    proc = _rootrank("run", "--format", "json", "--stall", "1", "--", sys.executable, str(job))
    assert proc.returncode == 0
    _check_withdrawn(_events(proc.stderr), exit_code=0)


def test_rootrank_run_says_so_in_text_too(tmp_path: Path) -> None:
    job = _replay(tmp_path, "snapshot-slow-3.log", _PAUSE_AFTER, 4.0)
    proc = _rootrank("run", "--stall", "1", "--", sys.executable, str(job))
    assert proc.returncode == 0
    err = proc.stderr.decode()
    assert "rootrank: failure in the log so far: The disk (or quota) filled up" in err
    assert "rootrank: stall:" in err
    assert "rootrank: stall alarm withdrawn" in err
    assert "rootrank: failure alarm withdrawn" in err
    tail = err[err.index("rootrank: the run finished healthy (exit code 0)") :]
    assert "was survived" in tail and "every stalled rank moved again" in tail


def test_rootrank_watch_withdraws_its_alarms_when_its_input_ends(tmp_path: Path) -> None:
    job = _replay(tmp_path, "snapshot-slow-3.log", _PAUSE_AFTER, 4.0)
    feed = subprocess.Popen([sys.executable, str(job)], stdout=subprocess.PIPE)
    assert feed.stdout is not None
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "watch", "--format", "json", "--stall", "1", "-"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        stdin=feed.stdout,
        capture_output=True,
        timeout=120,
    )
    feed.wait(10)
    assert proc.returncode == 0  # alarms were reported
    _check_withdrawn(_events(proc.stdout), exit_code=None)


# -- 4. a dead thread's rank, with one rank reporting the timeout ----------------------------


def test_the_quiet_rank_of_a_complete_failure_table_owns_the_dead_thread() -> None:
    d = diagnose_paths([str(DATA / "prefetch-thread-2.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("user-code-exception", "user-code-exception")
    assert rc.fix.variant is not None and rc.fix.variant.id == "thread-died"
    assert rc.evidence[0].line == 16
    assert rc.fix.steps[0].startswith(
        "trial.py:47 (in decode), where thread 'prefetch' of rank 1 raised ValueError"
    )
    assert d.initiator.rank == 1
    assert d.initiator.strategy == "thread_owner"
    assert "rank 1 is the one rank that did not report the collective timeout" in d.initiator.why
    assert "stopped by the agent's closing signal" in d.initiator.why
