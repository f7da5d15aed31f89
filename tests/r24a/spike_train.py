"""Tiny DDP regression on gloo that logs like the Hugging Face Trainer.

Rank 0 prints a step dict per step with the gradient norm ``clip_grad_norm_`` returns (the norm
before clipping) and the Trainer's end-of-run summary. One batch (``SPIKE_STEP``) has inputs
``SCALE`` times larger with the same residuals: a large gradient at a normal loss. ``CLIP=0``
turns clipping off (the spike's update then reaches the weights).

    SCALE=300 torchrun --nproc-per-node=2 spike_train.py          # preclip-spike-loss-steady.log
    SCALE=300 CLIP=0 torchrun --nproc-per-node=2 spike_train.py   # noclip-spike-loss-follows.log
"""

import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
steps = int(os.environ.get("STEPS", "60"))
spike = int(os.environ.get("SPIKE_STEP", "30"))
scale = float(os.environ.get("SCALE", "40"))
clip = float(os.environ.get("CLIP", "1.0"))
lr = float(os.environ.get("LR", "0.05"))
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=lr)
w = torch.randn(16, 1)
g = torch.Generator().manual_seed(100 + rank)
t0 = time.time()
total = 0.0
for step in range(1, steps + 1):
    x = torch.randn(64, 16, generator=g)
    y = x @ w + 0.1 * torch.randn(64, 1, generator=g)
    if step == spike:  # the same residuals on larger inputs: a large gradient, a normal loss
        with torch.no_grad():
            r = y - model(x)
            x = x * scale
            y = model(x) + r
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip > 0 else float("inf"))
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    mean /= dist.get_world_size()
    total += mean.item()
    if rank == 0:
        row = {
            "loss": f"{mean.item():.4g}",
            "grad_norm": f"{gn.item():.4g}",
            "learning_rate": f"{lr:.3g}",
            "epoch": f"{step / steps:.3f}",
            "global_step/max_steps": f"{step}/{steps}",
        }
        print(str(row), flush=True)
if rank == 0:  # the Hugging Face Trainer's end-of-run summary, in its format
    took = time.time() - t0
    summary = {
        "train_runtime": round(took, 4),
        "train_samples_per_second": round(steps * 64 / took, 3),
        "train_steps_per_second": round(steps / took, 3),
        "train_loss": round(total / steps, 4),
        "epoch": 1.0,
    }
    print(str(summary), flush=True)
dist.destroy_process_group()
