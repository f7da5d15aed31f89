"""A tiny Hugging Face Trainer run on CPU: the source of ``tests/curves/hf-trainer-tiny.log``.

What it shows: the Trainer's tqdm bar (no description) redrawn with ``\r`` and its metric dicts
(``{'loss': '6.369', 'grad_norm': ..., 'learning_rate': ..., 'epoch': ...}``, values quoted since
transformers 5) written by ``tqdm.write`` between two frames, which is how a Trainer log looks
in a file. Needs ``pip install 'rootrank[hf-capture]'`` (transformers, accelerate); not used by
the tests, which read the captured log::

    python scenarios/hf_trainer_tiny.py [LEARNING_RATE] > tests/curves/hf-trainer-tiny.log 2>&1
"""

import sys
import tempfile

import torch
from torch import nn
from transformers import Trainer, TrainingArguments


class Regressor(nn.Module):
    """A linear regression that returns the loss the way Trainer expects it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 1)

    def forward(self, x=None, labels=None):
        out = self.linear(x).squeeze(-1)
        return {"loss": ((out - labels) ** 2).mean(), "logits": out}


class Sums(torch.utils.data.Dataset):
    """256 random vectors; the label is their sum."""

    def __len__(self) -> int:
        return 256

    def __getitem__(self, i: int) -> dict:
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        return {"x": x, "labels": x.sum()}


def main() -> None:
    lr = float(sys.argv[1]) if len(sys.argv) > 1 else 1e-2
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        max_steps=40,
        logging_steps=5,
        per_device_train_batch_size=8,
        learning_rate=lr,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=False,
    )
    Trainer(model=Regressor(), args=args, train_dataset=Sums()).train()


if __name__ == "__main__":
    main()
