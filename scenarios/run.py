"""Run one scenario script under ``python -m torch.distributed.run`` and capture what a user sees.

A scenario is a script ``scenarios/<name>.py`` (see the README in this folder). :func:`run_scenario`
starts torchrun as a child process in its own session, with stdout and stderr of torchrun and
of every worker merged into one pipe, in the order they were written, as a terminal shows them
(``PYTHONUNBUFFERED=1`` makes the workers write line by line, as they would to a terminal).
Every run is bounded by a timeout; on expiry the whole process group is killed and the run is
marked ``timed_out``.

With ``log_dir``, torchrun's own ``--log-dir`` is used; torchrun then writes
``<log_dir>/<run_id>/attempt_<n>/<local_rank>/{stdout.log,stderr.log,error.json}`` (the layout of
``torch.distributed.elastic.multiprocessing``) and :attr:`ScenarioRun.rank_files` lists them.

Command line, for capturing a log by hand::

    python scenarios/run.py bad_data_raise --nproc 3 --fault-rank 2 > out.log
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SCENARIOS_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCENARIOS_DIR.parent


@dataclass
class ScenarioRun:
    """The outcome of one torchrun invocation.

    Attributes:
        name: the scenario (script stem).
        command: the argv that was run (``argv[0]`` is the Python interpreter).
        returncode: torchrun's exit status; ``None`` when the run timed out and was killed.
        output: stdout and stderr merged, decoded as UTF-8 (undecodable bytes replaced).
        duration: wall-clock seconds the run took.
        timed_out: True when ``timeout`` expired and the process group was killed.
        master_port: the TCP port given to ``--master-port``.
        log_dir: the ``--log-dir`` folder, or ``None`` when none was asked for.
        rank_files: every file torchrun wrote under ``log_dir`` (sorted paths; empty without
            ``log_dir``). Local rank ``n``'s files sit in a folder named ``n``.
    """

    name: str
    command: list[str]
    returncode: int | None
    output: str
    duration: float
    timed_out: bool
    master_port: int
    log_dir: Path | None = None
    rank_files: list[Path] = field(default_factory=list)

    def files_for_local_rank(self, local_rank: int) -> list[Path]:
        """The files under ``log_dir`` whose parent folder is named ``local_rank`` (0-based)."""
        return [p for p in self.rank_files if p.parent.name == str(local_rank)]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).

    Another process may take it before torchrun binds it; the window is milliseconds.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def occupy_port() -> tuple[socket.socket, int]:
    """Bind and listen on a free port on all IPv4 addresses, as a stale job would.

    Returns the listening socket (the caller must close it) and its port. torchrun's TCPStore
    binds the wildcard address, so the port must be taken on ``0.0.0.0`` for it to collide.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("0.0.0.0", 0))
    sock.listen(1)
    return sock, int(sock.getsockname()[1])


def torchrun_command(
    script: Path,
    *,
    nproc: int,
    master_port: int,
    python: str = sys.executable,
    rdzv: str = "static",
    log_dir: Path | None = None,
    redirects: str | None = None,
    tee: str | None = None,
    launcher_args: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
) -> list[str]:
    """The argv for ``python -m torch.distributed.run`` on one node.

    ``rdzv="static"`` uses ``--master-addr 127.0.0.1 --master-port``; ``rdzv="c10d"`` uses
    ``--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:<port>``. ``redirects``/``tee`` take
    torchrun's values (``0``-``3``, or ``local_rank:value`` lists).
    """
    cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
    if rdzv == "static":
        cmd += ["--master-addr=127.0.0.1", f"--master-port={master_port}"]
    elif rdzv == "c10d":
        cmd += [
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{master_port}",
            "--rdzv-id=scenario",
        ]
    else:
        raise ValueError(f"rdzv must be 'static' or 'c10d', not {rdzv!r}")
    if log_dir is not None:
        cmd.append(f"--log-dir={log_dir}")
    if redirects is not None:
        cmd.append(f"--redirects={redirects}")
    if tee is not None:
        cmd.append(f"--tee={tee}")
    cmd += list(launcher_args)
    cmd.append(str(script))
    cmd += list(script_args)
    return cmd


def run_scenario(
    name: str,
    *,
    nproc: int = 2,
    fault_rank: int | None = None,
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    log_dir: Path | None = None,
    redirects: str | None = None,
    tee: str | None = None,
    rdzv: str = "static",
    launcher_args: tuple[str, ...] = (),
    hold_port: bool = False,
    timeout: float = 60.0,
    python: str = sys.executable,
) -> ScenarioRun:
    """Run ``scenarios/<name>.py`` under torchrun with ``nproc`` workers and capture it all.

    Args:
        name: script stem in this folder (``"bad_data_raise"``).
        nproc: ``--nproc-per-node`` (workers on this one node).
        fault_rank: passed as ``--fault-rank`` (0-based global rank) when not ``None``.
        script_args: more arguments for the script.
        env: extra environment variables (merged over ``os.environ``).
        log_dir, redirects, tee: torchrun's ``--log-dir``/``--redirects``/``--tee``.
        rdzv: ``"static"`` or ``"c10d"`` (see :func:`torchrun_command`).
        launcher_args: more torchrun arguments (``--max-restarts=1``, ``--local-ranks-filter=0``).
        hold_port: bind the master port before torchrun starts and keep it bound for the
            whole run (the "port already in use" scenario).
        timeout: seconds before the run's whole process group is killed (SIGKILL).
        python: the interpreter that has torch.

    Returns:
        A :class:`ScenarioRun`. A failing torchrun is not an error: its exit status is in
        ``returncode``.

    Raises:
        FileNotFoundError: no ``scenarios/<name>.py``.
    """
    script = SCENARIOS_DIR / f"{name}.py"
    if not script.is_file():
        raise FileNotFoundError(script)
    holder: socket.socket | None = None
    if hold_port:
        holder, port = occupy_port()
    else:
        port = free_port()
    args = tuple(script_args)
    if fault_rank is not None:
        args = ("--fault-rank", str(fault_rank), *args)
    cmd = torchrun_command(
        script.relative_to(REPO_ROOT),
        nproc=nproc,
        master_port=port,
        python=python,
        rdzv=rdzv,
        log_dir=log_dir,
        redirects=redirects,
        tee=tee,
        launcher_args=launcher_args,
        script_args=args,
    )
    try:
        code, output, seconds, timed_out = _run_bounded(cmd, dict(env or {}), timeout)
    finally:
        if holder is not None:
            holder.close()
    files = sorted(p for p in log_dir.rglob("*") if p.is_file()) if log_dir is not None else []
    return ScenarioRun(
        name=name,
        command=cmd,
        returncode=code,
        output=output,
        duration=seconds,
        timed_out=timed_out,
        master_port=port,
        log_dir=log_dir,
        rank_files=files,
    )


def _run_bounded(
    cmd: list[str], env: dict[str, str], timeout: float
) -> tuple[int | None, str, float, bool]:
    """Run ``cmd`` in its own session from the repository root, stdout and stderr merged;
    kill its whole process group (SIGKILL) after ``timeout`` seconds. Returns ``(exit status
    or None when it timed out, output, seconds, timed_out)``."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        raw, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
        code = None
    output = raw.decode("utf-8", errors="replace")
    return code, output, time.monotonic() - start, code is None


def mpirun_command(
    script: Path,
    *,
    nproc: int,
    python: str = sys.executable,
    mpirun: str = "mpirun",
    script_args: tuple[str, ...] = (),
) -> list[str]:
    """The argv for Open MPI's ``mpirun --tag-output -np N python SCRIPT ...`` on this host.

    ``--tag-output`` prefixes every line with ``[jobid,rank]<stdout>:`` or ``<stderr>:``;
    ``--allow-run-as-root`` because Open MPI refuses root without it (containers, CI);
    ``--oversubscribe`` because N may exceed the cores. ``-x`` exports the rendezvous and
    scenario variables to every process (Open MPI does not pass the environment by itself).
    """
    exported = ["MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED", "SCENARIO_GLOO_TIMEOUT"]
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "--tag-output", "-np", str(nproc)]
    for name in exported:
        cmd += ["-x", name]
    return [*cmd, python, str(script), *script_args]


def run_mpirun(
    name: str,
    *,
    nproc: int = 3,
    fault_rank: int | None = None,
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    python: str = sys.executable,
    mpirun: str = "mpirun",
) -> ScenarioRun:
    """Run ``scenarios/<name>.py`` under Open MPI's ``mpirun --tag-output`` with ``nproc``
    processes; each reads ``OMPI_COMM_WORLD_RANK``/``SIZE`` (``_common.init_gloo``) and joins a
    gloo group over ``MASTER_ADDR=127.0.0.1`` and a free ``MASTER_PORT`` (``env://``).

    Returns a :class:`ScenarioRun` (``master_port`` = that port). Raises
    ``FileNotFoundError`` when the script or ``mpirun`` is missing."""
    script = SCENARIOS_DIR / f"{name}.py"
    if not script.is_file():
        raise FileNotFoundError(script)
    port = free_port()
    args = tuple(script_args)
    if fault_rank is not None:
        args = ("--fault-rank", str(fault_rank), *args)
    cmd = mpirun_command(script, nproc=nproc, python=python, mpirun=mpirun, script_args=args)
    child_env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "SCENARIO_GLOO_TIMEOUT": os.environ.get("SCENARIO_GLOO_TIMEOUT", "15"),
        **(env or {}),
    }
    code, output, seconds, timed_out = _run_bounded(cmd, child_env, timeout)
    return ScenarioRun(name, cmd, code, output, seconds, timed_out, port)


def run_spawn(
    name: str,
    *,
    nproc: int = 3,
    fault_rank: int | None = None,
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    python: str = sys.executable,
) -> ScenarioRun:
    """Run ``scenarios/<name>.py``'s ``main()`` in ``nproc`` processes started by
    ``torch.multiprocessing.spawn`` (``scenarios/spawn_launch.py``), over a free port.

    Returns a :class:`ScenarioRun`. Raises ``FileNotFoundError`` when the script is missing."""
    if not (SCENARIOS_DIR / f"{name}.py").is_file():
        raise FileNotFoundError(SCENARIOS_DIR / f"{name}.py")
    port = free_port()
    args = tuple(script_args)
    if fault_rank is not None:
        args = ("--fault-rank", str(fault_rank), *args)
    launcher = (SCENARIOS_DIR / "spawn_launch.py").relative_to(REPO_ROOT)
    cmd = [python, str(launcher), name, "--nproc", str(nproc), "--port", str(port), "--", *args]
    code, output, seconds, timed_out = _run_bounded(cmd, dict(env or {}), timeout)
    return ScenarioRun(name, cmd, code, output, seconds, timed_out, port)


@dataclass
class NodesRun:
    """Several torchrun agents on this machine, each standing for one node of a job.

    Attributes:
        name: the scenario (script stem).
        commands: each agent's argv, in node order (the order they were started).
        returncodes: each agent's exit status; ``None`` for an agent killed on timeout.
        logs: the files the output went to: one per agent (``node<i>.log``), or one shared
            file (``nodes.log``) both agents wrote to, interleaved as a batch system's single
            output file holds them.
        duration: wall-clock seconds until the last agent ended.
        timed_out: True when any agent was killed on ``timeout``.
        master_port: the c10d rendezvous endpoint's port.
    """

    name: str
    commands: list[list[str]]
    returncodes: list[int | None]
    logs: list[Path]
    duration: float
    timed_out: bool
    master_port: int


def run_nodes(
    name: str,
    out_dir: Path,
    *,
    nnodes: int = 2,
    nproc: int = 2,
    fault_rank: int | None = None,
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    one_file: bool = False,
    timeout: float = 60.0,
    python: str = sys.executable,
) -> NodesRun:
    """Run ``nnodes`` torchrun agents of one job on this machine (``--nnodes=N
    --node-rank=i --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:PORT``, ``nproc`` workers
    each), as ``nnodes`` nodes would. The c10d rendezvous hands out the group ranks (node 0's
    agent hosts the store; ``--node-rank`` is ignored by c10d), so node ``i`` holds global
    ranks ``i*nproc ..`` only as far as the agents joined in start order.

    Each agent's stdout and stderr go to ``out_dir/node<i>.log``, or with ``one_file`` all
    agents append to ``out_dir/nodes.log``. Returns a :class:`NodesRun`.

    Raises ``FileNotFoundError`` when the script is missing."""
    script = SCENARIOS_DIR / f"{name}.py"
    if not script.is_file():
        raise FileNotFoundError(script)
    out_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = tuple(script_args)
    if fault_rank is not None:
        args = ("--fault-rank", str(fault_rank), *args)
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    paths = (
        [out_dir / "nodes.log"] if one_file else [out_dir / f"node{i}.log" for i in range(nnodes)]
    )
    commands: list[list[str]] = []
    procs: list[subprocess.Popen[bytes]] = []
    start = time.monotonic()
    for i in range(nnodes):
        cmd = [
            python,
            "-m",
            "torch.distributed.run",
            f"--nnodes={nnodes}",
            f"--nproc-per-node={nproc}",
            f"--node-rank={i}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            "--rdzv-id=scenario-nodes",
            str(script.relative_to(REPO_ROOT)),
            *args,
        ]
        commands.append(cmd)
        with open(paths[0 if one_file else i], "ab") as sink:  # the child keeps its own fd
            procs.append(
                subprocess.Popen(
                    cmd,
                    cwd=REPO_ROOT,
                    env=child_env,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        time.sleep(1.0)  # node 0's agent binds the c10d store first, as the endpoint's host
    codes: list[int | None] = []
    timed_out = False
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(0.1, timeout - (time.monotonic() - start))))
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            codes.append(None)
    return NodesRun(name, commands, codes, paths, time.monotonic() - start, timed_out, port)


def aborted_at_teardown(returncode: int, output: str) -> bool:
    """Whether a healthy run finished training and then one rank aborted while exiting.

    torch 2.13 with gloo sometimes ends a finished run with ``terminate called without an active
    exception`` (SIGABRT, exitcode -6) in one rank's interpreter teardown, after
    ``destroy_process_group``: seen about once in 60 runs on a busy 2-core machine, never in the
    training itself. That run is no longer healthy, so a test of a healthy run runs it again.
    """
    return (
        returncode != 0
        and "terminate called without an active exception" in output
        and "training finished" in output
        and "exitcode: -6" in output
    )


def anonymize(text: str) -> str:
    """Replace this machine's paths and names with neutral ones, for logs shipped in the repo.

    The venv becomes ``/home/user/venv``, the repository ``/home/user/project``, the user's
    home ``/home/user``, and the host name ``node01``.
    """
    venv = Path(sys.prefix)
    replacements = [
        (str(venv), "/home/user/venv"),
        (str(REPO_ROOT / ".venv"), "/home/user/venv"),
        (str(REPO_ROOT), "/home/user/project"),
        (str(Path.home()), "/home/user"),
    ]
    for old, new in replacements:
        if old and old != "/":
            text = text.replace(old, new)
    # torchrun logs its own source path relative to the working directory.
    text = re.sub(r"(?<![\w/.])\.venv/lib/", "/home/user/venv/lib/", text)
    host = socket.gethostname()
    if host and host not in ("localhost", "node01"):
        text = re.sub(rf"\b{re.escape(host)}\b", "node01", text)
    return text


def main(argv: list[str] | None = None) -> int:
    """Command line: run one scenario and print its merged output (anonymized with ``--anonymize``).

    Arguments it does not know are passed to the scenario script.

    Exits with torchrun's status (124 on timeout).
    """
    parser = argparse.ArgumentParser(description="Run one scenario under torchrun.")
    parser.add_argument("name")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--fault-rank", type=int)
    parser.add_argument("--log-dir", type=Path)
    parser.add_argument("--redirects")
    parser.add_argument("--tee")
    parser.add_argument("--rdzv", default="static", choices=["static", "c10d"])
    parser.add_argument("--hold-port", action="store_true")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--anonymize", action="store_true")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    ns, script_args = parser.parse_known_args(argv)
    run = run_scenario(
        ns.name,
        nproc=ns.nproc,
        fault_rank=ns.fault_rank,
        script_args=tuple(a for a in script_args if a != "--"),
        env=dict(kv.split("=", 1) for kv in ns.env),
        log_dir=ns.log_dir,
        redirects=ns.redirects,
        tee=ns.tee,
        rdzv=ns.rdzv,
        hold_port=ns.hold_port,
        timeout=ns.timeout,
    )
    sys.stdout.write(anonymize(run.output) if ns.anonymize else run.output)
    print(f"# {run.name}: exit {run.returncode} in {run.duration:.1f}s", file=sys.stderr)
    return 124 if run.returncode is None else run.returncode


if __name__ == "__main__":
    sys.exit(main())
