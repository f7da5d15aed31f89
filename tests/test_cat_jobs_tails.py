"""Another job's short tail, or a healthy job, after a failed torchrun job in one file
(``cat job1.log job2.log > all.log``; round 17 trial findings 1a and 1c).

- A whole torchrun failure followed by a few lines of another program's error (a `vllm
  serve` start-up's pasted last lines: no ``Traceback`` header, no entry script, no engine
  frame): torchrun's failure summary is the agent's last words, and an exception after it
  that is neither a launcher's report nor a rank of the run is another job's
  (rootrank.scan._program_after_summary). Before: the tail was taken for a wrapper's report
  of the torchrun run and the diagnosis was the torchrun job's KeyError, with the vLLM
  error not even named.
- A healthy job after a failed one: the report says the last run is the one diagnosed and
  that it finished (rootrank.analysis._last_run_finished). Before: "No known failure found"
  with "the run that ended the job", which said nothing of its end.

Fixtures: tests/catjobs/ (README.md there): ``torchrun-shard-keyerror-rank2.log`` (a real
4-rank run, rank 2's KeyError), ``vllm-serve-modelconfig-tail.log`` (a user's real 5-line
paste), ``torchrun-healthy-finished.log`` (a real 2-rank run that finished).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).resolve().parent / "catjobs"
KEYERROR = "torchrun-shard-keyerror-rank2.log"  # 104 lines
VLLM_PASTE = "vllm-serve-modelconfig-tail.log"  # 5 lines
HEALTHY = "torchrun-healthy-finished.log"  # 8 lines


def read(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def test_fixture_lengths():
    assert [len(read(n).splitlines()) for n in (KEYERROR, VLLM_PASTE, HEALTHY)] == [104, 5, 8]


def test_the_torchrun_job_alone_is_rank_2s_keyerror():
    d = diagnose_text(read(KEYERROR), "a.log", mask=False)
    assert d.root_cause.signature == "user-code-exception" and d.initiating_rank == 2
    uf = d.root_cause.user_frame
    assert (uf.file, uf.line) == ("/home/user/proj/jobA_train.py", 7)


def test_a_pasted_vllm_tail_after_a_torchrun_failure_is_another_job():
    d = diagnose_text(read(KEYERROR) + read(VLLM_PASTE), "mix.log", mask=False)
    assert d.root_cause is None  # the ValidationError is named by no signature
    u = d.unclassified
    assert "ValidationError" in u.title and u.evidence[0].line == 104 + 3
    assert "user-code-exception" not in {f.signature for f in d.findings}
    assert d.initiating_rank is None
    (line,) = [r for r in d.reasoning if "different runs" in r]
    assert "(from line 105)" in line and "Left out: the run at lines 1-104" in line
    assert "it ran jobA_train.py and torchrun's failure summary ended it" in line


def test_the_same_tail_cut_to_its_last_four_lines_no_frame_at_all_is_another_job():
    """The paste's last four lines: a source line, then the exception with no frame above."""
    tail = "".join(read(VLLM_PASTE).splitlines(keepends=True)[1:])
    d = diagnose_text(read(KEYERROR) + tail, "mix.log", mask=False)
    assert d.root_cause is None
    u = d.unclassified
    assert "ValidationError" in u.title and u.evidence[0].line == 104 + 2
    (line,) = [r for r in d.reasoning if "different runs" in r]
    # the source line above the exception (105) is the pasted job's, after torchrun's summary
    assert "(from line 105)" in line and "Left out: the run at lines 1-104" in line


def test_a_healthy_job_after_a_failed_one_is_named_and_said_to_have_finished():
    d = diagnose_text(read(KEYERROR) + read(HEALTHY), "mix.log", mask=False)
    assert d.root_cause is None and d.initiating_rank is None
    assert "user-code-exception" not in {f.signature for f in d.findings}
    (line,) = [r for r in d.reasoning if "runs, one after the other" in r]
    assert "this is the diagnosis of the last one (from line 105)" in line
    assert "it finished: the training loop reported its end (training finished)" in line
    assert "(mix.log:112)" in line and "The failure before it (lines 1-104)" in line


def test_a_failed_job_after_a_healthy_one_is_still_the_failure():
    d = diagnose_text(read(HEALTHY) + read(KEYERROR), "mix.log", mask=False)
    assert d.root_cause.signature == "user-code-exception" and d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 8 + 26  # "[rank2]: KeyError: 2"
    assert not any("it finished" in r for r in d.reasoning)
