"""Scenario: one rank reads a malformed record and raises ValueError while the others wait
in ``all_reduce`` (user-code-exception on the fault rank).

Every rank "reads" its own shard; the fault rank's shard holds a record with one feature
missing at step 3, which the parser rejects with a plain ``ValueError``. The other ranks are
already inside ``dist.all_reduce`` for that step; when the fault rank's process exits, gloo
reports "Connection closed by peer" on them and torchrun SIGTERMs what is left.

With ``--check-first`` every rank first validates the records of its shard, before it joins
the process group: the fault rank raises the same ``ValueError`` while the others wait in
``init_process_group``, on every attempt (a fault a ``--max-restarts`` restart meets again).
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, average_gradients, init_gloo, parse_args

FEATURES = 16


def parse_record(rank: int, fault_rank: int, step: int, index: int) -> list[float]:
    """Parse one CSV-like record of the rank's shard into ``FEATURES`` floats."""
    width = FEATURES - 1 if (rank == fault_rank and step == 3 and index == 5) else FEATURES
    fields = [f"{(rank + step + index + k) % 7 / 7:.3f}" for k in range(width)]
    if len(fields) != FEATURES:
        raise ValueError(
            f"shard-{rank:05d}.csv record {step * 8 + index}: "
            f"expected {FEATURES} features, got {len(fields)}"
        )
    return [float(v) for v in fields]


def configure(parser: argparse.ArgumentParser) -> None:
    """The script's own option: ``--check-first`` (validate the shard before joining)."""
    parser.add_argument(
        "--check-first",
        action="store_true",
        help="parse the shard's records before init_process_group (the fault raises there)",
    )


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__, configure)
    if args.check_first:
        # The launcher's rank: torchrun's RANK, or Open MPI's OMPI_COMM_WORLD_RANK.
        launched = int(os.environ.get("RANK") or os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        for step in range(args.steps):
            for i in range(8):
                parse_record(launched, args.fault_rank, step, i)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    model = TinyNet(FEATURES)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        rows = [parse_record(rank, args.fault_rank, step, i) for i in range(8)]
        x = torch.tensor(rows)
        y = torch.arange(8) % 4
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        average_gradients(model)
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
