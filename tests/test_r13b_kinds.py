"""Round-13 set B kinds (held-out logs scored blind at bad8d8e; see the set's MISSES.md).

Every log here is written for this test in the tools' own wording (PyTorch's
ProcessGroupNCCL watchdog, Horovod's stall_inspector.cc), never copied from a held-out log.
"""

from __future__ import annotations

from rootrank.analysis.compare import odd_one_out
from rootrank.engine import diagnose_text
from rootrank.model import Finding

# --- an OpType compared across different SeqNums ------------------------------------------

#: Ranks 1-2 wait in broadcast #7104; rank 0 completed it (and #7105) and waits in #7106, an
#: all-reduce of another size. Rank 3 is not in the paste.
LOG_RANK_AHEAD = """\
[rank1]:[E221 04:10:37.551028907 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7104, OpType=BROADCAST, NumelIn=2048000, NumelOut=2048000, Timeout(ms)=1800000) ran for 1800051 milliseconds before timing out.
[rank2]:[E221 04:10:37.551109231 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7104, OpType=BROADCAST, NumelIn=2048000, NumelOut=2048000, Timeout(ms)=1800000) ran for 1800049 milliseconds before timing out.
[rank0]:[E221 04:10:37.551307456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7106, OpType=ALLREDUCE, NumelIn=257, NumelOut=257, Timeout(ms)=1800000) ran for 1800040 milliseconds before timing out.
"""

#: The same ranks, but rank 0 waits in an all-reduce at the *same* SeqNum the others wait in
#: as a broadcast: a true desync, rank 0 the odd one out.
LOG_SAME_SEQNUM = LOG_RANK_AHEAD.replace("SeqNum=7106", "SeqNum=7104")


def _watchdog(rank: int, seqnum: int, optype: str) -> Finding:
    return Finding(
        signature="nccl-watchdog-timeout",
        failure_class="collective-timeout",
        title="t",
        role="symptom",
        severity="error",
        specificity=20,
        rank=rank,
        host=None,
        time=None,
        order=rank,
        captures={"seqnum": str(seqnum), "optype": optype},
    )


def test_odd_optype_on_a_rank_ahead_in_sequence_names_no_one():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 52, "ALLGATHER"),
    ]
    odd = odd_one_out(group, world=frozenset({0, 1, 2}))
    assert odd.rank is None and odd.undecided and odd.key == "optype"
    assert "SeqNum 52" in odd.why and "not a divergence" in odd.why


def test_odd_optype_at_the_same_seqnum_still_names_the_minority():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 50, "ALLGATHER"),
    ]
    assert odd_one_out(group).rank == 0


def test_odd_optype_on_a_rank_behind_still_names_it():
    group = [
        _watchdog(1, 50, "BROADCAST"),
        _watchdog(2, 50, "BROADCAST"),
        _watchdog(0, 48, "ALLREDUCE"),
    ]
    assert odd_one_out(group).rank == 0


def test_rank_ahead_of_the_waiting_ranks_is_not_the_initiator():
    d = diagnose_text(LOG_RANK_AHEAD)
    assert d.root_cause is not None
    # no desync is inferred from a rank that is only further along ("at the same SeqNum" is false)
    assert d.root_cause.signature != "watchdog-optype-divergence"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None


def test_rank_in_another_collective_at_the_same_seqnum_is_still_the_initiator():
    d = diagnose_text(LOG_SAME_SEQNUM)
    assert d.root_cause is not None and d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 0


# --- Horovod's stall-inspector map: a cut line, and the shutdown marker ---------------------

#: stall_inspector.cc prints "Missing ranks:" then one "<rank>: [<up to 6 names> ...]" line per
#: missing rank; TensorFlow's op names are long, and this line is cut before its "]".
LOG_HOROVOD_MAP_CUT = """\
[2021-03-04 10:12:40.118230: W /tmp/pip-req-build-8x2k1d/horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.
Missing ranks:
2: [DistributedGradientTape_Allreduce/cond_7/then/_52/DistributedGradientTape_Allreduce/cond_7/HorovodAllreduce_gradient_tape_conv2d_3_Conv2D_Conv2DBackpropFilter_0, DistributedGradientTape_Allreduce/cond_8/then/_60/Distributed
"""

#: The same report once rank 2 is past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS: "2!: [".
LOG_HOROVOD_MAP_SHUTDOWN = """\
[2021-03-04 10:22:40.118230: E /tmp/pip-req-build-8x2k1d/horovod/common/stall_inspector.cc:110] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.
Missing ranks:
2!: [allreduce.module.conv1.weight, allreduce.module.conv1.bias]
One or more rank (marked by "!") is stalled for longer than 600 seconds. Will shutdown.
"""


def test_horovod_missing_ranks_line_cut_before_its_bracket_names_the_rank():
    d = diagnose_text(LOG_HOROVOD_MAP_CUT)
    assert d.root_cause is not None and d.root_cause.signature == "horovod-stall"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 3


def test_horovod_shutdown_marked_rank_is_named():
    d = diagnose_text(LOG_HOROVOD_MAP_SHUTDOWN)
    assert d.root_cause is not None and d.root_cause.signature == "horovod-stall"
    assert d.initiating_rank == 2 and d.initiator is not None
    assert d.initiator.strategy == "named_in_message"


def test_fix_names_the_missing_rank_and_leaves_no_analysis_blank():
    for log, opening in (
        # the ops it misses are DistributedGradientTape allreduces (fix15r14: gradients-not-submitted)
        (LOG_HOROVOD_MAP_CUT, "The ops rank 2 never submitted are gradient allreduces"),
        (LOG_HOROVOD_MAP_SHUTDOWN, "Rank 2 never submitted the op"),
    ):
        d = diagnose_text(log)
        assert d.root_cause is not None and d.root_cause.fix is not None
        first = d.root_cause.fix.steps[0]
        assert first.startswith(opening)
        assert "<initiator_why>" not in " ".join(d.root_cause.fix.steps)


def test_horovod_stall_without_a_named_rank_quotes_no_analysis_value():
    header = LOG_HOROVOD_MAP_CUT.splitlines()[0] + "\n"
    d = diagnose_text(header)
    assert d.root_cause is not None and d.initiating_rank is None
    assert d.root_cause.fix is not None
    assert "<initiator_why>" not in " ".join(d.root_cause.fix.steps)


def test_variants_quoting_analysis_values_require_them():
    """A fix variant whose text quotes ``{initiating_rank}`` is chosen only when the analysis
    named a rank (``initiator_known: true`` or an ``initiator`` strategy list), and one quoting
    ``{initiator_why}`` only when its ``when`` asks about the analysis at all: otherwise the
    report prints the value as a blank to fill in (r13b #06: "never submitted the op
    (<initiator_why>)")."""
    import yaml
    from conftest import ROOT

    bad = []
    for path in sorted((ROOT / "signatures").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for variant in ((data or {}).get("fix") or {}).get("variants") or []:
            text = yaml.safe_dump(
                [variant.get("steps"), variant.get("code"), variant.get("verify")]
            )
            when = variant.get("when") or {}
            if "{initiating_rank}" in text and not (
                when.get("initiator_known") is True or "initiator" in when
            ):
                bad.append(f"{path.name}:{variant.get('id')}: {{initiating_rank}}")
            if "{initiator_why}" in text and not ("initiator_known" in when or "initiator" in when):
                bad.append(f"{path.name}:{variant.get('id')}: {{initiator_why}}")
    assert bad == []


# --- a serving engine's check replaces a torchrun command that carries flags ---------------

#: vLLM's multiprocessing workers (vllm/executor/multiproc_worker_utils.py) report an NCCL
#: failure while creating the tensor-parallel group.
LOG_VLLM_WORKER_NCCL = """\
INFO 03-11 09:14:02 config.py:1020] Defaulting to use mp for distributed inference
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method init_device: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), Traceback (most recent call last):
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.10/dist-packages/vllm/executor/multiproc_worker_utils.py", line 223, in _run_worker_process
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226]     output = executor(*args, **kwargs)
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 227, in NCCL_CHECK
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226]     raise RuntimeError(f"NCCL error: {error_str}")
(VllmWorkerProcess pid=4121) ERROR 03-11 09:14:09 multiproc_worker_utils.py:226] RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)
"""


def test_vllm_worker_nccl_error_is_verified_by_starting_the_engine():
    d = diagnose_text(LOG_VLLM_WORKER_NCCL)
    assert d.root_cause is not None and d.root_cause.failure_class == "nccl-system-error"
    assert d.root_cause.fix is not None
    verify = d.root_cause.verify
    assert "from vllm import LLM" in verify and "torchrun" not in verify


def test_torchrun_with_flags_before_the_script_is_one_command():
    from rootrank.entry.commands import _TORCHRUN_WHOLE

    m = _TORCHRUN_WHOLE.search(
        "NCCL_DEBUG=WARN torchrun --nnodes=<n> --nproc-per-node=<gpus> train.py  # ok"
    )
    assert m is not None and m.group(0) == "torchrun --nnodes=<n> --nproc-per-node=<gpus> train.py"


# --- pdsh prefixes that are IP addresses (a DeepSpeed hostfile written with IPs) ------------

#: DeepSpeed's pdsh launcher prefixes each line with the host as the hostfile names it.
LOG_PDSH_IP = """\
10.20.0.11: [2024-01-02 10:11:12,345] [INFO] [launch.py:146:main] WORLD INFO DICT: {'10.20.0.11': [0, 1], '10.20.0.12': [0, 1]}
10.20.0.12: [2024-01-02 10:11:12,351] [INFO] [launch.py:152:main] nnodes=2, num_local_procs=2, node_rank=1
10.20.0.12: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Of the allocated memory 75.40 GiB is allocated by PyTorch, and 1.11 GiB is reserved by PyTorch but unallocated.
"""


def test_pdsh_prefix_that_is_an_ip_address_is_the_host():
    d = diagnose_text(LOG_PDSH_IP, mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "cuda-oom"
    assert d.root_cause.host == "10.20.0.12"
    # the message is read without the prefix: the evidence column starts after it
    assert d.root_cause.evidence[0].text.startswith("torch.cuda.OutOfMemoryError")


def test_a_line_that_starts_with_an_address_and_a_port_is_no_prefix():
    from rootrank.ranks import _PREFIX

    assert _PREFIX.match("10.20.0.12: Traceback") is not None
    assert _PREFIX.match("10.20.0.12:29500 refused") is None
    assert _PREFIX.match("10.20.0.12 : x") is None


# --- "busy or unavailable" is a GPU that refuses this process, not "no GPU visible" --------


def _fix_of(name: str) -> tuple[str, str]:
    from conftest import ROOT

    d = diagnose_text((ROOT / "tests/fix_variants/no-cuda-gpus" / name).read_text())
    assert d.root_cause is not None and d.root_cause.signature == "no-cuda-gpus"
    variant = d.root_cause.fix.variant
    return (variant.id if variant else ""), d.root_cause.fix.steps[0]


def test_busy_gpu_during_torch_load_leads_with_map_location():
    variant, first = _fix_of("device-busy-at-load.log")
    assert variant == "device-busy-at-load"
    assert "map_location" in first and "Exclusive_Process" in first


def test_busy_gpu_elsewhere_leads_with_compute_mode():
    variant, first = _fix_of("device-busy.log")
    assert variant == "device-busy" and "compute_mode" in first


def test_no_gpu_visible_keeps_the_general_fix():
    variant, first = _fix_of("general.log")
    assert variant == "general" and "Print what the process sees" in first
