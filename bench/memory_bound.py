"""Peak memory of ``rootrank diagnose`` on hostile inputs: the bound, measured.

The bound (stated here, asserted by ``tests/test_hostile.py``): one ``rootrank diagnose`` run
stays under **256 MiB** resident, whatever the input size. Why it holds: files are streamed in
blocks of ``ingest.BLOCK_BYTES`` (4 MiB) of whole lines; a physical line longer than
``ingest.MAX_LINE_BYTES`` (1 MiB) is read whole in pieces of that size; evidence is capped per finding
(``scan.MAX_EVIDENCE``), exceptions kept are capped (``scan.MAX_EXCEPTIONS``), a folder scan
stops at ``engine.MAX_FOLDER_FILES`` (10,000) files, and the masker cuts a string at
``mask.MAX_TEXT``. So memory = interpreter + library + one block + one line piece + bounded state.

Each case runs in a fresh child that reports its own ``ru_maxrss`` (Linux: KiB). The table
prints the peak, the input size and their ratio, and the peak relative to the smallest run
(the interpreter-plus-library baseline): a flat ratio across a 1000x range of input sizes is
what "bounded" means.

Usage::

    python bench/memory_bound.py            # full sizes (200 MB line, 10 million lines)
    python bench/memory_bound.py --quick    # 20 MB line, 1 million lines (CI-sized)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUND_MIB = 256
OOM = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_bytes()

WRAPPER = (
    "import resource, runpy, sys\n"
    "sys.argv = ['rootrank', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('rootrank', run_name='__main__')\n"
    "finally:\n"
    "    sys.stderr.write('\\n@@maxrss=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def run(*args: str) -> tuple[int, float, float]:
    """Run ``rootrank diagnose ARGS`` in a child: (exit code, peak MiB, seconds)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "diagnose", *args, "--format", "json"],
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    elapsed = time.perf_counter() - start
    tail = done.stderr.decode("utf-8", "replace").rpartition("@@maxrss=")[2]
    return done.returncode, int(tail.strip() or 0) / 1024, elapsed


def make_cases(tmp: Path, quick: bool) -> list[tuple[str, Path, int]]:
    """The inputs: (name, path, size in bytes)."""
    cases = []
    small = tmp / "small.log"
    small.write_bytes(OOM)
    cases.append(("small log (fixture)", small, small.stat().st_size))

    mib = 20 if quick else 200
    long_line = tmp / "long-line.log"
    with open(long_line, "wb") as fh:
        chunk = b"x" * (1 << 20)
        fh.writelines(chunk for _ in range(mib))
        fh.write(b"\n" + OOM)
    cases.append((f"one {mib} MB line", long_line, long_line.stat().st_size))

    n = 1_000_000 if quick else 10_000_000
    many = tmp / "many-lines.log"
    with open(many, "wb") as fh:
        block = b"".join(b"step %d loss 2.31\n" % i for i in range(100_000))
        fh.writelines(block for _ in range(n // 100_000))
        fh.write(OOM)
    cases.append((f"{n:,} short lines", many, many.stat().st_size))

    folder = tmp / "folder"
    folder.mkdir()
    files = 1_000 if quick else 10_000
    for i in range(files - 1):
        (folder / f"worker-{i:05d}.log").write_bytes(b"step %d loss 2.31\n" % i)
    (folder / "rank5.log").write_bytes(OOM)
    size = sum(p.stat().st_size for p in folder.iterdir())
    cases.append((f"folder of {files:,} files", folder, size))

    noisy = tmp / "noisy.log"
    with open(noisy, "wb") as fh:  # many matching lines: evidence and findings must stay capped
        line = OOM.splitlines(keepends=True)[8]
        fh.writelines(line for _ in range(50_000 if quick else 200_000))
    cases.append(("a failure line repeated", noisy, noisy.stat().st_size))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized inputs")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rootrank-bench-") as tmp:
        for name, path, size in make_cases(Path(tmp), args.quick):
            code, peak, secs = run(str(path))
            rows.append((name, size, code, peak, secs))
    base = rows[0][3] or 1.0
    print(
        f"{'input':28} {'size MiB':>9} {'exit':>4} {'peak MiB':>9} {'peak/base':>9} "
        f"{'MiB in/peak':>11} {'seconds':>8}"
    )
    worst = 0.0
    for name, size, code, peak, secs in rows:
        worst = max(worst, peak)
        print(
            f"{name:28} {size / 2**20:9.1f} {code:4d} {peak:9.1f} {peak / base:9.2f} "
            f"{size / 2**20 / max(peak, 1):11.2f} {secs:8.1f}"
        )
    verdict = "within" if worst < BOUND_MIB else "OVER"
    print(
        f"bound {BOUND_MIB} MiB: worst peak {worst:.1f} MiB ({worst / BOUND_MIB:.0%} of the bound), {verdict}"
    )
    return 0 if worst < BOUND_MIB else 1


if __name__ == "__main__":
    sys.exit(main())
