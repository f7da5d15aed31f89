"""Held-out r24c kinds (the set's MISSES.md), each on a real torch 2.13 CPU run captured for
it (tests/r24c, the scripts beside the logs as ``*.py.txt``):

- a torchrun restart that dies in gloo's full-mesh connect is the knock-on of the attempt
  before it, also when that attempt's fault was the program's own server bind (EADDRINUSE
  on an exporter port, read as the rank's own exception): the earlier rank and its bind line
  are the cause, not the restart's interface;
- a phase whose per-rank lines carry a counter to a total (``tokenized N/40 files``) ends
  with the counter at its total: one rank short of it when a stop from outside ends the job
  is stuck inside it (a hang), the stop only ended it;
- ``os.makedirs(path, exist_ok=True)`` raising FileExistsError means a file sits at the
  path, not a race between ranks;
- a record that ends with ``..., training finished`` is the run's end: the traceback a
  handler logged before it was survived;
- a rank whose last own line is an interactive prompt (``? [y/N]``) is blocked on stdin: the
  fix removes the prompt, a longer timeout cannot help;
- the weights-only loader's ``Unsupported operand 118`` is the 'v' of a Git LFS pointer: pull the object;
- a process pool child's native crash (faulthandler's dump through ``_process_worker``) explains
  the parent's BrokenProcessPool, on the parent's rank, at the child's user frame;
- a worker whose own watchdog sent SIGTERM to its own pid while another rank was retrying an
  input: the retrying rank initiates (signatures/data/watchdog-killed-while-rank-retried-input).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).parent / "r24c"
SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_restart_refused_after_own_server_port_taken_is_the_first_attempts_bind():
    # before: gloo-connect-full-mesh-failed (network-fabric-error), "set GLOO_SOCKET_IFNAME"
    d = _diag(HERE / "restart_after_own_server_port_taken.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert _variant(d) == "service-port-in-use"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 21
    assert d.root_cause.user_frame is not None
    assert d.root_cause.user_frame.line == 11


def test_counter_short_of_its_total_on_one_rank_before_a_stop_is_that_ranks_hang():
    # before: agent-received-signal (preemption-sigterm), no rank
    d = _diag(HERE / "counter_phase_one_rank_short.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "stopped-in-unfinished-phase"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 14
    assert "tokenized 40/40 files" in d.root_cause.fix.steps[0]


def test_every_rank_at_its_total_before_a_stop_stays_a_stop_from_outside():
    d = _diag(HERE / "counter_phase_all_at_total.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.initiating_rank is None


def test_makedirs_exist_ok_file_exists_is_a_file_at_the_path():
    # before: concurrent-create ("do it on one rank"), though exist_ok=True was already set
    d = _diag(HERE / "makedirs_exist_ok_path_is_file.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert _variant(d) == "makedirs-path-is-a-file"
    assert d.initiating_rank == 0
    assert "not a directory" in d.root_cause.fix.steps[0]


def test_makedirs_without_exist_ok_keeps_the_race_fix():
    d = _diag(HERE / "makedirs_without_exist_ok.log")
    assert d.root_cause is not None
    assert _variant(d) == "concurrent-create"


def test_caught_traceback_then_comma_training_finished_is_healthy():
    # before: user-code-exception on the caught FileExistsError
    d = _diag(HERE / "caught_traceback_then_training_finished.log")
    assert d.root_cause is None
    assert d.unclassified is None
    assert any("run_completed" in r for r in d.reasoning)


def test_own_watchdog_kill_while_a_rank_retried_names_the_retrying_rank():
    # before: worker-sigterm-exit on rank 0 ("find who sent the signal")
    d = _diag(SIGNATURES / "data/watchdog-killed-while-rank-retried-input.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "watchdog-killed-while-rank-retried-input"
    assert d.root_cause.failure_class == "data-error"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 12
    assert "part-0003.bin" in d.root_cause.fix.steps[0]


def test_own_watchdog_kill_with_no_rank_retrying_is_not_that_kind():
    d = _diag(SIGNATURES / "data/watchdog-killed-while-rank-retried-input.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature != "watchdog-killed-while-rank-retried-input"


def test_rank_blocked_on_its_own_prompt_is_told_to_drop_the_prompt_not_raise_the_timeout():
    # rank 2's input() prompt printed no newline, so rank 0's traceback is glued after it on
    # the same line; before: never-reached-barrier ("make that work shorter ... or raise the
    # timeout")
    d = _diag(HERE / "barrier_timeout_rank_blocked_on_prompt.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2
    assert _variant(d) == "rank-blocked-on-prompt"
    assert "Delete them? [y/N]" in d.root_cause.fix.steps[0]
    assert "A longer timeout cannot help" in d.root_cause.fix.steps[0]


def test_weights_only_unsupported_operand_118_is_a_git_lfs_pointer():
    # before: the generic "Read the 'WeightsUnpickler error:' text" and weights_only=False
    d = _diag(HERE / "weights_only_reads_lfs_pointer.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.initiating_rank == 1
    assert _variant(d) == "git-lfs-pointer"
    assert "git lfs pull" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith("git lfs pull")


def test_pool_child_segfault_explains_the_parents_broken_process_pool():
    # faulthandler's dump of a ProcessPoolExecutor child (no rank prefix), then rank 1's
    # BrokenProcessPool from pool.map; before: user-code-exception ("fix the input it names")
    d = _diag(HERE / "pool_child_segfault_broken_pool.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "segfault"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 2
    assert d.root_cause.user_frame is not None
    assert (d.root_cause.user_frame.func, d.root_cause.user_frame.line) == ("parse", 9)
