"""A DTensor weight (Shard(0) over the ranks, gloo) added to a plain tensor: DTensor refuses
the mix (``torchrun --nproc-per-node=2 dtensor_mix.py``: the near-miss fixture of
signatures/tensor/parallel-wrapper-dtensor-mix)."""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

dist.init_process_group("gloo")
mesh = init_device_mesh("cpu", (dist.get_world_size(),))
w = distribute_tensor(torch.randn(8, 4), mesh, [Shard(0)])
bias = torch.zeros(8, 4)
print(f"rank {dist.get_rank()} step 0 start", flush=True)
out = w + bias
dist.destroy_process_group()
