"""Fleet triage throughput with 1 and 2 Dask workers, and whether the bad host comes first.

    python bench/fleet_gen.py /tmp/fleet --jobs 10000     # the archive (once)
    python bench/fleet_bench.py /tmp/fleet                # 1 worker, then 2 workers
    python bench/fleet_bench.py /tmp/fleet --workers 1 2 4 --json /tmp/fleet-bench.json

For each worker count, one run of ``rootrank triage`` through its Python entry point
(:func:`rootrank.triage.run.triage`, a fresh local cluster of single-threaded worker processes,
the summary only, as ``--format text`` does; the cluster's start-up is reported apart and left
out of the rates). Prints jobs/s and MB/s (MB = 10^6 bytes of log files as stored, compressed or not),
the scaling ratio against 1 worker, each worker's peak resident memory (``getrusage``) and the
driver's, and checks that the host table names the planted bad host
(``OUT.truth.json`` from fleet_gen.py) first. With ``--keep-hosts`` semantics, so the
name can be checked (masked runs rank the same hosts under pseudonyms).
Exit code 1 when the bad host is not first or when runs disagree (the jobs diagnosed
differently are listed, with whether a signature regex hit the engine's wall-clock timeout).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from rootrank.triage.run import peak_rss, triage
from rootrank.triage.work import Options


def one(archive: str, workers: int) -> dict:
    answers: dict[int, tuple] = {}

    def keep(result: dict) -> None:  # what each job was found to be, to compare runs
        d = result["diagnosis"] or {}
        timed_out = any("timed out" in w for w in d.get("warnings", []))
        rec = result["record"]
        answers[rec["index"]] = (rec["id"], rec["status"], rec["signature"], rec["host"], timed_out)

    summary, stats = triage(
        [archive],
        Options(mask="keep-hosts", full=True),
        workers=workers,
        progress=True,
        on_result=keep,
    )
    s = summary.to_dict()
    secs = stats.seconds
    return {
        "workers": workers,
        "jobs": stats.jobs,
        "bytes": stats.bytes,
        "seconds": round(secs, 2),
        "cluster_startup_s": round(stats.startup_seconds, 2),
        "jobs_per_s": round(stats.jobs / secs, 1),
        "mb_per_s": round(stats.bytes / secs / 1e6, 1),
        "worker_peak_rss_mib": sorted(round(v / 2**20) for v in stats.worker_peak_rss.values()),
        "first_host": s["hosts"][0]["host"] if s["hosts"] else None,
        "first_host_jobs": s["hosts"][0]["jobs"] if s["hosts"] else 0,
        "second_host_jobs": s["hosts"][1]["jobs"] if len(s["hosts"]) > 1 else 0,
        "summary": s,
        "answers": answers,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("archive")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)
    truth_path = Path(str(Path(args.archive).resolve()) + ".truth.json")
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    runs = [one(args.archive, w) for w in args.workers]
    base = runs[0]
    print(
        f"\narchive {args.archive}: {base['jobs']:,} jobs, {base['bytes'] / 1e6:,.0f} MB on disk; machine: {os.cpu_count()} cores"
    )
    print(
        f"{'workers':>7} {'seconds':>8} {'jobs/s':>8} {'MB/s':>7} {'scaling':>8} {'startup s':>9}  worker peak RSS (MiB)"
    )
    for r in runs:
        print(
            f"{r['workers']:>7} {r['seconds']:>8.1f} {r['jobs_per_s']:>8.1f} {r['mb_per_s']:>7.1f} "
            f"{r['jobs_per_s'] / base['jobs_per_s']:>7.2f}x {r['cluster_startup_s']:>9.1f}  {r['worker_peak_rss_mib']}"
        )
    print(f"driver peak RSS: {peak_rss() / 2**20:.0f} MiB")
    ok = True
    bad = truth.get("bad_host")
    for r in runs[1:]:
        differ = [i for i in base["answers"] if base["answers"][i] != r["answers"].get(i)]
        timed = [i for i in differ if base["answers"][i][4] or r["answers"][i][4]]
        print(
            f"{r['workers']} worker(s): {len(differ)} job(s) diagnosed differently from 1 worker"
            + (
                f", {len(timed)} of them with a signature regex timeout (the engine's 50 ms wall-clock limit, hit on a loaded machine)"
                if differ
                else ""
            )
        )
        for i in differ[:5]:
            print(f"   {base['answers'][i]}  vs  {r['answers'][i]}")
    for r in runs:
        first = r["first_host"]
        print(
            f"{r['workers']} worker(s): first host {first} ({r['first_host_jobs']} jobs initiated; next host "
            f"{r['second_host_jobs']}); planted: {bad} in {len(truth.get('planted_jobs', []))} jobs"
        )
        if bad and first != bad:
            ok = False
    print("bad host named first: " + ("yes" if ok else "NO"))
    same = all(r["summary"] == base["summary"] for r in runs[1:])
    print("summaries identical across worker counts: " + ("yes" if same else "NO"))
    if args.json:
        Path(args.json).write_text(
            json.dumps([{k: v for k, v in r.items() if k != "answers"} for r in runs], indent=1)
        )
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
