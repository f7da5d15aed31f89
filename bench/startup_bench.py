"""Start-up cost: ``rootrank diagnose`` on a tiny log next to ``python -c pass``, in one run.

The terminal and the editor call rootrank on every failed command, so its start is the
latency users feel most (issue 11: within 6x of the bare interpreter's start). One run
interleaves the two commands ``--runs`` times each (pass, diagnose, pass, diagnose...: a
load swing hits both alike) and prints the medians of wall and CPU seconds (user + system
of the child process, from ``os.wait4``) and their ratios. The CPU ratio is the figure to
compare across runs: on a shared machine the wall time also counts waiting for a core.

Both commands run with the same interpreter (``--python``, default this one) and the same
environment: ``server/`` of this checkout first on ``PYTHONPATH`` (the engine measured is
this checkout's, or ``--pythonpath DIR``'s), and bytecode in a temporary
``PYTHONPYCACHEPREFIX`` filled by two warm-up runs of each command and removed at the end,
as an installed package has its ``.pyc`` files (pip compiles them at install); without
that, a ``PYTHONDONTWRITEBYTECODE=1`` shell would time the compilation of every module.

The tiny log (unless ``--log FILE``) is three lines of a rank-0 CUDA OOM traceback; the
diagnosis must succeed (exit 0) on every run.

``--before DIR`` (the ``server/`` folder of another copy of the engine, e.g. an older commit's
``git archive``) runs that engine's ``rootrank diagnose`` as a third command in the same
interleaved rounds, so a change's before and after are measured under the same load.

Usage::

    python bench/startup_bench.py                 # 20 runs of each
    python bench/startup_bench.py --runs 50 --target 6
    python bench/startup_bench.py --log my.log --python .venv/bin/python
    python bench/startup_bench.py --before /tmp/old/server   # an older engine, interleaved

Exit status: 0 measured (and within ``--target`` when ``--fail-above-target`` is given),
1 rootrank failed or the ratio is above the target with ``--fail-above-target``, 2 bad
arguments (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TINY_LOG = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "train.py", line 3, in <module>\n'
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, bytes]:
    """Run ``cmd``; returns (wall s, CPU s of the child, exit code, stderr)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode, err


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table; returns the exit status."""
    parser = argparse.ArgumentParser(
        description="rootrank diagnose on a tiny log next to python -c pass (medians, ratios)."
    )
    parser.add_argument("--runs", type=_positive_int, default=20, help="timed runs of each")
    parser.add_argument("--log", type=Path, help="the log to diagnose (default: a 3-line OOM)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of both")
    parser.add_argument(
        "--pythonpath", type=Path, default=ROOT / "server", help="where rootrank is imported from"
    )
    parser.add_argument(
        "--before", type=Path, help="another engine's server/ folder, timed in the same rounds"
    )
    parser.add_argument(
        "--target", type=_positive_float, default=6.0, help="the ratio to meet (default 6)"
    )
    parser.add_argument(
        "--fail-above-target", action="store_true", help="exit 1 when the CPU ratio is above"
    )
    args = parser.parse_args(argv)
    if args.log is not None and not args.log.is_file():
        parser.error(f"--log {args.log}: no such file")
    for flag, folder in (("--pythonpath", args.pythonpath), ("--before", args.before)):
        if folder is not None and not (folder / "rootrank" / "__init__.py").is_file():
            parser.error(f"{flag} {folder}: no rootrank package in it")
    if shutil.which(args.python) is None and not Path(args.python).is_file():
        parser.error(f"--python {args.python}: no such interpreter")

    with tempfile.TemporaryDirectory(prefix="rootrank-startup-") as tmp:
        log = args.log or Path(tmp) / "tiny.log"
        if args.log is None:
            log.write_text(TINY_LOG, encoding="utf-8")
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        env["NO_COLOR"] = "1"

        def with_engine(folder: Path) -> dict[str, str]:
            path = [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
            return {**env, "PYTHONPATH": os.pathsep.join(path)}

        bare = [args.python, "-c", "pass"]
        diagnose = [args.python, "-m", "rootrank", "diagnose", str(log)]
        here = with_engine(args.pythonpath)
        commands = [("pass", bare, here), ("diagnose", diagnose, here)]
        if args.before is not None:
            commands.append(("before", diagnose, with_engine(args.before)))

        for _ in range(2):  # warm-up: bytecode into the prefix, files into the page cache
            for name, cmd, cmd_env in commands:
                _, _, code, err = _run(cmd, cmd_env)
                if code != 0:
                    print(
                        f"startup_bench: {name}: {' '.join(cmd)} exited {code} (0 expected):\n"
                        + err.decode(errors="replace").strip(),
                        file=sys.stderr,
                    )
                    return 1
                if b"note: the built signature library" in err:
                    print(
                        f"startup_bench: {name}: the built library is missing or stale, so this "
                        "measures the YAML path: " + err.decode(errors="replace").strip(),
                        file=sys.stderr,
                    )

        samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in commands}
        for i in range(args.runs):
            # each command first in turn (pass, diagnose, before; diagnose, before, pass...)
            shift = i % len(commands)
            for name, cmd, cmd_env in commands[shift:] + commands[:shift]:
                wall, cpu, code, err = _run(cmd, cmd_env)
                if code != 0:
                    print(
                        f"startup_bench: {' '.join(cmd)} exited {code}:\n"
                        + err.decode(errors="replace").strip(),
                        file=sys.stderr,
                    )
                    return 1
                samples[name].append((wall, cpu))

    med = {
        name: (
            statistics.median(w for w, _ in runs),
            statistics.median(c for _, c in runs),
        )
        for name, runs in samples.items()
    }
    wall_ratio = med["diagnose"][0] / med["pass"][0]
    cpu_ratio = med["diagnose"][1] / max(med["pass"][1], 1e-4)
    print(f"python             {args.python} ({args.runs} runs of each, interleaved)")
    print(f"log                {log if args.log else 'tiny OOM log, 3 lines'}")
    print(f"{'':24s}{'wall ms':>10s}{'CPU ms':>10s}")
    print(f"{'python -c pass':24s}{med['pass'][0] * 1e3:>10.1f}{med['pass'][1] * 1e3:>10.1f}")
    print(
        f"{'rootrank diagnose':24s}{med['diagnose'][0] * 1e3:>10.1f}"
        f"{med['diagnose'][1] * 1e3:>10.1f}"
    )
    print(f"{'ratio':24s}{wall_ratio:>9.1f}x{cpu_ratio:>9.1f}x")
    if "before" in med:
        before_wall, before_cpu = med["before"]
        print(f"{'diagnose (--before)':24s}{before_wall * 1e3:>10.1f}{before_cpu * 1e3:>10.1f}")
        print(
            f"{'ratio (--before)':24s}{before_wall / med['pass'][0]:>9.1f}x"
            f"{before_cpu / max(med['pass'][1], 1e-4):>9.1f}x"
        )
    met = cpu_ratio <= args.target
    print(f"target             CPU ratio <= {args.target:g}x: {'met' if met else 'NOT met'}")
    return 1 if args.fail_above_target and not met else 0


if __name__ == "__main__":
    raise SystemExit(main())
