"""Kinds found this round, each with a fixture captured from a real run of this project's own
(torch 2.13 CPU, gloo; ``tests/r23``):

- torchrun's failure summary is the agent's last words: the lines after it, up to the
  traceback that shows another program ran (or the next node's traceback), are the next run's
  own first lines, not the failed launch's (``appended_job_prints_before_its_traceback.log``:
  ``torchrun --nproc-per-node=2 train_a.py``, whose rank 1 raises ValueError, then
  ``python serve_eval.py`` appended to the same file, whose c10d store client prints its
  connect-timeout lines before its traceback).
- each rank's own lines (the per-rank evidence: a value one rank printed differently) are read
  from the diagnosed job's first line when another job comes before it in the file, not from
  the file's first line: the earlier job's "failed (exitcode" line ended the read before the
  diagnosed job began (that job's first 60 lines, then
  ``tests/fix_variants/gloo-size-mismatch/dtype-width-rank-said.log`` appended);
- a rank's uncaught Python exception, then "terminate called without an active exception" as
  the interpreter shut down with the process group's threads alive: the exception is the
  cause, the abort its teardown (``redirected_terminate/``: ``torchrun --nproc-per-node=3
  --redirects 3 --log-dir logs train.py``, rank 2 indexes a split table without its key at
  epoch 2 under a gloo group with an 8 s timeout; its ``stderr.log`` ends with the abort);
- an unranked abort followed by a peer report is not carried to the reporting rank: under
  mp.spawn, rank 1 (an empty shard, a division by its length) died with an unprefixed
  "terminate called without an active exception", and mp.spawn showed only process 0's gloo
  "Connection closed by peer" (``spawn_victim_after_unranked_abort.log``);
- srun's own report of a failed task (``srun: error: <node>: task N: Exited with exit code C``)
  gets srun's advice (the task's ``N: `` lines, ``--output=slurm-%j-%t.out``, ``sacct``), not
  torchrun's (``tests/fix_variants/elastic-child-failed/srun-task.log``, written in srun's and
  slurmstepd's formats: src/srun, src/slurmd/slurmstepd/req.c);
- the rank the others waited for at a collective it never reached printed no traceback: the
  fix quotes what it said last (its own problem line, its last line), the log's own words
  (``rank_said_its_problem_then_stalled.log``: ``torchrun --nproc-per-node=3 --tee 3``, rank 1
  logs a record it cannot decode and retries past the others' 8 s barrier timeout);
- torchrun's agent record of a failed worker in another build's words ("failed (exitcode: -9)
  for binary located at <python> with local_rank: 1 (process ID: 4102)", "Sending process N
  the closing signal SIGTERM") is read by the same fields (``agent_other_build_wording.log``,
  written in that format with values of our own);
- a hang stopped from outside after every rank began a phase and all but one ended it: the
  progress inside the phase (before the others ended it) is every rank's work together, and
  output of the job's own after the others ended it means the job went on
  (``phase_unfinished_progress_unread.log``: ``timeout 25 torchrun --nproc-per-node=3``, rank
  1's uploader thread waits on an event never set and its join blocks after the loop;
  ``phase_unreported_job_went_on.log``: rank 1 only does not print its "done" line and
  training goes on to epoch 2 until ``timeout 12``;
  ``phase_step_lines_one_rank_never_done.log``: every rank prints "[rankN] shard k/4 scored"
  inside the phase, rank 0's writer thread never finishes, ``timeout 20``);
- srun's "task N: Segmentation fault (core dumped)" names task N, the rank srun launched
  (SLURM_PROCID), as its "Exited with exit code" line does (``srun_task_segfault.log``, in
  srun's format with values of our own).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

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


def test_the_rank_lines_of_a_job_after_another_are_its_own():
    first = (HERE / "appended_job_prints_before_its_traceback.log").read_text(encoding="utf-8")
    first = "".join(first.splitlines(keepends=True)[:60])  # the torchrun job, to its summary
    second = (
        Path(__file__).resolve().parent
        / "fix_variants/gloo-size-mismatch/dtype-width-rank-said.log"
    ).read_text(encoding="utf-8")
    alone = diagnose_text(second, "b.log", mask=False)
    d = diagnose_text(first + second, "ab.log", mask=False)
    assert d.initiating_rank == alone.initiating_rank == 0
    assert d.initiator is not None and alone.initiator is not None
    # the same strategy names the rank, from the same line of the second job
    assert d.initiator.strategy == alone.initiator.strategy == "odd_line_out"
    assert any("(line 65: `built model, param dtype torch.float64`)" in r for r in d.reasoning)
    assert any("lone_dtype_line" in r for r in d.reasoning)


def test_a_ranks_abort_after_its_own_exception_is_teardown_not_the_cause():
    d = diagnose_paths([str(HERE / "redirected_terminate" / "logs")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert rc.captures.get("exc_type", "").endswith("KeyError")
    assert rc.evidence[0].path.endswith("attempt_0/2/stderr.log") and rc.evidence[0].line == 5
    assert d.initiating_rank == 2
    aborts = [f for f in d.findings if f.signature == "cpp-terminate-abort"]
    assert aborts and aborts[0].evidence[0].line == 6
    (edge,) = [e for e in d.explanations if e.effect.signature == "cpp-terminate-abort"]
    assert (edge.cause.signature, edge.cause.line, edge.effect.line) == (
        "user-code-exception",
        5,
        6,
    )
    assert edge.why == "the process raised it and then aborted while shutting down"
    assert "cpp-terminate-abort" in {c.signature for c in d.collateral}


def test_an_unranked_abort_is_not_the_rank_whose_peer_report_follows_it():
    d = diagnose_paths([str(HERE / "spawn_victim_after_unranked_abort.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "cpp-terminate-abort"
    assert rc.evidence[0].line == 3
    assert d.initiating_rank is None  # rank 0 only saw its peer go away
    assert "connection-reset-by-peer" in {c.signature for c in d.collateral}


def test_srun_reporting_a_failed_task_gets_sruns_advice_not_torchruns():
    path = HERE.parent / "fix_variants" / "elastic-child-failed" / "srun-task.log"
    d = diagnose_paths([str(path)], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "elastic-child-failed"
    assert d.initiating_rank == 1 and rc.evidence[0].line == 7
    assert rc.fix.variant is not None and rc.fix.variant.id == "srun-task"
    assert rc.fix.steps[0].startswith("Read task 1's own output, above srun's report")
    assert "slurm-%j-%t.out" in rc.fix.steps[0]
    assert rc.verify.startswith("PYTHONUNBUFFERED=1 srun --label python")
    assert "torchrun" not in " ".join(rc.fix.steps) + rc.verify


def test_the_fix_quotes_what_the_stalled_rank_said_last():
    d = diagnose_paths([str(HERE / "rank_said_its_problem_then_stalled.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "collective-timeout"
    assert d.initiating_rank == 1
    # the line is quoted by the variant it selects (r25: a rank that says it is retrying gets
    # rank-retrying-failing-request, which quotes that line itself)
    assert rc.fix.variant is not None and rc.fix.variant.id == "rank-retrying-failing-request"
    assert rc.fix.steps[0].startswith(
        "train.py:12: ranks 0 and 2 stopped in barrier here; rank 1 never reached this line"
        " (it printed no traceback): look at what rank 1 did before it."
    )
    assert (
        "its own line 4: `loader: cannot decode record 17 in part-01.jsonl, retrying`"
        in rc.fix.steps[0]
    )


def test_the_agents_failure_record_in_another_builds_words_is_read():
    d = diagnose_paths([str(HERE / "agent_other_build_wording.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-sigkill-exit"
    assert d.initiating_rank == 1 and rc.evidence[0].line == 6
    closing = [f for f in d.findings if f.signature == "agent-sigterm-to-workers"]
    assert closing and closing[0].evidence[0].line == 3


def test_a_rank_stuck_after_the_phases_progress_is_named():
    d = diagnose_paths([str(HERE / "phase_unfinished_progress_unread.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "stopped-in-unfinished-phase"
    assert rc.failure_class == "collective-timeout"
    assert d.initiating_rank == 1 and rc.evidence[0].line == 1
    assert rc.captures["finished"] == "epoch 0 done"


def test_a_phase_one_rank_did_not_report_while_the_job_went_on_names_no_rank():
    d = diagnose_paths([str(HERE / "phase_unreported_job_went_on.log")], mask=False)
    assert "stopped-in-unfinished-phase" not in {f.signature for f in d.findings}
    assert d.initiating_rank is None


def test_a_phase_with_step_lines_every_rank_printed_names_the_rank_that_never_ended_it():
    d = diagnose_paths([str(HERE / "phase_step_lines_one_rank_never_done.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "stopped-in-unfinished-phase"
    assert d.initiating_rank == 0
    assert rc.captures["started"] == "shard 4/4 scored"
    assert rc.captures["finished"] == "scoring done"


def test_srun_naming_one_task_killed_by_a_signal_names_that_rank():
    d = diagnose_paths([str(HERE / "srun_task_segfault.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-segfault"
    assert d.initiating_rank == 2 and rc.evidence[0].line == 4
