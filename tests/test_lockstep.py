"""A rank whose own step sequence skipped a step every other rank printed, and which ran ahead
of them all, left the lock-step first (strategy ``out_of_lockstep``,
:mod:`rootrank.analysis.lockstep`).

Logs written here in the shape of a torch 2.x gloo run under torchrun (``--tee 3``: each
worker's lines prefixed ``[rankN]:``): three ranks print ``step N loss X``; rank 1 skips
step 4's body on a rare branch, so its gradient all-reduces pair with the others' previous
ones until its 1-element metric all-reduce meets a gradient all-reduce: gloo's size enforce
aborts the process (printed unprefixed, from C++), and ranks 0 and 2 lose their peer.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

_ENFORCE = [
    "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
    "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "pair.cc:456] op.preamble.length <= op.nbytes. 88 vs 4. Received data size doesn't match"
    " expected size. Is there a distributed collective mismatch in your code?",
]


def _reset(rank: int, port: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/srv/job/train.py", line 44, in <module>',
        f"{p}    main()",
        f'{p}  File "/srv/job/train.py", line 31, in main',
        f"{p}    dist.all_reduce(p.grad)",
        f'{p}  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",'
        " line 3252, in all_reduce",
        f"{p}    work.wait()",
        f"{p}RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537]"
        f" Read error [127.0.0.1]:{port}: Connection reset by peer. This is typically caused by a"
        " remote worker hanging or bugs in the application. Check the logs of the remote worker"
        " before reporting an error. GLHF!",
    ]


def _log(steps: dict[int, list[int]]) -> str:
    lines: list[str] = []
    longest = max(len(v) for v in steps.values())
    for i in range(longest):
        for rank in (0, 2, 1):
            own = steps[rank]
            if i < len(own):
                lines.append(f"[rank{rank}]:step {own[i]} loss {0.9 - own[i] / 20:.4f}")
    lines += _ENFORCE + _reset(0, 39113) + _reset(2, 39115)
    return "\n".join(lines) + "\n"


_EVERY = list(range(8))  # steps 0..7


def test_the_rank_that_skipped_a_step_and_ran_ahead_is_named() -> None:
    skipper = [s for s in range(9) if s != 4]  # 0..3, 5..8: ahead by one at the end
    d = diagnose_text(_log({0: _EVERY, 1: skipper, 2: _EVERY}), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 1
    why = [r for r in d.reasoning if "[out_of_lockstep]" in r]
    assert why and "skips step 4" in why[0] and "step 8 against 7" in why[0]


def test_a_step_lost_from_the_log_without_running_ahead_names_no_one() -> None:
    """Control: a line lost to gluing leaves a gap, but the rank does not run ahead."""
    lost = [s for s in _EVERY if s != 4]
    d = diagnose_text(_log({0: _EVERY, 1: lost, 2: _EVERY}), "train.log", mask=False)
    assert not any("[out_of_lockstep]" in r for r in d.reasoning)


def test_a_rank_ahead_without_a_skip_names_no_one() -> None:
    """Control: one rank printing the next step first as the job fails is no desync."""
    ahead = list(range(9))
    d = diagnose_text(_log({0: _EVERY, 1: ahead, 2: _EVERY}), "train.log", mask=False)
    assert not any("[out_of_lockstep]" in r for r in d.reasoning)


def test_two_ranks_are_not_enough() -> None:
    """Control: with two ranks, one rank's word against the other's."""
    skipper = [s for s in range(9) if s != 4]
    text = _log({0: _EVERY, 1: skipper, 2: []}).replace("\n".join(_reset(2, 39115)) + "\n", "")
    d = diagnose_text(text, "train.log", mask=False)
    assert not any("[out_of_lockstep]" in r for r in d.reasoning)
