"""Two torchrun nodes; node 1 lacks VOCAB_PAD, so its rank pads the vocabulary to another
multiple and its embedding-gradient all_reduce carries more elements (helper causal16b)."""

import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
logging.basicConfig(
    level=logging.INFO,
    stream=sys.stdout,
    format=f"%(asctime)s [rank{RANK}] %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("trainer")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=12))
    world = dist.get_world_size()
    pad = int(os.environ.get("VOCAB_PAD", 1000))
    vocab = (50257 + pad - 1) // pad * pad
    log.info("tokenizer loaded: vocab=%d padded=%d world=%d", 50257, vocab, world)
    emb = torch.zeros(vocab // 64, 4)
    for step in range(1, 6):
        grad = torch.randn_like(emb)
        dist.all_reduce(grad)
        if RANK == 0:
            log.info("step %d/5 done", step)
        time.sleep(0.2)
    dist.barrier()
    log.info("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
