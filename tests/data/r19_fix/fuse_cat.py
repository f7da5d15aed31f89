"""Two-tower model: a text embedding and an image encoder's features are fused by concatenation."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ImageEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Linear(12, 16)

    def forward(self, pixels):
        # pixels: [B, patches, 12] -> one feature per patch
        return self.patch(pixels)


class Fuse(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(32, 2)

    def forward(self, text, image):
        x = torch.cat([text, image], dim=1)
        return self.out(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.text = nn.Embedding(100, 16)
        self.image = ImageEncoder()
        self.fuse = Fuse()

    def forward(self, ids, pixels):
        text = self.text(ids).mean(1)
        image = self.image(pixels)
        return self.fuse(text, image)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(Model())
    ids = torch.randint(0, 100, (4, 7))
    pixels = torch.randn(4, 9, 12)
    out = model(ids, pixels)
    print(f"rank {rank} out {tuple(out.shape)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
