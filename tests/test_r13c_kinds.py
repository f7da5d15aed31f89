"""The kinds of miss heldout-r13c (real torch 2.13 CPU/gloo runs with traps) showed, each on
text written here in the tools' real shape (torchrun's banner, agent and summary lines,
``--tee 3`` prefixes, ``traceback.print_exc()`` / ``logger.exception`` output, the Hugging
Face Trainer's metric dicts and end-of-run summary):

A. a run that reached its end (its progress at its total, the Trainer's ``train_runtime``
   summary) with no launcher reporting a failed worker survived the errors it printed before
   that end, even when they carry no rank (an untagged caught traceback of a multi-rank log)
   or come from a rank that prints no progress (rule ``run_completed``);
B. a NaN guard's exception that puts the adjective before the noun or the value after it
   (``non-finite mean loss nan at iteration 5``, ``NaN loss at step 3``, ``loss=nan``) is the
   guard's NaN (``nan-guard-exception``), not a plain user exception.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

_BANNER = [
    "W0412 09:14:02.118000 3101 torch/distributed/run.py:874] ",
    "W0412 09:14:02.118000 3101 torch/distributed/run.py:874] *****************************************",
    "W0412 09:14:02.118000 3101 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment "
    "variable for each process to be 1 in default, to avoid your system being overloaded, please "
    "further tune the variable for optimal performance in your application as needed. ",
    "W0412 09:14:02.118000 3101 torch/distributed/run.py:874] *****************************************",
]


def _steps(ranks: range, first: int, last: int, total: int) -> list[str]:
    """``logging``-formatted progress lines of every rank for steps ``first..last`` of ``total``."""
    return [
        f"2025-04-12 09:14:0{s % 10},{100 + r:03d} - INFO - trainer - rank {r} step {s}/{total} loss 0.{700 - 9 * s}"
        for s in range(first, last + 1)
        for r in ranks
    ]


def _caught_upload_error() -> list[str]:
    """A caught ConnectionError printed by ``logger.exception`` (no rank prefix: the workers
    share the terminal): its traceback starts at the handler's frame, ``main``."""
    return [
        "2025-04-12 09:14:05,220 - ERROR - trainer - metrics upload failed (attempt 1/3), retrying",
        "Traceback (most recent call last):",
        '  File "/home/ana/proj/train.py", line 41, in main',
        "    push_metrics(step, loss.item())",
        '  File "/home/ana/proj/train.py", line 22, in push_metrics',
        '    raise ConnectionError(f"tracker at {URL} refused the connection")',
        "ConnectionError: tracker at http://tracker.lan:8080/api refused the connection",
    ]


def _completed_ddp_run(error: list[str]) -> str:
    """A 4-rank torchrun DDP run: each rank's reducer warning (``[rankN]:`` prefixed, so the
    log shows four ranks), steps 1-3, ``error``, steps 4-6 of 6, then rank 0's last line."""
    warn = (
        "[rank{r}]:[W0412 09:14:03.8{r}1000000 reducer.cpp:1529] Warning: find_unused_parameters=True "
        "was specified in DDP constructor, but did not find any unused parameters in the forward pass. "
        "This flag results in an extra traversal of the autograd graph every iteration,  which can "
        "adversely affect performance. (function operator())"
    )
    lines = [
        *_BANNER,
        *(warn.format(r=r) for r in (3, 1, 0, 2)),
        *_steps(range(4), 1, 3, 6),
        *error,
        *_steps(range(4), 4, 6, 6),
        "2025-04-12 09:14:09,900 - INFO - trainer - Training completed.",
    ]
    return "\n".join(lines) + "\n"


def test_untagged_caught_traceback_before_every_rank_reached_its_total_is_survived():
    d = diagnose_text(_completed_ddp_run(_caught_upload_error()), "train.log", mask=False)
    assert d.root_cause is None
    # every rank printed a later step after the untagged traceback, so error_survived sets
    # it aside before the run's end is needed (trial r17c: whichever rank raised it went on)
    said = [r for r in d.reasoning if "[error_survived]" in r]
    assert len(said) == 1
    assert "train.log:27) was survived" in said[0]
    assert "every rank of 0, 1, 2, 3 printed a later step" in said[0]
    # without the later steps of rank 3 the run's end still sets it aside
    text = _completed_ddp_run(_caught_upload_error())
    text = "".join(
        ln for ln in text.splitlines(True) if not ("rank 3 step" in ln and "step 3/6" not in ln)
    )
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause is None
    said = [r for r in d.reasoning if "[run_completed]" in r]
    assert len(said) == 1
    assert "Training completed." in said[0]


def test_top_level_traceback_is_survived_by_the_runs_end_only_when_every_rank_printed_on():
    uncaught = [
        "Traceback (most recent call last):",
        '  File "/home/ana/proj/train.py", line 60, in <module>',
        "    main()",
        '  File "/home/ana/proj/train.py", line 44, in main',
        "    ratio = hits / total",
        "ZeroDivisionError: division by zero",
    ]
    # the steps after it come rank by rank, each rank's lines one block: the buffers of
    # processes flushed as they exited, no sign that any went on after the traceback
    text = _completed_ddp_run(uncaught)
    head, _, tail = text.partition("ZeroDivisionError: division by zero\n")
    later = [ln for ln in tail.splitlines(True) if " step " in ln]
    blocks = sorted(later, key=lambda ln: int(ln.split(" rank ")[1].split()[0]))
    rest = [ln for ln in tail.splitlines(True) if " step " not in ln]
    text = head + "ZeroDivisionError: division by zero\n" + "".join(blocks + rest)
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)
    # every rank's later steps written between the others' (interleaved, as printed): every
    # rank went on after it, so whichever printed it (a top-level retry loop's
    # traceback.print_exc(): trial r24 finding 1) survived it (rootrank.analysis.went_on)
    d = diagnose_text(_completed_ddp_run(uncaught), "train.log", mask=False)
    assert d.root_cause is None
    assert any("[run_completed]" in r for r in d.reasoning)


def _hf_run(after_summary: list[str], summary_rc: list[str]) -> str:
    """A 3-rank ``torchrun --tee 3`` run in the Trainer's shape: rank 2 prints the CPU
    allocator's message twice while it retries a smaller cache (no traceback), rank 0 alone
    logs metrics and the bar, then the ``train_runtime`` summary, then ``after_summary``."""
    alloc = (
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate {n} bytes. Error code 12 (Cannot allocate memory)"
    )
    lines = [
        *_BANNER,
        f"[default2]:prefetch buffer of 1024 MiB failed: {alloc.format(n=1073741824)}",
        "[default2]:retrying with 512 MiB",
        f"[default2]:prefetch buffer of 512 MiB failed: {alloc.format(n=536870912)}",
        "[default2]:retrying with 256 MiB",
        "[default0]: 10%|#         | 2/20 [00:00<00:03,  5.10it/s]",
        "[default0]:{'loss': 1.3311, 'grad_norm': 0.77, 'learning_rate': 4.5e-05, 'epoch': 0.5}",
        "[default0]: 50%|#####     | 10/20 [00:01<00:01,  5.02it/s]",
        "[default0]:{'loss': 1.2207, 'grad_norm': 0.64, 'learning_rate': 0.0, 'epoch': 1.0}",
        "[default0]:100%|##########| 20/20 [00:03<00:00,  5.01it/s]",
        "[default0]:{'train_runtime': 3.9921, 'train_samples_per_second': 120.2, "
        "'train_steps_per_second': 5.01, 'train_loss': 1.2871, 'epoch': 1.0}",
        *after_summary,
        *summary_rc,
    ]
    return "\n".join(lines) + "\n"


def test_allocator_errors_a_rank_printed_before_the_trainers_summary_are_survived():
    d = diagnose_text(_hf_run([], []), "train.log", mask=False)
    assert d.root_cause is None
    said = [r for r in d.reasoning if "[run_completed]" in r]
    assert len(said) == 1 and "train_runtime" in said[0]
    assert "(2 lines)" in said[0]


def test_an_error_after_the_runs_end_is_the_failure():
    crash = [
        "[default0]:[rank0]: Traceback (most recent call last):",
        '[default0]:[rank0]:   File "/home/ana/proj/train.py", line 88, in <module>',
        "[default0]:[rank0]:     trainer.save_model(OUT)",
        "[default0]:[rank0]: OSError: [Errno 28] No space left on device",
    ]
    d = diagnose_text(_hf_run(crash, []), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "disk-full"
    assert d.initiating_rank == 0


def test_a_launcher_reporting_a_failed_worker_keeps_the_errors():
    summary = [
        "E0412 09:14:20.511000 3101 torch/distributed/elastic/multiprocessing/api.py:1002] "
        "failed (exitcode: -9) local_rank: 2 (pid: 3190) of binary: /usr/bin/python3",
    ]
    d = diagnose_text(_hf_run([], summary), "train.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


# -- B ------------------------------------------------------------------------------------


def _guard_on_every_rank(message: str) -> str:
    """Four ranks raise the same guard exception at the same step (the guard checks the
    all-reduced loss), rank 1's traceback first."""
    lines = [*_BANNER]
    for r in (1, 0, 3, 2):
        lines += [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/home/ana/proj/train.py", line 71, in <module>',
            f"[rank{r}]:     main()",
            f'[rank{r}]:   File "/home/ana/proj/train.py", line 64, in main',
            f'[rank{r}]:     raise FloatingPointError(f"{{msg}}")',
            f"[rank{r}]: FloatingPointError: {message}",
        ]
    return "\n".join(lines) + "\n"


def test_adjective_first_nan_guard_message_is_the_guards_nan():
    for message in (
        "non-finite mean loss nan at iteration 5; stopping",
        "NaN loss at step 3, stopping",
    ):
        d = diagnose_text(_guard_on_every_rank(message), "train.log", mask=False)
        assert d.root_cause is not None, message
        assert d.root_cause.signature == "nan-guard-exception", message
        assert d.root_cause.failure_class == "nan-or-fp16-overflow", message
        assert d.root_cause.evidence[0].line == 10, message  # rank 1's exception line


def test_a_message_that_only_mentions_nan_elsewhere_stays_a_user_exception():
    d = diagnose_text(
        _guard_on_every_rank("cannot parse 'nan' in column loss_weight of row 12"),
        "train.log",
        mask=False,
    )
    assert d.root_cause is not None
    assert d.root_cause.signature != "nan-guard-exception"


# -- C ------------------------------------------------------------------------------------


def _agent_banner(pid: int, sec: int) -> list[str]:
    head = f"W0412 10:02:{sec:02d}.118000 {pid} torch/distributed/run.py:874] "
    return [
        head,
        head + "*****************************************",
        head + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
        "to avoid your system being overloaded, please further tune the variable for optimal "
        "performance in your application as needed. ",
        head + "*****************************************",
    ]


def _summary(
    agent: int, sec: int, failed: tuple[int, int, int], root: tuple[int, int, int]
) -> list[str]:
    """torchelastic's failure summary: ``failed`` and ``root`` are (rank, local_rank, exitcode)."""

    def entry(n: int, who: tuple[int, int, int], pid: int) -> list[str]:
        rank, local, code = who
        sig = "  (SIGTERM)" if code == -15 else " "
        tb = (
            f"Signal 15 (SIGTERM) received by PID {pid}"
            if code == -15
            else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        )
        return [
            f"[{n}]:",
            f"  time      : 2025-04-12_10:02:{sec:02d}",
            "  host      : gpu-a",
            f"  rank      : {rank} (local_rank: {local})",
            f"  exitcode  : {code} (pid: {pid}){sig}",
            "  error_file: <N/A>",
            f"  traceback : {tb}",
        ]

    return [
        f"E0412 10:02:{sec:02d}.402000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] "
        f"failed (exitcode: {root[2]}) local_rank: {root[1]} (pid: {agent + 50 + root[1]}) of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "pretrain.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        *entry(1, failed, agent + 50 + failed[1]),
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        *entry(0, root, agent + 50 + root[1]),
        "============================================================",
    ]


def _victim(rank: int, port: int) -> list[str]:
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/srv/lm/pretrain.py", line 77, in <module>',
        f"[rank{rank}]:     main()",
        f'[rank{rank}]:   File "/srv/lm/pretrain.py", line 70, in main',
        f"[rank{rank}]:     dist.all_reduce(flat)",
        f"[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
        f"Connection closed by peer [10.0.0.2]:{port}. This is typically caused by a remote worker "
        "crashing. Check the logs of the remote worker before reporting an error. GLHF! 🏖️",
    ]


def test_two_agents_started_from_one_terminal_are_one_run_not_a_relaunch():
    """``torchrun --nnodes=2 --node-rank=1 ... & torchrun --nnodes=2 --node-rank=0 ...`` in one
    terminal: both banners first, the workers' lines interleaved, node 1's summary (rank 2
    raised) and then node 0's victims and summary. Node 0's ranks print lines in both sections,
    so only the agents' pids show the second section is no relaunch."""
    lines = [
        *_agent_banner(4410, 1),
        *_agent_banner(4452, 2),
        *(f"[rank {r}] shard opened, 4096 samples" for r in (0, 3, 2, 1)),
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/srv/lm/pretrain.py", line 77, in <module>',
        "[rank2]:     main()",
        '[rank2]:   File "/srv/lm/pretrain.py", line 52, in main',
        "[rank2]:     vocab = load_vocab(cfg.vocab_path)",
        '[rank2]:   File "/srv/lm/data.py", line 31, in load_vocab',
        '[rank2]:     raise ValueError(f"vocab file {path} has {n} entries, expected {want}")',
        "[rank2]: ValueError: vocab file /data/vocab.txt has 31999 entries, expected 32000",
        "[rank 0] step 1 loss 10.41",
        "[rank 1] step 1 loss 10.41",
        "W0412 10:02:09.300000 4410 torch/distributed/elastic/multiprocessing/api.py:1028] "
        "Sending process 4463 closing signal SIGTERM",
        *_summary(4410, 9, (3, 1, -15), (2, 0, 1)),
        *_victim(1, 41233),
        *_victim(0, 38177),
        "W0412 10:02:14.611000 4452 torch/distributed/elastic/multiprocessing/api.py:1028] "
        "Sending process 4502 closing signal SIGTERM",
        *_summary(4452, 14, (0, 0, -15), (1, 1, 1)),
    ]
    d = diagnose_text("\n".join(lines) + "\n", "both-nodes.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.attempts == 1
    assert any("two agents of one run ran at once" in r for r in d.reasoning)


def test_one_agent_pid_seen_again_after_its_failure_is_still_a_relaunch():
    """A restarted container gives its new agent the old pid: the earlier section holds one
    agent only, so the same pid after the summary is no second agent."""
    lines = [
        *_agent_banner(7, 1),
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/srv/lm/pretrain.py", line 77, in <module>',
        "[rank1]:     main()",
        "[rank1]: ValueError: vocab file /data/vocab.txt has 31999 entries, expected 32000",
        *_summary(7, 9, (0, 0, -15), (1, 1, 1)),
        *_victim(1, 41233),
        *_summary(7, 40, (0, 0, -15), (1, 1, 1)),
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert not any("two agents of one run ran at once" in r for r in d.reasoning)
    assert d.attempts == 2


# -- D ------------------------------------------------------------------------------------


def _spawn_exit(extra: list[str]) -> str:
    """``mp.spawn(worker, nprocs=4)``: every process logs with a ``[rankN]`` tag, process 2
    exits with ``os._exit(4)`` after an ERROR line (no traceback of its own), spawn SIGTERMs
    the others and raises ProcessExitedException in the parent."""
    lines = [
        *extra,
        *(
            f"2025-04-12 11:20:0{s},{r}11 INFO [rank{r}] train: step {s} loss 2.{90 - s}"
            for s in range(3)
            for r in range(4)
        ),
        "2025-04-12 11:20:03,512 ERROR [rank2] train: index for shard 7 is stale (1200 != 1184 records); aborting",
        *(
            f"W0412 11:20:03.560000 9000 torch/multiprocessing/spawn.py:165] Terminating process {pid} via signal SIGTERM"
            for pid in (9011, 9012, 9014)
        ),
        "Traceback (most recent call last):",
        '  File "/srv/lm/train.py", line 61, in <module>',
        "    mp.spawn(worker, args=(4,), nprocs=4)",
        '  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 340, in spawn',
        '    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")',
        '  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 296, in start_processes',
        "    while not context.join():",
        '  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 204, in join',
        "    raise ProcessExitedException(",
        "torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with exit code 4",
    ]
    return "\n".join(lines) + "\n"


def test_mp_spawn_process_index_that_exited_is_the_rank_on_one_node():
    d = diagnose_text(_spawn_exit([]), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank == 2


def test_mp_spawn_process_index_is_no_global_rank_when_the_log_shows_two_nodes():
    d = diagnose_text(
        _spawn_exit(["+ python /srv/lm/train.py --nnodes=2 --node_rank=1 --master_addr=10.0.0.1"]),
        "train.log",
        mask=False,
    )
    assert d.initiating_rank is None


# -- E ------------------------------------------------------------------------------------


def test_your_launch_command_is_the_launcher_and_script_the_log_shows():
    from rootrank.entry.commands import Launch, fit

    entry = "TORCH_DISTRIBUTED_DEBUG=DETAIL <your launch command>  # every rank ends the epoch"
    torchrun = Launch(launcher="torchrun", command=None, script="pretrain.py", per_node=4, world=4)
    assert fit(entry, torchrun, verify=True) == (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=4 pretrain.py  # every rank ends the epoch"
    )
    spawn = Launch(
        launcher="mp.spawn", command=None, script="pretrain.py", per_node=None, world=None
    )
    assert fit(entry, spawn, verify=True).startswith(
        "TORCH_DISTRIBUTED_DEBUG=DETAIL python pretrain.py"
    )
    printed = Launch(
        launcher="torchrun",
        command="torchrun --standalone --nproc-per-node=2 pretrain.py --lr 3e-4",
        script="pretrain.py",
        per_node=2,
        world=2,
    )
    assert "torchrun --standalone --nproc-per-node=2 pretrain.py --lr 3e-4" in fit(entry, printed)
    # a launcher the log does not show (assumed from the stack) or no script: left to the user
    assumed = Launch(
        launcher="torchrun",
        command=None,
        script="pretrain.py",
        per_node=4,
        world=4,
        launcher_assumed=True,
    )
    assert "<your launch command>" in fit(entry, assumed)
    unnamed = Launch(launcher="torchrun", command=None, script=None, per_node=4, world=4)
    assert "<your launch command>" in fit(entry, unnamed)


def _torn_checkpoint(call: str) -> str:
    lines = [
        "[rank0] resuming from the last checkpoint",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/lm/pretrain.py", line 91, in <module>',
        "[rank0]:     main()",
        '[rank0]:   File "/srv/lm/pretrain.py", line 40, in main',
        f"[rank0]:     {call}",
        '[rank0]:   File "/usr/lib/python3/dist-packages/torch/serialization.py", line 1486, in load',
        "[rank0]:     with _open_zipfile_reader(opened_file) as opened_zipfile:",
        '[rank0]:   File "/usr/lib/python3/dist-packages/torch/serialization.py", line 771, in __init__',
        "[rank0]:     super().__init__(torch._C.PyTorchFileReader(name_or_buffer))",
        "[rank0]: RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
        "directory. This is an internal miniz error. If you are seeing this error, there is a high "
        "likelihood that your checkpoint file is corrupted.",
    ]
    return "\n".join(lines) + "\n"


def test_the_checkpoint_the_failing_call_loads_fills_the_verify_command():
    d = diagnose_text(
        _torn_checkpoint('state = torch.load("runs/exp3/last.pt", map_location="cpu")'),
        "t.log",
        mask=False,
    )
    assert d.root_cause is not None
    assert d.root_cause.signature == "checkpoint-corrupt-or-wrong-format"
    assert "torch.load('runs/exp3/last.pt'" in d.root_cause.verify
    # a path built at run time (an f-string) is not in the log: left for the user
    d = diagnose_text(
        _torn_checkpoint('state = torch.load(f"{args.out}/last.pt")'), "t.log", mask=False
    )
    assert d.root_cause is not None
    assert "<checkpoint file>" in d.root_cause.verify  # a blank in words, never the raw field
