"""Causal analysis on small multi-rank logs written the way PyTorch prints them: which
finding is the root cause, which rank started it, what is collateral."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

DATA = Path(__file__).parent / "data"

WATCHDOG = (
    "[rank{r}]:[E1129 10:12:0{r}.554000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1048576, NumelOut=1048576, "
    "Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
)


def test_oom_on_one_rank_explains_watchdog_timeouts_on_the_others():
    lines = [
        "[rank0]:[W1129 10:01:00.000000 ProcessGroupNCCL.cpp:4215] Warning: harmless",
        "[rank5]: Traceback (most recent call last):",
        '[rank5]:   File "/home/user/proj/train.py", line 88, in <module>',
        "[rank5]:     loss = model(batch).loss",
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity of 79.14 GiB of which 1.12 GiB is free.",
    ]
    lines += [WATCHDOG.format(r=r, seq=4120, op="ALLREDUCE") for r in (0, 1, 2, 3, 4, 6, 7)]
    diag = diagnose_text("\n".join(lines), "train.log")
    rc = diag.root_cause
    assert rc.failure_class == "cuda-oom"
    assert rc.evidence[0].line == 5
    assert diag.initiating_rank == 5
    timeouts = [g for g in diag.collateral if g.failure_class == "collective-timeout"]
    assert len(timeouts) == 1
    assert timeouts[0].ranks == [0, 1, 2, 3, 4, 6, 7]
    assert timeouts[0].count == 7
    assert "2.00 GiB" in " ".join(rc.fix.steps + [rc.summary])


def test_the_rank_missing_from_identical_timeouts_is_the_suspect():
    lines = [f"[rank{r}]: starting step 4119" for r in range(4)]
    lines += [WATCHDOG.format(r=r, seq=4120, op="ALLREDUCE") for r in (0, 1, 3)]
    diag = diagnose_text("\n".join(lines), "hang.log")
    assert diag.root_cause.failure_class == "collective-timeout"
    assert diag.initiating_rank == 2
    assert any("rank 2 is the one known rank" in r.lower() for r in diag.reasoning)


def test_the_rank_behind_in_seqnum_is_the_suspect():
    lines = [WATCHDOG.format(r=r, seq=4120, op="ALLREDUCE") for r in (0, 1, 3)]
    lines.append(WATCHDOG.format(r=2, seq=4119, op="ALLREDUCE"))
    diag = diagnose_text("\n".join(lines), "hang.log")
    assert diag.initiating_rank == 2


def test_earliest_timestamp_wins_between_ranks_with_the_same_cause():
    lines = [
        "[rank3]:[E1129 10:02:05.000000 x.cpp:1] CUDA error: an illegal memory access was encountered",
        "[rank1]:[E1129 10:02:01.000000 x.cpp:1] CUDA error: an illegal memory access was encountered",
    ]
    diag = diagnose_text("\n".join(lines), "x.log")
    assert diag.root_cause.failure_class == "cuda-illegal-memory-access"
    assert diag.initiating_rank == 1
    assert diag.root_cause.evidence[0].line == 2


def test_healthy_output_has_no_root_cause():
    text = "\n".join(
        f"[rank{r}]: step {s} loss {1.0 / (s + 1):.4f}" for s in range(50) for r in range(4)
    )
    diag = diagnose_text(text, "ok.log")
    assert diag.root_cause is None
    assert diag.unclassified is None
    assert diag.initiating_rank is None


def test_unknown_exception_is_unclassified_not_a_verdict():
    text = "\n".join(
        [
            "[rank2]: Traceback (most recent call last):",
            '[rank2]:   File "/home/user/proj/train.py", line 7, in <module>',
            "[rank2]:     frobnicate()",
            "[rank2]: mylib.FrobnicationHalted: the frobnicator halted",
        ]
    )
    diag = diagnose_text(text, "u.log")
    assert diag.root_cause is None
    assert diag.unclassified is not None
    assert diag.unclassified.rank == 2
    assert diag.unclassified.evidence[0].line == 4
    assert "FrobnicationHalted" in diag.unclassified.title


def test_json_contract_fields():
    lines = [
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 15.77 GiB of which 3.12 MiB is free.",
        WATCHDOG.format(r=0, seq=10, op="ALLREDUCE"),
    ]
    d = diagnose_text("\n".join(lines), "c.log").to_dict()
    assert d["schema"] == "rootrank.diagnosis/1"
    rc = d["root_cause"]
    for key in (
        "signature",
        "failure_class",
        "title",
        "confidence",
        "rank",
        "host",
        "evidence",
        "fix",
        "verify",
    ):
        assert key in rc
    assert 0 <= rc["confidence"] <= 1
    assert rc["evidence"][0] == {
        "path": "c.log",
        "line": 1,
        "rank": 1,
        "text": lines[0][len("[rank1]: ") :],
        "column_start": lines[0].index("CUDA out of memory"),
        "column_end": rc["evidence"][0]["column_end"],
    }
    assert d["initiating_rank"] == 1
    assert d["collateral"][0]["ranks"] == [0]
    assert set(d["ranks"]) >= {"seen", "hosts", "world_size"}


def test_source_code_quoted_in_a_traceback_is_not_a_message():
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/home/user/proj/train.py", line 12, in <module>',
            '    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")',
            "KeyError: 'labels'",
        ]
    )
    diag = diagnose_text(text, "t.log")
    assert "cuda-oom" not in {f.signature for f in diag.findings}
    assert diag.root_cause.failure_class == "user-code-exception"
    assert diag.root_cause.evidence[0].line == 4


def test_verify_and_fix_name_the_script_the_log_names():
    from rootrank.engine import diagnose_text

    oom = (
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 1 has a total capacity of 79.15 GiB of which 1.21 GiB is free.\n"
    )
    launched = "+ torchrun --nnodes 1 --nproc-per-node 4 recipes/sft_llama.py --lr 1e-4\n" + oom
    # the command as the user ran it (issue 10: commands that fit the job)
    assert (
        "torchrun --nnodes 1 --nproc-per-node 4 recipes/sft_llama.py --lr 1e-4"
        in diagnose_text(launched).root_cause.verify
    )
    summary = oom + "===\ntools/pretrain.py FAILED\n---\nFailures:\n  <NO_OTHER_FAILURES>\n"
    assert " tools/pretrain.py " in diagnose_text(summary).root_cause.verify
    framed = (
        "Traceback (most recent call last):\n"
        '  File "/srv/proj/finetune.py", line 88, in <module>\n'
        "    main()\n" + oom.replace("[rank1]: ", "")
    )
    assert " finetune.py " in diagnose_text(framed).root_cause.verify
    # no script in the log: the entries' train.py stays a visible blank, never run as it stands
    assert " <train.py> " in diagnose_text(oom).root_cause.verify


def test_a_rank_is_not_named_when_another_rank_failed_in_a_way_the_log_cuts_or_nothing_explains():
    from rootrank.engine import diagnose_text

    oom = (
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 56.00 MiB. "
        "GPU 5 has a total capacity of 79.33 GiB of which 49.81 MiB is free.\n"
    )
    cut = '[rank6]: Traceback (most recent call last):\n[rank6]:   File "/w/train.py", line 9, in <module>\n[rank6]:     main()\n'
    # a traceback cut before the OOM's line may hold an error that came first
    d = diagnose_text(cut.replace("main()\n", "main()\n[rank6]:     step()\n") + oom)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank is None
    assert any(r.startswith("Rank 6 also failed") for r in d.reasoning)
    # one cut after it names no error: the OOM's own rank is named (heldout r20a case 07)
    assert diagnose_text(oom + cut).initiating_rank == 5
    unknown = '[rank2]: Traceback (most recent call last):\n[rank2]:   File "/w/train.py", line 9, in <module>\n[rank2]: mylib.WeirdError: boom\n'
    assert diagnose_text(unknown + oom).initiating_rank is None
    watchdog = (
        "[rank2]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2.\n"
    )
    assert diagnose_text(oom + watchdog).initiating_rank == 5  # explained: collateral
    assert diagnose_text(oom).initiating_rank == 5


def test_verify_speaks_the_launcher_the_log_used():
    from rootrank.engine import diagnose_text

    oom = (
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 1 has a total capacity of 79.15 GiB of which 1.21 GiB is free.\n"
    )
    ds = diagnose_text(
        "+ deepspeed --num_gpus 8 train_ds.py --deepspeed ds.json\n" + oom
    ).root_cause.verify
    assert " deepspeed --num_gpus 8 train_ds.py " in ds and "torchrun" not in ds
    acc = diagnose_text(
        "$ accelerate launch --num_processes 4 run_clm.py\n" + oom
    ).root_cause.verify
    assert " accelerate launch --num_processes 4 run_clm.py " in acc  # as the user ran it
    tr = diagnose_text("+ torchrun --nproc-per-node 4 sft.py\n" + oom).root_cause.verify
    assert " torchrun --nproc-per-node 4 sft.py " in tr


def test_a_stop_from_outside_says_which_rank_was_behind():
    """A real torchrun run (4 ranks, gloo) whose rank 2 sleeps in its data loading at step 4;
    ``timeout -s TERM`` stops the agent 30 s later. The progress lines carry no times, so the
    log cannot prove a hang: the root stays the stop, no rank is named, and the reasoning
    points at rank 2, the one behind."""
    d = diagnose_paths([str(DATA / "agent-stopped-with-rank-behind.log")], mask=False)
    assert d.root_cause.signature == "agent-received-signal"
    assert d.initiating_rank is None
    said = " ".join(d.reasoning)
    assert "rank 2's last progress was step 4 while the other ranks had reached step 5" in said
    assert "the progress lines carry no times" in said


LEFT_EARLY = (
    Path(__file__).parents[1] / "signatures" / "collective" / "rank-left-early.positive.log"
)


def test_the_rank_that_left_early_is_the_peer_the_others_lost():
    """A real run: rank 3 ran 3 steps, printed that its epoch was done and exited 0; ranks 0
    and 2 got "Connection closed by peer" in all_reduce. Torchelastic's summary names rank 0
    (exit code 1), a victim: rank 3, absent from every failure, left first."""
    d = diagnose_paths([str(LEFT_EARLY)], mask=False)
    assert (d.root_cause.signature, d.initiating_rank) == ("rank-left-early", 3)
    assert d.root_cause.failure_class == "collective-desync"
    assert any('torchrun\'s "first observed failure" names rank 0' in s for s in d.reasoning)


def test_with_no_sign_of_the_rank_that_left_nothing_is_claimed():
    # Without the rank's own line, the log shows no rank that had no failure: no claim.
    text = "".join(
        line
        for line in LEFT_EARLY.read_text(encoding="utf-8").splitlines(keepends=True)
        if not line.startswith("rank 3:")
    )
    d = diagnose_text(text, mask=False)
    assert all(f.signature != "rank-left-early" for f in d.findings)
    # Torchelastic's first failure, rank 0, only lost its peer: a victim, not the initiator.
    assert (d.root_cause.signature, d.initiating_rank) == ("elastic-child-failed", None)
    assert d.initiator.strategy == "peer_victim"


def test_a_warning_the_run_survived_is_not_the_root_of_what_killed_it():
    """DeepSpeed logs a failed FusedAdam build at WARNING level and falls back to
    torch.optim.AdamW; a step later both ranks die of a CUDA OOM in the optimizer step. The
    exception that ended the processes is the root, not the earlier warning."""
    text = (
        "[2026-11-30 10:00:01,100] [WARNING] [engine.py:1690:_configure_basic_optimizer] FusedAdam CUDA"
        " build failed (Error building extension 'fused_adam'), falling back to torch.optim.AdamW.\n"
        "Step    0 | Loss: 11.0838 | Time: 1.626s\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/train.py", line 135, in main\n'
        "[rank1]:     model_engine.step()\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.44 GiB. GPU 1 has a"
        " total capacity of 10.75 GiB of which 748.75 MiB is free.\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/home/user/train.py", line 135, in main\n'
        "[rank0]:     model_engine.step()\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.44 GiB. GPU 0 has a"
        " total capacity of 10.75 GiB of which 746.25 MiB is free.\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert any(f.signature == "extension-build-failed" for f in d.findings)


def test_an_exception_no_signature_knows_is_the_cause_not_the_launchers_report():
    text = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/user/project/train.py", line 88, in <module>\n'
        "[rank2]:     batch = codec.decode(blob)\n"
        "[rank2]: mycodec.errors.FrameHeaderError: bad frame header at offset 4096\n"
        "W1130 09:12:40.118000 4001 torch/distributed/elastic/multiprocessing/api.py:897]"
        " Sending process 4010 closing signal SIGTERM\n"
        "E1130 09:12:40.802000 4001 torch/distributed/elastic/multiprocessing/api.py:869]"
        " failed (exitcode: 1) local_rank: 2 (pid: 4012) of binary: /opt/conda/bin/python\n"
    )
    d = diagnose_text(text, mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.rank, rc.evidence[0].line) == ("user-code-exception", 2, 4)
    assert rc.captures["exc_type"].endswith("FrameHeaderError")
    assert d.initiating_rank == 2


def test_a_rank_whose_peers_closed_while_it_waited_in_another_collective_is_the_desync():
    """A real 3-rank run where rank 1 skipped an all_reduce and waited in barrier; under load
    the others' all_reduce timed out first and they exited, so rank 1's barrier ended with
    "Connection closed by peer" (the one line changed from the capture). The ranks were still
    in different collectives: a desync on rank 1, not a bare timeout."""
    d = diagnose_paths([str(DATA / "skip-collective-peer-closed-in-barrier.log")], mask=False)
    assert (d.root_cause.failure_class, d.initiating_rank) == ("collective-desync", 1)
