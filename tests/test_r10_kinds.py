"""The kinds of miss heldout-r10 showed, each on text written here in the tools' real shape
(transformers' load-time advisory, torchrun's agent lines and summary, nccl-tests/NCCL WARN
lines, UCX's signal banner, c10d's socket warnings, srun --label prefixes):

A. an exception that ended a worker beats a warning printed earlier that the run survived,
   and a set-up logic error every rank hits names no rank from the launcher's first failure;
B. a fabric/transport error explains the CUDA faults printed after it;
C. the pid of UCX's ``[host:pid :n:tid]`` banner is tied to the agent's failed local rank;
D. a port clash names no rank when the launcher (not a worker) failed to bind, and an srun
   label of a torchrun agent is no global rank.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

AGENT = "/opt/venv/lib/python3.11/site-packages/torch/distributed"

# -- A ------------------------------------------------------------------------------------

WARNING_THEN_EXCEPTION = f"""\
W0301 09:12:01.100000 5100 {AGENT}/run.py:792] *****************************************
Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in LlamaForCausalLM is torch.float32. You should run training or inference using Automatic Mixed-Precision via the `with torch.autocast(device_type='torch_device'):` decorator, or load the model with the `torch_dtype` argument. Example: `model = AutoModel.from_pretrained("openai/whisper-tiny", attn_implementation="flash_attention_2", torch_dtype=torch.float16)`
Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in LlamaForCausalLM is torch.float32. You should run training or inference using Automatic Mixed-Precision via the `with torch.autocast(device_type='torch_device'):` decorator, or load the model with the `torch_dtype` argument. Example: `model = AutoModel.from_pretrained("openai/whisper-tiny", attn_implementation="flash_attention_2", torch_dtype=torch.float16)`
batches per epoch: 0 (dataset 12 samples, global batch 64, drop_last=True)
Traceback (most recent call last):
  File "/home/user/proj/train.py", line 210, in <module>
    main()
  File "/home/user/proj/train.py", line 188, in main
    warmup_epochs = cfg.warmup_steps // batches_per_epoch
ZeroDivisionError: integer division or modulo by zero
W0301 09:12:09.400000 5100 {AGENT}/elastic/multiprocessing/api.py:897] Sending process 5131 closing signal SIGTERM
E0301 09:12:09.900000 5100 {AGENT}/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 5132) of binary: /opt/venv/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-03-01_09:12:09
  host      : gpu-a
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 5132)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_the_exception_that_ended_the_worker_beats_an_earlier_survived_warning():
    d = diagnose_text(WARNING_THEN_EXCEPTION, "console.log", mask=False)
    # the exception, read as a division by the "batches per epoch: 0" printed before it
    assert d.root_cause.signature == "zero-count-division"
    assert d.root_cause.evidence[0].line == 10  # the ZeroDivisionError line
    assert "flash-attention-dtype-advisory" in {g.signature for g in d.collateral}


def test_a_set_up_logic_error_names_no_rank_from_the_launchers_first_failure():
    d = diagnose_text(WARNING_THEN_EXCEPTION, "console.log", mask=False)
    assert d.initiating_rank is None
    assert d.initiator.strategy == "elastic_summary"
    assert d.initiator.candidates == [1]
    assert "every rank runs the same set-up" in d.initiator.why


def test_an_environment_error_keeps_the_rank_the_launcher_saw_exit():
    # a lock one process could not take is that process's own, not every rank's (the
    # advisory lines are left out: with them, an exception no signature reads is not made a
    # finding at all while another cause is in the log)
    logic = "".join(
        line for line in WARNING_THEN_EXCEPTION.splitlines(keepends=True) if "Flash" not in line
    )
    d = diagnose_text(logic, "console.log", mask=False)
    assert d.root_cause.signature == "zero-count-division"
    assert d.initiating_rank is None
    text = logic.replace(
        "    warmup_epochs = cfg.warmup_steps // batches_per_epoch\n"
        "ZeroDivisionError: integer division or modulo by zero",
        "    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
    )
    d = diagnose_text(text, "console.log", mask=False)
    assert d.root_cause.signature == "user-code-exception"
    assert d.initiating_rank == 1


# -- B ------------------------------------------------------------------------------------

INFO = "gpu-b:51877:51877 [0] NCCL INFO comm 0x55d1c0 rank 1 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"
IB = (
    "gpu-a:40211:40290 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer"
    " 10.0.0.12<50123> with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
    "gpu-b:51877:51940 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer"
    " 10.0.0.11<50121> with status=12 opcode=1 len=0 vendor err 129 (Recv)\n"
)
CUDA = "gpu-b:51877:51877 [0] enqueue.cc:1532 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"
IB_THEN_CUDA = (
    IB
    + INFO * 4
    + CUDA
    + INFO * 4
    + "gpu-b: Test NCCL failure common.cu:1013 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'\n"
)


def test_a_transport_error_explains_the_cuda_faults_after_it():
    d = diagnose_text(IB_THEN_CUDA, "nccl-tests.out", mask=False)
    assert d.root_cause.failure_class == "network-fabric-error"
    rules = {(e.cause.signature, e.effect.signature, e.rule) for e in d.explanations}
    assert (
        d.root_cause.signature,
        "cuda-illegal-memory-access",
        "transport_explains_cuda_faults",
    ) in rules


def test_a_cuda_fault_printed_before_the_transport_error_is_not_explained_by_it():
    d = diagnose_text(CUDA + INFO * 4 + IB, "nccl-tests.out", mask=False)
    assert not any(e.rule == "transport_explains_cuda_faults" for e in d.explanations)
    assert d.root_cause.failure_class == "cuda-illegal-memory-access"


# -- C ------------------------------------------------------------------------------------

UCX_BANNER = f"""\
[gpu-a:2417 :2:2460] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)
==== backtrace (tid:   2460) ====
 0 0x0000000000042520 __sigaction()  ???:0
=================================
W0301 10:01:02.000000 2400 {AGENT}/elastic/multiprocessing/api.py:897] Sending process 2418 closing signal SIGTERM
E0301 10:01:03.000000 2400 {AGENT}/elastic/multiprocessing/api.py:869] failed (exitcode: -11) local_rank: 0 (pid: 2417) of binary: /opt/venv/bin/python
"""


def test_the_ucx_banner_gives_its_host_and_pid():
    t = RankTagger()
    tagged = t.tag("[gpu-a:2417 :2:2460] Caught signal 11 (Segmentation fault: x)", 1)
    assert (tagged.host, tagged.pid, tagged.rank) == ("gpu-a", 2417, None)
    t.tag(
        f"E0301 10:01:03.000000 2400 {AGENT}/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -11) local_rank: 3 (pid: 2417) of binary: /usr/bin/python",
        2,
    )
    assert t.pid_local_rank("gpu-a", 2417) == 3
    assert t.pid_local_rank("gpu-a", 2418) is None


def test_the_banners_pid_is_the_worker_the_agent_saw_fail():
    d = diagnose_text(UCX_BANNER, "job.log", mask=False)
    assert d.root_cause.signature == "native-signal-banner"
    assert d.root_cause.ranks == [0]
    assert d.initiating_rank == 0


def test_a_banner_of_another_pid_stays_on_no_rank():
    d = diagnose_text(UCX_BANNER.replace("(pid: 2417)", "(pid: 2419)"), "job.log", mask=False)
    banner = [f for f in d.findings if f.signature == "native-signal-banner"]
    assert banner and banner[0].rank is None


# -- D ------------------------------------------------------------------------------------

SOCKET = """\
[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29511 (errno: 98 - Address already in use).
[W socket.cpp:464] [c10d] The server socket has failed to bind to 0.0.0.0:29511 (errno: 98 - Address already in use).
[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.
"""

AGENT_TRACE = f"""\
Traceback (most recent call last):
  File "/opt/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "{AGENT}/run.py", line 879, in main
    run(args)
  File "{AGENT}/launcher/api.py", line 254, in launch_agent
    result = agent.run()
"""

LAUNCH_TRACE = f"""\
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "{AGENT}/launch.py", line 196, in <module>
    main()
  File "{AGENT}/launch.py", line 192, in main
    launch(args)
"""

WORKER_TRACE = f"""\
{{p}}Traceback (most recent call last):
{{p}}  File "/home/user/proj/train.py", line 30, in <module>
{{p}}    dist.init_process_group("nccl")
{{p}}  File "{AGENT}/distributed_c10d.py", line 1520, in init_process_group
{{p}}    store, rank, world_size = next(rendezvous_iterator)
"""


def test_a_port_clash_in_torchruns_agent_names_no_rank():
    d = diagnose_text(SOCKET + AGENT_TRACE, "run.log", mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank is None
    assert d.initiator.strategy == "implied_rank"


def test_a_port_clash_in_torch_distributed_launch_names_no_rank():
    d = diagnose_text(SOCKET + LAUNCH_TRACE, "run.log", mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank is None


def test_a_port_clash_in_an_untagged_worker_names_no_rank():
    d = diagnose_text(SOCKET + WORKER_TRACE.format(p=""), "run.log", mask=False)
    assert d.root_cause.failure_class == "port-in-use"
    assert d.initiating_rank is None
    assert "no line names that worker's rank" in d.initiator.why


def test_a_port_clash_alone_keeps_rank_0_by_design():
    # nothing shows which process bound the store: the signature's implied rank stands
    d = diagnose_text(SOCKET, "run.log", mask=False)
    assert d.initiating_rank == 0
    assert d.initiator.strategy == "implied_rank"


SRUN_TORCHRUN = f"""\
0: gpu-a:7001:7010 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000
0: Fatal Python error: Segmentation fault
0: 
0: Thread 0x00001484 (most recent call first):
0:   File "{AGENT}/distributed_c10d.py", line 3938 in barrier
0:   File "/home/user/proj/train.py", line 11 in main
0: 
0: E0301 11:00:01.000000 6990 {AGENT}/elastic/multiprocessing/api.py:833] failed (exitcode: -11) local_rank: 0 (pid: 7001) of binary: /opt/venv/bin/python
"""


def test_an_srun_label_of_a_torchrun_agent_is_no_global_rank():
    d = diagnose_text(SRUN_TORCHRUN, "slurm-4411.out", mask=False)
    assert d.root_cause.failure_class == "segfault"
    assert d.initiating_rank is None
    assert d.root_cause.ranks == []


def test_an_srun_label_of_a_plain_task_is_still_its_rank():
    # no torchrun agent: srun's tasks are the ranks themselves
    text = "".join(
        line for line in SRUN_TORCHRUN.splitlines(keepends=True) if "local_rank" not in line
    )
    d = diagnose_text(text, "slurm-4411.out", mask=False)
    assert d.root_cause.failure_class == "segfault"
    assert d.root_cause.ranks == [0]
