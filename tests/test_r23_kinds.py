"""Kinds found this round, each with a fixture captured from a real run of this project's own
(torch 2.13 CPU, gloo; ``tests/r23``):

- torchrun's failure summary is the agent's last words: the lines after it, up to the
  traceback that shows another program ran (or the next node's traceback), are the next run's
  own first lines, not the failed launch's (``appended_job_prints_before_its_traceback.log``:
  ``torchrun --nproc-per-node=2 train_a.py``, whose rank 1 raises ValueError, then
  ``python serve_eval.py`` appended to the same file, whose c10d store client prints its
  connect-timeout lines before its traceback).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).resolve().parent / "r23"


def test_an_appended_jobs_lines_before_its_traceback_are_its_own():
    d = diagnose_paths([str(HERE / "appended_job_prints_before_its_traceback.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "tcpstore-connect-timeout"
    # the store client's own connect lines (61: socket.cpp, 62: TCPStore.cpp's retry) are
    # read as the second job's, not dropped with the first one's lines
    assert min(e.line for e in rc.evidence) == 61
    assert any("diagnosed the last (from line 61)" in w for w in d.warnings)
    assert any("left out the run at lines 1-60" in w for w in d.warnings)
    assert d.initiating_rank is None
