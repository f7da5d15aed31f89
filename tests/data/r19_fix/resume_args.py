"""Each rank resumes its run settings from its own saved file (prep writes them; rank 1's
file is the one an older version of this script wrote, with the argparse Namespace)."""
import argparse
import sys

import torch
import torch.distributed as dist

D = "/tmp/r19fix_resume"


def prep():
    import os

    os.makedirs(D, exist_ok=True)
    for r in range(3):
        args = {"lr": 0.01, "warmup": 100}
        if r == 1:
            args = argparse.Namespace(lr=0.01, warmup=100)
        torch.save({"args": args, "step": 800}, f"{D}/settings_rank{r}.pt")


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    saved = torch.load(f"{D}/settings_rank{rank}.pt")
    lr = saved["args"]["lr"]
    print(f"rank {rank} resumed at step {saved['step']} lr {lr}", flush=True)
    t = torch.ones(2)
    dist.all_reduce(t)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1:] == ["prep"]:
        prep()
    else:
        main()
