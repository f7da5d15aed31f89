"""Each rank normalises its shard's lengths by the longest one after dropping short records."""
import torch
import torch.distributed as dist

LENGTHS = {0: [12, 40, 33, 8], 1: [3, 5, 2], 2: [17, 25, 9]}
MIN_LEN = 6


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    kept = torch.tensor([n for n in LENGTHS[rank] if n >= MIN_LEN], dtype=torch.float32)
    print(f"rank {rank} kept {kept.numel()} of {len(LENGTHS[rank])} records", flush=True)
    longest = kept.max()
    scale = kept / longest
    total = scale.sum()
    dist.all_reduce(total)
    print(f"rank {rank} total {total.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
