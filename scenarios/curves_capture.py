"""Run every training-curve scenario (``curves_train.py``) and save what a user would see.

Each mode runs under torchrun with ``--tee 3`` (lines carry ``[defaultN]:``), as described in
``curves_train.py``; the output is anonymized (see ``run.anonymize``) and written to
``<out>/curves-<mode>.log``. These runs are the source of the fixtures under
``signatures/training/`` and ``tests/curves/``::

    .venv/bin/python scenarios/curves_capture.py /tmp/curves            # every mode
    .venv/bin/python scenarios/curves_capture.py /tmp/curves straggler  # one mode
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import anonymize, run_scenario  # noqa: E402

#: mode -> (nproc, fault rank, script arguments, torchrun arguments)
MODES: dict[str, tuple[int, int, tuple[str, ...], tuple[str, ...]]] = {
    "healthy": (2, 1, ("--steps", "60"), ()),
    "lr-too-high": (2, 1, ("--steps", "60"), ()),
    "scale-collapse": (2, 1, ("--steps", "40"), ()),
    "bad-batch": (2, 1, ("--steps", "50", "--fault-step", "30"), ()),
    "straggler": (3, 2, ("--steps", "60", "--fault-step", "30"), ()),
    "slowdown": (2, 1, ("--steps", "60", "--fault-step", "30"), ()),
    "resume": (2, 1, ("--steps", "40"), ()),
}


def capture(mode: str, out: Path, python: str = sys.executable) -> tuple[Path, int | None]:
    """Run one mode; return the saved log's path and torchrun's (last) exit status (``None``: timed
    out)."""
    nproc, fault, args, launcher = MODES[mode]
    # "resume" is two jobs writing to one log (a requeued SLURM job with --open-mode=append):
    # the first fails after saving a checkpoint, the second resumes from it.
    attempts = [(), ("--resume",)] if mode == "resume" else [()]
    output, code = "", None
    with tempfile.TemporaryDirectory() as tmp:
        for extra in attempts:
            run = run_scenario(
                "curves_train",
                nproc=nproc,
                fault_rank=fault,
                tee="3",
                python=python,
                timeout=180.0,
                script_args=(
                    "--mode",
                    mode,
                    "--checkpoint",
                    str(Path(tmp) / "ckpt.pt"),
                    *args,
                    *extra,
                ),
                launcher_args=launcher,
            )
            output += run.output
            code = run.returncode
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"curves-{mode}.log"
    path.write_text(anonymize(output), encoding="utf-8")
    return path, code


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    for mode in argv[1:] or list(MODES):
        path, code = capture(mode, out)
        print(f"{mode}: exit {code} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
