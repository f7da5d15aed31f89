"""What ``rootrank run`` and ``rootrank watch`` cost, measured in one run.

1. **Throughput**: a chatty job (a Python program that prints a realistic multi-rank log,
   :mod:`gen_log`, line by line with ``print``, as a training script does) is run to
   ``/dev/null`` directly and under ``rootrank run``; lines per second each way and the ratio.
   The same for ``cat`` of the same file (a job as fast as a pipe can go: the upper bound of
   what rootrank must keep up with). Each job is timed ``--repeat`` times, the best kept.
   The run under rootrank must also report the log's failure as a ``failure`` event with the
   same root cause, initiating rank and number of lines read as ``rootrank diagnose`` of the
   same file: the scan kept up and read every line.
2. **Idle watching**: ``rootrank watch`` on a log nobody writes to, for ``--idle`` seconds;
   CPU time it used over that wall time (percent of one core), from ``/proc/PID/stat``.
3. **Memory**: peak RSS (``VmHWM``) of the ``rootrank run`` process itself (not the job) at
   the end of the throughput run of the small and of the large log: bounded memory means the
   large log costs no more than the small one.

Usage::

    python bench/live_bench.py                       # 50 MB and 200 MB logs, 30 s idle
    python bench/live_bench.py --small 20M --large 100M --idle 10 --json /tmp/live.json

Linux only (``/proc``). Logs are cached in ``bench/.data/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import gen_log  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
PRINTER = (
    "import sys\n"
    "sys.stdout.reconfigure(errors='surrogateescape')\n"
    "with open(sys.argv[1], encoding='utf-8', errors='surrogateescape', newline='') as fh:\n"
    "    for line in fh:\n"
    "        print(line, end='')\n"
)


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "server")}


def log_of(size: int) -> Path:
    path = HERE / ".data" / f"live-{size}.log"
    if not path.exists():
        gen_log.generate(str(path), size, seed=1129, world=16)
    return path


def peak_rss_kib(pid: int, stop: threading.Event, out: list[int]) -> None:
    """Sample VmHWM of ``pid`` until it exits or ``stop`` is set (the last value wins)."""
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        out.append(int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.05)


def timed(cmd: list[str], repeat: int) -> tuple[float, bytes, int]:
    """Best wall time of ``cmd`` (stdout to /dev/null), its stderr, and rootrank's peak RSS (KiB)."""
    best = float("inf")
    err = b""
    rss = 0
    for _ in range(repeat):
        samples: list[int] = []
        stop = threading.Event()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(), cwd=ROOT
        )
        sampler = threading.Thread(target=peak_rss_kib, args=(proc.pid, stop, samples), daemon=True)
        sampler.start()
        _, err = proc.communicate()
        best = min(best, time.perf_counter() - t0)
        stop.set()
        sampler.join()
        rss = max(rss, max(samples, default=0))
        if proc.returncode != 0:
            raise SystemExit(
                f"{cmd[:6]} exited {proc.returncode}: {err[-2000:].decode(errors='replace')}"
            )
    return best, err, rss


def throughput(path: Path, repeat: int) -> dict:
    lines = sum(1 for _ in path.open("rb"))
    rr = [sys.executable, "-m", "rootrank", "run", "--format", "json", "--"]
    out: dict = {"bytes": path.stat().st_size, "lines": lines}
    # The answer the live scan must give: the post-mortem diagnosis of the same file.
    want = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rootrank", "diagnose", "--format", "json", str(path)],
            capture_output=True,
            env=env(),
            cwd=ROOT,
            check=False,
        ).stdout
    )
    for name, job in (
        ("print", [sys.executable, "-c", PRINTER, str(path)]),
        ("cat", ["cat", str(path)]),
    ):
        direct, _, _ = timed(job, repeat)
        under, err, rss = timed(rr + job, repeat)
        events = [json.loads(x) for x in err.decode().splitlines() if x.startswith("{")]
        failures = [e for e in events if e["event"] == "failure"]
        got = failures[-1]["diagnosis"] if failures else None
        ok = (
            got is not None
            and got["root_cause"]["signature"] == want["root_cause"]["signature"]
            and got["initiating_rank"] == want["initiating_rank"]
            and got["lines_read"] == want["lines_read"]
        )
        out[name] = {
            "direct_s": round(direct, 3),
            "rootrank_s": round(under, 3),
            "direct_lines_per_s": round(lines / direct),
            "rootrank_lines_per_s": round(lines / under),
            "ratio": round(direct / under, 3),
            "rootrank_peak_rss_mib": round(rss / 1024, 1),
            "diagnosis_right": ok,
        }
    return out


def idle_cpu(seconds: float) -> dict:
    path = HERE / ".data" / "idle.log"
    path.parent.mkdir(exist_ok=True)
    path.write_text("[rank0]: step 1 loss 1.0\n[rank1]: step 1 loss 1.0\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootrank", "watch", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
        cwd=ROOT,
    )
    time.sleep(3)  # start-up (imports, the library) is not idle watching

    def cpu() -> float:
        with open(f"/proc/{proc.pid}/stat") as fh:
            f = fh.read().rsplit(") ", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK

    c0, t0 = cpu(), time.perf_counter()
    time.sleep(seconds)
    c1, t1 = cpu(), time.perf_counter()
    proc.terminate()
    proc.wait()
    return {
        "seconds": round(t1 - t0, 1),
        "cpu_s": round(c1 - c0, 3),
        "cpu_percent": round(100 * (c1 - c0) / (t1 - t0), 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=gen_log.parse_size, default=gen_log.parse_size("50M"))
    ap.add_argument("--large", type=gen_log.parse_size, default=gen_log.parse_size("200M"))
    ap.add_argument(
        "--idle", type=float, default=30.0, help="seconds of idle watching (default 30)"
    )
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    report: dict = {}
    for label, size in (("small", args.small), ("large", args.large)):
        path = log_of(size)
        report[label] = throughput(path, args.repeat if label == "small" else 1)
    report["idle"] = idle_cpu(args.idle)
    print(
        f"{'log':6} {'job':6} {'lines':>9} {'direct l/s':>11} {'rootrank l/s':>13} {'ratio':>6} {'RSS MiB':>8} right"
    )
    for label in ("small", "large"):
        r = report[label]
        for job in ("print", "cat"):
            j = r[job]
            print(
                f"{label:6} {job:6} {r['lines']:>9} {j['direct_lines_per_s']:>11} {j['rootrank_lines_per_s']:>13} "
                f"{j['ratio']:>6} {j['rootrank_peak_rss_mib']:>8} {j['diagnosis_right']}"
            )
    i = report["idle"]
    print(f"idle watch: {i['cpu_s']} s CPU in {i['seconds']} s = {i['cpu_percent']}% of one core")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    right = all(
        report[k][j]["diagnosis_right"] for k in ("small", "large") for j in ("print", "cat")
    )
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
