"""A launcher-less parent's report of its children's exit codes names the rank (strategy
``child_exit_report``, :mod:`rootrank.analysis.child_exits`).

The logs in ``tests/data/child_exits/`` are real runs of ``train_procs.py`` beside them (torch
2.13 CPU, gloo, four ``multiprocessing`` Process objects named ``worker-0``..``worker-3``
started by hand, faulthandler on; the parent prints ``exit codes: {...}``), made with
``MODE=abort|all python train_procs.py PORT``:

- ``abort-4``: worker-1 calls ``os.abort()`` at iteration 3 (exit code -6, faulthandler's
  ``Fatal Python error: Aborted`` with no rank); the others lose their peer (exit code 1);
- ``all-4``: every worker raises the same ValueError at iteration 3 (all exit 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.analysis.child_exits import child_exit_ranks, initiating_child
from rootrank.engine import diagnose_paths
from rootrank.scan import ScanState

DATA = Path(__file__).parent / "data" / "child_exits"


def test_the_child_a_crash_signal_ended_is_the_initiating_rank() -> None:
    d = diagnose_paths([str(DATA / "abort-4.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "fatal-python-error-abort"
    assert d.initiator is not None
    assert d.initiator.rank == 1
    assert d.initiator.strategy == "child_exit_report"
    assert "worker-1 (rank 1) ended by signal 6" in d.initiator.why
    assert "worker-0: 1, worker-1: -6, worker-2: 1, worker-3: 1" in d.initiator.why


def test_every_child_failing_alike_names_no_rank() -> None:
    d = diagnose_paths([str(DATA / "all-4.log")], mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "user-code-exception"
    assert d.initiator is None or d.initiator.rank is None


def _state(tail: str) -> ScanState:
    st = ScanState()
    st.tails.append(("job.log", 1, tail))
    return st


@pytest.mark.parametrize(
    ("tail", "rank"),
    [
        ("exit codes: {'trainer-0': 1, 'trainer-1': 1, 'trainer-2': -11}\n", 2),
        ('exitcodes = {"w_0": 0, "w_1": 3, "w_2": 0}\n', 1),
        # the parent stopped the others after worker-0 failed: SIGTERM is no crash
        ("exit codes: {'worker-0': 1, 'worker-1': -15, 'worker-2': -15}\n", None),
        # names that do not number the children 0..n-1
        ("exit codes: {'loader': -11, 'trainer': 1}\n", None),
        ("exit codes: {'worker-1': -11, 'worker-2': 1}\n", None),
        # a dict that is no exit report
        ("sizes: {'worker-0': 1, 'worker-1': -11}\n", None),
    ],
)
def test_which_reports_name_a_child(tail: str, rank: int | None) -> None:
    found = initiating_child(_state(tail))
    assert (found[0] if found else None) == rank


def test_the_report_keeps_each_childs_name_and_code() -> None:
    got = child_exit_ranks(_state("exit codes: {'trainer-0': 1, 'trainer-1': -11}\n"))
    assert got == {0: ("trainer-0", 1), 1: ("trainer-1", -11)}
