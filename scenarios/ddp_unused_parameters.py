"""Scenario: under DDP, the fault rank's forward skips a branch, so some parameters get no
gradient (ddp-unused-parameters on the fault rank).

The model has an auxiliary head that is used only for batches that carry auxiliary targets.
The fault rank's shard has none, so on that rank the head takes no part in the loss. DDP was
built with ``find_unused_parameters=False``, so the fault rank's reducer never finishes the
reduction of the first iteration and raises at the start of the second; the other ranks wait
for the bucket that the fault rank never sends.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from _common import batch, init_gloo, parse_args
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class NetWithAuxHead(nn.Module):
    """A classifier with an auxiliary regression head used only when aux targets exist."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Linear(16, 32)
        self.classifier = nn.Linear(32, 4)
        self.aux_head = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor, with_aux: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = torch.relu(self.backbone(x))
        return self.classifier(h), (self.aux_head(h) if with_aux else None)


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    model = DDP(NetWithAuxHead(), find_unused_parameters=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    has_aux_targets = rank != args.fault_rank
    for step in range(args.steps):
        x, y = batch(rank, step)
        logits, aux = model(x, with_aux=has_aux_targets)
        loss = F.cross_entropy(logits, y)
        if aux is not None:
            loss = loss + 0.1 * aux.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
