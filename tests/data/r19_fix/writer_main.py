"""Trainer that writes scalars through a writer object the main process opens."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ScalarWriter:
    def __init__(self, path):
        self.f = open(path, "a")

    def add_scalar(self, name, value, step):
        self.f.write(f"{step}\t{name}\t{value}\n")
        self.f.flush()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    writer = ScalarWriter("/tmp/r19fix_scalars.tsv") if rank == 0 else None
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(4):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        if step % 2 == 1:
            writer.add_scalar("train/loss", loss.item(), step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
