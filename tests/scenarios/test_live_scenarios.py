"""Real torchrun jobs (gloo on CPU) under ``rootrank run`` and ``rootrank watch``.

- a crash on rank 2 (``bad_data_raise``): the diagnosis is printed after the job's output,
  naming rank 2, and rootrank exits with torchrun's own exit code;
- a hang (``live_hang_sleep``): rank 1 sleeps in Python before a collective while ranks 0 and
  2 wait in ``all_reduce``; the stall is reported naming rank 1 before gloo's collective
  timeout fires and within twice ``--stall`` of rank 1's last step; then Ctrl-C (SIGINT to
  rootrank) stops the whole job and no process of it is left;
- a healthy run (``healthy_ddp``): nothing reported, exit 0, standard output byte-identical
  to the same run without rootrank;
- the same crash and hang followed with ``rootrank watch`` over torchrun's ``--log-dir``.

Marked ``scenarios`` (run with ``pytest -m scenarios``); skipped without torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (pip install torch==2.13.0)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.scenarios,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc"),
]

sys.path.insert(0, str(ROOT / "scenarios"))
import run as scenario_run  # noqa: E402  (scenarios/run.py: the torchrun command line)
from conftest import terminal_signals  # noqa: E402

STALL = 8.0
GLOO_TIMEOUT = 60.0


def torchrun(
    name: str,
    *,
    nproc: int,
    fault: int | None,
    log_dir: Path | None = None,
    tee: str | None = None,
    redirects: str | None = None,
    args: tuple[str, ...] = (),
) -> list[str]:
    script_args = (("--fault-rank", str(fault)) if fault is not None else ()) + args
    return scenario_run.torchrun_command(
        Path("scenarios") / f"{name}.py",
        nproc=nproc,
        master_port=scenario_run.free_port(),
        python=sys.executable,
        log_dir=log_dir,
        tee=tee,
        redirects=redirects,
        script_args=script_args,
    )


def job_env(marker: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "server"),
        "PYTHONUNBUFFERED": "1",
        "SCENARIO_GLOO_TIMEOUT": str(int(GLOO_TIMEOUT)),
        "ROOTRANK_TEST_JOB": marker,
        **extra,
    }


def job_processes(marker: str) -> list[int]:
    """Live processes whose environment carries ``marker`` (the job's, however started)."""
    found = []
    needle = f"ROOTRANK_TEST_JOB={marker}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat") as fh:
                if fh.read().rsplit(") ", 1)[1][0] == "Z":
                    continue
        except OSError:
            continue
        found.append(int(name))
    return found


class Events:
    """JSON event lines read from a pipe as they come."""

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.stream = stream
        self.buf = b""
        self.other: list[bytes] = []

    def next(self, timeout: float) -> dict | None:
        end = time.time() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.startswith(b"{"):
                    return json.loads(line)
                self.other.append(line)
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.stream], [], [], left)
            if r:
                chunk = os.read(self.stream.fileno(), 65536)
                if not chunk:
                    return None
                self.buf += chunk


def stop_and_check_no_orphan(proc: subprocess.Popen, marker: str) -> int:
    """Ctrl-C as a user sends it (SIGINT to rootrank); the whole job must stop."""
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=90)
    deadline = time.time() + 10
    while job_processes(marker) and time.time() < deadline:
        time.sleep(0.2)
    assert job_processes(marker) == [], "processes of the job survived Ctrl-C"
    return code


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_crash_on_rank_2_prints_the_diagnosis_and_keeps_the_exit_code(tmp_path, fmt):
    marker = uuid.uuid4().hex
    cmd = torchrun("bad_data_raise", nproc=3, fault=2)
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", fmt, "--color", "never", "--", *cmd],
        cwd=ROOT,
        env=job_env(marker),
        capture_output=True,
        timeout=240,
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, err[-3000:]  # torchrun's own exit code for a failed worker
    if fmt == "text":
        report = err[err.index("Root cause:") :]
        assert (
            "user code raised an exception" in report.lower() or "user-code-exception" in report
        ), report
        assert "Initiating rank: 2" in report
        assert (
            "ValueError: shard-00002.csv" in err[: err.index("Root cause:")]
        )  # the job's output first
    else:
        evs = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
        finals = [e for e in evs if e["event"] == "failure" and e["final"]]
        assert len(finals) == 1
        diag = finals[0]["diagnosis"]
        assert diag["root_cause"]["failure_class"] == "user-code-exception"
        assert diag["initiating_rank"] == 2
        assert evs[-1] == {"event": "exit", "time": evs[-1]["time"], "code": 1}
    assert job_processes(marker) == []


def test_run_hang_reports_the_sleeping_rank_before_the_timeout_then_ctrl_c_stops_everything(
    tmp_path,
):
    marker = uuid.uuid4().hex
    cmd = torchrun(
        "live_hang_sleep",
        nproc=3,
        fault=1,
        tee="3",
        args=("--steps", "12", "--hang-seconds", "300"),
    )
    out = (tmp_path / "stdout.log").open("wb")
    started = time.time()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rootrank",
            "run",
            "--format",
            "json",
            "--stall",
            str(STALL),
            "--on-stall",
            "dump",
            "--",
            *cmd,
        ],
        cwd=ROOT,
        env=job_env(marker),
        stdout=out,
        stderr=subprocess.PIPE,
        preexec_fn=terminal_signals,
    )
    try:
        events = Events(proc.stderr)
        stall = events.next(timeout=120)
        assert stall is not None, b"\n".join(events.other)[-3000:].decode(errors="replace")
        assert stall["event"] == "stall"
        assert stall["suspect_rank"] == 1, stall["why"]
        steps = {r["rank"]: r["step"] for r in stall["ranks"]}
        assert steps == {0: 5, 1: 4, 2: 5}  # rank 1 never printed step 5
        rank1 = next(r for r in stall["ranks"] if r["rank"] == 1)
        waited = stall["time"] - rank1["time"]
        assert STALL <= waited <= 2 * STALL, waited
        assert stall["time"] < rank1["time"] + GLOO_TIMEOUT  # before the collective timeout
        stacks = stall["stacks"]
        by_rank = {s["rank"]: s for s in stacks["stacks"] if s["rank"] is not None}
        if by_rank:  # py-spy could attach: ranks 0 and 2 in all_reduce, rank 1 in its data read
            assert (
                by_rank[0]["collective"] == "all_reduce"
                and by_rank[2]["collective"] == "all_reduce"
            )
            assert by_rank[1]["collective"] is None and "load_batch" in by_rank[1]["where"]
        else:
            assert stacks["notes"]
    finally:
        code = stop_and_check_no_orphan(proc, marker)
        out.close()
    assert time.time() - started < GLOO_TIMEOUT + 60
    assert code != 0
    assert b"[default1]:step 4" in (tmp_path / "stdout.log").read_bytes()


def test_run_healthy_job_is_invisible(tmp_path):
    marker = uuid.uuid4().hex
    cmd = torchrun("healthy_ddp", nproc=2, fault=None)
    for _ in range(3):
        direct = subprocess.run(
            cmd, cwd=ROOT, env=job_env(marker), capture_output=True, timeout=240
        )
        output = (direct.stdout + direct.stderr).decode(errors="replace")
        if not scenario_run.aborted_at_teardown(direct.returncode, output):
            break
        cmd = torchrun("healthy_ddp", nproc=2, fault=None)
    assert direct.returncode == 0, direct.stderr[-2000:]
    for _ in range(3):
        cmd = torchrun("healthy_ddp", nproc=2, fault=None)  # another free port
        proc = subprocess.run(
            [sys.executable, "-m", "rootrank", "run", "--", *cmd],
            cwd=ROOT,
            env=job_env(marker),
            capture_output=True,
            timeout=240,
        )
        output = (proc.stdout + proc.stderr).decode(errors="replace")
        if not scenario_run.aborted_at_teardown(proc.returncode, output):
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == direct.stdout  # byte for byte
    assert b"training finished" in proc.stdout
    # nothing reported: no line of rootrank's own (its alerts and notes start "rootrank:", a
    # diagnosis "Root cause:"), whatever the paths say (a clone's folder is often "rootrank")
    said = [
        line
        for line in proc.stderr.splitlines()
        if line.startswith((b"rootrank", b"Root cause", b"Unclassified failure"))
    ]
    assert said == [], said
    assert job_processes(marker) == []


def _watch(log_dir: Path, marker: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rootrank",
            "watch",
            "--format",
            "json",
            "--stall",
            str(STALL),
            str(log_dir),
        ],
        cwd=ROOT,
        env=job_env(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=terminal_signals,
    )


def test_watch_log_dir_reports_the_crash_on_rank_2(tmp_path):
    marker = uuid.uuid4().hex
    logs = tmp_path / "logs"
    logs.mkdir()
    watcher = _watch(logs, marker)
    try:
        cmd = torchrun("bad_data_raise", nproc=3, fault=2, log_dir=logs, redirects="3")
        job = subprocess.run(cmd, cwd=ROOT, env=job_env(marker), capture_output=True, timeout=240)
        assert job.returncode == 1
        events = Events(watcher.stdout)
        failure = events.next(timeout=30)
        assert failure is not None and failure["event"] == "failure"
        diag = failure["diagnosis"]
        assert diag["root_cause"]["failure_class"] == "user-code-exception"
        assert diag["initiating_rank"] == 2
        assert "/attempt_0/2/" in diag["root_cause"]["evidence"][0]["path"]
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=60)


def test_watch_log_dir_reports_the_stall_of_the_sleeping_rank(tmp_path):
    marker = uuid.uuid4().hex
    logs = tmp_path / "logs"
    logs.mkdir()
    watcher = _watch(logs, marker)
    cmd = torchrun(
        "live_hang_sleep",
        nproc=3,
        fault=1,
        log_dir=logs,
        redirects="3",
        args=("--steps", "12", "--hang-seconds", "300"),
    )
    job = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=job_env(marker),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        stall = Events(watcher.stdout).next(timeout=120)
        assert stall is not None and stall["event"] == "stall"
        assert stall["suspect_rank"] == 1, stall["why"]
        assert {r["rank"]: r["step"] for r in stall["ranks"]} == {0: 5, 1: 4, 2: 5}
        rank1 = next(r for r in stall["ranks"] if r["rank"] == 1)
        assert "/attempt_0/1/" in rank1["path"]
        assert STALL <= stall["time"] - rank1["time"] <= 2 * STALL + scenario_watch_poll()
        assert job.poll() is None  # the job still hangs: reported before the timeout fired
    finally:
        os.killpg(job.pid, signal.SIGINT)
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=60)


def scenario_watch_poll() -> float:
    from rootrank.live.watch import POLL

    return POLL


def test_run_withdraws_the_alarms_of_a_run_that_ends_healthy(tmp_path):
    """New-user trial r17c, live for real (``tests/data/trial_r17c/trial.py``, 3 ranks): rank
    1's snapshot thread dies of ENOSPC at step 3 (``/dev/full``), rank 1 sleeps 8 s at step 4,
    and the run trains to step 12 and exits 0. The failure and the stall said while it ran are
    withdrawn, and the last word is that it finished healthy."""
    marker = uuid.uuid4().hex
    script = ROOT / "tests" / "data" / "trial_r17c" / "trial.py"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=3",
        f"--master-port={scenario_run.free_port()}",
        str(script),
    ]
    env = job_env(
        marker,
        TRIAL_CKPT="/dev/full",
        TRIAL_SLOW="8",
        TRIAL_TIMEOUT="60",
        TRIAL_FMT="rank",
        TRIAL_MODE="snapshot,slow",
        OMP_NUM_THREADS="1",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--format", "json", "--stall", "4", "--", *cmd],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=240,
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    evs = [json.loads(x) for x in err.splitlines() if x.startswith("{")]
    kinds = [e["event"] for e in evs]
    assert "stall" in kinds, kinds
    withdrawn = {e["alarm"]: e for e in evs if e["event"] == "withdrawn"}
    assert "stall" in withdrawn, kinds
    healthy = next(e for e in evs if e["event"] == "healthy")
    assert healthy["final"] is True and healthy["exit_code"] == 0
    assert healthy["diagnosis"]["root_cause"] is None
    assert all(a["why"] for a in healthy["withdrawn"])
    assert not any(e["event"] == "failure" and e["final"] for e in evs)
    assert evs[-1]["event"] == "exit" and evs[-1]["code"] == 0
    assert job_processes(marker) == []
