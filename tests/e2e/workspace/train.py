"""A tiny DDP training script: the end-to-end test's quick fix edits the wrapper line."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from model import MultiTaskModel


def main() -> None:
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = MultiTaskModel().cuda(local_rank)
    model = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(1000):
        x = torch.randn(32, 128, device=local_rank)
        task = "a" if dist.get_rank() % 2 else "b"
        out = model(x, task=task)
        out.mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
