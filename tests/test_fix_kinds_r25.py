"""Round-25 fix kinds (issue #15, "fixes that would work": /work/notes/fix-r25-regrade.md),
each but one on a real torch 2.13 CPU run captured for it (the logs under
tests/fix_variants/<signature>/<variant>.log, the scripts that made them under tests/r25_fix as
``*.py.txt``):

- a rank the others timed out waiting for said it was retrying a request that kept failing
  (``...; retrying 4/8 after 8s``): the retried request is the cause, a longer timeout only
  waits longer (gloo-collective-timeout ``rank-retrying-failing-request``);
- a rank the others timed out waiting for reported a problem in its own words and raised
  nothing (a reader thread that logged and returned, its consumer then blocked): the reported
  problem is the cause; the words are read through the launcher's ``[defaultN]:`` tag when the
  line does not name the rank (``rank-reported-problem-then-silent``);
- a rank the others timed out waiting for counts a phase to a total many times theirs
  (``scoring 3000/9000`` against ``.../300``): its share is larger, so balance it or make
  the work linear (``rank-larger-share-still-counting``);
- NCCL watchdog timeouts at one SeqNum with different NumelIn on two ranks (the
  numel-divergence inference not taken: an unranked C++ frame line of the watchdog's
  exception is a finding with no SeqNum): the ranks run different collectives there, so the
  fix is their wrap/shard layout, not "rerun with dumps" (nccl-watchdog-timeout
  ``same-seqnum-different-sizes``; a fixture in NCCL's own format, values of our own);
- SQLite's ``database is locked`` is another connection's open write transaction, not an
  input to fix (user-code-exception ``sqlite-database-locked``);
- a CalledProcessError from a command run through a shell from a string with a value in it:
  the shell split a file name with brackets (``shell-string-with-value``);
- a KeyError whose traceback quotes no source line still says what a KeyError means and where
  to look (``key-missing``), instead of "the message names what to change".
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).parent / "fix_variants"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_rank_retrying_a_refused_fetch_is_told_to_fix_the_request_not_the_timeout():
    # before: rank-never-joined ("... or raise the timeout for that phase")
    d = _diag("gloo-collective-timeout/rank-retrying-failing-request.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-collective-timeout"
    assert d.initiating_rank == 2
    assert _variant(d) == "rank-retrying-failing-request"
    step = d.root_cause.fix.steps[0]
    assert "retrying 4/8 after 8s" in step
    assert "A longer timeout only waits longer" in step


def test_rank_that_reported_a_problem_then_went_silent_names_that_line():
    # before: never-reached-barrier ("save asynchronously ... or raise the timeout")
    d = _diag("gloo-collective-timeout/rank-reported-problem-then-silent.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-collective-timeout"
    assert d.initiating_rank == 1
    assert _variant(d) == "rank-reported-problem-then-silent"
    # the line names no rank: it is read through the launcher's [default1]: tag
    assert "cannot decode block 3 of part_1.rec" in d.root_cause.fix.steps[0]


def test_rank_whose_counter_total_is_many_times_the_others_has_the_larger_share():
    # before: rank-never-joined ("... or raise the timeout for that phase")
    d = _diag("gloo-collective-timeout/rank-larger-share-still-counting.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-collective-timeout"
    assert d.initiating_rank == 2
    assert _variant(d) == "rank-larger-share-still-counting"
    assert "`scoring .../9000` where the other ranks count to 300, 320" in d.root_cause.fix.steps[0]


def test_same_seqnum_different_numel_points_at_the_ranks_layout():
    # before: no-rank-named ("rerun with TORCH_NCCL_TRACE_BUFFER_SIZE ... and py-spy")
    d = _diag("nccl-watchdog-timeout/same-seqnum-different-sizes.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-watchdog-timeout"
    assert d.initiating_rank is None
    assert _variant(d) == "same-seqnum-different-sizes"
    step = d.root_cause.fix.steps[0]
    assert "COALESCED SeqNum 1873" in step
    assert "numel 36864 vs 24576" in step


def test_sqlite_database_locked_names_the_rank_holding_the_transaction():
    # a real run: rank 0 keeps a write transaction open across a loop, rank 1 waits 2 s and
    # raises; the lock's holder (rootrank.analysis.lock_holder), not its waiter, is named
    d = diagnose_paths([str(HERE.parent / "r25_fix" / "sqlite-database-locked.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "shared-lock-busy"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 11
    assert _variant(d) == "holder-shown"
    assert "holds the lock" in d.root_cause.fix.steps[0]


def test_shell_string_with_a_file_name_is_split_by_the_shell():
    # before: subprocess-failed ("make the command succeed on every node")
    d = _diag("user-code-exception/shell-string-with-value.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert _variant(d) == "shell-string-with-value"
    assert d.root_cause.user_frame is not None
    assert d.root_cause.user_frame.line == 5
    assert "shlex.quote" in d.root_cause.fix.steps[0]


def test_keyerror_without_a_quoted_line_says_what_the_key_means():
    # before: general ("its own words name what to change")
    d = _diag("user-code-exception/key-missing.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert _variant(d) == "key-missing"
    assert "reads the key 'tags'" in d.root_cause.fix.steps[0]
