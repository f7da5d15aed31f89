"""Language-server benchmark: time to first diagnostics and hover latency, next to the
CLI's time for the same file.

For each size, a realistic multi-rank log is generated with :mod:`gen_log` (same seed,
so the runs are comparable), then:

- ``cli``: wall time of ``python -m rootrank diagnose LOG --format json`` (a fresh process);
- ``lsp first diagnostics``: a fresh ``python -m rootrank.server`` over stdio (pytest-lsp's
  client), time from sending ``didOpen`` with the whole text to receiving
  ``publishDiagnostics`` (the document travels as JSON, as from a real editor);
- ``hover``: median and 95th percentile of 200 hovers on the root-cause line once analysed.

The root cause's line is checked against the generator's answer. Usage::

    python bench/lsp_bench.py                 # 1M and 50M
    python bench/lsp_bench.py --sizes 1M 5M
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_log import generate, parse_size

from rootrank.lsp.documents import split_lines

SERVER = [sys.executable, "-m", "rootrank.server"]


def editor_line(path: Path, physical_line: int) -> int:
    """The 0-based editor line of 1-based ``\\n``-line ``physical_line`` (editors also
    break lines at the lone ``\\r`` of progress bars)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    prefix = "\n".join(text.split("\n")[: physical_line - 1])
    return len(split_lines(prefix + "\n")) if physical_line > 1 else 0


def cli_seconds(path: Path, mask: bool) -> float:
    """Wall time of one CLI run on ``path`` (exit 0 or 1 both count as a result)."""
    start = time.perf_counter()
    extra = [] if mask else ["--no-mask"]
    run = subprocess.run(
        [sys.executable, "-m", "rootrank", "diagnose", str(path), "--format", "json", *extra],
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    try:
        json.loads(run.stdout)
    except ValueError:
        raise SystemExit(
            f"the CLI failed on {path}: {run.stderr.decode(errors='replace')[-2000:]}"
        ) from None
    return elapsed


async def lsp_figures(path: Path, expected_line: int, mask: bool) -> tuple[float, float, float]:
    """(seconds to first diagnostics, median hover ms, p95 hover ms)."""
    client = await ClientServerConfig(server_command=SERVER).start()
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(work_done_progress=True)
                ),
                root_uri=path.parent.as_uri(),
                initialization_options={"mask": mask},
            )
        )
        await asyncio.sleep(1.0)  # let the engine process start, as it does while an editor opens
        text = path.read_bytes().decode("utf-8", errors="replace")
        uri = path.as_uri()
        start = time.perf_counter()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="log", version=1, text=text
                )
            )
        )
        while uri not in client.diagnostics:
            await asyncio.sleep(0.005)
        first = time.perf_counter() - start
        errors = [
            d for d in client.diagnostics[uri] if d.severity == types.DiagnosticSeverity.Error
        ]
        if not errors:
            raise SystemExit(f"no root cause published for {path}")
        line = errors[0].range.start.line
        if line != expected_line:
            print(
                f"  warning: root cause on editor line {line}, the generator says {expected_line}",
                file=sys.stderr,
            )
        timings = []
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=1),
        )
        for _ in range(200):
            t0 = time.perf_counter()
            hover = await client.text_document_hover_async(params)
            timings.append((time.perf_counter() - t0) * 1000)
            assert hover is not None
        timings.sort()
        return first, statistics.median(timings), timings[int(len(timings) * 0.95) - 1]
    finally:
        await client.shutdown_session()
        await client.stop()


async def measure(path: Path, expected_line: int, mask: bool) -> tuple[float, float, float]:
    """:func:`lsp_figures`, then collect the client's transports while the loop still runs."""
    figures = await lsp_figures(path, expected_line, mask)
    gc.collect()
    await asyncio.sleep(0.1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["1M", "50M"], help="log sizes (K/M/G suffixes)"
    )
    parser.add_argument("--seed", type=int, default=1129)
    parser.add_argument("--no-mask", action="store_true", help="time both faces with masking off")
    args = parser.parse_args(argv)
    print(
        f"{'size':>6} {'cli s':>8} {'lsp first diag s':>17} {'ratio':>6} {'hover median ms':>16} {'hover p95 ms':>13}"
    )
    with tempfile.TemporaryDirectory(prefix="rootrank-lsp-bench-") as tmp:
        for size_text in args.sizes:
            path = Path(tmp) / f"train-{size_text}.log"
            meta = generate(str(path), parse_size(size_text), seed=args.seed)
            expected_line = editor_line(path, meta.oom_line)
            cli = cli_seconds(path, not args.no_mask)
            first, median, p95 = asyncio.run(measure(path, expected_line, not args.no_mask))
            print(
                f"{size_text:>6} {cli:8.2f} {first:17.2f} {first / cli:6.2f} {median:16.2f} {p95:13.2f}",
                flush=True,
            )
            os.unlink(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
