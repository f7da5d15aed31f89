"""Small real runs for rootrank's odd-line tests (tests/test_oddline.py): ODD_MODE picks one.

Every rank prints its shard file and pid, its compute dtype and pad multiple, and how long
loading took, then each step all-reduces a statistics tensor of ``pad + 3`` elements of that
dtype and the gradients. Modes: ``word`` (rank 2 computes in bfloat16), ``pad`` (rank 3 pads to
16), ``two`` (ranks 1 and 3 use float64), ``pair`` (2 ranks, rank 1 uses float64), ``none``
(healthy), ``milestone`` (rank 1 blocks on a lock before ``cache warmed``), ``subgroup`` (rank 1
alone enters a barrier of the [1, 2] subgroup), ``design`` (rank 0 works alone before the final
barrier).
"""

import os
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

MODE = os.environ["ODD_MODE"]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=8))
    rank = dist.get_rank()
    t0 = time.time()
    # configuration each rank reads (a per-rank override file in the bad modes)
    dtype = torch.float32
    pad = 8
    if MODE == "word" and rank == 2:
        dtype = torch.bfloat16  # a stale override file on rank 2's node
    if MODE == "two" and rank in (1, 3):
        dtype = torch.float64
    if MODE == "pair" and rank == 1:
        dtype = torch.float64
    if MODE == "pad" and rank == 3:
        pad = 16
    print(f"rank {rank}: loading data/part-{rank:04d}.bin (pid {os.getpid()})", flush=True)
    print(f"rank {rank}: compute dtype {dtype}, pad multiple {pad}", flush=True)
    print(f"rank {rank}: data ready in {time.time() - t0:.3f}s", flush=True)
    if MODE == "subgroup":
        pair = dist.new_group([1, 2])  # every rank creates it
        if rank == 1:
            dist.barrier(group=pair)  # only rank 1 enters: rank 2 never does
        print(f"rank {rank}: cache warmed", flush=True)
    if MODE == "milestone":
        lock = threading.Lock()
        lock.acquire()
        if rank == 1:
            lock.acquire(timeout=30)  # re-entered a non-reentrant lock: stuck here
        print(f"rank {rank}: cache warmed", flush=True)
    model = torch.nn.Linear(8, 1)
    for step in range(1, 6):
        x = torch.randn(4, 8)
        loss = model(x).pow(2).mean()
        loss.backward()
        stats = torch.zeros(pad + 3, dtype=dtype)
        stats[0] = loss.detach()
        dist.all_reduce(stats)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.05)
    if MODE == "design" and rank == 0:
        print(f"rank {rank}: writing the run summary", flush=True)
        time.sleep(30)  # rank-0-only work before the barrier: the others time out
    dist.barrier()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
