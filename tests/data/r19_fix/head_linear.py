"""Classifier whose head takes the pooled features of a small conv backbone."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Head(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 10)

    def forward(self, pooled):
        return self.proj(pooled)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = Head(8)

    def forward(self, x):
        pooled = self.pool(self.conv(x)).flatten(1)
        return self.head(pooled)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Net())
    out = model(torch.randn(4, 3, 16, 16))
    print(f"rank {rank} out {tuple(out.shape)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
