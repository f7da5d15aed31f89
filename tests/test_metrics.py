"""Training curves (rootrank.metrics): series from real metric lines, bounded points, onsets.

The logs under tests/curves/ and signatures/training/ were captured from real runs of
scenarios/curves_train.py (torchrun, gloo, CPU; see scenarios/curves_capture.py) and from
transformers' Trainer; the formats of the other frameworks are the ones their sources print.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.metrics import MAX_POINTS, MetricsReader, read_metrics
from rootrank.progress import ProgressModel
from rootrank.report import to_markdown, to_text

ROOT = Path(__file__).resolve().parents[1]
CURVES = ROOT / "tests" / "curves"
TRAINING = ROOT / "signatures" / "training"


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "{'loss': '6.369', 'grad_norm': '5.263', 'learning_rate': '0.009', 'epoch': '0.1562'}",
            [("loss", 6.369), ("grad_norm", 5.263), ("lr", 0.009)],
        ),
        (
            " iteration      120/    1000 | consumed samples:        7680 | elapsed time per iteration (ms): 812.3 | "
            "learning rate: 3.000E-05 | global batch size:    32 | lm loss: 7.112E+00 | loss scale: 1.0 | "
            "grad norm: 2.301 | number of skipped iterations:   0 | number of nan iterations:   0 |",
            [
                ("step_time", 0.8123),
                ("lr", 3e-05),
                ("loss", 7.112),
                ("loss_scale", 1.0),
                ("grad_norm", 2.301),
            ],
        ),
        (
            "step:  7  loss: 12.2265  grad_norm:  4.1000  memory: 10.12GiB(10.65%)  tps: 1,562  tflops: 3.26  mfu: 0.33%",
            [
                ("loss", 12.2265),
                ("grad_norm", 4.1),
                ("memory", 10.12),
                ("throughput", 1562.0),
                ("tflops", 3.26),
                ("mfu", 0.33),
            ],
        ),
        (
            "Epoch 3:  45%|████▌     | 45/100 [00:01<00:02, 25.00it/s, v_num=0, train_loss=2.310]",
            [("loss", 2.31)],
        ),
        ("[Rank 0] step=120, skipped=3, lr=[0.0001], mom=[(0.9, 0.999)]", [("lr", 0.0001)]),
        (
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
            [("loss_scale", 32768.0)],
        ),
        (
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0",
            [("loss_scale", 16384.0)],
        ),
        (
            "iter 100: loss 4.1234, time 30.12ms, mfu 12.34%",
            [("loss", 4.1234), ("step_time", 0.03012), ("mfu", 12.34)],
        ),
        (
            "step 12 loss=nan grad_norm=inf lr=0.01 samples/sec=812.3 scale=2.0",
            [
                ("loss", math.nan),
                ("grad_norm", math.inf),
                ("lr", 0.01),
                ("throughput", 812.3),
                ("loss_scale", 2.0),
            ],
        ),
        (
            "{'train_runtime': 0.0883, 'train_samples_per_second': 3624.1, 'train_loss': 5.98, 'epoch': 1.0}",
            [],
        ),
        (  # what trainer.train() returns, printed: training_loss is the run's average
            "TrainOutput(global_step=100, training_loss=0.5028616972640156, metrics={'train_runtime':"
            " 85.4591, 'train_samples_per_second': 11.702, 'train_loss': 0.5028616972640156, 'epoch': 1.0})",
            [],
        ),
    ],
)
def test_read_metrics_real_formats(text, expected):
    got = read_metrics(text)
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (_, v), (_, e) in zip(got, expected, strict=True):
        assert (math.isnan(v) and math.isnan(e)) or v == pytest.approx(e)


def _json(path: Path) -> dict:
    return diagnose_paths([str(path)], mask=False).to_dict()


def _onsets(d: dict) -> list[tuple[str, str, int | None, int]]:
    return sorted(
        {(o["kind"], m["name"], o["rank"], o["step"]) for m in d["metrics"] for o in m["onsets"]}
    )


def test_hf_trainer_dict_steps_come_from_the_bar():
    """Trainer's dicts carry no step: each takes the step of the bar redrawn right after it."""
    d = _json(CURVES / "hf-trainer-tiny.log")
    loss = next(m for m in d["metrics"] if m["name"] == "loss")
    assert [p[0] for p in loss["points"]] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert loss["points"][0][1] == pytest.approx(6.369)
    assert loss["rank"] is None and loss["onsets"] == []
    assert d["progress"]["ranks"][0]["step"] == 40


def test_points_bounded_and_keep_extremes_and_nonfinite():
    reader = MetricsReader()
    progress = ProgressModel()
    rng = random.Random(3)
    n = 200_000
    for step in range(1, n + 1):
        v = 2.0 + rng.random() * 0.1
        if step == 123_457:
            v = float("nan")
        if step == 77_777:
            v = 50.0  # the highest value
        if step == 150_001:
            v = 0.001  # the lowest
        text = f"step {step} loss={v:.4f}"
        p = progress.observe(text, rank=0, time=None, path="big.log", line=step)
        reader.observe(text, rank=0, time=None, path="big.log", line=step, progress=p)
    (series,) = [s for s in reader.report() if s.name == "loss"]
    pts = series.points
    assert len(pts) <= MAX_POINTS
    assert [77_777, 50.0] in pts and [150_001, 0.001] in pts and [123_457, "nan"] in pts
    assert pts[-1][0] == n  # the last point is always kept
    assert [p[0] for p in pts] == sorted(p[0] for p in pts)
    kinds = {o.kind for o in series.onsets}
    assert kinds == {"loss-spike", "metric-nonfinite"}
    spike = next(o for o in series.onsets if o.kind == "loss-spike")
    assert (spike.step, spike.line) == (77_777, 77_777)


# Captured runs of scenarios/curves_train.py (torchrun --tee 3, gloo, CPU), kept as the
# signatures' fixtures: what each must show, and the healthy run nothing.
CAPTURED = [
    ("loss-spike.positive.log", {("loss-spike", "loss", 1, 30)}),  # bad batch on rank 1 at step 30
    (
        "metric-nonfinite.positive.log",
        {
            ("loss-spike", "loss", 0, 37),
            ("loss-spike", "loss", 1, 37),
            ("metric-nonfinite", "loss", 0, 58),
            ("metric-nonfinite", "loss", 1, 58),
        },
    ),
    (
        "loss-scale-collapse.positive.log",
        {("loss-scale-collapse", "loss_scale", 0, 1), ("loss-scale-collapse", "loss_scale", 1, 1)},
    ),
    (
        "straggler-rank.positive.log",
        {("straggler-rank", "throughput", 2, 30)},
    ),  # rank 2 slowed from step 30
    ("training-slowdown.positive.log", {("training-slowdown", "throughput", None, 30)}),
    (
        "resume-divergence.positive.log",
        {("resume-divergence", "loss", 0, 22), ("resume-divergence", "loss", 1, 22)},
    ),
]


@pytest.mark.parametrize("name,expected", CAPTURED, ids=[c[0] for c in CAPTURED])
def test_captured_runs_onsets(name, expected):
    got = set(_onsets(_json(TRAINING / name)))
    assert expected <= got


def test_captured_healthy_run_is_silent():
    """Noisy loss (batch of 8, label noise) and fp16 warm-up overflow skips (grad_norm nan/inf on
    the first 4 steps, the scale halved 65536 -> 4096, later one more skip): nothing reported."""
    d = _json(TRAINING / "loss-spike.near-miss.log")
    assert d["root_cause"] is None
    assert _onsets(d) == []
    names = {(m["name"], m["rank"]) for m in d["metrics"]}
    assert {("loss", 0), ("loss", 1), ("grad_norm", 0), ("loss_scale", 1), ("lr", 0)} <= names
    gn = next(m for m in d["metrics"] if m["name"] == "grad_norm" and m["rank"] == 0)
    skipped = [s for s, v in gn["points"] if isinstance(v, str)]
    assert skipped[:4] == [1, 2, 3, 4]  # the warm-up overflow skips, kept as non-finite points
    assert d["progress"]["ranks"] == [
        {
            "rank": 0,
            "step": 60,
            "time": None,
            "path": str(TRAINING / "loss-spike.near-miss.log"),
            "line": d["progress"]["ranks"][0]["line"],
        },
        {
            "rank": 1,
            "step": 60,
            "time": None,
            "path": str(TRAINING / "loss-spike.near-miss.log"),
            "line": d["progress"]["ranks"][1]["line"],
        },
    ]


def test_lr_too_high_root_cause_is_the_spike_not_the_guard():
    """The spike at step 37 (every rank) explains the NaN at step 58 and the guard's RuntimeError."""
    d = _json(TRAINING / "metric-nonfinite.positive.log")
    rc = d["root_cause"]
    assert rc["signature"] == "loss-spike" and rc["rank"] is None
    assert rc["evidence"][0]["line"] == 76
    assert rc["captures"]["step"] == "37"


def test_onset_findings_name_the_first_rank():
    path = TRAINING / "loss-spike.positive.log"
    d = diagnose_paths([str(path)], mask=False)
    spike = next(f for f in d.findings if f.signature == "loss-spike")
    assert (spike.rank, spike.evidence[0].line, spike.captures["step"]) == (1, 67, "30")
    assert spike.role == "cause" and spike.failure_class == "nan-or-fp16-overflow"


def test_reports_draw_the_curves():
    diag = diagnose_paths([str(TRAINING / "straggler-rank.positive.log")], mask=False)
    text = to_text(diag)
    line = next(t for t in text.splitlines() if t.strip().startswith("throughput (rank 2)"))
    assert "straggler-rank at step 30 (line 92)" in line
    assert any(c in line for c in "▁▂▃▄▅▆▇█")
    md = to_markdown(diag)
    assert "![training curves](data:image/svg+xml;base64," in md
    import base64
    import xml.etree.ElementTree as ET

    uri = md.split("](data:image/svg+xml;base64,", 1)[1].split(")", 1)[0]
    svg = base64.b64decode(uri).decode("utf-8")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "straggler-rank @ 30" in texts
    assert json.loads(json.dumps(diag.to_dict()))["metrics"][0]["name"] == "loss"


def test_text_input_and_no_metrics():
    d = diagnose_text("hello\nworld\n").to_dict()
    assert d["progress"] is None and d["metrics"] == []


def test_a_nan_grad_norm_with_a_constant_loss_scale_is_the_fault_not_a_skip():
    # Megatron bf16 prints "loss scale: 1.0" every iteration: no dynamic loss scaling, so a NaN
    # gradient norm is not an overflow step the scaler skips.
    lines = [
        f" iteration {i:8d}/  250000 | consumed samples: {i * 8:12d} | elapsed time per iteration (ms): 4247.9 |"
        f" learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan |"
        for i in range(5426, 5429)
    ]
    d = diagnose_text("\n".join(lines) + "\n", mask=False)
    assert d.root_cause.signature == "metric-nonfinite"
    assert d.root_cause.evidence[0].line == 1
    assert d.root_cause.captures["step"] == "5426"


def test_every_rank_diverged_at_once_even_when_one_rank_exited_first():
    """A real run where rank 1's NaN guard raised first and the agent stopped rank 0 with
    SIGTERM: the launcher's summary names rank 1, but both ranks spiked at step 37, so the
    learning rate (common to every rank) is the cause and no rank is named."""
    d = _json(TRAINING / "metric-nonfinite.positive-2.log")
    assert d["root_cause"]["signature"] == "loss-spike"
    assert d["root_cause"]["rank"] is None
    assert d["initiator"]["strategy"] == "same_step_everywhere"
    assert d["initiator"]["candidates"] == [0, 1]
    assert "step (37)" in d["initiator"]["why"]


def test_the_curve_of_a_relaunched_run_is_the_last_attempts():
    # a failed attempt (steps 0-2), torchrun's summary, then a relaunch that starts at step 0
    # again and runs to its end: the curve is the relaunch's 10 points, not 13 that join the
    # two attempts' values (round-12 trial, item 11), and its last value is labelled
    banner = (
        "W1129 {t} 14547 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment"
        " variable for each process to be 1 in default, to avoid your system being overloaded,"
        " please further tune the variable for optimal performance in your application as"
        " needed.\n"
    )
    failed = (
        banner.format(t="13:27:37.893000")
        + "step 0 loss 1.3287\nstep 1 loss 0.6259\nstep 2 loss 1.0563\n"
        + "[rank2]: Traceback (most recent call last):\n"
        + '[rank2]:   File "/w/train.py", line 16, in <module>\n'
        + "[rank2]: ValueError: corrupt record in shard-00002.jsonl line 29\n"
        + "E1129 13:27:44.579000 14547 torch/distributed/elastic/multiprocessing/api.py:1002]"
        " failed (exitcode: 1) local_rank: 2 (pid: 14622) of binary: /usr/bin/python3\n"
    )
    relaunch = banner.format(t="14:02:11.893000") + "".join(
        f"step {s} loss {0.5 - s / 100:.2f}\n" for s in range(10)
    )
    start = failed.count("\n") + 1
    d = diagnose_text(failed + relaunch, "train.log", mask=False)
    assert d.attempts == 2 and d.root_cause is None
    (loss,) = [m for m in d.metrics if m.name == "loss"]
    assert loss.points == [[s, round(0.5 - s / 100, 2)] for s in range(10)]
    assert loss.onsets == []
    line = next(t for t in to_text(d).splitlines() if t.strip().startswith("loss "))
    assert line.endswith(" last 0.41 steps 0–9")
    # the attempts are split at the relaunch's banner: a point before it is the failed one's
    assert d.reasoning and start == 9
