"""Scenario: a DataLoader worker process on the fault rank is killed by SIGKILL
(dataloader-worker-killed-or-shm on the fault rank).

The dataset decodes samples in DataLoader worker processes. On the fault rank one worker is
killed while decoding (here it sends itself SIGKILL, as the kernel's OOM killer would). The
main process notices the dead worker and raises ``RuntimeError: DataLoader worker (pid N) is
killed by signal: Killed.``, which PyTorch re-raises as ``DataLoader worker (pid(s) N) exited
unexpectedly`` with "The above exception was the direct cause of the following exception".
The other ranks wait in ``all_reduce``.
"""

from __future__ import annotations

import os
import signal

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, average_gradients, init_gloo, parse_args
from torch.utils.data import DataLoader, Dataset


class DecodedSamples(Dataset):
    """Samples "decoded" on the fly; ``kill_at`` is the index whose decoding gets the worker
    killed (``None``: never)."""

    def __init__(self, rank: int, size: int, kill_at: int | None) -> None:
        self.rank, self.size, self.kill_at = rank, size, kill_at

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if index == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        gen = torch.Generator().manual_seed(1000 * self.rank + index)
        return torch.randn(16, generator=gen), index % 4


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    rank, _ = init_gloo()
    kill_at = 20 if rank == args.fault_rank else None
    loader = DataLoader(DecodedSamples(rank, 64, kill_at), batch_size=8, num_workers=2)
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        average_gradients(model)
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
