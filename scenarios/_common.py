"""What every scenario script shares: the faulting rank, the process group, a tiny model.

The scenario scripts are run by ``torchrun`` (see :mod:`run`); each process imports this
module from the script's own folder (``sys.path[0]``).

Environment read here (all optional):

- ``SCENARIO_FAULT_RANK``: the global rank (0-based) that misbehaves; ``--fault-rank N`` on
  the script's command line wins over it. Default 1.
- ``SCENARIO_GLOO_TIMEOUT``: the process-group timeout in seconds (default 15), so that a
  hung collective fails in seconds rather than the 30 minutes PyTorch defaults to.
- ``SCENARIO_STEPS``: training steps (default 6).
- ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``: set by torchrun.
- ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``, ``OMPI_COMM_WORLD_LOCAL_RANK``: set by Open
  MPI's ``mpirun`` for each process; read when torchrun's are absent (``MASTER_ADDR`` and
  ``MASTER_PORT`` must then be exported to the processes, ``mpirun -x MASTER_ADDR -x MASTER_PORT``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn


def parse_args(
    description: str, configure: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """Parse the arguments every scenario takes, plus the script's own (``configure`` adds them).

    Returns a namespace with ``fault_rank`` (int, 0-based global rank; from ``--fault-rank``,
    else ``SCENARIO_FAULT_RANK``, else 1) and ``steps`` (int, from ``--steps``, else
    ``SCENARIO_STEPS``, else 6).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--fault-rank",
        type=int,
        default=int(os.environ.get("SCENARIO_FAULT_RANK", "1")),
        help="global rank that misbehaves (default: $SCENARIO_FAULT_RANK or 1)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=int(os.environ.get("SCENARIO_STEPS", "6")),
        help="training steps (default: $SCENARIO_STEPS or 6)",
    )
    if configure is not None:
        configure(parser)
    return parser.parse_args()


def init_gloo() -> tuple[int, int]:
    """Join the gloo process group torchrun (or mpirun) set up; return ``(rank, world_size)``.

    The timeout is ``SCENARIO_GLOO_TIMEOUT`` seconds (default 15). Raises whatever
    ``torch.distributed.init_process_group`` raises (``DistNetworkError`` when the store is
    unreachable).
    """
    timeout = float(os.environ.get("SCENARIO_GLOO_TIMEOUT", "15"))
    if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
        # Launched by mpirun: the usual mapping of Open MPI's variables onto env://'s.
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
        os.environ["LOCAL_RANK"] = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=timeout))
    return dist.get_rank(), dist.get_world_size()


class TinyNet(nn.Module):
    """A two-layer MLP: ``features`` -> ``hidden`` -> ``classes`` (default 16 -> 32 -> 4)."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Linear(features, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.encoder(x)))


def batch(
    rank: int, step: int, size: int = 8, features: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic random batch for ``rank`` at ``step``: inputs ``[size, features]``
    float32 and integer class labels ``[size]`` in 0..3."""
    gen = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(size, features, generator=gen), torch.randint(0, 4, (size,), generator=gen)


def average_gradients(model: nn.Module) -> None:
    """All-reduce (sum) every gradient of ``model`` and divide by the world size, by hand,
    the way training loops did before DDP."""
    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world
