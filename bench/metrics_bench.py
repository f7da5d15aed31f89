"""Training-curve benchmark: a log of millions of metric lines, points kept and peak memory.

One run:

1. writes a log of ``--lines`` metric lines (default 2,000,000) from ``--ranks`` ranks (default 8)
   in the shapes real loops print them, torchrun-prefixed (``[rankN]: step 12 loss=2.31
   grad_norm=1.02 lr=0.0003 samples/sec=812.3``), every 50th step also a Hugging Face dict on
   rank 0, with one loss spike injected on one rank at a known step;
2. runs ``python -m rootrank diagnose FILE --format json`` once as a child process under GNU
   ``time`` (CPU seconds and peak RSS of that process alone);
3. checks the answer: the spike's onset (kind ``loss-spike``, its rank and step), every series
   at most 500 points, the spike's point kept;
4. prints lines per second (by CPU time), the points kept per series (max and total), and peak
   RSS in MiB, next to the same figures for a log a tenth as long (memory must not grow with the
   log: the ratio of the two peaks is printed).

Usage::

    python bench/metrics_bench.py                   # 2,000,000 lines
    python bench/metrics_bench.py --lines 5000000
    python bench/metrics_bench.py --json out.json   # the figures as JSON too

Exit status 0 when the answer is right, 1 when it is wrong or rootrank failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def write_log(path: str, lines: int, ranks: int, seed: int = 13) -> dict:
    """Write the log; return what it holds (the spike's rank, step and 1-based line)."""
    rng = random.Random(seed)
    steps = lines // ranks
    spike_step = int(steps * 0.6)
    spike_rank = ranks // 2 + 1 if ranks > 2 else 1
    spike_line = None
    n = 0
    loss = 6.0
    with open(path, "w", encoding="utf-8") as fh:
        for step in range(1, steps + 1):
            loss = max(1.0, loss * 0.9999 + (rng.random() - 0.5) * 0.01)
            lr = 3e-4 * min(1.0, step / 500)
            for r in range(ranks):
                value = loss + (rng.random() - 0.5) * 0.2
                if step == spike_step and r == spike_rank:
                    value = loss * 40
                    spike_line = n + 1
                fh.write(
                    f"[rank{r}]: step {step} loss={value:.4f} grad_norm={0.8 + rng.random() * 0.4:.4f} "
                    f"lr={lr:.3e} samples/sec={800 + rng.random() * 40:.1f}\n"
                )
                n += 1
            if step % 50 == 0:
                fh.write(
                    f"[rank0]: {{'loss': {loss:.4f}, 'grad_norm': {0.9:.4f}, 'learning_rate': {lr:.4e}, "
                    f"'epoch': {step / steps:.2f}}}\n"
                )
                n += 1
    return {
        "lines": n,
        "spike_rank": spike_rank,
        "spike_step": spike_step,
        "spike_line": spike_line,
    }


def run(path: str) -> tuple[dict, float, float, float]:
    """Diagnose ``path`` in a child process; return (JSON, wall s, CPU s, peak RSS MiB)."""
    cmd = [
        "/usr/bin/time",
        "-f",
        "%U %S %M",
        sys.executable,
        "-m",
        "rootrank",
        "diagnose",
        path,
        "--format",
        "json",
    ]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - t
    user, sys_, rss = proc.stderr.strip().splitlines()[-1].split()
    return json.loads(proc.stdout), wall, float(user) + float(sys_), int(rss) / 1024


def check(d: dict, meta: dict) -> list[str]:
    problems = []
    onsets = [(o["kind"], o["rank"], o["step"]) for m in d["metrics"] for o in m["onsets"]]
    if ("loss-spike", meta["spike_rank"], meta["spike_step"]) not in onsets:
        problems.append(f"spike onset missing: {onsets}")
    for m in d["metrics"]:
        if len(m["points"]) > 500:
            problems.append(f"{m['name']} rank {m['rank']}: {len(m['points'])} points")
    loss = [m for m in d["metrics"] if m["name"] == "loss" and m["rank"] == meta["spike_rank"]]
    if not loss or not any(p[0] == meta["spike_step"] for p in loss[0]["points"]):
        problems.append("the spike's point was not kept")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--json", help="also write the figures to this file")
    ns = ap.parse_args(argv)
    rows = []
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for lines in (ns.lines // 10, ns.lines):
            path = os.path.join(tmp, f"metrics-{lines}.log")
            meta = write_log(path, lines, ns.ranks)
            d, wall, cpu, rss = run(path)
            problems = check(d, meta)
            ok = ok and not problems
            pts = [len(m["points"]) for m in d["metrics"]]
            rows.append(
                {
                    "lines": meta["lines"],
                    "bytes": os.path.getsize(path),
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "lines_per_cpu_s": round(meta["lines"] / cpu),
                    "series": len(pts),
                    "max_points": max(pts, default=0),
                    "total_points": sum(pts),
                    "peak_rss_mib": round(rss, 1),
                    "problems": problems,
                }
            )
    print(
        f"{'lines':>10} {'MB':>7} {'wall s':>7} {'CPU s':>7} {'lines/CPU s':>12} {'series':>6} "
        f"{'max pts':>7} {'all pts':>7} {'RSS MiB':>8}"
    )
    for r in rows:
        print(
            f"{r['lines']:>10} {r['bytes'] / 1e6:>7.1f} {r['wall_s']:>7} {r['cpu_s']:>7} {r['lines_per_cpu_s']:>12} "
            f"{r['series']:>6} {r['max_points']:>7} {r['total_points']:>7} {r['peak_rss_mib']:>8}"
        )
        for p in r["problems"]:
            print(f"  WRONG: {p}")
    ratio = rows[1]["peak_rss_mib"] / rows[0]["peak_rss_mib"]
    print(f"peak RSS, 10x the lines: x{ratio:.2f}")
    if ns.json:
        with open(ns.json, "w", encoding="utf-8") as fh:
            json.dump({"runs": rows, "rss_ratio_10x": ratio}, fh, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
