"""The kinds of miss the r14c held-out runs showed, each on text written here in the tools'
real shape (torch 2.13 torchrun/gloo output):

A. torchrun's ``failed (exitcode: -15) local_rank: N (pid: P)`` line names the failure with
   the smallest timestamp among *all* its workers' failures, the ones it SIGTERMed itself in
   ``close()`` included, and a worker's timestamp is its ``error.json``'s when ``@record``
   wrote one: a victim that raised 'Connection closed by peer', wrote its error file and was
   still tearing down when the agent stopped it sorts before the worker that really failed
   first with no error file. A SIGTERM the agent itself sent (its pid in ``Sending process P
   closing signal SIGTERM``) is no stop from outside; the rank the failure table shows
   exiting by itself (a nonzero code that is no signal, every other rank signalled) is the
   peer the others lost, and with nothing deeper in the log the root is the launcher's
   report of it.
B. a run that reached its end (every rank at ``step 10/10``) survived the caught errors
   before it, however many lines they hold: an error read on more lines than a finding keeps
   as evidence (a size-mismatch list on every rank) is placed by the scan's last error line,
   not given up on as "maybe after the end".
C. a non-finite loss: the rank whose own (local) loss went NaN/Inf at a step where every
   other rank still printed a finite one is where it entered; the all-reduced loss and a
   guard on another rank follow (the onset of one rank's metric names it even when an
   all-reduced metric went NaN on every rank at the same step, and it explains a later guard
   on any rank: the all-reduce carried the NaN there). Plain torchrun output carries no rank prefix: a progress
   line that names its rank once in its body (``it 4 rank 3 | tok_loss ...``) is that rank's.
D. Hugging Face's logging format puts the logger's location first (``[INFO|trainer.py:2128]``):
   ``name.py:NN`` is a code location, never a metric series named ``name.py``.
E. ranks that built different models stop wherever the difference trips them (the odd rank
   in DDP's parameter check, a peer in the module sync or in backward after it left): their
   differing call sites are a consequence, so the fix starts at the odd rank's own line, not
   with "make every rank reach the same collectives".
F. per-rank files pasted with ``tail -n +1 logs/*/attempt_0/*/std*.log``: each ``==> path <==``
   header starts that file's lines, and the rank its path names (``attempt_0/2/``: local rank
   2) is theirs, as if the file had been read on its own.
G. mp.spawn's ``ProcessExitedException: process 1 terminated with signal SIGKILL`` is raised in
   the parent: its traceback's frames (``mp.spawn(...)`` at the script's top level) are the
   launching process's, not rank 1's code, and are no "where rank 1 failed".
H. a torchelastic table entry whose rank exceeds its local rank (``rank : 5 (local_rank: 1)``)
   ran on a later node (torchrun numbers workers node rank x per node + local rank): the job
   had several nodes of rank - local rank workers each, and its rerun is one torchrun per node.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.scan import body_rank

# -- A ------------------------------------------------------------------------------------

_API = "torch/distributed/elastic/multiprocessing/api.py"
_GLOO = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:{port}. This is typically caused by a remote worker "
    "crashing. Check the logs of the remote worker before reporting an error. GLHF!"
)


def _entry(idx: int, rank: int, code: int, pid: int, error_file: str, tb: str) -> str:
    sig = "  (SIGTERM)" if code == -15 else " "
    return (
        f"[{idx}]:\n"
        "  time      : 2026-12-03_09:41:07\n"
        "  host      : gpu-a17\n"
        f"  rank      : {rank} (local_rank: {rank})\n"
        f"  exitcode  : {code} (pid: {pid}){sig}\n"
        f"  error_file: {error_file}\n"
        f"  traceback : {tb}\n"
    )


def _agent_log(failed_pid: int, closed: list[int]) -> str:
    """Three workers (pids 7100-7102); rank 1 (pid 7101) exits with code 2 and writes no
    error file; ranks 0 and 2 raise 'Connection closed by peer' under @record (error files
    written) and are stopped by the agent's SIGTERM while they tear down; torchrun's
    ``failed`` line and Root Cause name ``failed_pid``."""
    lines = [
        "[default0]:epoch 1 it 40 loss 2.113",
        "[default1]:epoch 1 it 40 loss 2.113",
        "[default2]:epoch 1 it 40 loss 2.113",
    ]
    for pid in closed:
        lines.append(
            f"W1203 09:41:08.118000 7090 {_API}:1028] Sending process {pid} closing signal SIGTERM"
        )
    rank_of = {7100: 0, 7101: 1, 7102: 2}
    code = -15 if failed_pid in closed else 1
    lines.append(
        f"E1203 09:41:08.390000 7090 {_API}:1002] failed (exitcode: {code}) local_rank:"
        f" {rank_of[failed_pid]} (pid: {failed_pid}) of binary: /opt/venv/bin/python3"
    )
    lines += [
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/torchrun", line 6, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "pretrain.py FAILED",
        "-" * 60,
        "Failures:",
    ]
    text = "\n".join(lines) + "\n"
    err = "/tmp/torchelastic_q1/none_k2/attempt_0/{r}/error.json"
    entries = {
        0: _entry(
            0,
            0,
            -15,
            7100,
            err.format(r=0),
            "Traceback (most recent call last):\n  " + _GLOO.format(port=41221) + "\n  ",
        ),
        1: _entry(
            0,
            1,
            2,
            7101,
            "<N/A>",
            "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        ),
        2: _entry(
            0,
            2,
            -15,
            7102,
            err.format(r=2),
            "Traceback (most recent call last):\n  " + _GLOO.format(port=38090) + "\n  ",
        ),
    }
    root = rank_of[failed_pid]
    n = 1
    for r in (0, 1, 2):
        if r == root:
            continue
        text += entries[r].replace("[0]:", f"[{n}]:", 1)
        n += 1
    text += "-" * 60 + "\nRoot Cause (first observed failure):\n" + entries[root]
    text += "=" * 60 + "\n"
    return text


def test_a_sigterm_the_agent_sent_is_no_outside_stop_and_the_self_exited_rank_leads():
    # the agent SIGTERMed 7100 and 7102, then its "failed" line and Root Cause name 7102
    # (its error file is older than 7101's detection): rank 1 exited by itself (code 2)
    d = diagnose_text(_agent_log(7102, [7100, 7102]), "torchrun.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.root_cause.signature == "elastic-child-failed"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "elastic_summary"
    assert "worker-sigterm-exit" not in {f.signature for f in d.findings}
    collateral = {f.signature for f in d.collateral}
    assert "connection-reset-by-peer" in collateral
    # the table's error files show torchrun's log dir: rank 1's own stderr is beside them
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "log-dir-on-disk"
    assert "/tmp/torchelastic_q1/none_k2/attempt_0/1/stderr.log" in d.root_cause.fix.steps[0]


def test_a_sigterm_no_closing_signal_names_stays_an_outside_stop():
    # rank 2 (pid 7102) was SIGTERMed before the agent stopped anyone: the agent's closing
    # signals go to 7100 and 7101 only, every worker ended by SIGTERM, none wrote an error file
    log = (
        "[default2]:epoch 1 it 40 loss 2.113\n"
        f"W1203 09:41:08.118000 7090 {_API}:1028] Sending process 7100 closing signal SIGTERM\n"
        f"W1203 09:41:08.119000 7090 {_API}:1028] Sending process 7101 closing signal SIGTERM\n"
        f"E1203 09:41:08.390000 7090 {_API}:1002] failed (exitcode: -15) local_rank: 2"
        " (pid: 7102) of binary: /opt/venv/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "Failures:\n"
        + _entry(1, 0, -15, 7100, "<N/A>", "Signal 15 (SIGTERM) received by PID 7100")
        + _entry(2, 1, -15, 7101, "<N/A>", "Signal 15 (SIGTERM) received by PID 7101")
        + "Root Cause (first observed failure):\n"
        + _entry(0, 2, -15, 7102, "<N/A>", "Signal 15 (SIGTERM) received by PID 7102")
    )
    d = diagnose_text(log, "torchrun.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "worker-sigterm-exit"
    assert d.root_cause.failure_class == "preemption-sigterm"
    assert d.initiating_rank == 2


def test_a_the_self_exited_rank_named_by_the_agent_is_read_as_before():
    # the agent's line names rank 1 itself (code 1): the elastic report, rank 1
    d = diagnose_text(_agent_log(7101, [7100, 7102]), "torchrun.log", mask=False)
    assert d.root_cause is not None
    assert d.initiating_rank == 1
    assert d.root_cause.signature == "elastic-child-failed"


# -- B ------------------------------------------------------------------------------------


def _warm_start_log(extra_after_end: bool) -> str:
    """Three ranks (torchrun --tee 3) each log a caught load_state_dict mismatch (two size
    lines each: six lines, more than a finding keeps), then train to step 6/6."""
    lines = []
    for r in (1, 0, 2):
        p = f"[default{r}]:"
        lines += [
            f"{p}2026-12-03 11:02:07,41{r} [ERROR] finetune: could not load adapter from"
            " /data/adapters/a7.pt; starting it from zero",
            f"{p}Traceback (most recent call last):",
            f'{p}  File "/home/u/finetune.py", line 22, in load_adapter',
            f"{p}    adapter.load_state_dict(torch.load(path))",
            f'{p}  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",'
            " line 2638, in load_state_dict",
            f"{p}    raise RuntimeError(",
            f"{p}RuntimeError: Error(s) in loading state_dict for Linear:",
            f"{p}\tsize mismatch for weight: copying a param with shape torch.Size([24, 48]) from"
            " checkpoint, the shape in current model is torch.Size([16, 48]).",
            f"{p}\tsize mismatch for bias: copying a param with shape torch.Size([24]) from"
            " checkpoint, the shape in current model is torch.Size([16]).",
        ]
    for step in range(1, 7):
        for r in (0, 1, 2):
            lines.append(
                f"[default{r}]:2026-12-03 11:02:1{step},000 [INFO] finetune: rank {r}"
                f" step {step}/6 loss {2.0 - step / 10:.3f}"
            )
    if extra_after_end:
        lines += [
            "[default0]:RuntimeError: Error(s) in loading state_dict for Linear:",
            "[default0]:\tsize mismatch for weight: copying a param with shape torch.Size([24,"
            " 48]) from checkpoint, the shape in current model is torch.Size([16, 48]).",
        ]
    return "\n".join(lines) + "\n"


def test_b_errors_beyond_the_kept_evidence_before_a_completed_run_were_survived():
    d = diagnose_text(_warm_start_log(False), "torchrun.log", mask=False)
    assert d.root_cause is None
    assert any("[run_completed]" in r for r in d.reasoning)
    assert "state-dict-size-mismatch" in {f.signature for f in d.collateral}


def test_b_an_error_after_the_end_keeps_the_failure():
    d = diagnose_text(_warm_start_log(True), "torchrun.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert not any("[run_completed]" in r for r in d.reasoning)


# -- C ------------------------------------------------------------------------------------


def _nan_log(bad_ranks: tuple[int, ...]) -> str:
    """Four ranks print ``it N rank R | tok_loss X | mean_loss Y`` (no prefix: plain torchrun);
    at it 4 the ranks in ``bad_ranks`` print tok_loss nan, the mean is nan everywhere, and
    rank 0's guard raises FloatingPointError; the others lose their peer."""
    lines = []
    for it in range(1, 5):
        for r in (2, 0, 3, 1):
            local = "nan" if it == 4 and r in bad_ranks else f"{0.9 - it / 20 + r / 100:.4f}"
            mean = "nan" if it == 4 else f"{0.9 - it / 20:.4f}"
            lines.append(f"it {it} rank {r} | tok_loss {local} | mean_loss {mean}")
    lines += [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/job/pretrain.py", line 61, in <module>',
        "[rank0]:     main()",
        '[rank0]:   File "/srv/job/pretrain.py", line 48, in main',
        '[rank0]:     raise FloatingPointError(f"mean loss is {mean} at it {it}")',
        "[rank0]: FloatingPointError: mean loss is nan at it 4",
        "[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection"
        " closed by peer [127.0.0.1]:50112",
    ]
    return "\n".join(lines) + "\n"


def test_c_the_rank_whose_own_loss_went_non_finite_first_started_it():
    d = diagnose_text(_nan_log((3,)), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank == 3
    assert d.initiator is not None and d.initiator.strategy == "first_nonfinite"
    assert any("tok_loss went non-finite at step 4" in r for r in d.reasoning)
    # the rank's own tok_loss onset (not the mean every rank all-reduces) is the root, and it
    # explains rank 0's guard: the fix is the one-rank variant, on rank 3's batch
    assert d.root_cause.signature == "metric-nonfinite"
    assert d.root_cause.evidence[0].text.startswith("it 4 rank 3 | tok_loss nan")
    assert d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "one-rank-first"
    assert "nan-guard-exception" in {f.signature for f in d.collateral}


def test_c_every_rank_non_finite_at_once_names_no_rank():
    d = diagnose_text(_nan_log((0, 1, 2, 3)), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank is None


def test_c_a_line_names_its_own_rank_once():
    assert body_rank("it 4 rank 3 | tok_loss 0.81") == 3
    assert body_rank("train step 3 rank=0 loss 1.79") == 0
    assert body_rank("rank 1 waits for rank 0 at step 5") is None  # speaks of two ranks
    assert body_rank("step 5: all ranks 0-3 ready") is None
    assert body_rank("step 5 local_rank 2 loss 0.3") is None
    assert body_rank("step 5 rank 2.5 loss 0.3") is None


# -- D ------------------------------------------------------------------------------------


def test_d_a_logger_location_is_no_metric():
    lines = [
        f"[INFO|run_clm.py:{310 + i}] 2026-12-03 12:00:0{i},101 >> step {i} loss {2.5 - i / 10:.3f}"
        for i in range(1, 6)
    ]
    d = diagnose_text("\n".join(lines) + "\n", "train.log", mask=False)
    names = {m.name for m in d.metrics}
    assert "loss" in names
    assert not any(n.endswith(".py") for n in names)
    loss = next(m for m in d.metrics if m.name == "loss")
    assert loss.points[-1] == [5, 2.0]


# -- E ------------------------------------------------------------------------------------

_DDP_SITE = "/opt/venv/lib/python3.11/site-packages/torch"


def test_e_a_divergent_model_s_fix_starts_at_the_odd_rank_s_line():
    log = (
        "rank 3: built head with 1003 classes\n"
        "rank 0: built head with 1000 classes\n"
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/work/cls/train_cls.py", line 52, in <module>\n'
        "[rank3]:     main()\n"
        '[rank3]:   File "/work/cls/train_cls.py", line 31, in main\n'
        "[rank3]:     model = DDP(model)\n"
        f'[rank3]:   File "{_DDP_SITE}/nn/parallel/distributed.py", line 1064, in __init__\n'
        "[rank3]:     _verify_param_shape_across_processes(self.process_group, parameters)\n"
        f'[rank3]:   File "{_DDP_SITE}/distributed/utils.py", line 286, in'
        " _verify_param_shape_across_processes\n"
        "[rank3]:     return dist._verify_params_across_processes(process_group, tensors, logger)\n"
        "[rank3]: RuntimeError: [3]: params[4] in this process with sizes [1003, 256] appears not"
        " to match sizes of the same param in process 0.\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/cls/train_cls.py", line 52, in <module>\n'
        "[rank0]:     main()\n"
        '[rank0]:   File "/work/cls/train_cls.py", line 31, in main\n'
        "[rank0]:     model = DDP(model)\n"
        f'[rank0]:   File "{_DDP_SITE}/distributed/utils.py", line 326, in _sync_params_and_buffers\n'
        "[rank0]:     dist._broadcast_coalesced(\n"
        "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection"
        " closed by peer [127.0.0.1]:40007\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/cls/train_cls.py", line 52, in <module>\n'
        "[rank1]:     main()\n"
        '[rank1]:   File "/work/cls/train_cls.py", line 40, in main\n'
        "[rank1]:     loss.backward()\n"
        f'[rank1]:   File "{_DDP_SITE}/autograd/graph.py", line 979, in _engine_run_backward\n'
        "[rank1]:     return Variable._execution_engine.run_backward(\n"
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection"
        " closed by peer [127.0.0.1]:40011\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "divergent-model-across-ranks"
    assert d.initiating_rank == 3
    assert rc.call_sites == []
    assert rc.fix.steps[0].startswith(
        "train_cls.py:31 (in main), where rank 3 raised RuntimeError:"
    )
    assert not any("same collectives" in step for step in rc.fix.steps)


# -- F ------------------------------------------------------------------------------------


def _tail_paste() -> str:
    out = ["$ tail -n +1 runs/none_q8/attempt_0/*/stdout.log runs/none_q8/attempt_0/*/stderr.log"]
    for r, last in ((0, 6), (1, 6), (2, 3)):
        out.append(f"==> runs/none_q8/attempt_0/{r}/stdout.log <==")
        out += [f"step {i}/20 loss {1.5 - i / 10:.3f}" for i in range(1, last + 1)]
        if r == 2:
            out.append("re-indexing shard 17 ...")
        out.append("")
    for r in (0, 1):
        out.append(f"==> runs/none_q8/attempt_0/{r}/stderr.log <==")
        out += [
            f"[rank{r}]: Traceback (most recent call last):",
            f'[rank{r}]:   File "/work/lm/train_lm.py", line 66, in main',
            f"[rank{r}]:     dist.all_reduce(g)",
            f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"
            " Timed out waiting 20000ms for recv operation to complete",
            "",
        ]
    out.append("==> runs/none_q8/attempt_0/2/stderr.log <==")
    return "\n".join(out) + "\n"


def test_f_a_tail_header_gives_its_file_s_rank_to_the_lines_after_it():
    d = diagnose_text(_tail_paste(), "pasted.log", mask=False)
    steps = {r.rank: r.step for r in d.progress.ranks if r.rank is not None}
    assert steps == {0: 6, 1: 6, 2: 3}
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2


# -- G ------------------------------------------------------------------------------------


def test_g_the_spawn_parent_s_frames_are_not_the_killed_rank_s():
    log = (
        "2026-12-03 13:10:02,311 INFO [proc0] epoch 2 iter 300 loss 0.912\n"
        "2026-12-03 13:10:02,315 INFO [proc1] epoch 2 iter 300 loss 0.912\n"
        "W1203 13:10:09.004000 4410 torch/multiprocessing/spawn.py:165] Terminating process 4431"
        " via signal SIGTERM\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/speech/train_asr.py", line 212, in <module>\n'
        "    mp.spawn(run, args=(world,), nprocs=world)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 340,'
        " in spawn\n"
        '    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")\n'
        '  File "/opt/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 192,'
        " in join\n"
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal"
        " SIGKILL\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "host-oom-killed"
    assert d.initiating_rank == 1
    assert rc.user_frame is None
    assert rc.frames == []
    assert not rc.fix.steps[0].startswith("train_asr.py:212")


# -- H ------------------------------------------------------------------------------------


def test_h_a_rank_beyond_its_local_rank_shows_the_nodes_and_their_size():
    lines = [f"[rank{r}]:step 40 | loss 1.02" for r in range(8)]
    lines += [
        "[rank5]: Traceback (most recent call last):",
        '[rank5]:   File "/home/u/mt/train_mt.py", line 91, in <module>',
        "[rank5]:     main()",
        '[rank5]:   File "/home/u/mt/train_mt.py", line 77, in main',
        "[rank5]:     src = batch['src_ids']",
        "[rank5]: KeyError: 'src_ids'",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "train_mt.py FAILED",
        "-" * 60,
        "Failures:",
        "[1]:",
        "  time      : 2026-12-03_15:01:12",
        "  host      : worker-b",
        "  rank      : 4 (local_rank: 0)",
        "  exitcode  : -15 (pid: 9021)  (SIGTERM)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 9021",
        "-" * 60,
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-03_15:01:11",
        "  host      : worker-b",
        "  rank      : 5 (local_rank: 1)",
        "  exitcode  : 1 (pid: 9022)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "=" * 60,
    ]
    d = diagnose_text("\n".join(lines) + "\n", "node-b.log", mask=False)
    rc = d.root_cause
    assert rc is not None and d.initiating_rank == 5
    assert rc.verify.startswith("torchrun --nproc-per-node=4 --nnodes=2 --node-rank=<node rank>")
