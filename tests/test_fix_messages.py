"""The fix says what the log's own words and the analysis call for (issue 15, heldout-r8's
grades): IB completion status codes, NCCL's "no algorithm/protocol available", a driver
library's missing symbol, SIGBUS in shared memory, the shape of a watchdog hang (uneven
epoch, all-to-all, first collective with no rank missing), the change as the first step, and
values a wrapped line carries. The logs are written from what NCCL, torch, rdma-core and the
launchers print (tests/fix_variants/, tests/fix_messages/)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.variants import uneven_progress
from rootrank.progress import Progress

HERE = Path(__file__).resolve().parent
VARIANTS = HERE / "fix_variants"


def _rc(*parts: str):
    d = diagnose_paths([str(VARIANTS.joinpath(*parts))])
    assert d.root_cause is not None
    return d.root_cause


def _step(rc, n: int = 0) -> str:
    return rc.fix.steps[n]


def test_ib_status_selects_the_layer():
    rc = _rc("ib-completion-error", "retry-exceeded.log")
    assert (rc.signature, rc.captures["status"]) == ("ib-completion-error", "12")
    assert rc.fix.variant.why == "the log gives status 12"
    assert "IBV_WC_RETRY_EXC_ERR" in _step(rc) and "drain the host" in _step(rc)
    assert "perfquery -x" in _step(rc, 1)
    rc = _rc("ib-completion-error", "local-protection.log")
    assert rc.captures["status"] == "4" and rc.fix.variant.id == "local-protection"
    assert "nvidia_peermem" in _step(rc) and "NCCL_NET_GDR_LEVEL=LOC" in _step(rc, 1)
    assert rc.verify.startswith("NCCL_NET_GDR_LEVEL=LOC NCCL_DEBUG=INFO torchrun")
    # a flush (status 5) follows another error: the general checklist
    assert _rc("ib-completion-error", "general.log").fix.variant.id == "general"


def test_nccl_no_algorithm_read_from_the_warn_line_of_the_group():
    rc = _rc("nccl-invalid-usage", "no-algorithm.log")
    # the root is the DistBackendError (line 9); the WARN line (4) is another finding of it
    assert (rc.evidence[0].line, rc.rank) == (9, 4)
    assert rc.fix.variant.why == 'the message says "no algorithm/protocol available"'
    assert "Unset NCCL_ALGO and NCCL_PROTO" in _step(rc)
    assert "Duplicate GPU" not in " ".join(rc.fix.steps)
    assert rc.verify.startswith("env -u NCCL_ALGO -u NCCL_PROTO")


def test_invalid_argument_under_srun_is_the_task_count():
    rc = _rc("nccl-invalid-usage", "srun-task-count.log")
    assert rc.fix.variant.id == "srun-task-count"
    assert "world size = srun's task count" in _step(rc)
    assert "SLURM_NTASKS" in rc.fix.code["pytorch"]
    assert rc.verify.startswith("NCCL_DEBUG=WARN srun --ntasks=<world size>")


def test_a_driver_library_symbol_is_the_driver_not_an_extension():
    rc = _rc("undefined-symbol", "driver-library.log")
    assert rc.captures == {
        "library": "libnvidia-ml.so.1",
        "symbol": "nvmlDeviceGetGpuFabricInfoV",
    }
    assert "Upgrade the NVIDIA driver" in _step(rc)
    assert "--force-reinstall" not in " ".join(rc.fix.steps)
    assert "flash_attn" not in rc.verify and "nvmlDeviceGetGpuFabricInfoV" in rc.verify
    rc = _rc("undefined-symbol", "general.log")
    assert rc.fix.variant.id == "general" and "c++filt" in " ".join(rc.fix.steps)


def test_sigbus_is_shared_memory():
    rc = _rc("native-signal-banner", "sigbus-shared-memory.log")
    assert (rc.captures["signal"], rc.captures["what"]) == ("7", "Bus error")
    assert "--shm-size" in _step(rc) and "NCCL_SHM_DISABLE=1" in _step(rc, 1)
    assert rc.verify.startswith("df -h /dev/shm && ")
    assert _rc("native-signal-banner", "general.log").fix.variant.id == "general"


def test_watchdog_variants_follow_the_shape_of_the_hang():
    rc = _rc("nccl-watchdog-timeout", "first-collective-p2p.log")
    assert (rc.captures["seqnum"], rc.fix.variant.id) == ("1", "first-collective-p2p")
    assert "NCCL_P2P_DISABLE=1" in _step(rc) and rc.verify.startswith(
        "NCCL_P2P_DISABLE=1 timeout 300 torchrun --nproc-per-node=gpu /tmp/p2p_check.py"
    )
    # rank 0 missing from SeqNum 1: a rank busy before its first collective, not the P2P test
    assert (
        _rc("nccl-watchdog-timeout", "first-collectives.log").fix.variant.id == "first-collectives"
    )
    rc = _rc("nccl-watchdog-timeout", "uneven-epoch.log")
    assert (
        rc.fix.variant.why == "the ranks' progress shows different numbers of batches in the epoch"
    )
    assert "drop_last=True" in _step(rc) and "Join" in _step(rc)
    rc = _rc("nccl-watchdog-timeout", "alltoall.log")
    assert (rc.captures["optype"], rc.fix.variant.id) == ("ALLTOALL_BASE", "alltoall")
    assert "the same number of times" in _step(rc)


def _p(rank, step, total):
    return Progress(rank, step, total, None, "x.log", 1, "tqdm")


def test_uneven_progress():
    assert uneven_progress({0: _p(0, 1563, 1563), 1: _p(1, 1563, 1564)})
    assert uneven_progress({0: _p(0, 500, 500), 1: _p(1, 499, 500)})
    assert not uneven_progress({0: _p(0, 499, 500), 1: _p(1, 499, 500)})
    assert not uneven_progress({0: _p(0, 500, 500), 1: _p(1, 500, 500)})
    assert not uneven_progress({0: _p(0, 12, None), 1: _p(1, 9, None)})
    assert not uneven_progress({None: _p(None, 3, 9), 0: _p(0, 9, 9)})


def test_the_first_step_is_the_change():
    # the change first, the check after it
    pos = HERE.parent / "signatures"
    d = diagnose_paths([str(pos / "process" / "worker-sigkill-exit.positive.log")])
    steps = d.root_cause.fix.steps
    assert "Cut host RAM" in steps[0] and "dmesg" in steps[1]
    d = diagnose_paths([str(pos / "launch" / "store-barrier-timeout.positive.log")])
    assert d.root_cause.fix.steps[0].startswith("4 of 8 ranks reached init_process_group")
    assert "world_size=8" in d.root_cause.fix.steps[2]
    rc = _rc("port-in-use", "second-launcher.log")
    assert rc.fix.variant.id == "second-launcher"
    assert "process group formed and ran afterwards" in rc.fix.variant.why
    assert "(line 11)" in rc.fix.variant.why  # the DistBackendError after the bind failure
    # no group formed after the bind failure (a second job may hold the port): a free port
    assert _rc("port-in-use", "general.log").fix.variant.id == "general"
    assert "Start exactly one launcher per node" in _step(rc)
    assert "port 23456" in _step(rc) and "free port" not in _step(rc).split(":")[0]
    assert rc.verify.startswith("srun --ntasks-per-node=1")


def test_a_wrapped_watchdog_line_fills_the_seqnum():
    d = diagnose_paths([str(HERE / "fix_messages" / "watchdog-wrapped.log")])
    rc = d.root_cause
    assert (rc.signature, rc.rank, rc.evidence[0].line) == ("nccl-watchdog-timeout", 9, 1)
    assert rc.captures["seqnum"] == "4411"  # the wrapped tail completes the header's captures
    assert "SeqNum 4411" in rc.verify and "<seqnum>" not in rc.verify
