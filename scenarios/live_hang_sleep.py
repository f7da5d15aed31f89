"""Scenario (live): one rank stops in Python before a collective; the others wait in it (a hang).

Every rank trains and prints its own progress line, ``step N loss L``, each step before it
all-reduces the gradients. At step ``--hang-step`` (default 5) the fault rank sleeps for
``--hang-seconds`` (default 120) in its data loading, before it prints that step: the other
ranks print step 5 and wait in ``all_reduce``; the fault rank's last line is step 4. Nothing
more is printed until the gloo timeout (``SCENARIO_GLOO_TIMEOUT``) fires on the waiting ranks,
which is what ``rootrank run`` / ``rootrank watch`` must beat.

With ``--step-seconds`` each step takes at least that long (default 0.3), so the run shows a
steady step interval before the hang. ``--hang-seconds 0`` makes it a healthy run.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from _common import TinyNet, average_gradients, batch, init_gloo, parse_args


def load_batch(rank: int, step: int, stall: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The rank's batch for ``step``; sleeps ``stall`` seconds first (a stuck data read)."""
    if stall:
        time.sleep(stall)
    return batch(rank, step)


def main() -> None:
    """Run the scenario on this rank (see the module docstring)."""

    def configure(p):  # type: ignore[no-untyped-def]
        p.add_argument("--hang-step", type=int, default=5)
        p.add_argument("--hang-seconds", type=float, default=120.0)
        p.add_argument("--step-seconds", type=float, default=0.3)

    args = parse_args(__doc__, configure)
    rank, _ = init_gloo()
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        started = time.monotonic()
        stall = args.hang_seconds if (rank == args.fault_rank and step == args.hang_step) else 0.0
        x, y = load_batch(rank, step, stall)
        loss = F.cross_entropy(model(x), y)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        opt.zero_grad()
        loss.backward()
        average_gradients(model)
        opt.step()
        time.sleep(max(0.0, args.step_seconds - (time.monotonic() - started)))
    print("done", flush=True)


if __name__ == "__main__":
    main()
