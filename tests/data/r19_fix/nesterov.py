"""Trainer whose optimiser settings come from a dict of defaults plus the run's overrides."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

DEFAULTS = {"lr": 0.05, "momentum": 0.0, "nesterov": False}
OVERRIDES = {"nesterov": True}


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Linear(4, 1))
    opt_cfg = {**DEFAULTS, **OVERRIDES}
    print(f"rank {rank} optimizer {opt_cfg}", flush=True)
    opt = torch.optim.SGD(model.parameters(), **opt_cfg)
    for step in range(2):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
