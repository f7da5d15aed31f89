"""A torchrun terminal log of a launch with ``--redirects 3 --log-dir logs`` holds only the
agent's lines: the diagnosis of that one file reads the workers' own files beside it.

Fixture (``tests/redirects``): a real run here (torch 2.13 CPU, gloo): ``torchrun
--nproc-per-node=4 --redirects 3 --log-dir logs train.py`` (DDP over a Linear(8, 1); rank 2
feeds a batch of 7 features at step 5), the terminal in ``terminal.log`` (its command line
typed first), the per-rank files in ``logs/<run_id>/attempt_0/<n>/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.redirected import rank_log_folder, redirected

HERE = Path(__file__).resolve().parent / "redirects"
COMMAND = "torchrun --nproc-per-node=4 --redirects 3 --log-dir logs train.py"


def _check(d, folder: str) -> None:
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "unsupported-shape-or-dtype"
    assert d.initiating_rank == 2
    ev = rc.evidence[0]
    assert ev.path.endswith("attempt_0/2/stderr.log") and ev.line == 26
    assert any(f"read the workers' own output from {folder}/" in w for w in d.warnings)


def test_the_terminal_of_a_redirected_launch_is_read_with_its_log_dir():
    _check(diagnose_paths([str(HERE / "terminal.log")], mask=False), "logs")


def test_the_workers_files_are_named_relative_to_the_log_as_typed(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.chdir(HERE.parent)
    d = diagnose_paths(["redirects/terminal.log"], mask=False)
    _check(d, "logs")
    assert d.sources[0] == "redirects/terminal.log"
    assert d.sources[1].startswith("redirects/logs/") and d.sources[1].endswith("/0/stderr.log")
    assert d.root_cause.evidence[0].path.startswith("redirects/logs/")


def test_a_log_dir_copied_under_another_name_is_found_beside_the_terminal(tmp_path: Path):
    shutil.copy(HERE / "terminal.log", tmp_path / "input.log")
    shutil.copytree(HERE / "logs", tmp_path / "rank_logs")
    _check(diagnose_paths([str(tmp_path / "input.log")], mask=False), "rank_logs")


def test_no_per_rank_files_leaves_the_terminal_alone(tmp_path: Path):
    shutil.copy(HERE / "terminal.log", tmp_path / "input.log")
    d = diagnose_paths([str(tmp_path / "input.log")], mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "elastic-child-failed"
    assert not any("workers' own output" in w for w in d.warnings)


def test_only_a_launch_that_redirects_without_tee_sends_output_to_files():
    assert redirected(COMMAND)
    assert redirected("torchrun -r 0:3,1:0 --log_dir=/tmp/l train.py")
    assert not redirected("torchrun --redirects 3 --tee 3 --log-dir logs train.py")
    assert not redirected("torchrun --nproc-per-node=4 train.py")
    assert rank_log_folder(str(HERE / "terminal.log"), "torchrun --nproc-per-node=4 t.py") is None
