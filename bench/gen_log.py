"""Generate a large, realistic multi-rank PyTorch training log for the scan benchmark.

The log is what ``torchrun ... 2>&1 | tee train.log`` leaves behind on a multi-node job,
written as PyTorch, NCCL, tqdm and the Python logging module print it:

- torchrun's ``OMP_NUM_THREADS`` banner (glog lines of the launcher, no rank prefix);
- NCCL ``INFO`` init chatter per rank, bare (NCCL prints to stdout, which torchrun does not
  prefix): ``node01:4118:4118 [0] NCCL INFO ...`` and ``comm 0x... rank R nranks N cudaDev D``
  lines that bind each (host, pid) to its rank; more chatter when subgroups are created;
- ``[rankN]:``-prefixed stderr lines: Python logging step/loss lines, glog-style c10d
  warnings (``[rank3]:[W1129 10:01:58.102000 reducer.cpp:1400] Warning: ...``) and harmless
  ``FutureWarning``/``UserWarning`` lines with their source line under them;
- bare rank-0 stdout lines: HF-Trainer style ``{'loss': ...}`` dicts and ANSI-coloured
  (loguru-style) log lines;
- tqdm progress bars: many ``\\r``-separated frames on one physical line;
- near the end, the failure: rank ``--fail-rank`` raises ``torch.OutOfMemoryError`` (full
  traceback, ``[rankN]:`` prefixed), the NCCL proxy threads on its node report the closed
  connection, its node's elastic agent SIGTERMs the siblings and prints the torchelastic
  failure summary, and ten minutes later every rank on the other nodes hits the NCCL
  watchdog timeout (``Watchdog caught collective operation timeout: WorkNCCL(...)``) and
  aborts (``terminate called after throwing an instance of 'c10::DistBackendError'``).

The output is deterministic for a given ``--seed``/``--size``/``--ranks``. It is streamed to
disk in blocks of about 1 MiB (memory stays small whatever the size). A JSON side file
``<out>.meta.json`` records what the right diagnosis is (``failure_class``, ``rank``,
``host``, the 1-based ``oom_line``, the ranks that time out) for :mod:`scan_bench` to check.

Usage::

    python bench/gen_log.py                      # 512 MiB -> bench/.data/train-512M.log
    python bench/gen_log.py --gb                 # 1 GiB
    python bench/gen_log.py --size 50M --out /tmp/x.log --ranks 32 --seed 7
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import re
import sys
from dataclasses import asdict, dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, ".data")

#: Bumped whenever the output for a given seed and size changes (cached logs are redone).
GENERATOR_VERSION = 2
#: The largest world size generated (the issue-11 benchmark's 1,024 ranks).
MAX_WORLD = 1024
#: GPUs per node (ranks are laid out node by node, as torchrun does with --nnodes).
GPUS_PER_NODE = 8
#: Bytes kept in memory before a write (the generator never holds more than this plus a line).
FLUSH_BYTES = 1 << 20
#: Bytes reserved at the end of the file for the failure (traceback, timeouts, summaries).
TAIL_RESERVE = 64 * 1024

_ESC = "\x1b"
#: Time zero of the simulated run's clock (glog prints no year; the others do).
_EPOCH = _dt.datetime(2026, 11, 29)


@dataclass
class Meta:
    """What the generated log contains; written next to it as ``<out>.meta.json``.

    ``oom_line`` is the 1-based line of the ``torch.OutOfMemoryError`` line;
    ``timeout_ranks`` are the ranks that print the NCCL watchdog timeout.
    """

    path: str
    seed: int
    size_bytes: int
    version: int
    lines: int
    world_size: int
    nodes: int
    failure_class: str
    signature: str
    rank: int
    host: str
    oom_line: int
    timeout_ranks: list[int] = field(default_factory=list)
    sigterm_ranks: list[int] = field(default_factory=list)


def parse_size(text: str) -> int:
    """Parse ``512M``, ``1G``, ``300000K`` or a plain byte count into bytes (binary units).

    Raises:
        argparse.ArgumentTypeError: the text is not a positive size.
    """
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = 1
    if t and t[-1] in units:
        mult = units[t[-1]]
        t = t[:-1]
    try:
        value = int(float(t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512M or 1G)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text!r}")
    return value


class Clock:
    """A run's wall clock in seconds since :data:`_EPOCH`, printed the ways PyTorch does (days roll over)."""

    def __init__(self, start: float) -> None:
        self.t = start

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def _parts(self) -> tuple[_dt.datetime, int]:
        stamp = _EPOCH + _dt.timedelta(seconds=int(self.t))
        return stamp, int((self.t - int(self.t)) * 1_000_000)

    def glog(self, level: str) -> str:
        """``W1129 10:01:58.102000`` (glog: level, month, day, time, microseconds)."""
        d, us = self._parts()
        return (
            f"{level}{d.month:02d}{d.day:02d} {d.hour:02d}:{d.minute:02d}:{d.second:02d}.{us:06d}"
        )

    def logging(self) -> str:
        """``2026-11-29 10:01:58,102`` (Python logging's default ``asctime``)."""
        d, us = self._parts()
        return f"{d.year}-{d.month:02d}-{d.day:02d} {d.hour:02d}:{d.minute:02d}:{d.second:02d},{us // 1000:03d}"

    def elastic(self) -> str:
        """``2026-11-29_10:01:58`` (torchelastic's failure summary)."""
        d, _ = self._parts()
        return f"{d.year}-{d.month:02d}-{d.day:02d}_{d.hour:02d}:{d.minute:02d}:{d.second:02d}"


_RANK_PREFIX = re.compile(r"(?m)^\[rank(\d+)\]:")


class Writer:
    """Buffers lines and writes them in ~1 MiB blocks; counts physical lines and bytes."""

    def __init__(self, fh, stacked: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.fh = fh
        self.stacked = stacked
        self.buf: list[str] = []
        self.pending = 0
        self.lines = 0
        self.bytes = 0

    def line(self, text: str) -> int:
        """Queue one physical line (no newline in ``text``); returns its 1-based number."""
        self.buf.append(text)
        self.pending += len(text) + 1
        self.lines += 1
        if self.pending >= FLUSH_BYTES:
            self.flush()
        return self.lines

    def flush(self) -> None:
        if self.buf:
            text = "\n".join(self.buf) + "\n"
            if self.stacked:  # torchrun --tee's local tag before torch's rank prefix
                text = _RANK_PREFIX.sub(
                    lambda m: f"[default{int(m[1]) % GPUS_PER_NODE}]:{m[0]}", text
                )
            data = text.encode("utf-8")
            self.fh.write(data)
            self.bytes += len(data)
            self.buf.clear()
            self.pending = 0

    def size(self) -> int:
        """Bytes written so far, counting the queued characters as one byte each."""
        return self.bytes + self.pending


class Job:
    """The simulated job: ranks, hosts, pids and the NCCL communicators."""

    def __init__(self, rng: random.Random, world: int) -> None:
        self.rng = rng
        self.world = world
        self.nodes = (world + GPUS_PER_NODE - 1) // GPUS_PER_NODE
        self.hosts = [f"node{n + 1:02d}" for n in range(self.nodes)]
        self.agent_pid = [rng.randrange(2000, 60000) for _ in range(self.nodes)]
        self.pid = [
            self.agent_pid[r // GPUS_PER_NODE] + 16 + (r % GPUS_PER_NODE) for r in range(world)
        ]
        self.ip = [f"10.1.{n}.{10 + n}" for n in range(self.nodes)]

    def host(self, rank: int) -> str:
        return self.hosts[rank // GPUS_PER_NODE]

    def dev(self, rank: int) -> int:
        return rank % GPUS_PER_NODE

    def nccl(self, rank: int, tid: int | None = None) -> str:
        """NCCL's line header ``host:pid:tid [cudaDev] NCCL INFO``."""
        pid = self.pid[rank]
        return f"{self.host(rank)}:{pid}:{pid if tid is None else tid} [{self.dev(rank)}] NCCL INFO"


def launcher_banner(w: Writer, job: Job, clock: Clock) -> None:
    for node in range(job.nodes):
        stamp = f"{clock.glog('W')} {job.agent_pid[node]} torch/distributed/run.py:793]"
        w.line(f"{stamp} ")
        w.line(f"{stamp} *****************************************")
        w.line(
            f"{stamp} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
            "your system being overloaded, please further tune the variable for optimal performance in your "
            "application as needed. "
        )
        w.line(f"{stamp} *****************************************")
        clock.advance(0.013)


def nccl_init(w: Writer, job: Job, clock: Clock, comm_ranks: list[int], tag: str) -> None:
    """The INFO chatter of one communicator's init, one block per member rank."""
    rng = job.rng
    n = len(comm_ranks)
    comm_id = f"0x{rng.getrandbits(64):016x}"
    for i, r in enumerate(comm_ranks):
        h = job.nccl(r)
        if tag == "world" and i == 0:
            w.line(f"{h} Bootstrap : Using eth0:{job.ip[r // GPUS_PER_NODE]}<0>")
            w.line(f"{h} NET/Plugin: No plugin found (libnccl-net.so)")
            w.line(f"{h} cudaDriverVersion 12040")
            w.line(
                f"{job.host(r)}:{job.pid[r]}:{job.pid[r]} [{job.dev(r)}] NCCL version 2.21.5+cuda12.4"
            )
        if tag == "world":
            w.line(f"{h} NET/IB : No device found.")
            w.line(f"{h} NET/Socket : Using [0]eth0:{job.ip[r // GPUS_PER_NODE]}<0>")
            w.line(f"{h} Using non-device net plugin version 0")
            w.line(f"{h} Using network Socket")
        comm = f"0x{rng.getrandbits(44):x}"
        bus = f"{0x18 + 0x10 * job.dev(r):x}000"
        w.line(
            f"{h} ncclCommInitRank comm {comm} rank {i} nranks {n} cudaDev {job.dev(r)} nvmlDev {job.dev(r)} "
            f"busId {bus} commId {comm_id} - Init START"
        )
        w.line(f"{h} Setting affinity for GPU {job.dev(r)} to ffffffff,00000000,ffffffff")
        if i == 0:
            for ch in range(rng.choice((2, 4, 8))):
                w.line(f"{h} Channel {ch:02d}/{8:02d} :    " + " ".join(str(k) for k in range(n)))
        w.line(
            f"{h} Trees [0] {(i + 1) % n}/-1/-1->{i}->{(i - 1) % n} [1] {(i + 1) % n}/-1/-1->{i}->{(i - 1) % n}"
        )
        w.line(f"{h} P2P Chunksize set to 524288")
        for ch in range(2):
            w.line(
                f"{h} Channel {ch:02d}/0 : {i}[{job.dev(r)}] -> {(i + 1) % n}[{job.dev(comm_ranks[(i + 1) % n])}] via P2P/CUMEM/read"
            )
        w.line(f"{h} Connected all rings")
        w.line(f"{h} Connected all trees")
        w.line(f"{h} threadThresholds 8/8/64 | 64/8/64 | 512 | 512")
        w.line(
            f"{h} 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer"
        )
        w.line(
            f"{h} ncclCommInitRank comm {comm} rank {i} nranks {n} cudaDev {job.dev(r)} nvmlDev {job.dev(r)} "
            f"busId {bus} commId {comm_id} - Init COMPLETE"
        )
        clock.advance(0.0007)


# Harmless warnings that real jobs print (prefix added per rank).
_GLOG_WARNINGS = (
    (
        "reducer.cpp:1400] Warning: find_unused_parameters=True was specified in DDP constructor, but did "
        "not find any unused parameters in the forward pass. This flag results in an extra traversal of the "
        "autograd graph every iteration,  which can adversely affect performance. If your model indeed never "
        "has any unused parameters in the forward pass, consider turning this flag off. Note that this warning "
        "may be a false positive if your model has flow control causing later iterations to have unused "
        "parameters. (function operator())"
    ),
    (
        "ProcessGroupNCCL.cpp:4215] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this "
        "environment variable is thus deprecated. (function operator())"
    ),
    "CUDAGuardImpl.h:119] Warning: CUDA warning: driver shutting down (function uncheckedSetDevice)",
    (
        "Utils.hpp:164] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function operator())"
    ),
)
_PY_WARNINGS = (
    (
        (
            "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: "
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` "
            "instead."
        ),
        "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  # type: ignore[attr-defined]",
    ),
    (
        (
            "/home/user/proj/data.py:57: UserWarning: To copy construct from a tensor, it is recommended to use "
            "sourceTensor.clone().detach() or sourceTensor.clone().detach().requires_grad_(True), rather than "
            "torch.tensor(sourceTensor)."
        ),
        '  labels = torch.tensor(batch["labels"])',
    ),
    (
        (
            "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py:825: UserWarning: c10d::allreduce_: an "
            "autograd kernel was not registered to the Autograd key(s) but we are trying to backprop through it. "
            "This may lead to silently incorrect behavior. (Triggered internally at "
            "../torch/csrc/autograd/autograd_not_implemented_fallback.cpp:63.)"
        ),
        "  return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass",
    ),
)


def tqdm_line(rng: random.Random, step0: int, total: int, frames: int, desc: str) -> str:
    """One physical line holding ``frames`` tqdm redraws separated by ``\\r``."""
    parts = []
    for k in range(frames):
        i = min(total, step0 + k)
        pct = i * 100 // total
        fill = pct * 40 // 100
        bar = (
            "█" * fill
            + ("▌" if pct % 2 else " ") * (1 if fill < 40 else 0)
            + " " * max(0, 39 - fill)
        )
        rate = 1.2 + rng.random() * 0.4
        left = int((total - i) / rate)
        parts.append(
            f"{desc}: {pct:3d}%|{bar}| {i}/{total} [{i // 60:02d}:{i % 60:02d}<{left // 3600:02d}:{left // 60 % 60:02d}:{left % 60:02d}, {rate:.2f}it/s]"
        )
    return "\r".join(parts)


def body(w: Writer, job: Job, clock: Clock, target: int) -> int:
    """Training chatter until ``target`` bytes; returns the last step number."""
    rng = job.rng
    world = job.world
    step = 0
    loss = 10.5
    lr = 3e-4
    choices = rng.choices
    while w.size() < target:
        step += 1
        clock.advance(0.35 + rng.random() * 0.05)
        loss = max(0.8, loss * 0.99997 + (rng.random() - 0.5) * 0.02)
        kind = choices(range(9), weights=(34, 14, 12, 10, 8, 6, 0.05, 5, 5))[0]
        if kind == 0:
            # Every rank logs its step (Python logging on stderr, so torchrun prefixes it).
            ts = clock.logging()
            for r in range(world):
                w.line(
                    f"[rank{r}]: {ts} - train - INFO - step {step} | loss {loss + (rng.random() - 0.5) * 0.05:.4f} | "
                    f"lr {lr:.3e} | grad_norm {0.5 + rng.random():.3f} | tokens/s {rng.randrange(90000, 130000)} | "
                    f"mem {60 + rng.random() * 8:.2f}GiB"
                )
        elif kind == 1:
            w.line(
                f"{{'loss': {loss:.4f}, 'grad_norm': {0.5 + rng.random():.4f}, 'learning_rate': {lr:.4e}, "
                f"'epoch': {step / 5000:.2f}}}"
            )
        elif kind == 2:
            frames = rng.randrange(5, 30)
            desc = "Training" if rng.random() < 0.8 else "Evaluating"
            line = tqdm_line(rng, step % 5000, 5000, frames, desc)
            w.line(line if rng.random() < 0.5 else f"[rank0]:{line}")
        elif kind == 3:
            # loguru-style coloured line (rank 0 prints to stdout: no prefix).
            w.line(
                f"{_ESC}[32m{clock.logging()[:19]}{_ESC}[0m | {_ESC}[1mINFO    {_ESC}[0m | "
                f"{_ESC}[36mtrainer{_ESC}[0m:{_ESC}[36mlog_metrics{_ESC}[0m:{_ESC}[36m212{_ESC}[0m - "
                f"{_ESC}[1mstep={step} loss={loss:.4f} ppl={2.718281828 ** min(loss, 20):.2f} "
                f"throughput={rng.randrange(900, 1300)} samples/s{_ESC}[0m"
            )
        elif kind == 4:
            r = rng.randrange(world)
            w.line(f"[rank{r}]:[{clock.glog('W')} {rng.choice(_GLOG_WARNINGS)}")
        elif kind == 5:
            r = rng.randrange(world)
            first, second = rng.choice(_PY_WARNINGS)
            w.line(f"[rank{r}]: {first}")
            w.line(f"[rank{r}]: {second}")
        elif kind == 6:
            # Rarely, a new subgroup communicator mid-run (an eval group): NCCL chatter.
            size = rng.choice((2, 4, 8))
            start = rng.randrange(0, world - size + 1)
            nccl_init(w, job, clock, list(range(start, start + size)), "sub")
        elif kind == 7:
            r = rng.randrange(world)
            w.line(
                f"[rank{r}]: {clock.logging()} - dataloader - INFO - epoch {step // 5000} shard "
                f"{rng.randrange(1024):04d}/1024 loaded {rng.randrange(40000, 60000)} samples in "
                f"{rng.random() * 3:.2f}s (num_workers=8, prefetch_factor=2)"
            )
        else:
            w.line(
                f"Saving model checkpoint to /ckpt/run7/checkpoint-{step}"
                if rng.random() < 0.1
                else f"{clock.logging()} - eval - INFO - eval step {step}: val_loss={loss + 0.1:.4f} "
                f"max_memory_allocated={58 + rng.random() * 6:.2f}GiB max_memory_reserved={66 + rng.random() * 6:.2f}GiB"
            )
    return step


def failure(w: Writer, job: Job, clock: Clock, fail_rank: int, step: int) -> Meta:
    """The real failure: OOM on ``fail_rank``, then the collateral, as PyTorch prints it."""
    rng = job.rng
    p = f"[rank{fail_rank}]:"
    fail_node = fail_rank // GPUS_PER_NODE
    seq = step * 3 + 17
    clock.advance(0.2)
    w.line(f"{p} Traceback (most recent call last):")
    frames = (
        ("/home/user/proj/train.py", 311, "<module>", "main()"),
        (
            "/home/user/proj/train.py",
            287,
            "main",
            "loss = train_step(model, batch, optimizer, scaler)",
        ),
        ("/home/user/proj/train.py", 142, "train_step", "out = model(**batch)"),
        (
            "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
            1736,
            "_wrapped_call_impl",
            "return self._call_impl(*args, **kwargs)",
        ),
        (
            "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
            1747,
            "_call_impl",
            "return forward_call(*args, **kwargs)",
        ),
        (
            "/opt/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py",
            1643,
            "forward",
            "else self._run_ddp_forward(*inputs, **kwargs)",
        ),
        (
            "/home/user/proj/model.py",
            96,
            "forward",
            "attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
        ),
    )
    for file, line, func, code in frames:
        w.line(f'{p}   File "{file}", line {line}, in {func}')
        w.line(f"{p}     {code}")
    oom_line = w.line(
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU {job.dev(fail_rank)} has a "
        "total capacity of 79.14 GiB of which 1.70 GiB is free. Including non-PyTorch memory, this process has "
        "77.43 GiB memory in use. Of the allocated memory 68.91 GiB is allocated by PyTorch, and 8.02 GiB is "
        "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    # The NCCL proxy threads of the dead rank's node-mates notice the closed connection.
    siblings = [
        r
        for r in range(fail_node * GPUS_PER_NODE, min(job.world, (fail_node + 1) * GPUS_PER_NODE))
        if r != fail_rank
    ]
    clock.advance(0.4)
    for r in siblings:
        w.line(
            f"{job.nccl(r, job.pid[r] + 40)} [Service thread] Connection closed by localRank {job.dev(fail_rank)}"
        )
    # Its elastic agent kills the siblings and reports.
    clock.advance(0.6)
    agent = f"{job.agent_pid[fail_node]} torch/distributed/elastic/multiprocessing/api.py"
    for r in siblings:
        w.line(
            f"{clock.glog('W')} {agent}:897] Sending process {job.pid[r]} closing signal SIGTERM"
        )
    clock.advance(1.1)
    w.line(
        f"{clock.glog('E')} {agent}:869] failed (exitcode: 1) local_rank: {job.dev(fail_rank)} "
        f"(pid: {job.pid[fail_rank]}) of binary: /opt/venv/bin/python3.11"
    )
    fail_time = clock.elastic()
    for line in (
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main',
        "    run(args)",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 910, in run',
        "    elastic_launch(",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ):
        w.line(line)
    for i, r in enumerate(siblings, start=1):
        for line in (
            f"[{i}]:",
            f"  time      : {fail_time}",
            f"  host      : {job.host(r)}",
            f"  rank      : {r} (local_rank: {job.dev(r)})",
            f"  exitcode  : -15 (pid: {job.pid[r]})",
            "  error_file: <N/A>",
            f"  traceback : Signal 15 (SIGTERM) received by PID {job.pid[r]}",
        ):
            w.line(line)
    for line in (
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {fail_time}",
        f"  host      : {job.host(fail_rank)}",
        f"  rank      : {fail_rank} (local_rank: {job.dev(fail_rank)})",
        f"  exitcode  : 1 (pid: {job.pid[fail_rank]})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ):
        w.line(line)
    # Ten minutes later the other nodes' watchdogs fire.
    others = [r for r in range(job.world) if r // GPUS_PER_NODE != fail_node]
    clock.advance(600.0)
    numel = 220084533
    for r in others:
        clock.advance(rng.random() * 0.002)
        w.line(
            f"[rank{r}]:[{clock.glog('E')} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
            f"Timeout(ms)=600000) ran for {600000 + rng.randrange(10, 99)} milliseconds before timing out."
        )
    for r in others:
        clock.advance(rng.random() * 0.002)
        g = f"[rank{r}]:[{clock.glog('E')} ProcessGroupNCCL.cpp"
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        w.line(
            f"{g}:2168] {pg} Timeout at NCCL work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}."
        )
        w.line(
            f"{g}:667] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
            "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."
        )
        w.line(
            f"{g}:673] [Rank {r}] To avoid data inconsistency, we are taking the entire process down."
        )
        w.line(
            f"{g}:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with "
            f"exception: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
            f"OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600051 milliseconds "
            "before timing out."
        )
        w.line(f"[rank{r}]:terminate called after throwing an instance of 'c10::DistBackendError'")
    nodes_left = sorted({r // GPUS_PER_NODE for r in others})
    clock.advance(3.0)
    for node in nodes_left:
        agent = f"{job.agent_pid[node]} torch/distributed/elastic/multiprocessing/api.py"
        first = node * GPUS_PER_NODE
        w.line(
            f"{clock.glog('E')} {agent}:869] failed (exitcode: -6) local_rank: 0 (pid: {job.pid[first]}) of "
            "binary: /opt/venv/bin/python3.11"
        )
    w.flush()
    return Meta(
        path="",
        seed=0,
        size_bytes=w.bytes,
        version=GENERATOR_VERSION,
        lines=w.lines,
        world_size=job.world,
        nodes=job.nodes,
        failure_class="cuda-oom",
        signature="cuda-oom",
        rank=fail_rank,
        host=job.host(fail_rank),
        oom_line=oom_line,
        timeout_ranks=others,
        sigterm_ranks=siblings,
    )


def generate(
    path: str,
    size: int,
    seed: int = 1129,
    world: int = 16,
    fail_rank: int | None = None,
    stacked: bool = False,
) -> Meta:
    """Write a log of about ``size`` bytes (at least the failure tail) to ``path``.

    ``world`` is the number of ranks (8..1024, ``GPUS_PER_NODE`` per node); ``fail_rank``
    defaults to a rank chosen by the seed outside node 0 (so the failing rank is never the
    one that prints most); ``stacked`` writes ``[defaultN]:[rankM]:`` (torchrun ``--tee``
    under torch's own prefix) for ``[rankM]:``. Returns the :class:`Meta` also written to
    ``path + ".meta.json"``.

    Raises:
        ValueError: ``world`` or ``fail_rank`` out of range.
    """
    if not 8 <= world <= MAX_WORLD:
        raise ValueError(f"world size must be 8..{MAX_WORLD}, got {world}")
    rng = random.Random(seed)
    job = Job(rng, world)
    if fail_rank is None:
        fail_rank = rng.randrange(GPUS_PER_NODE, world)
    if not 0 <= fail_rank < world:
        raise ValueError(f"fail rank must be in 0..{world - 1}, got {fail_rank}")
    clock = Clock(9 * 3600 + rng.random() * 600)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as fh:
        w = Writer(fh, stacked)
        launcher_banner(w, job, clock)
        clock.advance(4.2)
        nccl_init(w, job, clock, list(range(world)), "world")
        # Tensor-parallel groups (one node each) and data-parallel groups (one rank per node).
        for node in range(job.nodes):
            nccl_init(
                w,
                job,
                clock,
                list(range(node * GPUS_PER_NODE, min(world, (node + 1) * GPUS_PER_NODE))),
                "sub",
            )
        if job.nodes > 1:
            for dev in range(GPUS_PER_NODE):
                nccl_init(w, job, clock, list(range(dev, world, GPUS_PER_NODE)), "sub")
        ts = clock.logging()
        w.line(
            f"[rank0]: {ts} - train - INFO - initialized process group: backend=nccl, world_size={world}, nodes={job.nodes}"
        )
        step = body(w, job, clock, max(0, size - TAIL_RESERVE))
        meta = failure(w, job, clock, fail_rank, step)
    meta.path = path
    meta.seed = seed
    with open(path + ".meta.json", "w", encoding="utf-8") as fh:
        json.dump(asdict(meta), fh, indent=2)
        fh.write("\n")
    return meta


#: A launcher rank prefix as the generator writes it (``--stacked``: ``[default3]:[rank11]:``).
_LINE_PREFIX = re.compile(r"^(?:\[default\d+\]:)?\[rank(\d+)\]: ?")
#: NCCL's line header ``host:pid:tid [dev] NCCL``, and its world communicator's init line.
_NCCL_PID = re.compile(r"^([A-Za-z][\w.-]*):(\d+):\d+ \[\d+\] NCCL ")
_NCCL_RANK = re.compile(r" comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) ")
#: The SLURM job id in the per-rank file names.
SPLIT_JOB_ID = 4242


def split_per_rank(path: str, out_dir: str, world: int) -> list[str]:
    """Split a generated log into one file per rank, as ``srun --output=slurm-%j-%t.out``
    leaves them (one task per rank: ``slurm-4242-0.out`` ... ``slurm-4242-<world-1>.out``),
    beside the job's own output ``slurm-4242.out``.

    A ``[rankN]:`` line goes, without its prefix (nothing prefixes a task's own file), to rank
    N's file; a bare NCCL line to the rank of its process (``host:pid``, bound to a rank by the
    world communicator's ``comm ... rank R nranks <world>`` line); every other bare line (the
    launcher and its agents, unprefixed stdout) to the job's file, which names no rank, as the
    one log does not either. Lines keep their order within each file. Streamed (at most about
    8 MiB held); files are appended to in turns, so at most one is open. Returns the paths
    written (ranks in order, then the job's file). Bytes out = bytes in minus the prefixes.
    """
    os.makedirs(out_dir, exist_ok=True)
    names = [os.path.join(out_dir, f"slurm-{SPLIT_JOB_ID}-{r}.out") for r in range(world)]
    names.append(os.path.join(out_dir, f"slurm-{SPLIT_JOB_ID}.out"))
    for name in names:
        open(name, "wb").close()
    pid_rank: dict[tuple[str, str], int] = {}
    pending: dict[int, list[bytes]] = {}
    held = 0

    def flush() -> None:
        for r, parts in pending.items():
            with open(names[r], "ab") as out:
                out.write(b"".join(parts))
        pending.clear()

    with open(path, "rb") as fh:
        for raw in fh:
            line = raw.decode("utf-8", errors="replace")
            rank = world  # the job's own file
            m = _LINE_PREFIX.match(line)
            if m:
                rank = int(m.group(1))
                raw = line[m.end() :].encode("utf-8")
            else:
                n = _NCCL_PID.match(line)
                if n:
                    key = (n.group(1), n.group(2))
                    c = _NCCL_RANK.search(line)
                    if c and int(c.group(2)) == world and key not in pid_rank:
                        pid_rank[key] = int(c.group(1))
                    rank = pid_rank.get(key, world)
            pending.setdefault(rank, []).append(raw)
            held += len(raw)
            if held >= 8 * FLUSH_BYTES:
                flush()
                held = 0
    flush()
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--size",
        type=parse_size,
        default=parse_size("512M"),
        help="target size, e.g. 512M, 1G (default 512M)",
    )
    ap.add_argument("--gb", action="store_true", help="1 GiB (same as --size 1G)")
    ap.add_argument("--ranks", type=int, default=16, help="world size, 8..1024 (default 16)")
    ap.add_argument(
        "--fail-rank",
        type=int,
        default=None,
        help="the rank that runs out of memory (default: chosen by the seed)",
    )
    ap.add_argument("--seed", type=int, default=1129)
    ap.add_argument("--stacked", action="store_true", help="[defaultN]:[rankM]: prefixes")
    ap.add_argument(
        "--out", default=None, help="output path (default bench/.data/train-<size>.log)"
    )
    ap.add_argument(
        "--per-rank",
        metavar="DIR",
        default=None,
        help="also split the log into DIR/slurm-4242-<rank>.out, one file per rank",
    )
    args = ap.parse_args(argv)
    size = (1 << 30) if args.gb else args.size
    stacked = "-stacked" if args.stacked else ""
    out = args.out or os.path.join(
        DATA_DIR, f"train-{size >> 20}M-r{args.ranks}-s{args.seed}{stacked}.log"
    )
    try:
        meta = generate(
            out,
            size,
            seed=args.seed,
            world=args.ranks,
            fail_rank=args.fail_rank,
            stacked=args.stacked,
        )
    except ValueError as exc:
        print(f"gen_log: {exc}", file=sys.stderr)
        return 2
    if args.per_rank:
        split_per_rank(out, args.per_rank, args.ranks)
    print(json.dumps(asdict(meta)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
