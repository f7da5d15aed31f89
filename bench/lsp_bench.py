"""Language-server benchmark: time to first diagnostics and hover latency, next to the
CLI's time for the same file.

For each size, a realistic multi-rank log is generated with :mod:`gen_log` (same seed,
so the runs are comparable), then:

- ``cli``: wall time of ``python -m rootrank diagnose LOG --format json`` (a fresh process);
- ``lsp first diagnostics``: a fresh ``python -m rootrank.server`` over stdio (pytest-lsp's
  client), time from sending ``didOpen`` with the whole text to receiving
  ``publishDiagnostics`` (the document travels as JSON, as from a real editor);
- ``hover``: median and 95th percentile of 200 hovers on the root-cause line once analysed;
- the number of diagnostics published, and the server process's CPU seconds and peak RSS
  (MiB) after the hovers (from ``/proc``; the engine runs in child processes, not counted).

The root cause's line is checked against the generator's answer. Usage::

    python bench/lsp_bench.py                 # 1M and 50M
    python bench/lsp_bench.py --sizes 1M 5M
    python bench/lsp_bench.py --sizes 50M --ranks 1024   # 4 collateral signatures x 1,023 ranks
    python bench/lsp_bench.py --log my.log    # a log of your own (no expected line)

Bad input fails at once, with one line on stderr: an unknown size or a missing ``--log``
file exit 2 before anything runs; a language server that exits, or that does not answer
within ``--timeout`` seconds (initialisation, first diagnostics, each hover), exit 1 with
the server's exit code, and the server is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_log import generate, parse_size

from rootrank.lsp.documents import split_lines

SERVER = [sys.executable, "-m", "rootrank.server"]


class BenchError(RuntimeError):
    """The language server exited or did not answer in time (``str(e)`` says which)."""


async def _guarded(client: Any, awaitable: Any, what: str, timeout: float) -> Any:
    """``await awaitable``, but raise :class:`BenchError` as soon as the server process has
    exited or ``timeout`` seconds have passed (a dead server never answers a request)."""
    task = asyncio.ensure_future(awaitable)
    deadline = time.monotonic() + timeout
    try:
        while not task.done():
            server = getattr(client, "_server", None)
            if server is not None and server.returncode is not None:
                raise BenchError(
                    f"the language server exited (code {server.returncode}) before {what}"
                )
            if time.monotonic() > deadline:
                raise BenchError(f"no {what} from the language server within {timeout:g} s")
            await asyncio.wait({task}, timeout=0.05)
        try:
            return task.result()
        except RuntimeError as exc:  # pytest-lsp: "Server process N exited with return code: C"
            raise BenchError(f"{exc} (before {what})") from None
    finally:
        if not task.done():
            task.cancel()


async def _diagnostics_of(client: Any, uri: str) -> None:
    while uri not in client.diagnostics:
        await asyncio.sleep(0.005)


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


def _proc_figures(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of the live process ``pid`` so far, from ``/proc`` (its
    own user + system time, children not counted; ``VmHWM``); ``(nan, nan)`` off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        status = Path(f"/proc/{pid}/status").read_text()
        peak = next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmHWM:"))
    except (OSError, StopIteration, IndexError, ValueError):
        return float("nan"), float("nan")
    return cpu, peak / 1024


async def lsp_figures(
    path: Path, expected_line: int | None, mask: bool, timeout: float
) -> tuple[float, float, float, int, float, float]:
    """(seconds to first diagnostics, median hover ms, p95 hover ms, diagnostics published,
    the server process's CPU seconds and peak RSS MiB after the hovers; its engine workers
    are child processes, not counted).

    Raises:
        BenchError: the server exited, or did not answer within ``timeout`` seconds.
    """
    client = await ClientServerConfig(server_command=SERVER).start()
    failed = True
    try:
        await _guarded(
            client,
            client.initialize_session(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(
                        window=types.WindowClientCapabilities(work_done_progress=True)
                    ),
                    root_uri=path.parent.as_uri(),
                    initialization_options={"mask": mask},
                )
            ),
            "answer to initialize",
            timeout,
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
        await _guarded(client, _diagnostics_of(client, uri), "diagnostics", timeout)
        first = time.perf_counter() - start
        errors = [
            d for d in client.diagnostics[uri] if d.severity == types.DiagnosticSeverity.Error
        ]
        if not errors:
            raise BenchError(f"no root cause published for {path}")
        line = errors[0].range.start.line
        if expected_line is not None and line != expected_line:
            print(
                f"  warning: root cause on editor line {line}, the generator says {expected_line}",
                file=sys.stderr,
            )
        timings = []
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=1),
        )
        server = getattr(client, "_server", None)
        for _ in range(200):
            t0 = time.perf_counter()
            hover = await _guarded(
                client, client.text_document_hover_async(params), "hover", timeout
            )
            timings.append((time.perf_counter() - t0) * 1000)
            if hover is None:
                raise BenchError(f"no hover on the root cause's line {line}")
        timings.sort()
        failed = False
        cpu, peak = _proc_figures(server.pid) if server is not None else (math.nan, math.nan)
        return (
            first,
            statistics.median(timings),
            timings[int(len(timings) * 0.95) - 1],
            len(client.diagnostics[uri]),
            cpu,
            peak,
        )
    finally:
        server = getattr(client, "_server", None)
        try:
            if not failed and server is not None and server.returncode is None:
                await asyncio.wait_for(client.shutdown_session(), 10)
        except (asyncio.TimeoutError, RuntimeError):
            pass
        finally:
            if server is not None and server.returncode is None:
                server.kill()
            await client.stop()


async def measure(
    path: Path, expected_line: int | None, mask: bool, timeout: float
) -> tuple[float, float, float, int, float, float]:
    """:func:`lsp_figures`, then collect the client's transports while the loop still runs."""
    figures = await lsp_figures(path, expected_line, mask, timeout)
    gc.collect()
    await asyncio.sleep(0.1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        type=_size,
        default=[_size("1M"), _size("50M")],
        help="log sizes (K/M/G suffixes)",
    )
    parser.add_argument("--log", type=Path, help="time this log instead of generated ones")
    parser.add_argument("--seed", type=int, default=1129)
    parser.add_argument(
        "--ranks", type=int, default=16, help="world size of the generated logs (8..1024)"
    )
    parser.add_argument("--no-mask", action="store_true", help="time both faces with masking off")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="pairs of runs (CLI, server; order alternating): the medians are printed",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds the server may take to answer (initialize, diagnostics, a hover)",
    )
    args = parser.parse_args(argv)
    if args.log is not None and not args.log.is_file():
        parser.error(f"--log {args.log}: no such file")
    if not args.timeout > 0:
        parser.error(f"--timeout {args.timeout:g}: must be more than 0 seconds")
    if not 8 <= args.ranks <= 1024:
        parser.error(f"--ranks {args.ranks}: must be 8 to 1024")
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: must be at least 1")
    try:
        return _run(args)
    except BenchError as exc:
        print(f"lsp_bench: {exc}", file=sys.stderr)
        return 1


def _size(text: str) -> tuple[str, int]:
    """``--sizes`` item: (as written, bytes); raises ArgumentTypeError (gen_log.parse_size)."""
    return text, parse_size(text)


def _pairs(path: Path, expected_line: int | None, args: argparse.Namespace) -> tuple[float, ...]:
    """Medians over ``--repeat`` pairs of runs (CLI first in odd pairs, the server first in
    even ones, so a load swing hits both): (CLI s, first diagnostics s, hover median ms,
    hover p95 ms, the per-pair ratio server / CLI, diagnostics published, the server
    process's CPU s and peak RSS MiB)."""
    cli_runs, lsp_runs, ratios = [], [], []
    for i in range(args.repeat):
        if i % 2:
            lsp = asyncio.run(measure(path, expected_line, not args.no_mask, args.timeout))
            cli = cli_seconds(path, not args.no_mask)
        else:
            cli = cli_seconds(path, not args.no_mask)
            lsp = asyncio.run(measure(path, expected_line, not args.no_mask, args.timeout))
        cli_runs.append(cli)
        lsp_runs.append(lsp)
        ratios.append(lsp[0] / cli)
    return (
        statistics.median(cli_runs),
        statistics.median(r[0] for r in lsp_runs),
        statistics.median(r[1] for r in lsp_runs),
        statistics.median(r[2] for r in lsp_runs),
        statistics.median(ratios),
        statistics.median(r[3] for r in lsp_runs),
        statistics.median(r[4] for r in lsp_runs),
        statistics.median(r[5] for r in lsp_runs),
    )


def _row(size: str, figures: tuple[float, ...]) -> str:
    cli, first, median, p95, ratio, published, cpu, peak = figures
    return (
        f"{size:>6} {cli:8.2f} {first:17.2f} {ratio:6.2f} {median:16.2f} {p95:13.2f}"
        f" {published:>11.0f} {cpu:13.2f} {peak:15.0f}"
    )


def _run(args: argparse.Namespace) -> int:
    print(
        f"{'size':>6} {'cli s':>8} {'lsp first diag s':>17} {'ratio':>6} {'hover median ms':>16} {'hover p95 ms':>13}"
        f" {'diagnostics':>11} {'server cpu s':>13} {'server peak MiB':>15}"
        + (f"   (medians of {args.repeat} pairs)" if args.repeat > 1 else "")
    )
    if args.log is not None:
        size = f"{args.log.stat().st_size / 1e6:.0f}MB"
        print(_row(size, _pairs(args.log, None, args)))
        return 0
    with tempfile.TemporaryDirectory(prefix="rootrank-lsp-bench-") as tmp:
        for size_text, size in args.sizes:
            path = Path(tmp) / f"train-{size_text}.log"
            meta = generate(str(path), size, seed=args.seed, world=args.ranks)
            expected_line = editor_line(path, meta.oom_line)
            print(_row(size_text, _pairs(path, expected_line, args)), flush=True)
            os.unlink(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
