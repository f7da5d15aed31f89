"""``--no-mask`` CPU: ``rootrank diagnose`` with and without masking on a frame-heavy log.

The scan learns the user names of home and HPC user folders from every line
(``rootrank.mask.learn_users``) so they are masked on every shown line; with ``--no-mask``
nothing is masked and the scan skips that pass (``Scanner(learn_users=False)``). Its cost
grows with the lines that name such folders: traceback frames (``File "/home/<user>/...``)
repeated by every rank, the shape of a log full of warnings with stacks, of ``py-spy dump``
or faulthandler output at a hang.

One run generates such a log (:func:`frame_log`: ``--ranks`` ranks each printing ``--stacks``
warning stacks of 12 frames under ``/home/alice/`` and ``/scratch/alice/`` between progress
lines, then a CUDA OOM on one rank and the others' watchdog timeouts), then times, in
``--rounds`` paired rounds (the machine is shared: each round runs both back to back,
alternating which goes first), ``python -m rootrank diagnose LOG --format json`` with masking
and with ``--no-mask``, in CPU seconds of the child (GNU ``time``'s user+sys, as
``scan_bench.py``). It prints the medians and the median of the per-round ratios, and checks
that both runs name the same root cause, rank and line. Exit 1 when they differ or fail.

The engine is run with this interpreter and environment, so ``PYTHONPATH=/copy/server python
bench/no_mask_bench.py`` measures a copy. ``--before /copy/server`` adds, to every round,
``--no-mask`` with that copy of the engine (one that still learns user names with nothing to
mask): the CPU the change saves, as a ratio measured in the same rounds.

Usage::

    python bench/no_mask_bench.py                  # 64 ranks x 400 stacks (~60 MB), 3 rounds
    python bench/no_mask_bench.py --stacks 100 --rounds 5
    python bench/no_mask_bench.py --before /work/main/server
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from scan_bench import _median, timed  # noqa: E402 - the benchmark beside this file

_FRAMES = [
    ("/home/alice/proj/train.py", 512, "<module>"),
    ("/home/alice/proj/train.py", 388, "main"),
    ("/home/alice/proj/trainer/loop.py", 201, "fit"),
    ("/home/alice/proj/trainer/loop.py", 144, "train_epoch"),
    ("/home/alice/proj/trainer/step.py", 77, "training_step"),
    (
        "/scratch/alice/envs/py311/lib/python3.11/site-packages/torch/nn/modules/module.py",
        1736,
        "_wrapped_call_impl",
    ),
    (
        "/scratch/alice/envs/py311/lib/python3.11/site-packages/torch/nn/modules/module.py",
        1747,
        "_call_impl",
    ),
    ("/home/alice/proj/model/transformer.py", 310, "forward"),
    ("/home/alice/proj/model/attention.py", 95, "forward"),
    ("/home/alice/proj/model/attention.py", 61, "_scores"),
    ("/scratch/alice/envs/py311/lib/python3.11/site-packages/torch/functional.py", 402, "einsum"),
    ("/home/alice/proj/utils/warn.py", 18, "deprecated"),
]


def frame_log(path: str, ranks: int, stacks: int, fail_rank: int) -> int:
    """Write the frame-heavy log to ``path``; returns the 1-based line of the OOM."""
    line = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(stacks):
            for r in range(ranks):
                out = [f"[rank{r}]: step {i} loss {2.0 - i / (stacks + 1):.4f} lr 0.0003"]
                out.append(f"[rank{r}]: Stack (most recent call last):")
                for file, no, func in _FRAMES:
                    out.append(f'[rank{r}]:   File "{file}", line {no}, in {func}')
                    out.append(f"[rank{r}]:     x = self.block(x)  # {func}")
                out.append(
                    f"[rank{r}]: /home/alice/proj/utils/warn.py:18: UserWarning: "
                    "torch.einsum path is deprecated"
                )
                fh.write("\n".join(out) + "\n")
                line += len(out)
        fh.write(
            f"[rank{fail_rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            f"20.00 GiB. GPU {fail_rank % 8} has a total capacity of 79.14 GiB of which 1.20 GiB "
            "is free.\n"
        )
        oom_line = line + 1
        for r in range(ranks):
            if r != fail_rank:
                fh.write(
                    f"[rank{r}]:[E1129 12:34:56.789 ProcessGroupNCCL.cpp:1970] [PG 0 Rank {r}] "
                    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9001, "
                    "OpType=ALLREDUCE, NumelIn=1048576, Timeout(ms)=600000) ran for 600012 "
                    "milliseconds before timing out.\n"
                )
    return oom_line


def _answer(stdout: bytes) -> tuple[object, object, object]:
    d = json.loads(stdout)
    root = d["root_cause"] or {}
    evidence = (root.get("evidence") or [{}])[0]
    return root.get("signature"), d["initiating_rank"], evidence.get("line")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--stacks", type=int, default=400, help="warning stacks per rank")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", metavar="SERVER_DIR", help="also time --no-mask with this engine")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="no-mask-bench-")
    log = os.path.join(work, "train.log")
    fail_rank = args.ranks // 3
    oom_line = frame_log(log, args.ranks, args.stacks, fail_rank)
    size = os.path.getsize(log)
    cmd = [sys.executable, "-m", "rootrank", "diagnose", log, "--format", "json"]
    masked: list[float] = []
    raw: list[float] = []
    ratios: list[float] = []
    before: list[float] = []
    saved: list[float] = []
    ok = True
    try:
        for i in range(args.rounds):
            order = [("mask", cmd), ("no-mask", [*cmd, "--no-mask"])]
            if args.before:
                env = ["env", f"PYTHONPATH={args.before}"]
                order.append(("no-mask before", [*env, *cmd, "--no-mask"]))
            if i % 2:
                order.reverse()
            runs = {label: timed(label, argv) for label, argv in order}
            for run in runs.values():
                if run.returncode != 0:
                    print(f"{run.label}: exit {run.returncode}: {run.stderr.decode()[-300:]}")
                    return 1
            want = ("cuda-oom", fail_rank, oom_line)
            for run in runs.values():
                if _answer(run.stdout) != want:
                    print(f"{run.label}: {_answer(run.stdout)}, expected {want}")
                    ok = False
            masked.append(runs["mask"].cpu)
            raw.append(runs["no-mask"].cpu)
            ratios.append(runs["no-mask"].cpu / runs["mask"].cpu)
            if args.before:
                before.append(runs["no-mask before"].cpu)
                saved.append(runs["no-mask"].cpu / runs["no-mask before"].cpu)
    finally:
        os.unlink(log)
        os.rmdir(work)
    print(f"log: {size / 1e6:.1f} MB, {args.ranks} ranks x {args.stacks} stacks of 12 frames")
    print(f"rounds: {args.rounds} (paired, alternating order)")
    print(f"diagnose, masked       CPU s (median)  {_median(masked):7.2f}   {masked}")
    print(f"diagnose, --no-mask    CPU s (median)  {_median(raw):7.2f}   {raw}")
    print(f"ratio --no-mask/masked (median of rounds)  {_median(ratios):.3f}")
    if args.before:
        print(f"--no-mask, before      CPU s (median)  {_median(before):7.2f}   {before}")
        print(f"ratio --no-mask now/before (median of rounds)  {_median(saved):.3f}")
    print(f"answer: cuda-oom on rank {fail_rank} line {oom_line}: {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
