"""Kinds of the round-25 held-out set b, on fixtures written in the tools' own formats with our
values: NCCL's ``Last error:`` detail pasted with blank lines between the lines of the message
still refines the generic invalid usage; which ranks NCCL found on one GPU decides the
duplicate-GPU fix (all with rank 0: one visible device; rank i with rank i + a node's GPU
count: two nodes seen as one host; a serving engine's processes: the engine's mapping); a
Ray worker's death printed before its peers' watchdog timeouts, with no teardown of a
timed-out process, is the cause and the timeouts collateral; a fault of a node's environment
with another rank of that host in the log names no rank; an out-of-memory before any step
with another rank failing in the same set-up names no rank."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.gpu_collision import collision_kind
from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"
HERE = Path(__file__).parent / "r25b"
VARIANTS = Path(__file__).parent / "fix_variants" / "nccl-duplicate-gpu"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_last_error_detail_after_blank_lines_refines_invalid_usage():
    # "invalid usage", blank, ncclInvalidUsage, blank, "Last error:", blank, the detail
    # (before: nccl-invalid-usage, "if it says Duplicate GPU ... set_device")
    d = _diag(HERE / "last-error-blank-lines.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-bootstrap-no-interface"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.root_cause.evidence[0].line == 10
    assert d.initiating_rank is None
    assert "NCCL_SOCKET_IFNAME" in d.root_cause.fix.steps[0]
    assert "set_device" not in d.root_cause.fix.steps[0]


def test_collision_kinds():
    assert collision_kind({(1, 0, "1b000"), (2, 0, "1b000"), (3, 0, "1b000")}) == "one-device"
    assert collision_kind({(12, 4, "9a000")}) == "node-stride"
    assert collision_kind({(9, 1, "34000")}) == "node-stride"
    # one pair with rank 0, or two ranks side by side: the pattern does not tell
    assert collision_kind({(1, 0, "41000")}) is None
    assert collision_kind({(3, 2, "e2000")}) is None
    # rank 0 paired with two ranks, but on two devices: not one device for all
    assert collision_kind({(1, 0, "1b000"), (2, 0, "3d000")}) is None


def test_every_rank_with_rank_0_is_one_visible_device():
    d = _diag(VARIANTS / "one-device.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-duplicate-gpu"
    assert d.root_cause.failure_class == "nccl-internal-or-invalid-usage"
    assert d.root_cause.evidence[0].line == 4
    assert d.initiating_rank is None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "one-device"
    step = d.root_cause.fix.steps[0]
    assert "Ranks 1 and 0, 2 and 0, 3 and 0 are all on one GPU (bus id 1b000)" in step
    assert "see only one GPU" in step
    assert d.root_cause.verify.startswith(
        'python -c "import torch; print(torch.cuda.device_count())"'
    )


def test_rank_i_with_rank_i_plus_node_size_is_two_nodes_seen_as_one_host():
    # (before: "call torch.cuda.set_device(LOCAL_RANK) in every process")
    d = _diag(VARIANTS / "nodes-seen-as-one-host.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-duplicate-gpu"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank is None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "nodes-seen-as-one-host"
    assert d.root_cause.title.startswith("NCCL: the same local GPU on two nodes")
    step = d.root_cause.fix.steps[0]
    assert "Ranks 12 and 4 use the same local GPU on two different nodes" in step
    assert "NCCL_HOSTID" in step and "runtime_env" in step
    assert d.root_cause.verify.startswith("ray status")


def test_serving_engine_processes_on_one_gpu_are_the_engine_mapping():
    d = _diag(VARIANTS / "serving-engine.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-duplicate-gpu"
    assert d.root_cause.evidence[0].line == 3
    assert d.initiating_rank is None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "serving-engine"
    step = d.root_cause.fix.steps[0]
    assert "the inference engine's own processes" in step
    assert "set_device in your script does not reach it" in step


def test_ray_worker_death_before_the_timeouts_is_the_cause():
    # (before: collective-timeout, "raise the timeout"; the death was its collateral)
    d = _diag(SIGNATURES / "process/ray-worker-died-peers-waited.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "ray-worker-died-peers-waited"
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.root_cause.evidence[0].line == 11
    assert d.initiating_rank is None
    assert any(c.signature == "nccl-watchdog-timeout" for c in d.collateral)
    assert "not the timeout" in d.root_cause.fix.steps[0]
    assert "dmesg" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith("ray job submit")


def test_ray_worker_death_after_a_teardown_stays_the_timeouts_collateral():
    # the timed-out worker was taken down by the watchdog: its death is the consequence
    d = _diag(SIGNATURES / "process/ray-worker-died-peers-waited.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 1
    assert all(f.signature != "ray-worker-died-peers-waited" for f in d.findings)


def test_node_environment_fault_with_another_rank_of_that_host_names_no_rank():
    # rank 5 fell back to loopback, rank 4 (same ip) failed connectFullMesh
    # (before: initiating rank 4, the first rank that printed an error)
    d = _diag(HERE / "node-env-same-host.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-connect-full-mesh-failed"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.root_cause.evidence[0].line == 2
    assert d.initiating_rank is None
    assert "fault of its node's environment" in d.initiator.why
    assert "rank 5 on the same host" in d.initiator.why
    assert any(c.signature == "gloo-hostname-loopback-fallback" for c in d.collateral)


def test_node_environment_fault_alone_on_its_host_keeps_the_rank():
    d = _diag(SIGNATURES / "network/gloo-connect-full-mesh-failed.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-connect-full-mesh-failed"
    assert "fault of its node's environment" not in (d.initiator.why or "")


def test_out_of_memory_before_any_step_with_another_rank_failing_names_no_rank():
    # rank 2's OOM in from_pretrained, rank 3's traceback cut in the same loading call
    # (before: initiating rank 2)
    d = _diag(HERE / "set-up-oom-two-ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.evidence[0].line == 7
    assert d.initiating_rank is None
    assert "rank 3 failed too before any step" in d.initiator.why
