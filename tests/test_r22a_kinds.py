"""Kinds left from the held-out r21a/r21b sets, each with fixtures captured from real runs of this
project's own (torch 2.13 CPU, gloo, torchrun or mp.spawn; the scripts' own names and values):

- one rank's host memory climbing in its own progress lines (``rss 3.96G``) until the job was
  killed (bash's ``Killed``): a host OOM kill on that rank
  (``signatures/memory/host-memory-climb-killed.{positive,near-miss}.log``);
- a rank killed by SIGBUS after it logged mapping a file (``np.memmap``) and rewriting it:
  the file changed under the mapping, not /dev/shm
  (``signatures/process/mapped-file-sigbus.{positive,positive-2,near-miss}.log``);
- a segfault in the first attempt of a two-agent run under ``--max-restarts`` whose restart then
  failed: the agent's ``local_rank: 0`` takes that agent's node offset from its own summary
  entry of the last attempt (``tests/r22a/two-agents-restart-segfault-node1.log``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.metrics import HOST_MEMORY, read_metrics

SIGNATURES = Path(__file__).resolve().parents[1] / "signatures"


def _diagnose(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_host_memory_fields_are_read_in_gib():
    assert dict(read_metrics("[rank 1] step 14 loss 0.2582 rss 3.96G"))[HOST_MEMORY] == 3.96
    assert dict(read_metrics("epoch 0 step 5 loss 2.258 rss 939MB"))[HOST_MEMORY] == 939 / 1024
    got = dict(read_metrics("Batch 0/185400 loss 9.74 lr 0.00065 rank 0 RSS MEM USE: 46.51G"))
    assert got[HOST_MEMORY] == 46.51 and got["loss"] == 9.74
    # the kernel's OOM report names other processes' rss: not a rank's own print
    assert read_metrics("Killed process 7 (python) anon-rss:31451456kB, file-rss:74816kB") == []


def test_one_ranks_host_memory_climbing_until_the_kill_is_a_host_oom_on_that_rank():
    d = _diagnose(SIGNATURES / "memory" / "host-memory-climb-killed.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "host-memory-climb-killed",
        "host-oom-killed",
    )
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 13  # rank 1's first line past twice its start (1.52G)
    assert "3.96" in rc.fix.steps[0]
    # the shell's Killed line (the SIGKILL reading, no rank) stays as collateral
    assert "worker-sigkill-exit" in {c.signature for c in d.collateral}


def test_a_climb_in_a_run_that_finished_is_no_kill():
    d = _diagnose(SIGNATURES / "memory" / "host-memory-climb-killed.near-miss.log")
    assert d.root_cause is None
    assert "host-memory-climb-killed" not in {f.signature for f in d.findings}


def test_a_stated_kill_after_a_one_rank_climb_names_that_rank():
    # a user's paste: their words and rank 0's progress lines, no launcher output
    lines = ["rank 0 will be killed by the system after some hours; rank 1 is fine:"]
    for i, (m0, m1) in enumerate([(5.1, 5.0), (5.2, 5.1), (19.7, 5.1), (48.3, 5.0), (96.0, 5.1)]):
        lines.append(f"Batch 0/{100 + i} loss 4.5 rank 0 RSS MEM USE: {m0}G")
        lines.append(f"Batch 0/{100 + i} loss 4.4 rank 1 RSS MEM USE: {m1}G")
    d = diagnose_text("\n".join(lines) + "\n", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "host-memory-climb-killed"
    assert d.initiating_rank == 0
    assert rc.evidence[0].line == 6


def test_every_rank_climbing_alike_names_no_rank():
    lines = ["the job gets Killed after an hour"]
    for i, m in enumerate([1.0, 1.1, 4.0, 9.0, 16.0]):
        for r in range(2):
            lines.append(f"[rank {r}] step {i} loss 1.0 rss {m}G")
    d = diagnose_text("\n".join(lines) + "\n", mask=False)
    assert "host-memory-climb-killed" not in {f.signature for f in d.findings}


def test_a_sigbus_on_a_rank_that_mapped_a_file_is_the_files_not_shm():
    d = _diagnose(SIGNATURES / "process" / "mapped-file-sigbus.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == ("mapped-file-sigbus", "segfault")
    assert d.initiating_rank == 2
    lines = [e.line for e in rc.evidence]
    assert lines[:2] == [6, 15]  # its np.memmap line, then its last own line (the refresh)
    assert "refreshing data/part-2.u16" in rc.fix.steps[0]


def test_a_sigbus_with_no_mapping_on_its_rank_stays_shared_memory():
    d = _diagnose(SIGNATURES / "process" / "worker-sigbus-exit.positive.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-sigbus-exit"


def test_a_refresh_by_rename_does_not_crash():
    d = _diagnose(SIGNATURES / "process" / "mapped-file-sigbus.near-miss.log")
    assert d.root_cause is None


def test_an_earlier_attempts_local_rank_takes_its_agents_node_offset():
    # two terminals of one run (torchrun --nnodes=2 --nproc-per-node=2 --max-restarts=1):
    # node 1's local rank 0 (global 2) segfaulted in attempt 0; the restart failed in gloo's
    # connectFullMesh. The agent (pid 2116) that saw the crash later names its worker pid 2342
    # as rank 2 (local_rank 0) in its summary: local rank 0 of that agent is global rank 2.
    d = _diagnose(
        Path(__file__).resolve().parent / "r22a" / "two-agents-restart-segfault-node1.log"
    )
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-segfault"
    assert rc.evidence[0].line == 153  # attempt 0's "failed (exitcode: -11) local_rank: 0"
    assert d.initiating_rank == 2
    assert any("agent (pid 2116)" in line for line in d.reasoning)
