import torch
import torch.distributed as dist


def expand_padding(mask, tgt_len):
    bsz, src_len = mask.size()
    return mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x, mask):
        attn = expand_padding(
            mask,
            x.shape[1],
        )
        return self.proj(x).masked_fill(~attn[:, 0, 0, :, None], 0.0).sum()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = Scorer()
    for step in range(4):
        x = torch.randn(2, 6, 8)
        mask = torch.ones(2, 6, dtype=torch.bool)
        if step == 2:
            mask = mask[:, None, :].expand(2, 6, 6)
        loss = model(x, mask)
        loss.backward()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
