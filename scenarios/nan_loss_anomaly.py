"""Scenario: the fault rank's loss turns NaN and anomaly detection stops it in backward
(nan-or-fp16-overflow on the fault rank).

The model predicts a probability with a sigmoid and the loss takes ``log(1 - p)`` by hand.
The fault rank's shard has a few records with huge feature values, ``p`` rounds to exactly 1
in float32 and the log gives ``-inf``; its gradient is NaN. With
``torch.autograd.set_detect_anomaly(True)`` PyTorch raises in the backward of the offending op
and prints the forward traceback that created it; the other ranks wait in ``all_reduce``.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from _common import average_gradients, batch, init_gloo, parse_args


class Scorer(torch.nn.Module):
    """Linear scorer with a sigmoid output (probability of the positive class)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x)).squeeze(1)


def bce(p: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy written by hand (the numerically unsafe way)."""
    return -(target * torch.log(p) + (1 - target) * torch.log(1 - p)).mean()


def main() -> None:
    """Run the scenario on this rank (see the module docstring); exits non-zero on failure."""
    args = parse_args(__doc__)
    torch.autograd.set_detect_anomaly(True)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    model = Scorer()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(rank, step)
        target = (y % 2).float()
        if rank == args.fault_rank and step == 2:
            x[3] = 1e4  # an unnormalized record
            target[3] = 0.0
        loss = bce(model(x), target)
        opt.zero_grad()
        loss.backward()
        average_gradients(model)
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
