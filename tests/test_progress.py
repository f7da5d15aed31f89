"""The progress model (rootrank.progress): the step per rank from real framework output."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.ingest import logical_lines
from rootrank.model import RankStep
from rootrank.progress import LITERALS, ProgressModel, read_step

CURVES = Path(__file__).parent / "curves"

# Lines as the frameworks print them (format strings read in their sources; the HF bar and
# dicts captured from transformers 5.24 + tqdm 4.70, the "Steps" bar from tqdm 4.70 itself).
LINES = [
    # Megatron-LM training_log (print_rank_last), SLURM --label prefix already removed
    (
        " [2024-05-01 10:00:00] iteration      120/    1000 | consumed samples:        7680 | "
        "elapsed time per iteration (ms): 812.3 | learning rate: 3.000E-05 | lm loss: 7.112E+00 |",
        (120, 1000, "megatron"),
    ),
    # DeepSpeed engine log_dist, ThroughputTimer, pipeline engine
    (
        "[2024-01-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=120, skipped=3, lr=[0.0001], "
        "mom=[(0.9, 0.999)]",
        (120, None, "deepspeed"),
    ),
    (
        "epoch=0/micro_step=480/global_step=120, RunningAvgSamplesPerSec=31.2, CurrSamplesPerSec=30.9, "
        "MemAllocated=1.2GB, MaxMemAllocated=3.4GB",
        (120, None, "deepspeed"),
    ),
    ("steps: 120 loss: 2.3100 iter time (s): 0.512 samples/sec: 62.5", (120, None, "deepspeed")),
    # torchtitan metrics.py (after ANSI removal), with and without its logger header
    (
        "step:  7  loss: 12.2265  grad_norm:  4.1000  memory: 10.12GiB(10.65%)  tps: 562  tflops: 3.26  mfu: 0.33%",
        (7, None, "torchtitan"),
    ),
    (
        "[titan] 2025-01-01 10:00:00,000 - root - INFO - step: 12  loss:  9.8000  memory:  1.01GiB(1.06%)",
        (12, None, "torchtitan"),
    ),
    # Lightning's bar: per-epoch count made global
    (
        "Epoch 3:  45%|████▌     | 45/100 [00:01<00:02, 25.00it/s, v_num=0, train_loss=2.310]",
        (345, 100, "lightning"),
    ),
    # HF Trainer's bar (no description) and an accelerate/diffusers-style "Steps" bar
    (" 12%|█▎        | 5/40 [00:00<00:00, 106.26it/s]", (5, 40, "tqdm")),
    (
        "Steps:  50%|█████     | 15/30 [00:00<00:00, 12713.38it/s, step_loss=0.123, lr=0.0001]",
        (15, 30, "tqdm"),
    ),
    # plain prints
    ("iter 100: loss 4.1234, time 30.12ms, mfu 12.34%", (100, None, "plain")),
    ("step 10, loss: 2.3", (10, None, "plain")),
    ("Step 10/500 | loss 2.3", (10, 500, "plain")),
    ("[step 7] loss=1.2", (7, None, "plain")),
    ("global_step=300 loss=0.1", (300, None, "plain")),
    ("Epoch [2/10], Step [100/600], Loss: 0.2154", (700, 6000, "plain")),
]

NOT_PROGRESS = [
    "Map: 100%|██████████| 1000/1000 [00:00<00:00, 5000.00 examples/s]",
    "Validation DataLoader 0: 100%|██████████| 5/5 [00:00<00:00, 50.00it/s]",
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:03<00:00,  1.2it/s]",
    "    optimizer.step()",
    "Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    "Setting warmup step 100",
    "num_update_steps_per_epoch = 32",
    "max_steps=1000",
]


@pytest.mark.parametrize("text,expected", LINES)
def test_read_step_real_formats(text, expected):
    assert read_step(text) == expected
    assert any(lit in text.lower() for lit in LITERALS), "every progress line passes the gate"


@pytest.mark.parametrize("text", NOT_PROGRESS)
def test_read_step_rejects_non_progress(text):
    assert read_step(text) is None


def test_model_per_rank_behind_and_silence():
    m = ProgressModel()
    for step in range(1, 6):
        for rank in (0, 1, 2):
            if rank == 2 and step > 3:
                continue  # rank 2 stops after step 3
            p = m.observe(
                f"step {step}, loss: 1.0",
                rank=rank,
                time=1000.0 + step,
                path="job.log",
                line=10 * step + rank,
            )
            assert p is not None and p.rank == rank and p.step == step
    assert m.observe("no progress here", rank=0, time=2000.0, path="job.log", line=99) is None
    last = m.last()
    assert {r: p.step for r, p in last.items()} == {0: 5, 1: 5, 2: 3}
    assert last[2].line == 32
    d = m.report(end_time=1100.0)
    assert d is not None
    assert d.behind == [2]
    assert d.silent_seconds == pytest.approx(95.0)
    assert d.end_time == 1100.0
    assert [e.rank for e in d.ranks] == [0, 1, 2]
    assert d.ranks[2] == RankStep(rank=2, step=3, time=1003.0, path="job.log", line=32)


def test_model_empty_is_none():
    assert ProgressModel().report(end_time=None) is None


def test_hf_eval_bar_is_not_progress():
    m = ProgressModel()
    m.observe(
        " 50%|█████     | 20/40 [00:01<00:01, 20.00it/s]", rank=None, time=None, path="x", line=1
    )
    assert (
        m.observe(
            "100%|██████████| 13/13 [00:00<00:00, 30.00it/s]",
            rank=None,
            time=None,
            path="x",
            line=2,
        )
        is None
    )
    assert m.last()[None].step == 20


def test_captured_hf_trainer_log():
    """A real Trainer run (transformers 5.24, tqdm 4.70): the bar's last frame is step 40/40."""
    m = ProgressModel()
    data = (CURVES / "hf-trainer-tiny.log").read_text(encoding="utf-8")
    for number, physical in enumerate(data.split("\n"), 1):
        for raw in logical_lines(number, physical):
            m.observe(raw.text, rank=None, time=None, path="hf.log", line=number)
    p = m.last()[None]
    assert (p.step, p.total, p.kind) == (40, 40, "tqdm")
