"""Ranks load their own shard, then meet at a monitored barrier (SAY=1: rank 2 says what it
loads; DIE=1: rank 2 exits at once)."""
import os
import time
from datetime import timedelta

import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 2:
        if os.environ.get("DIE") == "1":
            os._exit(3)
        if os.environ.get("SAY") == "1":
            print(f"rank {rank} fetching shard_{rank:03d} from the archive tier", flush=True)
        time.sleep(8)
    dist.monitored_barrier(timeout=timedelta(seconds=3))
    print(f"rank {rank} passed the barrier", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
