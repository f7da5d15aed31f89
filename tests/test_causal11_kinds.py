"""Kinds of miss left after round 10, each on text written here in the shape real tools and
scripts print (an application's per-rank debug line, torchrun's ``[rankN]:`` prefix):

A. a hang shown only by how the log ends: every rank prints the same per-rank line each
   iteration, one rank never does (or stopped while the others went on), and no error follows
   (rootrank.analysis.silent);
B. a stall report whose per-op ready sets are disjoint, one rank alone in its own op: the ranks
   wait in different collectives, a desync started by that rank, not a slow rank
   (``inferred: {differs: ready}``, rootrank.analysis.prepare);
C. a ZeroDivisionError after the run printed a count of steps, batches or samples as 0 is a
   division by that count: a configuration error (empty data, or a batch larger than it),
   not a bug in the line that divides (rootrank.analysis.prepare.zero_count_divisions);
D. an exception no signature names, printed after a cause the program survived (on no rank,
   not an exception's line), is still a finding, and the one that ended the worker wins
   (rootrank.analysis.prepare.exception_findings);
E. a GPU the log names whose architecture is newer than the CUDA build the log names explains
   the cuBLAS/cuDNN errors that follow (rootrank.analysis.prepare.arch_mismatches).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------


def _per_rank(lines: list[tuple[int, int]], fmt: str) -> str:
    return "".join(fmt.format(rank=r, n=n) + "\n" for r, n in lines)


def test_the_rank_missing_from_the_last_per_rank_lines_is_the_one_the_others_wait_for():
    # 6 ranks tagged "[RANK n]" by the script itself; rank 4 never prints
    order = [0, 3, 1, 5, 2]
    text = "epoch 3 begins\n" + _per_rank(
        [(r, 900 + r) for r in order], "[RANK {rank}] fetched record {n} in 0.41 s"
    )
    d = diagnose_text(text, "train.out", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "rank-silent-in-per-rank-lines"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 4
    assert d.root_cause.evidence[0].line == 6  # the log's last line


def test_a_rank_that_stopped_while_the_others_printed_twice_more_is_named():
    rows = [(r, 10) for r in range(4)] + [(r, 11) for r in (0, 2, 3)] + [(r, 12) for r in (3, 0, 2)]
    text = _per_rank(rows, "rank={rank} iteration {n} data ready")
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "rank-silent-in-per-rank-lines"
    assert d.initiating_rank == 1
    # "rank=N iteration M" is also each rank's own progress (rootrank.scan.body_rank): the
    # progress model then names rank 1 by its last step, two behind the others
    assert any(
        "at least 2 more times after rank 1" in r
        or "Rank 1 stopped making progress at step 10 while the other ranks reached step 12" in r
        for r in d.reasoning
    )


def test_torchrun_prefixes_count_as_the_per_rank_tag():
    text = _per_rank([(r, 77) for r in (0, 2, 3, 1, 5)], "[rank{rank}]: loader step {n} ok")
    d = diagnose_text(text, "run.log", mask=False)
    assert d.initiating_rank == 4
    assert d.root_cause.signature == "rank-silent-in-per-rank-lines"


def test_every_rank_present_is_no_hang():
    text = _per_rank([(r, 5) for r in (2, 0, 1, 3, 4)], "(rank {rank}) wrote shard {n}")
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause is None


def test_the_highest_rank_missing_proves_nothing_without_a_world_size():
    # ranks 0-4 print; rank 5 may simply not exist
    text = _per_rank([(r, 5) for r in range(5)], "(rank {rank}) wrote shard {n}")
    assert diagnose_text(text, "job.log", mask=False).root_cause is None


def test_a_world_size_shows_the_missing_highest_rank():
    text = "world_size=6\n" + _per_rank([(r, 5) for r in range(5)], "(rank {rank}) wrote shard {n}")
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "rank-silent-in-per-rank-lines"
    assert d.initiating_rank == 5


def test_a_log_that_goes_on_after_the_per_rank_lines_is_no_hang():
    text = _per_rank([(r, 5) for r in (0, 1, 3, 4, 5)], "rank {rank}: evaluated {n} batches")
    text += "evaluation done, accuracy 0.91\n"
    assert diagnose_text(text, "job.log", mask=False).root_cause is None


def test_two_ranks_missing_name_no_rank():
    text = _per_rank([(r, 5) for r in (0, 1, 4, 5, 6)], "rank {rank}: evaluated {n} batches")
    assert diagnose_text(text, "job.log", mask=False).root_cause is None


def test_a_rank_with_other_tagged_lines_at_the_end_is_not_silent():
    text = "rank 2: waiting on lock 1\n" + _per_rank(
        [(r, 5) for r in (0, 1, 3, 4)], "rank {rank}: evaluated {n} batches"
    )
    assert diagnose_text(text, "job.log", mask=False).root_cause is None


def test_an_error_in_the_log_is_the_cause_not_the_silence():
    text = _per_rank([(r, 5) for r in (0, 1, 3, 4)], "rank {rank}: evaluated {n} batches")
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/p/train.py", line 9, in <module>\n'
        "    load()\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/x.bin'\n" + text
    )
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause is None or d.root_cause.signature != "rank-silent-in-per-rank-lines"


# -- B ------------------------------------------------------------------------------------

STALL = (
    "[2026-05-02 07:30:12.551902: W horovod/common/stall_inspector.cc:107] One or more tensors"
    " were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting"
    " for remainder of ranks for more than 60 seconds. This may indicate that different ranks"
    " are trying to submit different tensors or that only subset of ranks is submitting"
    " tensors, which will cause deadlock. Stalled ops: {ops}\n"
)


def test_one_rank_alone_in_another_op_is_a_desync_on_that_rank():
    ops = (
        "broadcast.global_step [ready ranks: 7, 1, 0, 2, 3, 4, 6], "
        "allreduce.grad.encoder.layer.11 [ready ranks: 5], "
        "broadcast.epoch [ready ranks: 0, 1, 2, 3, 4, 6, 7]"
    )
    d = diagnose_text("step 88 loss 1.02\n" + STALL.format(ops=ops), "hvd.log", mask=False)
    assert d.root_cause.signature == "horovod-stall-different-ops"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 5
    assert "allreduce.grad.encoder.layer.11" in d.root_cause.fix.steps[0]
    assert "horovod-stall" in {f.signature for f in d.findings}


def test_ranks_missing_from_every_op_are_a_stall_not_a_desync():
    ops = "allreduce.a [ready ranks: 0, 1, 2], allreduce.b [ready ranks: 0, 1, 2]"
    d = diagnose_text(STALL.format(ops=ops), "hvd.log", mask=False)
    assert d.root_cause.signature == "horovod-stall"
    assert d.root_cause.failure_class == "collective-timeout"


def test_two_ranks_each_alone_name_no_desync_rank():
    ops = "allreduce.a [ready ranks: 3], allreduce.b [ready ranks: 1], allreduce.c [ready ranks: 0, 2]"
    d = diagnose_text(STALL.format(ops=ops), "hvd.log", mask=False)
    assert d.root_cause.signature == "horovod-stall"


# -- C ------------------------------------------------------------------------------------

TRAINER_EMPTY = """\
[INFO|trainer.py:2128] 2026-07-03 08:00:12,004 >> ***** Running training *****
[INFO|trainer.py:2129] 2026-07-03 08:00:12,004 >>   Num examples = 0
[INFO|trainer.py:2130] 2026-07-03 08:00:12,004 >>   Num Epochs = 3
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/exp/sft.py", line 61, in <module>
[rank1]:     trainer.train()
[rank1]:   File "/srv/exp/callbacks.py", line 33, in on_train_begin
[rank1]:     self.log_every = self.total // self.num_batches
[rank1]: ZeroDivisionError: integer division or modulo by zero
"""


def test_a_division_after_a_count_printed_as_zero_is_a_config_error():
    d = diagnose_text(TRAINER_EMPTY, "sft.log", mask=False)
    assert d.root_cause.signature == "zero-count-division"
    assert d.root_cause.failure_class == "config-error"
    assert d.root_cause.evidence[0].line == 9
    assert '"Num examples"' in d.root_cause.summary and "line 2" in d.root_cause.summary
    assert "user-code-exception" in {f.signature for f in d.findings}


def test_a_nonzero_count_leaves_the_division_a_plain_exception():
    text = TRAINER_EMPTY.replace("Num examples = 0", "Num examples = 1,024")
    d = diagnose_text(text, "sft.log", mask=False)
    assert d.root_cause is None or d.root_cause.signature != "zero-count-division"


def test_another_exception_after_a_zero_count_is_not_read_as_the_division():
    text = TRAINER_EMPTY.replace(
        "ZeroDivisionError: integer division or modulo by zero",
        "KeyError: 'input_ids'",
    )
    d = diagnose_text(text, "sft.log", mask=False)
    assert d.root_cause is None or d.root_cause.signature != "zero-count-division"


def test_counts_that_are_not_sizes_are_not_read_as_zero():
    from rootrank.engine import diagnose_text as dt

    text = "skipped steps: 0, overflow steps: 0\nstep 0 loss 2.31\nsteps per epoch: 120\n"
    d = dt(text, "x.log", mask=False)
    assert "printed-count-zero" not in {f.signature for f in d.findings}
    d = dt("steps per epoch: 0\n", "x.log", mask=False)
    assert [f.captures["what"] for f in d.findings] == ["steps per epoch"]
    assert d.root_cause is None  # a printed 0 alone is no failure


# -- D ------------------------------------------------------------------------------------

AGENT = "/usr/lib/python3/dist-packages/torch/distributed"
ADVISORY_THEN_CUSTOM = f"""\
Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current dype in MistralForCausalLM is torch.float32. You should run training or inference using Automatic Mixed-Precision via the `with torch.autocast(device_type='torch_device'):` decorator, or load the model with the `torch_dtype` argument.
wrapping model with FSDP (FULL_SHARD)
Traceback (most recent call last):
  File "/work/u/rl/run.py", line 88, in <module>
    reward = build_reward(cfg)
  File "/work/u/rl/reward.py", line 41, in build_reward
    raise RewardHeadMismatch(head.in_features, policy.hidden)
rl.errors.RewardHeadMismatch: reward head takes 4096 features, the policy gives 5120
E0704 11:02:09.900000 7100 {AGENT}/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 7131) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
run.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-07-04_11:02:09
  host      : node-7
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 7131)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_an_unnamed_exception_after_a_survived_advisory_is_the_root():
    d = diagnose_text(ADVISORY_THEN_CUSTOM, "job.log", mask=False)
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.evidence[0].line == 8
    assert d.root_cause.captures.get("exc_type") == "RewardHeadMismatch"
    assert "flash-attention-dtype-advisory" in {g.signature for g in d.collateral}


def test_a_cause_on_a_rank_still_hides_a_later_unnamed_exception():
    text = ADVISORY_THEN_CUSTOM.replace(
        "Flash Attention 2.0 only supports",
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.02 GiB is free.\nFlash Attention 2.0 only supports",
    )
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature != "user-code-exception"
    assert "user-code-exception" not in {f.signature for f in d.findings}


# -- E ------------------------------------------------------------------------------------

HOPPER_ON_117 = """\
PyTorch version: 1.13.1+cu117
CUDA used to build PyTorch: 11.7
GPU models and configuration:
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3
[rank1]: Traceback (most recent call last):
[rank1]:   File "/opt/llm/pretrain.py", line 301, in <module>
[rank1]:     loss = model(batch).loss
[rank1]: RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`
"""


def test_a_gpu_newer_than_the_cuda_build_explains_the_cublas_error():
    d = diagnose_text(HOPPER_ON_117, "env_and_run.txt", mask=False)
    assert d.root_cause.signature == "gpu-newer-than-cuda-build"
    assert d.root_cause.failure_class == "cuda-driver-or-arch-mismatch"
    assert d.root_cause.evidence[0].line == 2  # the CUDA build
    assert "sm_90" in d.root_cause.summary and "11.8" in d.root_cause.summary
    assert "cublas-error" in {g.signature for g in d.collateral}


def test_a_build_new_enough_for_the_gpu_leaves_the_cublas_error():
    text = HOPPER_ON_117.replace(
        "CUDA used to build PyTorch: 11.7", "CUDA used to build PyTorch: 12.1"
    )
    text = text.replace("1.13.1+cu117", "2.3.1+cu121")
    d = diagnose_text(text, "env_and_run.txt", mask=False)
    assert d.root_cause.signature == "cublas-error"


def test_gpu_and_build_facts_without_an_error_are_no_failure():
    text = "".join(HOPPER_ON_117.splitlines(keepends=True)[:5]) + "step 10 loss 2.1\n"
    d = diagnose_text(text, "env.txt", mask=False)
    assert d.root_cause is None


def test_the_two_facts_on_one_prose_line_and_an_old_wheel_tag():
    text = (
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
        "env: torch 1.7.1+cu101 on an RTX 4090\n"
    )
    d = diagnose_text(text, "issue.txt", mask=False)
    assert d.root_cause.signature == "gpu-newer-than-cuda-build"
    assert "RTX 4090" in d.root_cause.summary and "CUDA 10.1" in d.root_cause.summary
