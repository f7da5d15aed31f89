"""Round-19b kinds of reasoning (held-out set /work/notes/heldout-r19b, now a development set).

The fixtures in ``tests/r19b/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

C. Two torchrun agents' outputs one after the other in one file (node 0's whole output, then
   node 1's: different agent pids, node 1's start banner timed before node 0's failure) are
   two nodes of one run, not two attempts (rootrank.runs.another_node); and a worker's own
   ``subprocess.CalledProcessError`` (``git rev-parse`` in a directory that is no checkout,
   git's ``fatal: ...`` on the line before) is that worker's exception (user-code-exception,
   variant ``subprocess-failed``), not the launcher's ChildFailedError summary.
"""

from __future__ import annotations

import re
from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.report import to_text
from rootrank.runs import SectionFacts, another_node

_DATA = Path(__file__).parent / "r19b"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# C. two nodes concatenated; a worker's CalledProcessError


def test_two_agents_concatenated_are_two_nodes_and_called_process_error_wins() -> None:
    d = diagnose_text(
        _read("06-node1-rank2-git-rev-parse-not-a-repo-tee3.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 91
    assert "CalledProcessError" in d.root_cause.evidence[0].text
    fix = d.root_cause.fix.steps[0]
    assert "the line just above this traceback" in fix
    assert "RUN_REV" in fix
    # the second agent's section is another node, not a relaunch
    text = to_text(d)
    assert "2 runs of the job" not in text
    assert "two agents of one run" in text


def test_different_agents_timed_at_once_are_nodes_even_with_shared_local_tags() -> None:
    # node 0 (agent 28302) ran 22:12:48-22:12:58; node 1's agent 28334 started 22:12:49 and
    # its ``[default1]`` tee prefix reads as rank 1 too
    earlier = SectionFacts(ranks={0, 1}, first_time=100.0, last_time=110.0, agents={"28302"})
    later = SectionFacts(
        ranks={1, 2, 3}, first_time=101.3, last_time=106.8, agents={"28334"}, start=74
    )
    why = another_node(earlier, later)
    assert why is not None and "28334" in why
    # a relaunch: a new agent started after the earlier one's last line
    relaunch = SectionFacts(ranks={0, 1}, first_time=111.0, last_time=120.0, agents={"28400"})
    assert another_node(earlier, relaunch) is None


# D. a non-finite loss a guard handled


def test_handled_nonfinite_loss_is_survived_not_a_failure() -> None:
    d = diagnose_text(_read("12-healthy-spawn-nan-skip-handled.log"), "run.log", mask=False)
    assert d.root_cause is None
    text = to_text(d)
    assert "No known failure found" in text
    assert "was survived" in text and "[error_survived]" in text
    # rank 1's own NaN ("... on this rank") is read as rank 1's point
    nan_series = [s for s in d.metrics if s.onsets]
    assert [(s.rank, s.onsets[0].step) for s in nan_series] == [(1, 23)]


def test_nonfinite_loss_that_stays_nonfinite_is_still_the_cause() -> None:
    # the same run's lines, cut at the NaN: no finite loss after it on rank 1
    lines = _read("12-healthy-spawn-nan-skip-handled.log").splitlines()[:12]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank == 1


# A. the length of a list each rank prints


def test_odd_list_length_names_the_sender_not_the_aborting_receiver() -> None:
    d = diagnose_text(_read("09-rank0-gather-stats-extra-lr.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    # rank 1 aborted on gloo's "16 vs 12" (it received more than it expected) and torchrun
    # names it first; rank 0 printed 4 values where ranks 1 and 2 printed 3 (rank 0's and
    # rank 1's records glued on line 5)
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "odd_printed_value"
    assert "printed 4 values where the others printed 3" in d.initiator.why
    assert "run.log:5" in d.initiator.why
    assert "09_gather_stats.py:33" in d.root_cause.fix.steps[0]


# B. the one rank still printing progress when the others time out


def test_rank_still_working_is_the_one_the_barrier_waited_for() -> None:
    d = diagnose_text(
        _read("10-spawn-rank0-slow-tokenize-barrier-timeout.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "still_working"
    assert "(7 of 12, run.log:10)" in d.initiator.why
    fix = d.root_cause.fix.steps[0]
    assert "init_process_group(backend, timeout=timedelta(" in fix
    assert "before init_process_group" in fix
    assert "drop_last" not in fix and "join()" not in fix


# F. a verify that greps a line torchrun does not print by default


def test_rendezvous_verify_checks_what_torchrun_prints_by_default() -> None:
    d = diagnose_text(_read("04-node1-nnodes-3-vs-2.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.initiating_rank is None
    verify = d.root_cause.verify or ""
    assert "Rendezvous complete" not in verify
    pattern = re.search(r"grep -qE '([^']+)'", verify)
    assert pattern is not None
    # a good 2-agent c10d run on this machine (torch 2.13, node 0's whole output, exit 0):
    # no rendezvous error, so the check passes; the failed run's log has one, so it fails
    good = _read("f-good-2-agent-c10d-node0.log")
    assert "exit=0" in good and "Rendezvous complete" not in good
    assert re.search(pattern.group(1), good) is None
    assert re.search(pattern.group(1), _read("04-node1-nnodes-3-vs-2.log")) is not None


# E. the mechanism from the exception's (or the rank's) own words


def test_global_batch_below_world_size_is_the_config_fix() -> None:
    d = diagnose_text(_read("05-spawn-all-ranks-batch-zero.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "config-error"
    assert "set_num_threads" not in d.root_cause.title
    fix = d.root_cause.fix.steps[0]
    assert "global batch 3 over 4 ranks -> 0 per rank" in fix
    assert "smaller than the world size" in fix
    assert "05_spawn_batch.py:19" in fix


def test_keyerror_on_a_records_field_is_a_record_missing_that_field() -> None:
    d = diagnose_text(_read("08-rank0-vocab-keyerror-others-store-get.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.root_cause.signature == "record-missing-field"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 18
    fix = d.root_cause.fix.steps[0]
    assert 'has no "text" field' in fix and "08_vocab_store.py:18" in fix


def test_dcp_missing_per_rank_key_is_a_resume_with_more_ranks() -> None:
    d = diagnose_text(_read("02-rank3-dcp-resume-4-from-3.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.initiating_rank == 3
    fix = d.root_cause.fix.steps[0]
    assert '"sampler_rank3.cursor"' in fix
    assert "rank 3 (of the 4 ranks this run has)" in fix
    assert "fewer ranks than it is resumed with" in fix
    assert "(RANK N)" not in fix
