"""Healthy run: a DDP training that saves and resumes a checkpoint and succeeds.

What it prints that looks alarming but is harmless: the anomaly-detection warning
(``torch.autograd.detect_anomaly()`` left on, as people do after a debugging session), the
``_IncompatibleKeys(missing_keys=[], unexpected_keys=[])`` that ``load_state_dict`` returns, a
config dump that mentions timeouts, DataLoader workers starting and stopping, and, when run
with ``TORCH_DISTRIBUTED_DEBUG=DETAIL``, the reducer's and process group's debug chatter.
Every rank exits 0.
"""

from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import TinyNet, init_gloo, parse_args
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> None:
    """Run the scenario on this rank (see the module docstring); the healthy scenarios exit 0."""
    parse_args(__doc__)
    rank, world = init_gloo()
    config = {
        "world_size": world,
        "lr": 0.05,
        "timeout_s": 1800,
        "grad_clip": 1.0,
        "num_workers": 2,
    }
    if rank == 0:
        print(f"config: {config}", flush=True)
    gen = torch.Generator().manual_seed(1)
    data = TensorDataset(
        torch.randn(32 * world, 16, generator=gen),
        torch.randint(0, 4, (32 * world,), generator=gen),
    )
    sampler = DistributedSampler(data, seed=1)
    loader = DataLoader(
        data, batch_size=8, sampler=sampler, num_workers=2, persistent_workers=False
    )
    torch.manual_seed(0)
    net = TinyNet()
    ckpt_dir = tempfile.mkdtemp(prefix=f"ckpt-rank{rank}-")
    ckpt = os.path.join(ckpt_dir, "last.pt")
    torch.save(net.state_dict(), ckpt)
    result = net.load_state_dict(torch.load(ckpt, weights_only=True), strict=False)
    print(f"[rank {rank}] resumed from {os.path.basename(ckpt)}: {result}", flush=True)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    with torch.autograd.detect_anomaly():
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
                opt.step()
            if rank == 0:
                print(
                    f"epoch {epoch} loss {loss.item():.4f} grad_norm {norm.item():.3f}", flush=True
                )
    dist.barrier()
    os.remove(ckpt)
    os.rmdir(ckpt_dir)
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
