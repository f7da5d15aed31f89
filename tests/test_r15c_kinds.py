"""The kinds of miss the r15c held-out runs showed, each on logs of real runs made for these
tests (torch 2.13 CPU, gloo; not the held-out runs) or on text in the tools' real shape:

A. a job relaunched by a shell loop (``until torchrun ...; do ...; done``) prints no banner of
   its own between launches: torchrun's failure summary is the failed launch's last output
   (the agent prints it after every worker exited), so training progress after it is the next
   launch's (from the second such line: one alone may be a wrapper's report of the failure).
   The diagnosis is of the last launch: one that trained to its end leaves no root cause;
   one that failed again is diagnosed by its own fault, not the first launch's.
B. ``logging``'s ``exc_info`` (``log.exception``, ``log.warning(..., exc_info=True)``) prints
   the traceback right under the record's first line, in the same write, with no header of its
   own: under a format that carries the rank (``[worker-1] ERROR ...``) that traceback is the
   record's rank's, so a rank that logged a caught error and went on to later steps survived
   it. A traceback under a line that is no warning or error record keeps no rank from it,
   nor does one whose first frame is the script's top level (an uncaught exception).
C. ``--max-restarts``: a deterministic fault comes back on every restart, and what the failed
   attempts left behind (a symlink, a directory they created) makes more ranks fail alike in
   the later attempts. When several ranks raise the root's exception in the last attempt,
   the rank that raised the same exception alone in the job's first attempt started it.
   (torch 2.13's gloo restarts rarely get past connectFullMesh here, so the fixture's first
   attempt is a real run's and its second is written in the same shape.)
D. faulthandler writes ``Fatal Python error: Segmentation fault`` and, right under it, the
   crashing thread's stack (``Current thread 0x... (most recent call first):``) from the same
   process: when that line is the root cause's evidence, the stack's innermost user frame is
   where the crash happened, whatever the victims' tracebacks (other processes, other lines)
   show.
E. ``raise ValueError(f"row {i} of {path}: ...") from e`` around a library's error: the
   user's re-raise (the next link of the chain, raised in the user's own code, from an
   exception whose innermost frame is a library's) is the user's own statement of the failure
   and names what the library could not (the record, the file): the fix quotes it and points
   at its line; the library's cause stays in the evidence.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

ATTEMPTS = Path(__file__).resolve().parent / "attempts"
HEALTHY = Path(__file__).resolve().parent / "healthy"
DATA = Path(__file__).resolve().parent / "data"

# -- A ------------------------------------------------------------------------------------


def test_a_a_relaunch_that_trained_to_its_end_leaves_no_root_cause():
    # launch 1: rank 1's config file not there yet (FileNotFoundError, torchrun's summary);
    # "job failed, resubmitting (1/3)"; launch 2: iter 1/6 .. iter 6/6, exit 0 (the relaunch is
    # read from line 59, right after the first launch's summary)
    d = diagnose_paths([str(ATTEMPTS / "shell-relaunch-recovers.log")], mask=False)
    assert d.root_cause is None
    assert d.attempts == 2
    assert any("holds 2 runs" in r and "from line 59" in r for r in d.reasoning)
    assert "user-code-exception" not in {f.signature for f in d.findings}


def test_a_one_progress_line_after_the_summary_is_no_relaunch():
    # a wrapper's one line about the failed launch ("... at step 12") after torchrun's
    # summary: the launch's failure stands
    lines = (ATTEMPTS / "shell-relaunch-recovers.log").read_text().splitlines()
    assert lines[58] == "job failed, resubmitting (1/3)"
    d = diagnose_text("\n".join([*lines[:59], "wrapper: launch 1 died at step 12"]) + "\n")
    assert d.attempts == 1
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert "FileNotFoundError" in d.root_cause.evidence[0].text


def test_a_a_relaunch_that_failed_again_is_diagnosed_by_its_own_fault():
    # launch 2 trains iter 1-3, then rank 1 raises ZeroDivisionError (line 68)
    d = diagnose_paths([str(ATTEMPTS / "shell-relaunch-fails-again-mid-training.log")], mask=False)
    assert d.attempts == 2
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 68
    assert "ZeroDivisionError" in d.root_cause.evidence[0].text


# -- B ------------------------------------------------------------------------------------

_EXC_INFO = HEALTHY / "torchrun-logger-exc-info-caught-eval-hook.log"


def test_b_a_traceback_logged_with_exc_info_is_the_record_s_rank_and_was_survived():
    # line 10: "[worker-1] ERROR loop: eval hook failed at step 3; continuing without eval",
    # lines 11-17 its KeyError traceback, line 18 "[worker-1] INFO loop: step 4 ..."
    d = diagnose_paths([str(_EXC_INFO)], mask=False)
    assert d.root_cause is None
    assert d.unclassified is None
    survived = [r for r in d.reasoning if "[error_survived]" in r]
    assert len(survived) == 1
    assert "rank 1 went on to step 4 (line 18), past step 3" in survived[0]


def test_b_a_traceback_under_a_progress_line_takes_no_rank_from_it():
    # the ERROR record removed: the traceback now follows rank 1's INFO step line, which is
    # no record it was logged under, so it stays without a rank; it is survived only because
    # every rank went on after it (trial r17c), by no rank's name
    lines = _EXC_INFO.read_text().splitlines()
    assert "ERROR" in lines[9]
    d = diagnose_text("\n".join(lines[:9] + lines[10:]) + "\n", mask=False)
    assert d.root_cause is None
    assert d.initiating_rank is None
    said = [r for r in d.reasoning if "[error_survived]" in r]
    assert len(said) == 1
    assert "whichever rank raised it (every rank of 0, 1, 2 printed a later step)" in said[0]
    # without rank 2's steps but its step 3 (none after the traceback), it is a failure of no
    # rank, as before
    cut = [ln for ln in lines[:9] + lines[10:] if "[worker-2]" not in ln or "step 3 " in ln]
    d = diagnose_text("\n".join(cut) + "\n", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.rank is None
    assert d.initiating_rank is None


# -- C ------------------------------------------------------------------------------------

_RESTARTS = ATTEMPTS / "torchrun-max-restarts-leftover-symlink.log"


def test_c_the_rank_alone_in_the_first_attempt_started_the_fault_every_rank_repeats():
    # attempt 0: rank 1 FileExistsError (line 8), ranks 0 and 2 lose their peer; attempt 1
    # (from line 34): ranks 2, 0, 1 all raise FileExistsError on their own leftover links
    d = diagnose_paths([str(_RESTARTS)], mask=False)
    assert d.attempts == 2
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.initiator.strategy == "alone_in_first_attempt"
    assert d.root_cause.evidence[0].line == 57
    assert any("rank 1 alone raised the same FileExistsError" in r for r in d.reasoning)


def test_c_two_ranks_in_the_first_attempt_name_no_one():
    # rank 2's victim error in attempt 0 made a FileExistsError too: the first attempt no
    # longer shows one rank alone, and the last attempt's reports stay undecided
    text = _RESTARTS.read_text()
    victim = (
        "[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
        "pair.cc:553] Connection closed by peer"
    )
    head, tail = text.split(victim, 1)
    assert "FileExistsError" not in tail.split("\n", 1)[0]
    text = (
        head
        + "[rank2]: FileExistsError: [Errno 17] File exists: '/home/user/proj/ckpt' -> "
        + "'run/latest-2'\n"
        + tail.split("\n", 1)[1]
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "earliest_time"


# -- D ------------------------------------------------------------------------------------

_SEGV = DATA / "torchrun-faulthandler-segfault-victims.log"


def test_d_the_crashing_thread_s_stack_under_fatal_python_error_names_the_user_line():
    # line 4 "Fatal Python error: Segmentation fault", line 6 "Current thread ...", line 8
    # train2.py:8 in read_header; ranks 0 and 2 then fail in all_reduce at train2.py:18
    d = diagnose_paths([str(_SEGV)], mask=False)
    assert d.root_cause.failure_class == "segfault"
    assert d.initiating_rank == 1
    assert d.root_cause.user_frame is not None
    assert (d.root_cause.user_frame.line, d.root_cause.user_frame.func) == (8, "read_header")
    assert d.root_cause.fix.steps[0].startswith("train2.py:8 (in read_header), where rank 1")


def test_d_a_stack_that_does_not_follow_the_fatal_error_line_is_not_the_crash_s():
    # three lines of another process between the error line and the stack: not its dump
    lines = _SEGV.read_text().splitlines()
    assert lines[3] == "Fatal Python error: Segmentation fault"
    other = ["[rank2]: step 3 waiting"] * 3
    d = diagnose_text("\n".join(lines[:4] + other + lines[4:]) + "\n", mask=False)
    assert d.root_cause.failure_class == "segfault"
    assert d.root_cause.user_frame is None


# -- E ------------------------------------------------------------------------------------

_REWRAP = DATA / "torchrun-user-reraise-from-strptime.log"


def test_e_the_user_s_re_raise_from_a_library_error_is_quoted_and_located():
    # line 10: _strptime's ValueError (innermost frame in the library), line 22: the user's
    # "ValueError: row 3 of meta/rank1.csv: unreadable timestamp" raised from it at train.py:11
    d = diagnose_paths([str(_REWRAP)], mask=False)
    rc = d.root_cause
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert [e.line for e in rc.evidence[:2]] == [22, 10]
    assert rc.captures["message"] == "row 3 of meta/rank1.csv: unreadable timestamp"
    assert (rc.user_frame.line, rc.user_frame.func) == (11, "parse_row")
    assert rc.fix.steps[0].startswith("train.py:11 (in parse_row), where rank 1 raised ValueError")
    assert "row 3 of meta/rank1.csv" in rc.fix.steps[0]


def test_e_a_cause_raised_in_the_user_s_own_code_stays_first():
    # the library frames removed: the cause's innermost frame is the user's train.py:9, so
    # the chain is the user's code throughout and the first exception stays the root's line
    lines = _REWRAP.read_text().splitlines()
    assert "_strptime.py" in lines[4] and "_strptime.py" in lines[7]
    d = diagnose_text("\n".join(lines[:4] + lines[9:]) + "\n", mask=False)
    rc = d.root_cause
    assert rc.failure_class == "user-code-exception"
    assert rc.evidence[0].text.endswith("does not match format '%Y-%m-%d'")
    assert (rc.user_frame.line, rc.user_frame.func) == (9, "parse_row")


def test_b_an_uncaught_traceback_under_an_error_record_is_not_the_record_s():
    # the first frame made the script's top level: an uncaught exception of some process,
    # printed by sys.excepthook, not the record's exc_info; it takes no rank from the line above
    lines = _EXC_INFO.read_text().splitlines()
    assert lines[11].endswith(", in main")
    lines[11] = lines[11].replace(", in main", ", in <module>")
    d = diagnose_text("\n".join(lines) + "\n", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.rank is None


def test_a_progress_past_the_furthest_step_after_the_summary_is_no_relaunch():
    # two lines at step 1234 after the summary of a launch that printed no step: a relaunch
    # would start over (or resume at or before the furthest step), so these are not one
    lines = (ATTEMPTS / "shell-relaunch-recovers.log").read_text().splitlines()
    extra = ["step 1234 loss 2.3141", "step 1235 loss 2.3101"]
    d = diagnose_text("\n".join([*lines[:59], *extra]) + "\n", mask=False)
    assert d.attempts == 1
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
