"""Compiled model whose attention picks its matmul precision from the TF32 flag."""
import torch
import torch.distributed as dist
import torch.nn as nn


def setup_precision():
    # the project's precision setup (new API) after a library set the legacy flag
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cuda.matmul.fp32_precision = "ieee"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        scale = 1.0 if torch.backends.cuda.matmul.allow_tf32 else 0.5
        return self.proj(x) * scale


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    setup_precision()
    model = torch.compile(Block())
    out = model(torch.randn(4, 8))
    print(f"rank {rank} out {out.sum().item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
