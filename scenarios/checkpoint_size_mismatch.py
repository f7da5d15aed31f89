"""Scenario: the fault rank resumes from a checkpoint saved by an older configuration, and
``load_state_dict`` refuses it (checkpoint-load-mismatch on the fault rank).

Each rank keeps its own resume file (as jobs that save per-rank state do). The fault rank's
file was left over from a run with ``hidden=64``; the current model has ``hidden=32``, so
``load_state_dict`` raises ``RuntimeError: Error(s) in loading state_dict for TinyNet`` with
one ``size mismatch for ...`` line per tensor. The other ranks wait at the barrier after
resuming.
"""

from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, average_gradients, batch, init_gloo, parse_args


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    ckpt_dir = tempfile.mkdtemp(prefix="resume-")
    path = os.path.join(ckpt_dir, f"rank{rank}.pt")
    saved_hidden = 64 if rank == args.fault_rank else 32
    torch.save({"model": TinyNet(hidden=saved_hidden).state_dict(), "step": 100}, path)
    model = TinyNet(hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
    finally:
        os.remove(path)
        os.rmdir(ckpt_dir)
    print(f"[rank {rank}] resumed at step {state['step']}", flush=True)
    dist.barrier()
    for step in range(state["step"], state["step"] + args.steps):
        x, y = batch(rank, step)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        average_gradients(model)
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
