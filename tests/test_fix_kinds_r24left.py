"""Kinds the round-24 fix helpers left open, on fixtures from real torch 2.13 CPU runs beside
their signatures: a setting the failure names, printed with another value on the failing
rank's node, is a per-node environment mismatch (and the check runs without that value); a
BrokenPipeError raised writing to a child process's pipe is the child's exit, not a network
peer's (the child's own last words are quoted); a fingerprint mismatch whose head was cut
still names the sequence number or op type as what differs: a desync; a watchdog timeout on
a process group some library named (``PG GUID 7(mesh_cp)``) points at that library's
schedule, not the user's sampler (NCCL's own line format, our values); Ray's SYSTEM_ERROR
death with no memory record is a death of unknown cause (read the worker's own log), and a
worker's stack inside a collective points at a hang (Ray's and faulthandler's formats, our
values)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"
VARIANTS = Path(__file__).parent / "fix_variants"
HERE = Path(__file__).parent / "r24left"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def test_interface_set_on_one_node_only_is_a_per_node_environment_mismatch():
    # node 0 (one rank) sources an env file with GLOO_SOCKET_IFNAME=bond3; node 1's two
    # ranks print it unset (before: network-fabric-error, "set it to one that exists")
    d = _diag("launch/per-node-environment-mismatch.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "per-node-environment-mismatch"
    assert d.root_cause.failure_class == "rank-environment-mismatch"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 25
    assert {e.line for e in d.root_cause.evidence} >= {6, 7}
    caps = d.root_cause.captures
    assert (caps["env_name"], caps["env_value"], caps["env_other"]) == (
        "GLOO_SOCKET_IFNAME",
        "bond3",
        "unset",
    )
    step = d.root_cause.fix.steps[0]
    assert "Give every node the same environment: GLOO_SOCKET_IFNAME is bond3 on rank 0" in step
    assert "whose node differs" in step
    # the check never sets the value found wrong again
    assert d.root_cause.verify.startswith("env -u GLOO_SOCKET_IFNAME ./launch2.sh 0 1")
    assert "GLOO_SOCKET_IFNAME=bond3 ./" not in d.root_cause.verify


def test_two_ranks_of_the_odd_node_name_the_node_not_one_rank():
    # node 1's two ranks carry the setting and fail at one time: the value the error names
    # (the interface gloo could not find) marks them; which of the two started is not told
    d = _diag("launch/per-node-environment-mismatch.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "rank-environment-mismatch"
    assert d.initiating_rank is None
    assert d.root_cause.evidence[0].line == 28
    assert d.root_cause.captures["env_ranks"] == "ranks 2, 3"
    assert "enp9s0f1 on ranks 2, 3, whose node differs" in d.root_cause.fix.steps[0]


def test_the_same_setting_on_every_node_stays_a_missing_interface():
    d = _diag("launch/per-node-environment-mismatch.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-interface-not-found"
    assert d.root_cause.failure_class == "network-fabric-error"


def test_broken_pipe_writing_to_a_childs_stdin_is_the_childs_exit():
    # torchrun, 3 ranks: rank 2's filter child exits on a malformed record, rank 2's next
    # flush raises BrokenPipeError (before: elastic-child-failed, rank unknown, "a peer
    # closed the connection")
    d = _diag("process/subprocess-pipe-reader-exited.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "subprocess-pipe-reader-exited"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 24
    assert [e.line for e in d.root_cause.evidence][-1] == 14
    assert d.root_cause.captures["code"] == "proc.stdin.flush()"
    reader = d.root_cause.captures["reader"]
    assert "tokfilter: malformed record 2: '2 tok 2 extra', giving up" in reader
    assert "Fix why the child process of rank 2 exited" in d.root_cause.fix.steps[0]
    assert "tokfilter: malformed record 2" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=3 train.py  #")


def test_broken_pipe_on_a_socket_is_no_child_exit():
    d = _diag("process/subprocess-pipe-reader-exited.near-miss.log")
    sigs = {f.signature for f in d.findings}
    assert "subprocess-pipe-reader-exited" not in sigs
    assert d.root_cause is None or d.root_cause.signature != "subprocess-pipe-reader-exited"


def test_mp_spawn_pipe_write_quotes_the_child_not_spawns_header():
    # the SIGPIPE near-miss (mp.spawn, SIG_IGN kept): BrokenPipeError at checker.stdin.write;
    # the quoted words are the checker's, not mp.spawn's "-- Process 1 terminated" header
    d = _diag("process/worker-sigpipe-exit.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "subprocess-pipe-reader-exited"
    assert d.initiating_rank == 1
    assert "checker: cannot parse score 'nan' at row 4000" in d.root_cause.captures["reader"]


def test_cut_fingerprint_message_naming_sequence_and_op_type_is_a_desync():
    # the error line kept from "Collectives differ" on (before: elastic-child-failed)
    d = _diag("collective/fingerprint-desync.positive-2.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "fingerprint-desync"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank is None
    assert d.root_cause.evidence[0].line == 18
    caps = d.root_cause.captures
    assert (caps["seqnum"], caps["peer_seqnum"], caps["optype"], caps["peer_optype"]) == (
        "4",
        "0",
        "BARRIER",
        "GATHER",
    )


def test_a_hang_on_a_library_named_group_says_the_group_is_the_librarys():
    d = diagnose_paths([str(VARIANTS / "nccl-watchdog-timeout" / "library-group.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
    assert d.root_cause.evidence[0].line == 1
    assert d.root_cause.captures["pg_desc"] == "mesh_cp"
    assert d.root_cause.fix.variant.id == "library-group"
    step = d.root_cause.fix.steps[0]
    assert "ran on the process group `mesh_cp`, not on your default group" in step
    assert "drop_last" not in step.split("does not apply")[1]


def test_a_hang_on_the_default_group_keeps_the_all_to_all_advice():
    d = diagnose_paths([str(VARIANTS / "nccl-watchdog-timeout" / "alltoall.log")], mask=False)
    assert d.root_cause is not None
    assert "pg_desc" not in d.root_cause.captures
    assert d.root_cause.fix.variant.id == "alltoall"


def test_ray_system_error_without_a_memory_record_is_no_oom():
    # the stock list of causes in Ray's message is no evidence of the OOM killer
    d = _diag("process/ray-worker-killed.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "ray-worker-killed"
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank is None
    assert d.root_cause.evidence[0].line == 8
    step = d.root_cause.fix.steps[0]
    assert step.startswith("main.py:88") or "Read the dead worker's own log" in step
    assert "worker-*-40977.err" in step
    assert "only an OOM line there makes it memory" in step
    assert d.root_cause.captures["stack_hint"] == ""


def test_a_workers_stack_inside_a_collective_points_at_a_hang():
    d = diagnose_paths([str(HERE / "ray_worker_died_stack_in_collective.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "ray-worker-killed"
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.root_cause.evidence[0].line == 3
    hint = d.root_cause.captures["stack_hint"]
    assert "inside a collective (all_reduce, line 7:" in hint
    assert "a hang that ended in this death is more likely" in hint
    assert "inside a collective (all_reduce" in d.root_cause.fix.steps[0]


def test_a_memory_monitor_line_stays_the_root_of_a_ray_death():
    d = _diag("memory/ray-task-oom-killed.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "host-oom-killed"
