"""Ranks exchange their augmentation settings with all_gather_object before training."""
import torch.distributed as dist


def build_aug(rank):
    jitter = 0.1 * (rank + 1)
    return {"name": f"jitter{rank}", "fn": lambda x: x + jitter}


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mine = build_aug(rank)
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    print(f"rank {rank} got {[a['name'] for a in every]}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
