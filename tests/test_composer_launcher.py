"""MosaicML composer's launcher (``composer -n 4 train.py ...``): its report of a crashed rank
names the global rank and exit code, and the captured output it prints between
``----------Begin global rank N STDERR----------`` and the matching ``End`` line is that rank's
(composer/cli/launcher.py, ``_monitor_processes`` and ``_print_process_exit_status``). The
log is written in the launcher's shape from its source."""

from __future__ import annotations

from conftest import ROOT

from rootrank.engine import diagnose_text
from rootrank.ranks import RankTagger

LOG = (ROOT / "tests" / "data" / "composer-rank-crashed.log").read_text()


def test_the_crashed_ranks_captured_traceback_is_that_ranks_root_cause():
    d = diagnose_text(LOG, "train.log")
    root = d.root_cause
    assert root is not None and root.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert root.evidence[0].line == 26 and root.evidence[0].text == "KeyError: 'name'"
    # the verification reruns the command the log shows, with composer's launcher
    assert root.verify.startswith("composer -n 4 train.py yamls/finetune.yaml")


def test_the_launchers_line_alone_names_the_rank_and_the_signal_exit_code():
    head = "\n".join(LOG.splitlines()[:10])
    text = head + "\nERROR:composer.cli.launcher:Rank 3 crashed with exit code -7.\n"
    d = diagnose_text(text, "train.log")
    root = d.root_cause
    # -7 is SIGBUS (Python's returncode -N: killed by signal N), read by the analysis as for
    # every launcher (rootrank.analysis.signal_exit); the launcher's report is its collateral
    assert root is not None and root.signature == "worker-sigbus-exit"
    assert root.failure_class == "dataloader-worker-killed-or-shm"
    assert d.initiating_rank == 3
    assert root.evidence[0].line == 11
    assert {f.signature for f in d.findings} == {"worker-sigbus-exit", "elastic-child-failed"}


def test_only_the_lines_inside_a_block_take_its_rank():
    tagger = RankTagger()
    lines = [
        "Global rank 2 (PID 51234) exited with code 1",
        "----------Begin global rank 2 STDERR----------",
        "KeyError: 'name'",
        "----------End global rank 2 STDERR----------",
        "Waiting up to 30 seconds for all training processes to terminate.",
    ]
    ranks = [tagger.tag(text, n).rank for n, text in enumerate(lines, 1)]
    assert ranks == [None, 2, 2, 2, None]
    assert not tagger.following()


def test_a_rank_the_kernel_killed_explains_the_others_watchdog_timeout():
    head = "\n".join(LOG.splitlines()[:10])
    text = (
        head
        + "\nERROR:composer.cli.launcher:Rank 2 crashed with exit code -9.\n"
        + "[rank0]:[E1002 11:31:02.330000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=901, OpType=ALLREDUCE, NumelIn=2123,"
        " NumelOut=2123, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
        # the launcher's cleanup: its own SIGTERM of rank 1 is no failure of rank 1
         + "ERROR:composer.cli.launcher:Global rank 1 (PID 51202) exited with code -15\n"
    )
    d = diagnose_text(text, "train.log")
    root = d.root_cause
    assert root is not None and root.signature == "worker-sigkill-exit"
    assert d.initiating_rank == 2 and root.evidence[0].line == 11
    assert "elastic-child-failed" not in {f.signature for f in d.findings if f.rank == 1}


def test_the_verification_fills_the_processes_the_command_line_gave():
    # ``composer -n 4 train.py`` printed with no script argument and no torchrun-style flag:
    # composer's own ``-n``/``--nproc`` (composer/cli/launcher.py) is the processes per node,
    # and the printed command is the verification's (round-13 trial: "composer -n <n> ...
    # train.py" although the log's first line is "$ composer -n 4 train.py").
    for shown in ("composer -n 4 train.py", "composer --nproc 8 -v train.py"):
        text = (
            f"$ {shown}\n"
            "[batch=100/4800]:\n"
            "ERROR:composer.cli.launcher:Rank 2 crashed with exit code -9.\n"
            "Waiting up to 30 seconds for all training processes to terminate. Press Ctrl-C to"
            " exit immediately.\n"
        )
        d = diagnose_text(text, "train.log")
        root = d.root_cause
        assert root is not None and root.signature == "worker-sigkill-exit"
        assert d.initiating_rank == 2
        assert root.verify.split("  #")[0] == shown
        assert "<n>" not in root.verify and "<gpus>" not in root.verify


def test_two_composer_jobs_of_different_scripts_are_two_runs():
    # cat job_a.log job_b.log: the second job's '$ composer -n 4 train_b.py' starts another run
    # (rootrank.launchers: composer is a launcher to every reader of a launch line), so the
    # diagnosis is the last job's, rank 1's ValueError, and the first job is named as left out
    job_a = LOG.replace("train.py", "train_a.py")
    job_b = (
        LOG.replace("train.py", "train_b.py")
        .replace("KeyError: 'name'", "ValueError: batch has 3 samples, expected 4")
        .replace("ank 2", "ank 1")
        .replace("rank(2)", "rank(1)")
    )
    d = diagnose_text(job_a + job_b, "train.log", mask=False)
    root = d.root_cause
    assert root is not None and root.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert root.evidence[0].line == 29 + 26
    assert root.evidence[0].text == "ValueError: batch has 3 samples, expected 4"
    assert root.verify.startswith("composer -n 4 train_b.py yamls/finetune.yaml")
    assert d.warnings == [
        "train.log: the file holds 2 different runs: diagnosed the last (from line 30); left out"
        " the run at lines 1-29 (`composer -n 4 train_a.py`): it was launched as"
        " `composer -n 4 train_a.py`, the next run as `composer -n 4 train_b.py`"
    ]


def test_every_reader_of_a_launch_line_knows_composer():
    from rootrank.entry.commands import _LAUNCHER_WORD
    from rootrank.runs import launch_identity, launch_parts
    from rootrank.scan import _starts_run

    line = "$ composer -n 4 train.py yamls/finetune.yaml"
    assert launch_identity(line) == "composer -n 4 train.py"
    assert launch_parts(line) == ("composer", "train.py")
    assert _starts_run(line)
    assert _LAUNCHER_WORD.search("composer -n 4 python train.py")
