"""Which framework (stack) a log comes from, from the evidence real logs carry.

A stack name picks the fix's code and the fix variant (``stack:`` in
:mod:`rootrank.entry.variants`) and, for serving engines, the verification command
(:mod:`rootrank.entry.commands`). Evidence, by kind:

- words a line prints (``DeepSpeed``, ``Megatron``, ``vllm serve``): :data:`STACK_WORDS`,
  read by :mod:`rootrank.scan` over the first block and the gated lines;
- the package directory of a traceback frame (``site-packages/vllm/engine/...``,
  ``megatron/core/...``, ``lightning/pytorch/trainer/...``): :func:`stacks_of_paths`;
- the worker prefix Ray prints before an actor's output: vLLM's workers are actors of class
  ``RayWorker`` / ``RayWorkerVllm`` / ``RayWorkerWrapper`` (vllm/executor/ray_utils.py,
  vllm/engine/ray_utils.py in older releases), its multiprocessing workers print
  ``(VllmWorkerProcess pid=N)`` / ``(VllmWorker rank=N pid=N)``; verl's colocated Ray actors
  are of class ``WorkerDict`` (verl/single_controller/ray/base.py).

Names: ``pytorch`` (never detected: the default), ``hf``, ``deepspeed``, ``megatron``,
``lightning``, ``fsdp``, ``transformer-engine`` (NVIDIA's fused-kernel library), and the serving / RL engines ``vllm``, ``sglang``, ``lmdeploy``,
``verl`` (:data:`SERVING`), ``openrlhf`` (OpenRLHF's Ray PPO trainer); ``net-plugin`` is no framework but NCCL's transport: the job's
inter-node traffic goes through a network plugin (aws-ofi-nccl and the like).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Stack names a variant's ``stack:`` may name.
STACK_NAMES = (
    "pytorch",
    "hf",
    "deepspeed",
    "megatron",
    "lightning",
    "fsdp",
    "vllm",
    "sglang",
    "lmdeploy",
    "verl",
    "openrlhf",
    "transformer-engine",
    "ray-train",
    "kubernetes",
    "net-plugin",
)
#: Engines that serve a model (or run one for RL rollouts): a CUDA fault there is the
#: engine's kernels or its build, and a rerun is the engine answering a prompt, not a
#: training script.
SERVING = ("vllm", "sglang", "lmdeploy", "verl")

#: Substrings a line prints that name the stack (case-sensitive; several per stack).
STACK_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("deepspeed", ("deepspeed", "DeepSpeed")),
    ("megatron", ("megatron", "Megatron")),
    (
        "vllm",
        (
            "vllm",
            "vLLM",
            "Vllm",
            "(RayWorker pid=",
            "RayWorkerWrapper",
            "(VllmWorker",
            "(EngineCore",
        ),
    ),
    ("sglang", ("sglang", "SGLang")),
    ("lmdeploy", ("lmdeploy", "turbomind", "TurboMind")),
    ("verl", ("(WorkerDict pid=", "/verl/", "verl.trainer", "verl.workers")),
    # OpenRLHF's Ray PPO trainer: its actors' classes, as Ray's log prefix names them
    # ("(ActorModelRayActor pid=748) ...": openrlhf/trainer/ray/ppo_actor.py, ppo_critic.py,
    # launcher.py), and its entry module (openrlhf.cli.train_ppo_ray). Not the word
    # "openrlhf" alone: its SFT/DPO trainers run under deepspeed, not Ray.
    (
        "openrlhf",
        (
            "ActorModelRayActor",
            "CriticModelRayActor",
            "ReferenceModelRayActor",
            "RewardModelRayActor",
            "train_ppo_ray",
        ),
    ),
    (
        "lightning",
        (
            "pytorch_lightning",
            "lightning/pytorch",
            "lightning.pytorch",
            "lightning_fabric",
            "Initializing distributed: GLOBAL_RANK",  # Lightning / Fabric start-up line
        ),
    ),
    ("fsdp", ("FullyShardedDataParallel", "distributed/fsdp/", "FSDP")),
    ("hf", ("transformers", "accelerate", "Trainer")),
    # NVIDIA TransformerEngine's kernels (fused attention, MoE router/permutation, FP8 GEMMs)
    ("transformer-engine", ("transformer_engine", "TransformerEngine")),
    # Ray Train (and RaySGD before it): the driver script, run with python, starts the
    # training workers as Ray actors (ray/train/torch/torch_trainer.py)
    ("ray-train", ("(RayTrainWorker pid=", "TorchTrainer", "ray.train.", "ray.util.sgd")),
    # the job runs in Kubernetes pods (Kubeflow's PyTorchJob, a pod's log read with kubectl,
    # cluster DNS names): MASTER_ADDR is a Service name that resolves once its pod exists
    ("kubernetes", ("kubectl ", ".svc.cluster.local", "PyTorchJob", "kubeflow")),
    # NCCL/RCCL moves inter-node traffic through a network plugin, not its own NET/IB or
    # NET/Socket: aws-ofi-nccl/aws-ofi-rccl over libfabric (AWS EFA, HPE Slingshot's cxi)
    # prints "NET/OFI Initializing aws-ofi-nccl" and its channels "via NET/AWS Libfabric";
    # NCCL 2.19+ prints "NET/Plugin: Loaded net plugin <name>" for any plugin it loaded. The
    # default's lines ("NET/Plugin : No plugin found", "Using internal network plugin") name
    # none of these words.
    (
        "net-plugin",
        ("NET/OFI", "aws-ofi-nccl", "aws-ofi-rccl", "Loaded net plugin", "NET/AWS Libfabric"),
    ),
)

#: A frame's file path through one of these directories is that stack's code (the path
#: separators normalised to ``/``).
_PATH_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vllm", ("/vllm/",)),
    ("sglang", ("/sglang/",)),
    ("lmdeploy", ("/lmdeploy/",)),
    ("verl", ("/verl/",)),
    ("openrlhf", ("/openrlhf/trainer/ray/",)),
    ("megatron", ("/megatron/",)),
    ("deepspeed", ("/deepspeed/",)),
    (
        "lightning",
        ("/pytorch_lightning/", "/lightning/pytorch/", "/lightning/fabric/", "/lightning_fabric/"),
    ),
    ("fsdp", ("/torch/distributed/fsdp/", "/torch/distributed/_composable/fsdp/")),
    ("hf", ("/transformers/", "/accelerate/")),
    ("transformer-engine", ("/transformer_engine/",)),
    ("ray-train", ("/ray/train/", "/ray/util/sgd/", "/ray/air/")),
)


#: An environment's own directory in a path: conda's ``<root>/envs/<name>/``, virtualenvwrapper's
#: and pyenv's ``virtualenvs/<name>/`` / ``versions/<name>/envs``: the name is whatever the
#: user called the environment (``envs/deepspeed``), no sign that the stack is in use (r23c
#: case 08: an env named ``deepspeed`` running ``accelerate launch``).
_ENV_DIR = re.compile(r"([/\\](?:envs|venvs|\.?virtualenvs)[/\\])[^/\\\s]+(?=[/\\])")


def without_env_names(text: str) -> str:
    """``text`` with each environment directory's name (:data:`_ENV_DIR`) replaced by ``_``;
    ``text`` itself when it holds none."""
    if "envs" not in text:
        return text
    return _ENV_DIR.sub(r"\1_", text)


def stacks_in(text: str, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The stacks a line's words name (:data:`STACK_WORDS`), other than those in ``known``
    (already found: their words are not searched again, on the scan's per-line path); an
    environment directory's name is no word of the line (:func:`without_env_names`)."""
    text = without_env_names(text)
    return {
        stack
        for stack, words in STACK_WORDS
        if stack not in known and any(w in text for w in words)
    }


def stacks_of_paths(paths: Iterable[str]) -> set[str]:
    """The stacks whose package directory a frame's file path goes through
    (``.../site-packages/vllm/worker/worker.py`` -> ``vllm``; a relative ``megatron/core/...``
    counts too; an environment's name, ``envs/deepspeed/``, does not:
    :func:`without_env_names`)."""
    found: set[str] = set()
    for path in paths:
        p = without_env_names("/" + path.replace("\\", "/").lstrip("/"))
        for stack, parts in _PATH_PARTS:
            if stack not in found and any(part in p for part in parts):
                found.add(stack)
    return found


#: Frameworks that start their own jobs, by the package directory their frames run through
#: (the log's traceback, with no launch command printed), and the command their docs start a
#: run with: LLaMA-Factory's CLI (``llamafactory-cli train x.yaml`` runs torchrun on
#: ``llamafactory/launcher.py`` itself), torchtitan's ``run_train.sh`` (torchrun of
#: ``torchtitan.train``, GPUs from ``NGPU``, the job's TOML from ``CONFIG_FILE``), OpenRLHF's
#: ``openrlhf.cli`` modules (``*_ray`` ones under Ray: ``python3 -m``, run where ``ray.init``
#: reaches the cluster; the others under ``deepspeed --module``). ``{module}`` is the entry
#: module's name, from its frame. ms-swift's ``swift`` CLI (``swift/cli/sft.py`` is ``swift
#: sft``, ``rlhf.py`` ``swift rlhf``; ``swift/cli/_megatron/sft.py`` is ``megatron sft``; it runs
#: torchrun itself with ``NPROC_PER_NODE`` processes: swift/cli/main.py), xtuner's ``xtuner
#: train CONFIG`` (``xtuner/tools/train.py``, same ``NPROC_PER_NODE``), axolotl's
#: ``axolotl.cli.train`` module under ``accelerate launch`` (its docs' multi-GPU form), oumi's
#: CLI (``oumi/cli/train.py`` is ``oumi train``; its docs' multi-GPU form runs it under
#: ``oumi distributed torchrun -m oumi train -c <config>``, one process per GPU: a bare ``oumi
#: train`` is one process that drives every GPU through nn.DataParallel).
FRAMEWORK_ENTRY: tuple[tuple[str, str, str], ...] = (
    ("/llamafactory/", "", "llamafactory-cli train <your config.yaml>"),
    ("/swift/cli/_megatron/", "", "NPROC_PER_NODE={n} megatron {module} <your arguments>"),
    ("/swift/cli/", "", "NPROC_PER_NODE={n} swift {module} <your arguments>"),
    ("/xtuner/tools/train.py", "", "NPROC_PER_NODE={n} xtuner train <your config>"),
    ("/axolotl/cli/", "", "accelerate launch -m axolotl.cli.{module} <your config.yml>"),
    ("/oumi/cli/", "", "oumi distributed torchrun -m oumi {module} -c <your config.yaml>"),
    ("/torchtitan/", "", "NGPU={n} CONFIG_FILE=<your config .toml> ./run_train.sh"),
    ("/openrlhf/cli/", "_ray", "python3 -m openrlhf.cli.{module} <your arguments>"),
    ("/openrlhf/cli/", "", "deepspeed --module openrlhf.cli.{module} <your arguments>"),
)


def framework_entry(paths: Iterable[str], per_node: int | None) -> str | None:
    """The command a framework of :data:`FRAMEWORK_ENTRY` starts its runs with, when one of
    ``paths`` (the traceback's frames, the log's lines) goes through its package directory
    (for a module entry: a ``.py`` file directly in it whose name ends in its suffix);
    ``None`` when none does. ``per_node`` fills the GPUs (else a ``<gpus>`` blank)."""
    for path in paths:
        p = "/" + path.replace("\\", "/").lstrip("/")
        for part, suffix, form in FRAMEWORK_ENTRY:
            at = p.find(part)
            if at < 0:
                continue
            module = None
            if "{module}" in form:
                m = re.match(r"(\w+)\.py\b", p[at + len(part) :])
                # (a CLI's dispatcher, ``main.py``/``__init__.py``, names no command)
                if m is None or not m[1].endswith(suffix) or m[1] in ("main", "__init__"):
                    continue
                module = m[1]
            n = str(per_node) if per_node else "<gpus>"
            return form.format(n=n, module=module)
    return None
