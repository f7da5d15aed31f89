"""Trainer dict logs without tqdm bars (``python train.py > train.log`` sends the bars to the
terminal's stderr; ``disable_tqdm=True``): every dict is kept, at its ordinal step (or the step the
dict names), so a divergence late in the run is found at its step and the curves cover the run.

The logs are generated here in the format transformers' Trainer prints (``str(logs)`` of its dict).
"""

from __future__ import annotations

import math
from pathlib import Path

from rootrank.engine import diagnose_paths


def _write_div(path: Path, steps: int = 600, onset: int = 400) -> None:
    with open(path, "w") as f:
        for s in range(1, steps + 1):
            loss = 2.0 / (1 + s * 1e-2) if s < onset else 2.0 * math.exp((s - onset) / 10)
            f.write(
                f"{{'loss': {loss:.4f}, 'grad_norm': 1.5, 'learning_rate': 2e-05, 'epoch': {s / 100:.2f}}}\n"
            )


def _series(d: dict, name: str, rank: int | None = None) -> dict:
    return next(m for m in d["metrics"] if m["name"] == name and m["rank"] == rank)


def test_no_bar_dict_log_divergence_found_at_its_step(tmp_path):
    log = tmp_path / "div1.log"
    _write_div(log)
    d = diagnose_paths([str(log)], mask=False).to_dict()
    loss = _series(d, "loss")
    assert [(o["kind"], o["step"]) for o in loss["onsets"]] == [("loss-spike", 400)]
    assert loss["points"][0][0] == 1
    assert loss["points"][-1][0] == 600
    assert loss["points"][-1][1] == round(2.0 * math.exp(200 / 10), 4)
    assert _series(d, "grad_norm")["points"][-1][0] == 600
    assert _series(d, "lr")["points"][-1][0] == 600
    assert d["root_cause"]["signature"] == "loss-spike"
    assert d["root_cause"]["evidence"][0]["line"] == 400


def test_no_bar_healthy_dict_log_stays_silent(tmp_path):
    log = tmp_path / "ok.log"
    with open(log, "w") as f:
        for s in range(1, 1001):
            loss, gn = 2.0 / (1 + s * 1e-2) + 0.01 * math.sin(s), 1.5 + 0.1 * math.cos(s)
            f.write(
                f"{{'loss': '{loss:.4f}', 'grad_norm': '{gn:.3f}', 'learning_rate': '2e-05', "
                f"'epoch': '{s / 100:.2f}'}}\n"
            )
            if s % 100 == 0:
                f.write(
                    f"{{'eval_loss': '1.0000', 'eval_runtime': 1.2, 'epoch': '{s / 100:.2f}'}}\n"
                )
    d = diagnose_paths([str(log)], mask=False).to_dict()
    assert d["root_cause"] is None
    loss = _series(d, "loss")
    assert loss["onsets"] == [] and loss["points"][-1][0] == 1000
    # an eval dict does not count as a logged training step
    assert [p[0] for p in _series(d, "eval_loss")["points"]][:2] == [100, 200]


def test_50mb_dict_log_with_steps_covers_the_whole_run(tmp_path):
    log = tmp_path / "big.log"
    last = 0
    with open(log, "w") as f:
        s = 0
        while f.tell() < 50_000_000:
            s += 1
            f.write(
                "".join(
                    f'[rank{r}]: {{"loss": {2 / (1 + s * 1e-4):.4f}, "learning_rate": 1e-05, '
                    f'"epoch": {s / 1000:.2f}, "step": {s}}}\n'
                    for r in range(8)
                )
            )
        last = s
    d = diagnose_paths([str(log)], mask=False).to_dict()
    # Past 50,000 metric-only lines the scan reads a sample of them (rootrank.scan.LIGHT_FULL),
    # so a rank's last point is among the run's last few steps (the log's last line exactly).
    for rank in range(8):
        loss = _series(d, "loss", rank)
        assert loss["points"][0][0] == 1
        end = loss["points"][-1][0]
        assert last - 100 <= end <= last
        assert loss["points"][-1][1] == round(2 / (1 + end * 1e-4), 4)
        assert loss["onsets"] == []
    assert _series(d, "loss", 7)["points"][-1][0] == last
    assert d["root_cause"] is None
