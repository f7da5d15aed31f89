"""Round 14, set B: the kinds of fault the held-out set r14b showed, each by its mechanism.

Fixtures are written for these tests (the formats are what the tools print: torchrun --tee's
``[defaultN]:`` prefix, tqdm's postfix, a training script's per-epoch print); none is a held-out log.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.metrics import MetricsReader

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "signatures" / "training"


def _pace_onsets(values: list[float]) -> list[tuple[str, int]]:
    """Onsets of one rank's throughput series fed one value per step (steps 1, 2, ...)."""
    reader = MetricsReader()
    for step, v in enumerate(values, start=1):
        reader.observe(f"step {step} samples/sec={v}", rank=0, time=None, path="x.log", line=step)
    return [(o.kind, o.point.step) for o in reader.onsets()]


def test_slowdown_that_came_back_to_its_pace_is_not_reported():
    """A slow stretch (every rank at a quarter of its speed for 14 steps: a busy shared file
    system, a profiling epoch) followed by the early pace to the end of the run: the run was not
    stopped by it, so no training-slowdown (the detector found the stretch, then saw the pace
    restored for SUSTAIN steps)."""
    values = [1500.0] * 19 + [380.0] * 14 + [1500.0] * 27
    assert _pace_onsets(values) == []


def test_slowdown_that_lasts_to_the_end_is_reported_at_its_first_slow_step():
    values = [1500.0] * 19 + [380.0] * 41
    assert _pace_onsets(values) == [("training-slowdown", 20)]


def test_second_slowdown_after_a_recovered_one_is_reported_at_its_own_start():
    """The first stretch passed; the second one lasts: the onset is the second's first step."""
    values = [1500.0] * 19 + [380.0] * 10 + [1500.0] * 15 + [380.0] * 16
    assert _pace_onsets(values) == [("training-slowdown", 45)]


def test_recovered_slowdown_fixture_is_silent_and_the_lasting_one_is_not():
    quiet = diagnose_paths([str(TRAINING / "training-slowdown.near-miss-2.log")], mask=False)
    assert quiet.root_cause is None
    assert not [f for f in quiet.findings if f.signature == "training-slowdown"]
    slow = diagnose_paths([str(TRAINING / "training-slowdown.positive.log")], mask=False)
    assert slow.root_cause is not None and slow.root_cause.signature == "training-slowdown"
    assert slow.root_cause.rank is None
