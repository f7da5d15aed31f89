"""One streaming pass over the lines of one or more logs, collecting findings.

Memory is bounded by the findings, not by the log: a finding keeps a count and its first
:data:`MAX_EVIDENCE` lines; the last :data:`MAX_EXCEPTIONS` Python exceptions are kept for
the "unclassified" answer; per-stream state is a few small dicts.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

import ahocorasick_rs

from rootrank import launchers, lazy_regex, regex_code
from rootrank.frameworks import (
    FRAMEWORK_ENTRY,
    STACK_WORDS,
    stacks_in,
    stacks_of_paths,
    without_env_names,
)
from rootrank.ingest import Block, RawLine, dedented, logical_lines
from rootrank.mask import learn_users
from rootrank.match import Gate, Hit, Matcher
from rootrank.metrics import MetricsReader
from rootrank.model import Evidence, Finding
from rootrank.progress import LITERALS as PROGRESS_LITERALS
from rootrank.progress import (
    Advance,
    AdvanceWatch,
    ProcessKey,
    Progress,
    ProgressModel,
    read_step,
)
from rootrank.ranks import (
    ElasticFailure,
    RankTagger,
    Tagged,
    parse_time,
    rank_from_path,
    ranks_in,
)
from rootrank.runs import (
    LAUNCHER_FILES,
    REPORT_EXCEPTIONS,
    OtherRun,
    SectionFacts,
    another_node,
    child_script,
    different_program,
    launch_identity,
    launch_parts,
    launched_alike,
    other_env,
    other_process,
    separate_run,
    summary_nodes,
)
from rootrank.tracebacks import (
    CHAIN_MARKERS,
    FROM_USER_CODE,
    Frame,
    PyException,
    TracebackReader,
    bare_exception,
    collective_call,
    continues_message,
    qualified_names,
    starts_mid_trace,
    traced_user_frame,
)

MAX_EVIDENCE = 5
#: How many lines after an exception line (or after the last line of its message that named
#: a frame) dynamo's "from user code:" section may still come: its explanation, hints and
#: graph-break link come first (about 15 lines in torch 2.13).
TRACED_FRAME_LINES = 40
#: The C++ log records whose wrapped tail is joined to them even when no signature matched
#: their first line (a gate word of rootrank.match.STATE_WORDS, or a signature's literal, so
#: they are read): ProcessGroupNCCL's, and c10d's own ``[c10d]`` records (socket.cpp's
#: "The client socket has timed out ... to (172.17.0.2" + ", 44737).": a terminal wraps
#: the address off the line the pattern needs whole).
_WRAPPABLE_RECORDS = ("ProcessGroupNCCL.cpp:", "[c10d] ")
#: Lines after an exception line that may continue its message (hard-wrapped or multi-line).
MAX_CONTINUATION_LINES = 12
#: Characters of a joined exception message handed to the matcher.
MAX_JOINED_CHARS = 4096
MAX_EXCEPTIONS = 64
#: Lines looked back over (in the current block) for an untimed finding's rank's time.
MAX_LOOKBACK_LINES = 20000
#: Characters at the head of each block (after the first) swept for rank prefixes.
RANK_SWEEP_CHARS = 65536


@dataclass(slots=True)
class SeenException:
    """A Python exception with where it was seen."""

    exc: PyException
    path: str
    rank: int | None
    host: str | None
    time: float | None
    raw: str
    order: int
    #: Whether the process that raised it printed a greater step after it, in the same
    #: section of the log (rootrank.progress.AdvanceWatch); ``None`` when not watched.
    advance: Advance | None = None
    #: The launcher's local rank its lines carried (``[default1]:``) when they named no global
    #: rank; kept for faulthandler's stacks only (rootrank.entry.frames.odd_watchdog_stack).
    local_rank: int | None = None
    #: For an exception printed with no rank (global or local: ``threading.excepthook``'s
    #: ``Exception in thread ...`` under a launcher that tags nothing), each rank's last
    #: progress when it was read: ``(rank, step, format, path)`` per rank that had printed a
    #: step (:meth:`rootrank.progress.ProgressModel.last`). Whichever rank raised it went on
    #: when every rank later printed a greater step (rootrank.analysis.survived).
    ranks_at: tuple[tuple[int, int, str, str], ...] = ()
    #: The pid its lines' worker prefix named (Ray's ``(Name pid=N)``), ``None`` when none:
    #: with ``path``, ``rank``, ``local_rank`` and ``host`` the process (:func:`process_key`).
    pid: int | None = None


#: A process as its lines name it: ``(path, rank, local rank, host, pid)`` (ScanState.last_own_line).
LineProcess = tuple[str, int | None, int | None, str | None, int | None]


def process_key(
    path: str, rank: int | None, local: int | None, host: str | None, pid: int | None
) -> LineProcess:
    """The process a line (or exception) of ``path`` is from, as its prefixes name it; the
    local rank counts only when no global rank is named."""
    return (path, rank, local if rank is None else None, host, pid)


# How many nodes the job had, from what launchers print (torchrun's flags and its agent's
# config/rendezvous logs: torch/distributed/run.py, elastic/agent/server/api.py).
_NNODES = lazy_regex.compile(
    r"(?:--nnodes[= ]|\bnnodes['\"]?\s*[=:]\s*|\bgroup_world_size[=:]\s*|\bmax_nodes\s*[=:]\s*|\bnum_nodes\s*[=:]\s*)"
    r"['\"]?(?P<n>\d+)(?::(?P<max>\d+))?\b"
)
# NCCL's communicator line at init (NCCL_DEBUG=INFO, init.cc): "comm 0x... rank 1 nRanks 8
# nNodes 2 localRanks 4 localRank 1": the nodes and the processes per node the job really had.
_NCCL_LAYOUT = lazy_regex.compile(
    r"\bnRanks (?P<world>\d+) nNodes (?P<n>\d+) localRanks (?P<per>\d+)\b"
)
_NODE_RANK = lazy_regex.compile(
    r"--node[_-]rank[= ](?P<n>\d+)|\bgroup_rank[=:]\s*(?P<g>\d+)|--rdzv[_-]endpoint|--master[_-]addr"
)
_STANDALONE = lazy_regex.compile(r"--standalone\b")
# A launch script's own count of workers per node, set on its command line
# (torchtitan's run_train.sh: NGPU=8 -> torchrun --nproc_per_node=${NGPU}; Megatron-LM's
# examples: GPUS_PER_NODE=8), read as --nproc-per-node.
_NPROC_ENV = lazy_regex.compile(
    r"(?:^|[\s;])(?:NGPU|NGPUS|NUM_GPUS|GPUS_PER_NODE|NPROC_PER_NODE)=[\"']?(?P<n>\d{1,4})\b"
)
# An output filter that keeps one local rank's lines: torchrun --local-ranks-filter N
# (torch/distributed/run.py), or a launch script's LOG_RANK=N that it passes there
# (torchtitan's run_train.sh: --local-ranks-filter ${LOG_RANK}).
_RANK_FILTER = lazy_regex.compile(
    r"(?:--local[_-]ranks[_-]filter[= ]|(?:^|[\s;])LOG_RANK=)[\"']?(?P<r>\d{1,5}(?:,\d{1,5})*)\b"
)
# The rendezvous host as launchers print it: MASTER_ADDR=node01, --master_addr node01,
# --rdzv-endpoint=node01:29500, master_addr: node01 (for the masker: a host named in passing
# elsewhere in the log then reads the same everywhere).
_MASTER_HOST = lazy_regex.compile(
    r"(?i:\b(?:master[_-]addr|rdzv[_-]endpoint))['\"]?\s{0,4}[=: ]\s{0,4}['\"]?(?P<h>[A-Za-z][\w.-]{0,252})"
)
# The rendezvous endpoint as a launch prints it whole, host and port: torchrun's
# --rdzv-endpoint=node01:29500 (its agent's config table "rdzv_endpoint : node01:29500"),
# init_process_group's init_method="tcp://10.0.0.1:23456" (a --dist-url argument likewise),
# SGLang's --dist-init-addr 10.0.0.1:5000; and its two halves as variables or flags:
# MASTER_ADDR=node01 / --master_addr node01 (the host, :data:`_MASTER_ADDR`) and
# MASTER_PORT=29500 / --master_port 29500.
_ENDPOINT = lazy_regex.compile(
    r"(?i:\b(?:rdzv[_-]endpoint|dist[_-]init[_-]addr)['\"]?\s{0,40}[=: ]\s{0,4}['\"]?"
    r"|\b(?:init[_-]method|dist[_-]url)['\"]?\s{0,4}[=: ]\s{0,4}['\"]?tcp://)"
    r"(?P<h>[A-Za-z0-9][\w.-]{0,252}):(?P<p>\d{2,5})\b"
)
#: A rendezvous endpoint printed with a host and no port: torchrun's ``--rdzv_endpoint=node01``
#: (its agent's config table ``rdzv_endpoint    : node01``, the argv list it logs
#: ``'--rdzv_endpoint=node01'``); a host followed by neither ``:`` nor another host character.
_ENDPOINT_NO_PORT = lazy_regex.compile(
    r"(?i:\brdzv[_-]endpoint)['\"]?\s{0,40}[=: ]\s{0,4}['\"]?(?!(?:None|null)\b)"
    r"(?P<h>[A-Za-z0-9][\w.-]{0,252})(?![\w.:-]|\$)"
)
#: Words one of which a line naming a rendezvous endpoint or its halves holds (a cheap test
#: before :data:`_ENDPOINT`, :data:`_MASTER_ADDR`, :data:`_MASTER_PORT`; found by the
#: :data:`_LAUNCHER_WORDS` automaton).
_ENDPOINT_WORDS = ("master", "MASTER", "rdzv", "init_addr", "init-addr", "tcp://")
# (torchrun's agent pads its config table: "master_addr=127.0.0.1", "rdzv_endpoint    : h:p";
# a host may be an address; "None" is a launcher's unset value, not a host)
_MASTER_ADDR = lazy_regex.compile(
    r"(?i:\bmaster[_-]addr)['\"]?\s{0,40}[=: ]\s{0,4}['\"]?(?!(?:None|null)\b)"
    r"(?P<h>[A-Za-z0-9][\w.-]{0,252})"
)
# SGLang's server prints its arguments at start-up ("server_args=ServerArgs(model_path='/m',
# tp_size=16, nnodes=2, ...)": sglang/srt/server_args.py's dataclass repr): the model and
# the tensor-parallel size a rerun of the server passes again.
_SERVER_ARGS = lazy_regex.compile(r"\bServerArgs\(")
_SERVER_MODEL = lazy_regex.compile(r"\bmodel_path='(?P<v>[^'\s]{1,400})'")
_SERVER_TP = lazy_regex.compile(r"\btp_size=(?P<v>\d{1,4})\b")
_MASTER_PORT = lazy_regex.compile(
    r"(?i:\bmaster[_-]port)['\"]?\s{0,40}[=: ]\s{0,4}['\"]?(?P<p>\d{2,5})\b"
)
# The entry script: torchelastic's summary title "train_x.py FAILED" (elastic/multiprocessing/
# errors/__init__.py) or the first .py after a printed launcher command.
_SCRIPT_FAILED = lazy_regex.compile(r"^(?P<s>\S{1,300}\.py) FAILED\s*$")
# The entry module of a ``-m`` launch: torchelastic's title "pkg.server FAILED" (a dotted name,
# no .py) or the quoted argv DeepSpeed's launcher prints ("spawned with command: [..., '-u',
# '-m', 'pkg.cli.train', ...]", its sigkill_handler line likewise).
_MODULE_FAILED = lazy_regex.compile(
    r"^(?P<m>[A-Za-z_]\w{0,100}(?:\.[A-Za-z_]\w{0,100}){1,10}) FAILED\s*$"
)
_MODULE_ARGV = lazy_regex.compile(
    r"'-m', '(?P<m>[A-Za-z_]\w{0,100}(?:\.[A-Za-z_]\w{0,100}){0,10})'"
)
#: Modules that are launchers themselves, not the user's entry (``python -m torch.distributed.run``).
_LAUNCHER_MODULES = ("torch.distributed", "deepspeed.launcher", "accelerate.commands")
_SCRIPT_AFTER_LAUNCHER = lazy_regex.compile(
    r"(?P<launcher>torchrun|torch\.distributed\.(?:run|launch)|accelerate launch|deepspeed"
    r"|(?<![\w.])composer(?=\s))\b[^\n]{0,400}?"
    r"\s(?P<s>[\w./-]{1,300}\.py)\b"
)
#: Frame paths of :data:`LaunchFacts.entry_paths` kept per log.
MAX_ENTRY_PATHS = 4
_ENTRY_PARTS = tuple(sorted({part for part, _, _ in FRAMEWORK_ENTRY}))
_FRAME_PATH = lazy_regex.compile(r'File "([^"\n]{1,500})"')
#: ProcessGroupNCCL's own log prefix ("[Rank 4] Watchdog caught ...", "[PG ID 1 PG GUID 2 Rank
#: 4] Exception ... detected by watchdog"; ProcessGroupNCCL::logPrefix): the rank it names is
#: the process's rank *inside that process group*, which is the global rank only in the
#: default group. torch's own "[rank12]:" line prefix is always the global rank.
_PG_LOG_RANK = lazy_regex.compile(r"\[(?:PG\b[^\]\n]{0,80}? )?Rank (\d{1,7})\]")


def captured_rank(line_rank: int | None, captures: dict[str, str], text: str) -> int | None:
    """The rank a finding is counted on: the one its signature captured (a message that names
    the rank it is about), except when the line's own global rank (torch's ``[rankN]:``
    prefix, a per-rank file) is known and the capture is ProcessGroupNCCL's log prefix with a
    different number: that is the same process's rank within a subgroup (``[rank12]:[E...]
    [Rank 4] Watchdog caught ...``: global rank 12 is rank 4 of process group 1), not another
    rank. ``None`` when neither is known."""
    value = captures.get("rank", "")
    if not value.isdigit():
        return line_rank
    rank = int(value)
    if (
        line_rank is not None
        and rank != line_rank
        and any(int(m) == rank for m in _PG_LOG_RANK.findall(text))
    ):
        return line_rank
    return rank


#: The most launcher-named hosts remembered per log.
MAX_NAMED_HOSTS = 64
# torchrun's --nproc-per-node, and deepspeed's --num_gpus (GPUs per node, like it); and
# accelerate's report of the defaults it used when no config was given (one machine, so its
# process count is the node's): "`--num_processes` was set to a value of `2`"
# (accelerate/commands/launch.py, _validate_launch_command)
_NPROC = lazy_regex.compile(
    r"(?:--nproc[_-]per[_-]node[= ]|\bnproc_per_node['\"]?\s*[=:]\s*|--num[_-]gpus[= ]"
    r"|`--num_processes` was set to a value of `)['\"]?(?P<n>\d+)\b"
)
_LAUNCH_CMD = lazy_regex.compile(
    r"(?:^|[$#>]\s*|\s)(?:torchrun|python[\d.]*\s+-m\s+torch\.distributed\.(?:run|launch))\s+(?:-|\S+\.py\b)"
)
# mp.spawn's parent, after one of its processes failed, terminates each other one it started
# (torch/multiprocessing/spawn.py, ProcessContext.join: ``logger.warning("Terminating process
# %s via signal SIGTERM", pid)``): they are all on its node.
_SPAWN_KILL = lazy_regex.compile(r"Terminating process (?P<pid>\d+) via signal SIG[A-Z]+")
_AGENT_PID = lazy_regex.compile(
    r"Sending process (?P<pid>\d+) closing signal|failed \(exitcode: -?\d+\) local_rank: \d+ \(pid: (?P<fpid>\d+)\)"
)
# A training script's own rank word inside a progress line with no rank prefix ("step 06 rank 1
# local_loss 0.51", "train step 3 rank 0 loss 1.79", "rank 2 | step 4/8"): "rank" as a word,
# a space or "=", the number, then no more of a word or a decimal.
# A JSON record's ``"rank": 2`` (``json.dumps({"rank": rank, "step": step, ...})``) likewise.
_BODY_RANK = lazy_regex.compile(
    r"(?<![\w-])rank[ =](?P<n>\d{1,6})(?![\w.])|(?<![\w-])\"rank\": ?(?P<n>\d{1,6})(?![\w.])"
)


def body_rank(text: str) -> int | None:
    """The rank a line names of itself inside its body (:data:`_BODY_RANK`), read for its
    progress and metrics when no prefix tags it (a script's ``print(f"step {s} rank {rank}
    loss {loss}")`` under plain torchrun, whose output carries no rank prefix), or ``None``.

    Only a line that says "rank" once, as that word (not ``ranks``, ``local_rank``,
    ``world_rank``...), names itself: one that speaks of two ranks ("rank 1 waits for rank 0")
    or of "ranks" is about others, and is read as before. "this rank" is the line's own
    process, not another (``rank 1 - WARNING - non-finite loss nan at step 23 on this rank``)."""
    if text.count("rank") - text.count("this rank") != 1:
        return None
    m = _BODY_RANK.search(text)
    return int(m.group("n")) if m is not None else None


# DeepSpeed's launcher (launcher/launch.py ``sigkill_handler``) killing its workers after
# one failed: "[launch.py:319:sigkill_handler] Killing subprocess 198906".
_DS_KILL = lazy_regex.compile(r"Killing subprocess (?P<pid>\d+)")
#: Hydra's report of the failed job (hydra/_internal/utils.py run_and_report): "Error
#: executing job with overrides: ['+data=ljspeech', 'trainer.lr=1e-4']", the command line's
#: overrides as a Python list of strings (:func:`hydra_overrides`).
_HYDRA_OVERRIDES = lazy_regex.compile(
    r"Error executing job with overrides: (?P<list>\[.{0,20000}\])\s*$"
)


def hydra_overrides(text: str) -> tuple[str, ...] | None:
    """The overrides Hydra's "Error executing job with overrides: [...]" line lists, in order
    (``()`` for an empty list), or ``None`` when ``text`` is not that line or its list is
    not a list of strings (a line cut short)."""
    m = _HYDRA_OVERRIDES.search(text)
    if m is None:
        return None
    import ast  # here: a start whose log has no such line does not load the parser

    try:
        value = ast.literal_eval(m["list"])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


#: The worker argv DeepSpeed's per-node launcher prints (deepspeed/launcher/launch.py:
#: ``logger.info(f"process {pid} spawned with command: {cmd}")`` and, in sigkill_handler,
#: ``logger.error(f"{cmd} exits with return code = {code}")``), ``cmd`` being
#: ``[sys.executable, "-u", (-m,) script, "--local_rank=N", *script_args]``.
_DS_WORKER_ARGV = lazy_regex.compile(
    r"(?:spawned with command: |sigkill_handler\] )(?P<argv>\[(?:'[^'\n]{0,400}'(?:, )?){2,200}\])"
)
# The torchrun agent's own pid: torchelastic logs with glog's header, whose number after the
# time is the logging process (``W0710 17:01:46.645000 1063758 .../elastic/multiprocessing/
# api.py:897] Sending process 1064092 closing signal SIGTERM``).
_AGENT_SELF = lazy_regex.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ (?P<pid>\d+) \S*torch/distributed/(?:elastic|run)"
)
#: At most this many agent processes are remembered (a fleet's concatenated logs).
MAX_AGENT_PROCESSES = 64
#: At most this many worker pids are tied to their agent (LaunchFacts.worker_agents).
MAX_WORKER_AGENTS = 4096
#: The agent's closing-signal lines kept as events (a node's workers per attempt; bounded
#: against a log of endless restarts).
MAX_CLOSING_SIGNALS = 4096
# torchrun's agent stopping a worker after another failed (elastic/multiprocessing/api.py
# ``_close``): "Sending process 1235 closing signal SIGTERM".
_CLOSING_SIGNAL = lazy_regex.compile(
    r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z]+)"
)
# ColossalAI / InternLM: "Distributed environment is initialized, data parallel size: 4,
# pipeline parallel size: 1, tensor parallel size: 1" (world size = their product; rich
# logging may wrap it over lines, so each size is read on its own).
_PARALLEL_SIZE = lazy_regex.compile(r"\b(?P<kind>data|pipeline|tensor) parallel size: (?P<n>\d+)")
# vLLM's engine configuration, printed once at start-up ("Initializing an LLM engine (v0.5.3)
# with config: model=..., tensor_parallel_size=2, pipeline_parallel_size=1, ..."): the engine
# runs tensor x pipeline parallel worker processes (rank 0 in the engine's own process).
_ENGINE_PARALLEL = lazy_regex.compile(r"\b(?P<kind>tensor|pipeline)_parallel_size=(?P<n>\d{1,5})\b")


#: nccl-tests' benchmark binaries (all_reduce_perf, all_gather_perf_mpi...).
NCCL_TESTS_BIN = (
    r"(?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|gather|scatter"
    r"|hypercube)_perf(?:_mpi)?"
)
#: A printed nccl-tests command (``mpirun -np 16 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1``).
_NCCL_TESTS_COMMAND = lazy_regex.compile(
    r"(?:^|[$#>+]\s)\s*(?P<cmd>(?:(?:mpirun|mpiexec|srun)\s[^\n]{0,400}?)?\S*\b"
    + NCCL_TESTS_BIN
    + r"\b[^\n]{0,200})$"
)


# Which launcher ran the job, from what each prints (a launcher's own lines, its console
# script in a traceback, the Open MPI --tag-output prefix "[1,0]<stderr>:", mp.spawn's
# "-- Process 1 terminated with the following error:").
_LAUNCHER_SIGNS = (  # (name, literals one of which the line holds, regex)
    (
        # Lightning's own launcher (Trainer/Fabric re-run the script for each device): its
        # child-process observer's line when a rank's process died
        # (lightning/fabric/strategies/launchers/subprocess_script.py, _ChildProcessObserver)
        "lightning",
        ("Forcefully terminating all other processes",),
        lazy_regex.compile(
            r"Child process with PID \d+ terminated with code -?\d+\. Forcefully terminating"
        ),
    ),
    (
        # NVIDIA nccl-tests: a *_perf binary, or its header "# nThread 1 nGpus 8 minBytes 8"
        "nccl-tests",
        ("_perf", "# nThread "),
        lazy_regex.compile(r"\b" + NCCL_TESTS_BIN + r"\b|^# nThread \d+ nGpus \d+ minBytes"),
    ),
    (
        # vLLM's engine starts its own workers (Ray actors, multiprocessing): its Ray worker
        # prefix "(RayWorkerVllm pid=...)", "vllm serve", "python -m vllm.entrypoints..."
        "vllm",
        ("Vllm", "vllm", "VLLM"),
        lazy_regex.compile(
            r"\((?:RayWorkerVllm|VllmWorkerProcess|RayWorkerWrapper)\b|\bvllm serve\b"
            r"|-m vllm\.entrypoints|\bvllm[/.](?:engine|executor|worker|distributed)\b"
        ),
    ),
    (
        "mp.spawn",
        ("spawn", "ProcessRaised", "-- Process "),
        lazy_regex.compile(
            r"torch[/\\.]multiprocessing[/\\.]spawn|ProcessRaisedException|-- Process \d+ terminated with the following error"
        ),
    ),
    (
        # Ray: its log monitor prefixes each actor's or task's line with the actor class and
        # pid, plus the node's ip when the actor runs on another node than the driver
        # ("(ActorModelRayActor pid=748, ip=10.0.0.27) ...": ray/_private/log_monitor.py),
        # raylet's own lines, and its deduplication note ("[repeated 3x across cluster]").
        # vLLM's multiprocessing workers ("(VllmWorkerProcess pid=7311)") carry no ip.
        "ray",
        ("ip=", "(raylet", "across cluster]"),
        lazy_regex.compile(
            r"^\((?:[\w.]+ )?pid=\d+, ip=[\w.:-]+\)|^\(raylet(?:, ip=[\w.:-]+)?\)"
            r"|\[repeated \d+x across cluster\]"
        ),
    ),
    (
        # horovodrun's command, and its own tag on each worker's line when it runs the workers
        # itself (Gloo mode, elastic): "[3]<stderr>:" with the rank alone, after an optional
        # time.asctime() stamp with --timestamp-output (horovod/runner/common/util/
        # safe_shell_exec.py, forward_stream: '{time}[{rank}]<{prefix}>:{line}'); Open MPI's
        # --tag-output adds the job id ("[1,3]<stderr>:", below)
        "horovodrun",
        ("horovodrun", "]<std"),
        lazy_regex.compile(
            r"\bhorovodrun\b|^(?:\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[\d+\]<std(?:out|err)>:"
        ),
    ),
    (
        # HPE Cray PALS mpiexec (PBS Pro systems: Polaris, Aurora) reports each rank that did
        # not end by itself after the job's output, as "<host>: rank 4 died from signal 6 and
        # dumped core" or "<host>: rank 7 exited with code 1" (a host name first, then the
        # rank): the job ran under ``mpiexec -n N --ppn M``, which a rerun types the same way
        # (https://docs.alcf.anl.gov/polaris/running-jobs/). Before "mpirun": its word is not
        # on these lines, and its own form (``mpirun -np N``) is another launcher's.
        "pals",
        ("died from signal ", "exited with code "),
        lazy_regex.compile(
            r"^[\w-]{1,64}(?:\.[\w-]{1,64}){0,10}: rank \d{1,7} "
            r"(?:died from signal|exited with code) \d{1,3}\b"
        ),
    ),
    (
        # mpirun's own words and Open MPI's --tag-output prefix; and a Kubeflow MPIJob's
        # launcher pod name before each line ("mpi-rc1ou1aw-launcher: ...": the MPI Operator
        # names the pod <job>-launcher, and that pod runs mpirun over the worker pods)
        "mpirun",
        ("mpirun", "mpiexec", "prterun", "OMPI_COMM_WORLD", "]<std", "Primary job", "-launcher: "),
        lazy_regex.compile(
            r"\b(?:mpirun|mpiexec|prterun)\b|OMPI_COMM_WORLD|^\[\d+,\d+\]<std(?:out|err)>:|Primary job\s+terminated"
            r"|^[a-z0-9](?:[-a-z0-9]{0,60}[a-z0-9])?-launcher: "
        ),
    ),
    (
        # srun's own lines and command; and srun --label's task prefix on a worker's
        # torch-prefixed line ("10: [rank10]: ..."): Slurm started one task per rank and the
        # task id it prints is that rank (a srun-native launch, no torchrun between)
        "srun",
        ("srun", "slurmstepd", ": [rank"),
        lazy_regex.compile(
            r"^srun: |\bslurmstepd\b|(?:^|[$#>+]\s*)srun\s|^\s{0,4}(\d{1,6}): \[rank\1\]:"
        ),
    ),
    (
        "deepspeed",
        ("deepspeed", "launch.py:"),
        # its per-node launcher logs as "[launch.py:321:sigkill_handler]", "[launch.py:146:main]"
        lazy_regex.compile(
            r"deepspeed[/.]launcher|(?:^|[$#>+]\s*)deepspeed\s"
            r"|\[launch\.py:\d+:(?:main|sigkill_handler)\]"
        ),
    ),
    (
        "accelerate",
        ("accelerate",),
        lazy_regex.compile(r"accelerate[/.]commands[/.]launch|\baccelerate launch\b"),
    ),
    (
        # MosaicML composer's launcher: its logger's lines ("composer.cli.launcher") and its
        # command line ("composer -n 8 train.py ..."; composer/cli/launcher.py)
        "composer",
        ("composer",),
        lazy_regex.compile(
            r"\bcomposer\.cli\.launcher\b|(?:^|[$#>+]\s*)composer\s+(?:-n\s*\d+\s+)?\S+\.py\b"
        ),
    ),
    (
        "torchrun",
        ("torchrun", "torch/distributed", "torch.distributed", "ChildFailedError", "[default"),
        # "[default3]:" is torchrun's --tee prefix (role "default", local rank 3:
        # torch/distributed/elastic/multiprocessing/api.py tees each worker's output so)
        lazy_regex.compile(
            r"\btorchrun\b|torch[/.]distributed[/.](?:run|launch|elastic)\b|ChildFailedError"
            r"|^(?:[\w.-]+: )?\[default\d+\]:"
        ),
    ),
)
#: Every literal of :data:`_LAUNCHER_SIGNS`, then every word of :data:`_ENDPOINT_WORDS`, in
#: one case-sensitive automaton (:meth:`LaunchFacts.read`'s literal pre-screen): a line
#: holding none of them (almost every line) skips both the per-launcher tests and the
#: rendezvous endpoint's with one native pass over the line. A pattern index below
#: :data:`_LAUNCHER_LITERALS` is a launcher literal's, one at or above it an endpoint word's.
#: (A contiguous NFA: built in a fraction of the default's time, which every start pays.)
_LAUNCHER_LITERALS = len({lit for _, literals, _ in _LAUNCHER_SIGNS for lit in literals})
_LAUNCHER_WORDS = ahocorasick_rs.AhoCorasick(
    [
        *sorted({lit for _, literals, _ in _LAUNCHER_SIGNS for lit in literals}),
        *_ENDPOINT_WORDS,
    ],
    implementation=ahocorasick_rs.Implementation.ContiguousNFA,
)
#: Every word of :data:`rootrank.frameworks.STACK_WORDS`, likewise: a gated line that holds
#: none of them names no stack, so ``stacks_in`` (about 40 substring tests) is not called.
_STACK_WORDS = ahocorasick_rs.AhoCorasick(
    sorted({w for _, words in STACK_WORDS for w in words}),
    implementation=ahocorasick_rs.Implementation.ContiguousNFA,
)
#: Every word of :data:`rootrank.frameworks.STACK_WORDS` lower-cased, over a block's
#: lower-cased bytes (:func:`_stacks_in_block`); the words of each lower-cased form.
_STACK_FORMS = sorted({w.lower() for _, words in STACK_WORDS for w in words})
_STACK_BYTES = ahocorasick_rs.BytesAhoCorasick([w.encode("utf-8") for w in _STACK_FORMS])


def _stacks_in_block(text: str, lower: bytes, known: set[str]) -> set[str]:
    """``stacks_in(text, known)`` for a block: the words whose lower-cased form one native
    pass finds in ``lower`` (``text``'s UTF-8 bytes, ASCII letters lower-cased:
    :attr:`rootrank.ingest.Block.lower_bytes`) are then looked for in ``text``, as written.
    The same set: a word absent from ``lower`` is absent from ``text`` (every word is ASCII,
    and an ASCII character of ``text`` is the same byte of its encoding). ~7 ms per 4 MiB
    where ~40 substring searches of the whole block took ~48 ms (a per-rank file's first
    block is the whole file)."""
    forms = {
        _STACK_FORMS[i] for i, _, _ in _STACK_BYTES.find_matches_as_indexes(lower, overlapping=True)
    }
    if not forms:
        return set()
    text = without_env_names(text)
    return {
        stack
        for stack, words in STACK_WORDS
        if stack not in known and any(w.lower() in forms and w in text for w in words)
    }


#: A launcher's own package directory in a frame's path: the job ran under that launcher.
_LAUNCHER_PATHS = (
    ("accelerate", "accelerate/commands/launch"),
    ("deepspeed", "deepspeed/launcher/"),
    # Lightning's own launchers (Trainer/Fabric re-run the script for each device, or spawn):
    # every Trainer.fit goes through one, also under torchrun or srun, which then take
    # precedence (rootrank.entry.commands.PRECEDENCE)
    ("lightning", "strategies/launchers/subprocess_script"),
    ("lightning", "strategies/launchers/multiprocessing"),
    # a Determined trial: the agent runs the experiment's entrypoint from the model
    # definition it copied to /run/determined/workdir (its launch harness,
    # determined/launch/torch_distributed.py, wraps torchrun): the job is rerun by submitting
    # the experiment again, not by a command on one node
    ("determined", "/run/determined/workdir/"),
    ("determined", "determined/launch/"),
)


def _own_process_target(frames: list[Frame]) -> bool:
    """Whether a traceback (or faulthandler's stack) runs a user function as the target of a
    ``multiprocessing.Process`` the script started itself: the frame right under the standard
    library's ``multiprocessing/process.py`` ``run`` (``self._target(*self._args, ...)``) is
    the user's code. The script is then its own launcher, as under ``mp.spawn`` (torch's
    spawn is ``mp.spawn``'s own sign; a DataLoader worker's target is torch's ``_worker_loop``,
    not user code)."""
    for outer, inner in zip(frames, frames[1:], strict=False):
        if (
            outer.func == "run"
            and outer.file.replace("\\", "/").endswith("multiprocessing/process.py")
            and inner.user
        ):
            return True
    return False


#: Frames of a library that drove the job's engine set-up (not a launcher's own file): the
#: Accelerator's prepare (accelerate/accelerator.py: _prepare_deepspeed, _prepare_fsdp...).
_DRIVER_PATHS = (("accelerate", "accelerate/accelerator.py"),)
_COMMAND_WORDS = (
    "torchrun",
    "python",
    "deepspeed",
    "accelerate",
    "mpirun",
    "mpiexec",
    "srun",
    "horovodrun",
    "composer",
    ".sh",
    "-cli ",
    # frameworks' own CLIs (launchers.FRAMEWORK_CLI)
    "nemo ",
    "swift ",
    "megatron ",
    "tune run",
    "xtuner ",
    "oumi ",
)
#: What may stand before a launch command on its line and belongs to it: a wrapper that runs
#: the rest (``env``, ``nohup``, or a site's own word directly before assignments:
#: ``with-proxy CONFIG_FILE=x ./run.sh``) and the ``VAR=value`` assignments the shell passes
#: to the command (``CUDA_VISIBLE_DEVICES=0,1 NGPU=2``). A rerun types them too.
#: The wrappers that take arguments of their own before the command (coreutils' ``timeout
#: [-s SIG] [-k D] DURATION``, ``nice [-n N]``, ``stdbuf -oL``, ``time``) are kept too: a
#: rerun without ``timeout 45`` waits unbounded where the job hung.
ENV_PREFIX = (
    r"(?:(?:env|nohup|time"
    r"|timeout(?:\s+(?:-[sk]\s*\S+|--[\w-]+(?:=\S+)?))*\s+\d+(?:\.\d+)?[smhd]?"
    r"|nice(?:\s+-n\s*-?\d+|\s+-\d+)?|stdbuf(?:\s+-[ioe]\w+)+"
    r"|[\w-]+(?=\s+[A-Za-z_]\w*=))\s+){0,3}"
    r"(?:[A-Za-z_]\w*=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']*)\s+)*"
)


def own_command(line: str) -> str:
    """The launch command of a shell line, without what the shell runs after it: the line
    cut at the first ``;``, ``&&``, ``||`` or ``|`` outside quotes (``torchrun ... x.py; echo
    "exit status: $?"``, ``python x.py 2>&1 | tee log``), when the part before still runs a
    script or a module (:data:`_COMMAND`); ``line`` otherwise."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in ";|" or line.startswith("&&", i):
            head = line[:i].rstrip()
            return head if _COMMAND.search(head) else line
    return line


#: :data:`ENV_PREFIX` at the start of a command (to read the launcher after it).
ENV_HEAD = lazy_regex.compile("^" + ENV_PREFIX)
# A launch command as a shell or job script prints it (a prompt, `set -x`'s "+ "), up to the
# end of the line: it must name a .py script or a -m module.
#: UCX's start-up record of the process's command line (src/ucs/sys/init.c,
#: ``ucs_debug("cmd line: %s", ...)``): ``UCX  DEBUG cmd line: /opt/py/bin/python x.py``.
_UCX_CMD = lazy_regex.compile(
    r"UCX\s+DEBUG\s+cmd line: \S*python[\d.]*\s+(?:-\S+\s+)*(?P<s>[^\s'\"]+\.py)\b"
)
_COMMAND = lazy_regex.compile(
    r"(?:^|[$#>+%➜✗❯]\s)\s*(?P<cmd>"
    + ENV_PREFIX
    + r"(?:"
    + launchers.ANY
    + r")(?=\s)[^\n]{0,500}?(?:\S+\.py|(?<!\S)-m\s+[\w.]+)\b[^\n]{0,300})$"
)
#: The first line of a launch command split over lines (it ends with a backslash) whose
#: script comes on a later line: ``torchrun --nnodes=2 --node_rank=0 \``.
_COMMAND_HEAD = lazy_regex.compile(
    r"(?:^|[$#>+]\s)\s*(?P<cmd>"
    + ENV_PREFIX
    + r"(?:"
    + launchers.ANY
    + r")(?=\s)[^\n]{0,500}?)\s*\\$"
)
#: A job started by something other than a launcher and a script, typed after a shell prompt
#: (``$``, ``#``, zsh's ``%``, oh-my-zsh's ``➜``/``✗`` and starship's ``❯`` glyphs
#: at its end; or ``set -x``'s "+ "): a shell script the framework ships (torchtitan's
#: ``NGPU=8 CONFIG_FILE=x.toml ./run_train.sh``, ``bash scripts/pretrain.sh``) or a
#: framework's own CLI (``llamafactory-cli train x.yaml``). The whole line is the command.
_ENTRY_COMMAND = lazy_regex.compile(
    r"[$#+%➜✗❯]\s+(?P<cmd>"
    + ENV_PREFIX
    + r"(?:(?:(?:bash|sh)\s+|\./)\S*\.sh\b|[\w.-]+-cli\s+[a-z]\w*|(?:"
    + launchers.FRAMEWORK_CLI
    + r")(?=\s|$))"
    r"[^\n]{0,300})$"
)


#: A new run of the job in the same file: the launcher's start banner (torchrun and accelerate
#: print it once per start: torch/distributed/run.py) or a shell prompt that types a launch
#: command. It starts a new attempt only after the current one failed.
_OMP_BANNER = "Setting OMP_NUM_THREADS environment variable for each process"
#: A job script's own start lines, printed once each time the script runs, whatever launcher
#: (if any) it then starts: ``nvidia-smi``'s table header (``| NVIDIA-SMI 570.158.01
#: Driver Version: ...``), which Slurm/PBS job scripts print first. A second one in a file is
#: the script starting again (a requeue, a resubmission appending to the same ``--output``)
#: when the run before it failed, or when training progress after it starts over
#: (:meth:`Scanner._job_restarts`).
_JOB_HEADER = lazy_regex.compile(r"\|\s{0,3}NVIDIA-SMI\s+\d[\d.]*\s+Driver Version:")
_TRACEBACK_START = "Traceback (most recent call last):"

#: The most lines between torchrun's failure summary and a cut after it that may be moved to
#: the next run (:meth:`Scanner._after_close`).
MAX_AFTER_SUMMARY = 50
#: ``python -c CODE`` (options before ``-c`` allowed: ``python3 -X faulthandler -c ...``).
_PYTHON_CODE = lazy_regex.compile(launchers.PYTHON_CODE)
#: torchrun's per-worker prefix of a teed line (``[rank3]:``, ``[default3]:``).
_TEE_PREFIX = lazy_regex.compile(r"\[(?:rank|default)\d{1,6}\]:")
# A log record's level name in its header (Python logging's %(levelname)s, loguru's, glog's
# words): the record a logger printed a traceback under with exc_info.
_RECORD_LEVEL = lazy_regex.compile(r"\b(?:WARNING|WARN|ERROR|CRITICAL|FATAL|EXCEPTION)\b")
# A launcher's command line at the text's start: typed at a prompt ("$ torchrun ...",
# "[user@host]# srun ...") or traced by a script's `set -x` ("+ torchrun ...": bash prints
# PS4, "+ " by default, one "+" more per level of nesting, before each command it runs).
_RUN_COMMAND = lazy_regex.compile(
    r"(?:\S{0,80}[$#]|\+{1,3}) (?:" + launchers.MULTI_PROCESS + r"|sbatch)\b"
)


#: Characters of a block the scanner reads ahead at a cut between two sections of one file
#: (:meth:`Scanner._peek_section`), and how many cuts of one source may read ahead.
PEEK_CHARS = 65536
MAX_PEEKS = 64
#: How many of the latest cuts of one source keep the launch facts read since them
#: (:attr:`Scanner._launch_since`), for a job found at the source's end to begin at one.
MAX_LAUNCH_SHADOWS = 8
#: A traceback after a failure is checked for another program (:meth:`Scanner._other_program`)
#: while the section holds at most this many exceptions (a job of many ranks prints one per
#: rank: its later tracebacks are its own, and the check would cost one pass over them each).
MAX_PROGRAM_CHECKS = 8


def _see_tracebacks(facts: SectionFacts, excs: Iterable[SeenException]) -> None:
    """Add the process identity of the tracebacks ``excs`` to ``facts``
    (rootrank.runs.SectionFacts.see_traceback)."""
    for seen in excs:
        facts.see_traceback(seen.exc.type, seen.exc.frames)


def _last_lines(text: str, first_line: int, words: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """For each name of ``words`` one of whose words ``text`` holds, the 1-based line of its
    last occurrence (``text`` begins at line ``first_line``)."""
    found: dict[str, int] = {}
    for name, forms in words.items():
        pos = max((text.rfind(w) for w in forms), default=-1)
        if pos != -1:
            found[name] = first_line + text.count("\n", 0, pos)
    return found


def _other_entry(script: str | None, excs: Iterable[SeenException]) -> str | None:
    """The entry script of a traceback in the section after torchrun's failure summary, when
    it is not ``script`` (the summary's ``x.py FAILED`` title): its outermost ``<module>`` frame
    names another script, and neither the exception (a wrapper's ``CalledProcessError``) nor the
    file (``torchrun`` itself, a second agent) is a launcher's report of the same run. The file
    name, or ``None``."""
    if not script:
        return None
    own = script.replace("\\", "/").rsplit("/", 1)[-1]
    for seen in excs:
        exc = seen.exc
        if not exc.frames or exc.type.endswith(REPORT_EXCEPTIONS):
            continue
        first = exc.frames[0]
        path = first.file.replace("\\", "/")
        if first.func != "<module>" or not path.endswith(".py"):
            continue
        if any(part in path for part in LAUNCHER_FILES):
            continue
        name = path.rsplit("/", 1)[-1]
        if name != own:
            return name
    return None


def _program_after_summary(
    facts: SectionFacts, excs: Iterable[SeenException], later_ranks: set[int]
) -> str | None:
    """Why the exceptions ``excs`` of the section after torchrun's failure summary (the
    agent's last words) are another program's than the run's whose section ``facts`` describe,
    as a clause about that run for the report; ``None`` when they may be the run's own.

    After the summary only a report of the run fits: a wrapper's or launcher's exception
    (:data:`rootrank.runs.REPORT_EXCEPTIONS`, a frame in a launcher's files or ``subprocess``),
    a worker's late output (a rank of the run, ``later_ranks`` or the exception's own, or a
    frame in the run's entry script or user files). An exception that is none of these, with
    no rank of the run on the section's lines, came from a process the run never started:
    another job whose log was appended (``cat train.log serve.log``), however short (a paste
    of its last four lines, no traceback header, no entry script, no engine frame)."""
    excs = list(excs)
    if not excs or later_ranks & facts.ranks:
        return None
    own = facts.entries | facts.user_files
    for seen in excs:
        exc = seen.exc
        if exc.type.endswith(REPORT_EXCEPTIONS) or exc.type.endswith("ChildFailedError"):
            return None
        if seen.rank is not None and seen.rank in facts.ranks:
            return None
        for f in exc.frames:
            path = f.file.replace("\\", "/")
            if any(part in path for part in LAUNCHER_FILES) or path.endswith("/subprocess.py"):
                return None
            if path.rsplit("/", 1)[-1] in own:
                return None
    ran = facts.script or ", ".join(sorted(facts.entries)) or "its workers"
    return (
        f"it ran {ran} and torchrun's failure summary ended it; the next lines' "
        f"{excs[0].exc.type} is no report of that run (no rank of it, no launcher frame)"
    )


#: Progress formats whose total is the whole run's (Lightning's bar counts one epoch).
_RUN_TOTAL_KINDS = ("tqdm", "megatron", "plain")


def _starts_run(text: str) -> bool:
    """Whether ``text`` starts a run: torchrun's ``OMP_NUM_THREADS`` banner anywhere in it, or
    a launcher's command line (:data:`_RUN_COMMAND`, which needs ``$ `` or ``# `` in the first
    82 characters or a ``+`` first, so most lines are answered without a regex). Once one search of
    ``banner|^command`` (~23 us on a 127-character NCCL line, on every gated line after a
    failure); ``tests/test_run_start.py`` holds the two to the same answers."""
    if _OMP_BANNER in text:
        return True
    head = text[:82]
    return ("$ " in head or "# " in head or text.startswith("+")) and _RUN_COMMAND.match(
        text
    ) is not None


#: torchrun's agent logs its worker group's first failure once per failed attempt
#: (torch/distributed/elastic/multiprocessing/api.py, ``PContext._poll``); with
#: ``--max-restarts`` it then starts the group again and, at its default log level, prints
#: nothing else. A second such line from one agent (the glog header's pid) is a restart.
#: A line of torchrun's own (its start banner, the agent's signals and failures): the glog
#: header's pid is the agent's (rootrank.runs.SectionFacts.agents).
#: (after a wrapper's per-line host prefix too, ``node-a01: W1205 ...``: two hosts' agents
#: interleaved in one terminal are two nodes of one run, rootrank.runs.another_node)
_AGENT_LINE = lazy_regex.compile(
    r"^(?:[\w.-]{1,64}: )?[EWI]\d{4} [\d:.]+\s+(?P<agent>\d+) \S*torch/distributed/"
)
# A launcher's or a trainer's own report that training ended normally, with the words the
# reasoning gives it (rule ``run_completed``, rootrank.analysis.completed):
# - torchelastic's agent (elastic/agent/server/api.py ``_invoke_run``) logs "[<role>] worker
#   group successfully finished. Waiting N seconds for other agents to finish." only when its
#   monitor found the group's state ``WorkerState.SUCCEEDED``: every local worker exited 0;
# - Lightning's fit loop (``_FitLoop.done``) logs "`Trainer.fit` stopped: `max_epochs=N`
#   reached." (or ``max_steps``) on rank zero once the loop reached its configured end;
# - torchtitan's train.py logs "Training completed" after its loop and the metric logger's
#   close, as the message of its own logger record (the line ends there); a plain script's
#   ``log.info("training complete")`` / ``print("Training finished.")`` after its loop is the
#   same report in other words: the record's whole message, after a logger header, a rank tag
#   or nothing, or the last clause of a record after a comma (``saved final.pt, training
#   finished``: the loop's last act and its end in one line; heldout r24c case 12)
#   (rootrank.analysis.completed still requires no failed worker and only caught
#   tracebacks before it);
# - the Hugging Face Trainer (transformers/trainer.py ``_inner_training_loop``) logs
#   "Training completed. Do not forget to share your model on huggingface.co/models =)" once
#   its loop ended, on the main process; scripts that copy its logging format put it after a
#   ``[INFO|file.py:N] <time> >> `` header (the ``>>`` is that format's separator);
# - DeepSpeed's launcher (deepspeed/launcher/launch.py ``main``) logs "Process <pid> exits
#   successfully." for each worker whose return code was 0 (a nonzero one makes it kill the
#   others instead: "Killing subprocess");
# - Megatron-LM's pretrain() prints "[after training is done] datetime: ..." once train()
#   returned (its iteration schedule ran to its end), before the final save and evaluation.
RUN_END_REPORT = lazy_regex.compile(
    r"\] worker group successfully finished\. Waiting"
    r"|(?P<mg>\[after training is done\] datetime:)"
    r"|(?P<ds>(?:^|\] )Process \d+ exits successfully\.)"
    r"|(?P<pl>`Trainer\.fit` stopped: `max_(?:epochs|steps)=\w{1,16}` reached)"
    r"|(?P<titan>(?:^|[\]:>;,-] )(?:[Tt]raining (?:is )?(?:complete|completed|finished|done)"
    r"|[Ff]inished training|[Dd]one training)[.!]?\s*$)"
    r"|(?P<hf>(?:^|[\]:>-] )Training completed\. Do not forget to share your model)"
)

# A rank's own end-of-run record, in a script's words: ``log.info(f"rank {rank} training
# complete")``, ``print(f"rank {rank} done, skipped {n} steps")``, or the same after a rank
# prefix (``[rank1]: finished``), ``rank 2: finished run r18b-13`` (the run named after the
# word). The end word follows the rank's name (or starts the line's body) and ends the clause,
# or names the run, training or job it ended: "rank 0 done loading" is a step of start-up,
# not the run's end.
# Read per rank (ScanMachine._rank_last): only when every rank's last line is such a record
# does it show the run's end (rootrank.analysis.completed).
_RANK_END = lazy_regex.compile(
    r"(?i)(?:^|(?<![\w-])rank[ =:#]?\d{1,6}\]?[:,]?\s+)"
    r"(?:(?:training|train|run|job|worker|process)\s+(?:is\s+|has\s+)?)?"
    r"(?P<end>completed?|finished|done)(?=\s*$|[.,;!(]|\s+(?:in|after)\s|\s+(?:run|training|job)\b)"
)

# A line a rank prints about itself, its body starting with its name: ``rank 3 on vm
# group_rank 1 hidden 64`` (a script's ``print(f"rank {rank} ... hidden {HIDDEN}")``). The
# ``name value`` / ``name=value`` pairs after it with a numeric value are its settings.
# A logger's level and name may come first: ``INFO shards rank2: RLIMIT_NOFILE soft=256``.
_RANK_SELF = lazy_regex.compile(
    r"(?i)^(?:\[[^\]]{0,80}\]\s*)*"
    r"(?:(?-i:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:[A-Za-z_][\w.-]{0,40}:?\s+)?)?"
    r"rank[ =:]?(?P<n>\d{1,6})\b[:,]?(?P<rest>.{1,400})"
)
#: :data:`_RANK_SELF` over a whole text, one match per line (the set-up lines of
#: ``ScanState.heads`` the gate did not choose: rootrank.ranklines.rank_settings).
RANK_SELF_LINES = lazy_regex.compile(
    r"(?im)^(?:\[[^\]\n]{0,80}\][ \t]*)*"
    r"(?:(?-i:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[ \t]+(?:[A-Za-z_][\w.-]{0,40}:?[ \t]+)?)?"
    r"rank[ =:]?(?P<n>\d{1,6})\b[:,]?(?P<rest>[^\n]{1,400})"
)
#: Autograd anomaly mode's warning before the forward stack it prints, naming the backward
#: function (torch/csrc/autograd/python_anomaly_mode.cpp: "Error detected in {name}.
#: Traceback of forward call that caused the error:"), and the exception the engine then
#: raises naming the same function (torch/csrc/autograd/engine.cpp: "Function '{name}'
#: returned nan values in its {i}th output.").
_FORWARD_HEAD = "Traceback of forward call that caused the error"
_FORWARD_FN = lazy_regex.compile(r"Error detected in (?P<fn>\w+)\. Traceback of forward call")
_NAN_BACKWARD = lazy_regex.compile(r"Function '(?P<fn>\w+)' returned nan values")
#: Lines of one forward stack read at most (deep module nesting prints many frames).
MAX_FORWARD_LINES = 400
#: A config dict a rank logs (``[rank2] INFO config {'lr': 30000.0, 'micro_batch': 16}``): its
#: quoted keys with a numeric value are the rank's settings, whatever their names (a dict
#: printed once per rank is configuration, not a per-step value).
_DICT_SETTING = lazy_regex.compile(
    r"['\"](?P<k>[A-Za-z_][A-Za-z_\d]{0,30})['\"]:\s*(?P<v>-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?![\w.])"
)
_SETTING = lazy_regex.compile(
    r"(?<![\w.-])(?P<k>[A-Za-z_][A-Za-z_\d]{1,30})(?:=| )(?P<v>-?\d+(?:\.\d+)?)(?![\w.])"
)
#: A dtype a rank prints of itself (``first weight dtype torch.bfloat16``, ``param_dtype=bf16``):
#: a setting like a number (a rank that builds its model in another dtype sends other bytes).
_DTYPE_SETTING = lazy_regex.compile(
    r"(?<![\w.-])(?P<k>dtype|[A-Za-z_][A-Za-z_\d]{0,30}_dtype|precision)(?:=|:|\s)\s*"
    r"(?P<v>(?:torch\.)?(?:bfloat16|float16|float32|float64|half|bf16|fp16|fp32|fp64))(?![\w.])"
)
#: Another rank's own line glued to the end of this one (two processes writing one stream at
#: once: ``... torch.float32rank 2: model built ...``): the text from there is that rank's.
_GLUED_RANK = lazy_regex.compile(r"(?<=\S)rank ?(?P<n>\d{1,6}):")


def glued_ranks(rank: int, rest: str) -> list[tuple[int, str]]:
    """``rest`` (what ``rank`` printed after its name) split where another rank's own line is
    glued to it (:data:`_GLUED_RANK`): ``[(rank, its part), (other rank, its part), ...]``;
    ``[(rank, rest)]`` when nothing is glued."""
    out: list[tuple[int, str]] = []
    at, who = 0, rank
    for m in _GLUED_RANK.finditer(rest):
        out.append((who, rest[at : m.start()]))
        at, who = m.end(), int(m["n"])
    out.append((who, rest[at:]))
    return out


#: Names that differ between ranks by nature (their place in the job, their progress, their
#: timing), never a setting to compare.
_PER_RANK_NAME = lazy_regex.compile(
    r"(?i)rank|pid|host|node|device|gpu|cuda|port|addr|step|iter|epoch|batch_idx|loss|time|"
    r"sec|ms\b|acc|lr\b|grad|norm|seq|len|idx|index|count|tokens|samples|seed"
)
#: Names that are a verb of what the rank produced from its data (``wrote 512 predictions``,
#: ``scored 25600``, ``exported 40``): a count of output that follows from the rank's share of
#: the data, which differs across ranks by nature, never a setting (heldout r25e case 10: rank
#: 1's "wrote 512 predictions" beside rank 2's 51200 is its smaller split, not another config).
#: A count of what the rank took in or kept (``found 34 files``, ``kept 51/64``, ``loaded``)
#: stays a setting: it sets the rank's step count, and a rank that differs there desyncs.
_OUTPUT_COUNT_NAME = lazy_regex.compile(
    r"(?i)^(?:wrote|written|scored|processed|saved|sent|generated|produced|emitted|predicted"
    r"|evaluated|decoded|encoded|exported)$"
)
#: How many setting names are kept per rank.
MAX_SETTINGS = 64


#: A rank's settings: ``{name: (value, path, 1-based line)}``, ``None`` for a name the rank
#: printed with two values (a series).
Settings = dict[str, tuple[str, str, int] | None]


def note_settings(
    mine: Settings, rest: str, path: str, number: int, *, dict_form: bool = False
) -> None:
    """Add to ``mine`` (one rank's :data:`Settings`) the numeric settings of a line the rank
    printed of itself, and the dtypes it names (:data:`_DTYPE_SETTING`) (``rest``: the words
    after its name; :data:`_SETTING`, names of
    :data:`_PER_RANK_NAME` and :data:`_OUTPUT_COUNT_NAME` skipped), at ``path``:``number`` (1-based); with ``dict_form``,
    the quoted keys of a config dict (:data:`_DICT_SETTING`), whatever their names. A name
    seen again with another value becomes ``None``; at most :data:`MAX_SETTINGS` names."""
    found = list((_DICT_SETTING if dict_form else _SETTING).finditer(rest))
    if not dict_form and ("type" in rest or "precision" in rest):
        found += list(_DTYPE_SETTING.finditer(rest))
    for m in found:
        name, value = m["k"], m["v"]
        if not dict_form and (_PER_RANK_NAME.search(name) or _OUTPUT_COUNT_NAME.match(name)):
            continue
        if name in mine:
            old = mine[name]
            if old is not None and old[0] != value:
                mine[name] = None  # two values on one rank: a series, not a setting
        elif len(mine) < MAX_SETTINGS:
            mine[name] = (value, path, number)


def odd_setting(
    settings: dict[int, Settings], rank: int | None
) -> tuple[str, str, str, int, list[int]] | None:
    """A setting ``rank`` printed with another value than every other rank that printed it,
    those others agreeing: ``(name, its value, the others' value, its 1-based line, the
    other ranks)``; ``None`` when there is none (or ``rank`` is ``None``). Read from
    ``settings`` (:attr:`ScanState.rank_settings`): the model width, the batch size, a
    config value a script prints per rank. Ranks that built their model or data from
    different settings were launched differently (an environment variable or argument given
    on one node only)."""
    if rank is None or rank not in settings:
        return None
    for name, got in settings[rank].items():
        if got is None:
            continue
        others = {r: v[name] for r, v in settings.items() if r != rank and v.get(name) is not None}
        values = {v[0] for v in others.values() if v is not None}
        if len(values) == 1 and got[0] not in values:
            return name, got[0], values.pop(), got[2], sorted(others)
    return None


_AGENT_FAILED = lazy_regex.compile(
    r"(?:^|\s)[EW]\d{4} [\d:.]+\s+(?P<agent>\d+) \S*elastic/multiprocessing/api\.py:\d+\] "
    r"failed \(exitcode: -?\d+\) local_rank: \d+ (?:\(pid: (?P<pid>\d+)\))?"
)


@dataclass(frozen=True, slots=True)
class ClosingSignal:
    """One ``Sending process N closing signal SIGTERM`` line of torchrun's agent: the worker
    ``pid`` it signalled, the signal's name, where (``path``, 1-based ``line``), and the line's
    timestamp (s since the epoch) and host when its prefix shows them."""

    pid: int
    signal: str
    path: str
    line: int
    time: float | None
    host: str | None


def deepspeed_command(argv_text: str) -> str | None:
    """The ``deepspeed`` command that starts the job whose worker argv DeepSpeed's launcher
    printed (``argv_text``: the list as Python prints it, ``['/usr/bin/python', '-u',
    'train.py', '--local_rank=1', '--lr', '2e-5']``): ``deepspeed --num_gpus <gpus> train.py
    --lr 2e-5``. The interpreter, ``-u`` and the ``--local_rank=N`` the launcher adds per
    worker go; ``-m pkg.mod`` becomes ``--module pkg.mod`` (deepspeed/launcher/runner.py);
    ``<gpus>`` stays a blank for :mod:`rootrank.entry.commands` to fill. Arguments are quoted
    as a shell needs them. ``None`` when the text is not such a list (cut short, no script).

    The argv is the one the workers ran, so the rerun passes the script the same arguments
    (deepspeed/launcher/launch.py builds ``cmd`` from them and prints it).
    """
    import ast  # here: a start whose log has no such line does not load the parser

    try:
        argv = ast.literal_eval(argv_text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    rest = argv[1:]
    if rest[:1] == ["-u"]:
        rest = rest[1:]
    head = ["deepspeed", "--num_gpus", "<gpus>"]
    if rest[:1] == ["-m"] and len(rest) > 1:
        head += ["--module", rest[1]]
        rest = rest[2:]
    elif rest and rest[0].endswith(".py"):
        head.append(rest[0])
        rest = rest[1:]
    else:
        return None
    args = [a for a in rest if not regex_code.fullmatch(r"--local[_-]rank=\d+", a)]
    return " ".join(head[:3] + [shlex.quote(a) for a in head[3:] + args])


#: A launch command a framework prints in its own words just before it starts it, the whole
#: argv joined by spaces: ms-swift's CLI (swift/cli/main.py ``cli_main``: ``print(f"run sh:
#: `{' '.join(args)}`")``, ``args`` = ``[sys.executable, '-m', 'torch.distributed.run',
#: *torchrun_args, file_path, *argv]`` or ``[sys.executable, file_path, *argv]``) and
#: DeepSpeed's runner (deepspeed/launcher/runner.py ``main``: ``logger.info(f"cmd = {'
#: '.join(cmd)}")``, ``cmd`` = ``[sys.executable, '-u', '-m', 'deepspeed.launcher.launch',
#: '--world_info=...', ..., user_script, *user_args]`` on one node, a ``pdsh``/``mpirun`` line
#: on several). ``sh``: ms-swift's; ``ds``: DeepSpeed runner's.
_FRAMEWORK_COMMAND = lazy_regex.compile(
    r"(?:^|\s)run sh: `(?P<sh>[^`\n]{1,4000})`\s*$|(?:^|\] )cmd = (?P<ds>[^\n]{1,4000})$"
)


def framework_command(text: str) -> tuple[str, str] | None:
    """The launch command a framework printed on the line ``text`` (:data:`_FRAMEWORK_COMMAND`)
    as ``(kind, command)``: ``kind`` ``"sh"`` (ms-swift's ``run sh:``, the job's own launch:
    ``/usr/bin/python -m torch.distributed.run --nproc_per_node 8 .../swift/cli/sft.py --model
    x``) or ``"ds"`` (DeepSpeed's runner's ``cmd =``, its per-node launcher and the script's
    arguments); the command as printed, its interpreter's path kept (the one the job used).
    ``None`` when the line prints no such command or what it prints does not start a launcher
    or interpreter that runs a script or module (a ``pdsh`` fan-out, a cut line)."""
    m = _FRAMEWORK_COMMAND.search(text)
    if m is None:
        return None
    kind = "sh" if m["sh"] is not None else "ds"
    command = (m["sh"] or m["ds"]).strip()
    # the program as a path (/usr/local/bin/python) is read by its name
    probe = regex_code.sub(r"^\S*/(?=\S)", "", command)
    parts = launch_parts(probe)
    if parts is None or not probe.startswith(parts[0].split()[0]):
        return None
    return kind, command


#: The longest printed launch command kept (continuation lines joined).
MAX_COMMAND_CHARS = 4000


@dataclass
class LaunchFacts:
    """What the log says about the job's layout, for mapping local ranks to global ranks.

    ``single_node`` / ``multi_node`` hold the phrases (with 1-based line numbers) that show
    one node / several nodes; ``nproc_per_node`` is the launcher's ``--nproc-per-node``;
    ``agent_pids`` are the worker pids one torchrun agent stopped or saw fail;
    ``parallel_sizes`` the ColossalAI-style data/pipeline/tensor sizes; ``launch_command`` a
    printed torchrun command line, and ``node_flags`` whether any multi-node flag appears;
    ``hosts`` the rendezvous hosts launchers name (``MASTER_ADDR=``, ``--rdzv-endpoint``);
    ``script`` the entry script as the launcher names it (``scenarios/train_x.py``);
    ``launcher`` ``"deepspeed"`` or ``"accelerate"`` when that launcher started it.
    ``launchers``/``command``: see the fields (read by :mod:`rootrank.entry.commands`).
    """

    single_node: list[str] = field(default_factory=list)
    multi_node: list[str] = field(default_factory=list)
    #: The node count the launcher's own flags or agent print (``--nnodes=2``, ``--nnodes 2:4``
    #: its maximum, ``group_world_size=2``), the largest one, when above 1; else ``None``.
    nnodes: int | None = None
    #: Whether the log gave two different node counts (a node launched with another
    #: ``--nnodes``): :attr:`nnodes` is then their largest, no count to rerun with.
    nnodes_differ: bool = False
    nproc_per_node: int | None = None
    agent_pids: set[int] = field(default_factory=set)
    parallel_sizes: dict[str, int] = field(default_factory=dict)
    #: An inference engine's own parallel layout (vLLM's ``tensor_parallel_size=2,
    #: pipeline_parallel_size=1``): ``{"tensor": 2, "pipeline": 1}`` (:data:`_ENGINE_PARALLEL`).
    engine_parallel: dict[str, int] = field(default_factory=dict)
    launch_command: str | None = None
    node_flags: bool = False
    hosts: set[str] = field(default_factory=set)
    script: str | None = None
    #: The entry module of a ``-m`` launch (``pkg.server``), when no script is named.
    module: str | None = None
    launcher: str | None = None
    #: pids the agent sent a closing signal to (``Sending process N closing signal SIGTERM``).
    closing_pids: set[int] = field(default_factory=set)
    #: Worker pids a launcher names as its own besides torchrun's (DeepSpeed's "Killing
    #: subprocess N"); with ``agent_pids``: :meth:`worker_pids`.
    launcher_kill_pids: set[int] = field(default_factory=set)
    #: pids mp.spawn's parent terminated after one of its processes failed (:data:`_SPAWN_KILL`).
    spawn_kill_pids: set[int] = field(default_factory=set)
    #: srun task ids that ran torchrun's agent (``srun ... torchrun``; ranks.RankTagger).
    srun_agent_tasks: set[int] = field(default_factory=set)
    #: Every launcher the log shows signs of (``torchrun``, ``mp.spawn``, ``mpirun``...).
    launchers: set[str] = field(default_factory=set)
    #: Libraries whose own code set the job's engine up, read from traceback frames
    #: (:data:`_DRIVER_PATHS`: ``accelerate`` for accelerate's Accelerator); with no launcher
    #: shown, they name the launcher a verification uses (rootrank.entry.commands.launch_of).
    drivers: set[str] = field(default_factory=set)
    #: The launch command as printed (``torchrun --nproc-per-node=4 train.py --lr 1``).
    command: str | None = None
    #: A printed nccl-tests command (``mpirun -np 16 all_reduce_perf -b 8 -e 8G -g 1``).
    tool_command: str | None = None
    #: The printed command ended with a backslash: the next line continues it (a shell command
    #: split over lines, ``torchrun ... train.py \`` then ``    --lr 3e-4 \``...).
    continues: bool = False
    #: The job is the process ``rootrank run`` started itself (:meth:`ran`): ``command`` is
    #: what it ran, not what a log printed.
    launched_here: bool = False
    #: The ``deepspeed`` command that reruns the job, rebuilt from the worker argv DeepSpeed's
    #: launcher prints (:func:`deepspeed_command`) when the log prints no launch command.
    worker_command: str | None = None
    #: The command-line overrides of a Hydra app, as its failure report lists them
    #: (:func:`hydra_overrides`); ``None`` when the log shows no such report.
    hydra_overrides: tuple[str, ...] | None = None
    #: The 1-based line of that report (its traceback follows it).
    hydra_line: int = 0
    #: The command DeepSpeed's runner printed for its per-node launcher (``cmd = /usr/bin/python
    #: -u -m deepspeed.launcher.launch --world_info=... train.py --lr 1``, :func:`framework_command`):
    #: it reruns the job whole when the workers' argv (:attr:`worker_command`) is not printed.
    runner_command: str | None = None
    #: DeepSpeed's runner's ``cmd = ...`` line as printed, whatever it starts (a ``pdsh`` /
    #: ``mpirun`` fan-out over nodes too): the nodes and rendezvous options the job ran with
    #: (rootrank.entry.commands.with_runner_options).
    runner_line: str | None = None
    #: An output filter that keeps some local ranks' lines only (``--local-ranks-filter 0``,
    #: ``LOG_RANK=0``): the phrase and its line, and the ranks it keeps.
    rank_filter: str | None = None
    rank_filter_keeps: tuple[int, ...] = ()
    #: The first rendezvous endpoint the log prints whole, ``host:port`` (:data:`_ENDPOINT`);
    #: ``None`` when not printed (:meth:`rendezvous` also joins the two halves below).
    endpoint: str | None = None
    #: The host of a rendezvous endpoint the log prints without a port (``--rdzv_endpoint=
    #: node01``, :data:`_ENDPOINT_NO_PORT`), when no endpoint is printed whole; else ``None``.
    endpoint_no_port: str | None = None
    #: The first master host and port the log prints (``MASTER_ADDR=``, ``--master_port``:
    #: :data:`_MASTER_ADDR`, :data:`_MASTER_PORT`), each ``None`` when not printed.
    master_host: str | None = None
    master_port: str | None = None
    #: The model path and tensor-parallel size SGLang's server printed in its arguments
    #: (:data:`_SERVER_ARGS`), each ``None`` when not printed.
    server_model: str | None = None
    server_tp: int | None = None
    #: The pids of the torchrun agents themselves (glog's process field on torchelastic's own
    #: lines, :data:`_AGENT_SELF`); two or more on one node: the launcher ran twice.
    agent_processes: set[int] = field(default_factory=set)
    #: Worker pid -> the torchrun agent process that stopped it or saw it fail (the glog
    #: header's pid on the agent's ``Sending process N closing signal`` / ``failed
    #: (exitcode: C) local_rank: L (pid: N)`` line); at most :data:`MAX_WORKER_AGENTS`.
    worker_agents: dict[int, int] = field(default_factory=dict)
    #: Frame paths through a framework that starts its own runs
    #: (:data:`rootrank.frameworks.FRAMEWORK_ENTRY`), the first few, from any traceback
    #: line (a cut or unparsed traceback's too): the verification runs that framework's entry.
    entry_paths: list[str] = field(default_factory=list)

    def ran(self, command: str) -> bool:
        """The exact command the job was started with (``rootrank run -- CMD``: its argv
        joined as a shell reads it), over whatever the log printed: it becomes
        :attr:`command`, its script :attr:`script`, its launcher one of :attr:`launchers`
        and its ``--nproc-per-node`` :attr:`nproc_per_node` (``python -c CODE``: the command
        alone, no script). Returns ``False`` (and changes nothing) when ``command`` runs no
        Python (``bash launch.sh``: what the log prints of the launch is all there is)."""
        # the program as a path (.venv/bin/torchrun, /opt/conda/bin/python3) is its name
        # (after the wrapper and assignments before it: ``env VAR=1 python x.py``)
        probe = regex_code.sub(r"^\S*/(?=\S)", "", ENV_HEAD.sub("", command.lstrip()))
        parts = launch_parts(probe)
        if parts is None and _PYTHON_CODE.match(probe):
            # ``python -c CODE``: a one-process job with no script file; a rerun is the
            # command as typed (new-user trial r21 finding 10: the verify said
            # ``python <train.py>``)
            self.command = command
            self.launched_here = True
            self.launchers.add("python")
            return True
        if parts is None or not _COMMAND.search(probe):
            return False
        launcher, script = parts
        self.command = command
        self.launched_here = True
        if script.endswith(".py"):
            self.script = script
        word = launcher.split()[0]
        if word.startswith("python") and "torch.distributed" not in launcher:
            self.launchers.add("python")
        elif word.startswith("python"):
            self.launchers.add("torchrun")
        else:
            self.launchers.add(word)
            if word in ("deepspeed", "accelerate"):
                self.launcher = word
        m = _NPROC.search(command)
        if m:
            self.nproc_per_node = int(m.group("n"))
        return True

    def _continue_command(self, text: str) -> None:
        """Append one continuation line of a printed command that ended with a backslash
        (the shell joins them: ``torchrun ... train.py`` and a backslash, then ``--lr 3e-4``). The command
        stays open while its lines end with a backslash, up to :data:`MAX_COMMAND_CHARS`;
        a line that does not look like part of a command (empty, or a log line with a
        timestamp or a rank prefix) ends it without being added."""
        part = text.strip()
        if (
            not part
            or self.command is None
            or len(self.command) + len(part) > MAX_COMMAND_CHARS
            or not regex_code.match(r"[-\w\"'$<>{}=./:,@+%]", part)
            or regex_code.match(r"(?:\[|\d{4}-\d\d-\d\d|[EWIF]\d{4} )", part)
        ):
            self.continues = False
            if self.command is not None and not _COMMAND.search(self.command):
                self.command = None  # a command head whose script never came
            return
        more = part.endswith("\\")
        self.command = f"{self.command} {part[:-1].rstrip() if more else part}"
        self.continues = more
        if not more and not _COMMAND.search(self.command):
            self.command = None  # joined, it still runs no script or module: not a launch

    def _endpoint(self, text: str) -> None:
        """Learn the rendezvous endpoint from a line that names one (:data:`_ENDPOINT`), or a
        master port (:data:`_MASTER_PORT`) that, with the first master host, makes one: the
        first endpoint printed is kept (every node of a job names the same)."""
        if self.master_port is None and (p := _MASTER_PORT.search(text)):
            self.master_port = p["p"]
        if self.master_host is None and (h := _MASTER_ADDR.search(text)):
            self.master_host = h["h"]
        if self.endpoint is None and (m := _ENDPOINT.search(text)):
            self.endpoint = f"{m['h']}:{m['p']}"
            self.endpoint_no_port = None
        if self.endpoint is None and self.endpoint_no_port is None and "dzv" in text:
            if h := _ENDPOINT_NO_PORT.search(text):
                self.endpoint_no_port = h["h"]

    def rendezvous(self) -> tuple[str | None, str | None]:
        """The rendezvous host and port the log prints: those of the first whole endpoint
        (:attr:`endpoint`), else the first master host and port (either ``None`` when the log
        does not print it)."""
        if self.endpoint is not None:
            host, _, port = self.endpoint.rpartition(":")
            return host, port
        return self.master_host, self.master_port

    def _nodes(self, n: int) -> None:
        """A node count above 1 the log printed: :attr:`nnodes` keeps the largest, and
        :attr:`nnodes_differ` says whether another count was printed before."""
        if self.nnodes is not None and self.nnodes != n:
            self.nnodes_differ = True
        self.nnodes = max(self.nnodes or 0, n)

    def worker_pids(self) -> set[int]:
        """The pids the launchers name as the job's workers (torchrun's agent, DeepSpeed's)."""
        return self.agent_pids | self.launcher_kill_pids

    def read(self, text: str, number: int, raw: str | None = None) -> None:
        """Learn from one cleaned line (``number`` 1-based); ``raw`` is the line before its
        prefixes were peeled (a launcher's own logger header names it: ``[launch.py:321:...]``)."""
        whole = raw if raw is not None else text
        if self.continues:  # (the line's own facts are read as well: --nnodes=2 \ ...)
            self._continue_command(text)
        # one automaton pass finds which literal tests can hold: a launcher sign's literals, an
        # endpoint word (overlapping matches: one word inside another is found too)
        launcher_word = endpoint_word = False
        for index, _, _ in _LAUNCHER_WORDS.find_matches_as_indexes(whole, overlapping=True):
            if index < _LAUNCHER_LITERALS:
                launcher_word = True
            else:
                endpoint_word = True
        if launcher_word:
            for name, literals, sign in _LAUNCHER_SIGNS:
                if (
                    name not in self.launchers
                    and any(lit in whole for lit in literals)
                    and sign.search(whole)
                ):
                    self.launchers.add(name)
        if (
            self.runner_line is None
            and "cmd = " in text
            and "deepspeed.launcher.launch" in text
            and 'File "' not in text
        ):
            self.runner_line = text.split("cmd = ", 1)[1].strip()[:MAX_COMMAND_CHARS]
        if (
            self.command is None
            and ("sh: `" in text or "cmd = " in text)
            and 'File "' not in text
            and (printed := framework_command(text))
        ):
            # a framework printed the launch it starts (ms-swift's ``run sh:``): the job's
            # command, whole; DeepSpeed runner's ``cmd =`` is kept apart (its workers' argv,
            # when printed, gives the shorter ``deepspeed`` command)
            kind, printed_command = printed
            if kind == "sh":
                self.command = printed_command
                if "torch.distributed." not in printed_command:
                    self.launchers.add("python")
            elif self.runner_command is None:
                self.runner_command = printed_command
        if self.command is None and 'File "' not in text and any(w in text for w in _COMMAND_WORDS):
            m = (
                (_COMMAND.search(text) or _ENTRY_COMMAND.search(text))
                if "Error" not in text
                else None
            )
            if m is None and text.rstrip().endswith("\\") and "Error" not in text:
                head = _COMMAND_HEAD.search(text)
                if head:  # its script comes on a continuation line: kept if one names it
                    self.command, self.continues = head.group("cmd").strip(), True
            if m:
                # (a job put in the background, ``python train.py &``, reruns in the foreground)
                self.command = own_command(regex_code.sub(r"\s+&$", "", m.group("cmd").strip()))
                if self.command.endswith("\\"):  # continued on the next lines
                    self.command = self.command[:-1].rstrip()
                    self.continues = True
                own = ENV_HEAD.sub("", self.command)
                if regex_code.match(r"python[\d.]*\s(?!\s*-m\s+torch\.distributed)", own):
                    self.launchers.add("python")
                    # ``python train.py``: the script the user typed is the job's entry (a
                    # subprocess's script in a traceback, ``tools/stats.py``, is not)
                    parts = launch_parts(regex_code.sub(r"^\S*/(?=\S)", "", own))
                    if self.script is None and parts and parts[1].endswith(".py"):
                        self.script = parts[1]
        if (
            len(self.entry_paths) < MAX_ENTRY_PATHS
            and 'File "' in text
            and any(part in text for part in _ENTRY_PARTS)
        ):
            m = _FRAME_PATH.search(text)
            if m and any(part in m[1] for part in _ENTRY_PARTS):
                self.entry_paths.append(m[1])
        if self.tool_command is None and "_perf" in text:
            m = _NCCL_TESTS_COMMAND.search(text)
            if m:
                self.tool_command = m.group("cmd").strip()
        if "nNodes " in text and (lm := _NCCL_LAYOUT.search(text)):
            n, per = int(lm["n"]), int(lm["per"])
            if n > 1:
                self.multi_node.append(f"'{lm.group(0)}' (line {number})")
                self._nodes(n)
            if self.nproc_per_node is None and per * n == int(lm["world"]):
                self.nproc_per_node = per
        if "nodes" in text or "group_world_size" in text:
            for m in _NNODES.finditer(text):
                n, top = int(m.group("n")), m.group("max")
                where = f"'{m.group(0).strip()}' (line {number})"
                self.node_flags = True
                if n == 1 and (top is None or top == "1"):
                    self.single_node.append(where)
                elif n > 1 or (top is not None and int(top) > 1):
                    self.multi_node.append(where)
                    self._nodes(max(n, int(top or 0)))
        if self.script is None and "cmd line: " in text and (u := _UCX_CMD.search(text)):
            # UCX's debug log prints each process's own command line at start-up (ucs
            # init.c: "UCX  DEBUG cmd line: /usr/bin/python train.py"): the worker's script
            self.script = u["s"]
        if self.script is None and ".py" in text:
            m = _SCRIPT_FAILED.match(text) or _SCRIPT_AFTER_LAUNCHER.search(text)
            if m and 'File "' not in text:
                self.script = m.group("s")  # as the user typed it (relative or absolute)
                launcher = m.groupdict().get("launcher") or ""
                if launcher.startswith(("deepspeed", "accelerate")):
                    self.launcher = launcher.split()[0]
        if self.script is None and self.module is None and (" FAILED" in text or "'-m', '" in text):
            mod = _MODULE_FAILED.match(text) or _MODULE_ARGV.search(text)
            if (
                mod is not None
                and not mod["m"].endswith(".py")
                and not mod["m"].startswith(_LAUNCHER_MODULES)
            ):
                self.module = mod["m"]
        if ("master" in text or "rdzv" in text or "MASTER" in text) and len(
            self.hosts
        ) < MAX_NAMED_HOSTS:
            self.hosts.update(m.group("h") for m in _MASTER_HOST.finditer(text))
        # (``text`` is ``whole`` with its prefixes peeled: a word the automaton found in a
        # prefix alone is not the line's own)
        if endpoint_word and (text is whole or any(w in text for w in _ENDPOINT_WORDS)):
            self._endpoint(text)
        if self.server_model is None and "ServerArgs(" in text and _SERVER_ARGS.search(text):
            model, tp = _SERVER_MODEL.search(text), _SERVER_TP.search(text)
            self.server_model = model["v"] if model else None
            self.server_tp = int(tp["v"]) if tp else None
        if "node" in text or "rdzv" in text or "master" in text or "group_rank" in text:
            for m in _NODE_RANK.finditer(text):
                self.node_flags = True
                rank = m.group("n") or m.group("g")
                if rank is not None and int(rank) > 0:
                    self.multi_node.append(f"'{m.group(0)}' (line {number})")
        if "--standalone" in text and _STANDALONE.search(text):
            self.single_node.append(f"'--standalone' (line {number})")
        if "nproc" in text or "num_gpus" in text or "num-gpus" in text or "_processes` was" in text:
            m = _NPROC.search(text)
            if m:
                self.nproc_per_node = int(m.group("n"))
        if (
            self.nproc_per_node is None
            and ("GPU" in text or "NPROC" in text)
            and 'File "' not in text
        ):
            m = _NPROC_ENV.search(text)
            if m:
                self.nproc_per_node = int(m.group("n"))
        if self.rank_filter is None and ("ranks" in text or "LOG_RANK" in text):
            m = _RANK_FILTER.search(text)
            if m and 'File "' not in text:
                self.rank_filter = f"'{m.group(0).strip()}' (line {number})"
                self.rank_filter_keeps = tuple(int(r) for r in m.group("r").split(","))
        if ("torchrun" in text or "torch.distributed." in text) and 'File "' not in text:
            m = _LAUNCH_CMD.search(text)
            if m and self.launch_command is None:
                self.launch_command = f"line {number}"
        if "closing signal" in text or "local_rank: " in text:
            m = _AGENT_PID.search(text)
            if m:
                self.agent_pids.add(int(m.group("pid") or m.group("fpid")))
                if m.group("pid"):
                    self.closing_pids.add(int(m.group("pid")))
                agent = _AGENT_SELF.search(whole)
                if agent is not None and len(self.worker_agents) < MAX_WORKER_AGENTS:
                    self.worker_agents[int(m.group("pid") or m.group("fpid"))] = int(
                        agent.group("pid")
                    )
        if (
            "torch/distributed/" in whole
            and len(self.agent_processes) < MAX_AGENT_PROCESSES
            and (m := _AGENT_SELF.search(whole))
        ):
            self.agent_processes.add(int(m.group("pid")))
        if (
            self.worker_command is None
            and ("sigkill_handler" in whole or "spawned with command" in whole)
            and (m := _DS_WORKER_ARGV.search(whole))
        ):
            self.worker_command = deepspeed_command(m["argv"])
        if "executing job with overrides" in text and (ov := hydra_overrides(text)) is not None:
            self.hydra_overrides = ov
            self.hydra_line = number
        if "Killing subprocess" in text and (m := _DS_KILL.search(text)):
            self.launcher_kill_pids.add(int(m.group("pid")))
        if "Terminating process" in text and (m := _SPAWN_KILL.search(text)):
            self.spawn_kill_pids.add(int(m.group("pid")))
        if "parallel size" in text:
            for m in _PARALLEL_SIZE.finditer(text):
                self.parallel_sizes[m.group("kind")] = int(m.group("n"))
        if "_parallel_size=" in text:
            for m in _ENGINE_PARALLEL.finditer(text):
                self.engine_parallel[m.group("kind")] = int(m.group("n"))

    def engine_processes(self) -> int | None:
        """How many worker processes an inference engine's printed layout runs (tensor x
        pipeline parallel size, :attr:`engine_parallel`), or ``None`` when none was printed."""
        if "tensor" not in self.engine_parallel:
            return None
        return self.engine_parallel["tensor"] * self.engine_parallel.get("pipeline", 1)


@dataclass(slots=True)
class PendingMessage:
    """An exception message that may continue on the lines after its first line.

    ``parts`` are the texts of its lines (the first is the exception line, or ``"Type:"``
    for a debugger header), ``numbers`` their 1-based line numbers; ``first`` is the line
    evidence points at. ``sigs`` are the signatures already found on these lines (a joined
    match only adds what no single line showed).
    """

    exc_type: str
    parts: list[str]
    numbers: list[int]
    first: RawLine
    path: str
    rank: int | None
    host: str | None
    pid: int | None
    time: float | None
    frames: list[Frame]
    sigs: set[str] = field(default_factory=set)
    #: Signatures found on the first line itself (a joined match of one of them adds nothing).
    first_sigs: set[str] = field(default_factory=set)
    #: ``True`` for a traceback's exception message: a signature that matched only a wrapped
    #: tail line is re-pointed at the first line when the joined message matches it too.
    supersede: bool = True
    #: ``True`` for a log line a signature matched (not an exception): its wrapped tail only
    #: completes that finding's captures (:meth:`Scanner._complete_wrapped`).
    complete_only: bool = False


def _weight(hit: Hit) -> tuple[int, int, int]:
    """How much a hit explains: its signature's specificity, then its captures, then the
    length of the matched text."""
    return hit.signature.specificity, len(hit.captures), hit.span[1] - hit.span[0]


@dataclass
class ScanState:
    """Everything one pass learns; :class:`Scanner` fills it, the analysis reads it."""

    findings: dict[tuple[str, int | None, str | None], Finding] = field(default_factory=dict)
    exceptions: deque[SeenException] = field(default_factory=lambda: deque(maxlen=MAX_EXCEPTIONS))
    elastic: list[ElasticFailure] = field(default_factory=list)
    ranks_seen: set[int] = field(default_factory=set)
    hosts: dict[int, str] = field(default_factory=dict)
    #: The host names of :attr:`hosts` that are a wrapper's line labels (``[node0] ``), not
    #: host names (rootrank.ranks.RankTagger.label_hosts, rootrank.ranks.node_count).
    label_hosts: set[str] = field(default_factory=set)
    world_size: int | None = None
    stacks: set[str] = field(default_factory=set)
    lines_total: int = 0  # physical lines in all sources
    sources: list[str] = field(default_factory=list)
    pending_pid: list[tuple[Finding, str | None, int]] = field(default_factory=list)
    launch: LaunchFacts = field(default_factory=LaunchFacts)
    #: Ranks whose traceback the log cuts before its exception line (a paste that ends early).
    cut_traceback_ranks: set[int] = field(default_factory=set)
    #: Where each traceback of :attr:`cut_traceback_ranks` began: ``(path, rank, 1-based
    #: line)`` (rootrank.tracebacks.TracebackReader.started), in scan order.
    cut_traceback_starts: list[tuple[str, int, int]] = field(default_factory=list)
    #: Streams whose first line is inside a trace (a paste that starts below a rank's
    #: ``Traceback`` header or C++ frame list): ``(path, rank or None, 1-based line)``.
    cut_at_start: list[tuple[str, int | None, int]] = field(default_factory=list)
    #: Whether the log ends inside a traceback (of any rank, or of none).
    traceback_cut: bool = False
    #: Tracebacks a stream ends inside (no exception line: ``exc.type`` is ``""``,
    #: ``exc.header`` ``"cut"``), and faulthandler's stacks of a crashing thread
    #: (``exc.header`` ``"faulthandler"``, ``exc.log_line`` its header's line): only the fix's
    #: user location reads them, not the analysis.
    cut_tracebacks: list[SeenException] = field(default_factory=list)
    #: Training progress per rank and the metric series (rootrank.progress, rootrank.metrics).
    progress: ProgressModel = field(default_factory=ProgressModel)
    metrics: MetricsReader = field(default_factory=MetricsReader)
    #: The first lines of each source (at most :data:`HEAD_CHARS`, whole lines, the first
    #: :data:`MAX_TAILS` sources, not past a line cut into pieces): ``(path, 1-based number of
    #: its first line, text)``. The analysis compares the ranks' set-up lines
    #: (rootrank.ranklines).
    heads: list[tuple[str, int, str]] = field(default_factory=list)
    #: The latest timestamp (seconds since the epoch) on any line the scan read, or None.
    end_time: float | None = None
    #: Runs appended to one file (``tee -a``, a requeue, a relaunch after a failure): the
    #: 1-based lines where a later run started, after the earlier one had failed. The findings,
    #: exceptions and summaries hold the last run only (:meth:`Scanner._new_attempt`).
    attempt_starts: list[int] = field(default_factory=list)
    #: Findings of the attempts before a torchrun agent restarted its workers
    #: (``--max-restarts``; :meth:`Scanner._restarted`), in log order: not the job's end, but
    #: a restart's failure may be explained by them (rootrank.analysis.rules).
    earlier_findings: list[Finding] = field(default_factory=list)
    #: Sections of one file that began like a new run after a failure but are another node's
    #: output of the same run (``cat node1.log node0.log``; rootrank.runs.another_node):
    #: ``(1-based line where the section began, why)``. They are not counted as attempts.
    node_sections: list[tuple[int, str]] = field(default_factory=list)
    #: The last section of one file began like a relaunch but shows no failure and no end of
    #: its own (a paste cut short, a child's or launcher's lines after the failure): the
    #: failure of the section before it is the job's (:meth:`Scanner._settle_sections`):
    #: ``(1-based line where that quiet section began, line where the failed one began)``.
    quiet_tail: tuple[int, int] | None = None
    #: Other jobs the file holds before the diagnosed run (``cat job1.log job2.log``; a
    #: section launched another way, or after a run that ended: rootrank.runs.separate_run),
    #: in log order. What they showed is not part of the diagnosis; they are named in it.
    other_runs: list[OtherRun] = field(default_factory=list)
    #: The sources whose last run reached its end (its progress at its total, the Trainer's
    #: end-of-run summary) with nothing after it undoing that: ``(path, 1-based line of the
    #: end, why)``, in scan order (read by rootrank.analysis.completed).
    run_ended: list[tuple[str, int, str]] = field(default_factory=list)
    #: Each source's last run's-end report (a line :data:`RUN_END_REPORT` reads: torchrun's
    #: "worker group successfully finished", Lightning's "`Trainer.fit` stopped", ...):
    #: path -> ``(1-based line, the line as printed, stripped)``, whatever came after it
    #: (read by rootrank.analysis.after_run_end: what one rank did after the loop ended).
    run_end_reports: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: The numeric settings each rank printed of itself (``rank 3 on vm group_rank 1 hidden
    #: 64``: rank -> name -> (value, source, 1-based line); a name printed with two values by
    #: one rank is a series, not a setting, and is kept as ``None``). Read by
    #: rootrank.entry (:func:`rootrank.scan.odd_setting`). At most :data:`MAX_SETTINGS` names
    #: per rank.
    rank_settings: dict[int, Settings] = field(default_factory=dict)
    #: The 1-based line of each source's last match of an error-severity signature (every
    #: occurrence, also those past a finding's :data:`MAX_EVIDENCE` kept lines): whether any
    #: error comes at or after a run's end (read by rootrank.analysis.completed).
    last_error_line: dict[str, int] = field(default_factory=dict)
    #: The log shows a run's start: torchrun's ``OMP_NUM_THREADS`` banner (printed before it
    #: starts its workers) or a launch command line (``launch.command``); read by
    #: rootrank.entry.variants.run_phase (a pasted tail with no step is not a start-up).
    start_seen: bool = False
    #: torchrun's agent's closing-signal lines, in scan order, every attempt's, the first
    #: :data:`MAX_CLOSING_SIGNALS` (every pid is also in ``launch.closing_pids``; read by
    #: :mod:`rootrank.analysis.events`).
    closing_signals: list[ClosingSignal] = field(default_factory=list)
    #: The time (seconds since the epoch, from the line's own sub-second stamp) at which
    #: torchrun's agent logged each worker's failure (``E1205 10:11:12.285000 ... failed
    #: (exitcode: 1) local_rank: 0 (pid: 1353)``), by the worker's pid: finer than the failure
    #: summary's whole-second ``time`` field (read by rootrank.analysis.initiator.elastic_rank).
    agent_exit_times: dict[int, float] = field(default_factory=dict)
    #: The last lines of each source (at most :data:`TAIL_CHARS`, whole lines, the first
    #: :data:`MAX_TAILS` sources): ``(path, 1-based number of its first line, text)``. The
    #: analysis reads how the log ends (rootrank.analysis.silent).
    tails: list[tuple[str, int, str]] = field(default_factory=list)
    #: User names the inputs' home and HPC user folders name, on any line, shown or not
    #: (rootrank.mask.learn_users): masked on every shown line, whatever the file order.
    users: set[str] = field(default_factory=set)
    #: The last place the job announced it was saving to (:data:`_SAVE_TARGET`):
    #: ``(path of the log, 1-based line, the target path as printed)``, or ``None``. A write
    #: that then fails with no path in its message (torch.save's "file write failed") was
    #: writing there (rootrank.entry: the verify's ``<output_dir>``).
    save_target: tuple[str, int, str] | None = None
    #: The 1-based line of each process's last non-blank line (:func:`process_key`), for the
    #: first :data:`MAX_PROCESS_KEYS` processes: whether a process printed more after an
    #: exception it logged (read by rootrank.analysis.logged_handled).
    last_own_line: dict[LineProcess, int] = field(default_factory=dict)
    #: Each process's first and last progress lines (:func:`process_key`), for the first
    #: :data:`MAX_PROCESS_KEYS` processes: a Ray driver's ``step:N`` lines are the run's
    #: progress while its actors print none (read by rootrank.analysis.logged_handled).
    steps_of: dict[LineProcess, tuple[Progress, Progress]] = field(default_factory=dict)


#: Processes whose last line ``ScanState.last_own_line`` keeps (Ray runs: tens of actors).
MAX_PROCESS_KEYS = 4096


#: A framework's announcement of where it saves, with the target path: Megatron-LM's
#: ``saving checkpoint at iteration 20 to <dir>`` (megatron/checkpointing.py), the Hugging
#: Face Trainer's ``Saving model checkpoint to <dir>``, DeepSpeed's ``Saving model
#: checkpoint: <file>``. The path is absolute, home- or dot-relative, or has a folder in it.
_SAVE_TARGET = lazy_regex.compile(
    r"(?i)\bsav(?:ing|ed?)\b[^\n]{0,80}?(?:\bto|\bcheckpoint:)\s+['\"]?"
    r"(?P<path>(?:/|~/|\./|\.\./)[^\s'\"]{1,400}|[\w.-]{1,100}/[^\s'\"]{0,300})"
)

#: Characters of a line's head read for the rank prefix of its later pieces (an over-long
#: line: rootrank.ingest.Block.continues); stacked prefixes and a timestamp fit in it.
LINE_HEAD_CHARS = 512

#: Characters of each source's end kept in ``ScanState.tails``, and for how many sources.
TAIL_CHARS = 16384
#: Characters of each source's start kept in ``ScanState.heads``.
HEAD_CHARS = 262144
MAX_TAILS = 64

#: Lines that may show progress or a metric (one Aho-Corasick pass per block, like the main gate).
_CURVE_GATE = Gate(PROGRESS_LITERALS, state_words=())
# (only for lines no gate chose: a contiguous NFA, cheaper to build at every start)
_CURVE_WORDS = ahocorasick_rs.AhoCorasick(
    list(PROGRESS_LITERALS), implementation=ahocorasick_rs.Implementation.ContiguousNFA
)


def _gated_lines(gate: Gate, block: Block) -> Iterator[int]:
    """The lines of ``block`` the main gate or the curve gate chose, ascending, no repeats, each
    as ``start << 2 | curve << 1 | light``: ``start`` the line's offset in ``block.text``,
    ``curve`` whether it holds a progress/metric word, ``light`` whether only the curve gate
    chose it. The merge of both gates' :meth:`Gate.line_starts`, with its flags, in one
    generator (no merging object)."""
    main = list(gate.line_starts(block))  # few: the lines a signature or state word is on
    n_main = len(main)
    i = 0
    m = main[0] if n_main else -1
    for c in _CURVE_GATE.line_starts(block):
        while m != -1 and m < c:
            yield m << 2
            i += 1
            m = main[i] if i < n_main else -1
        if m == c:
            yield c << 2 | 2
            i += 1
            m = main[i] if i < n_main else -1
        else:
            yield c << 2 | 3
    while m != -1:
        yield m << 2
        i += 1
        m = main[i] if i < n_main else -1


#: Progress/metric-only lines of one scan (all its sources together, so a folder of per-rank
#: files costs what the same lines in one file cost) read one by one; past this many, they are
#: sampled with a stride that doubles each time the count doubles (a 10-million-line log reads
#: about 400,000 of them), so a log of metric lines costs O(LIGHT_FULL x log n). Lines that
#: print a NaN or Inf, and the last one of each source, are always read. The series are
#: downsampled to a few hundred points anyway (rootrank.metrics.MAX_BUCKETS).
LIGHT_FULL = 50_000


def _light_stride(count: int) -> int:
    """The sampling stride for the ``count``-th progress/metric-only line (1 up to
    :data:`LIGHT_FULL`, then 2, 4, 8... as the count doubles)."""
    return 1 << max(0, (count // LIGHT_FULL).bit_length())


def _non_finite(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` may print a NaN or an Inf (a cheap substring test, no copy)."""
    return (
        text.find("nan", start, end) != -1
        or text.find("NaN", start, end) != -1
        or text.find("inf", start, end) != -1
        or text.find("Inf", start, end) != -1
    )


def _absorb(first: Finding, f: Finding) -> None:
    """Merge ``f`` into ``first``, the same signature's finding on the same rank: counts added,
    ``f``'s evidence after ``first``'s (bounded by :data:`MAX_EVIDENCE`), the earlier order,
    and what ``first`` lacks (time, host, captures, frames) taken from ``f``."""
    first.count += f.count
    first.evidence.extend(f.evidence[: max(0, MAX_EVIDENCE - len(first.evidence))])
    first.order = min(first.order, f.order)
    if first.time is None:
        first.time = f.time
    if first.host is None:
        first.host = f.host
    for k, v in f.captures.items():
        first.captures.setdefault(k, v)
    if not first.frames:
        first.frames = f.frames


@dataclass(frozen=True, slots=True)
class _RunStart:
    """A run start the scan cuts a source at (:meth:`Scanner._new_attempt`,
    :meth:`Scanner._begin_section`): ``number`` is its 1-based line; ``tagger`` and
    ``readers`` the source's rank tagger and per-rank traceback readers (a new run clears
    them); ``launch`` how the new section's command line launches the job
    (:func:`rootrank.runs.launch_identity`), if the run start is one; ``started`` is ``False``
    for a cut at a traceback after torchrun's summary (no run start seen); ``worlds``
    (:attr:`rootrank.ranks.RankTagger.world_line`) for a cut at a line that printed another
    world size than the section's: the section's is its third value, the new one's its
    second; ``other`` says why the lines from ``number`` are another program's
    (:meth:`Scanner._other_program`: the cut is another job's start)."""

    number: int
    tagger: RankTagger
    readers: dict[int | None, TracebackReader]
    launch: str | None = None
    started: bool = True
    worlds: tuple[int, int, int | None] | None = None
    other: str | None = None


@dataclass
class _HeldSection:
    """What a section of one source showed, set aside at the run start that ended it
    (:meth:`Scanner._new_attempt`): ``start`` is the 1-based line of that run start."""

    start: int
    facts: SectionFacts
    findings: dict[tuple[str, int | None, str | None], Finding]
    exceptions: Iterable[SeenException]
    pending_pid: list[tuple[Finding, str | None, int]]
    cut_traceback_ranks: set[int]
    cut_at_start: list[tuple[str, int | None, int]]
    elastic: list[ElasticFailure]

    def before(self, later: _HeldSection) -> _HeldSection:
        """This section followed by ``later``, another node's section of the same run: one
        finding per signature and rank (this section's first, its evidence then the later's,
        counts added), the exceptions, pid look-ups and summaries of both in log order. A
        finding with no rank stays one per section: its rank may still come from its pid,
        which only names a process on its own node."""
        findings = dict(self.findings)
        moved: dict[int, Finding] = {}
        for key, f in later.findings.items():
            first = findings.get(key)
            if first is None:
                findings[key] = f
                continue
            if key[1] is None:
                findings[(key[0], None, f"{key[2]}#{len(findings)}")] = f
                continue
            _absorb(first, f)
            moved[id(f)] = first
        pending = [
            *self.pending_pid,
            *((moved.get(id(f), f), h, p) for f, h, p in later.pending_pid),
        ]
        return _HeldSection(
            start=self.start,
            facts=later.facts,
            findings=findings,
            exceptions=[*self.exceptions, *later.exceptions],
            pending_pid=pending,
            cut_traceback_ranks=self.cut_traceback_ranks | later.cut_traceback_ranks,
            cut_at_start=[*self.cut_at_start, *later.cut_at_start],
            elastic=[*self.elastic, *later.elastic],
        )


class Scanner:
    """Feeds lines through rank attribution, traceback reading and matching.

    Use one Scanner per diagnosis: :meth:`scan_source` once per file (or text), then read
    :attr:`state`. ``learn_users`` off (a diagnosis that masks nothing, ``--no-mask``):
    :attr:`ScanState.users` is not built; they only serve the masking
    (:func:`rootrank.mask.learn_users`, a pass per block for the folders' literals).
    """

    def __init__(self, matcher: Matcher, *, learn_users: bool = True) -> None:
        self.matcher = matcher
        self.learns_users = learn_users
        self.state = ScanState()
        self._order = 0
        self._block_text: str | None = None
        # Whether the current block is a piece of an over-long line after its first
        # (rootrank.ingest.Block.continues), and the head of the last line of the last block
        # that was not (its 1-based number, its first LINE_HEAD_CHARS characters): where the
        # rank prefix of every later piece of that line is.
        self._block_continues = False
        self._line_head: tuple[int, str] | None = None
        # The attribution of the head of the over-long line being read, by its 1-based number.
        self._head_tagged: tuple[int, Tagged] | None = None
        self._line_start = 0
        self._path_rank: int | None = None
        # rank -> (block text, line start the last walk began at, time it found)
        self._walks: dict[int, tuple[str, int, float | None]] = {}
        # The exception message that may continue on the next line (one per source).
        self._pending: PendingMessage | None = None
        #: Per rank, the last exception and the line its message reached, while its message
        #: may still name the user's traced frame (:meth:`_traced_frame`); the flag says the
        #: message's "from user code:" line was seen.
        self._traced: dict[int | None, tuple[PyException, int, bool]] = {}
        #: Autograd anomaly mode's forward traces (:meth:`_forward_trace`), by the backward
        #: function their warning names: ``(header line, innermost user frame or None)``; the
        #: function whose trace is being read, and its last frame line's user frame (waiting
        #: for the source line under it).
        self._forward: dict[str, tuple[int, Frame | None]] = {}
        self._forward_frame: Frame | None = None
        self._forward_code = False
        self._forward_open: str | None = None
        # The rank of the log record an unprefixed traceback is printed under (logging's
        # exc_info: _record_rank), for that traceback's lines until it ends.
        self._record_rank: int | None = None
        # The first progress line after torchrun's failure summary (1-based; -1 when its step
        # was past the furthest printed before: no new launch's), if one came.
        self._summary_progress: int | None = None
        # the section's ranks when its torchrun summary ended (rank lines after it are
        # another launch's or another node's): :meth:`_exited_worker`
        self._summary_ranks: set[int] | None = None
        # Signatures found on the last few lines: 1-based line number -> signature ids.
        self._line_sigs: dict[int, set[str]] = {}
        # Whether the current line holds a progress/metric literal; the last line whose tqdm
        # frames were read.
        self._curve_line = False
        self._frames_line = -1
        # Whether the current run (attempt) of the job has failed yet: a run that starts after
        # it begins a new attempt.
        self._failed = False
        # (path, agent pid) -> 1-based line of that torchrun agent's last "failed (exitcode" log
        # line, and how many times it restarted its workers.
        self._agent_failed: dict[tuple[str, str], int] = {}
        self._agent_restarts: dict[tuple[str, str], int] = {}
        # 1-based lines where a section was cut at a traceback after torchrun's failure
        # summary (kept a relaunch only if the section shows a summary of its own).
        self._summary_cuts: set[int] = set()
        # The keys (ranks) of the current source's traceback readers that are open: kept as
        # readers are fed, so "is any traceback open" costs O(1) per line, not O(ranks).
        self._open_readers: set[int | None] = set()
        # Lines only the curve gate chose, over every source of this scan (the sampling
        # budget, LIGHT_FULL, is the scan's: per source, a folder of 1,024 per-rank files
        # read 1,024 times as many).
        self._light_lines = 0
        # Who wrote the current section of the source (rootrank.runs.SectionFacts), and the
        # sections a run start set aside until the source's end tells whether the next one
        # was a relaunch or another node (:meth:`_new_attempt`, :meth:`_settle_sections`).
        self._section = SectionFacts()
        self._held: list[_HeldSection] = []
        # The stacks and launchers the first block of the source names, by the 1-based line
        # of their last mention: a job that begins later in the file keeps those it names.
        self._block_stacks: dict[str, int] = {}
        self._block_launchers: dict[str, int] = {}
        # How many cuts of the source read ahead (_peek_section; at most MAX_PEEKS).
        self._peeks = 0
        # How many job-script headers (_JOB_HEADER) the source printed so far.
        self._job_headers = 0
        self._job_header_host: str | None = None
        # The launch facts read since each of the latest cuts of the source that held a section
        # and whose lines ahead showed no traceback to compare (1-based line of the cut ->
        # rootrank.scan.LaunchFacts of the lines from it): when the source's end shows that
        # another job began at such a cut (_left_out), they replace the launch facts of the
        # whole file, which hold the earlier job's launcher, sizes and command too. At most
        # MAX_LAUNCH_SHADOWS, the latest.
        self._launch_since: dict[int, LaunchFacts] = {}
        # Why the current section's run is complete (rootrank.runs.SectionFacts.ended): a run
        # start after it begins another job. The first line of the current job, and the ranks
        # the jobs before it showed (taken out of the ranks seen at the source's end).
        self._ended: str | None = None
        #: The local rank (``[default1]:``) of the lines of faulthandler stack headers that
        #: named no global rank, by 1-based line (:meth:`_fault_stack`).
        self._fault_locals: dict[tuple[str, int], int] = {}
        self._ended_line = 0
        # Each rank's last line in the current section (rank -> (1-based line, the end record
        # it is, or None)): when every rank's last line is its own end record, the run ended
        # at the latest of them (_ranks_ended).
        self._rank_last: dict[int, tuple[int, str | None]] = {}
        self._run_start = 1
        self._other_run_ranks: set[int] = set()
        # Each process's steps since its section began, and the exceptions waiting to see
        # their process advance past them (rootrank.analysis.survived reads the result).
        self._advance = AdvanceWatch()

    def scan_source(self, path: str, blocks: Iterable[Block]) -> None:
        """Scan one source given as blocks of whole lines. ``path`` names it in evidence;
        its rank may come from the path.

        Only lines the :class:`~rootrank.match.Gate` selects go through the per-line path,
        plus every line after them while a traceback, a torchelastic summary or an
        ``mp.spawn`` banner is open (those states need consecutive lines).
        """
        st = self.state
        st.sources.append(path)
        path_rank, is_local = rank_from_path(path)
        tagger = RankTagger(path=path, path_rank=path_rank, path_rank_is_local=is_local)
        self._path_rank = path_rank
        self._section, self._held = SectionFacts(), []
        self._ended, self._run_start, self._other_run_ranks = None, 1, set()
        self._rank_last = {}
        self._block_stacks, self._block_launchers, self._peeks = {}, {}, 0
        self._job_headers, self._job_header_host = 0, None
        self._launch_since = {}
        readers: dict[int | None, TracebackReader] = {}
        self._open_readers.clear()
        gate = self.matcher.gate
        assert gate is not None
        following = False
        # The last line not read (sampling): (1-based number, block text, start, end).
        skipped: tuple[int, str, int, int] | None = None
        # The sampling stride of light lines (_light_stride), recomputed only where it changes.
        stride, next_stride_at = 1, 0
        tail, tail_end = "", 0  # the source's last lines (ScanState.tails)
        # the source's first lines (ScanState.heads); -1 once full or cut by a long line
        head_parts: list[str] = []
        head_first = 1
        head_room = HEAD_CHARS if len(st.heads) < MAX_TAILS else -1
        for block in dedented(blocks):  # a log indented as a whole reads as unindented
            text = block.text
            size = len(text)
            # the tail's end, the total: as the reader counted them (else one pass, ~1 ms a 4 MiB block)
            newlines = block.newlines if block.newlines >= 0 else text.count("\n")
            if not block.continues:
                tail = (f"{tail}\n{text}" if tail and size < TAIL_CHARS else text)[-TAIL_CHARS:]
                tail_end = block.first_line + newlines
                last = text.rfind("\n") + 1
                self._line_head = (tail_end, text[last : last + LINE_HEAD_CHARS])
            if head_room > 0:
                if block.continues:
                    head_room = -1
                else:
                    piece = text[:head_room]
                    if len(piece) < size:  # whole lines only
                        piece = piece[: piece.rfind("\n") + 1]
                        head_room = -1
                    else:
                        head_room -= size + 1
                    if not head_parts:
                        head_first = block.first_line
                    head_parts.append(piece)
            self._block_continues = block.continues
            number = block.first_line
            counted = 0  # offset up to which newlines are counted into `number`
            # A piece of an over-long line after its first (rootrank.ingest.Block.continues)
            # is the same line again: no new line to count, not the head of the source.
            at_start = block.first_line == 1 and not block.continues
            # Which ranks exist: the whole first block and the head of every later one
            # (a sweep over every line would cost as much as the gate itself).
            st.ranks_seen.update(ranks_in(text if at_start else text[:RANK_SWEEP_CHARS]))
            # Stacked [defaultN]:[rankM]: prefixes are not gated: learnt here, from the same
            # sweep (a gated stacked line teaches its own pair too).
            st.ranks_seen.update(
                tagger.learn_stacked(text if at_start else text[:RANK_SWEEP_CHARS])
            )
            tagger.learn_user_tags(text if at_start else text[:RANK_SWEEP_CHARS])
            # a wrapper's "[node1] " label on each line of a node's stream: learnt before the
            # lines are read, so the block's lines before the first that teaches it are peeled
            tagger.learn_collector_labels(text if at_start else text[:RANK_SWEEP_CHARS])
            # Ray actors' ranks, from their (mostly ungated) lines, for the lines that name
            # an actor's process by pid only.
            st.ranks_seen.update(
                tagger.learn_actor_ranks(text if at_start else text[:RANK_SWEEP_CHARS])
            )
            if at_start:  # a paste that starts inside a trace (rootrank.tracebacks)
                head = text.lstrip("\n")
                first = head[: head.find("\n") if "\n" in head else len(head)]
                if starts_mid_trace(first):
                    named = ranks_in(first)
                    where = 1 + len(text) - len(head)
                    st.cut_at_start.append((path, min(named) if len(named) == 1 else None, where))
            if self.learns_users:  # for the masking only (off with --no-mask)
                learn_users(text, st.users, block.lower_bytes)
            if at_start:  # framework names: the first block, then gated lines
                found = _stacks_in_block(text, block.lower_bytes, st.stacks)
                st.stacks |= found
                # a paste that starts inside the launcher's traceback names it only in a frame
                in_frames = {n: (part,) for n, part in _LAUNCHER_PATHS if part in text}
                st.launch.launchers.update(in_frames)
                if len(st.sources) == 1:  # (only one file is cut into runs: _source_end)
                    # where each is named last: a later job of the file keeps its own only
                    words = {k: w for k, w in STACK_WORDS if k in found}
                    self._block_stacks = _last_lines(text, block.first_line, words)
                    self._block_launchers = _last_lines(text, block.first_line, in_frames)
            # each value start << 2 | curve << 1 | light (_gated_lines); -1 >> 2 is -1, the end
            starts = _gated_lines(gate, block)
            # Whether any line of the block may print a NaN/Inf (else no line needs the test).
            nonfinite_block = _non_finite(text, 0, size)
            gated = 0 if following else next(starts, -1)
            cur = gated >> 2
            while cur != -1 and cur < size:
                number += text.count("\n", counted, cur)
                counted = cur
                end = text.find("\n", cur)
                if end == -1:
                    end = size
                self._block_text, self._line_start = text, cur
                if following:  # a line no gate chose: look for a progress/metric word on it
                    self._curve_line = (
                        _CURVE_WORDS.find_matches_as_indexes(text[cur:end].lower()) != []
                    )
                    light = False
                else:
                    self._curve_line, light = bool(gated & 2), bool(gated & 1)
                if light and self._failed and self._after_summary(tagger):
                    light = False  # progress after torchrun's last words: a relaunch (_line)
                if light:  # only a progress/metric line: no matching
                    self._light_lines += 1
                    light_lines = self._light_lines
                    if light_lines >= next_stride_at:  # it changes at LIGHT_FULL x 2^k
                        stride = _light_stride(light_lines)
                        next_stride_at = LIGHT_FULL << (light_lines // LIGHT_FULL).bit_length()
                    if (
                        light_lines > LIGHT_FULL
                        # scrambled (Knuth's multiplicative hash), not light_lines % stride:
                        # N ranks' lines interleave, and a plain modulo would read the same
                        # ranks every time (stride 2 on 8 ranks: only the odd ones)
                        and ((light_lines * 2654435761) >> 16) % stride
                        and not (nonfinite_block and _non_finite(text, cur, end))
                    ):
                        skipped = (number, text, cur, end)  # read at the end if it stays the last
                    else:
                        skipped = None
                        self._light(number, text[cur:end], path, tagger)
                else:
                    for raw in logical_lines(number, text[cur:end], block.offset):
                        self._line(raw, path, tagger, readers)
                following = (
                    tagger.following()
                    or self._pending is not None
                    or bool(self._open_readers)
                    or self.state.launch.continues
                )
                nxt = end + 1
                if following:
                    cur = nxt
                else:
                    gated = next(starts, -1)
                    cur = gated >> 2
                    while cur != -1 and cur < nxt:
                        gated = next(starts, -1)
                        cur = gated >> 2
            st.lines_total += newlines + (0 if block.continues else 1)
        if head_parts:
            st.heads.append((path, head_first, "\n".join(head_parts)))
        if tail and len(st.tails) < MAX_TAILS:
            if tail_end - tail.count("\n") != 1:  # cut inside a line: start at the next
                tail = tail[tail.find("\n") + 1 :]
            st.tails.append((path, tail_end - tail.count("\n"), tail))
        if skipped is not None:  # the last progress line is always read: the progress ends there
            number, text, cur, end = skipped
            self._light(number, text[cur:end], path, tagger)
        self._close_pending()
        for rank, reader in readers.items():
            if reader.open:
                st.traceback_cut = True  # the log ends inside a traceback: a failure under way
            if reader.open and rank is not None and not reader.awaits_what:
                # the log ends inside this rank's traceback (not after a C++ abort's
                # "terminate called after throwing an instance of 'T'" whose what() line it
                # cut: that names its error, T, and begins no Python traceback)
                st.cut_traceback_ranks.add(rank)
                if len(st.cut_traceback_starts) < MAX_EXCEPTIONS:
                    st.cut_traceback_starts.append((path, rank, reader.started))
            fault = reader.take_fault_stack(end=True)
            if fault is not None:
                self._fault_stack(fault, path, rank, None, tagger.last_time(rank))
            cut_frames = reader.cut_frames()
            if cut_frames:
                cut_exc = PyException("", "", st.lines_total, cut_frames, header="cut")
                st.cut_tracebacks.append(
                    SeenException(cut_exc, path, rank, None, tagger.last_time(rank), "", 0)
                )
            exc = reader.finish()
            header = reader.take_header_message()
            if header is not None:
                self._header_message(header, path, rank)
            if exc is not None and not exc.ignored:
                self._order += 1
                st.exceptions.append(
                    SeenException(
                        exc,
                        path,
                        rank,
                        None,
                        tagger.last_time(rank),
                        exc.line_text or exc.type,
                        self._order,
                        self._advance.watch((path, None, rank, None), exc.log_line),
                        ranks_at=self._ranks_at() if rank is None else (),
                    )
                )
        sections = [h.facts for h in self._held]
        if self._held:
            _see_tracebacks(self._section, (*st.exceptions, *st.cut_tracebacks))
            self._settle_sections(tagger)
        if self._run_start > 1:  # other jobs before this one in the file: its own stacks only
            self._own_stacks([*sections, self._section])
        # Frames' package paths name the stack (site-packages/vllm/...) and the launcher
        # (accelerate/commands/launch.py) even where no gated line does.
        paths = {f.file for seen in (*st.exceptions, *st.cut_tracebacks) for f in seen.exc.frames}
        st.stacks |= stacks_of_paths(paths)
        st.launch.launchers.update(
            name
            for name, part in _LAUNCHER_PATHS
            if any(part in p.replace("\\", "/") for p in paths)
        )
        if any(
            _own_process_target(seen.exc.frames) for seen in (*st.exceptions, *st.cut_tracebacks)
        ):
            st.launch.launchers.add("mp.spawn")
        st.launch.drivers.update(
            name for name, part in _DRIVER_PATHS if any(part in p.replace("\\", "/") for p in paths)
        )
        if len({task for task, _, _ in tagger.label_spans}) >= 2:
            # two or more tasks' lines carry only srun --label's "N: " (a Slurm task id that
            # is the rank: rootrank.ranks.RankTagger.label_spans): srun started the processes
            st.launch.launchers.add("srun")
        if self._ended is None:
            self._ranks_ended(self._section.world or tagger.world_size)
        if self._ended is not None:
            st.run_ended.append((path, self._ended_line, self._ended))
        if self._other_run_ranks:  # ranks only other jobs of the file showed
            gone = self._other_run_ranks - self._section.ranks
            st.ranks_seen -= gone
            st.progress.forget(gone)
        if self._run_start > 1:  # another job before this one in the file: not its curves
            st.metrics.forget_before(path, self._run_start)
        self._line_sigs.clear()
        if path_rank is not None and st.lines_total:
            st.ranks_seen.add(
                tagger.local_to_global.get((None, path_rank), path_rank) if is_local else path_rank
            )
        st.elastic.extend(tagger.elastic)
        for rank, host in tagger.hosts.items():
            st.hosts.setdefault(rank, host)
        st.label_hosts |= tagger.label_hosts
        if tagger.world_size:
            st.world_size = max(st.world_size or 0, tagger.world_size)
        # Findings whose rank is only known from a later line of the same process: NCCL's
        # "comm ... rank R", a Ray actor's own rank (ranks.RankTagger.rank_of_pid).
        for finding, pid_host, pid in st.pending_pid:
            later_rank = tagger.rank_of_pid(pid_host, pid) if finding.rank is None else None
            if later_rank is not None:
                finding.rank = later_rank
                for e in finding.evidence:
                    if e.rank is None:
                        e.rank = later_rank
            elif finding.rank is None and "local_rank" not in finding.captures:
                # the agent named this pid's local rank; the analysis maps it to a global
                # rank as it does the agent's own line (prepare.global_ranks_from_local)
                local = tagger.pid_local_rank(pid_host, pid)
                if local is not None:
                    finding.captures["local_rank"] = str(local)
                    finding.captures.setdefault("pid", str(pid))
        st.pending_pid.clear()
        if tagger.srun_agent_tasks:
            self._unrank_agent_tasks(path, tagger)

    def _unrank_agent_tasks(self, path: str, tagger: RankTagger) -> None:
        """srun ran torchrun's agents as its tasks: in ``path``, a finding whose rank is only
        an agent's srun label, or the task id of srun's own report (``srun: error: node2: task
        1: Exited with exit code 1``: task 1 is node 1's agent), on every evidence line, is on
        no rank; the task ids leave the ranks seen unless other evidence showed them
        (ranks.RankTagger.label_only)."""
        st = self.state
        tasks = tagger.srun_agent_tasks
        st.launch.srun_agent_tasks |= tasks
        for key, f in list(st.findings.items()):
            if f.rank not in tasks or not all(
                e.path == path
                and (tagger.label_only(f.rank, e.line) or e.text.startswith("srun: error: "))
                for e in f.evidence
            ):
                continue
            del st.findings[key]
            f.rank = None
            for e in f.evidence:
                e.rank = None
            new = (key[0], None, path)
            own = st.findings.get(new)
            if own is None:
                st.findings[new] = f
            else:
                _absorb(own, f)
        st.ranks_seen -= tasks - tagger.ranks_not_label

    def _line(
        self,
        raw: RawLine,
        path: str,
        tagger: RankTagger,
        readers: dict[int | None, TracebackReader],
    ) -> None:
        st = self.state
        if raw.text.startswith(_TRACEBACK_START) and not raw.offset:
            self._record_rank = self._record_rank_before(raw.number, tagger)
        tagged = tagger.tag(raw.text, raw.number)
        if raw.offset:  # a piece of an over-long line after its first: the line's rank is its
            tagged = self._line_rank(raw, tagged, tagger)
        elif tagged.rank is None and tagged.local_rank is None and "\r" in raw.raw:
            tagged = self._frame_rank(raw, tagged, tagger)
        if self._record_rank is not None:
            if tagged.rank is None and tagged.local_rank is None:
                tagged.rank = self._record_rank
            else:
                self._record_rank = None  # another process's line: the record's output ended
        text = tagged.text
        if text.strip():
            key = process_key(path, tagged.rank, tagged.local_rank, tagged.host, tagged.pid)
            if key in st.last_own_line or len(st.last_own_line) < MAX_PROCESS_KEYS:
                st.last_own_line[key] = raw.number
        if not st.start_seen and "OMP_NUM" in text and _OMP_BANNER in text:
            st.start_seen = True
        if "NVIDIA-SMI" in text[:16] and len(st.sources) == 1 and _JOB_HEADER.match(text):
            label = tagged.host  # the parallel shell's host label the tagger peeled
            # a parallel shell's sweep (pdsh/clush: "<host>: " on every line) prints one table
            # per host: another host's table is the same pass, not the job started again
            if (
                self._job_headers
                and (label is None or label == self._job_header_host)
                and self._job_restarts()
            ):
                self._new_attempt(_RunStart(raw.number, tagger, readers))
            self._job_headers += 1
            self._job_header_host = label
        if (
            (self._failed or self._ended is not None)
            and len(st.sources) == 1
            and ("OMP_NUM" in text or " " in text[:90])
        ):
            if _starts_run(text) or _starts_run(raw.text):
                self._new_attempt(
                    _RunStart(
                        self._after_close(raw.number, tagger),
                        tagger,
                        readers,
                        launch_identity(raw.text),
                    )
                )
            elif self._other_world(raw.number, tagger, readers):
                # another job's start: it prints another world size after this one failed
                # (two jobs' logs concatenated with no launcher banner between them)
                self._new_attempt(_RunStart(raw.number, tagger, readers, worlds=tagger.world_line))
            elif (
                self._failed
                and (
                    text.startswith(_TRACEBACK_START)
                    # a traceback's frame with no header above it (a log's excerpt, cut
                    # above the frames), or an exception line with none at all (a paste of
                    # an error's last lines), when no traceback is being read (nor the
                    # summary, whose "traceback :" field quotes a rank's frames)
                    or (
                        (text.lstrip().startswith('File "') or bare_exception(text))
                        and not self._open_readers
                        and not tagger.following()
                    )
                )
                and any(e.root_cause for e in tagger.elastic)
            ):
                # torchrun prints its failure summary once, as its last words: a worker's
                # traceback after it is a relaunch's, if that section ends with a summary of
                # its own (else a wrapper's report of the same run: _settle_sections), or
                # another job's, if another program ran it (_new_attempt).
                cut = self._after_close(raw.number, tagger)
                self._summary_cuts.add(cut)
                self._new_attempt(_RunStart(cut, tagger, readers, started=False))
            elif (
                self._failed
                and _TEE_PREFIX.match(raw.text) is not None
                and not self._open_readers
                and not tagger.following()
                and any(e.root_cause for e in tagger.elastic)
                and self._exited_worker(tagged, tagger)
            ):
                # a worker's own line (torchrun's ``--tee`` prefix) after the agent's failure
                # summary, its last words printed once every worker exited, from a rank that
                # launch ran: a new launch's worker (a relaunch, or another job appended:
                # _settle_sections tells). A rank it did not run may be another node's worker,
                # still running (srun's nodes share one output): no cut.
                self._new_attempt(_RunStart(raw.number, tagger, readers, started=False))
            elif (
                self._failed
                and len(st.exceptions) <= MAX_PROGRAM_CHECKS
                and (text.startswith(_TRACEBACK_START) or text.lstrip().startswith('File "'))
                and not self._open_readers
                and not tagger.following()
                and (other := self._other_program(raw.number)) is not None
            ):
                # a traceback after a failure, with no run start between, from another
                # program than the section's (``cat eval.log serve.log``: two jobs that print
                # no banner); another process of the same program is the same job: no cut
                self._new_attempt(
                    _RunStart(self._after_close(raw.number, tagger), tagger, readers, other=other)
                )
            elif (
                self._failed
                and self._after_summary(tagger)
                and (got := read_step(text)) is not None
            ):
                # torchrun prints its failure summary as its last words, after every worker
                # exited: training progress after it is a new launch's (a shell loop or a
                # scheduler relaunching the job, which prints no banner of its own). A new
                # launch starts over (step 1) or resumes from a checkpoint at or before the
                # furthest step printed so far; its second progress line starts the job's
                # next attempt (or another node's output of the same run: _settle_sections).
                # One line alone may be a wrapper's report of the failed launch ("failed at
                # step 12"), and a first step past the furthest is no new launch's.
                if self._summary_progress is None:
                    steps = [p.step for p in st.progress.last().values()]
                    restart = got[0] <= max([1, *steps])
                    self._summary_progress = raw.number if restart else -1
                elif self._summary_progress > 0:
                    # the attempt begins at its first progress line, or before it, right after
                    # the summary (its own first lines: _after_close)
                    cut = self._after_close(self._summary_progress, tagger, raw.number)
                    self._new_attempt(_RunStart(cut, tagger, readers))
        elif (
            self._section.launch is not None
            and len(st.sources) == 1
            and ("$ " in raw.text[:82] or "# " in raw.text[:82] or raw.text.startswith("+"))
            and _starts_run(raw.text)
        ):
            # a command that launches the job another way, with no failure or end between:
            # another job (a run that was stopped without a word, then a new one)
            launch = launch_identity(raw.text)
            if launch is not None and launch != self._section.launch:
                self._new_attempt(_RunStart(raw.number, tagger, readers, launch))
        rank = tagged.rank
        self._section.see(rank, tagged.local_rank, tagged.host, tagged.time)
        if "torch/distributed/" in raw.text and (a := _AGENT_LINE.match(raw.text)):
            self._section.agents.add(a["agent"])
        need_time = tagged.time is None and rank is not None
        if rank is not None:
            st.ranks_seen.add(rank)
        if self._curve_line:
            self._curves(
                raw,
                text,
                rank if rank is not None else tagged.local_rank,
                tagged.time,
                path,
                (path, tagged.host, rank, None if rank is not None else tagged.local_rank),
                tagged.pid,
            )
        else:
            if tagged.time is not None and (st.end_time is None or tagged.time > st.end_time):
                st.end_time = tagged.time
            own = rank if rank is not None else tagged.local_rank
            self._see_rank_line(
                own if own is not None or "rank" not in text else body_rank(text), text, raw.number
            )
        if "aving " in text or "AVING " in text:
            if m := _SAVE_TARGET.search(text):
                st.save_target = (path, raw.number, m["path"].rstrip(".,;:"))
        st.launch.read(text, raw.number, raw.text)
        for since in self._launch_since.values():
            since.read(text, raw.number, raw.text)
        if self._section.launch is None and st.launch.command is not None:
            self._section.launch = launch_identity(st.launch.command)
            self._section.command = st.launch.command
        if self._section.script is None and st.launch.script is not None:
            self._section.script = st.launch.script
        if (
            "closing signal" in text
            and len(st.closing_signals) < MAX_CLOSING_SIGNALS
            and (m := _CLOSING_SIGNAL.search(text))
        ):
            st.closing_signals.append(
                ClosingSignal(int(m["pid"]), m["sig"], path, raw.number, tagged.time, tagged.host)
            )
        if (
            "successfully finished" in text
            or "exits successfully" in text
            or "` stopped: `max_" in text
            or "raining comp" in text
            or "raining fini" in text
            or "raining is" in text
            or "raining done" in text
            or "ed training" in text
            or "ne training" in text
            or "[after training is done]" in text
        ) and (m := RUN_END_REPORT.search(text)):
            if m["pl"]:
                self._ended = f"Lightning's fit loop reported its end ({m['pl']})"
            elif m["titan"]:
                self._ended = (
                    f"the training loop reported its end ({m['titan'].lstrip(']:>;,- ').rstrip()})"
                )
            elif m["hf"]:
                self._ended = "the Hugging Face Trainer reported its end (Training completed.)"
            elif m["mg"]:
                self._ended = "Megatron's train() returned ([after training is done])"
            elif m["ds"]:
                self._ended = (
                    "DeepSpeed's launcher reported its workers exited 0 (exits successfully)"
                )
            else:
                self._ended = (
                    "torchrun's agent reported that its worker group finished"
                    " successfully: every worker exited 0"
                )
            self._ended_line = raw.number
            st.run_end_reports[path] = (raw.number, raw.raw.strip())
        if "failed (exitcode" in text:
            m = _AGENT_FAILED.search(raw.text)
            if m:
                agent = (path, m.group("agent"))
                if agent in self._agent_failed:
                    self._restarted(path, self._agent_failed[agent] + 1, agent)
                self._agent_failed[agent] = raw.number
                if m.group("pid") and tagged.time is not None:
                    self.state.agent_exit_times[int(m.group("pid"))] = tagged.time
                # the attempt ended: a step printed after it is a restarted worker's
                self._advance.new_section(path)
        pending = self._pending
        if pending is not None:
            if (
                raw.number == pending.numbers[-1] + 1
                and rank in (pending.rank, None)
                and tagged.time is None
                and len(pending.parts) <= MAX_CONTINUATION_LINES
                and continues_message(text)
                # a wrapped log record's tail is bare: no header the cleaning removed
                and (pending.exc_type or continues_message(raw.text))
            ):
                pending.parts.append(text)
                pending.numbers.append(raw.number)
                if rank is None and pending.rank is not None and pending.exc_type:
                    # A wrapped tail carries no launcher prefix: it is still that rank's message.
                    rank = tagged.rank = pending.rank
                    tagged.host = tagged.host or pending.host
            else:
                self._close_pending()
                pending = None
        if self._forward_open is not None or _FORWARD_HEAD in text:
            self._forward_trace(text, raw.number)
        if self._traced:
            self._traced_frame(rank, text, raw.number)
        reader = readers.get(rank)
        if rank is not None and "what():" in text and (reader is None or not reader.awaits_what):
            # a C++ abort's what() names a rank ("[Rank 3] Watchdog caught..."), its
            # "terminate called" line did not: it completes the rankless one
            unranked = readers.get(None)
            if unranked is not None and unranked.awaits_what:
                reader = unranked
        if reader is None:
            reader = readers[rank] = TracebackReader()
        if "most recent call first" in text and tagged.local_rank is not None and rank is None:
            # a faulthandler stack's header under a launcher's local-rank prefix: its stack is
            # that process's (released lines later, at the next process's dump)
            if len(self._fault_locals) >= MAX_EXCEPTIONS:
                self._fault_locals.clear()
            self._fault_locals[(path, raw.number)] = tagged.local_rank
        exc = reader.feed(text, raw.number, raw.raw)
        if exc is None and rank is not None and not reader.open and text.strip() in CHAIN_MARKERS:
            self._orphan_chain(path, rank, raw.number)
        if self._record_rank is not None and not reader.open:
            self._record_rank = None  # the record's traceback ended with its exception line
        fault = reader.take_fault_stack()
        if fault is not None:
            self._fault_stack(fault, path, rank, tagged.host, tagged.time)
        if reader.open:
            self._open_readers.add(rank)
        else:
            self._open_readers.discard(rank)
        header = reader.take_header_message()
        if exc is not None and exc.ignored:
            return  # an exception Python ignored (in __del__...) ended nothing
        if exc is not None:
            if need_time:
                tagged.time = self._time_before(rank, tagger)
                need_time = False
            self._order += 1
            self._failed = True
            seen_raw = exc.line_text if exc.header == "debugger" else raw.raw
            local = None if rank is not None else tagged.local_rank
            st.exceptions.append(
                SeenException(
                    exc,
                    path,
                    rank,
                    tagged.host,
                    tagged.time,
                    seen_raw,
                    self._order,
                    self._advance.watch((path, tagged.host, rank, local), exc.log_line),
                    ranks_at=self._ranks_at() if rank is None and local is None else (),
                    pid=tagged.pid,
                )
            )
            self._traced[rank] = (exc, raw.number, False)
            if self._forward and exc.traced_frame is None:
                fm = _NAN_BACKWARD.search(exc.message)
                held = self._forward.get(fm.group("fn")) if fm else None
                if held is not None and held[1] is not None:
                    exc.traced_frame = held[1]
            if exc.log_line == raw.number and pending is None:
                if self._pending is not None:
                    self._close_pending()
                self._pending = PendingMessage(
                    exc.type,
                    [text],
                    [raw.number],
                    raw,
                    path,
                    rank,
                    tagged.host,
                    tagged.pid,
                    tagged.time,
                    exc.frames,
                )
        if reader.code_line:
            return  # source code quoted in a traceback is not a message
        # the raw line: a worker prefix ("(RayWorker pid=7) ") names the stack too
        if _STACK_WORDS.find_matches_as_indexes(raw.text):
            found = stacks_in(raw.text, self._section.stacks)
            self._section.stacks |= found
            st.stacks |= found
        hits = list(self.matcher.match(text))
        if len(hits) > 1:  # one line, one explanation: the most specific signature
            hits = [max(hits, key=lambda h: h.signature.specificity)]
        if hits and need_time:
            tagged.time = self._time_before(rank, tagger)
        for hit in hits:
            finding = self._record(
                hit, raw, tagged.rank, tagged.host, tagged.pid, tagged.time, path, text
            )
            if exc is not None and not finding.frames and exc.frames:
                finding.frames = [
                    {"file": f.file, "line": f.line, "func": f.func, "user": f.user}
                    for f in exc.frames[-12:]
                ]
                call = collective_call(exc.frames)
                if call:
                    finding.captures.setdefault("collective", call)
        if hits:
            if len(self._line_sigs) > 64:  # only the last few lines are ever looked up
                for n in [n for n in self._line_sigs if n < raw.number - MAX_CONTINUATION_LINES]:
                    del self._line_sigs[n]
            self._line_sigs.setdefault(raw.number, set()).update(h.signature.id for h in hits)
            if self._pending is not None and raw.number in self._pending.numbers:
                self._pending.sigs.update(h.signature.id for h in hits)
                if raw.number == self._pending.numbers[0]:
                    self._pending.first_sigs.update(h.signature.id for h in hits)
        if (
            self._pending is None
            and exc is None
            and (hits or any(r in raw.text for r in _WRAPPABLE_RECORDS))
        ):
            # a log line a terminal may have wrapped ("... last enqueue" then "d work: 137429,
            # last completed work: 137428"): its tail may hold captures of the signature the
            # line showed, or (a C++ record cut inside the words) the whole match
            ids = {h.signature.id for h in hits}
            self._pending = PendingMessage(
                "",
                [text],
                [raw.number],
                raw,
                path,
                tagged.rank,
                tagged.host,
                tagged.pid,
                tagged.time,
                [],
                set(ids),
                set(ids),
                supersede=False,
                complete_only=bool(hits),
            )
        if header is not None:
            self._header_message(header, path, rank, tagged.host, tagged.time)

    def _forward_trace(self, text: str, number: int) -> None:
        """Autograd anomaly mode's warning ``Error detected in AddmmBackward0. Traceback of
        forward call that caused the error:`` (torch/csrc/autograd/python_anomaly_mode.cpp)
        and the ``File "...", line N, in f`` frames under it: the forward stack that built the
        backward node that produced NaN. Its innermost user frame (with the source line quoted
        under it) becomes the :attr:`~rootrank.tracebacks.PyException.traced_frame` of the
        exception that names the same function (``RuntimeError: Function 'AddmmBackward0'
        returned nan values``), whatever rank prefix either carries: the warning is printed
        unprefixed by the warnings module, the exception under the launcher's ``[rankN]:``.
        The exception's own traceback ends at ``loss.backward()``; the forward line is where
        the non-finite value was made (``torch.log(duration)``)."""
        if _FORWARD_HEAD in text:
            m = _FORWARD_FN.search(text)
            if m is None:
                return
            if len(self._forward) >= MAX_EXCEPTIONS:
                self._forward.clear()
            self._forward[m.group("fn")] = (number, None)
            self._forward_open = m.group("fn")
            self._forward_frame = None
            return
        fn = self._forward_open or ""
        held = self._forward.get(fn)
        body = text.strip()
        if held is None or number - held[0] > MAX_FORWARD_LINES:
            self._forward_open = None
            return
        if body.startswith("File "):
            self._forward_frame = traced_user_frame(body)
            self._forward_code = True  # its source line may follow
            if self._forward_frame is not None:
                self._forward[fn] = (held[0], self._forward_frame)
        elif body.startswith("^"):
            pass  # the caret markers under a source line
        elif body and self._forward_code:
            self._forward_code = False
            if self._forward_frame is not None:  # the user frame's source line
                self._forward[fn] = (held[0], replace(self._forward_frame, code=body))
        else:
            self._forward_open = None  # the trace ended
            self._forward_frame = None

    def _traced_frame(self, rank: int | None, text: str, number: int) -> None:
        """Line ``number`` (1-based; ``text`` without its rank prefix) of ``rank``, after that
        rank's last exception: dynamo prints the stack of the user's code it was tracing
        after the exception line, under ``from user code:`` (its message, over several lines,
        within :data:`TRACED_FRAME_LINES` of it). Each user frame there becomes the
        exception's :attr:`rootrank.tracebacks.PyException.traced_frame` (the last, the
        innermost, wins); a new ``Traceback`` line ends the watch."""
        held = self._traced.get(rank)
        if held is None:
            return
        exc, last, armed = held
        body = text.strip()
        if number - last > TRACED_FRAME_LINES or body.startswith("Traceback (most recent"):
            del self._traced[rank]
            return
        if body == FROM_USER_CODE:
            self._traced[rank] = (exc, number, True)
        elif armed:
            frame = traced_user_frame(body)
            if frame is not None:
                exc.traced_frame = frame
                self._traced[rank] = (exc, number, True)

    def _line_rank(self, raw: RawLine, tagged: Tagged, tagger: RankTagger) -> Tagged:
        """``tagged`` (a piece of line ``raw.number`` that starts ``raw.offset`` code points
        into it: rootrank.ingest.Block) attributed as the line's head is: launchers prefix a
        line once, at its start (``[rank3]: ...`` then 3 MB of text), so every piece of it
        belongs to the head's rank, local rank, host, pid and time. The head comes from the
        block (an over-long line inside one block) or from the block the line began in
        (:attr:`_line_head`); it is tagged once per line. A piece whose head is unknown keeps
        its own attribution."""
        memo = self._head_tagged
        if memo is None or memo[0] != raw.number:
            if not self._block_continues and self._block_text is not None:
                start = self._line_start
                head: str | None = self._block_text[start : start + LINE_HEAD_CHARS]
            elif self._line_head is not None and self._line_head[0] == raw.number:
                head = self._line_head[1]
            else:
                head = None
            if head is None:
                return tagged
            # (a line of progress frames: the prefix is before the first \r, the one frame
            # that carries it; cleaning would keep the last)
            lines = logical_lines(raw.number, head.split("\r", 1)[0])
            if not lines:
                return tagged
            memo = self._head_tagged = (raw.number, tagger.tag(lines[0].text, raw.number))
        line = memo[1]
        if line.rank is None and line.local_rank is None and line.host is None:
            return tagged
        return replace(
            tagged,
            rank=line.rank,
            local_rank=line.local_rank,
            host=line.host,
            pid=line.pid if line.pid is not None else tagged.pid,
            time=line.time if line.time is not None else tagged.time,
        )

    def _other_world(
        self, number: int, tagger: RankTagger, readers: dict[int | None, TracebackReader]
    ) -> bool:
        """Whether line ``number`` (1-based, just tagged) printed a world size other than the
        one the section printed before it, outside any traceback: a job's size is fixed for
        its life (torchrun's ``WORLD_SIZE``; an elastic resize restarts the workers, with a
        banner), so after a failure another size is another job's output (logs of two jobs
        concatenated with no launcher banner between them)."""
        wl = tagger.world_line
        if wl is None or wl[0] != number or wl[2] is None or wl[1] == wl[2]:
            return False
        return not any(r.open for r in readers.values())

    def _exited_worker(self, tagged: Tagged, tagger: RankTagger) -> bool:
        """Whether ``tagged`` (a line after torchrun's failure summary) is from a rank the
        section's launch ran (its lines' global ranks up to the summary, the summary's; a line
        with a local rank only: the summary's local ranks), every one of which had exited
        when the summary was printed."""
        if self._summary_ranks is None:  # the first worker line after the summary
            self._summary_ranks = set(self._section.ranks)
        if tagged.rank is not None:
            return tagged.rank in self._summary_ranks or any(
                e.rank == tagged.rank for e in tagger.elastic
            )
        return tagged.local_rank is not None and any(
            e.local_rank == tagged.local_rank for e in tagger.elastic
        )

    def _frame_rank(self, raw: RawLine, tagged: Tagged, tagger: RankTagger) -> Tagged:
        """``tagged`` (the last frame of a line of ``\r`` progress frames, the one cleaning
        keeps) attributed as the line's first frame is, when that one names a rank or local
        rank and the last names none: torchrun's ``--tee`` (TailLog) and srun's ``--label``
        prefix each ``\n``-ended line of a worker's stream once, so a progress bar's later
        frames (``[default1]:Epoch 0: 10%...\rEpoch 0: 11%...``) and whatever the worker
        printed after its last ``\r`` are the prefixed rank's."""
        head = raw.raw.split("\r", 1)[0]
        lines = logical_lines(raw.number, head) if head.strip() else []
        if not lines:
            return tagged
        line = tagger.tag(lines[0].text, raw.number)
        if line.rank is None and line.local_rank is None:
            return tagged
        return replace(
            tagged,
            rank=line.rank,
            local_rank=line.local_rank,
            host=line.host if line.host is not None else tagged.host,
            pid=line.pid if line.pid is not None else tagged.pid,
            time=tagged.time if tagged.time is not None else line.time,
        )

    def _record_rank_before(self, number: int, tagger: RankTagger) -> int | None:
        """The rank of the log record on the line before line ``number`` (1-based, an
        unprefixed ``Traceback (most recent call last):``) when that record is a warning or an
        error whose format carries the rank (``[RANK 0] [WARNING] upload failed, retrying``),
        else ``None``.

        Mechanism: ``logging.Formatter.format`` appends the formatted exception of a record
        logged with ``exc_info`` (``log.exception``, ``log.warning(..., exc_info=True)``) to the
        record's own text after a newline, and the stream handler writes both with one
        ``write``: the traceback's lines follow the record's first line with no header of
        their own and nothing of another process between them, so they are that record's
        rank's. The record line is tagged here, in order, when no gate chose it. A traceback
        that begins at the script's top level (``in <module>``) is an uncaught one, not a
        record's, and takes no rank from the line above."""
        block, start = self._block_text, self._line_start
        if block is None or start < 2 or block[start - 1] != "\n":
            return None
        prev = block[block.rfind("\n", 0, start - 1) + 1 : start - 1]
        if not _RECORD_LEVEL.search(prev[:200]):
            return None
        # a traceback whose outermost frame is the script's top level ended a process (an
        # uncaught exception, printed by sys.excepthook in writes of its own): no record's
        end = block.find("\n", start)
        nxt_end = block.find("\n", end + 1) if end != -1 else -1
        first_frame = block[end + 1 : nxt_end if nxt_end != -1 else len(block)] if end != -1 else ""
        if first_frame.rstrip().endswith("in <module>"):
            return None
        before = tagger.tag(prev, number - 1)
        return before.rank

    def _after_close(self, number: int, tagger: RankTagger, current: int | None = None) -> int:
        """Where a cut found at line ``number`` (1-based) after torchrun's failure summary
        begins the next run: the line after the summary's closing rule (or after its last
        field line), when that came at most :data:`MAX_AFTER_SUMMARY` lines earlier in the
        current block; else ``number``. ``current`` is the line being read (``number`` when
        not given; an earlier ``number`` is a cut decided late, at a run's second progress
        line). The summary is the agent's last words, printed once every worker exited
        (torch.distributed.elastic ``ChildFailedError.format_msg``): the lines after it (a
        wrapper's own line, the next job's first lines before its first traceback or step: a
        watchdog line, a progress bar) are no longer that launch's."""
        last = tagger.summary_field_line
        current = number if current is None else current
        block, start = self._block_text, self._line_start
        if not last or not last < number - 1 <= last + MAX_AFTER_SUMMARY or block is None:
            return number
        if not start or current - last > 4 * MAX_AFTER_SUMMARY:
            return number
        # lines last..current - 1 (the text before the current line ends with its newline)
        pieces = block[: start - 1].rsplit("\n", current - last)
        if len(pieces) != current - last + 1:
            return number  # the summary is in an earlier block
        begin = last + 1
        for i, line in enumerate(pieces[2:], start=last + 1):
            if i >= number:
                break
            if line.rstrip().endswith("=" * 10):
                begin = i + 1  # the summary's closing rule (a prefix before it kept)
        return begin if begin < number else number

    def _after_summary(self, tagger: RankTagger) -> bool:
        """Whether the current section of a one-source log holds torchrun's failure summary
        (its ``Root Cause`` entry): the agent's last words, printed once every worker exited."""
        return len(self.state.sources) == 1 and any(e.root_cause for e in tagger.elastic)

    def _new_attempt(self, cut: _RunStart) -> None:
        """A new run starts at line ``cut.number`` (1-based; :class:`_RunStart`):
        :meth:`_begin_section`, with the findings and exceptions already read wholly at or
        after that line (a cut placed before the current line: :meth:`_after_close`) moved to
        the new section."""
        st = self.state
        number = cut.number
        path = st.sources[-1] if st.sources else ""
        late = {
            key: f
            for key, f in st.findings.items()
            if f.evidence and all(e.path == path and e.line >= number for e in f.evidence)
        }
        for key in late:
            del st.findings[key]
        late_exceptions = [x for x in st.exceptions if x.path == path and x.exc.log_line >= number]
        if late_exceptions:
            kept = [x for x in st.exceptions if x.exc.log_line < number or x.path != path]
            st.exceptions.clear()
            st.exceptions.extend(kept)
        self._begin_section(cut)
        st.findings.update(late)
        st.exceptions.extend(late_exceptions)

    def _begin_section(self, cut: _RunStart) -> None:
        """A new run starts at line ``cut.number`` (1-based; :class:`_RunStart` says how it
        was seen) after the current one failed: what the failed run showed is dropped, so the
        diagnosis is about the run that ended the job (what the ranks and hosts are stays
        learnt). What it dropped is held until the source ends: if the new section turns out
        to be another node of the same run (:meth:`_settle_sections`), it is put back. A run
        start that shows another job (:func:`rootrank.runs.separate_run`: the section before
        ended, or was launched another way; or ``cut.other``) begins a new run instead
        (:meth:`_new_run`)."""
        st = self.state
        number, tagger, readers, worlds = cut.number, cut.tagger, cut.readers, cut.worlds
        facts = self._section
        for e in tagger.elastic:
            facts.see(e.rank, e.local_rank, e.host, e.time)
        facts.world, tagger.world_size = tagger.world_size, None
        facts.ended = self._ended
        _see_tracebacks(facts, st.exceptions)
        # the entry script and launch command are the section's own: the next section names
        # its own (or, a relaunch that prints none, gets its run's back: _settle_sections)
        st.launch.script = st.launch.command = st.launch.module = None
        later = SectionFacts(start=number, launch=cut.launch)
        if worlds is not None:
            facts.world, later.world = worlds[2], worlds[1]
        why = cut.other or (separate_run(facts, later) if cut.started else None)
        # whether the lines ahead left open which program runs after the cut (no traceback
        # in reach): the source's end may still show another job there (_launch_since)
        undecided = False
        if (
            why is None
            and (facts.entries or facts.user_files or facts.engines or facts.script)
            and not launched_alike(facts, later)
        ):
            # what ran after the cut, from the lines ahead: a relaunch reruns the same program
            ahead = self._peek_section(number)
            if ahead is not None:
                why = other_process(facts, ahead)
                undecided = not (ahead.entries or ahead.user_files or ahead.engines)
        if why is not None:
            self._new_run(cut, facts, later, why)
            if worlds is not None:
                tagger.world_size = st.world_size = worlds[1]
            return
        self._held.append(
            _HeldSection(
                start=number,
                facts=facts,
                findings=dict(st.findings),
                exceptions=list(st.exceptions),
                pending_pid=list(st.pending_pid),
                cut_traceback_ranks=set(st.cut_traceback_ranks),
                cut_at_start=list(st.cut_at_start),
                elastic=list(tagger.elastic),
            )
        )
        self._section = later
        if undecided and not st.launch.launched_here:  # (``rootrank run``'s command stays)
            self._launch_since[number] = LaunchFacts()
            if len(self._launch_since) > MAX_LAUNCH_SHADOWS:
                del self._launch_since[min(self._launch_since)]
        # torchrun prints its start banner once per launch, not per restart: a failure line
        # after this one is a new agent's (a relaunch, or another node with a pid that may
        # repeat in containers), never a restart of an agent of the earlier section
        self._agent_failed.clear()
        self._advance.new_section()
        st.attempt_starts.append(number)
        st.findings.clear()
        st.exceptions.clear()
        st.pending_pid.clear()
        st.cut_traceback_ranks.clear()
        st.cut_at_start.clear()
        tagger.elastic.clear()
        readers.clear()
        self._open_readers.clear()
        self._pending = None
        self._line_sigs.clear()
        self._failed = False
        self._ended = None
        self._rank_last.clear()
        self._summary_progress = None
        self._summary_ranks = None

    def _job_restarts(self) -> bool:
        """Whether the job script's header on the current line (:data:`_JOB_HEADER`, seen
        before in this source) starts the job again: the run before it failed or ended, or the
        first training step in the lines ahead (at most :data:`PEEK_CHARS` characters of the
        block) is at or below the furthest step printed so far (a new start from step 0, or a
        resume from a checkpoint). A script that prints the table while training runs (a
        monitor loop) shows the steps going on past the furthest: no new start. Reading ahead
        counts as one of the source's :data:`MAX_PEEKS`."""
        if self._failed or self._ended is not None:
            return True
        steps = [p.step for p in self.state.progress.last().values()]
        text, start = self._block_text, self._line_start
        if not steps or text is None or self._peeks >= MAX_PEEKS:
            return False
        self._peeks += 1
        for line in text[start : start + PEEK_CHARS].split("\n")[1:]:
            got = read_step(line)
            if got is not None:
                return got[0] <= max(steps)
        return False

    def _other_program(self, number: int) -> str | None:
        """Why the traceback that begins at line ``number`` (1-based) is another program's
        than the current section's tracebacks (rootrank.runs.other_process, on the section's
        exceptions so far and the traceback read ahead: :meth:`_peek_section`), or ``None``.
        A process's uncaught exception ends it; a traceback after it is another process's:
        the same job's (another rank, a worker) when it runs the same program, else the next
        job's, whatever printed no banner. A chained exception's next link ("During handling
        of the above exception...") is the same process's: never another program."""
        block, start = self._block_text, self._line_start
        if block is not None:
            before = block[max(0, start - 200) : start]
            if any(marker in before for marker in CHAIN_MARKERS):
                return None
        facts = SectionFacts(script=self._section.script)
        _see_tracebacks(facts, self.state.exceptions)
        if not (facts.entries or facts.user_files or facts.engines):
            return None
        ahead = self._peek_section(number, first=True)
        why = other_process(facts, ahead) if ahead is not None else None
        if why is not None and block is not None:
            # the later process ran the earlier script as its child (its CalledProcessError
            # names it): the child's traceback is the job's own, not another launch's
            if child_script(facts.entries, block[start : start + PEEK_CHARS]) is not None:
                return None
        return why

    def _peek_section(self, number: int, first: bool = False) -> SectionFacts | None:
        """What the lines from line ``number`` (1-based, the current line: a cut) show of the
        program that ran, read ahead in the current block (at most :data:`PEEK_CHARS`
        characters, up to the next torchrun start banner): the tracebacks' entry scripts, user
        files and engine packages (rootrank.runs.SectionFacts.see_traceback), read with a
        traceback reader per rank of their own, as the scan will read them. The scan decides at
        the cut whether a new job begins there (:meth:`_new_run` then drops all the earlier
        job showed, its launch facts and stacks too), and the later section's tracebacks come
        after it. ``None`` past :data:`MAX_PEEKS` cuts of one source (a log of thousands of
        relaunches reads each stretch once), or when the cut is not in a block's text.
        ``first``: only up to the first traceback's end (:meth:`_other_program`)."""
        text, start = self._block_text, self._line_start
        if text is None or self._peeks >= MAX_PEEKS:
            return None
        ahead = SectionFacts(start=number)
        self._peeks += 1
        window = text[start : start + PEEK_CHARS]
        first_end = window.find("\n")
        banner = window.find(_OMP_BANNER, first_end) if first_end != -1 else -1
        if banner != -1:
            window = window[: window.rfind("\n", 0, banner) + 1]
        tagger = RankTagger(path=self.state.sources[-1] if self.state.sources else "")
        readers: dict[int | None, TracebackReader] = {}
        for i, line in enumerate(window.split("\n")):
            tagged = tagger.tag(line, number + i)
            reader = readers.get(tagged.rank)
            if reader is None:
                reader = readers[tagged.rank] = TracebackReader()
            exc = reader.feed(tagged.text, number + i, line)
            if exc is not None:
                ahead.see_traceback(exc.type, exc.frames)
                if first:
                    return ahead
        for reader in readers.values():
            ahead.see_traceback("", reader.cut_frames())
        return ahead

    def _new_run(
        self, cut: _RunStart, earlier: SectionFacts, later: SectionFacts, why: str
    ) -> None:
        """Another job starts at line ``cut.number`` (1-based; :class:`_RunStart`, whose
        ``tagger`` and ``readers`` are cleared too; :func:`rootrank.runs.separate_run` says
        ``why``): everything the earlier job showed (``earlier``; ``later`` is the new
        section's) is dropped as if the scan began here (its findings, exceptions, summaries,
        attempts, progress and curves, launch facts, stacks, hosts and world size; its ranks
        leave the ranks seen at the source's end), and the job is named in
        :attr:`ScanState.other_runs`."""
        st = self.state
        number, tagger, readers = cut.number, cut.tagger, cut.readers
        st.other_runs.append(OtherRun(self._run_start, number - 1, earlier.launch, why))
        self._other_run_ranks |= earlier.ranks
        for held in self._held:
            self._other_run_ranks |= held.facts.ranks
        self._held.clear()
        self._summary_cuts.clear()
        self._launch_since.clear()
        self._run_start = number
        for items in (
            st.findings,
            st.exceptions,
            st.pending_pid,
            st.cut_traceback_ranks,
            st.cut_at_start,
            st.cut_tracebacks,
            st.earlier_findings,
            st.attempt_starts,
            st.node_sections,
            st.closing_signals,
            st.stacks,
            st.hosts,
            tagger.elastic,
            tagger.hosts,
            tagger.local_to_global,
            tagger.pid_rank,
            tagger.pid_local,
            readers,
        ):
            items.clear()
        st.world_size = tagger.world_size = None
        st.traceback_cut = False
        st.end_time = None
        st.progress = ProgressModel()
        st.metrics = MetricsReader()
        st.launch = LaunchFacts()
        self._section = later
        self._advance.new_section()
        self._agent_failed.clear()
        self._agent_restarts.clear()
        self._open_readers.clear()
        self._pending = None
        self._line_sigs.clear()
        self._failed = False
        self._ended = None
        self._rank_last.clear()
        self._summary_progress = None
        self._summary_ranks = None

    def _own_stacks(self, sections: list[SectionFacts]) -> None:
        """The source holds other jobs before the diagnosed run (it begins at line
        ``_run_start``): the stacks are the ones the run's own lines name (the gated lines of
        its ``sections``, and the words of the source's first block last named at or after
        the run's start), not the other jobs' (a vLLM job's ``vllm/worker`` frames before a
        torchrun job would pick vLLM's verification for it); its frames' are added after
        this. The first block's launcher paths are kept likewise."""
        st = self.state
        start = self._run_start
        st.stacks = {s for s, last in self._block_stacks.items() if last >= start}
        for facts in sections:
            if facts.start >= start:
                st.stacks |= facts.stacks
        st.launch.launchers.update(n for n, last in self._block_launchers.items() if last >= start)

    def _left_out(self, start: int, facts: SectionFacts, why: str) -> None:
        """The file's sections before line ``start`` (1-based) are another job than the one
        from it (found at the source's end: :meth:`_settle_sections`): they leave the
        attempts, and the job is named in :attr:`ScanState.other_runs`. (What the scan
        learnt of the job's progress is dropped with its ranks at the source's end.)"""
        st = self.state
        st.other_runs.append(OtherRun(self._run_start, start - 1, facts.launch, why))
        self._other_run_ranks |= facts.ranks
        self._run_start = start
        st.attempt_starts[:] = [a for a in st.attempt_starts if a > start]
        # the launch facts of the lines from ``start`` on, when they were kept (else the
        # earlier job's stay mixed in: a launcher, sizes or a command it printed)
        since = self._launch_since.get(start)
        if since is not None:
            st.launch = since

    def _settle_sections(self, tagger: RankTagger) -> None:
        """At the end of a source cut into sections by run starts (:meth:`_new_attempt`),
        decide for each cut whether the section after it was a relaunch (the held section
        stays dropped) or another node's output of the same run (rootrank.runs.another_node:
        the held section's findings, exceptions and torchelastic summaries are put back, the
        cut is no attempt, and :attr:`ScanState.node_sections` says why)."""
        st = self.state
        last = self._section
        for e in tagger.elastic:
            last.see(e.rank, e.local_rank, e.host, e.time)
        last.world = tagger.world_size
        held, self._held = self._held, []
        carried: _HeldSection | None = None  # earlier sections of the same run, merged
        relaunched: _HeldSection | None = None  # the section the last one relaunched
        relaunches: list[_HeldSection] = []  # the sections later ones relaunched
        for i, sec in enumerate(held):
            if carried is not None:
                sec = carried.before(sec)
            later = held[i + 1].facts if i + 1 < len(held) else last
            nxt = held[i + 1] if i + 1 < len(held) else None
            later_elastic = nxt.elastic if nxt else tagger.elastic
            later_excs = nxt.exceptions if nxt else st.exceptions
            cut_by_summary = held[i].start in self._summary_cuts
            other_entry = _other_entry(sec.facts.script, later_excs) if cut_by_summary else None
            if other_entry is not None:
                # torchrun's summary is its last output: a traceback after it from another
                # entry script (not a wrapper's report) is another job's, not this run's
                self._left_out(
                    held[i].start,
                    sec.facts,
                    f"it ran {sec.facts.script}, the next run {other_entry}",
                )
                carried = None
                continue
            if held[i].start in self._summary_cuts and not (
                later_elastic
                and any(not x.exc.type.endswith("ChildFailedError") for x in later_excs)
            ):
                # No worker failure and summary of its own: a launcher's report after the
                # summary (a wrapper's CalledProcessError, a second agent's own traceback),
                # not a relaunch: the same run, no node section. Unless what raised there is
                # neither (another program's error: a `vllm serve` start-up's last lines)
                other = _program_after_summary(sec.facts, later_excs, later.ranks)
                if other is None:
                    # the same script's name, or a cut traceback: another job still when its
                    # frames ran from another Python environment (rootrank.runs.other_env)
                    other = other_env(sec.facts, later)
                if other is not None:
                    self._left_out(held[i].start, sec.facts, other)
                    carried = None
                    continue
                why: str | None = ""
            else:
                other = different_program(sec.facts, later)
                if other is not None:  # another job (another script, launch, world size)
                    self._left_out(held[i].start, sec.facts, other)
                    carried = None
                    continue
                why = another_node(sec.facts, later)
                if why is None and cut_by_summary:
                    why = summary_nodes(
                        [(e.rank, e.local_rank) for e in sec.elastic],
                        [(e.rank, e.local_rank) for e in later_elastic],
                        sec.facts.ranks,
                    )
                if why is None:
                    other = separate_run(sec.facts, later)
                    if other is not None:  # another job (its world size differs), not a relaunch
                        self._left_out(held[i].start, sec.facts, other)
                    else:
                        relaunches.append(sec)
                        relaunched = sec if nxt is None else None
                    carried = None
                    continue
            later.merge(sec.facts)
            st.attempt_starts.remove(held[i].start)
            if why:
                st.node_sections.append((held[i].start, why))
            carried = sec
        if relaunched is not None and self._quiet_tail(relaunched, held[-1].start):
            # the last section shows no failure and no end: what failed is the one before
            start = held[-1].start
            st.quiet_tail = (start, max(relaunched.facts.start, self._run_start, 1))
            if start in st.attempt_starts:
                st.attempt_starts.remove(start)
            carried = relaunched
            relaunches.remove(relaunched)
        # the relaunched attempts' faults are set aside as a restart's are (_restarted): the
        # last attempt's failure may be the relaunch's own (rootrank.analysis.rules)
        st.earlier_findings.extend(
            f
            for sec in relaunches
            if sec.start > self._run_start
            for f in sec.findings.values()
            if f.severity == "error"
        )
        st.earlier_findings.sort(key=lambda f: f.order)
        # the world size each section printed (reset at each cut), for the run diagnosed
        worlds = [h.facts.world for h in held if h.facts.start >= self._run_start]
        tagger.world_size = max([w for w in (*worlds, tagger.world_size) if w], default=None)
        # a section that names no script or command (a relaunch cut short, a wrapper's report
        # after the summary) runs its run's: the latest its earlier sections named
        run = [h.facts for h in held if h.facts.start >= self._run_start]
        if st.launch.script is None:
            st.launch.script = next((f.script for f in reversed(run) if f.script), None)
        if st.launch.command is None:
            st.launch.command = next((f.command for f in reversed(run) if f.command), None)
        if carried is None:
            return
        # The last cut was another node's: put the run's earlier sections back.
        merged = carried.before(
            _HeldSection(
                start=0,
                facts=last,
                findings=st.findings,
                exceptions=st.exceptions,
                pending_pid=st.pending_pid,
                cut_traceback_ranks=st.cut_traceback_ranks,
                cut_at_start=st.cut_at_start,
                elastic=tagger.elastic,
            )
        )
        findings, cut = merged.findings, merged.cut_traceback_ranks
        st.findings.clear()
        st.findings.update(findings)
        st.exceptions.clear()
        st.exceptions.extend(merged.exceptions)
        st.pending_pid[:] = merged.pending_pid
        st.cut_traceback_ranks.clear()
        st.cut_traceback_ranks.update(cut)
        st.cut_at_start[:] = merged.cut_at_start
        tagger.elastic[:] = merged.elastic

    def _quiet_tail(self, earlier: _HeldSection, start: int) -> bool:
        """Whether the source's last section (from line ``start``, 1-based; the current
        findings) shows no failure of its own (no error-severity finding), no end (no
        end-of-run line: ``_ended``) and no training step (no rank's last progress line is
        in it), while ``earlier``, the section it relaunched, holds an error. A run ends in
        its own failure or end; a successful torchrun prints nothing at its end, so a last
        part that trained may have finished silently, but one that stopped before any step
        is the rest of a paste cut short (or lines printed after the failure), and the
        earlier failure is the job's."""
        if self._ended is not None:
            return False
        if any(p.line >= start for p in self.state.progress.last().values()):
            return False
        if any(f.severity == "error" for f in self.state.findings.values()):
            return False
        return any(f.severity == "error" for f in earlier.findings.values())

    def _restarted(self, path: str, start: int, agent: tuple[str, str]) -> None:
        """The torchrun agent ``agent`` (path, pid) logged a second failure: it had restarted
        its workers, and the attempt that just failed began at line ``start`` (1-based, the
        line after its previous failure) of ``path``. What ``path`` showed before ``start`` is
        set aside in :attr:`ScanState.earlier_findings` (a finding seen in both attempts is
        split in two); the earlier exceptions are dropped. A finding whose evidence no longer
        holds an earlier occurrence (beyond :data:`MAX_EVIDENCE`) stays with the last attempt.
        """
        st = self.state
        count = self._agent_restarts.get(agent, 0) + 1
        self._agent_restarts[agent] = count
        if count > max((n for a, n in self._agent_restarts.items() if a != agent), default=0):
            st.attempt_starts.append(start)  # one more attempt of the job, not one per node

        def earlier(e: Evidence) -> bool:
            return e.path == path and e.line < start

        for key, f in list(st.findings.items()):
            old = [e for e in f.evidence if earlier(e)]
            if not old:
                continue
            new = [e for e in f.evidence if not earlier(e)]
            if new:
                st.earlier_findings.append(replace(f, evidence=old, count=len(old)))
                f.evidence[:] = new
                f.count = max(1, f.count - len(old))
            else:
                st.earlier_findings.append(st.findings.pop(key))
        st.earlier_findings.sort(key=lambda f: f.order)
        kept = [x for x in st.exceptions if not (x.path == path and x.exc.log_line < start)]
        st.exceptions.clear()
        st.exceptions.extend(kept)

    def _ranks_at(self) -> tuple[tuple[int, int, str, str], ...]:
        """Each rank's last progress now, ``(rank, step, format, path)``, for an exception
        printed with no rank (:attr:`SeenException.ranks_at`)."""
        return tuple(
            (r, p.step, p.kind, p.path)
            for r, p in sorted(self.state.progress.last().items(), key=lambda x: x[0] or 0)
            if r is not None
        )

    def _light(self, number: int, line: str, path: str, tagger: RankTagger) -> None:
        """A line only the curve gate chose (1-based ``number``): rank tagging and the curves,
        no matching."""
        for raw in logical_lines(number, line):
            tagged = tagger.tag(raw.text, raw.number)
            if tagged.rank is None and tagged.local_rank is None and "\r" in raw.raw:
                tagged = self._frame_rank(raw, tagged, tagger)
            if tagged.rank is not None:
                self.state.ranks_seen.add(tagged.rank)
                self._section.see(tagged.rank, tagged.local_rank, tagged.host, tagged.time)
            rank = tagged.rank if tagged.rank is not None else tagged.local_rank
            local = None if tagged.rank is not None else tagged.local_rank
            self._curves(
                raw,
                tagged.text,
                rank,
                tagged.time,
                path,
                (path, tagged.host, tagged.rank, local),
                tagged.pid,
            )

    def _see_rank_line(
        self, rank: int | None, text: str, number: int, *, step: bool = False
    ) -> None:
        """Note line ``number`` (1-based) as ``rank``'s last line so far, with the end record
        it is (:data:`_RANK_END`) or ``None``; a line of no rank is not noted. Unless the line
        is a ``step`` (the progress model read it: its numbers are a series, never settings),
        its settings are read too (:meth:`_see_settings`); skipping the step lines keeps the
        settings off the per-line cost of a log that prints ``rank 3 step 12 loss ...``."""
        if not step:
            if "ank" in text and (m := _RANK_SELF.match(text)):
                self._see_settings(int(m["n"]), m["rest"], number)
            if rank is not None and ("{'" in text or '{"' in text):
                self._see_settings(rank, text, number, dict_form=True)
        if rank is None:
            return
        end = None
        if ("one" in text or "omplete" in text or "inish" in text) and (
            m := _RANK_END.search(text)
        ):
            end = text[m.start() :].strip()[:60]
        self._rank_last[rank] = (number, end)

    def _see_settings(self, rank: int, rest: str, number: int, *, dict_form: bool = False) -> None:
        """Note the numeric settings (:data:`_SETTING`, not :data:`_PER_RANK_NAME`) of a line
        ``rank`` printed of itself (``rest``: the words after its name), line ``number``;
        with ``dict_form``, the quoted keys of a config dict on a line of ``rank``
        (:data:`_DICT_SETTING`), whatever their names."""
        path = self.state.sources[-1] if self.state.sources else ""
        if dict_form:
            mine = self.state.rank_settings.setdefault(rank, {})
            note_settings(mine, rest, path, number, dict_form=True)
            return
        for who, part in glued_ranks(rank, rest):  # another rank's line glued to this one
            note_settings(self.state.rank_settings.setdefault(who, {}), part, path, number)

    def _ranks_ended(self, world: int | None) -> None:
        """Set the section's end (``_ended``, ``_ended_line``) when every rank the section
        showed (and every rank below its world size, when a line printed it) has an end record
        (:data:`_RANK_END`) as its last line: the latest of those lines. A rank with no line of
        its own, or whose last line is anything else (a traceback, a step), leaves it unset.
        ``world`` is the world size a line printed, if any."""
        last = self._rank_last
        if not last:
            return
        ranks = set(self._section.ranks) | set(last)
        if world is not None and 0 < world <= 4096:
            ranks |= set(range(world))
        if any(r not in last or last[r][1] is None for r in ranks):
            return
        line = max(n for n, _ in last.values())
        shown = ", ".join(f"rank {r}: '{last[r][1]}'" for r in sorted(last)[:4])
        more = f" and {len(last) - 4} more" if len(last) > 4 else ""
        self._ended = f"every rank's last line is its own end-of-run record ({shown}{more})"
        self._ended_line = line

    def _curves(
        self,
        raw: RawLine,
        text: str,
        rank: int | None,
        time: float | None,
        path: str,
        key: ProcessKey,
        pid: int | None = None,
    ) -> None:
        """Feed one line body (rank prefix removed) to the progress model and the metrics reader.
        ``pid`` is the worker prefix's pid (Ray's ``(Name pid=N)``), for ``ScanState.steps_of``.
        ``rank`` is the global rank, else the local one (``[defaultN]:`` of ``torchrun --tee``:
        the same on one node, the common case of a log that names no global rank).

        A physical line of tqdm redraws (``\\r`` frames, of which ingestion keeps the last) is
        read for its first bar frame too: tqdm redraws the bar right after a ``tqdm.write``, so
        that frame holds the step of the line before it (Hugging Face's metric dict)."""
        st = self.state
        if time is not None and (st.end_time is None or time > st.end_time):
            st.end_time = time
        if rank is None and "rank" in text:
            rank = body_rank(text)
        if "\r" in raw.raw and "%|" in raw.raw and self._frames_line != raw.number:
            self._frames_line = raw.number
            for frame in raw.raw.split("\r")[1:-1]:
                p = st.progress.observe(frame, rank=rank, time=time, path=path, line=raw.number)
                if p is not None:
                    self._advance.see(key, p)
                    st.metrics.observe(
                        "", rank=rank, time=time, path=path, line=raw.number, progress=p
                    )
                    break
        p = st.progress.observe(text, rank=rank, time=time, path=path, line=raw.number)
        self._see_rank_line(rank, text, raw.number, step=p is not None)
        if p is not None:
            self._advance.see(key, p)
            own = process_key(path, key[2], key[3], key[1], pid)
            if own in st.steps_of or len(st.steps_of) < MAX_PROCESS_KEYS:
                first = st.steps_of.get(own, (p, p))[0]
                st.steps_of[own] = (first, p)
            if p.total is not None and p.total > 1 and p.kind in _RUN_TOTAL_KINDS:
                # the run's own total (not a Lightning bar's per-epoch one)
                done = p.step >= p.total
                self._ended = f"its progress reached step {p.step} of {p.total}" if done else None
                self._ended_line = raw.number
        if "train_runtime" in text:
            self._ended = "the Trainer printed its end-of-run summary (train_runtime)"
            self._ended_line = raw.number
        st.metrics.observe(
            text, rank=rank, time=time, path=path, line=raw.number, progress=p, order=self._order
        )

    def _fault_stack(
        self,
        fault: tuple[int, list[Frame]],
        path: str,
        rank: int | None,
        host: str | None,
        time: float | None,
    ) -> None:
        """Keep faulthandler's stack of a crashing thread (``(header line, frames)`` from
        :meth:`TracebackReader.take_fault_stack`) beside the cut tracebacks: it shows where
        the process was in the user's code when a native crash or abort ended it (a CUDA
        kernel assertion, a segfault), which no exception line says."""
        line, frames = fault
        exc = PyException("", "", line, frames, header="faulthandler")
        local = self._fault_locals.get((path, line)) if rank is None else None
        self.state.cut_tracebacks.append(
            SeenException(exc, path, rank, host, time, "", 0, local_rank=local)
        )

    def _header_message(
        self,
        header: tuple[str, int, str, list[tuple[int, str]]],
        path: str,
        rank: int | None,
        host: str | None = None,
        time: float | None = None,
    ) -> None:
        """Match a debugger header's ``"Type: message"`` as the exception line it stands for
        (evidence on the header's line), also with the module a traceback would print for a
        bare PyTorch exception name."""
        exc_type, number, raw, lines = header
        if not lines:
            return
        first = RawLine(number, raw, raw)
        message = PendingMessage(
            exc_type,
            [f"{exc_type}:", *(t for _, t in lines)],
            [number, *(n for n, _ in lines)],
            first,
            path,
            rank,
            host,
            None,
            time,
            [],
            supersede=False,
        )
        for n in message.numbers:
            message.sigs |= self._line_sigs.get(n, set())
        message.first_sigs = message.sigs
        for name in qualified_names(exc_type):  # "Unsupported" is torch._dynamo.exc.Unsupported
            message.parts[0] = f"{name}:"
            self._match_joined(message)

    def _orphan_chain(self, path: str, rank: int, number: int) -> None:
        """A rank's chained-exception marker ("The above exception was the direct cause of
        the following exception:" / "During handling of the above exception, ...") with no
        exception of that rank before it in the log: Python prints the marker only after a
        complete exception of that process, so the rank raised an error the paste lost (a
        vLLM worker's ERROR block cut to its last lines). It counts as a traceback of that
        rank cut before its exception (:attr:`ScanState.cut_traceback_ranks`), a failure
        under way whose order against the root cause the log does not show."""
        st = self.state
        if rank in st.cut_traceback_ranks or any(e.rank == rank for e in st.exceptions):
            return
        st.cut_traceback_ranks.add(rank)
        if len(st.cut_traceback_starts) < MAX_EXCEPTIONS:
            st.cut_traceback_starts.append((path, rank, number))

    def _close_pending(self) -> None:
        """The pending exception message ended: match its joined lines once."""
        pending, self._pending = self._pending, None
        if pending is None or len(pending.parts) < 2:
            return
        if pending.complete_only:
            self._complete_wrapped(pending)
            return
        self._match_joined(pending)

    def _complete_wrapped(self, message: PendingMessage) -> None:
        """A log line a signature matched continued on the next lines (a terminal's
        fixed-width wrap, no prefix or timestamp of its own): the joined text, read by the
        same signatures only, fills the captures the first line could not hold. No new
        finding comes from the join (the line was no exception message)."""
        parts = message.parts
        spaced = " ".join([parts[0].rstrip(), *(p.strip() for p in parts[1:])])[:MAX_JOINED_CHARS]
        glued = "".join([parts[0].rstrip(" "), *(p.strip() for p in parts[1:])])[:MAX_JOINED_CHARS]
        best: Hit | None = None
        # an indented tail was wrapped at a word by a formatter (a hanging indent), a bare one
        # by a terminal's fixed width, possibly inside a word
        hanging = parts[1][:1].isspace()
        for joined in (spaced, glued) if hanging else (glued, spaced):
            for hit in self.matcher.match(joined):
                if hit.signature.id in message.first_sigs and (
                    best is None or len(hit.captures) > len(best.captures)
                ):
                    best = hit
        if best is not None:
            self._complete_captures(best, message)

    def _match_joined(self, message: PendingMessage) -> None:
        """Run the matcher on a message's lines joined with a space (a wrap at a word
        boundary) and with nothing (a terminal's fixed-width wrap inside a word); record the
        most specific signature unless one of the lines already showed it. Evidence points
        at the message's first line; its columns cover the part of the match on that line."""
        parts = message.parts
        spaced = " ".join([parts[0].rstrip(), *(p.strip() for p in parts[1:])])[:MAX_JOINED_CHARS]
        glued = "".join([parts[0].rstrip(" "), *(p.strip() for p in parts[1:])])[:MAX_JOINED_CHARS]
        best: tuple[Hit, str, int] | None = None
        for joined, first_len in (
            (spaced, len(parts[0].rstrip())),
            (glued, len(parts[0].rstrip(" "))),
        ):
            for hit in self.matcher.match(joined):
                # the most specific signature; between two matches of it, the one that read more
                if best is None or _weight(hit) > _weight(best[0]):
                    best = (hit, joined, first_len)
        if best is None:
            return
        hit, joined, first_len = best
        sid = hit.signature.id
        if sid in message.first_sigs:
            self._complete_captures(hit, message)
            return
        if sid in message.sigs and not message.supersede:
            return
        start, end = hit.span
        raw = message.first.raw
        columns: tuple[int, int] | None = None
        if start < first_len:
            head = joined[start : min(end, first_len)]
            col = raw.find(head) if head else -1
            if col >= 0:
                columns = (col, col + len(head))
        if columns is None:
            col = raw.find(message.exc_type.rsplit(".", 1)[-1])
            if col >= 0:
                columns = (col, len(raw.rstrip()))
        first = RawLine(message.first.number, raw, joined)
        if sid in message.sigs:
            if start < first_len:  # the match needs the first line: the wrap split it
                self._repoint(hit, message, first, columns)
            return
        finding = self._record(
            hit,
            first,
            message.rank,
            message.host,
            message.pid,
            message.time,
            message.path,
            joined,
            columns,
        )
        if not finding.frames and message.frames:
            finding.frames = [
                {"file": f.file, "line": f.line, "func": f.func, "user": f.user}
                for f in message.frames[-12:]
            ]
            call = collective_call(message.frames)
            if call:
                finding.captures.setdefault("collective", call)
        message.sigs.add(hit.signature.id)

    def _complete_captures(self, hit: Hit, message: PendingMessage) -> None:
        """The message's first line showed ``hit``'s signature, and the joined message reads
        more of it: a terminal's fixed-width wrap cut a field in two (``TensorShape`` then
        ``=[41, 256]`` on the next line). The joined match's captures fill those the first
        line's match could not read (the finding is found by the rank the match names, else
        the message's)."""
        rank = captured_rank(message.rank, hit.captures, message.first.text)
        key = (hit.signature.id, rank, message.path if rank is None else None)
        finding = self.state.findings.get(key)
        if finding is not None and finding.evidence[0].line <= message.first.number:
            # a capture a formatter's hanging indent cut short (an exception message whose
            # quoted path went to the next, indented line: "No such file or directory:" then
            # "         '.../x.npz'") is the joined one, which starts with it and reads on; a
            # bare tail may be another record's line, so it only fills what is missing
            hanging = all(p[:1].isspace() for p in message.parts[1:])
            for k, v in hit.captures.items():
                old = finding.captures.get(k)
                if old is None or (hanging and len(v) > len(old) and v.startswith(old.rstrip())):
                    finding.captures[k] = v

    def _repoint(
        self, hit: Hit, message: PendingMessage, first: RawLine, columns: tuple[int, int] | None
    ) -> None:
        """A signature matched a wrapped tail line on its own and the joined message too:
        its evidence from the tail lines becomes one line of evidence on the exception's
        first line (the count is unchanged), and the joined match's captures win."""
        sid = hit.signature.id
        key = (sid, message.rank, message.path if message.rank is None else None)
        finding = self.state.findings.get(key)
        if finding is None:
            return
        tail = set(message.numbers[1:])
        keep = [e for e in finding.evidence if not (e.path == message.path and e.line in tail)]
        if len(keep) == len(finding.evidence):
            return
        evidence = Evidence(
            path=message.path,
            line=first.number,
            text=first.text,
            rank=message.rank,
            column_start=columns[0] if columns else None,
            column_end=columns[1] if columns else None,
        )
        at = next(
            (i for i, e in enumerate(keep) if e.path == message.path and e.line > first.number),
            len(keep),
        )
        keep.insert(at, evidence)
        finding.evidence = keep[:MAX_EVIDENCE]
        finding.captures.update(hit.captures)
        if message.frames and not finding.frames:
            finding.frames = [
                {"file": f.file, "line": f.line, "func": f.func, "user": f.user}
                for f in message.frames[-12:]
            ]

    def _time_before(self, rank: int | None, tagger: RankTagger) -> float | None:
        """The latest timestamp of ``rank`` before the current line, looking back through
        the lines of the current block the gate skipped (``[rankN]:`` lines, or every line
        of a file whose path names the rank), then what the tagger saw on gated lines;
        raised to the latest timestamp of any line of the source seen before it
        (:meth:`RankTagger.last_time`): a lower bound (s) of when the line was printed.

        A walk stops where the previous walk for the same rank in the same block started,
        so a block is walked at most once per rank.
        """
        text = self._block_text
        found: float | None = None
        if text is not None and rank is not None:
            memo = self._walks.get(rank)
            floor = memo[1] if memo is not None and memo[0] is text else -1
            prefix = f"[rank{rank}]:"
            whole_file = (
                self._path_rank is not None
                and tagger.local_to_global.get((None, self._path_rank), self._path_rank) == rank
            )
            end = self._line_start - 1
            for _ in range(MAX_LOOKBACK_LINES):
                if end < 0:
                    break
                if end < floor:
                    found = memo[2] if memo is not None else None
                    break
                start = text.rfind("\n", 0, end) + 1
                line = text[start:end]
                body = (
                    line[len(prefix) :]
                    if line.startswith(prefix)
                    else (line if whole_file else None)
                )
                if body is not None and ":" in body:
                    t = parse_time(body)
                    if t is not None:
                        found = t
                        break
                end = start - 1
            self._walks[rank] = (text, self._line_start, found)
        if found is None:
            return tagger.last_time(rank)
        bound = tagger.latest_time()
        if bound is None:
            return found
        # the rank's own stamp is a lower bound; a later stamp printed on any line of the
        # source before this one (the tagger's bound) is a tighter one
        return max(found, bound)

    def _record(
        self,
        hit: Hit,
        raw: RawLine,
        rank: int | None,
        host: str | None,
        pid: int | None,
        time: float | None,
        path: str,
        text: str,
        columns: tuple[int, int] | None = None,
    ) -> Finding:
        """Count ``hit`` into its finding (one per signature, rank and, with no rank, source).
        ``columns`` (0-based [start, end) in ``raw.raw``) overrides where the matched text is
        found on the line (a match over joined lines)."""
        st = self.state
        sig = hit.signature
        if "rank" in hit.captures:
            rank = captured_rank(rank, hit.captures, text)
            if rank is not None and hit.captures["rank"] != str(rank):
                # the capture was the subgroup's rank (captured_rank): the finding's text
                # quotes the process's global rank, and keeps the group's as group_rank
                hit = Hit(
                    hit.signature,
                    hit.span,
                    {**hit.captures, "rank": str(rank), "group_rank": hit.captures["rank"]},
                    hit.matched,
                )
        elif hit.captures.get("absent_rank", "").isdigit():
            # the message names the rank the others waited for and that never came (gloo's
            # connect waiting for its address key): the printing rank is only a witness
            rank = int(hit.captures["absent_rank"])
        elif "ready" in hit.captures:
            rank = None  # the ranks that did submit: the line's own rank only reported them
        elif "ranks" in hit.captures:
            # The message names the faulty ranks; the line's own rank only reported them.
            named = regex_code.findall(r"\d+", hit.captures["ranks"])
            rank = int(named[0]) if len(set(named)) == 1 else None
        if "host" in hit.captures and host is None:
            host = hit.captures["host"]
        key = (sig.id, rank, path if rank is None else None)
        self._order += 1
        if sig.severity == "error":
            self._failed = True
            if raw.number > st.last_error_line.get(path, 0):
                st.last_error_line[path] = raw.number
        if columns is not None:
            col_start: int | None = columns[0]
            col_end: int | None = columns[1]
        else:
            col = raw.raw.find(hit.matched) if hit.matched else -1
            col_start = col if col >= 0 else None
            col_end = col + len(hit.matched) if col >= 0 else None
        if raw.offset and col_start is not None and col_end is not None:
            col_start, col_end = col_start + raw.offset, col_end + raw.offset  # a long line's piece
        evidence = Evidence(
            path=path,
            line=raw.number,
            text=raw.text if raw.text == text else text,
            rank=rank,
            column_start=col_start,
            column_end=col_end,
        )
        finding = st.findings.get(key)
        if finding is None:
            finding = Finding.of(
                sig,
                rank=rank,
                host=host,
                time=time,
                order=self._order,
                evidence=[evidence],
                captures=dict(hit.captures),
            )
            st.findings[key] = finding
            if rank is None and pid is not None:
                st.pending_pid.append((finding, host, pid))
            return finding
        else:
            finding.count += 1
            if len(finding.evidence) < MAX_EVIDENCE:
                finding.evidence.append(evidence)
            if finding.time is None and time is not None:
                finding.time = time
            if finding.host is None and host is not None:
                finding.host = host
            for k, v in hit.captures.items():
                finding.captures.setdefault(k, v)
        return finding
