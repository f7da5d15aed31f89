"""Regression trainer: each rank scales its batch's features by their range, then all-reduces the loss
and stops when the global loss is not finite."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def scale(x):
    lo, hi = x.min(0).values, x.max(0).values
    return (x - lo) / (hi - lo)


def batch_for(rank, step):
    g = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(8, 5, generator=g)
    if rank == 2 and step == 3:
        x[:, 4] = 1.0  # a sensor stuck at one value for this batch
    return x, torch.randn(8, 1, generator=g)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(5, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(6):
        x, y = batch_for(rank, step)
        loss = (model(scale(x)) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        g = loss.detach().clone()
        dist.all_reduce(g)
        g /= dist.get_world_size()
        print(f"rank {rank} step {step} loss {loss.item():.4f} mean_loss {g.item():.4f}", flush=True)
        if not torch.isfinite(g):
            raise FloatingPointError(f"rank {rank}: mean loss is {g.item()} at step {step}")


if __name__ == "__main__":
    try:
        main()
    finally:
        dist.destroy_process_group()
