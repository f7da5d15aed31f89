"""A reward dispatcher with no branch for the run's data source (torchrun, gloo)."""

import torch.distributed as dist


def compute_score(source, text):
    if source == "gsm8k":
        return float("42" in text)
    elif source == "math":
        return float("\\boxed" in text)
    else:
        raise NotImplementedError


def main():
    dist.init_process_group("gloo")
    for step, source in enumerate(["gsm8k", "puzzle"]):
        score = compute_score(source, "answer 42")
        print(f"step {step} score {score}", flush=True)
        dist.barrier()


if __name__ == "__main__":
    main()
