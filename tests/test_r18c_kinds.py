"""Round 18c kinds of initiating-rank reasoning (held-out set r18c).

1. An unranked NCCL WARN line (host:pid:tid [cudaDev], no rank) followed by the traceback
   of the one rank the log names (torchrun's ``[rank0]:`` prefix, mp.spawn's ``-- Process 3
   terminated with the following error:``): the root is that rank's error.

Fixtures: written in the tools' own wording (NCCL's bootstrap.cc / socket.h WARN lines,
torchrun's ``[rankN]:`` stderr prefix, torch.multiprocessing.spawn's report, Python's
traceback) with host names, paths and numbers of our own.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

# -- 1. the traceback after an unranked NCCL WARN names the rank ---------------------------


def _no_interface_then_rank_traceback(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        "gpu-a17:4411:4411 [0] bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface found",
        "gpu-a17:4411:4411 [0] NCCL INFO init.cc:84 -> 3",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/u/det/run_train.py", line 41, in <module>',
        f"{p}     trainer.fit()",
        f'{p}   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py",'
        " line 81, in wrapper",
        f"{p}     return func(*args, **kwargs)",
    ]


def test_rank_prefixed_traceback_after_unranked_nccl_warn_names_that_rank():
    text = "\n".join(_no_interface_then_rank_traceback(2)) + "\n"
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "next_traceback_rank"


SPAWN_OOM = [
    "trn-07:9120:9301 [6] include/alloc.h:124 NCCL WARN Failed to CUDA calloc async 4194304 bytes",
    "trn-07:9120:9301 [6] NCCL INFO include/alloc.h:239 -> 1",
    "Traceback (most recent call last):",
    '  File "main.py", line 120, in <module>',
    "    mp.spawn(worker, nprocs=8)",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py",'
    " line 150, in join",
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
    "torch.multiprocessing.spawn.ProcessRaisedException: ",
    "",
    "-- Process 6 terminated with the following error:",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py",'
    " line 69, in _wrap",
    "    fn(i, *args)",
    '  File "/home/u/proj/main.py", line 77, in worker',
    "    dist.all_reduce(torch.zeros(1, device='cuda'))",
]


def test_spawn_process_after_unranked_nccl_oom_names_that_process():
    """NCCL's buffer allocation failed on device 6 and mp.spawn reports process 6: the OOM
    is rank 6's own (a one-node spawn: process index = rank)."""
    d = diagnose_text("\n".join(SPAWN_OOM) + "\n", "spawn.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-cuda-oom"
    assert d.initiating_rank == 6
    assert d.initiator is not None and d.initiator.strategy == "next_traceback_rank"


def test_connect_refused_before_one_process_traceback_stays_unnamed():
    """A refused connection is one end of a broken link (named_by_root's rule for a ranked
    root holds for a carried one): the process that dialled is not shown to have broken it."""
    lines = [
        "ip-10-0-3-7:9120:9301 [5] include/socket.h:387 NCCL WARN Connect to 10.0.3.7<41733>"
        " failed : Connection refused",
        "",
        *SPAWN_OOM[2:],
    ]
    d = diagnose_text("\n".join(lines) + "\n", "spawn.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank is None


def test_two_ranks_named_no_rank_is_carried():
    """Rank 0's and rank 1's tracebacks both follow the unranked WARN: no rank is named."""
    lines = _no_interface_then_rank_traceback(0) + _no_interface_then_rank_traceback(1)[2:]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank is None


# -- 2. same failure on several ranks: printed first and srun's first exit agree -----------


def _ibv_twins(exit_order: tuple[int, int]) -> list[str]:
    lines = [
        "0: node-a:51198:5099 [0] NCCL INFO Channel 00 : 0[2000] -> 1[41000] via P2P/IPC/read",
        "4: node-b:62004:6107 [0] NCCL INFO Channel 00 : 4[2000] -> 5[41000] via P2P/IPC/read",
        "3: node-a:51201:5102 [3] NCCL INFO Channel 03 : 3[c1000] -> 4[2000] [send] via NET/IBext/0",
        "3: node-a:51201:5102 [3] ibvwrap.c:118 NCCL WARN Call to ibv_create_cq failed",
        "3: node-a:51201:5102 [3] NCCL INFO transport/net_ib.cc:601 -> 2",
        "7: node-b:62007:6110 [3] ibvwrap.c:118 NCCL WARN Call to ibv_create_cq failed",
        "7: node-b:62007:6110 [3] NCCL INFO transport/net_ib.cc:601 -> 2",
    ]
    hosts = {3: "node-a", 7: "node-b"}
    for task in exit_order:
        lines.append(f"srun: error: {hosts[task]}: task {task}: Exited with exit code 1")
    lines += [
        "srun: error: node-b: tasks 4-6: Terminated",
        "srun: error: node-a: tasks 0-2: Terminated",
        "srun: Force Terminated StepId=4411.0",
    ]
    return lines


def test_first_printed_and_first_exited_rank_breaks_the_tie():
    """Ranks 3 and 7 (GPU 3 of each node) fail alike, other ranks do not; rank 3 printed it
    first and srun reports task 3's own exit first: rank 3."""
    d = diagnose_text("\n".join(_ibv_twins((3, 7))) + "\n", "slurm.out", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank == 3
    assert d.initiator is not None and "printed it first" in d.initiator.why


def test_printed_first_but_exited_second_stays_undecided():
    """srun reports rank 7's exit first while rank 3 printed first: the log does not tell."""
    d = diagnose_text("\n".join(_ibv_twins((7, 3))) + "\n", "slurm.out", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank is None


# -- 3. watchdog counters that cross: a desync, and the rank that issued more --------------

CROSSED = (
    Path(__file__).resolve().parent.parent
    / "signatures"
    / "collective"
    / "watchdog-counters-crossed.positive.log"
)


def test_crossed_watchdog_counters_are_a_desync_of_the_rank_that_issued_more():
    """Rank 0 enqueued up to 48219 and completed 48212, stuck in 48213; rank 1 completed
    48214 (past 48213) and enqueued only up to 48217: the numbers are not the same
    collectives on both ranks; rank 0 issued collectives rank 1 never joined."""
    d = diagnose_text(CROSSED.read_text(encoding="utf-8"), "watchdog.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.signature == "watchdog-counters-crossed"
    assert d.initiating_rank == 0
    assert "issued collectives the others never joined" in d.initiator.why


def test_uncrossed_counters_stay_a_timeout():
    """Rank 0 enqueued nothing past the work it is stuck in (a slow host, not a desync)."""
    text = CROSSED.read_text(encoding="utf-8").replace(
        "last enqueued work: 48219", "last enqueued work: 48213"
    )
    d = diagnose_text(text, "watchdog.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"


# -- 4. NCCL's "Invalid rank requested : r/n": the rank out of range -----------------------


def test_invalid_rank_requested_is_a_config_error_of_that_rank():
    """Lightning started as global rank 1 of a world it computed as 1 ("MEMBER: 2/1"); NCCL
    refuses rank 1 of 1. Rank 0 of the same job passes the check: no every-rank copy."""
    lines = [
        "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/1",
        "worker-1:311:311 [0] NCCL INFO Bootstrap : Using [0]eth0:10.8.0.17<0>",
        "worker-1:311:311 [0] init.cc:981 NCCL WARN Invalid rank requested : 1/1",
        "Traceback (most recent call last):",
        '  File "/srv/app/fit.py", line 58, in main',
        "    trainer.fit(model)",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "pod.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "config-error"
    assert d.root_cause.signature == "nccl-invalid-rank-requested"
    assert d.initiating_rank == 1
    assert "num_nodes" in d.root_cause.fix.steps[0]


def test_srun_segfault_report_breaks_the_tie_too():
    """Every rank of one host (4-7) fails to connect to the other node; rank 4 printed it
    first and srun reports task 4's segmentation fault first: rank 4."""
    lines = [
        "0: node-a:7101:7190 [0] NCCL INFO Bootstrap : Using ib0:10.9.0.11<0>",
    ]
    for r in (4, 5, 6, 7):
        lines.append(
            f"{r}: node-b:{7200 + r}:{7300 + r} [{r - 4}] include/socket.h:406 NCCL WARN Connect"
            " to 10.9.0.11<40111> failed : No route to host"
        )
    lines += [
        "srun: error: node-b: task 4: Segmentation fault",
        "srun: Terminating job step 5512.1",
        "srun: error: node-b: tasks 5-7: Segmentation fault",
        "srun: error: node-a: tasks 0-3: Terminated",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "slurm.out", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank == 4


# -- 5. aws-ofi-nccl is not only EFA: a refused GPU-memory registration ---------------------

FIX_VARIANTS = Path(__file__).resolve().parent / "fix_variants" / "efa-ofi-error"


def test_cuda_memory_registration_refused_advises_gdr_off_not_efa():
    """'Unable to register memory (type = 2)' is NCCL_PTR_CUDA: GPUDirect RDMA registration,
    here under the CXI provider; the fix turns GDR off (workaround) and says not to force
    FI_PROVIDER=efa."""
    log = FIX_VARIANTS / "cuda-memory-registration.log"
    d = diagnose_text(log.read_text(encoding="utf-8"), "ofi.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "network-fabric-error"
    assert rc.fix.variant is not None and rc.fix.variant.id == "cuda-memory-registration"
    assert "NCCL_NET_GDR_LEVEL=LOC" in rc.fix.steps[0]
    assert not any("export FI_PROVIDER=efa" in s for s in rc.fix.steps)
    assert "NCCL_NET_GDR_LEVEL=LOC" in (rc.verify or "")
