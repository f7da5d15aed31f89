"""scan._starts_run answers as the one search it replaced (a banner literal or a launcher
command at the start) on generated and real-shaped lines."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import launchers
from rootrank.scan import _starts_run

# The pattern _starts_run replaced (searched on every gated line after a failure).
# The launchers are rootrank.launchers' (one alternation every reader of a launch line shares).
_RUN_START = regex.compile(
    r"Setting OMP_NUM_THREADS environment variable for each process"
    r"|^(?:\S{0,80}[$#]|\+{1,3}) (?:" + launchers.MULTI_PROCESS + r"|sbatch)\b"
)

_PIECES = st.sampled_from(
    [
        "$ ",
        "# ",
        "+ ",
        "++",
        "torchrun",
        "accelerate launch",
        "deepspeed",
        "python3.11 -m torch.distributed.run",
        "srun",
        "mpirun",
        "sbatch",
        "composer",
        "mpiexec",
        "horovodrun",
        "x",
        "user@node01:~",
        " ",
        "\t",
        "[rank0]:",
        "-",
        "sruns",
        "Setting OMP_NUM_THREADS environment variable for each process",
        "a" * 79,
        "é",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=6).map("".join))
def test_starts_run_equals_the_search(text: str) -> None:
    assert _starts_run(text) == bool(_RUN_START.search(text))


def test_starts_run_on_real_lines() -> None:
    assert _starts_run("user@node01:~/train$ torchrun --nproc-per-node 8 train.py")
    assert _starts_run(
        "[2024-11-29] W1129 ... Setting OMP_NUM_THREADS environment variable for each process to be 1"
    )
    assert not _starts_run("node01:59958:59958 [0] NCCL INFO comm 0x1 rank 0 nranks 8 # torchrun")
    assert not _starts_run("$ torchrunner --x")
    assert _starts_run("# srun -N 2 python train.py")
    # a script's `set -x` trace of the launch (bash's PS4, "+ ", "++ " one level down)
    assert _starts_run("+ torchrun --nproc-per-node=3 train_sigkill.py")
    assert _starts_run("++ srun -N 2 python train.py")
    assert not _starts_run("+ echo torchrun")
    assert not _starts_run("+1.5% torchrun throughput")
