"""The kinds of miss heldout-r11b showed, each on text written here in the tools' real shape
(ProcessGroupNCCL's watchdog and PG-status lines, a terminal's fixed-width wrap, c10d's
TCPStore rendezvous traceback):

A. a watchdog's PG status (``last enqueued work`` / ``last completed work``) compared across
   the ranks of one process group: the rank that never completed a work its peers completed,
   and enqueued nothing after it, is the one the others wait for; a broadcast, or ranks that
   both enqueued as far, or two groups, say nothing;
B. a rendezvous connect timeout whose cause is the user's own call: the old c10d wording
   (``RuntimeError: connect() timed out.``) is a rendezvous failure, and a call that asks
   for ``rank >= world_size`` (no process is rank 0, none hosts the TCPStore) selects the
   fix that names that call instead of a network checklist;
C. a traceback pasted without its "Traceback" header, or shifted right as a whole, still
   gives its frames to its exception; an OOM while the weights are moved onto the GPU
   (``Module._apply``) selects the fix about the model's size, not the batch's;
D. the evidence selects the family's variant: a segfault the kernel places in PyTorch's own
   library is a torch build/driver problem (not "rebuild your extensions"); a stuck
   watchdog after ranks already exited the program is a teardown problem.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.entry.variants import rank_outside_world


def _wrap(line: str, width: int) -> str:
    """``line`` cut every ``width`` characters, as a terminal copy does."""
    return "\n".join(line[i : i + width] for i in range(0, len(line), width))


def _status(rank: int, pg: int, work: int, queued: int, done: int, width: int = 0) -> str:
    line = (
        f"[rank{rank}]:[E0412 03:15:{10 + rank:02d}.000100 ProcessGroupNCCL.cpp:2190] "
        f"[PG ID {pg} PG GUID {pg + 3} Rank {rank % 4}]  failure detected by watchdog at work "
        f"sequence id: {work} PG status: last enqueued work: {queued}, last completed work: {done}"
    )
    return _wrap(line, width) if width else line


def _caught(rank: int, seq: int, op: str = "ALLGATHER") -> str:
    return (
        f"[rank{rank}]:[E0412 03:15:{10 + rank:02d}.000050 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
        f"NumelIn=2048, NumelOut=8192, Timeout(ms)=900000) ran for 900031 milliseconds before "
        f"timing out."
    )


def test_the_rank_that_never_completed_its_peers_work_is_the_initiator_even_when_wrapped():
    # ranks 4 and 6 completed work 902 and wait in 903; rank 5 never finished 902 and
    # enqueued nothing after it; every status line is wrapped at 110 columns
    log = "\n".join(
        [
            "step 3400/9000 | loss 2.113 | 11.2 s/it",
            _caught(6, 903),
            _status(6, 3, 903, 903, 902, width=110),
            _status(4, 3, 903, 903, 902, width=110),
            _status(5, 3, 902, 902, 901, width=110),
        ]
    )
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiator.rank == 5
    assert d.initiator.strategy == "behind_in_completed_work"
    assert d.root_cause.fix.variant.id == "behind-in-group"
    # the wrapped tail filled the captures the first line could not hold
    lagging = next(f for f in d.findings if f.rank == 5)
    assert lagging.captures["last_completed"] == "901"
    assert lagging.captures["pg"] == "3"


def test_a_broadcast_root_ahead_of_its_receiver_names_no_rank():
    # the root of a broadcast completes before its receivers: a one-work lag shows nothing
    log = "\n".join(
        [
            _caught(0, 411, "BROADCAST"),
            _status(0, 2, 411, 411, 410),
            _caught(1, 410, "BROADCAST"),
            _status(1, 2, 410, 410, 409),
        ]
    )
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"


def test_ranks_that_both_enqueued_as_far_name_no_rank():
    # both hosts went on enqueueing (up to 980): the lag is in the transport, not one rank
    log = "\n".join([_status(2, 1, 411, 980, 410), _status(3, 1, 410, 980, 409)])
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"
    assert d.initiator.rank is None


def test_different_process_groups_are_not_compared():
    log = "\n".join([_status(2, 1, 411, 411, 410), _status(3, 2, 410, 410, 409)])
    d = diagnose_text(log + "\n", "job.out", mask=False)
    assert d.initiator.strategy != "behind_in_completed_work"
    assert d.initiator.rank is None


# -- B ------------------------------------------------------------------------------------

SITE = "/usr/local/lib/python3.9/site-packages/torch/distributed"


def _store_timeout(call: str) -> str:
    return f"""\
rank 3 starting, 4 processes, master 192.168.7.2:29501
Process Process-4:
Traceback (most recent call last):
  File "/usr/local/lib/python3.9/multiprocessing/process.py", line 315, in _bootstrap
    self.run()
  File "/usr/local/lib/python3.9/multiprocessing/process.py", line 108, in run
    self._target(*self._args, **self._kwargs)
  File "/srv/asr/launch_workers.py", line 54, in work
    {call}
  File "{SITE}/distributed_c10d.py", line 439, in init_process_group
    store, rank, world_size = next(rendezvous_iterator)
  File "{SITE}/rendezvous.py", line 146, in _tcp_rendezvous_handler
    store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)
RuntimeError: connect() timed out.
"""


def test_a_call_asking_for_a_rank_outside_the_world_is_the_cause_at_the_users_line():
    log = _store_timeout('dist.init_process_group("gloo", init_method=url, rank=4, world_size=4)')
    d = diagnose_text(log, "worker.log", mask=False)
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.root_cause.signature == "tcpstore-connect-timeout"
    assert d.root_cause.evidence[0].line == 14
    assert d.root_cause.fix.variant.id == "rank-outside-world"
    first = d.root_cause.fix.steps[0]
    assert "launch_workers.py:54" in first
    assert "asks for rank 4 in a world of 4" in first
    assert d.initiator is None or d.initiator.rank is None


def test_a_rank_inside_the_world_keeps_the_reachability_fix():
    log = _store_timeout('dist.init_process_group("gloo", init_method=url, rank=3, world_size=4)')
    d = diagnose_text(log, "worker.log", mask=False)
    assert d.root_cause.signature == "tcpstore-connect-timeout"
    assert d.root_cause.fix.variant.id == "general"


def test_rank_outside_world_reads_literal_keyword_arguments_only():
    assert rank_outside_world(["init_process_group('nccl', world_size=2, rank=2)"]) == (
        "init_process_group('nccl', world_size=2, rank=2)",
        2,
        2,
    )
    assert rank_outside_world(["init_process_group('nccl', world_size=8, rank=7)"]) is None
    # a rank computed at run time, or another keyword ending in rank, tells nothing
    assert rank_outside_world(["init_process_group('nccl', world_size=2, rank=args.rank)"]) is None
    assert rank_outside_world(["setup(local_rank=3, world_size=2)"]) is None


# -- C ------------------------------------------------------------------------------------

TORCH_NN = "/opt/py311/lib/python3.11/site-packages/torch/nn/modules/module.py"
HEADLESS_LOAD_OOM = f"""\
INFO 2025-04-02 09:14:55 loading UNet3D weights (fp32) onto cuda:0
[rank0]:   File "/work/vgen/sample.py", line 88, in main
[rank0]:     unet = UNet3D.from_config(cfg).to(device)
[rank0]:   File "{TORCH_NN}", line 1340, in to
[rank0]:     return self._apply(convert)
[rank0]:   File "{TORCH_NN}", line 900, in _apply
[rank0]:     module._apply(fn)
[rank0]:   File "{TORCH_NN}", line 1326, in convert
[rank0]:     return t.to(
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 MiB. GPU 0 has a total \
capacity of 15.77 GiB of which 40.12 MiB is free. Of the allocated memory 15.20 GiB is allocated by PyTorch, \
and 9.50 MiB is reserved by PyTorch but unallocated.
"""


def test_a_headless_traceback_gives_its_frames_and_a_weight_load_oom_its_own_fix():
    d = diagnose_text(HEADLESS_LOAD_OOM, "sample.log", mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.rank, rc.evidence[0].line) == ("cuda-oom", 0, 10)
    assert [f["func"] for f in rc.frames] == ["main", "to", "_apply", "convert"]
    assert rc.user_frame is not None and (rc.user_frame.file, rc.user_frame.line) == (
        "/work/vgen/sample.py",
        88,
    )
    assert rc.fix.variant.id == "at-load"
    assert "micro-batch" not in rc.fix.steps[0]


SHIFTED = """\
   loss = criterion(out, target)
  File "/home/user/vision/train.py", line 141, in step
        return F.cross_entropy(out, target.long())
  File "/usr/lib/python3/dist-packages/torch/nn/functional.py", line 3029, in cross_entropy
        return torch._C._nn.cross_entropy_loss(input, target, weight)
  RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
"""


def test_an_exception_line_indented_like_its_frames_ends_the_shifted_traceback():
    d = diagnose_text(SHIFTED, "paste.txt", mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.evidence[0].line) == ("device-mismatch", 6)
    assert [f["func"] for f in rc.frames] == ["step", "cross_entropy"]
    assert rc.user_frame is not None and rc.user_frame.line == 141


# -- D ------------------------------------------------------------------------------------


def test_a_segfault_in_torchs_own_library_selects_the_torch_build_fix():
    log = (
        "epoch 2 iter 5100 loss 0.0912\n"
        "[Tue Mar  4 02:11:09 2025] python3[88012]: segfault at 0 ip 00007f0a11c3e7aa sp "
        "00007ffc8a0e1f30 error 4 in libc10.so[7f0a11c00000+a1000] likely on CPU 3 (core 3, socket 0)\n"
    )
    d = diagnose_text(log, "dmesg.txt", mask=False)
    assert d.root_cause.signature == "worker-segfault"
    assert d.root_cause.fix.variant.id == "torch-library"
    assert "libc10.so" in d.root_cause.fix.steps[0]
    other = log.replace("libc10.so", "libbitsandbytes_cuda121.so")
    d = diagnose_text(other, "dmesg.txt", mask=False)
    assert d.root_cause.fix.variant.id == "general"


def _stuck(pg: str) -> str:
    return (
        f"[rank2]:[E0909 12:40:00.000100 ProcessGroupNCCL.cpp:1555] [PG ID 5 PG GUID 21({pg}) "
        "Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress "
        "in monitoring enqueued collectives.\n"
    )


EXIT_WARNING = (
    "[rank{r}]:[W0909 12:31:5{r}.000100 ProcessGroupNCCL.cpp:1496] Warning: WARNING: "
    "destroy_process_group() was not called before program exit, which can leak resources.\n"
)


def test_a_stuck_watchdog_after_ranks_exited_is_a_teardown_problem():
    log = "Run finished: 3 epochs\n" + EXIT_WARNING.format(r=0) + EXIT_WARNING.format(r=1)
    d = diagnose_text(log + _stuck("PIPELINE_PARALLEL"), "job.log", mask=False)
    assert d.root_cause.signature == "nccl-heartbeat-monitor-timeout"
    assert d.root_cause.fix.variant.id == "after-exit"
    assert "destroy_process_group()" in d.root_cause.fix.steps[1]
    # the same report with no rank at exit: the general advice
    d = diagnose_text("epoch 1 step 40\n" + _stuck("EXPERT_PARALLEL"), "job.log", mask=False)
    assert d.root_cause.fix.variant.id == "general"


def test_the_exit_warning_alone_is_no_root_cause():
    d = diagnose_text("done\n" + EXIT_WARNING.format(r=0), "job.log", mask=False)
    assert d.root_cause is None
    assert [f.signature for f in d.findings] == ["process-group-not-destroyed"]
