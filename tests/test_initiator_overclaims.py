"""Ranks the log cannot prove: a cut traceback, a SIGABRT summary, torchrun's own agent, a
GPU-capability error every rank hits, a paste inside another trace, a two-rank comparison,
a parameter marked ready twice. Logs written in the shape the tools print."""

from __future__ import annotations

from rootrank.engine import diagnose_text


def test_missing_reporter_does_not_name_a_rank_whose_traceback_is_cut(library):
    from rootrank.analysis.initiator import Case, missing_reporter
    from rootrank.analysis.prepare import Context
    from rootrank.model import Evidence, Finding
    from rootrank.scan import ScanState

    sig = library.signatures["nccl-watchdog-timeout"]
    found = [
        Finding.of(
            sig,
            rank=r,
            host=None,
            time=None,
            order=r,
            evidence=[Evidence("job.log", 10 + r, "watchdog", r)],
            captures={"seqnum": "7", "optype": "ALLREDUCE"},
        )
        for r in (0, 1, 3)
    ]
    state = ScanState()
    state.ranks_seen = {0, 1, 2, 3}
    ctx = Context(state, library, found, True)
    assert missing_reporter(Case(ctx, found[0], found)).rank == 2
    state.cut_traceback_ranks = {2}
    v = missing_reporter(Case(ctx, found[0], found))
    assert v.rank is None and v.undecided and v.candidates == (2,)


# -- torchelastic's summary of a SIGABRT is not the initiator ------------------------------

SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
pretrain.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-02-10_04:12:55
  host      : gpu-a12
  rank      : 2 (local_rank: 2)
  exitcode  : {code} (pid: 41877)
  error_file: <N/A>
  traceback : {tb}
============================================================
"""


def test_a_summary_that_only_shows_a_sigabrt_names_no_rank():
    d = diagnose_text(
        SUMMARY.format(code=-6, tb="Signal 6 (SIGABRT) received by PID 41877"), mask=False
    )
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "elastic_summary" and d.initiator.candidates == [2]


def test_a_summary_that_shows_a_real_exit_code_names_its_rank():
    d = diagnose_text(
        SUMMARY.format(
            code=1,
            tb="To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        ),
        mask=False,
    )
    assert d.initiating_rank == 2


# -- a launcher agent is no training rank ---------------------------------------------------

AGENT_PORT = """\
W0302 08:00:01.100000 7001 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
Traceback (most recent call last):
  File "/opt/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main
    run(args)
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 528, in _rendezvous
    rdzv_info = spec.rdzv_handler.next_rendezvous()
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29511, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use
"""


def test_a_port_in_use_in_torchruns_own_agent_names_no_rank():
    d = diagnose_text(AGENT_PORT, mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "implied_rank"


def test_a_port_in_use_in_a_worker_is_rank_0_by_design():
    worker = (
        AGENT_PORT.replace(
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", line 528, in _rendezvous\n'
            "    rdzv_info = spec.rdzv_handler.next_rendezvous()\n"
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous\n',
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 189, in _create_c10d_store\n',
        )
        .replace('  File "/opt/venv/bin/torchrun", line 8, in <module>\n    sys.exit(main())\n', "")
        .replace(
            '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main\n    run(args)\n',
            '  File "/home/u/train.py", line 30, in main\n    dist.init_process_group("nccl")\n',
        )
    )
    assert "elastic" not in worker.split("\n", 1)[1] and "bin/torchrun" not in worker
    d = diagnose_text(worker, mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank == 0


# -- a GPU-capability error is every rank's -------------------------------------------------


def test_a_gpu_capability_error_on_the_one_rank_pasted_names_no_rank():
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/u/sft.py", line 77, in forward\n'
        "[rank2]:     out = flash_attn_func(q, k, v, causal=True)\n"
        "[rank2]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.signature == "flash-attention-unsupported"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "named_by_root" and d.initiator.candidates == [2]


def test_a_shape_error_of_the_same_class_without_the_tag_still_names_its_rank():
    # loss-target-shape shares the class but is the rank's own batch: not every rank's
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/u/train.py", line 70, in train\n'
        "[rank2]:     loss = criterion(logits, target)\n"
        "[rank2]: RuntimeError: 0D or 1D target tensor expected, multi-target not supported\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "unsupported-shape-or-dtype"
    assert d.initiating_rank == 2


# -- a paste that starts inside another trace's C++ frame list ------------------------------

IMA = (
    "[rank1]:[E302 10:00:05.120000000 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg)"
    " Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal"
    " memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the"
    " stacktrace below might be incorrect.\n"
    "\n"
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43"
    " (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7e8 in libc10.so)\n"
)


def test_a_paste_that_starts_inside_an_earlier_cpp_frame_list_names_no_rank():
    cut = "frame #7: <unknown function> + 0x129c6c (0x798ee1329c6c in /lib/x86_64-linux-gnu/libc.so.6)\n\n"
    d = diagnose_text(cut + IMA, mask=False)
    assert d.root_cause.failure_class == "cuda-illegal-memory-access"
    assert d.root_cause.evidence[0].line == 3
    assert d.initiating_rank is None
    assert "line 1" in d.initiator.why
    whole = diagnose_text(IMA, mask=False)  # the same error with nothing cut before it
    assert whole.initiating_rank == 1


# -- a message that compares two ranks ------------------------------------------------------

PARAM = (
    "RuntimeError: [3]: params[12] in this process with sizes [517, 384] appears not to match"
    " sizes of the same param in process 0.\n"
)


def test_a_two_rank_comparison_alone_names_no_rank():
    d = diagnose_text("python -m torch.distributed.launch --nproc_per_node=4 search.py\n" + PARAM)
    assert d.root_cause.signature == "ddp-param-shape-mismatch"
    assert d.root_cause.captures["peer_rank"] == "0"
    assert d.initiating_rank is None
    assert sorted(d.initiator.candidates) == [0, 3]


def test_the_comparison_names_its_rank_when_the_log_shows_the_others():
    others = "".join(f"[rank{r}]: building supernet with 24 blocks\n" for r in (0, 1, 2))
    d = diagnose_text(others + "[rank3]: " + PARAM, mask=False)
    assert d.initiating_rank == 3


def test_a_parameter_marked_ready_twice_on_the_one_rank_pasted_names_no_rank():
    text = (
        "[rank5]: Traceback (most recent call last):\n"
        '[rank5]:   File "/home/u/grpo.py", line 211, in step\n'
        "[rank5]:     loss.backward()\n"
        "[rank5]: RuntimeError: Expected to mark a variable ready only once. This error is caused"
        " by one of the following reasons: 1) Use of a module parameter outside the `forward`"
        " function.\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "ddp-marked-ready-twice"
    assert d.initiating_rank is None and d.initiator.candidates == [5]


# -- a traceback the end of the log cuts is no exception --------------------------------------


def _bad_record(rank: int) -> list[str]:
    p = f"[rank{rank}]: "
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train.py", line 41, in <module>',
        f"{p}    main()",
        f'{p}  File "/home/u/proj/train.py", line 16, in load_batch',
        f'{p}    raise ValueError(f"corrupt record in shard-{{rank:05d}}.jsonl")',
        f"{p}ValueError: corrupt record in shard-0000{rank}.jsonl line 29",
    ]


def _waiting_in_all_reduce(rank: int) -> list[str]:
    """A rank's traceback from the collective it waited in, as far as the paste goes (no
    exception line: ``head -n 20`` cut it)."""
    p = f"[rank{rank}]: "
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train.py", line 41, in <module>',
        f"{p}    main()",
        f'{p}  File "/home/u/proj/train.py", line 32, in main',
        f"{p}    dist.all_reduce(loss)",
        f'{p}  File "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py", line 81,'
        " in wrapper",
    ]


STEPS = [f"[rank{r}]: step 3 loss 0.41" for r in range(3)]


def test_a_traceback_cut_after_the_root_cause_is_no_failure_of_its_rank():
    """``head -n 20`` of a log where rank 2 raised and rank 0's traceback from the
    all_reduce it waited in follows, cut by the end: rank 2 is the initiating rank, and
    nothing says rank 0 failed with an exception."""
    lines = STEPS + _bad_record(2) + _waiting_in_all_reduce(0)
    d = diagnose_text("\n".join(lines) + "\n", "half.log", mask=False)
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.evidence[0].line == 9 and d.root_cause.rank == 2
    assert d.initiating_rank == 2
    assert not any("also failed with an exception" in r for r in d.reasoning)


def test_a_traceback_cut_that_began_before_the_root_cause_still_leaves_the_order_open():
    """Rank 0's traceback began before rank 2's exception line (the two interleave) and the
    log cuts it: its error may have come first, so no rank is named."""
    waiting = _waiting_in_all_reduce(0)
    lines = STEPS + waiting[:2] + _bad_record(2) + waiting[2:]
    d = diagnose_text("\n".join(lines) + "\n", "half.log", mask=False)
    assert d.root_cause.signature == "user-code-exception" and d.root_cause.rank == 2
    assert d.initiating_rank is None
    assert any(
        "rank 0 also failed with an exception no signature explains" in r.lower()
        for r in d.reasoning
    )


def test_a_cut_traceback_after_a_root_cause_raised_inside_a_collective_still_counts():
    """The root cause was raised inside dist.barrier (NCCL could not set up its shared memory,
    torch/distributed/distributed_c10d.py): every rank that enters the barrier raises it, so
    rank 3's traceback cut after it may be its own copy, and no rank is named."""
    p = "[rank1]: "
    root = [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train.py", line 20, in <module>',
        f"{p}    dist.barrier()",
        f'{p}  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",'
        " line 4551, in barrier",
        f"{p}    work = group.barrier(opts=opts)",
        f"{p}torch.distributed.DistBackendError: NCCL error in:"
        " /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system error (run"
        " with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        f"{p}ncclSystemError: System call (e.g. socket, malloc) or external library call failed"
        " or device error. ",
        f"{p}Last error:",
        f"{p}Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637888)",
    ]
    cut = [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/home/u/proj/train.py", line 20, in <module>',
    ]
    d = diagnose_text("\n".join(root + cut) + "\n", "shm.log", mask=False)
    assert d.root_cause.signature == "nccl-shm-no-space" and d.root_cause.rank == 1
    assert d.initiating_rank is None
    assert any("rank 3 also failed" in r.lower() for r in d.reasoning)
