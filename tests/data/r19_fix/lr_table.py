"""Trainer that reads its learning rate per step from a precomputed table (one entry short)."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
LR_TABLE = torch.linspace(0.1, 0.01, STEPS - 1)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = float(LR_TABLE[step])
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} lr {opt.param_groups[0]['lr']:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
