"""Held-out r20f kinds (the set's MISSES.md), each on a fixture written from what the tools
print: an Ascend device-sync timeout (507046) raised from a collective's wait is a collective
timeout; a size mismatch inside optimizer.step is optimizer state restored for another
sharding; an RDMA transfer library's ibv work-completion status is a fabric error (and its
address lines are no training curves); an all-reduce of gradient buckets of different sizes
is a different set of parameters with gradients, not variable-size data."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.optimizer_state import world_ratio
from rootrank.engine import diagnose_paths
from rootrank.metrics import read_metrics

HERE = Path(__file__).parent / "r21b"


def _diag(name: str):
    return diagnose_paths([str(HERE / name)], mask=False)


def _variant(d) -> str | None:
    v = d.root_cause.fix.variant
    return v.id if v is not None else None


def test_an_npu_device_sync_timeout_in_a_barrier_wait_is_a_collective_timeout():
    # accelerate's main_process_first -> barrier -> work.wait() -> 507046 / EE1002
    d = _diag("npu_accelerate_barrier_507046.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "npu-device-sync-timeout"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 16
    assert _variant(d) == "collective-wait"
    steps = " ".join(d.root_cause.fix.steps)
    assert "HCCL_EXEC_TIMEOUT" in steps and "HCCL_CONNECT_TIMEOUT" in steps
    assert "did not reach this collective" in steps


def test_a_size_mismatch_inside_optimizer_step_is_optimizer_state_from_another_sharding():
    # the paste puts the error first and cuts the traceback at optimizer.step(closure=...)
    d = _diag("lightning_resume_optimizer_step.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "optimizer-state-size-mismatch"
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.root_cause.evidence[0].line == 1
    assert d.root_cause.captures["ratio"] == "4"
    steps = " ".join(d.root_cause.fix.steps)
    assert "factor of 4" in steps and "world size" in steps
    assert "LazyLinear" not in steps


def test_a_size_mismatch_in_a_forward_pass_stays_a_shape_mismatch():
    sig = Path(__file__).parents[1] / "signatures" / "checkpoint"
    d = diagnose_paths([str(sig / "optimizer-state-size-mismatch.near-miss.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "shape-mismatch"


def test_an_ibv_completion_status_from_a_kv_transfer_engine_is_a_fabric_error():
    d = _diag("mooncake_protection_error_kv_transfer.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "rdma-completion-status"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.root_cause.evidence[0].line == 3
    assert d.root_cause.captures["status_name"] == "local protection error"
    assert _variant(d) == "protection"
    assert "nvidia_peermem" in " ".join(d.root_cause.fix.steps)
    # the failed slices' dest_rkey/opcode/retry_cnt are ids and counters, not curves
    assert d.metrics == []


def test_a_line_that_prints_a_memory_address_yields_no_metrics():
    line = (
        "Worker: Process failed for slice (opcode: 1, source_addr: 0x7f00a1000400, "
        "length: 4096, dest_rkey: 88001, retry_cnt: 0): local protection error"
    )
    assert read_metrics(line) == []
    assert read_metrics("step 10 loss=2.5 lr=0.001") != []


def test_an_allreduce_of_gradient_buckets_of_different_sizes_names_the_parameter_set():
    d = _diag("watchdog_bucket_numel_moe.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "watchdog-numel-divergence"
    assert d.initiating_rank == 2
    assert _variant(d) == "gradient-buckets"
    steps = " ".join(d.root_cause.fix.steps)
    assert "experts" in steps and "find_unused_parameters=True" in steps
    assert "Pad variable-size tensors" not in steps


def test_a_small_allreduce_of_different_sizes_keeps_the_variable_size_data_fix():
    d = _diag("watchdog_small_numel_data.log")
    assert d.root_cause is not None
    assert d.initiating_rank == 2
    assert _variant(d) == "general"
    assert "Pad variable-size tensors" in " ".join(d.root_cause.fix.steps)


def test_a_proxy_connect_failure_over_a_socket_fallback_on_a_fabric_host_is_the_fabric_setup():
    # no net plugin, NET/IB found no device, NET/Socket over hsn* (Slingshot): the proxy's
    # Connect that fails later is read as that fallback; the rank is where it broke
    d = _diag("slingshot_socket_fallback_proxy_connect.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-socket-transport-on-fabric"
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.root_cause.evidence[0].line == 4
    assert d.initiating_rank == 3
    assert "nccl-proxy-operation-failed" in {g.signature for g in d.collateral}
    steps = " ".join(d.root_cause.fix.steps)
    assert "aws-ofi-nccl" in steps and "LD_LIBRARY_PATH" in steps and "NCCL_NET_PLUGIN" in steps


def test_a_socket_fallback_on_a_run_that_completed_is_no_root_cause():
    d = _diag("slingshot_socket_fallback_healthy.log")
    assert d.root_cause is None


def test_a_small_size_mismatch_in_a_cut_optimizer_step_keeps_the_optimizer_state_fix():
    # one layer's sizes (10 vs 2), not flat shards: shape-mismatch, its optimizer-state fix
    # chosen from the Lightning frames of the cut traceback
    d = _diag("lightning_head_resize_optimizer_step.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shape-mismatch"
    assert _variant(d) == "optimizer-state"
    assert "did this run load an optimizer state" in d.root_cause.fix.steps[0]


def test_world_ratio_allows_the_padding_of_flat_shards():
    assert world_ratio(56124554, 14031139) == 4  # ceil(N/6) against ceil(N/24)
    assert world_ratio(1048576, 262144) == 4
    assert world_ratio(16, 4) is None  # one layer's sizes
    assert world_ratio(3000000, 1000100) is None  # not a multiple within the padding
    assert world_ratio(100000000, 1000000) is None  # 100x: no world-size change
