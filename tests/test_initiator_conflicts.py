"""Where the log's own evidence conflicts or does not reach, no rank is named
(rootrank.analysis.initiator): the launcher saw another rank fail first; the group formed
although the rank-0-by-design set-up failed; the launcher's failed rank may not be in the
subgroup whose collective timed out. Fixtures are written here in the shapes torch 2.x
prints (glog-prefixed torchelastic agent lines, c10d socket warnings, the NCCL watchdog's
WorkNCCL line, torchelastic's failure summary)."""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- the agent saw another rank fail first ---------------------------------------------------

AGENT = "W0412 08:15:{s} 40211 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] "
OOM_ON_3_AGENT_SAW = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.50 GiB. GPU 3 has a"
    " total capacity of 79.15 GiB of which 4.12 GiB is free. Including non-PyTorch memory, this"
    " process has 75.02 GiB memory in use.\n"
    + AGENT.format(s="02.114000")
    + "Sending process 40230 closing signal SIGTERM\n"
    + AGENT.format(s="02.118000")
    + "Sending process 40232 closing signal SIGTERM\n"
    + AGENT.format(s="02.121000")
    + "Sending process 40233 closing signal SIGTERM\n"
    + "E0412 08:15:03.050000 40211 site-packages/torch/distributed/elastic/multiprocessing/api.py:869]"
    " failed (exitcode: 1) local_rank: {first} (pid: {pid}) of binary: /opt/conda/bin/python3.11\n"
)


def test_an_oom_on_one_rank_while_the_agent_saw_another_fail_first_names_no_rank():
    """Rank 3 prints the OOM, but torchrun's agent saw local rank 1 exit first with code 1
    and SIGTERMed the others; rank 1's own error is not in the paste. Either could have
    started it."""
    d = diagnose_text(OOM_ON_3_AGENT_SAW.format(first=1, pid=40231), mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "named_by_root"
    assert set(d.initiator.candidates) >= {1, 3}
    assert any("saw rank 1 exit first by itself (exit code 1)" in r for r in d.reasoning)


def test_an_oom_on_the_rank_the_agent_saw_fail_first_names_it():
    d = diagnose_text(OOM_ON_3_AGENT_SAW.format(first=3, pid=40233), mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 3


def test_the_agents_first_failure_that_the_log_explains_is_no_conflict():
    """Rank 1 exited first, but the log shows why: a peer closed its connection (a victim
    of rank 3's fault)."""
    text = OOM_ON_3_AGENT_SAW.format(first=1, pid=40231).replace(
        "W0412",
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection"
        " closed by peer [10.1.0.7]:41234\nW0412",
        1,
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 3


# -- a rank-0-by-design set-up failure, yet the group formed ----------------------------------

PORT_CLASH = (
    "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29611 (errno: 98 -"
    " Address already in use).\n"
    "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29611 (errno: 98"
    " - Address already in use).\n"
    "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network"
    " address.\n"
)
BARRIER_NCCL_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train.py", line 88, in <module>\n'
    "    main()\n"
    '  File "/home/u/train.py", line 41, in main\n'
    "    torch.distributed.barrier()\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", line 47,'
    " in wrapper\n"
    "    return func(*args, **kwargs)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line'
    " 3696, in barrier\n"
    "    work = default_pg.barrier(opts=opts)\n"
    "torch.distributed.DistBackendError: NCCL error in:"
    " ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, internal error, NCCL version"
    " 2.18.1\n"
)


def test_a_port_clash_after_which_the_group_ran_a_collective_names_no_rank():
    d = diagnose_text(PORT_CLASH + BARRIER_NCCL_ERROR, mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "implied_rank"
    assert "process group formed and ran anyway" in d.initiator.why


def test_a_port_clash_alone_is_still_rank_0_by_design():
    d = diagnose_text(PORT_CLASH, mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank == 0


# -- the launcher's failed rank and a subgroup's timeout -------------------------------------

SUMMARY_RANK_5 = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2026-03-02_14:20:41\n"
    "  host      : gpu-b07\n"
    "  rank      : 5 (local_rank: 1)\n"
    "  exitcode  : 1 (pid: 220419)\n"
    "  error_file: <N/A>\n"
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    "============================================================\n"
)
TIMEOUT = (
    "[rank2]:[E302 14:30:29.069865760 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught"
    " collective operation timeout: WorkNCCL(SeqNum=4, OpType=_ALLGATHER_BASE, NumelIn=1024,"
    " NumelOut={out}, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
)


def test_a_subgroup_timeout_does_not_take_the_launchers_failed_rank():
    """rank 2's all-gather ran in a group of 2 (NumelOut = 2 x NumelIn) in a job of at least
    6 ranks: nothing shows rank 5 is rank 2's partner."""
    d = diagnose_text(SUMMARY_RANK_5 + TIMEOUT.format(out=2048), mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank is None
    assert "group of 2 ranks (of at least 6)" in d.initiator.why


def test_a_timeout_over_the_whole_job_takes_the_launchers_failed_rank():
    """The same all-gather over 8 ranks (NumelOut = 8 x NumelIn): every rank is in it, so the
    rank the launcher saw fail is the one the group waited for."""
    d = diagnose_text(SUMMARY_RANK_5 + TIMEOUT.format(out=8192), mask=False)
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 5
