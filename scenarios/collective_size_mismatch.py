"""Scenario: the fault rank passes a tensor of a different size to a collective
(collective-shape-mismatch on the fault rank).

Each rank gathers its per-class counts with ``all_gather`` to compute global statistics.
The fault rank builds its count vector from its own shard's label set, which lacks the last
class, so its tensor has one element fewer. ``--op all_reduce`` makes the same mistake with
``all_reduce``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from _common import init_gloo, parse_args

CLASSES = 10


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(
        __doc__,
        lambda p: p.add_argument(
            "--op", choices=["all_gather", "all_reduce"], default="all_gather"
        ),
    )
    op = args.op
    rank, world = init_gloo()
    for step in range(args.steps):
        labels = torch.randint(0, CLASSES, (256,), generator=torch.Generator().manual_seed(step))
        classes_seen = CLASSES - 1 if (rank == args.fault_rank and step == 1) else CLASSES
        counts = torch.bincount(labels.clamp(max=classes_seen - 1), minlength=classes_seen).float()
        if op == "all_gather":
            gathered = [torch.empty(CLASSES) for _ in range(world)]
            dist.all_gather(gathered, counts)
            total = torch.stack(gathered).sum(0)
        else:
            dist.all_reduce(counts)
            total = counts
        if rank == 0:
            print(f"step {step} class counts {total.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
