"""Ranks build the model, rank 0's flattened weights are broadcast to the others at start-up.
A rank whose node config sets PRECISE=1 builds it in float64 (here: rank 0)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        os.environ["PRECISE"] = "1"
    model = nn.Linear(16, 16)
    if os.environ.get("PRECISE") == "1":
        model = model.double()
    print(f"rank {rank}: built model, param dtype {next(model.parameters()).dtype}", flush=True)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    dist.broadcast(flat, src=0)
    print(f"rank {rank}: weights synced ({flat.numel()} values)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
