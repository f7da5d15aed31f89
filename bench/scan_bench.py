"""Scan-speed benchmark: ``rootrank diagnose`` against ripgrep on the same large log.

One run does all of this on one generated log (see :mod:`gen_log`; default 512 MiB, ``--gb``
for 1 GiB, or ``--file`` for a log of your own with its ``.meta.json``):

1. warms the page cache (one untimed ``rg -c`` pass), so every tool reads from memory;
2. times ripgrep twice: a representative search (``rg -c 'out of memory|Watchdog caught|
   Traceback'``) and the fair comparison, ``rg -c -F -f LITERALS`` with every literal of the
   signature library (the same literals rootrank's matcher checks on every line, taken from
   ``Matcher.from_library(default_library()).literals()`` of the engine that is benchmarked);
   each ripgrep command runs ``--repeat`` times and the best time counts;
3. times ``python -m rootrank diagnose FILE --format json`` once, with its CPU time and
   peak resident memory (GNU ``/usr/bin/time``'s ``%U %S %M``), and checks its answer against
   the generator's side file: root cause ``cuda-oom`` on the rank that was made to fail, the
   evidence line number, and the watchdog timeouts on the other nodes' ranks as collateral;
4. prints one table: wall and CPU seconds, MB/s by each (MB = 10^6 bytes of the file), peak
   RSS in MiB, and the ratio of rootrank's CPU time to each ripgrep's (CPU time is the
   stable number on a shared machine; wall time is what a user waits);
5. profiles rootrank (cProfile with a CPU-time clock) on a smaller log (default 50 MiB)
   and prints the top functions by cumulative and by own time.

The engine is run as a child process with this interpreter and this environment, so
``PYTHONPATH=/some/copy/server python bench/scan_bench.py`` benchmarks a copy of the engine.
ripgrep's RSS includes the file pages it maps (``rg`` memory-maps a single file), so it is
shown for reference only. Exit status: 0 when rootrank's answer is right, 1 when it is wrong
or rootrank failed, 2 on a usage error or a missing ``rg``.

Usage::

    python bench/scan_bench.py                 # 512 MiB log + 50 MiB profile
    python bench/scan_bench.py --gb            # 1 GiB log
    python bench/scan_bench.py --size 100M --no-profile
    python bench/scan_bench.py --paired 10M,100M --ranks 1024   # issue 11's ratios, paired
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_log  # the generator beside this file

#: The "what a human would grep for" search.
RG_REPRESENTATIVE = "out of memory|Watchdog caught|Traceback"

_LITERALS_SCRIPT = """
import json
from rootrank.engine import default_library
from rootrank.match import Matcher
m = Matcher.from_library(default_library())
print(json.dumps({"sensitive": [l for l, _ in m.sensitive], "insensitive": [l for l, _ in m.insensitive]}))
"""


@dataclass
class Run:
    """One timed child process: wall seconds, CPU seconds (user+sys), peak RSS in KiB."""

    label: str
    argv: list[str]
    seconds: float
    cpu: float
    maxrss_kib: int
    returncode: int
    stdout: bytes
    stderr: bytes


def timed(label: str, argv: list[str]) -> Run:
    """Run ``argv`` to completion under ``/usr/bin/time``; wall time from here, CPU time and
    peak RSS (KiB) of that child from GNU time's ``%U %S %M``.

    GNU time is used because a child forked straight from this Python process inherits the
    parent's RSS high-water mark in ``ru_maxrss`` (Linux keeps it across ``exec``), which
    would put a ~20 MiB floor under every number. Without ``/usr/bin/time`` the numbers come
    from ``os.wait4`` and peak RSS is an upper bound. Output goes to temporary files.
    """
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as tf,
    ):
        full = [gnu_time, "-f", "%U %S %M", "-o", tf.name, *argv] if gnu_time else argv
        start = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu, maxrss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
        if gnu_time:
            fields = tf.read().split()
            # "Command exited with non-zero status N" may come first.
            user, system, rss = fields[-3:]
            cpu, maxrss = float(user) + float(system), int(rss)
        out.seek(0)
        err.seek(0)
        return Run(label, argv, seconds, cpu, maxrss, proc.returncode, out.read(), err.read())


def best_of(n: int, label: str, argv: list[str]) -> Run:
    """The fastest of ``n`` runs of ``argv`` (for ripgrep, whose runs take seconds)."""
    runs = [timed(label, argv) for _ in range(max(1, n))]
    return min(runs, key=lambda r: r.seconds)


def engine_literals(python: str) -> tuple[list[str], list[str]]:
    """(case-sensitive, case-insensitive lower-cased) literals of the benchmarked engine."""
    out = subprocess.run(
        [python, "-c", _LITERALS_SCRIPT], check=True, capture_output=True, text=True
    )
    data = json.loads(out.stdout)
    return data["sensitive"], data["insensitive"]


def ensure_log(
    path: str | None, size: int, seed: int, ranks: int, stacked: bool = False
) -> tuple[str, dict]:
    """The log to benchmark and its metadata; generates it (cached under ``bench/.data``).

    Raises:
        SystemExit: ``path`` was given but has no ``.meta.json`` beside it.
    """
    if path:
        meta_path = path + ".meta.json"
        if not os.path.exists(meta_path):
            raise SystemExit(
                f"scan_bench: {meta_path} missing (generate the log with bench/gen_log.py)"
            )
        with open(meta_path, encoding="utf-8") as fh:
            return path, json.load(fh)
    tag = "-stacked" if stacked else ""
    path = os.path.join(gen_log.DATA_DIR, f"train-{size >> 20}M-r{ranks}-s{seed}{tag}.log")
    meta_path = path + ".meta.json"
    if os.path.exists(path) and os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        if (
            meta.get("size_bytes") == os.path.getsize(path)
            and meta.get("seed") == seed
            and meta.get("version") == gen_log.GENERATOR_VERSION
        ):
            return path, meta
    start = time.perf_counter()
    meta_obj = gen_log.generate(path, size, seed=seed, world=ranks, stacked=stacked)
    print(
        f"generated {path} ({meta_obj.size_bytes / 1e6:.0f} MB, {meta_obj.lines} lines) in {time.perf_counter() - start:.1f} s"
    )
    with open(meta_path, encoding="utf-8") as fh:
        return path, json.load(fh)


def check_answer(diag: dict, meta: dict) -> list[tuple[str, bool, str]]:
    """Compare rootrank's JSON diagnosis with the generator's metadata.

    Returns ``(check, passed, what was seen)`` rows.
    """
    rows: list[tuple[str, bool, str]] = []
    rc = diag.get("root_cause") or {}
    rows.append(
        (
            "root cause class",
            rc.get("failure_class") == meta["failure_class"],
            str(rc.get("failure_class")),
        )
    )
    rows.append(("root cause rank", rc.get("rank") == meta["rank"], str(rc.get("rank"))))
    rows.append(
        (
            "initiating rank",
            diag.get("initiating_rank") == meta["rank"],
            str(diag.get("initiating_rank")),
        )
    )
    lines = [e.get("line") for e in rc.get("evidence", [])]
    rows.append(("evidence line", meta["oom_line"] in lines, str(lines[:3])))
    collateral = {c["signature"]: c for c in diag.get("collateral", [])}
    wd = collateral.get("nccl-watchdog-timeout")
    seen = sorted(wd["ranks"]) if wd else []
    rows.append(("watchdog collateral ranks", seen == sorted(meta["timeout_ranks"]), str(seen)))
    rows.append(
        (
            "world size",
            (diag.get("ranks") or {}).get("world_size") == meta["world_size"],
            str((diag.get("ranks") or {}).get("world_size")),
        )
    )
    rows.append(
        (
            "lines read",
            diag.get("lines_read", 0) >= meta["lines"],
            f"{diag.get('lines_read')} (file has {meta['lines']} physical)",
        )
    )
    return rows


_PROFILE_SCRIPT = """
import cProfile, sys, time
from rootrank.cli import main
prof = cProfile.Profile(time.process_time)
prof.enable()
try:
    code = main(sys.argv[2:])
finally:
    prof.disable()
    prof.dump_stats(sys.argv[1])
sys.exit(code)
"""


def profile(python: str, path: str, top: int, extra: list[str]) -> tuple[Run, str]:
    """cProfile one ``rootrank diagnose`` of ``path`` with a CPU-time clock (so waiting for
    a core on a busy machine does not count); returns the run and the two stats tables."""
    import io

    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "scan.prof")
        argv = [python, "-c", _PROFILE_SCRIPT, prof, "diagnose", path, "--format", "json", *extra]
        run = timed("profile", argv)
        if run.returncode not in (0, 1):
            return (
                run,
                f"profiled run failed ({run.returncode}): {run.stderr.decode(errors='replace')[-2000:]}",
            )
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)
        return run, buf.getvalue()


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def paired(args: argparse.Namespace, python: str, rg: str, extra: list[str]) -> int:
    """The issue-11 ratios, measured in one run as paired CPU times (the machine is shared: a
    ratio of two runs made back to back is steadier than either time).

    For each size: a generated ``--ranks`` log, its per-rank split (``slurm-%j-%t.out`` and the
    job's ``slurm-%j.out``, :func:`gen_log.split_per_rank`) and the split's files concatenated
    into one file (the same bytes as the folder). Each round times, back to back, ``rg -c -F
    -f LITERALS`` on the one file, ``rootrank diagnose`` on the one file, on the folder and on
    the generated log itself (the "tee log": the same lines with their ``[rankN]:`` prefixes,
    which gets the folder's diagnosis, where the one file's lines name no rank); the medians of
    the per-round ratios are printed. Returns 1 when a rootrank run fails or the
    folder's root cause is not the generated failure's, else 0.
    """
    sensitive, insensitive = engine_literals(python)
    work = tempfile.mkdtemp(prefix="scan-bench-")
    literal_file = os.path.join(work, "literals.txt")
    with open(literal_file, "w", encoding="utf-8") as fh:
        fh.write("\n".join(sensitive + insensitive) + "\n")
    rows = []
    ok = True
    # --before: CPU seconds and (this engine / the other) per round, by (MB, input)
    before: dict[tuple[float, str], list[float]] = {}
    speedup: dict[tuple[float, str], list[float]] = {}
    before_rg: dict[float, list[float]] = {}

    def inputs(one: str, folder: str, log: str) -> list[tuple[str, str]]:
        return [("one", one), ("folder", folder), ("tee", log)] if args.before else []

    try:
        for size in args.paired:
            log, meta = ensure_log(None, size, args.seed, args.ranks, args.stacked)
            folder = os.path.join(work, f"split-{size >> 20}M")
            names = gen_log.split_per_rank(log, folder, meta["world_size"])
            one = os.path.join(work, f"one-{size >> 20}M.log")
            with open(one, "wb") as out:
                for name in names:
                    with open(name, "rb") as fh:
                        shutil.copyfileobj(fh, out)
            mb = os.path.getsize(one) / 1e6
            timed("warm", [rg, "-c", "Traceback", one])
            rg_argv = [rg, "-c", "-F", *(["-i"] if insensitive else []), "-f", literal_file, one]
            rr = [python, "-m", "rootrank", "diagnose", "--format", "json", *extra]
            # --before: the other engine, the same inputs, in the same rounds
            old = ["env", f"PYTHONPATH={args.before}", *rr] if args.before else []
            vs_rg, vs_one, vs_tee = [], [], []
            cpu: dict[str, list[float]] = {"rg": [], "one": [], "folder": [], "tee": []}
            for _ in range(args.rounds):
                r_rg = timed("rg", rg_argv)
                r_one = timed("one", [*rr, one])
                r_dir = timed("folder", [*rr, folder])
                r_tee = timed("tee", [*rr, log])
                olds = {k: timed(f"before {k}", [*old, p]) for k, p in inputs(one, folder, log)}
                nows = {"one": r_one, "folder": r_dir, "tee": r_tee}
                for key, run in olds.items():
                    before.setdefault((mb, key), []).append(run.cpu)
                    speedup.setdefault((mb, key), []).append(nows[key].cpu / max(run.cpu, 1e-3))
                if olds:
                    before_rg.setdefault(mb, []).append(olds["one"].cpu / max(r_rg.cpu, 1e-3))
                for run in (r_one, r_dir, r_tee, *olds.values()):
                    if run.returncode not in (0, 1):
                        ok = False
                        print(
                            f"rootrank failed on {run.argv[-1]}: {run.stderr.decode(errors='replace')[-800:]}"
                        )
                # The one file is the folder's files end to end: its lines carry no rank (the
                # folder's do, from the file names), so only the folder's answer is checked.
                folder_cause = (json.loads(r_dir.stdout or b"{}").get("root_cause") or {}).get(
                    "signature"
                )
                if folder_cause != meta["signature"]:
                    ok = False
                    print(f"folder's root cause {folder_cause}, expected {meta['signature']}")
                cpu["rg"].append(r_rg.cpu)
                cpu["one"].append(r_one.cpu)
                cpu["folder"].append(r_dir.cpu)
                cpu["tee"].append(r_tee.cpu)
                vs_tee.append(r_dir.cpu / max(r_tee.cpu, 1e-3))
                vs_rg.append(r_one.cpu / max(r_rg.cpu, 1e-3))
                vs_one.append(r_dir.cpu / max(r_one.cpu, 1e-3))
            rows.append(
                (
                    mb,
                    len(names),
                    *(_median(cpu[k]) for k in ("rg", "one", "folder", "tee")),
                    _median(vs_rg),
                    _median(vs_one),
                    _median(vs_tee),
                )
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\npaired CPU seconds, median of {args.rounds} rounds; {args.ranks} ranks; "
        f"{len(sensitive) + len(insensitive)} literals for rg -F; the folder holds the one file's bytes"
    )
    head = (
        f"{'MB':>8} {'files':>6} {'rg -F cpu':>10} {'one file cpu':>13} {'folder cpu':>11}"
        f" {'tee log cpu':>12} {'one/rg':>8} {'folder/one':>11} {'folder/tee':>11}"
    )
    print(head)
    print("-" * len(head))
    for mb, files, c_rg, c_one, c_dir, c_tee, r1, r2, r3 in rows:
        print(
            f"{mb:>8.1f} {files:>6} {c_rg:>10.2f} {c_one:>13.2f} {c_dir:>11.2f} {c_tee:>12.2f}"
            f" {r1:>7.1f}x {r2:>10.2f}x {r3:>10.2f}x"
        )
    print(
        "one file = the folder's files end to end (the same bytes); tee log = the generated log"
        " they were split from (the same lines with their [rankN]: prefixes, the same diagnosis)"
    )
    print("targets (issue 11): folder/one <= 1.3x; one/rg <= 2x at 100 MB and 1 GB")
    if args.before:
        print(f"\n--before {args.before}, in the same rounds (CPU s; this engine / that one)")
        head = (
            f"{'MB':>8} {'one file cpu':>13} {'folder cpu':>11} {'tee log cpu':>12} {'one/rg':>8}"
            f" {'one now/before':>15} {'folder now/before':>18} {'tee now/before':>15}"
        )
        print(head)
        print("-" * len(head))
        for mb in before_rg:
            c = [_median(before[(mb, k)]) for k in ("one", "folder", "tee")]
            r = [_median(speedup[(mb, k)]) for k in ("one", "folder", "tee")]
            print(
                f"{mb:>8.1f} {c[0]:>13.2f} {c[1]:>11.2f} {c[2]:>12.2f} {_median(before_rg[mb]):>7.1f}x"
                f" {r[0]:>14.2f}x {r[1]:>17.2f}x {r[2]:>14.2f}x"
            )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", help="benchmark this log (needs FILE.meta.json from gen_log.py)")
    ap.add_argument(
        "--size",
        type=gen_log.parse_size,
        default=gen_log.parse_size("512M"),
        help="log size to generate (default 512M)",
    )
    ap.add_argument("--gb", action="store_true", help="1 GiB log (same as --size 1G)")
    ap.add_argument(
        "--ranks", type=int, default=16, help="world size of the generated log (8..1024)"
    )
    ap.add_argument("--seed", type=int, default=1129)
    ap.add_argument(
        "--stacked", action="store_true", help="[defaultN]:[rankM]: prefixes (torchrun --tee)"
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="ripgrep runs per command; the best counts"
    )
    ap.add_argument("--profile-size", type=gen_log.parse_size, default=gen_log.parse_size("50M"))
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile run")
    ap.add_argument("--top", type=int, default=25, help="functions listed per profile table")
    ap.add_argument("--no-mask", action="store_true", help="pass --no-mask to rootrank")
    ap.add_argument("--json", metavar="PATH", help="also write the numbers as JSON to PATH")
    ap.add_argument(
        "--paired",
        type=lambda t: [gen_log.parse_size(x) for x in t.split(",")],
        metavar="SIZES",
        help="only the issue-11 ratios, paired, at these sizes (e.g. 10M,100M or 10M,100M,1G): "
        "one file vs rg -F, and a folder of per-rank files vs the same bytes in one file",
    )
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds per size (--paired)")
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="with --paired: also time the engine in DIR (another copy's server/ folder) on the "
        "same inputs in the same rounds, and print this engine's CPU over that one's",
    )
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    rg = shutil.which("rg")
    if rg is None:
        print(
            "scan_bench: ripgrep (rg) not found; install it: apt-get install -y ripgrep",
            file=sys.stderr,
        )
        return 2
    python = sys.executable
    extra = ["--no-mask"] if args.no_mask else []
    if args.before and not os.path.isfile(os.path.join(args.before, "rootrank", "__init__.py")):
        print(f"scan_bench: --before {args.before}: no rootrank package in it", file=sys.stderr)
        return 2
    if args.paired:
        if not 8 <= args.ranks <= gen_log.MAX_WORLD:
            print(f"scan_bench: --ranks must be 8..{gen_log.MAX_WORLD}", file=sys.stderr)
            return 2
        return paired(args, python, rg, extra)
    size = (1 << 30) if args.gb else args.size
    path, meta = ensure_log(args.file, size, args.seed, args.ranks, args.stacked)
    nbytes = os.path.getsize(path)
    mb = nbytes / 1e6
    rg_version = subprocess.run(
        [rg, "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    print(
        f"file: {path}  {mb:.1f} MB, {meta['lines']} lines, {meta['world_size']} ranks, OOM on rank {meta['rank']} line {meta['oom_line']}"
    )
    print(f"python: {python} ({sys.version.split()[0]}); {rg_version}; cpus: {os.cpu_count()}")

    sensitive, insensitive = engine_literals(python)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
        fh.write("\n".join(sensitive + insensitive) + "\n")
        literal_file = fh.name
    try:
        timed("warm", [rg, "-c", "Traceback", path])  # page cache
        rg_repr = best_of(args.repeat, "rg representative", [rg, "-c", RG_REPRESENTATIVE, path])
        rg_lit_argv = [rg, "-c", "-F", *(["-i"] if insensitive else []), "-f", literal_file, path]
        rg_lit = best_of(
            args.repeat, f"rg -F {len(sensitive) + len(insensitive)} literals", rg_lit_argv
        )
    finally:
        os.unlink(literal_file)
    rr = timed(
        "rootrank diagnose",
        [python, "-m", "rootrank", "diagnose", path, "--format", "json", *extra],
    )

    print()
    head = f"{'tool':<24} {'wall s':>7} {'cpu s':>7} {'MB/s wall':>10} {'MB/s cpu':>9} {'peak RSS MiB':>12} {'rootrank/this (cpu)':>20}"
    print(head)
    print("-" * len(head))
    for run in (rg_repr, rg_lit, rr):
        ratio = rr.cpu / run.cpu if run.cpu else float("inf")
        print(
            f"{run.label:<24} {run.seconds:>7.2f} {run.cpu:>7.2f} {mb / run.seconds:>10.1f} {mb / max(run.cpu, 1e-3):>9.1f} "
            f"{run.maxrss_kib / 1024:>12.1f} {ratio:>19.1f}x"
        )
    print(
        f"(MB = 10^6 bytes; wall ratio rootrank/rg-literals {rr.seconds / rg_lit.seconds:.1f}x; "
        f"rg matching lines: representative {rg_repr.stdout.decode().strip()}, literals {rg_lit.stdout.decode().strip()})"
    )

    ok = rr.returncode == 0
    checks: list[tuple[str, bool, str]] = []
    try:
        diag = json.loads(rr.stdout) if rr.returncode in (0, 1) else None
    except ValueError:
        diag = None  # exit 1 is also what an uncaught Python exception gives
    if diag is None:
        ok = False
        err = rr.stderr.decode(errors="replace")[-3000:]
        print(f"\nrootrank failed (exit {rr.returncode}, no JSON on stdout):\n{err}")
    else:
        checks = check_answer(diag, meta)
        print("\nanswer check:")
        for name, passed, seen in checks:
            print(f"  {'ok  ' if passed else 'FAIL'} {name:<26} {seen}")
        ok = ok and all(p for _, p, _ in checks)

    prof_report = None
    if not args.no_profile:
        ppath, _ = ensure_log(None, args.profile_size, args.seed, args.ranks, args.stacked)
        plain = timed(
            "rootrank (profile file)",
            [python, "-m", "rootrank", "diagnose", ppath, "--format", "json", *extra],
        )
        prun, prof_report = profile(python, ppath, args.top, extra)
        pmb = os.path.getsize(ppath) / 1e6
        print(
            f"\nprofile: {ppath} ({pmb:.1f} MB): {plain.cpu:.2f} s CPU plain ({pmb / max(plain.cpu, 1e-3):.1f} MB/s), "
            f"{prun.cpu:.2f} s CPU under cProfile (times below are CPU seconds, inflated by the profiler)"
        )
        print(prof_report)

    total = time.perf_counter() - t0
    print(f"benchmark run time: {total:.1f} s; answer {'RIGHT' if ok else 'WRONG'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "file": path,
                    "bytes": nbytes,
                    "runs": [
                        {
                            "label": r.label,
                            "wall_s": r.seconds,
                            "cpu_s": r.cpu,
                            "mb_per_s_wall": mb / r.seconds,
                            "mb_per_s_cpu": mb / max(r.cpu, 1e-3),
                            "maxrss_mib": r.maxrss_kib / 1024,
                        }
                        for r in (rg_repr, rg_lit, rr)
                    ],
                    "ratio_cpu_vs_rg_literals": rr.cpu / max(rg_lit.cpu, 1e-3),
                    "ratio_wall_vs_rg_literals": rr.seconds / rg_lit.seconds,
                    "checks": [{"check": c, "ok": p, "seen": s} for c, p, s in checks],
                    "answer_ok": ok,
                    "benchmark_seconds": total,
                },
                fh,
                indent=2,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
