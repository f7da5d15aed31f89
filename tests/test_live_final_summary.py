"""``rootrank run`` keeps a stall in its final summary; an empty input is an input error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, run_cli

# -- rootrank run: a stall stays in the final summary ----------------------------------------


def _run(tmp_path, fmt: str):
    job = tmp_path / "hang.py"
    job.write_text(
        "import sys, time\n"
        "for step in range(3):\n"
        "    print(f'[rank0]: step {step} loss 2.0', flush=True)\n"
        "    print(f'[rank1]: step {step} loss 2.0', flush=True)\n"
        "    time.sleep(0.1)\n"
        "time.sleep(4)\n"
        "sys.exit(3)\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", fmt, "--stall", "1", "--"]
        + [sys.executable, str(job)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )


def test_the_final_summary_of_a_stalled_run_names_the_stall(tmp_path):
    proc = _run(tmp_path, "text")
    assert proc.returncode == 3
    err = proc.stderr.decode()
    assert "rootrank: stall:" in err
    final = err[err.index("Stalled: ") :]
    assert "rank 0 at step 2, rank 1 at step 2" in final.splitlines()[0]
    assert "No known failure found" not in err


def test_the_final_json_event_of_a_stalled_run_carries_the_stall(tmp_path):
    proc = _run(tmp_path, "json")
    evs = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    final = next(e for e in evs if e["event"] == "failure" and e["final"])
    assert final["diagnosis"]["root_cause"] is None
    assert {r["rank"]: r["step"] for r in final["stall"]["ranks"]} == {0: 2, 1: 2}
    assert final["stall"]["seconds"] >= 1


# -- an empty input is an input error ---------------------------------------------------------


def test_an_empty_stdin_is_an_input_error():
    done = run_cli("diagnose", "-", stdin=b"")
    assert done.returncode == 2
    assert b"<stdin>: empty input (0 bytes read)" in done.stderr


def test_an_empty_rank_file_beside_a_real_one_is_still_diagnosed(tmp_path):
    (tmp_path / "rank0.log").write_bytes(b"")
    (tmp_path / "rank1.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
        " total capacity of 79.11 GiB of which 1.02 GiB is free.\n",
        encoding="utf-8",
    )
    done = run_cli("diagnose", str(tmp_path), "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["root_cause"]["failure_class"] == "cuda-oom"


def test_a_command_killed_by_sigkill_says_so_when_its_output_names_no_cause(tmp_path):
    job = tmp_path / "killed.py"
    job.write_text(
        "import os, signal\nprint('step 1', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--", sys.executable, str(job)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 137
    err = proc.stderr.decode()
    assert "The command exited with code 137 (SIGKILL" in err
    assert "No known failure found" not in err


# -- rootrank run: the Verify reruns the command that ran --------------------------------------

MULTI_OOM = [
    b"[rank0]: step 1/100 loss 2.0",
    b"[rank1]: step 1/100 loss 2.0",
    b"[rank1]: Traceback (most recent call last):",
    b'[rank1]:   File "/home/u/proj/train.py", line 9, in <module>',
    b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has"
    b" a total capacity of 23.65 GiB of which 1.20 GiB is free.",
]


def test_the_verify_of_a_run_is_the_command_that_ran():
    """The runner knows the exact command (LiveScan(command=...), LaunchFacts.ran): the Verify
    reruns it, program path and arguments as typed, not a torchrun line made up from a
    frame's file name (train.py here)."""
    from rootrank.live.feed import LiveScan
    from rootrank.live.tracker import ProgressTracker

    command = "/opt/conda/bin/python3 multi.py --lr 3"
    scan = LiveScan(ProgressTracker(None), mask=False, command=command)
    scan.feed(scan.open("<command output>"), MULTI_OOM)
    d = scan.finish()
    assert d.root_cause.signature == "cuda-oom" and d.initiating_rank == 1
    assert d.root_cause.verify.startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True /opt/conda/bin/python3 multi.py --lr 3  #"
    )

    scan = LiveScan(ProgressTracker(None), mask=False, command="torchrun --nproc-per-node=2 x.py")
    scan.feed(scan.open("<command output>"), MULTI_OOM)
    d = scan.finish()
    assert d.root_cause.verify.startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc-per-node=2 x.py  #"
    )

    scan = LiveScan(ProgressTracker(None), mask=False, command="bash launch.sh")
    scan.feed(scan.open("<command output>"), MULTI_OOM)
    d = scan.finish()  # no launch command: what the output shows, as rootrank diagnose reads it
    assert "bash" not in d.root_cause.verify and "train.py" in d.root_cause.verify


def test_rootrank_run_gives_its_command_to_the_diagnosis(tmp_path):
    job = tmp_path / "fail.py"
    job.write_text(
        "import sys\n"
        "for step in range(1, 4):\n"
        "    print(f'[rank0]: step {step}/100 loss 2.0', flush=True)\n"
        "raise RuntimeError('CUDA error: an illegal memory access was encountered')\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", "json", "--"]
        + [sys.executable, str(job), "--lr", "3"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1
    evs = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    final = next(e for e in evs if e["event"] == "failure" and e["final"])
    root = final["diagnosis"]["root_cause"]
    assert root["signature"] == "cuda-illegal-memory-access"
    assert root["verify"].startswith("CUDA_LAUNCH_BLOCKING=1 ")
    ran = root["verify"].split("  #")[0].removeprefix("CUDA_LAUNCH_BLOCKING=1 ")
    program, *args = ran.split(" ")
    assert os.path.basename(program) == os.path.basename(sys.executable)  # the path, masked
    assert args[0].endswith("/fail.py") and args[1:] == ["--lr", "3"]


# -- a failure the command's exit code hid (``... | tee x.log``) --------------------------------


def _run_piped(tmp_path, fmt: str):
    job = tmp_path / "oom.py"
    job.write_text(
        "import sys\n"
        "print('[rank1]: step 3/100 loss 2.0', flush=True)\n"
        "print('[rank1]: Traceback (most recent call last):', flush=True)\n"
        "print('[rank1]:   File \"/work/train.py\", line 9, in <module>', flush=True)\n"
        "print('[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.'"
        " ' GPU 1 has a total capacity of 23.65 GiB of which 1.20 GiB is free.', flush=True)\n"
        "sys.exit(1)\n",
        encoding="utf-8",
    )
    # the pipeline's status is cat's 0, as tee's is in `torchrun train.py 2>&1 | tee x.log`
    return subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", fmt, "--", "bash", "-c"]
        + [f"{sys.executable} {job} 2>&1 | cat"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )


def test_a_failure_the_exit_code_hid_gets_the_full_report_with_a_note(tmp_path):
    proc = _run_piped(tmp_path, "text")
    assert proc.returncode == 0  # rootrank exits with the command's code
    err = proc.stderr.decode().splitlines()
    start = err.index(next(x for x in err if x.startswith("The command exited 0")))
    assert err[start].startswith(
        "The command exited 0, but its output shows a failure: its exit code hid it"
    )
    assert err[start + 1] == "Root cause: CUDA out of memory in the caching allocator on rank 1"


def test_the_final_json_event_says_the_exit_code_hid_the_failure(tmp_path):
    proc = _run_piped(tmp_path, "json")
    evs = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    final = next(e for e in evs if e["event"] == "failure" and e["final"])
    assert final["exit_code_hid_failure"] is True
    assert final["diagnosis"]["root_cause"]["signature"] == "cuda-oom"
    assert final["diagnosis"]["initiating_rank"] == 1
    assert evs[-1] == {"event": "exit", "time": evs[-1]["time"], "code": 0}
