"""Sets up a data-parallel group of every rank and a pair group of ranks 0 and 2; the node-2 code
path (rank 2) builds them in another order."""
from datetime import timedelta

import torch
import torch.distributed as dist

T = timedelta(seconds=10)


def build_groups(rank, world):
    if rank == 2:
        pair = dist.new_group([0, 2], timeout=T)
        dp = dist.new_group(list(range(world)), timeout=T)
    else:
        dp = dist.new_group(list(range(world)), timeout=T)
        pair = dist.new_group([0, 2], timeout=T)
    return dp, pair


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dp, pair = build_groups(rank, world)
    print(f"rank {rank} groups ready", flush=True)
    t = torch.ones(1)
    dist.all_reduce(t, group=dp)
    print(f"rank {rank} done {t.item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
