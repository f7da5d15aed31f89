"""A run whose LR scheduler is built without the step count it needs (torchrun, gloo)."""

import torch
import torch.distributed as dist


def build_scheduler(opt, cfg):
    return torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=cfg["max_lr"], total_steps=cfg.get("total_steps")
    )


def main():
    dist.init_process_group("gloo")
    cfg = {"max_lr": 0.1, "total_steps": None}
    print(f"config: max_lr={cfg['max_lr']} total_steps={cfg['total_steps']}", flush=True)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    build_scheduler(opt, cfg)


if __name__ == "__main__":
    main()
