"""Language-model step whose token ids come from a tokenizer with added special tokens."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

BASE_VOCAB = 32
SPECIAL = {"<bos>": 32, "<eos>": 33}


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(BASE_VOCAB, 8), nn.Linear(8, BASE_VOCAB)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        body = torch.randint(0, BASE_VOCAB, (4, 6))
        ids = torch.cat([torch.full((4, 1), SPECIAL["<bos>"]), body], dim=1)
        logits = model(ids)
        loss = logits.logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
