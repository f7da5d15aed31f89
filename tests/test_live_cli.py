"""``rootrank run`` and ``rootrank watch`` end to end, as a user runs them (subprocesses):
output passthrough, exit codes, signals, orphans, the pseudo-terminal, failure and stall
events, and following files through appends, new files, rotation and truncation.

The commands run here are small Python programs written by each test (the real torchrun
runs are in tests/scenarios/test_live_scenarios.py)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, terminal_signals

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process groups and /proc: Linux"
)

OOM = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 3, in <module>\n'
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    "capacity of 79.15 GiB of which 1.2 GiB is free.\n"
)


def script(tmp_path: Path, body: str, name: str = "job.py") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def rootrank(*args: str, extra_env: dict[str, str] | None = None, **kw) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server"), **(extra_env or {})}
    kw.setdefault("preexec_fn", terminal_signals)
    return subprocess.Popen(
        [sys.executable, "-m", "rootrank", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,
    )


def events(raw: bytes) -> list[dict]:
    return [json.loads(line) for line in raw.decode().splitlines() if line.startswith("{")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


CHATTY = """
    import os, sys
    out, err = sys.stdout.buffer, sys.stderr.buffer
    for i in range(300):
        out.write(b"\\r%3d%%|\\x1b[32m####\\x1b[0m| %d/300 [00:01<00:02]" % (i // 3, i))
        if i % 50 == 0:
            err.write(b"warning %d: \\xff\\xfe not utf-8\\n" % i)
            err.flush()
    out.write(b"\\nstep 300 loss 0.25\\nno newline at the end")
    out.flush()
    sys.exit(int(os.environ.get("CODE", "0")))
"""


def test_run_output_is_identical_and_the_exit_code_kept(tmp_path):
    cmd = script(tmp_path, CHATTY)
    direct = subprocess.run(cmd, capture_output=True, env={**os.environ, "CODE": "0"})
    proc = rootrank("run", "--", *cmd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out == direct.stdout and err == direct.stderr  # nothing added, nothing lost
    assert out.endswith(b"no newline at the end")
    failing = rootrank(
        "run", "--log", str(tmp_path / "job.log"), "--", *cmd, extra_env={"CODE": "3"}
    )
    out3, err3 = failing.communicate(timeout=60)
    assert failing.returncode == 3
    assert out3 == direct.stdout
    assert err3.startswith(direct.stderr)  # the diagnosis follows the command's own stderr
    assert (
        b"The command exited with code 3; nothing in its output names a cause"
        in err3[len(direct.stderr) :]
    )
    saved = (tmp_path / "job.log").read_bytes()
    assert len(saved) == len(direct.stdout) + len(direct.stderr)  # every byte, lines kept whole
    assert saved.count(b"\n") == direct.stdout.count(b"\n") + direct.stderr.count(b"\n")
    assert b"step 300 loss 0.25\n" in saved and b"warning 250: \xff\xfe not utf-8\n" in saved


def test_run_prints_the_diagnosis_when_the_command_fails(tmp_path):
    cmd = script(
        tmp_path,
        f"""
        import sys
        sys.stdout.write("[rank0]: step 1 loss 2.0\\n")
        sys.stderr.write({OOM!r})
        sys.exit(1)
    """,
    )
    proc = rootrank("run", "--color", "never", "--", *cmd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert out == b"[rank0]: step 1 loss 2.0\n"
    text = err.decode()
    assert text.startswith(OOM)
    assert "Root cause: CUDA out of memory" in text
    assert "Initiating rank: 1" in text


def test_run_json_events_failure_while_running_then_final_then_exit(tmp_path):
    cmd = script(
        tmp_path,
        f"""
        import sys, time
        sys.stderr.write({OOM!r}); sys.stderr.flush()
        time.sleep(5)
        sys.exit(1)
    """,
    )
    proc = rootrank("run", "--format", "json", "--", *cmd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert out == b""  # stdout stays the command's
    evs = events(err)
    assert [(e["event"], e.get("final")) for e in evs] == [
        ("failure", False),
        ("failure", True),
        ("exit", None),
    ]
    live, final, done = evs
    assert live["time"] < done["time"] - 2  # reported while the command still ran
    for e in (live, final):
        assert e["diagnosis"]["schema"] == "rootrank.diagnosis/1"
        assert e["diagnosis"]["root_cause"]["failure_class"] == "cuda-oom"
        assert e["diagnosis"]["initiating_rank"] == 1
    assert done["code"] == 1


def test_run_reports_a_stall_with_the_rank_behind(tmp_path):
    cmd = script(
        tmp_path,
        """
        import time
        for step in range(10):
            print(f"[rank0]: step {step} loss 1.0", flush=True)
            if step < 9:
                print(f"[rank1]: step {step} loss 1.0", flush=True)
            time.sleep(0.1)
        time.sleep(7)
        print("[rank1]: step 9 loss 1.0", flush=True)
    """,
    )
    proc = rootrank("run", "--format", "json", "--stall", "2", "--on-stall", "dump", "--", *cmd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    evs = events(err)
    # the job went on and exited 0: the stall alarm is withdrawn at its end (trial r17c)
    assert [e["event"] for e in evs] == ["stall", "healthy", "exit"]
    assert evs[1]["exit_code"] == 0 and [a["alarm"] for a in evs[1]["withdrawn"]] == ["stall"]
    stall = evs[0]
    assert stall["suspect_rank"] == 1
    assert {r["rank"]: r["step"] for r in stall["ranks"]} == {0: 9, 1: 8}
    last = max(r["time"] for r in stall["ranks"] if r["rank"] == 1)
    assert (
        2 <= stall["time"] - last <= 2 * 2 + 5
    )  # py-spy takes a moment (more on a loaded machine)
    dumped = stall["stacks"]
    assert dumped is not None
    if dumped["stacks"]:  # py-spy could attach: the job's Python process is in time.sleep's caller
        assert any(f["func"] == "<module>" for s in dumped["stacks"] for f in s["frames"])
    else:
        assert dumped["notes"], "no stacks and no reason why"
    assert out.count(b"step") == 20


def test_run_forwards_sigterm_to_the_process_group_and_keeps_its_code(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    cmd = script(
        tmp_path,
        f"""
        import os, signal, subprocess, sys, time
        def bye(sig, frame):
            open(os.path.join({str(marks)!r}, str(os.getpid())), "w").write(str(sig))
            sys.exit(143)
        signal.signal(signal.SIGTERM, bye)
        if len(sys.argv) == 1:
            subprocess.Popen([sys.executable, __file__, "child"])  # same process group
        print("ready", flush=True)
        time.sleep(60)
    """,
    )
    proc = rootrank("run", "--", *cmd)
    assert proc.stdout is not None
    ready = b""
    while ready.count(b"ready") < 2:
        ready += os.read(proc.stdout.fileno(), 100)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 143
    got = {p.read_text() for p in marks.iterdir()}
    assert len(list(marks.iterdir())) == 2 and got == {str(int(signal.SIGTERM))}


def test_run_leaves_no_orphan(tmp_path):
    pidfile = tmp_path / "worker.pid"
    cmd = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        # a worker in its own session, as torchrun starts them
        w = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
        open({str(pidfile)!r}, "w").write(str(w.pid))
        sys.exit(1)
    """,
    )
    proc = rootrank("run", "--", *cmd)
    proc.communicate(timeout=60)
    assert proc.returncode == 1
    pid = int(pidfile.read_text())
    assert not alive(pid)


def test_run_gives_the_command_a_terminal_when_stdout_is_one(tmp_path):
    import pty

    cmd = script(
        tmp_path,
        """
        import os, sys
        print("tty:", os.isatty(1), os.isatty(2), flush=True)
        sys.exit(4)
    """,
    )
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootrank", "run", "--", *cmd],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    deadline = time.time() + 60
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 1)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    assert proc.returncode == 4
    assert b"tty: True True" in seen


def test_run_without_a_command_is_a_usage_error():
    proc = rootrank("run")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"no command to run" in err


def test_run_of_a_missing_command_exits_127():
    proc = rootrank("run", "--", "no-such-command-rootrank")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 127
    assert b"command not found" in err


# -- watch ------------------------------------------------------------------------------


class EventReader:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buf = b""

    def next(self, timeout: float = 20.0) -> dict:
        assert self.proc.stdout is not None
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            assert left > 0, f"no event within {timeout} s"
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, "rootrank watch ended"
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def test_watch_follows_new_files_appends_rotation_and_truncation(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    proc = rootrank("watch", "--format", "json", "--stall", "2", str(logs))
    reader = EventReader(proc)
    try:
        time.sleep(1)
        a = logs / "rank0.log"
        b = logs / "rank1.log"
        with a.open("w") as fa, b.open("w") as fb:
            for step in range(6):
                fa.write(f"step {step} loss 1.0\n")
                fa.flush()
                if step < 5:
                    fb.write(f"step {step} loss 1.0\n")
                    fb.flush()
                time.sleep(0.2)
        stall = reader.next()
        assert stall["event"] == "stall"
        assert stall["suspect_rank"] == 1  # from the file name: rank1.log is at step 4
        assert {r["rank"]: r["step"] for r in stall["ranks"]} == {0: 5, 1: 4}
        # rotation: rank0.log moves away and a new rank0.log starts a new run from step 0
        a.rename(logs / "rank0.log.1")
        with a.open("w") as fa:
            for step in range(3):
                fa.write(f"step {step} loss 1.0\n")
                fa.flush()
                time.sleep(0.2)
        rotated = reader.next()
        assert rotated["event"] == "stall"  # the progress was forgotten: a new run
        assert [(r["rank"], r["step"], r["line"]) for r in rotated["ranks"]] == [(0, 2, 3)]
        assert rotated["ranks"][0]["path"].endswith("rank0.log")
        # truncation: rank1.log is written again from scratch, and shows a failure (appended)
        b.write_text("step 0 loss 1.0\n")
        with b.open("a") as fb:
            fb.write(OOM.replace("[rank1]: ", ""))
        failure = reader.next()
        assert failure["event"] == "failure" and failure["final"] is False
        diag = failure["diagnosis"]
        assert diag["initiating_rank"] == 1  # from the file name
        assert diag["root_cause"]["failure_class"] == "cuda-oom"
        assert [(e["path"].rsplit("/", 1)[-1], e["line"]) for e in diag["root_cause"]["evidence"]][
            :1
        ] == [("rank1.log", 4)]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 130


def test_watch_stdin_reports_a_failure_and_stays_quiet_on_a_healthy_log():
    proc = rootrank("watch", "--format", "json", "-", stdin=subprocess.PIPE)
    out, _ = proc.communicate(OOM.encode(), timeout=60)
    evs = events(out)
    # a headline while reading (when a tick saw it) then, at the end of input, the full report
    assert {e["event"] for e in evs} == {"failure"} and evs[-1]["final"] is True
    assert evs[-1]["diagnosis"]["initiating_rank"] == 1
    assert proc.returncode == 0
    healthy = (ROOT / "tests" / "healthy").glob("*.log")
    text = next(iter(sorted(healthy))).read_bytes()
    quiet = rootrank("watch", "-", stdin=subprocess.PIPE)
    out2, err2 = quiet.communicate(text, timeout=60)
    assert out2 == b"" and err2 == b""
    assert quiet.returncode == 1


def test_watch_stdin_ends_with_the_full_report_after_its_headline():
    """Trial r16 finding 10: `... | rootrank watch -` said only the headline of a failure
    seen while reading; when the input ends the output is whole, so the full report follows
    (Fix, Verify), as `rootrank run` gives when its command ends."""
    proc = rootrank("watch", "-", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(OOM.encode())
    proc.stdin.flush()
    time.sleep(3)  # a tick sees the failure while the input is still open
    out, err = proc.communicate(timeout=60)
    text = out.decode()
    assert proc.returncode == 0, err
    head, _, rest = text.partition("\n")
    assert head.startswith("rootrank: failure in the log so far:") and "rank 1" in head
    assert "\nRoot cause: " in text and "\nVerify: " in text
    assert "\nInitiating rank: 1" in text


def test_watch_a_missing_path_is_an_input_error(tmp_path):
    proc = rootrank("watch", str(tmp_path / "nope"))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"no such file or folder" in err


def test_watch_a_binary_or_compressed_file_is_an_input_error(tmp_path):
    # followed, it would stay silent forever: no line ever comes out of it
    binary = tmp_path / "core.log"
    binary.write_bytes(bytes(range(256)) * 16)
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(b"\x1f\x8b\x08\x00" + bytes(64))
    for path, why in (
        (binary, "binary data, not a text log"),
        (
            packed,
            "gzip-compressed: watch follows a text log as it is written"
            f" (rootrank diagnose {packed} reads it)",
        ),
    ):
        proc = rootrank("watch", str(path))
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2
        assert out == b""
        assert err.decode().splitlines() == [f"rootrank: {path}: {why}"]


def test_watch_a_file_not_written_yet_is_followed(tmp_path):
    # an empty file (the job has not printed yet) is no binary file: it is followed
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    proc = rootrank("watch", str(log))
    try:
        time.sleep(1.5)
        assert proc.poll() is None
        with log.open("a") as fh:
            fh.write(OOM)
        deadline = time.time() + 20
        line = b""
        while time.time() < deadline and b"failure" not in line:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line += os.read(proc.stdout.fileno(), 4096)
        assert b"CUDA out of memory" in line and b"rank 1" in line
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_watch_a_folder_follows_the_newest_attempt_only(tmp_path):
    old = tmp_path / "run" / "attempt_0" / "1"
    old.mkdir(parents=True)
    (old / "stderr.log").write_text(OOM.replace("[rank1]: ", ""))  # the failure of an older attempt
    os.utime(old / "stderr.log", (time.time() - 600, time.time() - 600))
    new = tmp_path / "run" / "attempt_1" / "0"
    new.mkdir(parents=True)
    (new / "stdout.log").write_text("step 1 loss 1.0\n")
    proc = rootrank("watch", "--format", "json", "--stall", "2", str(tmp_path))
    try:
        first = EventReader(proc).next(timeout=30)
        assert first["event"] == "stall"  # not the old attempt's failure
        assert [r["path"].split("/run/")[1] for r in first["ranks"]] == ["attempt_1/0/stdout.log"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


VALUE_ERROR = (
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "train.py", line 9, in <module>\n'
    "[rank2]: ValueError: bad sample at index 7\n"
)


def test_watch_reports_the_next_jobs_failure_after_truncation_rotation_and_a_new_job_file(
    tmp_path,
):
    log = tmp_path / "app.log"
    log.write_text("")
    proc = rootrank("watch", "--format", "json", str(log))
    reader = EventReader(proc)
    try:
        time.sleep(1)
        log.write_text(OOM)
        first = reader.next()
        assert first["event"] == "failure"
        assert first["diagnosis"]["root_cause"]["failure_class"] == "cuda-oom"
        assert first["diagnosis"]["initiating_rank"] == 1
        # truncated, then the next job fails another way: its failure is reported
        time.sleep(2)
        log.write_text("")
        time.sleep(2)
        log.write_text(VALUE_ERROR)
        second = reader.next()
        assert second["event"] == "failure"
        assert second["diagnosis"]["initiating_rank"] == 2
        assert second["diagnosis"]["root_cause"]["evidence"][0]["line"] == 3
        # rotated, and the next job fails as the first did: reported again (a new job)
        log.rename(tmp_path / "app.log.1")
        log.write_text("step 1 loss 1.0\n" + OOM)
        third = reader.next()
        assert third["event"] == "failure"
        assert third["diagnosis"]["root_cause"]["failure_class"] == "cuda-oom"
        assert third["diagnosis"]["initiating_rank"] == 1
        assert third["diagnosis"]["root_cause"]["evidence"][0]["line"] == 4
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 130


def test_watch_a_folder_reports_a_requeued_slurm_jobs_failure(tmp_path):
    (tmp_path / "slurm-100.out").write_text(OOM)
    proc = rootrank("watch", "--format", "json", str(tmp_path))
    reader = EventReader(proc)
    try:
        first = reader.next(timeout=30)
        assert first["event"] == "failure"
        assert first["diagnosis"]["initiating_rank"] == 1
        time.sleep(1)
        (tmp_path / "slurm-101.out").write_text("step 1 loss 1.0\n" + VALUE_ERROR)
        second = reader.next(timeout=30)
        assert second["event"] == "failure"
        assert second["diagnosis"]["initiating_rank"] == 2
        ev = second["diagnosis"]["root_cause"]["evidence"][0]
        assert (ev["path"].rsplit("/", 1)[-1], ev["line"]) == ("slurm-101.out", 4)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 130


def test_watch_stdin_that_ends_during_a_stall_keeps_the_stall():
    """Trial r18 findings 1-2: three ranks print ``rank N step S`` with no brackets, two writes
    glued on a line (``rank 1 step 5 loss 0.3971rank 0 step 5 loss 0.2907``); the stream then
    stops while every rank is at step 5. Each glued half is its rank's step (no rank looks
    behind), and the end of the input during the stall is no healthy end: no ``healthy``
    event withdraws the stall."""
    lines = [
        "rank 0 step 4 loss 0.3595",
        "rank 1 step 4 loss 0.3513rank 2 step 4 loss 0.3019",
        "rank 1 step 5 loss 0.3971rank 0 step 5 loss 0.2907",
        "rank 2 step 5 loss 0.3173",
    ]
    proc = rootrank("watch", "--format", "json", "--stall", "2", "-", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    for ln in lines:
        proc.stdin.write((ln + "\n").encode())
        proc.stdin.flush()
        time.sleep(0.2)
    time.sleep(5)  # silent: a stall
    out, _ = proc.communicate(timeout=60)
    evs = events(out)
    kinds = [e["event"] for e in evs]
    assert "stall" in kinds and "healthy" not in kinds
    stall = next(e for e in evs if e["event"] == "stall")
    assert stall["suspect_rank"] is None
    assert {r["rank"]: r["step"] for r in stall["ranks"]} == {0: 5, 1: 5, 2: 5}
