"""Scenario: the fault rank skips one collective that the other ranks issue (collective-desync
on the fault rank).

After training, every rank evaluates its validation shard and all-reduces the summed loss and
sample count; the fault rank's validation shard is empty, so it skips the reduction and goes
straight to the ``barrier`` before saving. The others wait in ``all_reduce``, the fault rank
waits in ``barrier``, and gloo times out on all of them after ``SCENARIO_GLOO_TIMEOUT`` seconds.
Run it with ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` and PyTorch's collective fingerprint check
reports the mismatch (ALLREDUCE vs BARRIER) instead of a bare timeout.
"""

from __future__ import annotations

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
        average_gradients(model)
        opt.step()
    val_batches = 0 if rank == args.fault_rank else 2
    print(f"[rank {rank}] validation shard has {val_batches} batches", flush=True)
    if val_batches:
        with torch.no_grad():
            val = torch.zeros(2)
            for i in range(val_batches):
                x, y = batch(rank, 100 + i)
                val += torch.tensor([F.cross_entropy(model(x), y).item() * len(y), len(y)])
        dist.all_reduce(val)
        if rank == 0:
            print(f"validation loss {val[0] / val[1]:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), "/dev/null")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
