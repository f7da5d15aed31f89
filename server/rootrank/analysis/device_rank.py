"""The GPU index of an out-of-memory error as the rank, on one node (strategy ``device_rank``).

Mechanism: the usual single-node launch (torchrun ``--nproc-per-node``, Lightning Fabric,
accelerate) starts one process per GPU and process ``i`` uses ``cuda:i``; every process sees
every GPU of the node (the ordinal is relative to ``CUDA_VISIBLE_DEVICES`` when that is set
for the whole job), so the device ordinal in its CUDA error ("GPU 1 has a total capacity of
22.20 GiB") is its local rank, and on one node the local rank is the global rank (held-out
r21c case 04: Fabric ``MEMBER: 1/4`` on four A10G, OOM on "GPU 1" with no rank tag).

The reading is refused where it does not hold: several nodes (any sign of a second node or
host: the local rank is not the global rank), a world size the log does not state or above
one node's GPUs, a per-process device remap (``CUDA_VISIBLE_DEVICES`` in the kept lines or
the printed launch command: each process then may see only its own GPU, as ordinal 0), one
process driving every GPU (``nn.DataParallel`` frames, "replica N on device N"), and ordinal
0 (what every process reports when each sees one GPU only).

Facts come from the findings' captures (``device``/``device2`` of the cuda-oom signature),
:attr:`rootrank.scan.ScanState.launch` (nodes, hosts, the launch command), the world size a
line printed (:attr:`rootrank.scan.ScanState.world_size`), the kept tails and the tracebacks'
frames (:attr:`rootrank.scan.ScanState.exceptions`).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.model import Finding
from rootrank.scan import ScanState

#: Failure classes whose message names the device of the process that raised it.
CLASSES = ("cuda-oom",)

#: Captures holding that device's ordinal.
DEVICE_KEYS = ("device", "device2")

#: The most processes one node runs (GPUs per node) for a stated world size to be one node.
MAX_PER_NODE = 8

#: Frames of one process driving several GPUs (``nn.DataParallel``): its device is not a rank.
_ONE_PROCESS_FRAMES = ("torch/nn/parallel/data_parallel.py", "torch/nn/parallel/parallel_apply.py")

#: Text that shows a per-process or custom device mapping.
_REMAP_WORDS = ("CUDA_VISIBLE_DEVICES", "replica ", "device_map")


def _ordinals(group: Iterable[Finding]) -> set[int]:
    """The device ordinals the findings' messages name (every copy)."""
    return {
        int(v)
        for f in group
        for key in DEVICE_KEYS
        for v in [f.captures.get(key, "")]
        if v.isdigit()
    }


def one_node(state: ScanState) -> bool:
    """Whether nothing in the log shows a second node: no multi-node phrase or flag, at most
    one node count of 1, at most one host naming the ranks."""
    launch = state.launch
    if launch.multi_node or (launch.nnodes or 1) > 1 or launch.srun_agent_tasks:
        return False
    return len(set(state.hosts.values())) <= 1 and not state.label_hosts


def remapped(state: ScanState) -> bool:
    """Whether the kept lines or the launch command show devices mapped per process or by
    the script (:data:`_REMAP_WORDS`), or one process driving several GPUs
    (:data:`_ONE_PROCESS_FRAMES`)."""
    texts = [t for _, _, t in state.tails]
    texts += [c for c in (state.launch.launch_command, state.launch.command) if c]
    if any(w in t for t in texts for w in _REMAP_WORDS):
        return True
    return any(
        any(part in fr.file for part in _ONE_PROCESS_FRAMES)
        for s in state.exceptions
        for fr in s.exc.frames
    )


#: A vLLM tensor-parallel worker's own log prefix (vllm/executor/multiproc_worker_utils.py:
#: ``(VllmWorkerProcess pid=N)``; V1's ``(VllmWorker rank=N pid=M)``): the multiprocessing
#: executor starts one worker per GPU of the node besides the driver (rank 0, in the engine's
#: own process), worker ``i`` with local rank ``i`` on ``cuda:i``.
_ENGINE_WORKER_PREFIXES = ("(VllmWorkerProcess pid=", "(VllmWorker rank=")


def engine_worker(state: ScanState) -> bool:
    """Whether the kept lines are a vLLM tensor-parallel worker's own
    (:data:`_ENGINE_WORKER_PREFIXES`)."""
    return any(p in t for _, _, t in state.tails for p in _ENGINE_WORKER_PREFIXES)


def device_rank(state: ScanState, group: list[Finding], world: int | None) -> int | None:
    """The rank of the process whose error names its device: the one ordinal the group's
    messages name, when none of them carries a rank, ``world`` (the job's process count, as
    the log states it) is 2..:data:`MAX_PER_NODE`, the log shows one node and no device
    remap, and the ordinal is at least 1 and below ``world``. A vLLM tensor-parallel
    worker's error (:func:`engine_worker`) needs no stated ``world``: the worker exists
    only in a job of more GPUs than its ordinal, each worker on its own GPU, so an ordinal
    1..:data:`MAX_PER_NODE` - 1 is its rank (r23c case 11: "GPU 3" in a TP=4 worker's OOM).
    ``None`` otherwise."""
    if not group or any(f.rank is not None for f in group):
        return None
    if any(f.failure_class not in CLASSES for f in group):
        return None
    ordinals = _ordinals(group)
    if world is None and engine_worker(state):
        world = MAX_PER_NODE
    if len(ordinals) != 1 or world is None or not 2 <= world <= MAX_PER_NODE:
        return None
    ordinal = ordinals.pop()
    if not 1 <= ordinal < world or not one_node(state) or remapped(state):
        return None
    return ordinal
