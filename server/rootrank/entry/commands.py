"""Commands that fit the job: the entries' launch commands rewritten with what the log tells.

Entries write their commands for a torchrun job (``torchrun --nproc-per-node=<gpus>
train.py``). :func:`fit` turns that into the command the user ran: the entry script the
log names, the launcher the log shows (``deepspeed``, ``accelerate launch``, ``mpirun``,
``horovodrun``, ``srun``, or plain ``python`` for a script that calls ``mp.spawn`` itself
or runs one process), the processes per node from ``--nproc-per-node`` (or the world size
when the log shows one node), and the whole printed command line when the log has one.
What the log does not tell stays a visible ``<blank>`` (``report.unfilled_placeholders``
flags it as not ready to run). A verification's script blank (``<train.py>``) and elided
launch (``torchrun ...``) are filled the same way; a network check an entry writes as an
nccl-tests run is the job's own launch with ``NCCL_DEBUG=INFO`` unless the log shows
nccl-tests (:func:`job_network_check`): a tool the user may not have, on hosts the log names
no way to fill, is not the check this user can run.

Facts come from :class:`rootrank.scan.LaunchFacts` (``launchers``, ``command``,
``nproc_per_node``, ``script``) and :class:`rootrank.scan.ScanState` (``world_size``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rootrank import launchers, lazy_regex, regex_code
from rootrank.frameworks import framework_entry
from rootrank.mask import pseudonyms_in
from rootrank.ranks import logdir_processes, node_count
from rootrank.scan import ENV_HEAD, NCCL_TESTS_BIN, ScanState
from rootrank.taxonomy import process_group_classes

if TYPE_CHECKING:  # the type only: rootrank.regex_code builds patterns without the package
    import regex

    from rootrank.tracebacks import Frame

#: Entries write the user's entry script as ``train.py`` (verify commands, fix code).
TRAIN_PY = lazy_regex.compile(r"(?<![\w./-])train\.py\b")
#: The entries' launch command: ``torchrun --nproc-per-node=N`` (``N`` may be a blank, or a
#: shell substitution ``$(nvidia-smi -L | wc -l)`` taken whole: nothing is written inside it).
#: The first host of a Slurm job's allocation, as a job script computes it: the rendezvous
#: host of torchrun agents that srun starts (Slurm's ``scontrol show hostnames``).
SLURM_HEAD = '$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'
TORCHRUN = lazy_regex.compile(r"\btorchrun --nproc-per-node=(?P<n>\$\([^()]*\)|\S+)")
#: ``torchrun [--nproc-per-node=N] train.py``: the part a printed command replaces whole.
TORCHRUN_SCRIPT = lazy_regex.compile(
    r"\btorchrun(?: --nproc-per-node=\S+)? (?:\.\.\. )?train\.py\b"
)
#: How the other launchers spell the processes per node (their CLIs' own flags).
LAUNCH_AS = {
    "deepspeed": "deepspeed --num_gpus {n}",
    "accelerate": "accelerate launch --num_processes {n}",
    # MosaicML composer's launcher: ``composer -n N train.py ARGS`` (composer/cli/launcher.py)
    "composer": "composer -n {n}",
    "mpirun": "mpirun -np {world} python",
    # HPE Cray PALS mpiexec under PBS (Polaris, Aurora): ranks in all, ranks per node
    # (https://docs.alcf.anl.gov/polaris/running-jobs/: ``mpiexec -n N --ppn M``)
    "pals": "mpiexec -n {world} --ppn {n} python",
    "horovodrun": "horovodrun -np {world} python",
    "srun": "srun --ntasks={world} python",
    "mp.spawn": "python",
    # Lightning's Trainer(devices=N) starts the other processes itself from ``python script.py``
    "lightning": "python",
    # Ray Train: the driver script (python) starts the workers as Ray actors
    "ray": "python",
    "python": "python",
}
#: A stack whose jobs always run several processes (a process group, sharded state): a log
#: that shows it is never read as a one-process ``python`` run.
DISTRIBUTED_STACKS = frozenset({"deepspeed", "megatron", "fsdp"})
#: The launcher a stack documents, for a log that shows the stack but no launcher: DeepSpeed's
#: own ``deepspeed`` CLI (deepspeed/launcher/runner.py) starts its scripts' processes;
#: Lightning's Trainer starts the other processes itself from ``python script.py``
#: (lightning/fabric/strategies/launchers/subprocess_script.py: its documented launch).
STACK_LAUNCHER = {"deepspeed": "deepspeed", "ray-train": "ray", "lightning": "lightning"}
#: Launchers that run the user's script with ``python`` and start the other processes from
#: inside it (``mp.spawn``, Lightning's Trainer): a verification runs the script the same way.
SELF_LAUNCHED = ("mp.spawn", "lightning", "ray", "python")
#: An entry's ``accelerate launch [flags] script.py`` (a signature written for accelerate):
#: for a job another launcher ran, the flags go and the launcher the log shows takes its place.
_ACCELERATE_LAUNCH = lazy_regex.compile(
    r"\baccelerate launch(?: --[\w-]+(?:[= ](?!-)(?:<[^<>]*>|[^\s<>]+))?)*(?= \S+\.py\b)"
)
#: The launcher that started the workers when the log shows several (mpirun under srun...):
#: the innermost first.
PRECEDENCE = (
    "nccl-tests",
    "vllm",
    # Determined's harness runs torchrun (or deepspeed) inside the trial: the experiment is
    # what the user submits
    "determined",
    "deepspeed",
    "accelerate",
    "composer",
    "horovodrun",
    "pals",
    "mpirun",
    "torchrun",
    "mp.spawn",
    "srun",
    "lightning",
    "ray",
    "python",
)
#: How a Determined experiment is run again (the det CLI: ``det experiment create CONFIG
#: MODEL_DEF``, the model definition directory holding the entrypoint's script).
DETERMINED_RUN = "det experiment create <experiment config.yaml> <model definition dir>"
#: vLLM starts its workers itself: the check that its tensor-parallel group comes up is
#: the engine starting and answering one prompt (exit 0), not a torchrun of a script.
VLLM_SMOKE = (
    "python -c \"from vllm import LLM; LLM('<model>', tensor_parallel_size={tp})"
    ".generate('hello')\""
)
#: The other serving / RL engines' check, as :data:`VLLM_SMOKE` (their own Python APIs:
#: lmdeploy.pipeline, sglang.Engine; verl's PPO entry point with the user's overrides).
ENGINE_SMOKE = {
    "vllm": VLLM_SMOKE,
    "lmdeploy": (
        'python -c "from lmdeploy import pipeline, TurbomindEngineConfig; '
        "print(pipeline('<model>', backend_config=TurbomindEngineConfig(tp={tp}))('hello'))\""
    ),
    "sglang": (
        'python -c "import sglang as sgl; '
        "print(sgl.Engine(model_path='<model>', tp_size={tp}).generate('hello'))\""
    ),
    "verl": "python3 -m verl.trainer.main_ppo <your config overrides>",
    # OpenRLHF's Ray PPO trainer is started as its module, by the Ray job it is submitted as
    # (openrlhf/cli/train_ppo_ray.py; its README: ``ray job submit ... -- python3 -m
    # openrlhf.cli.train_ppo_ray ...``): the rerun is that module with the run's arguments
    "openrlhf": "python3 -m openrlhf.cli.train_ppo_ray <your arguments>",
}
#: Which engine's check a job gets when the log shows several (verl and OpenRLHF drive vLLM
#: or SGLang).
ENGINE_ORDER = ("verl", "openrlhf", "lmdeploy", "sglang", "vllm")
#: SGLang deployed as its server, the way its users start it (``python -m
#: sglang.launch_server``; a tensor-parallel group over several nodes adds ``--nnodes``,
#: ``--node-rank`` and ``--dist-init-addr``: SGLang's docs, "Multi-Node Deployment"). Its
#: check for a job whose log shows no script calling the offline ``sgl.Engine`` API
#: (:data:`_SGLANG_API`): the server starting on every node, as the job ran.
SGLANG_SERVER = "python -m sglang.launch_server --model-path <model> --tp {tp}"
SGLANG_NODES = " --nnodes {nodes} --node-rank <node rank> --dist-init-addr {endpoint}"
#: What the server prints once every rank loaded and it serves (sglang/srt/entrypoints/
#: http_server.py): a server runs on, so its check reads this line, not an exit status.
SGLANG_READY = "the server prints 'The server is fired up and ready to roll!'"
#: A script calling SGLang's offline engine (``sgl.Engine(...)``, ``sglang.Engine(...)``).
_SGLANG_API = lazy_regex.compile(r"\b(?:sgl|sglang)\.Engine\(")
#: The offline engine's constructor, as a traceback frame names it (``Engine.__init__`` in
#: sglang/srt/entrypoints/engine.py; the server starts its processes from the same file
#: through ``_launch_subprocesses``, not through the constructor).
_SGLANG_ENGINE_FILE = "sglang/srt/entrypoints/engine.py"


def _engine_constructed(state: ScanState) -> bool:
    """Whether a traceback of the log runs through SGLang's offline ``Engine`` constructor
    (:data:`_SGLANG_ENGINE_FILE`, function ``__init__``): a script built the engine itself."""
    return any(
        f.func == "__init__" and f.file.replace("\\", "/").endswith(_SGLANG_ENGINE_FILE)
        for seen in (*state.exceptions, *state.cut_tracebacks)
        for f in seen.exc.frames
    )


#: An entry's script written as a blank, ``<train.py>`` (not inside a longer blank).
_SCRIPT_BLANK = lazy_regex.compile(r"(?<![\w./<-])<train\.py>(?![\w>])")
#: An entry's one-process run of the script (``python train.py --max-steps 5``), whole.
#: An entry's ``python train.py`` (without its arguments), and a command that runs a script
#: with Python itself (not ``python -m torch.distributed.run``).
_PYTHON_TRAIN = lazy_regex.compile(r"\bpython[\d.]* train\.py\b")
_PYTHON_COMMAND = lazy_regex.compile(r"(?:\S*/)?python[\d.]*\s+(?!-m\s+torch\.distributed)")
_PYTHON_CODE = lazy_regex.compile(launchers.PYTHON_CODE)
_PYTHON_SCRIPT = lazy_regex.compile(r"\bpython[\d.]* train\.py\b(?: (?:<[^<>]*>|[^\s#<>]+))*")
#: The nccl-tests check when the log names no nccl-tests command of its own.
NCCL_TESTS = "all_reduce_perf -b 8 -e 128M -f 2 -g <gpus per process>"
#: An entry's torchrun command, whole: with its script (and arguments), or ``--nnodes=N ...``.
#: (any ``--flag[=value]`` may come before the script: the NCCL entries write
#: ``torchrun --nnodes=<n> --nproc-per-node=<gpus> train.py``)
_TORCHRUN_WHOLE = lazy_regex.compile(
    r"\btorchrun(?: --[\w-]+(?:=\S+| (?![-<])(?!\S*\.py\b)\S+)?)* (?:\.\.\. )?train\.py\b(?: (?:<[^<>]*>|[^\s#<>]+))*"
    r"|\btorchrun --nnodes=\S+ \.\.\."
)
#: An entry's ``torchrun [--flag[=value]]... `` before its script (``train.py``, ``<train.py>``);
#: a flag may take its value after a space (``--log-dir logs``).
_TORCHRUN_FLAGS = lazy_regex.compile(
    r"\btorchrun(?: --[\w-]+(?:=\S+| (?![-<])(?!\S*\.py\b)\S+)?)* (?:\.\.\. )?(?=<?train\.py\b)"
)
#: An entry's nccl-tests invocation (``mpirun -np <n> ... all_reduce_perf -b 8 -e 128M``).
_NCCL_TESTS_RUN = lazy_regex.compile(
    r"(?:\bmpirun\b[^#]*?)?(?:\S*/)?\b" + NCCL_TESTS_BIN + r"\b(?: -\w+ (?:<[^<>]*>|[^\s#<>]+))*"
)
#: Launchers that start several worker processes (``mp.spawn`` runs inside one ``python``).
MULTI_PROCESS = frozenset(
    {"torchrun", "deepspeed", "accelerate", "composer", "mpirun", "pals", "horovodrun", "srun"}
)
#: A line that only a distributed job prints: NCCL/gloo/c10d messages, torch.distributed or a
#: distributed framework in a path, a process group, a rank prefix, the launchers' variables.
DISTRIBUTED_TEXT = lazy_regex.compile(
    r"NCCL|\bgloo\b|\bc10d\b|torch[/.]distributed|ProcessGroup|DistributedDataParallel"
    r"|deepspeed|horovod|megatron|\[rank\d|\bworld_size\b|\bLOCAL_RANK\b|\bMASTER_ADDR\b"
    # c10d's TCPStore (torch/csrc/distributed/c10d/socket.cpp: "The server socket has failed to
    # listen on any local network address"): only a process group's rendezvous binds it
    r"|TCPStore|server socket has failed to listen",
    regex_code.IGNORECASE,
)
#: A world size above this is not taken for one node's process count (8 GPUs per node).
MAX_PER_NODE = 8
_BLANK = lazy_regex.compile(r"^<[^<>]+>$")
#: ``from train import loader`` in a ``python -c`` command: a user module must be one the log
#: shows (its ``.py`` file); libraries are always there.
_IMPORT = lazy_regex.compile(
    r"(?P<kw>\bfrom |(?<!\bfrom \S+ )\bimport )(?P<mod>[A-Za-z_]\w*)(?=[\s.;,\"'])"
)
#: Modules every Python has (the standard library: ``importlib``, ``inspect``) and the two a
#: PyTorch job always has.
LIBRARIES = frozenset({"torch", "numpy"}) | frozenset(sys.stdlib_module_names)
#: Libraries a command may import only when the log mentions them (a frame, a path, a line):
#: ``import flash_attn`` for a job that never loaded it proves nothing.
OPTIONAL_LIBRARIES = frozenset(
    "transformers accelerate deepspeed vllm triton xformers flash_attn peft trl datasets megatron "
    "apex bitsandbytes safetensors tokenizers lmdeploy sglang huggingface_hub".split()
)
#: What an optional library loads with it: a log that shows the left one has the right ones.
LOADS_WITH = {
    "hf": ("transformers",),
    "transformers": ("tokenizers", "safetensors", "huggingface_hub"),
    "datasets": ("huggingface_hub",),
    "peft": ("transformers", "accelerate", "safetensors"),
    "trl": ("transformers", "accelerate", "datasets"),
}
#: A file a command names (script, config, checkpoint): it must be one the log shows.
_FILE = lazy_regex.compile(
    r"(?<![\w./<-])(?:[\w.-]+/)*[\w-]+\.(?:py|ya?ml|json|sh|toml|cfg|ini|pt|pth|ckpt|bin|safetensors)\b(?![>/])"
)


@dataclass(frozen=True, slots=True)
class Launch:
    """What the log says about how the job was started (any field ``None`` when not told):
    ``launcher`` one of :data:`PRECEDENCE`; ``command`` the printed launch command;
    ``script`` the entry script; ``per_node`` processes per node; ``world`` the world size."""

    launcher: str | None
    command: str | None
    script: str | None
    per_node: int | None
    world: int | None
    #: File names (base names) the log shows: a command may name only these.
    known: frozenset[str] = frozenset()
    #: The job ran on several nodes (launcher flags, several hosts, or more ranks than one
    #: node holds); ``nodes`` how many, when the log's hosts tell.
    multi_node: bool = False
    nodes: int | None = None
    #: A printed nccl-tests command, when the log shows one.
    tool_command: str | None = None
    #: The serving / RL engine the job ran (``vllm``, ``lmdeploy``, ``sglang``, ``verl``) when
    #: it was not launched as a training job (:data:`ENGINE_ORDER`), else ``None``.
    engine: str | None = None
    #: Optional libraries (:data:`OPTIONAL_LIBRARIES`) the log mentions.
    libraries: frozenset[str] = frozenset()
    #: How many processes the job ran, as far as the log tells (:func:`processes_of`):
    #: ``"one"`` (no launcher, rank, world size or distributed line: one ``python`` process),
    #: ``"several"`` (a multi-process launcher, two ranks, a world size above 1...), or
    #: ``None`` when the log does not tell.
    processes: str | None = None
    #: ``launcher`` is not shown by the log but the one its stack documents
    #: (:data:`STACK_LAUNCHER`): it fills a torchrun command, never replaces another
    #: launcher an entry wrote.
    launcher_assumed: bool = False
    #: The command the job's framework starts runs with (:func:`framework_entry`), when the
    #: log shows that framework's code and no launch command of its own.
    entry: str | None = None
    #: srun started torchrun's agents, one task per node (``srun ... torchrun ...``: srun's
    #: ``--label`` task id on the agents' own lines, :attr:`rootrank.scan.LaunchFacts.srun_agent_tasks`):
    #: a rerun goes through srun the same way, from the job's allocation.
    under_srun: bool = False
    #: A Hydra app's command-line overrides, as its failure report lists them
    #: (:attr:`rootrank.scan.LaunchFacts.hydra_overrides`); ``None`` when not shown.
    overrides: tuple[str, ...] | None = None
    #: The log printed two different node counts (``nodes`` is the largest): no count to
    #: rerun with (:attr:`rootrank.scan.LaunchFacts.nnodes_differ`).
    nodes_differ: bool = False
    #: The log shows a script calling the engine's offline Python API (``sgl.Engine(...)``:
    #: :data:`_SGLANG_API`, or a frame of its constructor: :func:`_engine_constructed`); an
    #: SGLang job without it ran as the server (:data:`SGLANG_SERVER`).
    engine_api: bool = False
    #: The rendezvous host and port the log prints (``--rdzv-endpoint=node01:29500``,
    #: ``MASTER_ADDR``/``MASTER_PORT``, ``init_method="tcp://..."``:
    #: :meth:`rootrank.scan.LaunchFacts.rendezvous`), each ``None`` when not printed.
    rdzv_host: str | None = None
    rdzv_port: str | None = None
    #: The model and tensor-parallel size the engine's own start-up line printed
    #: (:attr:`rootrank.scan.LaunchFacts.server_model`, ``server_tp``), else ``None``.
    model: str | None = None
    tp: int | None = None
    #: Names the log shows in the user's code (identifiers of its traceback frames' source
    #: lines and function names): a check may import only these from the user's script.
    names: frozenset[str] = frozenset()
    #: Whether the log shows FSDP (``"fsdp"`` among the stacks the scan read): an
    #: ``accelerate`` job then ran its FSDP plugin, not DeepSpeed's.
    fsdp: bool = False


def node_offsets(state: ScanState) -> set[int]:
    """The first global ranks of nodes after the first that torchelastic's failure tables
    show: an entry whose rank exceeds its local rank (``rank : 3 (local_rank: 1)``) ran on a
    node whose workers start at rank - local rank (torchrun numbers a node's workers
    ``node rank x nproc-per-node + local rank``). A non-empty set proves several nodes; its
    smallest member is a node's worker count when every other is a multiple of it (else the
    set is empty: the table does not give one count)."""
    found = {
        e.rank - e.local_rank
        for e in state.elastic
        if e.rank is not None and e.local_rank is not None and e.rank > e.local_rank >= 0
    }
    if not found:
        return set()
    step = min(found)
    if any(o % step for o in found) or any(
        e.local_rank is not None and e.local_rank >= step for e in state.elastic
    ):
        return set()
    return found


def launch_of(
    state: ScanState,
    script: str | None,
    seen_text: Iterable[str] = (),
    named_ranks: Iterable[int] = (),
) -> Launch:
    """The :class:`Launch` of the log scanned into ``state`` (``script`` as
    :func:`rootrank.entry.entry_script` found it; ``seen_text``: lines and paths of the log
    the entry may quote, whose file names a command may name; ``named_ranks``: global ranks
    the root cause's lines name, "from rank 13", which the job therefore had)."""
    seen_text = list(seen_text)
    facts = state.launch
    shown = set(facts.launchers)
    if facts.launcher:
        shown.add(facts.launcher)
    launcher = next((name for name in PRECEDENCE if name in shown), None)
    assumed = False
    if launcher is None:  # no launcher shown: the one the stack documents, if it has one
        launcher = next(
            (STACK_LAUNCHER[s] for s in sorted(state.stacks) if s in STACK_LAUNCHER), None
        )
        assumed = launcher is not None
        if launcher == "deepspeed" and "accelerate" in facts.drivers:
            # accelerate's Accelerator built the DeepSpeed engine (its frames:
            # accelerate/accelerator.py, _prepare_deepspeed): the job reads its DeepSpeed
            # settings from accelerate's config, which ``accelerate launch`` passes (the
            # deepspeed CLI does not); https://huggingface.co/docs/accelerate/usage_guides/deepspeed
            launcher = "accelerate"
    command = facts.command
    if command is None and launcher == "deepspeed" and not assumed:
        # no command printed, but DeepSpeed's launcher printed its workers' argv: the
        # ``deepspeed`` command that gives the script the same arguments
        command = facts.worker_command or facts.runner_command
        if facts.worker_command and facts.runner_line:
            # the workers' argv has the script's arguments; the runner's own line has the
            # nodes and the rendezvous port the job ran with: the rerun keeps them
            command = with_runner_options(facts.worker_command, facts.runner_line)
    if (
        command is None
        and facts.hydra_overrides is not None
        and launcher in (None, "python")
        and script
        and script.endswith(".py")
    ):
        # a Hydra app run as ``python script.py key=value ...``: its failure report lists the
        # overrides the run had, and the run again needs them
        command = " ".join(["python", script, *(shlex.quote(o) for o in facts.hydra_overrides)])
    per_node = facts.nproc_per_node
    world = state.world_size
    seen = sorted(state.ranks_seen)
    named = [r for r in named_ranks if r is not None and r >= 0]
    ranks_known = sorted(set(seen) | set(named))
    if (
        world is None
        and state.elastic
        and len(ranks_known) >= 2
        and ranks_known == list(range(len(ranks_known)))
    ):
        # torchrun's own terminal output (its failure summary is there): the ranks it ran,
        # with a rank the diagnosis names that printed no rank of its own (it left before
        # init_process_group and exited 0, so the summary does not list it)
        world = len(ranks_known)
    hosts = set(state.hosts.values()) | facts.hosts
    offsets = node_offsets(state)
    # torchelastic's failure summary names every failed rank's host: all of them on one host,
    # with local rank == rank, is one node however many ranks it ran (a 10-GPU machine)
    summary_hosts = {e.host for e in state.elastic if e.host}
    one_node_summary = (
        len(summary_hosts) == 1
        and len(state.elastic) >= 2
        and all(e.rank is not None and e.rank == e.local_rank for e in state.elastic)
    )
    hosts |= summary_hosts
    host_nodes = node_count(hosts, state.label_hosts)
    if per_node is None and offsets:
        per_node = min(offsets)  # rank = node rank x per node + local rank (torchrun)
    if per_node is None:
        per_node = logdir_processes(state.sources)  # one folder per worker it started
    if (
        per_node is None
        and world
        and (world <= MAX_PER_NODE or one_node_summary)
        and not facts.multi_node
        and host_nodes <= 1
        # (PALS prints one node's ranks in a node's part of the output: no node count)
        and launcher != "pals"
    ):
        per_node = world  # no sign of a second node: every rank ran on this one
    ranks_total = max(world or 0, (max(seen) + 1) if seen else 0, (max(named) + 1) if named else 0)
    multi = (
        bool(facts.multi_node)
        or host_nodes > 1
        or (ranks_total > MAX_PER_NODE and not one_node_summary)
        or bool(offsets)
    )
    # the node count the launcher printed (--nnodes=2), else the distinct hosts the lines name
    # (a wrapper's labels and host names counted apart: rootrank.ranks.node_count)
    nodes = facts.nnodes or (host_nodes if host_nodes > 1 else None)
    # torchrun's agents as srun tasks, one per node (srun --label's task ids 0..N-1): at least
    # as many nodes as the highest agent task id + 1
    under_srun = launcher == "torchrun" and bool(facts.srun_agent_tasks)
    if under_srun and nodes is None and max(facts.srun_agent_tasks) >= 1:
        nodes = max(facts.srun_agent_tasks) + 1
        multi = True
    if nodes is None and offsets and per_node and ranks_total % per_node == 0:
        nodes = ranks_total // per_node
    # the framework's own entry (its run script ships with it), when no command is printed and
    # the entry script the log names (if any) is the framework's own file, not a user's script
    # that imports the framework as a library
    own_file = script is None or any(_base(p) == _base(script) for p in facts.entry_paths)
    entry = (
        framework_entry([*facts.entry_paths, *seen_text], per_node)
        if command is None and own_file
        else None
    )
    known = {
        _base(m.group(0))
        for text in [*seen_text, command or "", script or "", entry or ""]
        for m in _FILE.finditer(text)
    }
    engine = None
    if launcher in (None, "python", "vllm", "ray"):  # not a training launcher: the engine ran it
        engine = next((e for e in ENGINE_ORDER if e in state.stacks), None)
        if launcher == "vllm" and engine is None:
            engine = "vllm"
    words = " ".join([*seen_text, command or ""])
    shown_libs = {
        lib
        for lib in OPTIONAL_LIBRARIES
        if lib in words or lib in state.stacks or lib.replace("_", "-") in words
    } | ({"hf"} & state.stacks)
    for lib in ("hf", "trl", "peft", "transformers"):  # dependants first
        if lib in shown_libs:
            shown_libs.update(LOADS_WITH[lib])
    libraries = frozenset(shown_libs & OPTIONAL_LIBRARIES)
    rdzv_host, rdzv_port = facts.rendezvous()
    processes = processes_of(
        state, launcher, seen_text, ranks_total=ranks_total, multi_node=multi, engine=engine
    )
    return Launch(
        launcher,
        command,
        script,
        per_node,
        world,
        frozenset(known),
        multi,
        nodes,
        facts.tool_command,
        engine,
        libraries,
        processes,
        assumed,
        entry,
        under_srun,
        facts.hydra_overrides,
        nodes_differ=facts.nnodes_differ,
        engine_api=bool(_SGLANG_API.search(words)) or _engine_constructed(state),
        rdzv_host=rdzv_host,
        rdzv_port=rdzv_port,
        model=facts.server_model,
        tp=facts.server_tp,
        names=module_names(
            f for seen in (*state.exceptions, *state.cut_tracebacks) for f in seen.exc.frames
        ),
        fsdp="fsdp" in state.stacks,
    )


def module_names(frames: Iterable[Frame]) -> frozenset[str]:
    """The names the log shows at module level of the user's code (:attr:`Launch.names`): the
    functions its traceback frames run in (a ``def`` is importable by its name) and the
    identifiers of the lines a frame quotes at module level (``<module>``: ``loader =
    build_loader()``, ``main()``). A name a line inside a function uses (``for x in loader:``
    in ``main``) is that function's local as far as the log shows: ``from train import loader``
    would fail with ImportError when ``loader`` is built inside ``main()``. Only the user's own
    frames (``Frame.user``) count."""
    names: set[str] = set()
    for f in frames:
        if not f.user:
            continue
        if f.func == "<module>":
            names.update(_IDENTIFIER.findall(f.code or ""))
        elif f.func and _IDENTIFIER.fullmatch(f.func):
            names.add(f.func)
    return frozenset(names)


def processes_of(
    state: ScanState,
    launcher: str | None,
    seen_text: list[str],
    *,
    ranks_total: int,
    multi_node: bool,
    engine: str | None,
) -> str | None:
    """``"several"`` when the log shows a job of several processes (a launcher of
    :data:`MULTI_PROCESS`, two ranks or a rank above 0, a world size above 1, several nodes,
    torchrun's worker pids, or with no launcher shown a rank's own Python traceback), ``"one"`` when it shows none of that, no launcher at all and no
    line a distributed job prints (:data:`DISTRIBUTED_TEXT` in ``seen_text``, the findings'
    lines or the exceptions' frames and messages) and no stack of :data:`DISTRIBUTED_STACKS`
    (DeepSpeed, Megatron, FSDP: a process group by design), or the only launcher is the
    ``python script.py`` that ``rootrank run`` started itself (:attr:`LaunchFacts.launched_here`)
    and its output shows none of that either: the user ran ``python script.py``, and a
    verification must too (``torchrun`` would start a process group the script never asked
    for, on one GPU it would pass for another reason). ``None`` otherwise (``mp.spawn``, an
    engine, a printed ``python`` command: the launcher decides)."""
    if (
        launcher in MULTI_PROCESS
        or ranks_total > 1
        or multi_node
        or state.launch.worker_pids()
        or state.launch.nproc_per_node
    ):
        return "several"
    if launcher is None and (
        any(s.rank is not None and s.exc.frames for s in state.exceptions)
        or any(r is not None for r in state.cut_traceback_ranks)
    ):
        # a rank's own Python traceback, whole or cut (``[rank0]: Traceback ...``: the excepthook
        # init_process_group installs prefixes every line with the process's rank): the
        # script joined a process group, which a plain ``python script.py`` cannot (no RANK,
        # WORLD_SIZE or MASTER_ADDR), so a launcher started it with its peers
        return "several"
    # ``rootrank run`` started the job itself as one ``python script.py``: the launcher is
    # known, not read from a log, and the script may still start no other process
    started_one = launcher == "python" and state.launch.launched_here
    if (
        (launcher is not None and not started_one)
        or engine is not None
        or state.elastic
        or state.ranks_seen
        or state.stacks & DISTRIBUTED_STACKS
    ):
        return None
    texts = [
        *seen_text,
        *(e.text for f in state.findings.values() for e in f.evidence),
        *(
            text
            for seen in state.exceptions
            for text in (seen.exc.message, *(fr.file for fr in seen.exc.frames))
        ),
    ]
    if any(DISTRIBUTED_TEXT.search(t) for t in texts if t):
        return None
    # a fragment that shows a rendezvous, its port or a collective (a pasted "Address already
    # in use" under TCPStore(...)) and no launcher is not a one-process python run
    several = process_group_classes()
    if any(f.failure_class in several for f in state.findings.values()):
        return None
    return "one"


_NPROC = lazy_regex.compile(r"--nproc[-_]per[-_]node[= ](?P<n>\S+)")


def _per_node(n: str, launch: Launch) -> str:
    """``n`` (an entry's processes per node: a number or a blank) for ``launch``'s own form:
    a blank, for PALS's ``--ppn``, the ``<ranks per node>`` it asks for (the GPUs of a node
    are not its ranks per node under mpiexec)."""
    if launch.launcher == "pals" and _BLANK.match(n):
        return "<ranks per node>"
    return n


def _nproc(flags: str) -> str:
    """The processes per node a torchrun command's flags give (``--nproc-per-node=N``), or
    the blank ``<n>``."""
    m = _NPROC.search(flags)
    return m["n"] if m else "<n>"


#: The config file a launch passes to DeepSpeed (``--deepspeed_config ds.json``, the HF
#: Trainer's ``--deepspeed ds.json``: deepspeed/__init__.py ``add_config_arguments``,
#: transformers' TrainingArguments.deepspeed) or to ``accelerate launch --config_file``.
_CONFIG_ARG = lazy_regex.compile(
    r"(?<!\S)--(?:deepspeed[_-]config|deepspeed|config[_-]file)[= ]['\"]?(?P<path>[^\s'\"]+\.(?:json|ya?ml))\b"
)
#: An entry's stand-in for the DeepSpeed config file in a command.
DS_CONFIG_BLANK = "<ds_config.json>"


def config_file(command: str | None) -> str | None:
    """The DeepSpeed / accelerate config file the printed launch ``command`` passes
    (:data:`_CONFIG_ARG`), as written there; ``None`` when it names none."""
    m = _CONFIG_ARG.search(command or "")
    return m["path"] if m else None


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


#: DeepSpeed's runner's fan-out over nodes (deepspeed/launcher/multinode_runner.py
#: ``PDSHRunner.get_cmd``: ``pdsh -S -f 1024 -w host1,host2 ...``): the hosts.
_PDSH_HOSTS = lazy_regex.compile(r"\bpdsh\b[^;\n]*?\s-w\s+(?P<hosts>[\w.,-]+)")
#: The rendezvous port DeepSpeed's runner passes its per-node launcher (``--master_port=29600``),
#: which its own CLI takes by the same name.
_RUNNER_MASTER = lazy_regex.compile(r"--(?P<name>master_port)[= ](?P<value>\d+)")


def with_runner_options(worker_command: str, runner_command: str) -> str:
    """The ``deepspeed`` command of the workers' argv (``deepspeed --num_gpus <gpus> train.py
    --lr 1``: :func:`rootrank.scan.deepspeed_command`) with the options DeepSpeed's runner line
    (``cmd = pdsh -S -f 1024 -w n1,n2 ... --master_port=29600 train.py ...``) shows the job ran
    with: several nodes (``--hostfile=<hostfile>``, the file that listed them: DeepSpeed's
    runner fans out over a hostfile's hosts) and ``--master_port`` (not its default, 29500).
    ``worker_command`` unchanged when the runner line shows none of them or the command is not
    a ``deepspeed`` one."""
    if not worker_command.startswith("deepspeed "):
        return worker_command
    options: list[str] = []
    hosts = _PDSH_HOSTS.search(runner_command)
    if hosts and "," in hosts["hosts"]:
        options.append("--hostfile=<hostfile>")
    for m in _RUNNER_MASTER.finditer(runner_command):
        option = f"--{m['name']}={m['value']}"
        if m["value"] != "29500" and f"--{m['name']}" not in worker_command:
            options.append(option)
    if not options:
        return worker_command
    return "deepspeed " + " ".join(options) + worker_command[len("deepspeed") :]


def ready(command: str, launch: Launch) -> str:
    """``command`` (a fitted verification command) with every file, and every module it
    imports, that the log never shows turned into a visible blank (``<ds_config.json>``,
    ``from <train> import``, ``import <flash_attn>``: a user module needs its ``.py`` in the
    log, an :data:`OPTIONAL_LIBRARIES` one a mention, :data:`LIBRARIES` none): it is then
    typed, not run as it stands. The part after ``  # `` (the comment) is left alone."""
    head, sep, comment = command.partition("  # ")
    head = _FILE.sub(
        lambda m: m.group(0) if _base(m.group(0)) in launch.known else f"<{m.group(0)}>", head
    )
    head = _IMPORT.sub(
        lambda m: (
            m.group(0)
            if m["mod"] in LIBRARIES
            or m["mod"] in launch.libraries
            or f"{m['mod']}.py" in launch.known
            else f"{m['kw']}<{m['mod']}>"
        ),
        head,
    )
    blanked: list[str] = []
    head = _FROM_IMPORT.sub(lambda m: _shown_names(m, launch, blanked), head)
    if blanked and launch.script:
        # the check imports a name the log does not show at module level of the user's script
        # (built inside main(): ImportError): the user's own launch checks the same thing
        what = comment or "exit 0"
        return ready(
            f"{fit('python train.py', launch, verify=True)}  # the same launch: {what}", launch
        )
    if blanked:  # the name where the check uses it, too
        head = _NAME_USE.sub(lambda m: f"<{m[0]}>" if m[0] in blanked else m[0], head)
    head, script, dropped = _script_flags(head, launch)
    if dropped:  # the command stays runnable as printed; the suggestion moves to the comment
        purpose = ", for a short run" if any(_SHORT_RUN_FLAG.match(f) for f in dropped) else ""
        name = _base(script.strip("<>"))
        name = f"<{name}>" if script.startswith("<") else name  # still a blank to fill
        note = f"(add {' '.join(dropped)} if {name} takes it{purpose})"
        comment = f"{comment} {note}" if sep else note
        sep = "  # "
    return head + sep + comment


#: ``from MODULE import A, B`` (the names a check takes from a module).
_FROM_IMPORT = lazy_regex.compile(
    r"\bfrom (?P<mod>[A-Za-z_]\w*) import (?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)"
)
_IDENTIFIER = lazy_regex.compile(r"[A-Za-z_]\w*")
#: A name used on its own (not an attribute ``x.name``, not already a blank ``<name>``).
_NAME_USE = lazy_regex.compile(r"(?<![\w<.])[A-Za-z_]\w*(?![\w>])")


def _shown_names(m: regex.Match[str], launch: Launch, blanked: list[str]) -> str:
    """The ``from MODULE import NAMES`` of ``m`` with each name a blank (``<loader>``) that the
    user's script ``MODULE.py`` (a file the log shows) is not shown to define or use
    (:attr:`Launch.names`): an entry's guess at the script's DataLoader's name is not this
    user's. Names from a library, or from a module the log does not show, are left; the
    blanked names are appended to ``blanked``."""
    if f"{m['mod']}.py" not in launch.known or not launch.names:
        # (a log that shows none of the user's code lines tells nothing of its names)
        return m[0]
    names = [n.strip() for n in m["names"].split(",")]
    blanked.extend(n for n in names if n not in launch.names)
    fitted = ", ".join(n if n in launch.names else f"<{n}>" for n in names)
    return f"from {m['mod']} import {fitted}"


#: A path the root cause's message names: no blank, no shell metacharacter (quoted otherwise).
_PLAIN_PATH = lazy_regex.compile(r"[\w./~+-]+")
#: A command's script: a blank (``<train.py>``) or a word ending in ``.py``; runs of spaces.
_SCRIPT_WORD = lazy_regex.compile(r"(?<![^\s=])<[^\s<>]+\.py>|\S+\.py\b")
_SPACES = lazy_regex.compile(r"  +")


def fill_path_blanks(text: str, path: str | None) -> str:
    """``text`` (a rendered verify or confirm line) with the blanks the root cause's own path
    fills: ``<path>`` is that path, ``<output_dir>`` its directory (``.`` for a bare file
    name: the job's working directory). The path is the one the exception names
    (``Permission denied: 'ckpt/rank2/step4.pt.tmp'``, a ``path`` capture): the directory
    the job failed to write is the one to check, whatever the job calls its output
    directory. Relative paths stay relative (the command runs where the job ran). ``path``
    ``None``, empty or itself a blank leaves ``text`` as it is."""
    if not path or "<" in path or "\n" in path:
        return text
    path = path.replace("\\", "/")
    folder = path.rsplit("/", 1)[0] if "/" in path.rstrip("/") else "."
    if path.startswith("/") and folder == "":
        folder = "/"

    def quoted(value: str) -> str:
        return value if _PLAIN_PATH.fullmatch(value) else "'" + value.replace("'", "'\\''") + "'"

    return text.replace("<path>", quoted(path)).replace("<output_dir>", quoted(folder or "/"))


def blank_masked_hosts(command: str) -> str:
    """``command`` with every host pseudonym the masking put in it (``host-1``, ``ip-2``:
    :func:`rootrank.mask.pseudonyms_in`) turned into a visible blank (``<host-1>``): no
    machine answers to that name, the user types the real one. The comment after
    ``  # `` is left alone. Call only on masked text."""
    head, sep, comment = command.partition("  # ")
    for name in pseudonyms_in(head):
        head = regex_code.sub(
            r"(?<![\w<-])" + regex_code.escape(name) + r"(?![\w>-])", f"<{name}>", head
        )
    return head + sep + comment


#: An option that limits how long the run lasts (``--max-steps 5``, ``--train-iters=20``,
#: ``--num-epochs 1``): the reason a verification passes it. Another option (``--help``,
#: ``--resume``, ``--num-workers 0``) is named without that reason.
_SHORT_RUN_FLAG = lazy_regex.compile(
    r"--(?:max[-_])?(?:train[-_])?(?:num[-_])?(?:steps|iters|iterations|epochs|samples)\b"
)
#: An option of the user's own script: ``--max-steps 5``, ``--steps=5`` (after the ``.py``).
_SCRIPT_FLAG = lazy_regex.compile(r"(?<=\s)--[A-Za-z][\w-]{0,40}(?:[= ](?!-)[^\s<>|;&]+)?")


def _script_flags(head: str, launch: Launch) -> tuple[str, str, list[str]]:
    """``head`` without the options after the entry script that the log's own command never
    passed (``train.py --max-steps 5``), the script (its first ``*.py``) and those options:
    the script may not take them, and written as a blank (``<--max-steps 5>``) a shell reads
    ``<`` as a redirect. The caller names them in the comment instead. A script the log does
    not show is a blank (``<train.py>``, :func:`ready`): the script returned is the whole
    blank, its closing ``>`` too."""
    m = _SCRIPT_WORD.search(head)
    if m is None:
        return head, "", []
    seen = launch.command or ""
    dropped: list[str] = []

    def drop(f: regex.Match[str]) -> str:
        flag = f.group(0).split("=", 1)[0].split(" ", 1)[0]
        if flag in seen:
            return f.group(0)
        dropped.append(f.group(0))
        return ""

    rest = _SCRIPT_FLAG.sub(drop, head[m.end() :])
    return head[: m.end()] + _SPACES.sub(" ", rest).rstrip(), m.group(0), dropped


#: ``torchrun [--nproc-per-node=N] [...]`` before the entry script or without one: what a
#: one-process job runs as ``python`` instead.
_TORCHRUN_LAUNCH = lazy_regex.compile(
    # a command, not the word in prose ("to let torchrun pick a port")
    r"\btorchrun(?= --| \.\.\.| train\.py\b)(?! --nnodes)(?: --nproc-per-node=(?:\$\([^()]*\)|\S+))?(?: \.\.\.)?"
    r"(?P<script> train\.py\b)?"
)
#: A launcher an entry's command names before its ``python train.py`` (it starts the processes).
_LAUNCHER_WORD = lazy_regex.compile(r"\b(?:" + launchers.MULTI_PROCESS + r")\b")


def _launch_form(launch: Launch) -> str | None:
    """The command that reruns the job as the log shows it was launched, when the log names
    the launcher (not assumed) and the entry script: ``torchrun --nproc-per-node=<gpus>
    train.py`` for torchrun (``<gpus>`` filled later from the log when it tells), ``deepspeed
    --num_gpus <gpus> train.py`` for DeepSpeed's runner (its ``spawned with command`` lines
    give the script, not the runner's own command line), ``python train.py`` for a script that
    starts its own processes (``mp.spawn``, plain ``python``), ``accelerate launch
    --config_file <your accelerate config> train.py`` for accelerate, and srun's, mpirun's or
    horovodrun's own form (:data:`LAUNCH_AS`, with the world size when the log gives it);
    ``None`` otherwise."""
    if launch.launcher is None or launch.launcher_assumed or not launch.script:
        return None
    if launch.launcher == "torchrun":
        return f"torchrun --nproc-per-node=<gpus> {launch.script}"
    if launch.launcher == "deepspeed":
        return f"deepspeed --num_gpus <gpus> {launch.script}"
    if launch.launcher in ("mp.spawn", "python"):
        return f"python {launch.script}"
    if launch.launcher == "accelerate":
        # accelerate reads the job's settings (FSDP/DeepSpeed plugin, processes, mixed
        # precision) from its config file: a rerun without it is another job
        return f"accelerate launch --config_file <your accelerate config> {launch.script}"
    if launch.launcher in ("srun", "mpirun", "pals", "horovodrun"):
        world = str(launch.world) if launch.world else "<np>"
        per_node = str(launch.per_node) if launch.per_node else "<ranks per node>"
        return f"{LAUNCH_AS[launch.launcher].format(n=per_node, world=world)} {launch.script}"
    return None


#: A variable an nccl-tests command sets for its run: before the command (``VAR=v cmd``) or
#: exported by mpirun (``-x VAR=v``).
_TOOL_ENV = lazy_regex.compile(r"(?:^|(?<=\s))(?:-x\s+)?(?P<var>[A-Z][A-Z0-9_]*)=(?P<val>\S+)")
#: Parts of an nccl-tests check's expectation that only the benchmark prints (its bus
#: bandwidth table, its exit status as a benchmark, "nccl-tests across ...").
_TOOL_ONLY = lazy_regex.compile(
    r"busbw|bandwidth|nccl-tests|exit 0|whatever launches", regex_code.IGNORECASE
)
#: The job's own launch as an entry writes it: :func:`fit` turns it into the one the log shows.
JOB_LAUNCH = "torchrun --nproc-per-node=<gpus> train.py"
#: An entry's ``torchrun ...`` with no script after it (the rest of the command elided).
_TORCHRUN_ELIDED = lazy_regex.compile(r"\btorchrun \.\.\.(?= |$)(?! +<?[\w./-]+\.py\b)")


def job_network_check(text: str) -> str:
    """``text`` (a verification) with an nccl-tests run (``mpirun -H <hostA>,<hostB>
    ./build/all_reduce_perf ...``, :data:`_NCCL_TESTS_RUN`) turned into the job's own launch
    with ``NCCL_DEBUG=INFO``: for a log that shows no nccl-tests command, the benchmark is a
    tool the user may not have, and its hosts are blanks the log cannot fill (a Slurm or
    container job names no ``-H`` hosts). The job itself exercises the same transport on
    the same nodes; NCCL's INFO lines say which interface and transport it took, and its
    WARN lines are what the check looks for. The variables the benchmark run set (``VAR=v``
    before it, mpirun's ``-x VAR=v``) stay, ``NCCL_DEBUG`` becomes ``INFO``; the comment
    keeps its WARN expectations and drops the benchmark's own (busbw, a bandwidth table).
    :data:`JOB_LAUNCH` is the launch written: :func:`fit` makes it the log's own. ``text``
    without an nccl-tests run is returned as it is."""
    head, sep, comment = text.partition("  # ")
    m = _NCCL_TESTS_RUN.search(head)
    if (
        m is None
        or head[m.end() :].strip()  # prose about the benchmark, or a pipe after it
        or (m.start() and head[: m.start()].rstrip().endswith(("|", "&&", ";")))
    ):
        return text  # no benchmark run as the command, or one offered after another command
    env: dict[str, str] = {}
    before = head[: m.start()]
    for e in _TOOL_ENV.finditer(before + " " + m[0]):
        env[e["var"]] = e["val"]
    env["NCCL_DEBUG"] = "INFO"
    others = before.strip()
    others = _TOOL_ENV.sub("", others).strip()
    assigned = " ".join(f"{k}={v}" for k, v in env.items())
    run = f"{others + ' ' if others else ''}{assigned} {JOB_LAUNCH}{head[m.end() :]}".rstrip()
    kept = [
        part.strip()
        for part in regex_code.split(r",|;| and ", comment)
        if part.strip() and not _TOOL_ONLY.search(part)
    ]
    expect = "the job itself, launched as before (the log shows no nccl-tests): 'Init COMPLETE' on every rank"
    if kept:
        expect += ", " + ", ".join(kept)
    return f"{run}  # {expect}"


#: The rendezvous blanks the entries write: the master host (``<master host>``, ``<master
#: address>``, ``<master addr>``) and the port after it (``host:<port>``, ``host <port>``).
_MASTER_BLANK = lazy_regex.compile(r"<master (?:host|address|addr)>")
_PORT_AFTER = r"(?<={host}[: ])<port>"


def fill_endpoint(text: str, launch: Launch) -> str:
    """``text`` with the rendezvous blanks the log fills: the master host blank
    (:data:`_MASTER_BLANK`) is the host the log prints (:attr:`Launch.rdzv_host`), and a
    ``<port>`` right after that host (``node01:<port>``, ``nc -zv node01 <port>``) the port
    it prints (:attr:`Launch.rdzv_port`). A blank the log says nothing of stays; a
    ``<port>`` elsewhere (another service's) stays."""
    if launch.rdzv_host:
        host = launch.rdzv_host
        text = _MASTER_BLANK.sub(lambda m: host, text)
    if launch.rdzv_port:
        hosts = [regex_code.escape(h) for h in (launch.rdzv_host,) if h] + [_MASTER_BLANK.pattern]
        text = regex_code.sub(
            _PORT_AFTER.format(host="(?:" + "|".join(hosts) + ")"), launch.rdzv_port, text
        )
    return text


#: A variable a command sets or unsets before the program (``VAR=value``, ``env -u VAR``):
#: ``u`` the unset name, ``v`` the set one.
_SETTING = lazy_regex.compile(
    r"(?:^|(?<=\s))(?:-u\s+(?P<u>[A-Za-z_]\w*)(?=\s)"
    r"|(?P<v>[A-Za-z_]\w*)=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']*)(?:\s+|$))"
)


def check_settings_win(text: str) -> str:
    """``text`` (a verification command) with each variable set or unset once, as the check
    itself sets it: a later ``VAR=value`` of a variable written before it (the job's printed
    command, put in after the check's own ``VAR=fixed`` or ``env -u VAR``, still sets the
    value that failed) is dropped, so the check runs with the setting it is about. Only the
    command before its ``  # `` comment is read. Returns the text unchanged when no variable
    repeats."""
    head, sep, comment = text.partition("  # ")
    seen: set[str] = set()

    def once(m: regex.Match[str]) -> str:
        name = m["u"] or m["v"]
        if m["v"] and name in seen:
            return ""
        seen.add(name)
        return m[0]

    return _SETTING.sub(once, head) + sep + comment


def fit(text: str, launch: Launch, *, verify: bool = False) -> str:
    """:func:`fit_launch`, then the rendezvous blanks the log fills (:func:`fill_endpoint`);
    a verification's settings are the check's own (:func:`check_settings_win`)."""
    text = fill_endpoint(fit_launch(text, launch, verify=verify), launch)
    return check_settings_win(text) if verify else text


def fit_launch(text: str, launch: Launch, *, verify: bool = False) -> str:
    """``text`` (an entry's step, code or command) with its stand-ins filled from ``launch``:
    ``train.py`` becomes the entry script, ``<gpus>``/``<n>`` in ``--nproc-per-node`` the
    processes per node, ``torchrun --nproc-per-node=N train.py`` the printed command (when it
    runs the same script) or the launcher the log used; a multi-node job's torchrun gets
    ``--nnodes``/``--node-rank``/rendezvous flags (blanks where the log does not tell); a
    vLLM job's torchrun becomes :data:`VLLM_SMOKE` (the engine answering one prompt), an
    nccl-tests run's the benchmark command it printed (else :data:`NCCL_TESTS`).

    A job of one process (``launch.processes == "one"``) runs ``python train.py`` wherever an
    entry wrote torchrun. ``verify``: ``text`` is the verification command; in a job of
    several processes launched by a multi-process launcher (or by one the log does not name)
    its one-process ``python train.py`` becomes that launcher's command, as the job ran."""
    script = launch.script
    command = launch.command
    if verify:
        # an entry that wrote the script as a blank (``accelerate launch <train.py>``) means
        # the same stand-in as ``train.py``: the script, launcher and entry the log shows fill
        # it alike (:func:`ready`, run on every verification, turns a script the log never
        # shows back into the blank)
        text = _SCRIPT_BLANK.sub("train.py", text)
    if verify and launch.launcher != "nccl-tests":
        text = job_network_check(text)
    if verify and DS_CONFIG_BLANK in text and (cfg := config_file(launch.command)):
        # the config the launch passed is the one the check reads
        text = text.replace(DS_CONFIG_BLANK, cfg)
    if verify:
        # an entry's elided launch with no script after it (``NCCL_DEBUG=INFO torchrun ... 2>&1
        # | grep ...``): the job's launch, which the steps below make the log's own
        text = _TORCHRUN_ELIDED.sub(JOB_LAUNCH, text)
    if launch.launcher == "determined":
        # a Determined trial: its processes are started by the agent from the experiment's
        # config (entrypoint, resources.slots_per_trial); a rerun submits the experiment
        text = text.replace("<your launch command>", DETERMINED_RUN)
        if verify:
            text = _TORCHRUN_WHOLE.sub(DETERMINED_RUN, text)
            text = _PYTHON_SCRIPT.sub(DETERMINED_RUN, text)
    if "<your launch command>" in text:
        # an entry that cannot know the launch: the printed command, else the launcher the
        # log shows with its script (torchrun's banner and summary give both); a framework's
        # own entry file (swift/cli/sft.py) is started by that framework's command
        own = command or (launch.entry if launch.engine is None else None) or _launch_form(launch)
        if own:
            text = text.replace("<your launch command>", own)
    if (
        launch.launcher is not None
        and not launch.launcher_assumed
        and launch.launcher != "accelerate"
        and launch.engine is None
        and launch.launcher != "nccl-tests"
    ):
        # an entry written for accelerate, in a job another launcher ran: that launcher's form
        text = _ACCELERATE_LAUNCH.sub("torchrun --nproc-per-node=<gpus>", text)
    if verify and launch.processes == "several" and launch.launcher not in SELF_LAUNCHED:
        # a one-process run of a script that several launched processes ran: it would stop at
        # init_process_group (no RANK/MASTER_ADDR) before reaching the step that failed
        # (not the python an entry's own launcher line runs: ``mpirun -np <n> python train.py``)
        text = _PYTHON_SCRIPT.sub(
            lambda m: (
                m[0]
                if _LAUNCHER_WORD.search(m.string, 0, m.start())
                else "torchrun --nproc-per-node=<gpus> " + m[0].split(" ", 1)[1]
            ),
            text,
        )
    if launch.processes == "one" and "torchrun" in text:
        # the log shows one process started by hand: rerun it the same way
        text = _TORCHRUN_LAUNCH.sub("python train.py", text)
    # the command without the wrapper and variables before it, and whether it is one plain
    # ``python script.py ...`` (not a launcher)
    own = ENV_HEAD.sub("", command) if command else ""
    # (``python -c CODE`` runs no script: a rerun is the command whole, as a launcher's is)
    plain_python = bool(own and _PYTHON_COMMAND.match(own) and not _PYTHON_CODE.match(own))
    if (
        command
        and "torchrun" in text
        and script
        and script.rsplit("/", 1)[-1] in command
        and command not in text  # (already written whole: ``<your launch command>``)
    ):
        text = TORCHRUN_SCRIPT.sub(lambda m: command.replace("\\", "\\\\"), text, count=1)
    if (
        command
        and script
        and script.rsplit("/", 1)[-1] in command
        and plain_python
        and launch.launcher in (None, "python")
        and command not in text  # (already written whole in place of a torchrun line)
    ):
        # the job was one ``python script.py ...`` command (printed, or run by rootrank run):
        # an entry's ``python train.py`` reruns it as it was typed, arguments and all
        text = _PYTHON_TRAIN.sub(lambda m: command.replace("\\", "\\\\"), text, count=1)
    if (
        verify
        and command
        and not plain_python
        and launch.engine is None
        and launch.launcher != "nccl-tests"
        and (script is None or script.rsplit("/", 1)[-1] not in command)
    ):
        # the log shows the command the job was started with, and it is not a launcher running
        # the script an entry names (a framework's shell script or CLI, ``composer x.py a.yaml``
        # whose script the log names nowhere else): a rerun is that command, whole, after the
        # entry's own variables (``CUDA_LAUNCH_BLOCKING=1 NGPU=2 ./run_train.sh``)
        whole = command.replace("\\", "\\\\")
        text = _TORCHRUN_WHOLE.sub(lambda m: whole, text)
        text = _PYTHON_SCRIPT.sub(lambda m: whole, text)
    if verify and launch.entry and launch.engine is None and launch.launcher != "nccl-tests":
        # no command printed, but the framework whose code ran starts its runs one way
        entry = launch.entry
        text = _TORCHRUN_WHOLE.sub(lambda m: entry, text)
        text = _PYTHON_SCRIPT.sub(lambda m: entry, text)
    if launch.per_node is not None:
        text = TORCHRUN.sub(
            lambda m: (
                f"torchrun --nproc-per-node={launch.per_node}" if _BLANK.match(m["n"]) else m[0]
            ),
            text,
        )
        text = text.replace("<gpus>", str(launch.per_node))
    if launch.launcher == "nccl-tests":
        # a benchmark run, not a training script: rerun the benchmark as the log ran it
        tool = launch.tool_command or NCCL_TESTS
        if launch.tool_command:  # an entry's own nccl-tests line becomes the printed one
            text = _NCCL_TESTS_RUN.sub(lambda m: tool, text)
        return _TORCHRUN_WHOLE.sub(lambda m: tool, text)
    if launch.engine is not None and ("torchrun" in text or _PYTHON_SCRIPT.search(text)):
        # a serving / RL engine starts its workers itself: its check is the engine answering
        tp = str(launch.tp or launch.world or "<tensor parallel size>")
        smoke = engine_check(launch, tp)
        if launch.overrides:  # the Hydra overrides the failed run had (verl's config)
            given = " ".join(shlex.quote(o) for o in launch.overrides)
            smoke = smoke.replace("<your config overrides>", given)
        text = _TORCHRUN_WHOLE.sub(lambda m: smoke, text)
        text = _PYTHON_SCRIPT.sub(lambda m: smoke, text)
        if verify and smoke.startswith(SGLANG_SERVER.split(" --", 1)[0]) and smoke in text:
            # the server runs on: the check is its ready line, on every node it was started on
            head, sep, comment = text.partition("  # ")
            where = "on every node, " if launch.multi_node else ""
            note = f"{where}{SGLANG_READY}"
            text = f"{head}  # {note}; {comment}" if sep else f"{head}  # {note}"
        return text
    if (
        launch.multi_node
        and "--nnodes" not in text
        and (launch.launcher or "torchrun") == "torchrun"
    ):
        # a multi-node job is rerun on all its nodes: one torchrun per node, same rendezvous
        nodes = str(launch.nodes) if launch.nodes else "<nodes>"
        flags = (
            f" --nnodes={nodes} --node-rank=<node rank> --rdzv-backend=c10d"
            " --rdzv-endpoint=<master host>:<port>"
        )
        if launch.under_srun:
            # srun starts one agent per node of the job's allocation; c10d's rendezvous numbers
            # the nodes itself (no --node-rank), and the allocation's first host serves it
            # (PyTorch's "torchrun (Elastic Launch)" docs; Slurm's scontrol show hostnames)
            flags = f" --nnodes={nodes} --rdzv-backend=c10d --rdzv-endpoint={SLURM_HEAD}:29500"
        text = TORCHRUN.sub(lambda m: m[0] + flags, text)
        # ``torchrun ... train.py``: the blank holds the other flags, the node flags are written
        text = regex_code.sub(r"\btorchrun(?= \.\.\. )", lambda m: m[0] + flags, text)
        if launch.under_srun and verify:
            text = regex_code.sub(
                r"(?<!srun [^\n#]*)\btorchrun\b",
                f"srun --nodes={nodes} --ntasks-per-node=1 torchrun",
                text,
                count=1,
            )
    if launch.nodes and not launch.nodes_differ:
        # an entry's own node flag left blank: the node count the log gives
        text = regex_code.sub(r"(?<=--nnodes[= ])<(?:nnodes|nodes|n)>", str(launch.nodes), text)
    form = LAUNCH_AS.get(launch.launcher or "")
    if launch.launcher == "accelerate" and "deepspeed" in launch.libraries and not launch.fsdp:
        # accelerate's DeepSpeed plugin reads its config from the accelerate config file (a
        # run that shows FSDP ran accelerate's FSDP plugin instead: one job has one of the
        # two, and "deepspeed" may be only a word of its printed settings, such as a
        # ParallelismConfig's sp_backend=deepspeed)
        form = "accelerate launch --config_file <accelerate config (DeepSpeed)> --num_processes {n}"
    if form == "python" and launch.launcher != "python" and "torchrun" in text:
        # a launcher that runs the script with python and starts the other processes itself
        # (mp.spawn, Lightning, Ray Train's driver): an entry's torchrun, whatever its flags
        # (``--nnodes=<n> --nproc-per-node=<gpus>``), is that python command
        text = _TORCHRUN_FLAGS.sub("python ", text)
    if form and launch.launcher != "torchrun" and "torchrun" in text:
        world = str(launch.world) if launch.world else "<np>"
        text = TORCHRUN.sub(lambda m: form.format(n=_per_node(m["n"], launch), world=world), text)
        text = regex_code.sub(r"\btorchrun(?= \.\.\.)", form.format(n="<n>", world=world), text)
        if verify:
            # a verification's torchrun whose other flags come first (the NCCL entries'
            # ``torchrun --nnodes=<n> --nproc-per-node=<gpus> train.py``): the launcher the log
            # shows reruns the job its own way, its form replaces the torchrun flags whole (a
            # fix's code that moves the job to torchrun on purpose is left as written)
            text = _TORCHRUN_FLAGS.sub(
                lambda m: form.format(n=_per_node(_nproc(m[0]), launch), world=world) + " ", text
            )
    if script and script != "train.py" and "train.py" in text:
        # (not inside the printed command, written whole: ``python ./deepy.py train.py ...``
        # names a train.py of its own, which deepy.py runs)
        parts = text.split(command) if command else [text]
        fill = script.replace("\\", "\\\\")
        text = (command or "").join(TRAIN_PY.sub(fill, part) for part in parts)
    if script and script.startswith("-m ") and launch.launcher == "deepspeed":
        # DeepSpeed's runner takes a module as ``--module pkg.mod`` (deepspeed/launcher/runner.py)
        text = regex_code.sub(r"(?<=\bdeepspeed\b[^\n#]*) -m (?=\S)", " --module ", text)
    if launch.per_node is None:
        text = any_gpus(text)
    return text


def engine_check(launch: Launch, tp: str) -> str:
    """The command that checks a serving / RL engine's job (``launch.engine`` one of
    :data:`ENGINE_ORDER`), with its tensor-parallel size ``tp`` (a number, or a blank):
    :data:`ENGINE_SMOKE`'s, except for SGLang run as a server (no script calling
    ``sgl.Engine`` in the log: :attr:`Launch.engine_api`), which is :data:`SGLANG_SERVER`,
    with the model its printed arguments name (:attr:`Launch.model`) and
    :data:`SGLANG_NODES` for a job over several nodes (the node count when the log gives
    one, else a blank; the rendezvous ``<master host>:<port>``, filled later from the log by
    :func:`fill_endpoint`). Raises ``KeyError`` for an engine with no check."""
    if launch.engine == "sglang" and not launch.engine_api:
        command = SGLANG_SERVER.format(tp=tp)
        if launch.model:  # the model the server's own arguments name
            command = command.replace("<model>", shlex.quote(launch.model))
        if launch.multi_node:
            nodes = str(launch.nodes) if launch.nodes and not launch.nodes_differ else "<nodes>"
            command += SGLANG_NODES.format(nodes=nodes, endpoint="<master host>:<port>")
        return command
    return ENGINE_SMOKE[str(launch.engine)].format(tp=tp)


#: A torchrun's processes per node left blank (``torchrun ... --nproc-per-node=<gpus>``, ``<n>``).
_TORCHRUN_NPROC_BLANK = lazy_regex.compile(
    r"(?<=\btorchrun\b[^\n#|;&]*--nproc[-_]per[-_]node[= ])<(?:gpus|n)>(?=[\s]|$)"
)
#: DeepSpeed's runner's GPU count left blank (``deepspeed --num_gpus <gpus> train.py``).
_DEEPSPEED_GPUS_BLANK = lazy_regex.compile(
    r"(?<=\bdeepspeed\b[^\n#|;&]*) --num[_-]gpus[= ]<(?:gpus|n)>(?=[\s]|$)"
)


def any_gpus(text: str) -> str:
    """``text`` with the processes-per-node blank of a torchrun or DeepSpeed command, for a job
    whose log does not tell how many GPUs a node had, made the launcher's own "every GPU":
    torchrun's ``--nproc-per-node=gpu`` (one process per visible GPU:
    ``torch/distributed/run.py``, ``determine_local_world_size``) and DeepSpeed's runner with
    no ``--num_gpus`` (its default, -1, uses every visible GPU: ``deepspeed/launcher/runner.py``).
    The command then runs as written on the user's node. Other launchers' counts stay blanks
    (``accelerate launch --num_processes`` takes only a number)."""
    text = _TORCHRUN_NPROC_BLANK.sub("gpu", text)
    return _DEEPSPEED_GPUS_BLANK.sub("", text)


#: Megatron's parallel-size options (megatron/arguments.py, ``_add_distributed_args``): the
#: sizes a model dimension is split over (``ensure_divisibility``'s denominator).
_PARALLEL_SIZE_FLAG = lazy_regex.compile(
    r"(?P<flag>--(?:tensor|pipeline|context|expert)[-_]model[-_]parallel[-_]size)(?P<sep>[= ])"
    r"(?P<n>\d+)\b"
)
#: Largest model dimension whose divisors are listed (larger ones: a vocabulary, a hidden size).
MAX_DIVISOR_SCAN = 4096
#: Divisors listed up to this value (parallel sizes larger than it are not used).
MAX_LISTED_DIVISOR = 128


def divisor_values(numerator: str, denominator: str) -> dict[str, str]:
    """For a dimension ``numerator`` that a parallel size ``denominator`` does not divide
    (Megatron's ``AssertionError: 28 is not divisible by 8``): ``divisors``, the sizes that
    divide it (up to :data:`MAX_LISTED_DIVISOR`: ``"1, 2, 4, 7, 14, 28"``), and ``fit_size``,
    the largest of them below ``denominator`` that also divides ``denominator`` (so the GPUs
    the job had still split evenly: the other parallel sizes grow), else the largest below it
    (``"4"``). Empty when the two are not positive integers or the numerator is past
    :data:`MAX_DIVISOR_SCAN` (no parallel size would be taken from its divisors)."""
    if not (numerator.isdigit() and denominator.isdigit()):
        return {}
    n, d = int(numerator), int(denominator)
    if n == 0 or d < 2 or n > MAX_DIVISOR_SCAN or n % d == 0:
        return {}
    divisors = [k for k in range(1, min(n, MAX_LISTED_DIVISOR) + 1) if n % k == 0]
    below = [k for k in divisors if k < d]
    fits = [k for k in below if d % k == 0] or below
    return {"divisors": ", ".join(map(str, divisors)), "fit_size": str(fits[-1])}


def with_parallel_size(command: str, old: str, new: str) -> str:
    """``command`` (a verification rerunning the printed launch) with the one Megatron
    parallel-size option whose value is ``old`` (:data:`_PARALLEL_SIZE_FLAG`) set to ``new``:
    the rerun tries the size the fix names, not the one that failed. Unchanged when no
    option, or more than one, has that value (which size failed is then not known)."""
    head, sep, comment = command.partition("  # ")
    hits = [m for m in _PARALLEL_SIZE_FLAG.finditer(head) if m["n"] == old]
    if len(hits) != 1:
        return command
    m = hits[0]
    head = f"{head[: m.start()]}{m['flag']}{m['sep']}{new}{head[m.end() :]}"
    return head + sep + comment


#: The launchers a verification may name with a script the log shows, when the log shows no
#: command: it rebuilds the launch from the launcher's traceback or summary and the script's
#: path, without the job's arguments or environment.
_REBUILT_LAUNCH = lazy_regex.compile(
    r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:torchrun|python[\d.]*|srun|mpirun|deepspeed|accelerate launch)\b"
)

#: What a verification says when it reruns a launch the log does not show.
UNSHOWN_LAUNCH_NOTE = (
    "(the log shows no launch command: resubmit the same job script, with its arguments and"
    " environment)"
)

#: A blank after the script that already asks for the job's arguments: ``train.py <args>``.
_ARGUMENTS_BLANK = lazy_regex.compile(r"\.py\s+<[^<>]*>")


def unshown_launch(verify: str, launch: Launch) -> str:
    """``verify`` with :data:`UNSHOWN_LAUNCH_NOTE` at the end of its comment when it reruns a
    launch the log does not show: no printed command (:attr:`Launch.command`), no framework
    entry, no serving engine, and the command is a launcher of the entry script the log names
    (:data:`_REBUILT_LAUNCH`; rebuilt from a traceback such as torchrun's ``<module>`` frame or
    a spawn launcher's). Such a command lacks the job's own arguments (a config file, a run
    number) and environment (two nodes' MASTER_ADDR/RANK), and a batch job's launch is its
    script: the user reruns that. A command whose script is followed by a blank
    (:data:`_ARGUMENTS_BLANK`) already asks for the arguments."""
    if (
        launch.command is not None
        or launch.entry is not None
        or launch.engine is not None
        or launch.launcher in (None, "nccl-tests", "determined")
        or launch.script is None
        or not _REBUILT_LAUNCH.match(verify)
    ):
        return verify
    head, sep, comment = verify.partition("  # ")
    if (
        _base(launch.script) not in head
        or _ARGUMENTS_BLANK.search(head)
        or UNSHOWN_LAUNCH_NOTE in verify
    ):
        return verify
    return (
        f"{head}  # {comment} {UNSHOWN_LAUNCH_NOTE}" if sep else f"{head}  # {UNSHOWN_LAUNCH_NOTE}"
    )
