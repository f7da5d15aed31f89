"""Masking cost: time per shown line, next to the cost of reading one log line.

The masker runs only on the lines a report shows (evidence, reasoning, report fields), never
on every log line (see ``rootrank.mask``). This prints, from one run: microseconds per masked
line over the seeded secret corpus (``tests/secrets/seeded.py``: env dumps, command lines,
configs, URLs, tracebacks), microseconds per line for ``rootrank diagnose`` of the same lines
repeated into a log, and their ratio (how many log lines cost as much as masking one shown line).

Usage::

    python bench/mask_bench.py            # seeded logs x 200
    python bench/mask_bench.py --repeat 50
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "secrets"))

import seeded

from rootrank.engine import diagnose_text
from rootrank.mask import Masker


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one table; returns the exit code (0)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="copies of the seeded lines")
    args = parser.parse_args(argv)
    lines = [ln for log in seeded.build(1) for ln in log.text.splitlines()] * args.repeat

    masker = Masker()
    start = time.perf_counter()
    for ln in lines:
        masker.text(ln)
    mask_s = time.perf_counter() - start

    text = "\n".join(lines) + "\n"
    start = time.perf_counter()
    diagnose_text(text, "seeded.log", mask=False)
    scan_s = time.perf_counter() - start

    per_mask = mask_s / len(lines) * 1e6
    per_scan = scan_s / len(lines) * 1e6
    print(f"lines                      {len(lines):>10,}")
    print(f"mask, us per shown line    {per_mask:>10.1f}")
    print(f"diagnose, us per log line  {per_scan:>10.1f}")
    print(f"ratio mask/diagnose        {per_mask / per_scan:>10.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
