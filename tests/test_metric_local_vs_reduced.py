"""A per-step value every rank prints the same (an all-reduced mean) names no rank when it goes
bad; the rank whose own value went bad at that step does (rootrank.metrics.mirrored_series).

The training logs here are written for this test: a script that prints its own tag in front of
each rank's per-step values (``print(f"[r{rank}] it {i:02d} local_loss {l:.4f} mean_loss
{m:.4f}")``, the mean after ``all_reduce``), under torchrun, whose ``[rankN]:`` prefixes the
tracebacks of its NaN guard carry.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.metrics import read_metrics

_GUARD = """\
[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/job/train.py", line 41, in <module>
[rank{r}]:     main()
[rank{r}]:   File "/job/train.py", line 37, in main
[rank{r}]:     raise FloatingPointError(f"non-finite mean loss {{mean.item()}} at iteration {{it}}; stopping")
[rank{r}]: FloatingPointError: non-finite mean loss nan at iteration 4; stopping
"""


def _guard_log(bad: int | None) -> str:
    """Four ranks print their own loss and the all-reduced mean for iterations 0-4; at
    iteration 4 rank ``bad``'s own loss is nan (``None``: every rank's is), so the mean is nan on
    every rank and each rank's guard raises."""
    lines = []
    for it in range(5):
        local = {r: 0.5 + 0.1 * r + 0.05 * it for r in range(4)}
        mean = f"{sum(local.values()) / 4:.4f}"
        if it == 4:
            mean = "nan"
        for r in (2, 0, 3, 1):
            own = f"{local[r]:.4f}"
            if it == 4 and (bad is None or r == bad):
                own = "nan"
            lines.append(f"[r{r}] it {it:02d} local_loss {own} mean_loss {mean}\n")
    guards = "".join(_GUARD.format(r=r) for r in (0, 1, 2, 3))
    return "".join(lines) + guards


def test_the_rank_whose_own_loss_went_nan_under_a_mean_every_rank_shares():
    d = diagnose_text(_guard_log(bad=1), "train.log", mask=False)
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.root_cause.signature == "metric-nonfinite"
    assert d.initiating_rank == 1
    assert (d.root_cause.evidence[0].line, d.root_cause.evidence[0].rank) == (20, 1)
    assert d.initiator is not None and d.initiator.strategy == "first_nonfinite"
    assert "local_loss went non-finite at step 4" in " ".join(d.reasoning)


def test_every_rank_own_loss_nan_at_once_names_no_rank():
    d = diagnose_text(_guard_log(bad=None), "train.log", mask=False)
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank is None


def test_a_loss_named_with_a_word_before_it_is_read_spaced():
    assert read_metrics("it 03 local_loss 0.9333 mean_loss nan")[0] == ("local_loss", 0.9333)
    assert read_metrics("it 03 local_loss 0.9333 mean_loss nan")[1][0] == "mean_loss"
