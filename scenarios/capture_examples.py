"""Regenerate the bundled logs from real scenario runs: ``examples/*.log`` and
``tests/healthy/torch-*.log``.

Each log is the merged terminal output of one torchrun run (see :mod:`run`), anonymized with
:func:`run.anonymize` (paths under ``/home/user``, host ``node01``). A run that does not end
the way the scenario promises (a failure that exits 0, a healthy run that fails, a timeout)
is reported and its log is not written.

Usage::

    .venv/bin/python scenarios/capture_examples.py            # all of them
    .venv/bin/python scenarios/capture_examples.py multi-rank-hang
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from run import REPO_ROOT, anonymize, run_scenario


@dataclass(frozen=True)
class Capture:
    """One bundled log: where it goes, which scenario makes it, and how it must end."""

    target: str  # path relative to the repository root
    scenario: str
    nproc: int
    fault_rank: int | None
    healthy: bool
    env: dict[str, str] = field(default_factory=dict)
    must_contain: tuple[str, ...] = ()


CAPTURES = {
    # Rank 2's validation shard is empty, so it skips the all_reduce the others issue and
    # waits in barrier; every rank hangs until gloo's timeout: the cause sits on rank 2.
    "multi-rank-hang": Capture(
        "examples/multi-rank-hang.log",
        "skip_collective",
        nproc=4,
        fault_rank=2,
        healthy=False,
        env={"SCENARIO_GLOO_TIMEOUT": "15"},
        must_contain=("Timed out waiting",),
    ),
    # Rank 2's forward skips a head; DDP's reducer on rank 2 raises, ranks 0, 1 and 3 wait for
    # its gradient bucket and die with "Connection closed by peer", then torchrun SIGTERMs them.
    "ddp-unused-parameters": Capture(
        "examples/ddp-unused-parameters.log",
        "ddp_unused_parameters",
        nproc=4,
        fault_rank=2,
        healthy=False,
        env={"SCENARIO_GLOO_TIMEOUT": "20"},
        must_contain=(
            "[rank2]: RuntimeError: Expected to have finished reduction",
            "closing signal SIGTERM",
        ),
    ),
    # A DataLoader worker on rank 1 is SIGKILLed; PyTorch chains two RuntimeErrors.
    "chained-traceback": Capture(
        "examples/chained-traceback.log",
        "dataloader_worker_killed",
        nproc=2,
        fault_rank=1,
        healthy=False,
        must_contain=("The above exception was the direct cause of the following exception",),
    ),
    "healthy-ddp-amp-warnings": Capture(
        "tests/healthy/torch-ddp-amp-warnings.log",
        "healthy_ddp",
        nproc=3,
        fault_rank=None,
        healthy=True,
    ),
    "healthy-resume-debug-info": Capture(
        "tests/healthy/torch-resume-debug-info.log",
        "healthy_resume",
        nproc=2,
        fault_rank=None,
        healthy=True,
        env={"TORCH_DISTRIBUTED_DEBUG": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"},
    ),
}


def capture(name: str) -> bool:
    """Run the capture called ``name`` and write its log; return True when written."""
    spec = CAPTURES[name]
    result = run_scenario(spec.scenario, nproc=spec.nproc, fault_rank=spec.fault_rank, env=spec.env)
    ok = not result.timed_out and (result.returncode == 0) == spec.healthy
    missing = [s for s in spec.must_contain if s not in result.output]
    if not ok or missing:
        print(
            f"{name}: NOT written (exit {result.returncode}, timed out {result.timed_out}, "
            f"missing {missing})",
            file=sys.stderr,
        )
        return False
    target = REPO_ROOT / spec.target
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(anonymize(result.output), encoding="utf-8")
    print(f"{name}: {spec.target} ({result.duration:.1f}s, exit {result.returncode})")
    return True


def main(argv: list[str]) -> int:
    """Capture the names in ``argv`` (all when empty); exit 1 when any was not written."""
    names = argv or list(CAPTURES)
    unknown = [n for n in names if n not in CAPTURES]
    if unknown:
        print(f"unknown capture(s): {unknown}; known: {list(CAPTURES)}", file=sys.stderr)
        return 2
    results = [capture(n) for n in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
