"""Workers started by hand as multiprocessing Process objects (no launcher), for rootrank's
tests of a parent's per-child exit report. MODE=abort: worker-1 aborts (SIGABRT) in its
native decoder at iteration 3; MODE=all: every worker raises the same error at iteration 3."""

import faulthandler
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MODE = os.environ.get("MODE", "abort")


def run(rank: int, world: int, port: int) -> None:
    faulthandler.enable()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=10))
    model = torch.nn.Linear(4, 1)
    for it in range(6):
        if it == 3 and (MODE == "all" or rank == 1):
            if MODE == "all":
                raise ValueError(f"record {it} has no 'tokens' field")
            os.abort()  # the native decoder's assert on a corrupt record
        loss = model(torch.randn(2, 4)).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        print(f"[{time.strftime('%H:%M:%S')}] iter {it} loss {loss.item():.5f}", flush=True)
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    world, port = 4, int(sys.argv[1])
    procs = [
        ctx.Process(target=run, args=(r, world, port), name=f"worker-{r}") for r in range(world)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("exit codes:", {p.name: p.exitcode for p in procs}, flush=True)
    sys.exit(1 if any(p.exitcode for p in procs) else 0)
