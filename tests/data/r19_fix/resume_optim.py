"""Fine-tune run that resumes the optimizer from the pre-training checkpoint (written by prep)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT = "/tmp/r19fix_pretrain_optim.pt"


def prep():
    # pre-training used a wider head (16 outputs)
    m = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    m(torch.randn(4, 8)).sum().backward()
    opt.step()
    torch.save({"optimizer": opt.state_dict()}, CKPT)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    opt.load_state_dict(torch.load(CKPT)["optimizer"])
    print(f"rank {rank} resumed optimizer from {os.path.basename(CKPT)}", flush=True)
    for step in range(3):
        loss = model(torch.randn(8, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1:] == ["prep"]:
        prep()
    else:
        main()
