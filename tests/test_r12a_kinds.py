"""The kinds of miss heldout-r12a showed, each on text written here in the tools' real shape
(Megatron core's rerun state machine, NCCL's CUDACHECK warning under PyTorch's "Last error:",
c10d's ncclUniqueId broadcast through the store, TCPStore's bind failure, the
ProcessGroupWrapper's collective fingerprints):

A. a library wording: Megatron core's rerun state machine reports the local-gradient NaN check
   as "Rank N, node H, device D, iteration I: Unexpected result nan (message='found NaN in local
   grad norm ...')"; it is the NaN class and names rank N;
B. the log's own words say what to change: NCCL's "Cuda failure 802 'system not yet
   initialized'" is Fabric Manager's error, not a generic unhandled CUDA error.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------

MEGATRON_RERUN_NAN = """\
[default0]: [2026-03-04 10:12:01] iteration     2209/  100000 | consumed samples:      565504 | elapsed time per iteration (ms): 1402.3 | learning rate: 2.998E-04 | global batch size:   256 | lm loss: 2.911E+00 | loss scale: 1.0 | grad norm: 0.874 | number of skipped iterations:   0 | number of nan iterations:   0 |
[default5]:[rank5]: Traceback (most recent call last):
[default5]:[rank5]:   File "/opt/megatron-lm/pretrain_gpt.py", line 284, in <module>
[default5]:[rank5]:     pretrain(
[default5]:[rank5]:   File "/opt/megatron-lm/megatron/core/distributed/param_and_grad_buffer.py", line 181, in check_grads
[default5]:[rank5]:     rerun_state_machine.validate_result(
[default5]:[rank5]:   File "/opt/megatron-lm/megatron/core/rerun_state_machine.py", line 442, in validate_result
[default5]:[rank5]:     raise RuntimeError(full_message)
[default5]:[rank5]: RuntimeError: Rank 5, node gpu-node-03, device 5, iteration 2210: Unexpected result nan (message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel communication collective')
[default1]:[rank1]:[E304 10:22:05.118203451 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88410, OpType=_REDUCE_SCATTER_BASE, NumelIn=33554432, NumelOut=4194304, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.
[default2]:[rank2]:[E304 10:22:05.120938112 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88410, OpType=_REDUCE_SCATTER_BASE, NumelIn=33554432, NumelOut=4194304, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
"""


def test_a_megatron_rerun_state_nan_in_local_grad_norm_names_its_rank():
    d = diagnose_text(MEGATRON_RERUN_NAN, "train.log", mask=False)
    assert d.root_cause.signature == "loss-or-grad-nan"
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.root_cause.evidence[0].line == 9
    assert d.root_cause.captures["where"] == "grad norm"
    assert d.initiating_rank == 5
    assert "rank 5" in d.root_cause.fix.steps[0]


def test_a_the_enabled_mode_logger_line_is_read_too():
    text = (
        "[rank3]: [2026-03-04 10:12:01] ERROR Unexpected result nan on rank 3 at iteration #57"
        " invocation #1 (message='found NaN in local forward loss calculation')\n"
    )
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause.signature == "loss-or-grad-nan"
    assert d.root_cause.captures["where"] == "forward loss calculation"
    assert d.initiating_rank == 3


def test_a_a_spiky_but_finite_loss_is_no_nan():
    text = (
        "[rank0]: RuntimeError: Rank 0, node gpu-node-03, device 0, iteration 812: Unexpected"
        " result 41.7 (message='Spiky loss')\n"
    )
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause is None or d.root_cause.signature != "loss-or-grad-nan"


# -- B ------------------------------------------------------------------------------------

NCCL_802 = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/train.py", line 41, in <module>
[rank1]:     dist.barrier()
[rank1]:   File "/usr/local/lib/python3.11/dist-packages/torch/distributed/distributed_c10d.py", line 4687, in barrier
[rank1]:     work = group.barrier(opts=opts)
[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2
[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.
[rank1]: Last error:
[rank1]: Cuda failure 802 'system not yet initialized'
"""


def test_b_nccl_cuda_failure_802_is_fabric_manager():
    d = diagnose_text(NCCL_802, "train.log", mask=False)
    assert d.root_cause.signature == "fabric-manager-not-running"
    assert d.root_cause.failure_class == "gpu-unavailable"
    assert d.root_cause.evidence[0].line == 9
    assert "nvidia-fabricmanager" in d.root_cause.fix.steps[0]


def test_b_the_nccl_warn_line_of_an_older_nccl_is_read_too():
    text = (
        "gpu-node-01:2211:2290 [3] init.cc:1873 NCCL WARN Cuda failure 'system not yet"
        " initialized'\n"
    )
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause.signature == "fabric-manager-not-running"


def test_b_another_cuda_failure_stays_with_the_nccl_wrapper():
    d = diagnose_text(
        NCCL_802.replace("802 'system not yet initialized'", "1 'invalid argument'"),
        "train.log",
        mask=False,
    )
    assert d.root_cause.signature != "fabric-manager-not-running"
    assert d.root_cause.failure_class == "nccl-system-error"


# -- C ------------------------------------------------------------------------------------

STORE_RESET = """\
[2026-02-10 09:41:07,550] [INFO] [launch.py:256:main] process 80213 spawned with command: ['/usr/bin/python', '-u', 'sft.py', '--local_rank=0', '--deepspeed', 'ds_z2.json']
[2026-02-10 09:43:55,910] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 80213
  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 3696, in barrier
    work = default_pg.barrier(opts=opts)
RuntimeError: [5] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer. This may indicate a possible application crash on rank 0 or a network set up issue.
"""


def test_c_a_reset_store_connection_names_the_store_host_not_the_reporter():
    d = diagnose_text(STORE_RESET, "train.log", mask=False)
    assert d.root_cause.signature == "store-host-gone"
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.root_cause.evidence[0].line == 5
    assert d.initiating_rank == 0
    assert "rank 0's own output" in d.root_cause.fix.steps[0]


def test_c_a_store_timeout_stays_a_wait_timeout():
    text = STORE_RESET.replace("Connection reset by peer", "Socket Timeout")
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause.signature == "store-key-wait-timeout"
    assert d.root_cause.failure_class == "collective-timeout"


def test_c_the_store_hosts_own_fault_explains_the_reset():
    text = (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        " GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
    ) + STORE_RESET.replace("RuntimeError: [5]", "[rank5]: RuntimeError: [5]")
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 0


# -- E ------------------------------------------------------------------------------------

CUT_COMPARISON = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/app/train.py", line 88, in <module>
[rank1]:     trainer.fit(model)
[rank1]:   File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2730, in broadcast
[rank1]:     work = group.broadcast([tensor], opts)
[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=21, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), memory_format
"""


def test_e_the_reporter_of_a_cut_fingerprint_comparison_is_not_the_odd_rank():
    d = diagnose_text(CUT_COMPARISON, "train.log", mask=False)
    assert d.root_cause.signature == "collective-mismatch-unspecified"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.evidence[0].line == 6
    assert d.root_cause.captures["self_rank"] == "1"
    assert "rank" not in d.root_cause.captures
    assert d.initiating_rank is None


def test_e_the_old_inconsistent_wording_names_its_reporter_not_the_odd_rank():
    # torch 1.10-1.12 (ProcessGroupWrapper.cpp, CollectiveFingerPrint::verify): every rank that
    # all-gathers a fingerprint unequal to its own raises this with pg->getRank(), the odd rank
    # and the others alike; one such line names the reporter (round-16 set A, case 05)
    text = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running"
        " inconsistent collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10],"
        " TensorDtypes=Float)\n"
    )
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause.signature == "collective-mismatch-unspecified"
    assert d.root_cause.rank == 2
    assert d.initiating_rank is None
