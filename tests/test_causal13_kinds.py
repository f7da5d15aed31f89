"""The kinds of miss round 13 fixes, each on text written here in the tools' real shape:

A. torchelastic's failure summary quotes the failing rank's own traceback (its error file,
   ``py_callstack``, every line indented two more spaces: ``_format_failure`` in
   torch/distributed/elastic/multiprocessing/errors/__init__.py): the quoted traceback is
   that rank's, its exception is the root cause and the summary is collateral; a paste cut
   inside it still shows the message's tail (a Dynamo graph-break error) and the user's
   frame.
B. a launcher's negative exit code is the signal that killed the worker (Python's
   ``Popen.returncode``), read the same way for every launcher (torchrun, composer,
   DeepSpeed): -7 SIGBUS, -6 SIGABRT, -11 SIGSEGV..., when nothing deeper is in the log.
C. a log that shows one rank's output only (torchrun ``--local-ranks-filter 0``, a launch
   script's ``LOG_RANK=0``, rank 0 alone printing) of a job with more ranks (``NGPU=2``,
   ``--nproc-per-node 4``, a world size) names no rank: the one visible rank's copy of the
   error is no evidence of who started it; a single-rank job, a log where the launcher
   names the rank, or a rank a filter would not keep keep their rank.
D. torchrun ``--tee`` prefixes each ``\\n``-ended line of a worker once: the ``\\r`` frames of
   a progress bar after the first are that worker's too; and two jobs' logs concatenated
   with no launcher banner between them are two runs when the later prints another world
   size after the first failed: the last is diagnosed, the first named as left out.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------

_SUMMARY_HEAD = """\
W1203 10:00:01.000000 1234 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2001 closing signal SIGTERM
E1203 10:00:01.500000 1234 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 2002) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-03_10:00:01
  host      : node01
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 2002)
  error_file: /tmp/torchelastic_abc/none_xyz/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "/usr/lib/python3.12/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/home/u/train.py", line 40, in main
      loss = model(batch).sum()
    File "/home/u/model.py", line 12, in forward
      return self.proj(x)
"""


def test_the_summary_s_quoted_exception_is_its_rank_s_root_cause():
    log = (
        _SUMMARY_HEAD
        + "  RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 256x128)\n"
        + "  \n"
        + "=" * 60
        + "\n"
    )
    d = diagnose_text(log, "torchrun.log", mask=False)
    assert d.root_cause.signature == "shape-mismatch"
    assert d.root_cause.evidence[0].line == 24
    assert d.root_cause.evidence[0].rank == 1
    assert d.initiating_rank == 1
    assert (d.root_cause.user_frame.file, d.root_cause.user_frame.line) == ("/home/u/model.py", 12)
    assert "elastic-child-failed" in {f.signature for f in d.collateral}


def test_a_cut_quoted_traceback_s_graph_break_tail_is_the_rank_s_compile_error():
    # the paste lost the exception line: the message's tail (a Dynamo graph break, each line
    # indented two spaces by torchelastic) is what is left of it
    log = _SUMMARY_HEAD + (
        "    Hint: Use `torch.cond` to express dynamic control flow.\n"
        "  \n"
        "    Developer debug context: attempted to jump with TensorVariable()\n"
        "  \n"
        "   For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html\n"
        "  \n"
        "  from user code:\n"
        '     File "/home/u/model.py", line 14, in forward\n'
        "      if gate.sum() > 0:\n"
    )
    d = diagnose_text(log, "torchrun.log", mask=False)
    assert d.root_cause.signature == "dynamo-graph-break-error"
    assert d.root_cause.failure_class == "compile-dynamo-error"
    assert d.root_cause.evidence[0].line == 28
    assert d.initiating_rank == 1
    # the "Hint:" line at the frames' indent is a message line, not an exception (read as
    # one, the innermost user frame would be its frames' model.py:12)
    assert (d.root_cause.user_frame.file, d.root_cause.user_frame.line) == ("/home/u/model.py", 14)
    assert "elastic-child-failed" in {f.signature for f in d.collateral}


def test_a_graph_break_logged_by_torch_logging_is_no_error():
    log = (
        "[rank0]:W1203 09:30:03.010000 51002 torch/_dynamo/exc.py:514] [1/0] Graph break from "
        "`Tensor.item()`, consider setting torch._dynamo.config.capture_scalar_outputs = True\n"
        "[rank0]:W1203 09:30:03.010000 51002 torch/_dynamo/exc.py:514] [1/0]  For more details "
        "about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html\n"
        "step 10 | loss 3.912\nstep 20 | loss 3.544\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause is None
    assert "dynamo-graph-break-error" not in {f.signature for f in d.findings}


# -- B ------------------------------------------------------------------------------------


def _signal_case(line: str, before: str = "") -> tuple[str | None, int | None, int | None]:
    d = diagnose_text("Building trainer...\n" + before + line + "\n", "train.log", mask=False)
    root = d.root_cause
    if root is None:
        return None, None, d.initiating_rank
    return root.signature, root.evidence[0].line, d.initiating_rank


def test_composer_s_negative_exit_code_is_the_signal():
    line = "ERROR:composer.cli.launcher:Rank 1 crashed with exit code -11."
    assert _signal_case(line) == ("worker-segfault", 2, 1)


def test_deepspeed_s_negative_return_code_is_the_signal():
    # deepspeed/launcher/launch.py sigkill_handler: "{cmd} exits with return code = {code}"
    line = (
        "[2026-12-03 10:01:02,311] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3',"
        " '-u', 'train.py', '--local_rank=1', '--deepspeed'] exits with return code = -7"
    )
    sig, where, _ = _signal_case(line)
    assert (sig, where) == ("worker-sigbus-exit", 2)


def test_an_abort_after_a_watchdog_timeout_is_the_timeout_s():
    # SIGABRT is raised by the process itself after it printed why: the watchdog's timeout
    timeout = (
        "[rank3]:[E1203 11:30:11.901000 7715 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1,"
        " NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.\n"
    )
    line = (
        "E1203 11:40:12.418000 7701 torch/distributed/elastic/multiprocessing/api.py:869] failed"
        " (exitcode: -6) local_rank: 3 (pid: 7715) of binary: /usr/bin/python3"
    )
    sig, where, _ = _signal_case(line, timeout)
    assert (sig, where) == ("nccl-watchdog-timeout", 2)
    sig, where, _ = _signal_case(line)
    assert (sig, where) == ("worker-sigabrt-exit", 2)


def test_a_sigterm_first_failure_is_a_stop_from_outside_not_a_native_fault():
    # the agent SIGTERMs the other workers only after a first failure: a first failure by
    # -15 was sent from outside (worker-sigterm-exit, class preemption-sigterm)
    line = (
        "E1203 11:40:12.418000 7701 torch/distributed/elastic/multiprocessing/api.py:869] failed"
        " (exitcode: -15) local_rank: 0 (pid: 7712) of binary: /usr/bin/python3"
    )
    sig, _, _ = _signal_case(line)
    assert sig == "worker-sigterm-exit"


# -- C ------------------------------------------------------------------------------------

_ILLEGAL_ACCESS = (
    "[rank0]:2026-01-28 13:23:00,193 - root - INFO - Training starts at step 1, with local batch"
    " size 8, global batch size 16, sequence length 2048, total steps 10 (warmup 2)\n"
    "[rank0]:[rank0]:[E128 13:23:00.788972321 ProcessGroupNCCL.cpp:1897] [PG ID 0 PG GUID"
    " 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: CUDA error:"
    " an illegal memory access was encountered\n"
    "[rank0]:CUDA kernel errors might be asynchronously reported at some other API call, so the"
    " stacktrace below might be incorrect.\n"
)


def _launch(command: str, body: str = _ILLEGAL_ACCESS):
    return diagnose_text(f"$ {command}\n{body}", "train.log", mask=False)


def test_the_one_rank_a_launch_script_keeps_is_not_the_initiator():
    d = _launch("CONFIG_FILE=./train_configs/debug_model.toml NGPU=2 ./run_train.sh")
    assert d.root_cause.signature == "cuda-illegal-memory-access"
    assert d.initiating_rank is None
    assert d.initiator.rank is None and d.initiator.candidates == [0]
    assert any("only rank whose output the log shows" in s for s in d.reasoning)


def test_torchrun_s_local_ranks_filter_shows_the_job_had_more_ranks():
    d = _launch(
        "torchrun --nproc_per_node=4 --rdzv_backend c10d --rdzv_endpoint=localhost:0"
        " --local-ranks-filter 0 --role rank --tee 3 -m torchtitan.train"
    )
    assert d.initiating_rank is None
    assert any("--local-ranks-filter 0" in s for s in d.reasoning)


def test_a_single_gpu_job_keeps_its_rank():
    d = _launch("CONFIG_FILE=./train_configs/debug_model.toml NGPU=1 ./run_train.sh")
    assert d.initiating_rank == 0


def test_the_launcher_naming_the_visible_rank_keeps_it():
    body = _ILLEGAL_ACCESS + (
        "E0128 13:23:02.000000 900 torch/distributed/elastic/multiprocessing/api.py:869] failed"
        " (exitcode: 1) local_rank: 0 (pid: 901) of binary: /usr/bin/python3\n"
    )
    d = _launch("torchrun --standalone --nproc_per_node=2 train.py", body)
    assert d.initiating_rank == 0


def test_a_rank_no_filter_keeps_is_evidence():
    # only rank 1 printed in a 2-worker job: no filter keeps rank 1 alone, so it printed
    # because it failed
    body = _ILLEGAL_ACCESS.replace("rank0", "rank1").replace("Rank 0", "Rank 1")
    d = _launch("torchrun --standalone --nproc_per_node=2 train.py", body)
    assert d.initiating_rank == 1


# -- D ------------------------------------------------------------------------------------


def test_progress_frames_after_a_carriage_return_keep_the_tee_prefix_s_rank():
    log = (
        "$ torchrun --standalone --nproc-per-node=2 --tee 3 train.py\n"
        "[default0]:Epoch 0:  20%|##        | 20/100 [00:02<00:08, 9.5it/s, loss=2.10]\n"
        "[default1]:Epoch 0:  10%|#         | 10/100 [00:01<00:09, 9.5it/s, loss=2.30]"
        "\rEpoch 0:  11%|#         | 11/100 [00:01<00:09, 9.5it/s, loss=2.29]"
        "\rEpoch 0:  12%|#         | 12/100 [00:01<00:09, 9.5it/s, loss=2.28]\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    steps = {p.rank: p.step for p in d.progress.ranks}
    assert set(steps) == {0, 1}  # no rankless progress from rank 1's later frames
    assert steps[0] == 20 and steps[1] >= 11


def _job(world: int, rank: int, script: str, error: str) -> str:
    return (
        f"[rank0]: world_size={world} backend=nccl\n"
        f"[rank{rank}]: step 10 loss 2.1\n"
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/home/u/{script}", line 40, in <module>\n'
        f"[rank{rank}]:     main()\n"
        f"[rank{rank}]: {error}\n"
    )


def test_a_job_of_another_world_size_after_a_failure_is_another_run():
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a"
        " total capacity of 79.15 GiB of which 1.02 GiB is free."
    )
    log = _job(4, 2, "train_a.py", oom) + _job(
        2, 1, "eval_b.py", "ValueError: checkpoint path /ckpt/step_500 does not exist"
    )
    d = diagnose_text(log, "jobs.log", mask=False)
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.evidence[0].line == 12
    assert d.initiating_rank == 1
    assert d.ranks.world_size == 2 and d.ranks.seen == [0, 1]
    assert "cuda-oom" not in {f.signature for f in d.findings}
    assert any("its world size is 4, the next run's 2" in w for w in d.warnings)


def test_the_same_world_size_printed_again_is_the_same_job():
    error = "ValueError: checkpoint path /ckpt/step_500 does not exist"
    log = _job(4, 2, "train_a.py", error) + "[rank0]: world_size=4 backend=nccl\n"
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause.evidence[0].line == 6 and d.initiating_rank == 2
    assert not any("different runs" in w for w in d.warnings)
