"""New-user trial (r17c): a tiny gloo job; TRIAL_MODE picks what goes wrong.

survive:  rank 1's metrics thread raises once (ConnectionError); training finishes, exit 0.
snapshot: rank 1 saves a snapshot in a thread at step 3 (TRIAL_CKPT=/dev/full: ENOSPC); the
          thread dies, training finishes, exit 0.
keyerror: every rank uses a native prefetcher (libprefetch.so); rank 2's batch lacks
          'labels' at step 4 (KeyError); at exit the prefetcher still holds that batch and
          its thread throws: std::terminate, SIGABRT.
slow:     (also with snapshot: TRIAL_MODE=snapshot,slow) rank 1 is slow once (TRIAL_SLOW seconds at step 4); training finishes, exit 0.
prefetch: each rank decodes samples in a 'prefetch' thread; rank 2's sample 6 is bad, its
          thread dies, rank 2 blocks on the queue, the others time out in all_reduce.
Steps are printed as TRIAL_FMT says: total 'step N/12 loss X', plain 'step N loss X', rank
'rank R: step N loss X'."""
import ctypes
import os
import queue
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
MODE = os.environ["TRIAL_MODE"]
STEPS = 12
FMT = {
    "total": "step {step}/{steps} loss {loss:.4f}",
    "plain": "step {step} loss {loss:.4f}",
    "rank": "rank {rank}: step {step} loss {loss:.4f}",
}[os.environ.get("TRIAL_FMT", "total")]


def send_metrics(step):
    raise ConnectionError(f"metrics server refused step {step}")


def save_snapshot(w, step):
    # TRIAL_CKPT=/dev/full: every write fails with ENOSPC, as on a full disk
    with open(os.environ.get("TRIAL_CKPT", f"snapshot-{step}.pt"), "wb") as f:
        torch.save(w, f)
        f.flush()


def decode(i):
    if RANK == int(os.environ.get("TRIAL_BAD_RANK", "2")) and i == 6:
        raise ValueError(f"sample {i} of shard {RANK}: bad token id 70000")
    return torch.full((8,), float(i))


def prefetch(q):
    for i in range(1, STEPS + 1):
        q.put(decode(i))


def get_batch(step):
    batch = {"input_ids": torch.ones(8), "labels": torch.zeros(8)}
    if RANK == 2 and step == 4:
        del batch["labels"]
    return batch


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=int(os.environ.get("TRIAL_TIMEOUT", "15"))))
    lib = None
    if MODE == "keyerror":
        lib = ctypes.CDLL(os.path.abspath("libprefetch.so"))
        lib.prefetch_start()
    q = queue.Queue(maxsize=2)
    if MODE == "prefetch":
        threading.Thread(target=prefetch, args=(q,), name="prefetch", daemon=True).start()
    w = torch.zeros(8)
    for step in range(1, STEPS + 1):
        if MODE == "prefetch":
            x = q.get()
        elif MODE == "keyerror":
            lib.prefetch_take()
            batch = get_batch(step)
            x = batch["input_ids"] - batch["labels"]
            lib.prefetch_done()
        else:
            x = torch.full((8,), float(step))
        if "slow" in MODE and RANK == 1 and step == 4:
            time.sleep(float(os.environ.get("TRIAL_SLOW", "12")))
        dist.all_reduce(x)
        w -= 0.001 * x
        print(FMT.format(rank=RANK, step=step, steps=STEPS, loss=w.norm()), flush=True)
        if MODE == "survive" and RANK == 1 and step == 3:
            threading.Thread(target=send_metrics, args=(step,), name="metrics").start()
        if "snapshot" in MODE and RANK == 1 and step == 3:
            threading.Thread(target=save_snapshot, args=(w.clone(), step), name="snapshot").start()
        time.sleep(0.3)
    dist.barrier()
    if os.environ.get("TRIAL_FMT") == "rank":
        print(f"rank {RANK}: done after {STEPS} steps", flush=True)
    elif RANK == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
