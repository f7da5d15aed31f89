"""Scenario: the fault rank builds a model of a different size and wraps it in DDP
(divergent-model-across-ranks on the fault rank).

The hidden width is derived from a value each rank computes from its own data shard (the
number of distinct labels it saw), so the fault rank, whose shard lacks a class, builds a
narrower model. DDP's constructor compares parameter shapes across ranks and refuses.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, batch, init_gloo, parse_args
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    rank, _ = init_gloo()
    classes_in_shard = 3 if rank == args.fault_rank else 4
    hidden = 8 * classes_in_shard
    print(f"[rank {rank}] building model with hidden={hidden}", flush=True)
    torch.manual_seed(0)
    model = DDP(TinyNet(hidden=hidden))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(rank, step)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
