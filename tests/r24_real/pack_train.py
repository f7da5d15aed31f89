import torch
import torch.distributed as dist


def pool_tokens(hidden, mask):
    bsz, seq_len = mask.size()
    weights = mask.float().view(bsz, seq_len, 1)
    return (hidden * weights).sum(1) / weights.sum(1)


def build_block_mask(bsz, seq_len):
    causal = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))
    return causal[None, None].expand(bsz, 1, seq_len, seq_len)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    for step in range(3):
        hidden = torch.randn(4, 16, 32)
        mask = torch.ones(4, 16, dtype=torch.bool) if step < 2 else build_block_mask(4, 16)
        pooled = pool_tokens(hidden, mask)
        dist.all_reduce(pooled)
        print(f"rank {rank} step {step} pooled {pooled.norm().item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
