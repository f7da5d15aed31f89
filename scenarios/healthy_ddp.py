"""Healthy run: a short DDP training that succeeds, with the warnings such runs usually print.

What it prints that looks alarming but is harmless: torchrun's ``OMP_NUM_THREADS`` banner;
DDP's warning that ``find_unused_parameters=True`` found no unused parameters; the
``torch.cuda.amp.GradScaler`` deprecation warning and its "CUDA is not available. Disabling"
warning on a CPU machine. Every rank exits 0.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, init_gloo, parse_args
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> None:
    """Run the scenario on this rank (see the module docstring); the healthy scenarios exit 0."""
    parse_args(__doc__)
    rank, world = init_gloo()
    gen = torch.Generator().manual_seed(0)
    data = TensorDataset(
        torch.randn(64 * world, 16, generator=gen),
        torch.randint(0, 4, (64 * world,), generator=gen),
    )
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=16, sampler=sampler)
    torch.manual_seed(0)
    model = DDP(TinyNet(), find_unused_parameters=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            if rank == 0 and step % 2 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        print("training finished, saving checkpoint", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
