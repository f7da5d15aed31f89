"""Fix kinds of round 15 (issue 15): decisions the log supports, each tested on a fixture
written from what the tools print (tests/kinds_r15/, tests/fix_variants/) and on the rule's
own function."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.scan import deepspeed_command

KINDS = Path(__file__).resolve().parent / "kinds_r15"


def _diag(name: str):
    diag = diagnose_paths([str(KINDS / name)])
    assert diag.root_cause is not None
    return diag, diag.root_cause


def test_deepspeed_worker_argv_is_the_rerun_command():
    # deepspeed/launcher/launch.py: cmd = [sys.executable, "-u", script, "--local_rank=N", *args]
    assert deepspeed_command(
        "['/usr/bin/python3', '-u', 'x.py', '--local_rank=3', '--lr', '1e-4', '--name', 'a b']"
    ) == ("deepspeed --num_gpus <gpus> x.py --lr 1e-4 --name 'a b'")
    assert deepspeed_command("['/usr/bin/python', '-u', '-m', 'pkg.train', '--local_rank=0']") == (
        "deepspeed --num_gpus <gpus> --module pkg.train"
    )
    assert deepspeed_command("['/usr/bin/python', '-u', 'bash']") is None  # no script
    assert deepspeed_command("['/usr/bin/python', '-u', 'x.py'") is None  # cut short


def test_verify_reruns_the_argv_deepspeed_printed_with_its_arguments():
    diag, rc = _diag("deepspeed-worker-argv.log")
    assert rc.failure_class == "cuda-oom"
    # DeepSpeed's exit line quotes the argv of the LAST worker it spawned (--local_rank=1 of
    # 2), whichever failed: it names no rank (r21c); the OOM is printed with no prefix
    assert diag.initiating_rank is None
    assert rc.verify.startswith(
        "deepspeed train_lm.py --config configs/small.yaml --lr 3e-4 --run_name 'ds trial 2'  # "
    )
    assert "--local_rank" not in rc.verify


def test_a_rank_only_its_launcher_reports_is_looked_for_where_its_output_went():
    from rootrank.entry.variants import initiator_output_missing

    report = "srun: error: gpu-a07: task 0: Exited with exit code 1"
    findings = [
        (0, "elastic-child-failed", report),
        (1, "nccl-system-error", "ncclRemoteError: ..."),
    ]
    assert initiator_output_missing(0, [1], findings) == report
    assert initiator_output_missing(0, [0, 1], findings) is None  # its own traceback is here
    assert initiator_output_missing(1, [], findings) is None  # it printed its own error
    assert initiator_output_missing(None, [], findings) is None
    assert initiator_output_missing(2, [], findings) is None  # nothing names rank 2

    diag = diagnose_paths(
        [str(KINDS.parent / "fix_variants/nccl-remote-error/failed-rank-output-elsewhere.log")]
    )
    rc = diag.root_cause
    assert rc is not None and diag.initiating_rank == 0
    assert rc.fix.variant.id == "failed-rank-output-elsewhere"
    assert '"srun: error: host-2: task 0: Exited with exit code 1"' in rc.fix.steps[0]
    assert "`srun --output=slurm-%j-%t.out ...`" in rc.fix.steps[0]
    assert "not a network fault" in rc.fix.steps[0]


def test_where_a_ranks_output_is_follows_the_launcher_the_log_shows():
    from rootrank.entry.commands import Launch
    from rootrank.entry.hang_capture import rank_own_output

    def launch(name: str | None) -> Launch:
        return Launch(name, None, "train.py", None, None)

    assert "--enable_each_rank_log" in rank_own_output(launch("deepspeed"), [], [], 3)
    torchrun = rank_own_output(launch("torchrun"), ["torchrun"], [], 3)
    assert torchrun.startswith("rank 3's own traceback is in its own stderr")
    assert "--log-dir=logs --redirects=3 --tee=3" in torchrun
    assert "--output-filename" in rank_own_output(launch("mpirun"), [], [], 1)
    assert "kubectl logs <pod of rank 2>" in rank_own_output(launch(None), [], ["kubernetes"], 2)
    assert rank_own_output(launch(None), [], [], 2) == (
        "rank 2's own traceback is in its own stderr, which this log does not hold"
    )


def _run(command: str, lines: list[bytes]):
    from rootrank.live.feed import LiveScan
    from rootrank.live.tracker import ProgressTracker

    scan = LiveScan(ProgressTracker(None), mask=False, command=command)
    scan.feed(scan.open("<command output>"), lines)
    return scan.finish()


ONE_PROCESS = (KINDS.parent / "fix_variants/user-code-exception/one-process.log").read_bytes()


def test_a_one_process_run_is_told_it_has_no_ranks():
    from rootrank.report import to_text

    d = _run("python3 prog_raise.py", ONE_PROCESS.splitlines())
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert d.initiating_rank is None and d.initiator.strategy == "one_process"
    assert rc.fix.variant.id == "one-process"
    text = " ".join(rc.fix.steps)
    assert "rank" not in text and "GPU" not in text
    assert "`python3 -m pdb -c continue prog_raise.py`" in rc.fix.steps[1]
    assert rc.verify.startswith("python3 prog_raise.py  #")
    assert "Initiating rank: none (one process, no ranks)" in to_text(d)


def test_one_process_needs_the_run_face_and_an_output_with_no_other_process():
    # the same output read from a file: a fragment could be one rank's, so no claim
    d = diagnose_paths([str(KINDS.parent / "fix_variants/user-code-exception/one-process.log")])
    assert d.initiator is None or d.initiator.strategy != "one_process"
    assert d.root_cause.fix.variant.id == "general"
    # run by rootrank, but the output shows ranks: mp.spawn or a process group inside
    ranked = [b"[rank1]: " + line for line in ONE_PROCESS.splitlines()]
    d = _run("python3 prog_raise.py", ranked)
    assert d.initiator is None or d.initiator.strategy != "one_process"
    # run by rootrank under a multi-process launcher
    d = _run("torchrun --nproc-per-node=2 prog_raise.py", ONE_PROCESS.splitlines())
    assert d.initiator is None or d.initiator.strategy != "one_process"


HEARTBEAT = KINDS.parent / "fix_variants/nccl-heartbeat-monitor-timeout/nothing-before-it.log"


def test_a_stuck_watchdog_with_nothing_before_it_is_a_collective_one_rank_never_issued():
    diag = diagnose_paths([str(HEARTBEAT)])
    rc = diag.root_cause
    assert rc is not None and rc.signature == "nccl-heartbeat-monitor-timeout"
    assert rc.fix.variant.id == "nothing-before-it"
    assert rc.fix.steps[0].startswith("Nothing comes before it (the log shows the run's launch")
    assert "a collective some rank never issued" in rc.fix.steps[0]
    assert "py-spy dump --pid" in rc.fix.steps[0]
    assert "Look earlier" not in " ".join(rc.fix.steps)


def test_a_stuck_watchdog_after_a_timeout_is_not_told_nothing_came_before(tmp_path):
    lines = HEARTBEAT.read_text().splitlines()
    timeout = (
        "[rank1]:[E305 10:12:40.100200300 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, NumelIn=1024,"
        " NumelOut=1024, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
    )
    log = tmp_path / "hb.log"
    log.write_text("\n".join([*lines[:8], timeout, *lines[8:]]) + "\n")
    rc = diagnose_paths([str(log)]).root_cause
    assert rc is not None
    assert rc.fix.variant is None or rc.fix.variant.id != "nothing-before-it"


def test_a_watchdog_timeout_whose_awaited_rank_exited_says_where_its_error_is():
    diag = diagnose_paths(
        [str(KINDS.parent / "fix_variants/nccl-watchdog-timeout/failed-rank-output-elsewhere.log")]
    )
    rc = diag.root_cause
    assert rc is not None and diag.initiating_rank == 2
    assert rc.fix.variant.id == "failed-rank-output-elsewhere"
    assert "it did not hang: it exited" in rc.fix.steps[0]
    assert '"srun: error: host-1: task 2: Exited with exit code 1"' in rc.fix.steps[0]
    assert "raise the timeout" not in rc.fix.steps[0]
    # the command the log printed, arguments and all (srun lines are read since round 15)
    assert "srun --ntasks=4 --ntasks-per-node=2 python train_cls.py --epochs 30  #" in rc.verify


def test_a_timeout_in_a_one_element_collective_is_a_sync_in_code_that_differs_by_rank():
    diag = diagnose_paths(
        [str(KINDS.parent / "fix_variants/nccl-watchdog-timeout/scalar-sync.log")]
    )
    rc = diag.root_cause
    assert rc is not None and diag.initiating_rank is None
    assert rc.fix.variant.id == "scalar-sync"
    assert rc.fix.steps[0].startswith(
        "The collective that timed out carried 1 element(s) per rank (ALLGATHER SeqNum 90412"
    )
    assert "call the gathering function on every rank" in rc.fix.steps[0]
    assert "1800000 ms timeout" in rc.fix.steps[0]


def test_gradient_sized_and_first_collectives_are_not_scalar_syncs(tmp_path):
    text = (KINDS.parent / "fix_variants/nccl-watchdog-timeout/scalar-sync.log").read_text()
    for old, new in (("NumelIn=1,", "NumelIn=25165824,"), ("SeqNum=90412", "SeqNum=1")):
        log = tmp_path / "t.log"
        log.write_text(text.replace(old, new))
        rc = diagnose_paths([str(log)]).root_cause
        assert rc is not None and rc.fix.variant.id != "scalar-sync"


def test_a_flushed_roce_v2_completion_orders_gid_index_route_and_port():
    rc = diagnose_paths(
        [str(KINDS.parent / "fix_variants/ib-completion-error/roce-v2-flushed.log")]
    ).root_cause
    assert rc is not None and rc.signature == "ib-completion-error"
    assert rc.captures["local_gid"].startswith("::ffff:")
    assert rc.fix.variant.id == "roce-v2-flushed"
    step = rc.fix.steps[0]
    assert step.startswith("Status 5 is IBV_WC_WR_FLUSH_ERR")
    assert (
        step.index("(1) the GID index") < step.index("(2) the IP path") < step.index("(3) the port")
    )
    assert "`ib_write_bw -d <hca> -x <gid index>`" in step
    assert rc.verify.startswith("ib_write_bw -d <hca> -x <gid index> <peer host>")


def test_a_flushed_completion_on_infiniband_is_not_the_first_error():
    rc = diagnose_paths(
        [str(KINDS.parent / "fix_variants/ib-completion-error/flushed.log")]
    ).root_cause
    assert rc is not None and rc.fix.variant.id == "flushed"
    assert "not the first error" in rc.fix.steps[0]
    assert "GID index" not in rc.fix.steps[0]  # fe80:: GIDs: InfiniBand, not RoCE v2


def test_a_command_split_over_lines_is_rerun_whole():
    # `torchrun ... train_lm.py \` then `--model_name ... \` then `--lr ... --max_steps 2000`
    _, rc = _diag("torchrun-command-continued.log")
    assert rc.verify.startswith(
        "torchrun --nproc_per_node 2 train_lm.py --model_name gpt2-medium --lr 3e-4"
        " --max_steps 2000  # "
    )
    assert "\\" not in rc.verify


def test_a_command_whose_script_comes_on_a_continuation_line():
    diag = diagnose_paths([str(KINDS / "torchrun-script-on-continuation-line.log")], mask=False)
    assert diag.root_cause is not None
    assert diag.root_cause.verify.startswith(
        "torchrun --nnodes=2 --node_rank=0 --nproc_per_node=4 --master_addr=10.0.0.1"
        " train_lm.py --lr 3e-4  # "
    )


def test_a_continuation_ends_at_a_log_line_and_a_head_without_script_is_dropped():
    from rootrank.scan import LaunchFacts

    facts = LaunchFacts()
    for n, line in enumerate(
        ["$ torchrun --nnodes=1 \\", "[rank0]: step 1 loss 2.0", "W0101 x.py:1] warn"], 1
    ):
        facts.read(line, n)
    assert facts.command is None and not facts.continues
    facts = LaunchFacts()
    for n, line in enumerate(["$ torchrun --nproc-per-node=2 x.py \\", "  --a 1 \\", "  --b 2"], 1):
        facts.read(line, n)
    assert facts.command == "torchrun --nproc-per-node=2 x.py --a 1 --b 2"


def test_a_one_process_oom_is_not_told_about_ranks_or_sharding_first():
    path = KINDS.parent / "fix_variants/cuda-oom/one-process.log"
    d = _run("python3 finetune_small.py --batch-size 16", path.read_bytes().splitlines())
    rc = d.root_cause
    assert rc is not None and rc.signature == "cuda-oom"
    assert d.initiator.strategy == "one_process"
    assert rc.fix.variant.id == "one-process"
    assert "rank" not in " ".join(rc.fix.steps)
    assert rc.verify.startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 finetune_small.py --batch-size 16  #"
    )
    # read from a file (rootrank diagnose), the same output keeps the general fix
    assert diagnose_paths([str(path)]).root_cause.fix.variant.id != "one-process"
