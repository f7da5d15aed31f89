import faulthandler
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def load_batch(rank, step):
    if rank == 1 and step == 2:
        time.sleep(60)  # a stuck read on this rank only
    return torch.ones(4) * step


def train_step(x):
    dist.all_reduce(x)
    return x


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    faulthandler.dump_traceback_later(8, exit=True, file=sys.stderr)
    for step in range(4):
        x = load_batch(rank, step)
        train_step(x)
        print(f"step {step} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
