"""Rank 1 builds the tokenizer cache under a lock file before training; a killed earlier run left
the lock file behind (prep: `python stale_lock.py prep`)."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

LOCK = "/tmp/r19fix_cache/build.lock"


def prep():
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "w") as f:
        f.write("999999\n")  # the pid of the run that was killed while building


def build_cache(rank):
    waited = 0
    while os.path.exists(LOCK):
        if waited % 5 == 0:
            print(f"rank {rank}: cache build locked by {LOCK}, waiting ({waited}s)", flush=True)
        time.sleep(1)
        waited += 1


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=12))
    rank = dist.get_rank()
    if rank == 1:
        build_cache(rank)
    t = torch.ones(4)
    dist.all_reduce(t)
    print(f"rank {rank}: synced {t.tolist()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1:] == ["prep"]:
        prep()
    else:
        main()
