"""Write a log archive for ``rootrank triage``: thousands of jobs, mixed failures, a bad host.

    python bench/fleet_gen.py /tmp/fleet --jobs 10000            # ~10,000 jobs, 3 big logs
    python bench/fleet_gen.py /tmp/fleet-small --jobs 200 --big 0

Each job's failure is one of the repository's signature fixtures (``signatures/*/*.positive.log``:
real wordings of what PyTorch, NCCL, the kernel and the launchers print), placed in a multi-node
run: every rank first prints NCCL's ``host:pid:tid [dev] NCCL INFO comm ... rank R nranks N``
init line (which binds the rank to its host) and a dated progress line, then the fixture's
lines follow. Hosts come from a cluster of ``--hosts`` machines (jobs / 20 by default) (``gpu-node-001``...). A few
jobs are healthy (``tests/healthy/*.log``), a few end in an exception no signature knows.

The planted bad host (``--bad-host``, default ``gpu-node-042``) is put at the initiating rank of
``--planted`` jobs whose fixture is a failure the host causes (ECC, NVLink, IB verbs, the OOM
killer...: the taxonomy's host kinds); it also runs in many other jobs without starting their failure. Random hosts
start the other failures, so the bad host must come out first by the jobs it initiated.

Layouts: ``DAY/slurm-<id>.out`` (all ranks in one file), ``DAY/slurm-<id>-<task>.out`` (one
file per node), ``DAY/torchrun/<run>/attempt_0/<local_rank>/stderr.log`` and
``DAY/job-<id>/train.log``; some files are gzip, zstd or xz compressed. Sizes: a few kB to tens
of kB of training progress before the failure; ``--big`` jobs are padded to ``--big-mb`` MB
(hundreds of MB). File modification times are set to each job's day.

Writes OUT (refuses a folder inside the repository) and OUT.truth.json (what was planted).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import random
import re
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))
from rootrank.taxonomy import failure_classes, host_kinds  # noqa: E402

#: The classes that are a host's doing (their kind is marked "host" in signatures/taxonomy.json:
#: hardware, network, the host's OOM killer, its disk): the planted bad host starts these.
MACHINE_CLASSES = {c.slug for c in failure_classes().values() if c.kind in host_kinds()}
_RANK_WORDS = re.compile(r"(?:\[rank|\[default|Rank |rank )(\d{1,4})|^(\d{1,4}): ", re.MULTILINE)

UNCLASSIFIED = """Traceback (most recent call last):
  File "/workspace/train.py", line 212, in <module>
    main()
  File "/workspace/train.py", line 188, in main
    recipe = registry.lookup(args.recipe)
  File "/workspace/recipes/registry.py", line 41, in lookup
    raise RecipeNotFound(name)
recipes.registry.RecipeNotFound: llama-70b-sft-v3
"""


def _first_case(fixture: object) -> dict:
    """The positive fixture's case: ``fixture:`` is one mapping, or a list of cases whose first
    is ``<id>.positive.log`` (rootrank.signatures)."""
    if isinstance(fixture, list):
        return next((c for c in fixture if isinstance(c, dict) and c.get("case") == "positive"), {})
    return fixture if isinstance(fixture, dict) else {}


def fixtures() -> list[dict]:
    """Every positive fixture with its class and initiating rank (from its YAML)."""
    out = []
    for y in sorted(ROOT.glob("signatures/*/*.yaml")):
        log = y.with_suffix(".positive.log")
        if not log.exists():
            continue
        meta = yaml.safe_load(y.read_text())
        text = log.read_text(encoding="utf-8", errors="replace")
        ranks = [int(a or b) for a, b in _RANK_WORDS.findall(text)]
        out.append(
            {
                "hosts": own_hosts(text),
                "id": y.stem,
                "class": meta.get("failure_class"),
                "rank": _first_case(meta.get("fixture")).get("initiating_rank"),
                "max_rank": max(ranks, default=0),
                "text": text,
            }
        )
    return out


def preamble(
    world: int, hosts: list[str], day: str, start: int, steps: int, rng: random.Random
) -> list[str]:
    """NCCL init lines (rank -> host) and dated progress lines for every rank."""
    lines = []
    comm = f"0x{rng.getrandbits(48):012x}"
    for r in range(world):
        pid = 4000 + r
        lines.append(
            f"{hosts[r // 8]}:{pid}:{pid} [{r % 8}] NCCL INFO comm {comm} rank {r} nranks {world} "
            f"cudaDev {r % 8} nvmlDev {r % 8} busId {0x18000 + 0x1000 * (r % 8):x} commId 0x{rng.getrandbits(32):08x} - Init COMPLETE"
        )
    t = start
    for step in range(steps):
        t += rng.randint(1, 3)
        hh, mm, ss = t // 3600 % 24, t // 60 % 60, t % 60
        loss = 2.5 - step * 0.001 + rng.random() * 0.01
        lines.append(
            f"[rank0]:{day} {hh:02d}:{mm:02d}:{ss:02d},{rng.randint(0, 999):03d} INFO train.py:88 step {step * 10} loss {loss:.4f} lr 3.0e-05"
        )
    for r in range(1, world):
        hh, mm, ss = t // 3600 % 24, t // 60 % 60, t % 60
        lines.append(
            f"[rank{r}]:{day} {hh:02d}:{mm:02d}:{ss:02d},000 INFO train.py:88 step {steps * 10} loss 2.41"
        )
    return lines


_GLOG_DAY = re.compile(r"(?<![\w.])([EWIF])\d{4}(?= \d{2}:\d{2}:\d{2})")
_ISO_DAY = re.compile(r"(?<![\w.-])20\d{2}-\d{2}-\d{2}(?![\w.-]\d)")


def redate(text: str, day: str) -> str:
    """The fixture's glog (``E1129 17:40:34``) and ISO dates moved to the job's ``day``."""
    mmdd = day[5:7] + day[8:10]
    return _ISO_DAY.sub(day, _GLOG_DAY.sub(lambda m: m[1] + mmdd, text))


def own_hosts(text: str) -> list[str]:
    """The host names a fixture prints itself (the engine's rank -> host map of the fixture
    alone); each job renames them to machines of its cluster, so that one fixture's host does
    not start failures in every job that uses it."""
    sys.path.insert(0, str(ROOT / "server"))
    from rootrank.engine import diagnose_text
    from rootrank.mask import KEEP_HOSTS

    d = diagnose_text(text, mask=False)
    names = {h for h in d.ranks.hosts.values() if h} | (
        {d.initiating_host} if d.initiating_host else set()
    )
    return sorted((h for h in names if h.lower() not in KEEP_HOSTS), key=len, reverse=True)


def rehost(text: str, names: list[str], rng: random.Random, pool: list[str]) -> str:
    """``text`` with each of ``names`` replaced by a random host of ``pool``."""
    for name in names:
        text = re.sub(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", rng.choice(pool), text)
    return text


def names_host(f: dict) -> bool:
    """Whether the engine names the host of the fixture's initiating rank once the fixture is
    placed in a run (a fixture that prints its own hosts keeps naming those)."""
    sys.path.insert(0, str(ROOT / "server"))
    from rootrank.engine import diagnose_text

    world = max(8, -(-(max(f["max_rank"], f["rank"]) + 1) // 8) * 8)
    hosts = [f"probe-node-{i:03d}" for i in range(world // 8)]
    text = (
        "\n".join(preamble(world, hosts, "2026-11-01", 0, 3, random.Random(0))) + "\n" + f["text"]
    )
    return diagnose_text(text, mask=False).initiating_host == hosts[f["rank"] // 8]


def padding(target: int, day: str) -> bytes:
    """About ``target`` bytes of Megatron-style progress lines (for the big logs)."""
    block = "".join(
        f"[rank0]:{day} 03:{i // 60 % 60:02d}:{i % 60:02d},000 INFO  iteration {i:>8}/ 5000000 | consumed samples: {i * 512:>12} | "
        f"elapsed time per iteration (ms): 1702.4 | learning rate: 3.000E-05 | lm loss: 2.1882E+00 | grad norm: 0.812 |\n"
        for i in range(2000)
    ).encode()
    reps = max(1, target // len(block))
    return block * reps


def write(path: Path, data: bytes, compress: str | None, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress == "gz":
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data, compresslevel=3)
    elif compress == "xz":
        path = path.with_name(path.name + ".xz")
        data = lzma.compress(data, preset=1)
    elif compress == "zst":
        import zstandard

        path = path.with_name(path.name + ".zst")
        data = zstandard.ZstdCompressor(level=3).compress(data)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the archive folder to write (outside the repository)")
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument(
        "--hosts",
        type=int,
        default=0,
        help="machines in the cluster (default: jobs / 20, at least 64)",
    )
    p.add_argument("--bad-host", default="gpu-node-042")
    p.add_argument(
        "--planted",
        type=int,
        default=0,
        help="jobs the bad host starts (default: 0.5%% of jobs, at least 8)",
    )
    p.add_argument("--big", type=int, default=3, help="jobs padded to --big-mb")
    p.add_argument("--big-mb", type=int, default=200)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--seed", type=int, default=14)
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    if out == ROOT or ROOT in out.parents:
        print(
            "fleet_gen: write the archive outside the repository (e.g. /tmp/fleet)", file=sys.stderr
        )
        return 2
    if out.exists() and any(out.iterdir()):
        print(f"fleet_gen: {out} exists and is not empty", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    # which jobs are healthy or unclassified, from a stream of their own: adding a fixture to
    # the repository changes the draws of ``rng`` but not the archive's mix of kinds
    kinds = random.Random(args.seed + 1)
    fx = fixtures()
    machine = [
        f for f in fx if f["class"] in MACHINE_CLASSES and f["rank"] is not None and names_host(f)
    ]
    failing = [f for f in fx if f["class"]]
    healthy = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((ROOT / "tests" / "healthy").glob("*.log"))
    ]
    n_hosts = args.hosts or max(64, args.jobs // 20)
    cluster = [f"gpu-node-{i:03d}" for i in range(1, n_hosts + 1)]
    if args.bad_host not in cluster:
        cluster[-1] = args.bad_host
    others = [h for h in cluster if h != args.bad_host]
    planted_n = args.planted or max(8, args.jobs // 200)
    planted = set(rng.sample(range(args.jobs), planted_n))
    big = set(
        rng.sample(sorted(set(range(args.jobs)) - planted), min(args.big, args.jobs - planted_n))
    )
    t0 = time.time()
    first_day = time.mktime(time.strptime("2026-11-01", "%Y-%m-%d")) - time.timezone
    truth = {
        "bad_host": args.bad_host,
        "planted_jobs": [],
        "jobs": args.jobs,
        "healthy": 0,
        "unclassified": 0,
        "big": [],
        "healthy_jobs": [],
        "unclassified_jobs": [],
    }
    total = 0
    for j in range(args.jobs):
        day_i = j * args.days // args.jobs
        day_t = first_day + day_i * 86400
        day = time.strftime("%Y-%m-%d", time.gmtime(day_t))
        start = rng.randint(0, 20 * 3600)
        mtime = day_t + start + 3600
        roll = kinds.random()
        kind = (
            "planted"
            if j in planted
            else "healthy"
            if roll < 0.06
            else "unclassified"
            if roll < 0.10
            else "fail"
        )
        if kind == "planted":
            f = rng.choice(machine)
        elif kind == "fail":
            f = rng.choice(failing)
        else:
            f = None
        need = max((f["max_rank"] + 1) if f else 8, ((f["rank"] or 0) + 1) if f else 0)
        nodes = max(1, -(-need // 8), rng.choice((1, 1, 2, 2, 4)))
        world = nodes * 8
        hosts = rng.sample(others, nodes)
        if kind == "planted":
            hosts[f["rank"] // 8] = args.bad_host
        elif rng.random() < 0.15 and args.bad_host not in hosts:  # it also runs healthy work
            init = (f["rank"] or 0) // 8 if f else 0
            spare = [i for i in range(nodes) if i != init]
            choice = rng.choice(spare) if spare else None
            # a fixture labelled with no rank may still get one named once it is placed in a
            # run (on any node): the bad host then cannot be kept off the initiator's node
            if choice is not None and (f is None or f["rank"] is not None):
                hosts[choice] = args.bad_host
        steps = rng.randint(5, 150)
        lines = preamble(world, hosts, day, start, steps, rng)
        if kind == "healthy":
            # a healthy log is a whole run of its own: its world, its progress from its first
            # step. Another world's NCCL lines and steps before it would make one log of two
            # jobs (a loss "spike" where the real run starts; its worker tags no ranks of 16)
            lines = []
        body = (
            f["text"]
            if f
            else (
                rng.choice(healthy)
                if kind == "healthy"
                else "".join(f"[rank3]:{ln}\n" for ln in UNCLASSIFIED.splitlines())
            )
        )
        body = redate(rehost(body, f["hosts"], rng, others) if f else body, day)
        head = ("\n".join(lines) + "\n").encode()
        pad = padding(args.big_mb << 20, day) if j in big else b""
        data = head + pad + body.encode()
        layout = rng.random()
        comp = rng.choices((None, "gz", "zst", "xz"), (70, 20, 5, 5))[0]
        if j in big:
            comp = "gz" if len(truth["big"]) == 0 else None
        base = out / day
        job_id = 100_000 + j
        if layout < 0.45 or j in big:
            write(base / f"slurm-{job_id}.out", data, comp, mtime)
        elif layout < 0.70:
            # one file per node (srun -o slurm-%j-%t.out): node 0 holds the failure text
            for n in range(nodes):
                part = (
                    [
                        ln
                        for ln in lines
                        if not ln.startswith("gpu-node") or ln.startswith(hosts[n] + ":")
                    ]
                    if n
                    else lines
                )
                chunk = ("\n".join(part) + "\n").encode() + (body.encode() if n == 0 else b"")
                write(base / f"slurm-{job_id}-{n}.out", chunk, comp if n == 0 else None, mtime)
        elif layout < 0.85:
            run = base / "torchrun" / f"run-{job_id}" / "attempt_0"
            write(run / "0" / "stderr.log", data, comp, mtime)
            write(run / "1" / "stderr.log", b"", None, mtime)
        else:
            write(base / f"job-{job_id}" / "train.log", data, comp, mtime)
        total += len(data)
        if kind == "planted":
            truth["planted_jobs"].append(job_id)
        elif kind in ("healthy", "unclassified"):
            truth[kind] += 1
            truth[kind + "_jobs"].append(job_id)
        if j in big:
            truth["big"].append(job_id)
        if j and j % 1000 == 0:
            print(f"fleet_gen: {j:,} jobs, {total / 1e6:.0f} MB", file=sys.stderr)
    Path(str(out) + ".truth.json").write_text(json.dumps(truth, indent=1))
    print(
        f"fleet_gen: {args.jobs:,} jobs, {total / 1e6:.0f} MB of logs (before compression) in {out} "
        f"in {time.time() - t0:.0f} s; bad host {args.bad_host} starts {planted_n} jobs",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
