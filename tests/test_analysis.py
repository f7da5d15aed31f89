"""Causal analysis on small multi-rank logs written the way PyTorch prints them: which
finding is the root cause, which rank started it, what is collateral."""

from __future__ import annotations

from rootrank.engine import diagnose_text

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
    d = diagnose_text(oom + cut)
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank is None
    assert any(r.startswith("Rank 6 also failed") for r in d.reasoning)
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
