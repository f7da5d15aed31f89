"""Scenario: one rank is SIGKILLed in the middle of a step (host-oom-killed on the fault rank).

Nothing is printed by the killed process: the kernel (here the process itself, standing in
for the OOM killer) ends it with SIGKILL between backward and the gradient all-reduce. The
other ranks see gloo's "Connection closed by peer" in ``all_reduce`` and torchrun reports
``exitcode: -9`` for the fault rank.
"""

from __future__ import annotations

import os
import signal

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, average_gradients, batch, init_gloo, parse_args


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(rank, step)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if rank == args.fault_rank and step == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        average_gradients(model)
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
