"""Kinds the round-16 blind set r16d showed (real torch 2.13 CPU/gloo runs), with logs written
here in the tools' own shapes.

1. A plain script's end-of-training record (``log.info("training complete")``) is a run-end
   report like torchtitan's "Training completed" (rule ``run_completed``): Python logging's
   ``log.exception`` prints the record line (``%(asctime)s %(levelname)s [rank%d] %(name)s:
   %(message)s``) and, after a newline, the caught exception's traceback from the handler's
   frame down (``Formatter.formatException``), so a ragged batch caught once per epoch on every
   rank is an error the run survived when the run logs its end and exits 0.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text


def _caught_collate(rank: int, sec: int) -> list[str]:
    return [
        f"2026-12-04 03:01:{sec:02d},73{rank} ERROR [rank{rank}] train: collate: ragged batch,"
        " padding instead",
        "Traceback (most recent call last):",
        '  File "/srv/job/train.py", line 13, in collate',
        "    return torch.stack(samples)",
        "           ^^^^^^^^^^^^^^^^^^^^",
        "RuntimeError: stack expects each tensor to be equal size, but got [12] at entry 0 and"
        " [10] at entry 1",
    ]


def _plain_script_run(end: list[str], *, uncaught: bool = False) -> str:
    lines: list[str] = []
    for epoch in range(1, 4):
        for r in (0, 1, 2):
            lines += _caught_collate(r, 20 + epoch)
        for r in (0, 1, 2):
            lines.append(
                f"2026-12-04 03:01:{24 + epoch:02d},21{r} INFO [rank{r}] train: epoch {epoch}/3"
                f" done, loss 0.0{4 - epoch}11"
            )
    if uncaught:
        lines += [
            "Traceback (most recent call last):",
            '  File "/srv/job/train.py", line 44, in <module>',
            "    main()",
            '  File "/srv/job/train.py", line 13, in collate',
            "    return torch.stack(samples)",
            "RuntimeError: stack expects each tensor to be equal size, but got [12] at entry 0"
            " and [10] at entry 1",
        ]
    return "\n".join(lines + end) + "\n"


_SCRIPT_END = ["2026-12-04 03:01:40,228 INFO [rank0] train: training complete"]


def test_a_script_s_training_complete_record_sets_caught_errors_aside() -> None:
    d = diagnose_text(_plain_script_run(_SCRIPT_END), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert len(done) == 1
    assert "train.log:64" in done[0]  # the record "training complete", the log's last line
    assert "(training complete)" in done[0]


def test_other_words_of_a_script_s_end_are_read_too() -> None:
    for end in ("Training finished.", "Finished training!", "[rank0]: training is complete"):
        d = diagnose_text(_plain_script_run([end]), "train.log", mask=False)
        assert d.root_cause is None, end


def test_an_uncaught_traceback_before_the_end_record_keeps_the_failure() -> None:
    """Control: a traceback from the script's top level ended a process."""
    d = diagnose_text(_plain_script_run(_SCRIPT_END, uncaught=True), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "collate-unequal-size"
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_training_words_inside_a_longer_message_are_no_end() -> None:
    """Control: the words go on ('training is complete for shard 2, starting eval')."""
    end = [
        "2026-12-04 03:01:40,228 INFO [rank0] train: training is complete for shard 2, eval next"
    ]
    d = diagnose_text(_plain_script_run(end), "train.log", mask=False)
    assert d.root_cause is not None


# 2. torchrun --max-restarts=1 on one node: attempt 0 loses local rank 2 to SIGKILL; the agent
#    logs its own "failed (exitcode: -9) local_rank: 2 (pid: N)" line and restarts (no summary
#    block for that attempt: torch/distributed/elastic/agent/server/api.py _invoke_run restarts
#    while restarts remain); attempt 1's workers fail in init_process_group (gloo's
#    connectFullMesh) and only that attempt gets the ChildFailedError summary.
_API = "torch/distributed/elastic/multiprocessing/api.py"
_GLOO_PAIR = "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp"


def _restart_log() -> str:
    lines = [f"step {s}/40 loss 0.{50 - s}" for s in (5, 10)]
    for r in (0, 1, 3):
        lines += [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/srv/job/train.py", line 27, in main',
            f"[rank{r}]:     dist.all_reduce(p.grad)",
            f"[rank{r}]: RuntimeError: [{_GLOO_PAIR}/pair.cc:537] Read error [127.0.0.1]:4411:"
            " Connection reset by peer. This is typically caused by a remote worker hanging or"
            " bugs in the application.",
        ]
    lines += [
        f"W1204 05:02:17.685000 700 {_API}:1028] Sending process {pid} closing signal SIGTERM"
        for pid in (701, 702, 704)
    ]
    lines.append(
        f"E1204 05:02:17.739000 700 {_API}:1002] failed (exitcode: -9) local_rank: 2 (pid: 703)"
        " of binary: /opt/venv/bin/python"
    )
    for _ in range(4):
        lines += [
            "[E1204 05:03:59.134104133 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with"
            f" [{_GLOO_PAIR}/../pair.h:311] Connect timeout [none]",
            "Traceback (most recent call last):",
            '  File "/srv/job/train.py", line 8, in main',
            '    dist.init_process_group("gloo", timeout=timedelta(seconds=20))',
            "RuntimeError: Gloo connectFullMesh failed with"
            f" [{_GLOO_PAIR}/../pair.h:311] Connect timeout [none]",
        ]
    lines += [
        f"E1204 05:04:00.849000 700 {_API}:1002] failed (exitcode: 1) local_rank: 0 (pid: 711)"
        " of binary: /opt/venv/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-04_05:04:00",
        "  host      : localhost",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 711)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return "\n".join(lines) + "\n"


def test_an_earlier_attempt_s_sigkill_gets_the_global_rank_of_its_local_rank() -> None:
    d = diagnose_text(_restart_log(), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "host-oom-killed"
    assert d.initiating_rank == 2
    assert any("Local_rank 2 is global rank 2" in r for r in d.reasoning)


# 3. Two torchrun agents of one ``--nnodes=2`` job write into one terminal (two nodes on one
#    host, or both nodes' output pasted together): node 1's summary names ``rank: 2
#    (local_rank: 0)``. A copy of a one-node job launched twice numbers its workers 0..N-1
#    again (rank == local_rank): only that is the "launched twice" fix. The crash is in the
#    user's own ctypes call: faulthandler's "Current thread" stack (Python/traceback.c
#    dump_traceback: innermost first, 'File "f.py", line N in func') ends in the user's frame.
_ELASTIC = "torch/distributed/elastic/multiprocessing/api.py"


def _two_node_segfault(node1_ranks: tuple[int, int]) -> str:
    r2, r3 = node1_ranks
    lines = [
        f"2026-12-04 05:57:22,749 [rank{r}] INFO pretok: step 20/40 tokens {20 * (r + 1)}"
        for r in (0, 1, r2, r3)
    ]
    lines += [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007fcb0f5f6b80 (most recent call first):",
        '  File "/srv/job/pretok.py", line 20 in native_len',
        '  File "/srv/job/pretok.py", line 37 in main',
        '  File "/srv/job/pretok.py", line 51 in <module>',
        "",
        f"W1204 05:57:23.060000 8806 {_ELASTIC}:1028] Sending process 8811 closing signal SIGTERM",
        f"E1204 05:57:23.125000 8806 {_ELASTIC}:1002] failed (exitcode: -11) local_rank: 0"
        " (pid: 8810) of binary: /opt/venv/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "pretok.py FAILED",
        "Failures:",
        "[1]:",
        "  time      : 2026-12-04_05:57:23",
        "  host      : localhost",
        f"  rank      : {r3} (local_rank: 1)",
        "  exitcode  : -15 (pid: 8811)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 8811",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-04_05:57:23",
        "  host      : localhost",
        f"  rank      : {r2} (local_rank: 0)",
        "  exitcode  : -11 (pid: 8810)  (SIGSEGV)",
        "  error_file: <N/A>",
        "  traceback : Signal 11 (SIGSEGV) received by PID 8810",
        f"W1204 05:57:24.612000 8787 {_ELASTIC}:1028] Sending process 8808 closing signal SIGTERM",
        f"E1204 05:57:24.679000 8787 {_ELASTIC}:1002] failed (exitcode: 1) local_rank: 1"
        " (pid: 8809) of binary: /opt/venv/bin/python",
    ]
    return "\n".join(lines) + "\n"


def test_two_agents_of_one_two_node_job_are_not_a_job_launched_twice() -> None:
    d = diagnose_text(_two_node_segfault((2, 3)), "pretok.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "segfault"
    assert d.initiator.rank == 2
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "own-native-call"
    assert "pretok.py:20 (in native_len)" in d.root_cause.fix.steps[0]


def test_two_agents_numbering_their_workers_from_0_keep_the_launched_twice_fix() -> None:
    """Control: node 1's summary says rank 0/1 for local ranks 0/1: a second copy of a
    one-node job on the same node."""
    d = diagnose_text(_two_node_segfault((0, 1)), "pretok.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "launcher-started-twice"


def test_a_crash_stack_ending_in_a_library_frame_is_not_the_user_s_native_call() -> None:
    """Control: the innermost frame is torch's own Python code (a library frame)."""
    text = _two_node_segfault((2, 3)).replace(
        '  File "/srv/job/pretok.py", line 20 in native_len',
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py",'
        " line 1473 in _ddp_init_helper",
    )
    d = diagnose_text(text, "pretok.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id != "own-native-call"


# 4. faulthandler.dump_traceback_later(timeout, exit=True), the script's own hang watchdog
#    (CPython Modules/faulthandler.c: "Timeout (0:00:12)!" then every thread's stack headed
#    "Thread 0x... (most recent call first):", then exit code 1). The stack of the process that
#    dumped ends in torch.distributed's all_reduce: it waited; torchrun's summary names it
#    (exit 1) only because its watchdog fired first.
_C10D = "/opt/venv/lib/python3.11/site-packages/torch/distributed"


def _watchdog_log(inner: list[str]) -> str:
    lines = [
        "prefetch[1]: 2 files",
        "prefetch[2]: 0 files",
        "prefetch[0]: 2 files",
        "Timeout (0:00:12)!",
        "Thread 0x00007fd9a9013b80 (most recent call first):",
        *inner,
        '  File "/srv/job/train.py", line 52 in <module>',
        f"W1204 07:05:10.664000 1183 {_ELASTIC}:1028] Sending process 1184 closing signal SIGTERM",
        f"W1204 07:05:10.665000 1183 {_ELASTIC}:1028] Sending process 1186 closing signal SIGTERM",
        f"E1204 07:05:10.733000 1183 {_ELASTIC}:1002] failed (exitcode: 1) local_rank: 1"
        " (pid: 1185) of binary: /opt/venv/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "train.py FAILED",
        "Failures:",
        "[1]:",
        "  time      : 2026-12-04_07:05:10",
        "  host      : localhost",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -15 (pid: 1184)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 1184",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-04_07:05:10",
        "  host      : localhost",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 1185)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]
    return "\n".join(lines) + "\n"


_IN_ALL_REDUCE = [
    f'  File "{_C10D}/distributed_c10d.py", line 3252 in all_reduce',
    f'  File "{_C10D}/c10d_logger.py", line 83 in wrapper',
    '  File "/srv/job/train.py", line 39 in main',
]


def test_a_watchdog_dump_in_a_collective_is_a_hang_whose_reporter_is_a_victim() -> None:
    d = diagnose_text(_watchdog_log(_IN_ALL_REDUCE), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "faulthandler-watchdog-timeout"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.evidence[0].line == 4
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "waiting-in-collective"
    assert "waited 0:00:12" in d.root_cause.fix.steps[0]
    assert d.root_cause.fix.steps[0].startswith(
        "train.py:39 (in main), where the failing process waited:"
    )
    assert d.initiator.rank is None  # rank 1 only reported the hang (it waited)
    assert any("the first rank to give up waiting" in r for r in d.reasoning)


def test_a_watchdog_dump_in_the_script_s_own_wait_takes_the_general_fix() -> None:
    inner = [
        '  File "/usr/lib/python3.11/multiprocessing/queues.py", line 103 in get',
        '  File "/srv/job/train.py", line 35 in main',
    ]
    d = diagnose_text(_watchdog_log(inner), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "faulthandler-watchdog-timeout"
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "general"


def test_other_timeout_words_are_not_the_watchdog() -> None:
    """Control: a message that speaks of a timeout in parentheses is no watchdog dump."""
    text = "[rank0]: RuntimeError: Timeout (30s) waiting for the upload\nTimeout (s) for the store: 300\n"
    d = diagnose_text(text, "train.log", mask=False)
    assert all(
        f.signature != "faulthandler-watchdog-timeout" for f in [d.root_cause, *d.collateral] if f
    )


# 5. A rank blocked on a credential prompt (git's credential.c: "Password for '<url>': ",
#    printed with no newline) while the others time out in their first collective.
def test_a_credential_prompt_names_what_the_missing_rank_waits_on() -> None:
    lines = [
        *(f"[rank{r}]: world 3, fetching shard {r}" for r in (0, 1, 2)),
        "fetched shard 2",
        "Password for 'https://svc@mirror.example.org': fetched shard 0",
    ]
    for r in (0, 2):
        lines += [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/srv/job/train.py", line 37, in main',
            f"[rank{r}]:     dist.all_reduce(emb.weight.grad)",
            f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78]"
            " Timed out waiting 20000ms for recv operation to complete",
        ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-collective-timeout"
    assert d.initiator.rank == 1
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "waits-on-prompt"
    assert "stdin=subprocess.DEVNULL" in d.root_cause.fix.steps[0]


def test_the_same_hang_without_a_prompt_keeps_the_rank_never_joined_fix() -> None:
    """Control: no prompt in the log."""
    lines = [*(f"[rank{r}]: world 3, fetching shard {r}" for r in (0, 1, 2))]
    lines += ["fetched shard 2", "fetched shard 0"]
    for r in (0, 2):
        lines += [
            f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78]"
            " Timed out waiting 20000ms for recv operation to complete",
        ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id != "waits-on-prompt"


# 6. The rank the others waited for kept printing JSON records of its own (json.dumps with a
#    "rank" key) while it polled for a missing file: its last record before their timeout is
#    the phase it stopped in, and the fix quotes it.
def test_the_waited_for_rank_s_last_json_record_is_quoted_in_the_fix() -> None:
    lines = [
        '{"ts": 1.0, "rank": 2, "event": "start", "world": 3}',
        '{"ts": 1.1, "rank": 0, "event": "index_loaded", "n": 48}',
        '{"ts": 1.2, "rank": 1, "event": "start", "world": 3}',
        '{"ts": 1.3, "rank": 1, "event": "waiting_for_index", "path": "data/shard-1.idx", "attempt": 1}',
        '{"ts": 1.4, "rank": 2, "event": "index_loaded", "n": 48}',
        '{"ts": 4.3, "rank": 1, "event": "waiting_for_index", "path": "data/shard-1.idx", "attempt": 2}',
    ]
    for r in (0, 2):
        lines += [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/srv/job/train.py", line 38, in main',
            f"[rank{r}]:     dist.all_reduce(p.grad)",
            f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78]"
            " Timed out waiting 20000ms for recv operation to complete",
        ]
    lines += [
        "trap.py FAILED",
        "Failures:",
        "[1]:",
        "  time      : 2026-12-04_02:56:33",
        "  host      : localhost",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : -15 (pid: 6164)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 6164",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-04_02:56:33",
        "  host      : localhost",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 6163)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.initiator.rank == 1
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "rank-stopped-at-its-last-line"
    assert '"attempt": 2' in d.root_cause.fix.steps[0]
    assert "line 6:" in d.root_cause.fix.steps[0]


# 7. A rank that aborted in gloo's size enforce (libstdc++'s "terminate called after throwing
#    an instance of 'gloo::EnforceNotMet'", exit -6) printed no Python traceback because it
#    died inside a collective, not because it never reached the others' line.
def test_an_aborted_rank_is_not_said_to_have_never_reached_the_others_line() -> None:
    g = "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc"
    lines = [
        f"[default{r}]:rank {r}: micro_batch={8 if r != 2 else 4}, grad_accum={4 if r != 2 else 8}"
        for r in range(4)
    ]
    lines += [
        "[default2]:terminate called after throwing an instance of 'gloo::EnforceNotMet'",
        f"[default2]:  what():  [enforce fail at {g}:456] op.preamble.length <= op.nbytes. 64 vs"
        " 4. Received data size doesn't match expected size. Is there a distributed collective"
        " mismatch in your code?",
    ]
    for r in (1, 3):
        lines += [
            f"[default{r}]:[rank{r}]: Traceback (most recent call last):",
            f'[default{r}]:[rank{r}]:   File "/srv/job/train.py", line 38, in main',
            f"[default{r}]:[rank{r}]:     dist.all_reduce(p.grad)",
            f"[default{r}]:[rank{r}]: RuntimeError: [{g}:553] Connection closed by peer"
            " [127.0.0.1]:10119. This is typically caused by a remote worker crashing.",
        ]
    lines += [
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-04_02:55:45",
        "  host      : localhost",
        "  rank      : 2 (local_rank: 2)",
        "  exitcode  : -6 (pid: 5996)",
        "  error_file: <N/A>",
        "  traceback : Signal 6 (SIGABRT) received by PID 5996",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    # 64 vs 4 bytes after rank 2's grad_accum differed: two collectives met, a desync
    # (rootrank.analysis.count_desync, heldout r20e)
    assert d.root_cause.signature == "gloo-size-count-divergence"
    assert d.initiator.rank == 2
    assert not any("never reached this line" in step for step in d.root_cause.fix.steps)


# 8. OneCycleLR stepped past its total (torch/optim/lr_scheduler.py OneCycleLR.get_lr's
#    ValueError), raised by the one process whose shard is shorter, as mp.spawn reports it
#    (torch/multiprocessing/spawn.py ProcessRaisedException: "-- Process 1 terminated with the
#    following error:" and the child's traceback).
def test_a_one_cycle_schedule_stepped_past_its_total_names_the_schedule_length() -> None:
    lines = [
        "[rank 1] shard rows=136 batches/epoch=17 scheduler total_steps=34 loop steps/epoch=20",
        "torch.multiprocessing.spawn.ProcessRaisedException: ",
        "",
        "-- Process 1 terminated with the following error:",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 87,'
        " in _wrap",
        "    fn(i, *args)",
        '  File "/srv/job/train.py", line 36, in worker',
        "    opt.step(); sched.step(); opt.zero_grad()",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/optim/lr_scheduler.py", line 2577,'
        " in get_lr",
        "    raise ValueError(",
        "ValueError: Tried to step 35 times. The specified number of total steps is 34",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "lr-scheduler-total-steps-exceeded"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiator.rank == 1
    assert "the schedule has 34 steps and the loop reached step 35" in d.root_cause.fix.steps[0]


# 9. json.dump of a state holding a 0-d tensor (Lib/json/encoder.py JSONEncoder.default's
#    TypeError), on the one rank that writes the trainer state.
def test_a_tensor_in_a_json_state_is_named_with_the_item_fix() -> None:
    lines = [
        "{'eval_loss': 0.1337, 'step': 10}",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/job/train.py", line 40, in main',
        '[rank0]:     write_trainer_state(state, f"out/checkpoint-{step}")',
        '[rank0]:   File "/srv/job/train.py", line 11, in write_trainer_state',
        "[rank0]:     json.dump(state, f, indent=2)",
        '[rank0]:   File "/usr/lib/python3.11/json/encoder.py", line 180, in default',
        "[rank0]:     raise TypeError(f'Object of type {o.__class__.__name__} '",
        "[rank0]: TypeError: Object of type Tensor is not JSON serializable",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "json-tensor-not-serializable"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiator.rank == 0
    assert "metric.item()" in d.root_cause.fix.steps[0]
    assert d.root_cause.fix.steps[0].startswith("train.py:11 (in write_trainer_state)")


# 10. A healthy run whose stall reporter (dump_traceback_later(4, exit=False)) printed its
#     "Timeout" stacks on one slow step and then finished: no failure, not a cut traceback.
def test_watchdog_stacks_of_a_run_that_finished_are_no_failure() -> None:
    lines = [
        "train:  45%|████      | 9/20 [00:00<00:00, 21.02it/s]",
        "Timeout (0:00:04)!",
        "Thread 0x00007fa1aa7cdb80 (most recent call first):",
        '  File "/srv/job/train.py", line 22 in sync_to_bucket',
        '  File "/srv/job/train.py", line 43 in worker',
        "Timeout (0:00:04)!",
        "Thread 0x00007f09b604ab80 (most recent call first):",
        f'  File "{_C10D}/distributed_c10d.py", line 3252 in all_reduce',
        '  File "/srv/job/train.py", line 38 in worker',
        "train: 100%|██████████| 20/20 [00:07<00:00,  2.61it/s]",
        "training complete",
        "all workers exited cleanly",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    assert d.root_cause is None
    assert d.unclassified is None
    assert any("[run_completed]" in r for r in d.reasoning)


# 11. all_to_all_single with one rank's splits larger than the others expect: gloo's receive
#     check (pair.cc "op.preamble.length <= op.nbytes. X vs Y") aborts every receiver, and the
#     sender, which receives no more than it posted, only sees their connections close.
def _alltoall_log(aborted: tuple[int, ...]) -> str:
    g = "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc"
    lines = [f"[RANK {r}][INFO] shard {r}: expert capacity={9 if r == 3 else 8}" for r in range(4)]
    for _ in aborted:
        lines += [
            "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
            f"  what():  [enforce fail at {g}:456] op.preamble.length <= op.nbytes. 576 vs 512."
            " Received data size doesn't match expected size. Is there a distributed collective"
            " mismatch in your code?",
        ]
    lines += [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/srv/job/moe.py", line 38, in main',
        "[rank3]:     dist.all_reduce(p.grad)",
        f"[rank3]: RuntimeError: [{g}:537] Read error [127.0.0.1]:19375: Connection reset by peer.",
        "Failures:",
    ]
    for i, r in enumerate(range(4)):
        code = "-6 (pid: 70{r})  (SIGABRT)" if r in aborted else "-15 (pid: 70{r})  (SIGTERM)"
        lines += [
            f"[{i}]:",
            "  time      : 2026-12-04_02:58:33",
            "  host      : localhost",
            f"  rank      : {r} (local_rank: {r})",
            "  exitcode  : " + code.format(r=r),
        ]
    return "\n".join(lines) + "\n"


def test_the_one_rank_gloo_s_receive_check_did_not_abort_is_the_sender() -> None:
    d = diagnose_text(_alltoall_log((0, 1, 2)), "moe.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "gloo-size-mismatch"
    assert d.initiator.rank == 3
    assert d.initiator.strategy == "lone_non_aborter"


def test_one_aborted_receiver_does_not_name_a_sender() -> None:
    """Control: a ring's neighbour aborts alone; the others only lost a peer."""
    d = diagnose_text(_alltoall_log((1,)), "moe.log", mask=False)
    assert d.initiator.strategy != "lone_non_aborter"
