"""Training-curve scenarios: runs that go wrong in their metrics, not (only) in a traceback.

Every rank trains the same tiny MLP regression under DDP (gloo, CPU) and prints one metric line
per step, as hand-written training loops do::

    step 12 loss=0.8123 grad_norm=1.234 lr=0.001 samples/sec=812.3 scale=65536.0

Run under ``torchrun --tee 3`` the lines carry ``[defaultN]:`` (the local rank). ``--mode``:

- ``healthy``: noisy loss (small batches, label noise), fp16 autocast with a ``GradScaler`` that
  skips its first steps on overflow (warm-up) and then settles: nothing must be reported;
- ``lr-too-high``: the learning rate is far too high: the loss climbs, spikes, and turns NaN;
  a guard then raises ``RuntimeError: loss is nan`` (the exception the onset explains);
- ``scale-collapse``: fp16 autocast with an activation scaled far up (x 1e4): the forward pass
  stays finite but the fp16 gradients overflow at any scale above 1, so the ``GradScaler`` skips
  every step and halves its scale each time until it is below 1;
- ``bad-batch``: at step ``--fault-step`` the fault rank's batch is corrupt (values x 1e3): its
  loss spikes at that step, on that rank only;
- ``straggler``: from step ``--fault-step`` the fault rank is slowed on purpose (a sleep inside its
  compute, like a throttled GPU). Each rank prints its own compute throughput (``samples/sec`` of
  the forward pass, before DDP's gradient all-reduce, which makes every rank wait for the slowest);
- ``slowdown``: from step ``--fault-step`` every rank's steps take four times longer (the input
  pipeline slowed down for the whole job);
- ``resume``: trains to step 20 with warm-up, saves only the model, fails at step 25; the second
  attempt (``--resume``, or a torchrun restart) resumes from the checkpoint without the optimizer
  and scheduler state, at the full learning rate, and diverges.
"""

from __future__ import annotations

import math
import os
import time

import torch
import torch.distributed as dist
from _common import init_gloo, parse_args
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def configure(parser) -> None:
    parser.add_argument(
        "--mode",
        required=True,
        choices=[
            "healthy",
            "lr-too-high",
            "scale-collapse",
            "bad-batch",
            "straggler",
            "slowdown",
            "resume",
        ],
    )
    parser.add_argument("--fault-step", type=int, default=30)
    parser.add_argument(
        "--resume", action="store_true", help="resume mode: this is the second attempt"
    )
    parser.add_argument(
        "--checkpoint",
        default=os.environ.get("SCENARIO_CHECKPOINT", "/tmp/rootrank-curves-ckpt.pt"),
    )


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 1)
        self.boost = 1.0  # scale-collapse: an activation far beyond fp16's range

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc1(x)) * self.boost
        return self.fc2(h).squeeze(-1)


def make_batch(rank: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(7919 * rank + step)
    x = torch.randn(size, 16, generator=g)
    w = torch.linspace(-1, 1, 16)
    y = x @ w + 0.3 * torch.randn(size, generator=g)  # label noise: a noisy loss
    return x, y


def main() -> None:
    args = parse_args(__doc__, configure)
    rank, world = init_gloo()
    torch.manual_seed(0)
    net = Net()
    mode = args.mode
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) + (1 if args.resume else 0)
    lr = {"lr-too-high": 0.02, "resume": 0.3}.get(mode, 0.01)
    if mode == "scale-collapse":
        net.boost = 1e4
    start = 1
    if mode == "resume" and attempt > 0 and os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint)
        net.load_state_dict(state["model"])
        start = state["step"] + 1
        if rank == 0:
            print(
                f"Resuming training from checkpoint {args.checkpoint} at step {state['step']}",
                flush=True,
            )
    model = DDP(net)
    opt = (
        torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        if mode != "resume"
        else torch.optim.Adam(model.parameters(), lr=lr)
    )
    amp = mode in ("healthy", "scale-collapse")
    # healthy: the default init scale of 2**16 overflows for the first few steps, then settles
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=50, enabled=amp)
    grow = {"lr-too-high": 1.35}.get(mode, 1.0)
    for step in range(start, args.steps + 1):
        t0 = time.perf_counter()
        size = 8 if mode == "healthy" else 32
        x, y = make_batch(rank, step, size)
        if mode == "healthy":
            x = x * 40.0  # large activations: the first scaled gradients overflow fp16
        if mode == "bad-batch" and rank == args.fault_rank and step == args.fault_step:
            x, y = x * 1e3, y * 1e3  # a corrupt record: values in the wrong unit, far out of range
        if mode == "lr-too-high":
            for group in opt.param_groups:
                group["lr"] = lr * grow ** (step / 4)
        if mode == "resume":
            # the schedule (warm-up to 2% of the configured rate) is not restored on resume
            warm = 1.0 if attempt > 0 else min(1.0, step / 10) * 0.02
            for group in opt.param_groups:
                group["lr"] = lr * warm
        with torch.autocast("cpu", dtype=torch.float16, enabled=amp):
            out = model(x)
        time.sleep(0.02)  # the device's share of a step (keeps the pace steady on a busy CPU)
        if mode == "straggler" and rank == args.fault_rank and step >= args.fault_step:
            time.sleep(0.06)  # a throttled device: this rank's compute takes four times longer
        if mode == "slowdown" and step >= args.fault_step:
            time.sleep(0.06)  # every rank: the input pipeline became slow (shared storage)
        compute = time.perf_counter() - t0  # before the gradient all-reduce (DDP's backward)
        loss = ((out.float() - y) ** 2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        scaler.step(opt)
        scaler.update()
        lr_now = opt.param_groups[0]["lr"]
        line = (
            f"step {step} loss={loss.item():.4f} grad_norm={norm.item():.4f} lr={lr_now:.6g} "
            f"samples/sec={size / compute:.1f}"
        )
        if amp:
            line += f" scale={scaler.get_scale():.1f}"
        print(line, flush=True)
        if mode == "lr-too-high" and not math.isfinite(loss.item()):
            raise RuntimeError(f"loss is nan at step {step}")
        if mode == "resume" and attempt == 0:
            if step == 20 and rank == 0:
                torch.save(
                    {"model": net.state_dict(), "step": step}, args.checkpoint
                )  # no optimizer state
            if step == 25:
                dist.barrier()
                raise RuntimeError("simulated node failure")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
