import argparse
import os

import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class ShardSet(Dataset):
    def __init__(self, root, split):
        index = os.path.join(root, f"{split}.idx")
        with open(index) as fh:
            self.index = fh.read().split()

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.index[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shard_root", default="/srv/corpora/wiki_shards")
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    dist.init_process_group("gloo")
    if dist.get_rank() == 0:
        print(args, flush=True)
    ds = ShardSet(args.shard_root, "train")
    loader = DataLoader(ds, batch_size=2)
    for step, _batch in enumerate(loader):
        print(f"step {step} loss 1.0", flush=True)


if __name__ == "__main__":
    main()
