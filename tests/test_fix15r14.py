"""Fix kinds of round 14 (issue 15): decisions the log supports, each tested on a fixture
written from what the tools print (tests/fix_variants/) and on the rule's own function."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.variants import Facts, check_when, choose, sizes_apart

HERE = Path(__file__).resolve().parent / "fix_variants"


def _rc(sig: str, variant: str):
    diag = diagnose_paths([str(HERE / sig / f"{variant}.log")])
    assert diag.root_cause is not None
    return diag, diag.root_cause


def test_sizes_apart_reads_counts_and_shapes():
    assert sizes_apart({"size": "88", "expected_size": "4"}) == 22
    assert sizes_apart({"size": "(10)", "expected_size": "(9)"}) == 10 / 9
    assert sizes_apart({"size": "4804"}) is None
    assert sizes_apart({"size": "0", "expected_size": "4"}) is None
    assert sizes_apart({"size": "(2, 3)", "expected_size": "(9)"}) is None


def test_sizes_apart_condition_is_checked_and_chosen():
    assert check_when({"sizes_apart": 4}) is None
    assert check_when({"sizes_apart": True}) is not None
    assert check_when({"sizes_apart": 1}) is not None
    fix = {
        "variants": [
            {"id": "far", "when": {"sizes_apart": 4}, "steps": ["x"]},
            {"id": "g", "steps": ["y"]},
        ]
    }
    _, why = choose(fix, Facts(captures={"size": "4804", "expected_size": "4800"}))
    assert why is not None and why["id"] == "g"
    _, why = choose(fix, Facts(captures={"size": "88", "expected_size": "4"}))
    assert why == {"id": "far", "why": "the sizes are 88 and 4: 22 times apart"}


def test_gloo_sizes_far_apart_is_a_skipped_collective_not_padding():
    # sizes >= 16x apart: the root is recast to gloo-size-collectives-apart (collective-desync,
    # fix-r23-7), with the same "different-collectives" fix
    diag, rc = _rc("gloo-size-collectives-apart", "different-collectives")
    assert rc.failure_class == "collective-desync"
    assert rc.fix.variant.id == "different-collectives"
    assert diag.initiating_rank == 1  # torchrun's summary: the aborting rank (SIGABRT)
    assert rc.fix.steps[0].startswith("The two sizes are far apart (1048576 vs 8)")
    assert "Rank 1's sequence of collectives diverged" in rc.fix.steps[0]
    assert "pad" not in rc.fix.steps[0]


def test_gloo_size_mismatch_on_the_rank_that_printed_another_model_size():
    diag, rc = _rc("gloo-size-mismatch", "rank-built-differently")
    assert diag.initiating_rank == 3  # not rank 1, whose receive aborted
    assert rc.fix.variant.id == "rank-built-differently"
    assert rc.fix.steps[0].startswith("Rank 3 printed another value than the others")
    assert "1184768" in rc.fix.steps[0] and "1180672" in rc.fix.steps[0]


def test_gloo_sizes_a_few_bytes_apart_keep_the_padding_fix():
    _, rc = _rc("gloo-size-mismatch", "general")
    assert rc.fix.variant.id == "general"
    assert "pad" in rc.fix.steps[0]


def test_port_clash_of_torchrun_agents_under_srun_is_the_launch_topology():
    _, rc = _rc("port-in-use", "agents-under-srun")
    assert rc.fix.variant.id == "agents-under-srun"
    assert rc.fix.variant.why.startswith(
        "the job was launched with srun; the traceback runs through"
    )
    assert "torchrun's own agent (not a worker) could not bind port 29400" in rc.fix.steps[0]
    assert "srun --ntasks-per-node=1 torchrun" in rc.fix.steps[0]
    assert "SLURM_NTASKS_PER_NODE" in rc.fix.steps[1]
    assert rc.verify.startswith("srun --ntasks-per-node=1 hostname")


def test_oom_in_the_optimizer_step_is_not_answered_with_the_batch_size():
    diag, rc = _rc("cuda-oom", "optimizer-step")
    assert diag.initiating_rank == 1
    assert rc.fix.variant.id == "optimizer-step"
    assert "adamw.py:_multi_tensor_adamw" in rc.fix.variant.why
    # the user's line first, then the decision: optimizer state, not activations
    assert rc.fix.steps[0].startswith(
        "pretrain.py:174 (in train), where rank 1 raised OutOfMemoryError"
    )
    assert "a smaller micro-batch does not change this peak" in rc.fix.steps[0]
    assert "fused=True" in rc.fix.steps[0]
    # its fragmentation note (402 MiB reserved) does not take over
    assert "expandable_segments" not in rc.fix.steps[0]
    assert rc.verify.startswith("torchrun --nproc-per-node=gpu pretrain.py")


def test_oom_in_the_optimizer_step_after_the_fused_optimizer_failed_to_build():
    _, rc = _rc("cuda-oom", "optimizer-step-after-fused-build-failed")
    assert rc.fix.variant.id == "optimizer-step-after-fused-build-failed"
    assert "extension failed to build" in rc.fix.variant.why
    assert rc.fix.steps[0].startswith("finetune.py:88 (in <module>), where rank 0 raised")
    assert "Make the fused optimizer build" in rc.fix.steps[0]
    assert '"offload_optimizer": {"device": "cpu"}' in rc.fix.steps[1]


def test_your_launch_command_is_deepspeeds_runner_when_the_log_shows_it():
    # the runner's `spawned with command` lines name the script; the printed runner `cmd =`
    # is its internal launcher (deepspeed.launcher.launch), not what the user typed
    # (and, since round 15, with the arguments those lines give the script)
    _, rc = _rc("cuda-oom", "optimizer-step-after-fused-build-failed")
    assert rc.verify.startswith("deepspeed finetune.py --deepspeed ds_zero2.json  # ")


def test_library_raise_names_the_library_frame_below_the_user_call():
    from rootrank.entry.variants import library_raise

    frames = [
        {"file": "/home/a/train.py", "line": 117, "func": "main", "user": True},
        {
            "file": "/opt/conda/lib/python3.10/site-packages/pkg/loops.py",
            "line": 136,
            "func": "run_iter",
            "user": False,
        },
    ]
    assert library_raise(frames, True) == "pkg/loops.py:136 (in run_iter)"
    assert library_raise(frames, False) is None  # no user frame to contrast with
    assert library_raise(frames[:1], True) is None  # raised in the user's own code
    stdlib = [frames[0], {"file": "/usr/lib/python3.10/json/decoder.py", "line": 3, "user": False}]
    assert library_raise(stdlib, True) is None


def test_none_used_inside_a_library_is_not_answered_at_the_users_line():
    diag, rc = _rc("user-code-exception", "none-in-library")
    assert diag.initiating_rank == 1
    assert rc.fix.variant.id == "none-in-library"
    first = rc.fix.steps[0]
    assert first.startswith("train.py:117 (in main), where rank 1 raised AttributeError")
    assert "raised inside the library, at mmengine/runner/loops.py:136 (in run_iter)" in first
    assert "grad_norm.item()" in first
    assert "Make that call return the object" not in first
    # raised in the user's own code: the none-returned variant stays
    _, rc = _rc("user-code-exception", "none-returned")
    assert rc.fix.variant.id == "none-returned"


def test_horovod_rank_missing_from_the_initial_broadcast_is_stuck_in_start_up():
    diag, rc = _rc("horovod-stall", "initial-broadcast-missing")
    assert diag.initiating_rank == 2
    assert rc.fix.variant.id == "initial-broadcast-missing"
    assert rc.fix.steps[0].startswith(
        "Rank 2 never submitted the initial broadcast of the model's variables (HorovodBroadcast_conv1_kernel_0"
    )
    assert "visible_device_list = str(hvd.local_rank())" in rc.fix.steps[0]


def test_horovod_rank_missing_gradient_allreduces_had_none_gradients():
    diag, rc = _rc("horovod-stall", "gradients-not-submitted")
    assert diag.initiating_rank == 3
    assert rc.fix.variant.id == "gradients-not-submitted"
    assert "allreduces only the gradients that are not None" in rc.fix.steps[0]
    assert "unconnected_gradients=tf.UnconnectedGradients.ZERO" in rc.fix.steps[0]
    # a stall in plain allreduce ops keeps the rank-known investigation
    _, rc = _rc("horovod-stall", "missing-rank-known")
    assert rc.fix.variant.id == "missing-rank-known"


def test_oom_at_load_first_checks_the_model_can_fit_the_gpus_at_all():
    _, rc = _rc("cuda-oom", "at-load")
    assert rc.fix.variant.id == "at-load"
    assert (
        "First check that it can fit at all: the weights take 2 bytes per parameter"
        in (rc.fix.steps[0])
    )
    assert "add nodes (ZeRO-3 across them), offload the parameters" in rc.fix.steps[0]


def _launch(**kw):
    from rootrank.entry.commands import Launch

    base = {"launcher": None, "command": None, "script": None, "per_node": None, "world": None}
    base.update(kw)
    return Launch(**base)


def test_rank_stacks_follows_the_launcher_the_log_shows():
    from rootrank.entry.hang_capture import rank_stacks

    one_node = rank_stacks(_launch(launcher="torchrun", script="train.py"), ["torchrun"], [])
    assert one_node.startswith(
        "while it hangs: `for p in $(pgrep -f train.py); do py-spy dump --pid $p; done`"
    )
    assert "`rootrank run --on-stall dump -- torchrun --nproc-per-node=<gpus> train.py`" in one_node
    srun = rank_stacks(
        _launch(launcher="torchrun", script="/home/a/train.py"), ["srun", "torchrun"], []
    )
    assert srun.startswith(
        "while it hangs, from the allocation: `srun --overlap --jobid=$SLURM_JOB_ID "
        "--ntasks-per-node=1 bash -c 'for p in $(pgrep -f train.py); do py-spy dump --pid $p; done'`"
    )
    assert rank_stacks(_launch(), ["ray"], []).startswith("`ray stack` on every node")
    k8s = rank_stacks(_launch(script="train.py"), [], ["kubernetes"])
    assert "kubectl exec <pod> -- sh -c 'for p in $(pgrep -f train.py)" in k8s
    nodes = rank_stacks(
        _launch(launcher="deepspeed", script="train.py", multi_node=True), ["deepspeed"], []
    )
    assert (
        nodes
        == "while it hangs, on every node: `for p in $(pgrep -f train.py); do py-spy dump --pid $p; done`"
    )
    module = rank_stacks(_launch(launcher="torchrun", script="-m pkg.server"), ["torchrun"], [])
    assert "pgrep -f pkg.server)" in module
    assert "<your launch command>" in rank_stacks(_launch(), [], [])


def test_a_hang_with_no_rank_named_says_how_to_see_every_ranks_stack():
    _, rc = _rc("nccl-watchdog-timeout", "no-rank-named")
    assert rc.fix.variant.id == "no-rank-named"
    text = " ".join(rc.fix.steps)
    assert "every rank's Python stack, while it hangs: `for p in $(pgrep -f" in text
    assert "rootrank run --on-stall dump --" in text
    assert "{rank_stacks}" not in text and "<rank_stacks>" not in text


def test_placeholder_argument_is_a_whole_unfilled_value():
    from rootrank.entry.variants import placeholder_argument

    argv = "['/opt/conda/bin/python', '-u', '-m', 'pkg.cli.train', '--input_template', 'User: {}\\\\nAssistant: ', '--use_wandb', '{wandb_token}'] exits with return code = 1"
    assert placeholder_argument([argv]) == "'--use_wandb', '{wandb_token}'"
    assert placeholder_argument(["torchrun train.py --token <your-hf-token> --lr 1"]) == (
        "--token <your-hf-token>"
    )
    assert placeholder_argument(["python train.py --key=${WANDB_KEY}"]) == "--key=${WANDB_KEY}"
    # a placeholder inside a longer value is a value (a template the script fills itself)
    assert placeholder_argument(["torchrun train.py --out {run}.txt --fmt 'a {x}'"]) is None
    assert placeholder_argument(["['python', '--input_template', 'User: {}']"]) is None


def test_an_exception_about_a_placeholder_the_launch_passed_names_the_argument():
    _, rc = _rc("user-code-exception", "placeholder-argument")
    assert rc.fix.variant.id == "placeholder-argument"
    assert rc.fix.variant.why == "the printed launch line passes --epochs {num_epochs}"
    assert rc.fix.steps[0].startswith(
        "finetune.py:41 (in main), where ranks 0 and 1 raised ValueError"
    )
    assert "passes --epochs {num_epochs}: an unfilled template placeholder" in rc.fix.steps[0]


def test_nccl_buffer_oom_in_training_is_the_jobs_memory_not_a_missing_warm_up():
    diag, rc = _rc("nccl-cuda-oom", "training")
    assert diag.initiating_rank == 1
    assert rc.fix.variant.id == "training"
    assert rc.fix.steps[0].startswith(
        "NCCL could not get GPU memory for a buffer: the job's own tensors"
    )
    assert "reduce_bucket_size" in rc.fix.steps[0]
    assert "warm-up" in rc.fix.steps[2]  # only if it failed at the very first collective
    _, rc = _rc("nccl-cuda-oom", "training-at-start-up")
    assert rc.fix.variant.id == "training-at-start-up"
    assert rc.fix.steps[0].startswith("Create all process groups and run one warm-up collective")


_NATIVE_THREAD_CRASH = """\
[gpu7:3310 :0:3402] Caught signal 7 (Bus error: nonexistent physical address)
 0 0x0000000000043090 ncclShmOpen()  ???:0
Fatal Python error: Bus error

Thread 0x00007f31aa7fc700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 600 in wait

Thread 0x00007f31d3f1f740 (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 3703 in barrier
  File "/srv/proj/dist_utils.py", line 58 in setup
  File "/srv/proj/train.py", line 140 in main
  File "/srv/proj/train.py", line 201 in <module>
"""


def test_faulthandler_threads_after_a_native_thread_crash_give_the_users_line():
    """The signal hit NCCL's own thread, so faulthandler printed no "Current thread": the
    Python threads it dumps after "Fatal Python error:" show where the process was."""
    from rootrank.tracebacks import TracebackReader

    reader = TracebackReader()
    stacks = []
    for number, text in enumerate(_NATIVE_THREAD_CRASH.splitlines(), 1):
        reader.feed(text, number)
        got = reader.take_fault_stack()
        if got:
            stacks.append(got)
    last = reader.take_fault_stack(end=True)
    if last:
        stacks.append(last)
    # one stack: the last thread that shows user code (faulthandler lists the main thread last)
    assert [line for line, _ in stacks] == [9]
    main = stacks[0][1]
    assert [(f.file, f.line) for f in main if f.user][-1] == ("/srv/proj/dist_utils.py", 58)
    # a "Thread 0x..." block with no fatal error before it is not read
    reader = TracebackReader()
    for number, text in enumerate(_NATIVE_THREAD_CRASH.splitlines()[3:], 1):
        reader.feed(text, number)
        assert reader.take_fault_stack() is None
    assert reader.take_fault_stack(end=True) is None


def test_a_current_thread_in_the_same_dump_wins_over_the_other_threads():
    from rootrank.tracebacks import TracebackReader

    dump = _NATIVE_THREAD_CRASH.replace(
        "Thread 0x00007f31d3f1f740 (most recent call first):",
        "Current thread 0x00007f31d3f1f740 (most recent call first):",
    ).replace(
        'File "/usr/lib/python3.10/threading.py", line 324 in wait',
        'File "/srv/proj/loader.py", line 9 in run',
    )
    reader = TracebackReader()
    stacks = []
    for number, text in enumerate(dump.splitlines(), 1):
        reader.feed(text, number)
        got = reader.take_fault_stack()
        if got:
            stacks.append(got)
    last = reader.take_fault_stack(end=True)
    if last:
        stacks.append(last)
    assert [line for line, _ in stacks] == [9]  # the loader thread's stack (line 5) is dropped


def test_native_thread_crash_names_the_users_line_in_the_fix(tmp_path):
    log = tmp_path / "crash.log"
    log.write_text(_NATIVE_THREAD_CRASH)
    diag = diagnose_paths([str(log)])
    assert diag.root_cause is not None
    assert diag.root_cause.fix.steps[0].startswith("dist_utils.py:58 (in setup)")
