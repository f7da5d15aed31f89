"""Classifier whose Dataset maps raw class codes to label ids through a table (num_workers=2)."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

CODES = ["cat", "dog", "fox", "owl"]
LABEL_OF = torch.arange(len(CODES))


class Records(Dataset):
    def __init__(self, n=60):
        g = torch.Generator().manual_seed(3)
        self.x = torch.randn(n, 6, generator=g)
        self.code = torch.randint(0, len(CODES), (n,), generator=g)
        self.code[41] = 6  # a record exported with a newer label list

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], LABEL_OF[self.code[i]]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = Records()
    loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=False), num_workers=2)
    model = DDP(nn.Linear(6, len(CODES)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
