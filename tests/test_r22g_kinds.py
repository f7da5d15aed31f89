"""Kinds left from the held-out r22b set, each with a fixture captured from a real run of this
project's own (torch 2.13 CPU, gloo, torchrun; the scripts' own names and values):

- every rank printed ``building retrieval index``, all but rank 1 ``index ready``, then a
  ``timeout`` wrapper's SIGTERM: the stop is collateral of a hang on rank 1
  (``signatures/collective/stopped-in-unfinished-phase.{positive,near-miss}.log``);
- a worker killed by SIGXCPU (exit -24) under ``ulimit -S -t`` and by SIGXFSZ (exit -25)
  under ``ulimit -f``: resource limits, named as such
  (``signatures/process/worker-{cpu-time,file-size}-limit.positive.log``);
- torch.save cut by ``ulimit -f`` (``iostream error`` / ``unexpected pos``, no ENOSPC): the
  fix tells a full disk from a per-file size limit (``signatures/io/disk-full.positive-5.log``);
- ``--redirects 3 --log-dir logs``: the terminal holds only torchrun's lines, the fix points at
  the log dir the command names instead of asking for a rerun with --log-dir
  (``signatures/process/worker-sigabrt-exit.positive-2.log``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.frames import command_log_dir

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = ROOT / "signatures"


def _diagnose(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_a_rank_missing_from_the_end_of_a_phase_before_an_outside_stop_is_a_hang():
    d = _diagnose(SIGNATURES / "collective" / "stopped-in-unfinished-phase.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "stopped-in-unfinished-phase",
        "collective-timeout",
    )
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 8  # rank 1's 'building retrieval index'
    assert "building retrieval index" in rc.fix.steps[0]
    assert "index ready" in rc.fix.steps[0]
    assert "agent-received-signal" in {c.signature for c in d.collateral}


def test_an_outside_stop_while_every_rank_logs_steps_stays_a_stop():
    d = _diagnose(SIGNATURES / "collective" / "stopped-in-unfinished-phase.near-miss.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "preemption-sigterm"
    assert "stopped-in-unfinished-phase" not in {f.signature for f in d.findings}
    assert d.initiating_rank is None


def test_exit_minus_24_is_the_cpu_time_limit_on_that_rank():
    d = _diagnose(SIGNATURES / "process" / "worker-cpu-time-limit.positive.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (
        "worker-cpu-time-limit",
        "preemption-sigterm",
    )
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 28
    assert "ulimit -t" in rc.fix.steps[0]
    assert "--log-dir" not in rc.fix.steps[0]


def test_exit_minus_25_is_the_file_size_limit_on_that_rank():
    d = _diagnose(SIGNATURES / "process" / "worker-file-size-limit.positive.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-file-size-limit"
    assert d.initiating_rank == 0
    assert rc.evidence[0].line == 47
    assert "ulimit -f" in rc.fix.steps[0]


def test_a_cut_write_without_enospc_names_the_file_size_limit_too():
    d = _diagnose(SIGNATURES / "io" / "disk-full.positive-5.log")
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == ("disk-full", "disk-full")
    assert d.initiating_rank == 0
    assert rc.evidence[0].line == 30
    assert "ulimit -f" in rc.fix.steps[0] and "df -h" in rc.fix.steps[0]
    assert "ulimit -f" in (rc.verify or "")


def test_a_write_that_says_enospc_keeps_the_full_disk_fix():
    d = _diagnose(SIGNATURES / "io" / "disk-full.positive-2.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "disk-full"
    assert "ulimit -f" not in " ".join(rc.fix.steps)


def test_a_redirected_terminal_points_at_the_log_dir_of_the_command():
    d = _diagnose(SIGNATURES / "process" / "worker-sigabrt-exit.positive-2.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "worker-sigabrt-exit"
    assert d.initiating_rank == 1
    assert "logs/*/attempt_*/1/stderr.log" in rc.fix.steps[0]
    assert "rerun" not in rc.fix.steps[0]
    assert "--log-dir logs --redirects 3 --tee 3" not in (rc.verify or "")


def test_command_log_dir_reads_torchruns_option():
    assert (
        command_log_dir("torchrun --nproc-per-node=4 --redirects 3 --log-dir logs train.py")
        == "logs"
    )
    assert (
        command_log_dir("python -m torch.distributed.run --log_dir=/scratch/r1/ x.py")
        == "/scratch/r1"
    )
    assert (
        command_log_dir("torchrun --nproc-per-node=4 train.py --log-dir out") is None
    )  # the script's
    assert command_log_dir("python train.py --log-dir out") is None
    assert command_log_dir("torchrun --nproc-per-node=4 train.py") is None
