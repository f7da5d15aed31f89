"""A folder of several runs: the newest is diagnosed, the others are named, never merged."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import ROOT, run_cli

from rootrank.runs import RunKey, pick_run, run_key

OOM = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")


def test_run_keys_from_slurm_names_and_torchrun_log_dirs():
    assert run_key("/d/slurm-1234.out") == RunKey("slurm", "1234")
    assert run_key("/d/slurm-1234-3.out") == RunKey("slurm", "1234")
    assert run_key("/d/slurm-1234_7-0.err") == RunKey("slurm", "1234_7")
    log_dir = os.path.join("logs", "r1_abc")
    key = run_key(os.path.join(log_dir, "attempt_2", "3", "stderr.log"))
    assert key == RunKey("torchrun", log_dir, 2)
    assert key.label() == "torchrun run r1_abc attempt 2"
    assert run_key("/d/train.log") is None
    assert run_key("/d/rank3.log") is None


def test_the_newest_run_is_kept_with_the_files_that_name_no_run():
    files = ["/d/launcher.log", "/d/slurm-100-0.out", "/d/slurm-100-1.out", "/d/slurm-200-0.out"]
    times = {
        "/d/launcher.log": 5.0,
        "/d/slurm-100-0.out": 10.0,
        "/d/slurm-100-1.out": 11.0,
        "/d/slurm-200-0.out": 20.0,
    }
    kept, note = pick_run(files, mtime=times.__getitem__)
    assert kept == ["/d/launcher.log", "/d/slurm-200-0.out"]
    assert note == (
        "the folder holds 2 runs: diagnosed SLURM job 200 (the newest); "
        "left out SLURM job 100 (name their files to diagnose them, or `rootrank triage` the"
        " folder for every run)"
    )


def test_same_times_fall_back_to_the_larger_attempt_and_one_run_is_left_alone():
    files = [f"/l/r1/attempt_{k}/0/stderr.log" for k in (0, 1)]
    kept, note = pick_run(files, mtime=lambda f: 1.0)
    assert kept == ["/l/r1/attempt_1/0/stderr.log"]
    assert (
        "diagnosed torchrun run r1 attempt 1" in note
        and "left out torchrun run r1 attempt 0" in note
    )
    one = ["/d/slurm-7-0.out", "/d/slurm-7-1.out"]
    assert pick_run(one, mtime=lambda f: 1.0) == (one, None)


def test_cli_on_a_folder_of_two_slurm_jobs_diagnoses_the_newest(tmp_path: Path):
    old = "step 10 loss 0.3\n" + OOM
    new = (
        "[rank1]:[E1129 10:12:01.554000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    for name, text, when in (
        ("slurm-100-0.out", old, 1_000_000),
        ("slurm-200-0.out", new, 2_000_000),
    ):
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        os.utime(f, (when, when))
    import json

    proc = run_cli("diagnose", "--format", "json", str(tmp_path))
    diag = json.loads(proc.stdout)
    assert diag["root_cause"]["failure_class"] == "collective-timeout"
    assert all(s.endswith("slurm-200-0.out") for s in diag["sources"])
    assert any(
        "diagnosed SLURM job 200 (the newest); left out SLURM job 100" in w
        for w in diag["warnings"]
    )


def test_an_unreadable_subfolder_is_named_not_silently_dropped(tmp_path: Path, monkeypatch):
    from rootrank import engine

    (tmp_path / "rank0.log").write_text(OOM, encoding="utf-8")
    real_walk = os.walk

    def walk(top, **kwargs):
        kwargs["onerror"](PermissionError(13, "Permission denied", str(tmp_path / "sub")))
        yield from real_walk(top, **kwargs)

    monkeypatch.setattr(engine.os, "walk", walk)
    notes: list[str] = []
    files = engine.expand_paths([str(tmp_path)], notes)
    assert files == [(str(tmp_path / "rank0.log"), True)]
    assert notes == [
        f"skipped the folder {tmp_path / 'sub'}: Permission denied (its logs were not read)"
    ]


def test_a_healthy_newest_run_says_in_text_what_was_left_out_and_names_only_the_newest(
    tmp_path: Path,
):
    """A "No known failure found." covers only the run read: the text report says which runs
    were left out (the 5 newest by name, the rest counted), as JSON's warnings do."""
    for k in range(9):
        f = tmp_path / f"slurm-{100 + k}.out"
        f.write_text(OOM if k < 8 else "step 1 loss 2.0\n", encoding="utf-8")
        os.utime(f, (1_000_000 + k, 1_000_000 + k))
    proc = run_cli("diagnose", str(tmp_path))
    out = proc.stdout.decode()
    assert proc.returncode == 1 and out.startswith("No known failure found.")
    warning = next(x for x in out.splitlines() if x.startswith("warning: "))
    assert "the folder holds 9 runs: diagnosed SLURM job 108 (the newest)" in warning
    assert "left out 3 older runs and SLURM job 103, " in warning
    assert "SLURM job 107 (" in warning and "SLURM job 102" not in warning


def test_an_empty_newest_attempt_is_passed_over_for_the_one_that_wrote_the_failure():
    # torchrun creates attempt_1's files when it restarts the workers; a restart stuck in its
    # rendezvous leaves them empty and newest, while attempt_0 holds the failure
    files = [
        f"/l/r1/attempt_{k}/{r}/{n}.log"
        for k in (0, 1)
        for r in (0, 1)
        for n in ("stderr", "stdout")
    ]
    times = {f: (2.0 if "attempt_1" in f else 1.0) for f in files}
    sizes = {f: (0 if "attempt_1" in f else 100) for f in files}
    kept, note = pick_run(files, mtime=times.__getitem__, size=sizes.__getitem__)
    assert kept == [f for f in files if "attempt_0" in f]
    assert note == (
        "the folder holds 2 runs: diagnosed torchrun run r1 attempt 0, the newest that wrote"
        " anything (torchrun run r1 attempt 1, newer, has no output yet: empty files)"
    )
    # without sizes (watch follows where the next output will appear), the newest is kept
    assert pick_run(files, mtime=times.__getitem__)[0] == [f for f in files if "attempt_1" in f]
    # every run empty: the newest is kept as before (the caller says "empty input")
    kept, note = pick_run(files, mtime=times.__getitem__, size=lambda f: 0)
    assert kept == [f for f in files if "attempt_1" in f]
    assert note is not None and "diagnosed torchrun run r1 attempt 1 (the newest)" in note


def test_cli_on_a_log_dir_whose_restart_wrote_nothing_diagnoses_the_failed_attempt(tmp_path: Path):
    run = tmp_path / "logs" / "r1_abc"
    raised = (
        # as torch 2.13's torchrun --log-dir wrote it in a real run (gloo, CPU)
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/project/tr.py", line 11, in <module>\n'
        '[rank1]:     raise RuntimeError(f"shard checksum mismatch at step {step}: expected'
        ' 0x3f2a got 0x0000")\n'
        "[rank1]: RuntimeError: shard checksum mismatch at step 6: expected 0x3f2a got 0x0000\n"
    )
    for k, rank, out, err, when in (
        (0, 0, "rank 0 step 5 loss 0.1667\n", "", 1_000_000),
        (0, 1, "rank 1 step 5 loss 0.1667\n", raised, 1_000_001),
        (1, 0, "", "", 2_000_000),
        (1, 1, "", "", 2_000_000),
    ):
        d = run / f"attempt_{k}" / str(rank)
        d.mkdir(parents=True)
        for name, text in (("stdout.log", out), ("stderr.log", err)):
            f = d / name
            f.write_text(text, encoding="utf-8")
            os.utime(f, (when, when))
    import json

    proc = run_cli("diagnose", "--format", "json", str(tmp_path / "logs"))
    # rank 1's RuntimeError of attempt 0 (no signature names it: exit code 3, unclassified)
    assert proc.returncode == 3, proc.stderr
    diag = json.loads(proc.stdout)
    found = diag["unclassified"]
    assert found["title"].startswith("RuntimeError: shard checksum mismatch at step 6")
    assert found["rank"] == 1
    assert found["evidence"][0]["path"].endswith(os.path.join("attempt_0", "1", "stderr.log"))
    assert found["evidence"][0]["line"] == 4
    assert any(
        "diagnosed torchrun run r1_abc attempt 0, the newest that wrote anything"
        " (torchrun run r1_abc attempt 1, newer, has no output yet: empty files)" in w
        for w in diag["warnings"]
    )


def test_an_all_empty_folder_names_three_files_and_counts_the_rest(tmp_path: Path):
    for i in range(5):
        (tmp_path / f"rank{i}.log").write_text("", encoding="utf-8")
    proc = run_cli("diagnose", str(tmp_path))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "rank2.log (and 2 more): empty input (0 bytes read): nothing to diagnose" in err
    assert "rank3.log" not in err


def test_subfolders_with_unrelated_names_are_separate_jobs_and_node_folders_are_one():
    from rootrank.runs import job_folders

    archive = [
        "/a/dist-013-ecc/input.log",
        "/a/dist-014-xid/input.log",
        "/a/torch-02-bad-data/input.log",
        "/a/torch-02-bad-data/rank1.log",
    ]
    keys = job_folders(archive, "/a")
    assert keys["/a/torch-02-bad-data/rank1.log"] == RunKey("folder", "/a/torch-02-bad-data")
    assert keys["/a/dist-013-ecc/input.log"].label() == "the job in dist-013-ecc/"
    nodes = ["/j/node01/train.log", "/j/node02/train.log", "/j/node03/train.log", "/j/launch.log"]
    assert job_folders(nodes, "/j") == {}
    kept, note = pick_run(archive, mtime=lambda f: 1.0, root="/a")
    # times tie: the larger number in the folder's name is the newer job
    assert kept == ["/a/dist-014-xid/input.log"]
    assert note.startswith(
        "the folder holds 3 runs: diagnosed the job in dist-014-xid/ (the newest); left out"
    )


def test_cli_on_an_archive_of_job_folders_diagnoses_one_job_not_a_mix(tmp_path: Path):
    """New-user trial r18 finding 5b: ``rootrank diagnose fleet`` read every job folder as the
    files of one job and joined two jobs' ranks in one root cause."""
    import json

    timeout = (
        "[rank1]:[E1129 10:12:01.554000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    for name, text, when in (
        ("oom-run", OOM, 1_000_000),
        ("hang-after-save", timeout, 2_000_000),
        ("bad-data", "step 1 loss 2.0\n", 1_500_000),
    ):
        (tmp_path / name).mkdir()
        f = tmp_path / name / "input.log"
        f.write_text(text, encoding="utf-8")
        os.utime(f, (when, when))
    diag = json.loads(run_cli("diagnose", "--format", "json", str(tmp_path)).stdout)
    assert diag["root_cause"]["failure_class"] == "collective-timeout"
    assert [os.path.basename(os.path.dirname(s)) for s in diag["sources"]] == ["hang-after-save"]
    assert any(
        "diagnosed the job in hang-after-save/ (the newest); left out the job in oom-run/, "
        "the job in bad-data/" in w
        for w in diag["warnings"]
    )


def test_files_of_a_folder_that_ran_different_programs_are_separate_runs(tmp_path: Path):
    """New-user trial r19 finding 1: a folder with one run of fail_data.py and a later run of
    fail_hang.py (one file each, no run key in their names) was read as one job; the older
    run's error became the newer run's root cause. Per-rank files of one script stay one job."""
    import json

    older = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/proj/fail_data.py", line 10, in <module>\n'
        "[rank1]:     x = batch['x'] + 1\n"
        "[rank1]: TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'\n"
    )
    newer = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/home/user/proj/fail_hang.py", line 9, in <module>\n'
        "[rank0]:     dist.all_reduce(t)\n"
        "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"
        " Timed out waiting 20000ms for recv operation to complete\n"
    )
    for name, text, when in (("a.log", older, 1_000_000), ("b.log", newer, 2_000_000)):
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        os.utime(f, (when, when))
    diag = json.loads(run_cli("diagnose", "--format", "json", str(tmp_path)).stdout)
    assert diag["root_cause"]["failure_class"] == "collective-timeout"
    assert [os.path.basename(s) for s in diag["sources"]] == ["b.log"]
    assert (
        "the folder's files ran different programs: diagnosed the newest, b.log (fail_hang.py);"
        " left out a.log ran fail_data.py"
    ) in " ".join(diag["warnings"])
    # the same script in both files: one job's per-rank files, read together
    (tmp_path / "a.log").write_text(older.replace("fail_data.py", "fail_hang.py"), encoding="utf-8")
    diag = json.loads(run_cli("diagnose", "--format", "json", str(tmp_path)).stdout)
    assert sorted(os.path.basename(s) for s in diag["sources"]) == ["a.log", "b.log"]
    assert not any("different programs" in w for w in diag["warnings"])


def test_numbered_folders_of_a_run_word_are_separate_jobs():
    """New-user trial r19b finding 1: job-1/ ... job-5/, one train.log each, were merged into
    one run; numbered job/run/exp folders are separate jobs, numbered node/rank folders not."""
    from rootrank.runs import job_folders

    jobs = [f"/a/job-{k}/train.log" for k in range(1, 6)]
    keys = job_folders(jobs, "/a")
    assert keys["/a/job-3/train.log"] == RunKey("folder", "/a/job-3")
    kept, note = pick_run(jobs, mtime=lambda f: float(f.split("job-")[1][0]), root="/a")
    assert kept == ["/a/job-5/train.log"]
    assert note.startswith("the folder holds 5 runs: diagnosed the job in job-5/ (the newest)")
    assert job_folders([f"/a/exp_{k}/out.log" for k in (1, 2)], "/a") != {}
    assert job_folders([f"/a/node0{k}/train.log" for k in (1, 2, 3)], "/a") == {}
    assert job_folders([f"/a/rank{k}/stdout.log" for k in (0, 1)], "/a") == {}
