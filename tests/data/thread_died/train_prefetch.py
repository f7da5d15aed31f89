"""Each rank decodes its token file in a background prefetch thread that feeds a queue.

THREAD_MODE=prefetch: one rank's file holds a token id past the vocabulary; the thread raises
and dies, that rank's loop waits on the empty queue, and the others wait in the next
all_reduce until gloo's timeout. THREAD_MODE=upload: every file is good, and rank 1's metrics
uploader thread raises once; training finishes (helper causal16b)."""

import os
import queue
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
MODE = os.environ.get("THREAD_MODE", "prefetch")
VOCAB = 1000


def decode(path):
    with open(path) as f:
        for i, line in enumerate(f):
            ids = [int(x) for x in line.split()]
            bad = [t for t in ids if t >= VOCAB]
            if bad:
                raise IndexError(f"token id {bad[0]} >= vocab {VOCAB} in {path} line {i + 1}")
            yield torch.tensor(ids, dtype=torch.float32)


def prefetch(path, q):
    for sample in decode(path):
        q.put(sample)
    q.put(None)


def upload(step):
    raise ConnectionError(f"metrics endpoint refused the upload of step {step}")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=10))
    q = queue.Queue(maxsize=2)
    path = f"tokens/part-{RANK:02d}.txt"
    threading.Thread(target=prefetch, args=(path, q), name="prefetch", daemon=True).start()
    w = torch.zeros(8)
    step = 0
    while True:
        batch = q.get()
        if batch is None:
            break
        step += 1
        grad = batch[:8] * 0.001
        dist.all_reduce(grad)
        w -= grad
        print(f"rank {RANK}: step {step} |w|={w.norm():.4f}", flush=True)
        if MODE == "upload" and RANK == 1 and step == 3:
            threading.Thread(target=upload, args=(step,), name="uploader").start()
        time.sleep(0.1)
    dist.barrier()
    print(f"rank {RANK}: done after {step} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
