"""Several different jobs in one file (``cat job1.log job2.log``, a log folder of unrelated runs
read as one stream): a section launched another way (another script, other launcher options),
with another world size, or after a run that ran to its end, is another run, not an attempt
of the same job. The last is diagnosed (as a folder's newest run is) and the others are named
(rootrank.runs.separate_run; the scan drops what they showed: rootrank.scan.Scanner._new_run).

Shapes: a shell prompt that types the command (``user@host:~/proj$ torchrun ...``), torchrun's
``Setting OMP_NUM_THREADS`` banner (torch/distributed/run.py), its ``[rankN]:`` prefixes, a
plain loop's ``step N/TOTAL loss X`` and Hugging Face Trainer's end-of-run summary dict
(``{'train_runtime': ..., 'train_loss': ...}``, trainer.py ``speed_metrics``).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

BANNER = (
    "W1203 {t} 66120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable"
    " for each process to be 1 in default, to avoid your system being overloaded, please further"
    " tune the variable for optimal performance in your application as needed.\n"
)


def launch(command: str, t: str = "09:20:02.118000") -> str:
    return f"user@node01:~/proj$ {command}\n" + BANNER.format(t=t)


def steps(ranks: range, n: int, total: int) -> str:
    return "".join(
        f"[rank{r}]: step {s}/{total} loss 1.2{s % 10}00\n" for s in (n - 1, n) for r in ranks
    )


def missing_file(rank: int) -> str:
    p = f"[rank{rank}]: "
    return (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/home/u/proj/finetune.py", line 52, in <module>\n'
        f"{p}    batch = next(it)\n"
        f"{p}FileNotFoundError: [Errno 2] No such file or directory: '/data/shard_0007.pt'\n"
    )


def oom(rank: int, script: str = "pretrain.py") -> str:
    p = f"[rank{rank}]: "
    return (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/home/u/proj/{script}", line 40, in <module>\n'
        f"{p}    loss = model(x).sum()\n"
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.64 GiB. GPU {rank} has"
        " a total capacity of 79.10 GiB of which 1.00 GiB is free.\n"
    )


def other_runs(d) -> list[str]:
    return [r for r in d.reasoning if r.startswith("The log holds") and "different runs" in r]


def test_a_run_that_ended_then_another_job_the_last_is_diagnosed_and_the_first_named():
    first = launch("torchrun --nproc-per-node=8 pretrain.py --config big.yaml", "07:00:02.118000")
    first += steps(range(8), 1000, 1000)
    second = launch("torchrun --nproc-per-node=2 finetune.py") + oom(1, "finetune.py")
    log = first + second
    d = diagnose_text(log, "jobs.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1 and d.attempts == 1
    assert d.ranks.seen == [1]  # ranks 0-7 were the other job's
    assert other_runs(d) == [
        "The log holds 2 different runs, one after the other; this is the diagnosis of the last"
        f" one (from line {first.count(chr(10)) + 1}), as a folder of several runs is diagnosed"
        " by its newest. Left out: the run at lines 1-18 (`torchrun --nproc-per-node=8"
        " pretrain.py`): it ended (its progress reached step 1000 of 1000) before the next run started."
    ]
    assert any("left out the run at lines 1-18" in w for w in d.warnings)


def test_the_same_job_launched_again_after_it_ended_is_another_run_too():
    """Hugging Face Trainer's end-of-run summary ends a run; the relaunch of the same command
    is a new run (a healthy one: no failure, exit code 1), not the first one's attempt."""
    first = launch("torchrun --nproc-per-node=2 train.py", "07:00:02.118000") + (
        "[rank0]: {'train_runtime': 3605.2, 'train_samples_per_second': 71.0,"
        " 'train_steps_per_second': 0.277, 'train_loss': 1.8342, 'epoch': 3.0}\n"
    )
    second = launch("torchrun --nproc-per-node=2 train.py") + steps(range(2), 10, 1000)
    d = diagnose_text(first + second, "jobs.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    (line,) = other_runs(d)
    assert "end-of-run summary (train_runtime)" in line and "from line 4)" in line


def test_a_failed_job_then_a_job_launched_another_way_is_no_attempt_of_it():
    first = launch("torchrun --nproc-per-node=8 pretrain.py", "07:00:02.118000") + oom(6)
    second = launch("torchrun --nproc-per-node=2 finetune.py") + missing_file(0)
    d = diagnose_text(first + second, "jobs.log", mask=False)
    assert d.root_cause.signature == "checkpoint-file-missing" and d.root_cause.rank == 0
    assert d.attempts == 1
    assert "cuda-oom" not in {f.signature for f in d.findings}
    (line,) = other_runs(d)
    assert (
        "it was launched as `torchrun --nproc-per-node=8 pretrain.py`, the next run as"
        " `torchrun --nproc-per-node=2 finetune.py`" in line
    )
    assert 6 not in d.ranks.seen


def test_another_world_size_without_a_command_line_is_another_run():
    """Only torchrun's banners start the sections (no prompt was logged) and both jobs' tracebacks
    begin in the same script: the world sizes the jobs print tell them apart, at the end of
    the file."""
    first = BANNER.format(t="07:00:02.118000") + (
        "".join(f"[rank{r}]: initialized process group rank={r} world_size=8\n" for r in range(8))
        + oom(6)
    )
    second = BANNER.format(t="09:20:02.118000") + (
        "".join(f"[rank{r}]: initialized process group rank={r} world_size=2\n" for r in range(2))
        + oom(1)
    )
    d = diagnose_text(first + second, "jobs.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 1
    assert d.attempts == 1 and d.ranks.world_size == 2
    (line,) = other_runs(d)
    assert "its world size is 8, the next run's 2" in line
    assert set(d.ranks.seen) <= {0, 1}


def test_a_relaunch_of_the_same_job_stays_an_attempt():
    """The same launcher command with other script arguments (a smaller batch) after a
    failure: the job relaunched, as before (tests/test_attempts.py)."""
    first = launch("torchrun --nproc-per-node=2 pretrain.py", "07:00:02.118000") + oom(1)
    second = launch("torchrun --nproc-per-node=2 pretrain.py --batch-size 4") + missing_file(0)
    d = diagnose_text(first + second, "jobs.log", mask=False)
    assert d.attempts == 2 and not other_runs(d)
    assert any("holds 2 runs of the job" in r for r in d.reasoning)


def test_a_job_launched_another_way_with_no_failure_between_is_another_run():
    """The first job was stopped without a word (a Ctrl-C the log did not keep); the next
    prompt launches another script."""
    first = launch("torchrun --nproc-per-node=4 pretrain.py", "07:00:02.118000")
    first += steps(range(4), 120, 1000)
    second = launch("torchrun --nproc-per-node=2 finetune.py") + oom(1, "finetune.py")
    d = diagnose_text(first + second, "jobs.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 1
    (line,) = other_runs(d)
    assert "the run at lines 1-10 (`torchrun --nproc-per-node=4 pretrain.py`)" in line
    assert d.progress is None  # the other job's steps are not this run's


def test_two_nodes_of_one_run_cut_one_after_the_other_are_still_one_run():
    """``cat node1.log node0.log``: the same launch but for the node rank and rendezvous
    options, and lines timed while the other node ran (rootrank.runs.another_node)."""
    node1 = (
        launch(
            "torchrun --nnodes=2 --node-rank=1 --master-addr=node00 --nproc-per-node=2 pretrain.py",
            "07:00:02.118000",
        )
        + oom(3)
        + (
            "E1203 07:10:05.406000 66120 torch/distributed/elastic/multiprocessing/api.py:874]"
            " failed (exitcode: 1) local_rank: 1 (pid: 66131) of binary: /usr/bin/python3\n"
        )
    )
    node0 = launch(
        "torchrun --nnodes=2 --node-rank=0 --master-addr=node00 --nproc-per-node=2 pretrain.py",
        "07:00:02.200000",
    ) + "".join(
        f"[rank{r}]: [rank{r}]:[E1203 07:10:00.000000 9 ProcessGroupNCCL.cpp:616] [Rank {r}]"
        " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE,"
        " NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
        for r in (0, 1)
    )
    d = diagnose_text(node1 + node0, "nodes.log", mask=False)
    assert not other_runs(d) and d.attempts == 1
    assert any("another node of the same run" in r for r in d.reasoning)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 3


def test_launch_identity_keeps_the_launcher_its_options_and_the_script():
    from rootrank.runs import launch_identity

    assert launch_identity(
        "user@node01:~/proj$ torchrun --nproc-per-node=2 train.py --batch-size 4"
    ) == ("torchrun --nproc-per-node=2 train.py")
    assert launch_identity(
        "+ torchrun --nnodes=2 --node-rank 1 --master-addr node00 --nproc-per-node=8 train.py"
    ) == ("torchrun --nnodes=2 --nproc-per-node=8 train.py")
    assert launch_identity("$ deepspeed --num_gpus 8 pretrain.py --deepspeed ds.json") == (
        "deepspeed --num_gpus 8 pretrain.py"
    )
    assert launch_identity("$ nvidia-smi") is None


def test_separate_run_reasons():
    from rootrank.runs import SectionFacts, separate_run

    a = SectionFacts(ranks={0, 7}, launch="torchrun --nproc-per-node=8 a.py")
    assert separate_run(a, SectionFacts(launch="torchrun --nproc-per-node=8 a.py")) is None
    assert (
        separate_run(a, SectionFacts(world=2)) == "it had rank 7, past the next run's world size 2"
    )
    assert (
        separate_run(SectionFacts(ended="x"), SectionFacts())
        == "it ended (x) before the next run started"
    )
    assert separate_run(SectionFacts(world=8), SectionFacts(world=8, ranks={3})) is None


def summary(script: str, rank: int, exitcode: int, pid: int) -> str:
    """torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors/__init__.py,
    ``ChildFailedError.format_msg``): its title names the entry script as launched."""
    why = (
        f"Signal 9 (SIGKILL) received by PID {pid}"
        if exitcode == -9
        else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    )
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        f"{script} FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-11-29_13:28:32\n"
        "  host      : node01\n"
        f"  rank      : {rank} (local_rank: {rank})\n"
        f"  exitcode  : {exitcode} (pid: {pid})\n"
        "  error_file: <N/A>\n"
        f"  traceback : {why}\n"
        "============================================================\n"
    )


def killed_job(t: str) -> str:
    """train_sigkill.py on 3 ranks: rank 1 is SIGKILLed (no traceback of its own)."""
    return BANNER.format(t=t) + steps(range(3), 4, 1000) + summary("train_sigkill.py", 1, -9, 16160)


def oom_job(t: str) -> str:
    """train_oom.py on the same 3 ranks: rank 2 runs out of memory."""
    return (
        BANNER.format(t=t)
        + steps(range(3), 4, 1000)
        + oom(2, "train_oom.py")
        + summary("train_oom.py", 2, 1, 16211)
    )


def test_two_jobs_of_other_scripts_the_verify_names_the_diagnosed_runs_script():
    """``cat b.log a.log``: two torchrun jobs of the same shape (3 ranks, no prompt, no world
    size printed), told apart only by the scripts their failure summaries name. The second is
    another job (not an attempt of the first), named in the reasoning and the warnings, and
    its own script is the one the Verify reruns, in either order."""
    first, second = killed_job("09:00:02.118000"), oom_job("09:20:02.118000")
    d = diagnose_text(first + second, "ba.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 2
    assert d.attempts == 1
    assert "train_oom.py" in d.root_cause.verify and "train_sigkill.py" not in d.root_cause.verify
    n = first.count("\n")
    (line,) = other_runs(d)
    assert f"from line {n + 1}" in line
    assert f"the run at lines 1-{n}: it ran train_sigkill.py, the next run train_oom.py" in (line)
    assert any(f"left out the run at lines 1-{n}" in w for w in d.warnings)

    d = diagnose_text(second + first, "ab.log", mask=False)
    assert d.root_cause.signature == "worker-sigkill-exit" and d.initiating_rank == 1
    assert "train_sigkill.py" in d.root_cause.verify and "train_oom.py" not in d.root_cause.verify
    (line,) = other_runs(d)
    assert "it ran train_oom.py, the next run train_sigkill.py" in line


def test_a_relaunch_of_the_same_script_stays_an_attempt_and_keeps_its_script():
    """The same script failing twice (a relaunch after a failure) is one job's two attempts;
    a relaunch cut before its summary names no script and reruns its run's."""
    first = oom_job("09:00:02.118000")
    d = diagnose_text(first + oom_job("09:20:02.118000"), "again.log", mask=False)
    assert d.attempts == 2 and other_runs(d) == []
    assert "train_oom.py" in d.root_cause.verify
    cut = BANNER.format(t="09:20:02.118000") + steps(range(3), 4, 1000) + oom(0, "train_oom.py")
    d = diagnose_text(first + cut, "again.log", mask=False)
    assert d.attempts == 2 and other_runs(d) == []
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 0
    assert "train_oom.py" in d.root_cause.verify


def test_a_set_x_trace_of_the_launch_starts_the_next_run():
    # a job script with `set -x`: bash prints "+ torchrun ..." before each launch, then
    # torchrun its banner; the trace line is the next run's first line and its launch
    def traced(command: str, t: str) -> str:
        return f"+ {command}\n" + BANNER.format(t=t)

    first = (
        traced("torchrun --nproc-per-node=4 finetune.py", "09:20:02.118000")
        + steps(range(4), 2, 100)
        + missing_file(3)
    )
    second = (
        traced("torchrun --nproc-per-node=4 pretrain.py", "09:40:02.118000")
        + steps(range(4), 2, 100)
        + oom(1)
    )
    d = diagnose_text(first + second, "job.log", mask=False)
    start = first.count("\n") + 1  # the "+ torchrun ... pretrain.py" line
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1
    assert d.root_cause.verify.split("  #")[0].endswith("torchrun --nproc-per-node=4 pretrain.py")
    assert d.warnings == [
        f"job.log: the file holds 2 different runs: diagnosed the last (from line {start});"
        f" left out the run at lines 1-{start - 1} (`torchrun --nproc-per-node=4 finetune.py`):"
        " it was launched as `torchrun --nproc-per-node=4 finetune.py`, the next run as"
        " `torchrun --nproc-per-node=4 pretrain.py`"
    ]


def test_the_left_out_jobs_training_curves_are_left_out_too():
    """The job left out of the diagnosis keeps none of its curves: a per-rank loss only the
    first job printed is not charted beside the diagnosed job's (rootrank.metrics
    MetricsReader.forget_before); the diagnosed job's own curve stays."""
    first = BANNER.format(t="09:00:02.118000") + "".join(
        f"[rank{r}]: step {s}/1000 grad_norm 0.{s}1\n" for s in range(1, 6) for r in range(3)
    )
    first += summary("train_sigkill.py", 1, -9, 16160)
    second = oom_job("09:20:02.118000")
    d = diagnose_text(first + second, "ba.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 2
    assert len(other_runs(d)) == 1
    names = {(m.name, m.rank) for m in d.metrics}
    assert not any(name == "grad_norm" for name, _ in names)
    alone = diagnose_text(first, "b.log", mask=False)
    assert {("grad_norm", r) for r in range(3)} <= {(m.name, m.rank) for m in alone.metrics}


def test_a_traceback_of_another_script_after_the_summary_is_another_job():
    """``cat a.log b.log`` where b.log is a plain ``python train.py`` run: torchrun's failure
    summary is its last output, so a traceback after it whose ``<module>`` frame is another
    script is another job (diagnosed, as the newest), not collateral of the first; a
    wrapper's ``CalledProcessError`` after the summary stays the first run's report."""
    first = oom_job("09:00:02.118000")
    second = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/nanoGPT/train.py", line 110, in <module>\n'
        "    ctx = torch.amp.autocast(device_type='cuda', dtype=ptdtype)\n"
        "ValueError: block_size 2048 exceeds the model's 1024 positions\n"
    )
    d = diagnose_text(first + second, "ab.log", mask=False)
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.evidence[0].line == first.count("\n") + 4
    (line,) = other_runs(d)
    assert "it ran train_oom.py, the next run train.py" in line
    wrapper = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/proj/launch.py", line 31, in <module>\n'
        "    subprocess.run(cmd, check=True)\n"
        "subprocess.CalledProcessError: Command '['torchrun', '--nproc-per-node=3',"
        " 'train_oom.py']' returned non-zero exit status 1.\n"
    )
    d = diagnose_text(first + wrapper, "w.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 2
    assert other_runs(d) == []
