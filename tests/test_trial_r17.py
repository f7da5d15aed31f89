"""New-user trial r17's findings, each on the trial's real run (torch 2.13 CPU, gloo, torchrun
with 3 workers; paths moved under /home/user)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

DATA = Path(__file__).parent / "data" / "trial_r17"


def test_a_numpy_warning_every_worker_printed_is_not_the_cause_of_a_ranks_hang() -> None:
    # A torch install without NumPy: every worker prints "UserWarning: Failed to initialize
    # NumPy" (lines 1, 7, 9, 11, no rank). Rank 1 then waits on a lock file after step 4
    # (line 24) while ranks 0 and 2 time out in all_reduce (lines 33, 42). The warning stops
    # nothing: the hang is the failure, and rank 1 (the one rank not reporting it) its origin.
    d = diagnose_paths([str(DATA / "numpy-warning-lock-hang.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.signature != "numpy-init-failed-warning"
    assert rc.failure_class == "collective-timeout"
    assert rc.rank == 1 and d.initiator.rank == 1
    assert "line 24: `rank 1: step 4 sum -1.145`" in rc.fix.steps[0]
    assert "numpy" not in " ".join(rc.fix.steps).lower()


def test_the_numpy_failure_the_warning_predicted_is_still_read_on_its_rank() -> None:
    # Control: the same warnings, then the NumPy-touching step failing on rank 1 (an error
    # cause, not a symptom): the NumPy failure is the root on rank 1, as before the rule.
    lines = (DATA / "numpy-warning-lock-hang.log").read_text().splitlines()[:12]
    text = "\n".join(lines) + (
        "\n[rank1]: Traceback (most recent call last):"
        '\n[rank1]:   File "/home/user/proj/hang_rank1.py", line 20, in <module>'
        "\n[rank1]:     batch = torch.from_numpy(arr)"
        "\n[rank1]: RuntimeError: Numpy is not available\n"
    )
    d = diagnose_text(text, mask=False)
    assert d.root_cause is not None
    assert (d.root_cause.signature, d.root_cause.rank) == ("numpy-abi-mismatch", 1)


def _write(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    for n in names:
        (folder / n).write_text("rank 0: step 1 loss 0.5\n")


def test_a_flat_folder_of_separate_jobs_logs_is_said_to_be_read_as_one_job(tmp_path) -> None:
    # new-user trial r17 finding 2: 27 jobs' logs in one folder came out as one diagnosis
    from rootrank.engine import expand_paths
    from rootrank.runs import unrelated_names

    jobs = tmp_path / "fleet"
    _write(jobs, ["dist-001-nccl-shm.log", "dist-013-ecc.log", "torch-02-bad-data.log"])
    notes: list[str] = []
    found = [f for f, _ in expand_paths([str(jobs)], notes)]
    assert len(found) == 3
    assert len(notes) == 1 and "3 log files bear 3 unrelated names" in notes[0]
    assert f"rootrank triage {jobs}/*" in notes[0]
    # one job's per-rank files differ by numbers only, or are its launcher's companions
    ranks = tmp_path / "job-17"
    _write(ranks, ["rank0.log", "rank1.log", "rank12.log", "stdout.log", "stderr.log"])
    assert unrelated_names([str(p) for p in sorted(ranks.iterdir())]) is None
    notes = []
    expand_paths([str(ranks)], notes)
    assert notes == []
