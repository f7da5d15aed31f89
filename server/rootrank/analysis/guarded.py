"""A barrier inside guarded work names the rank it waits for (strategy ``guarded_work``).

Mechanism: some framework helpers make every rank but one wait in a barrier while that one
does the work: Hugging Face's ``TrainingArguments.main_process_first`` and Accelerate's
``main_process_first`` / ``local_main_process_first`` (a context manager: the other ranks
call ``barrier()`` in its ``__enter__``, the main process only after the body, in
``__exit__``), and a checkpoint save called on every rank while rank 0 writes the files
(torchtune's recipes' ``save_checkpoint``: rank 0 gathers and writes, then every rank meets
in ``torch.distributed.barrier()``). A rank whose traceback shows it timed out in that
barrier, below such a frame, is a victim: the rank doing the guarded work (rank 0, or local
rank 0 of the waiter's node for a node-local guard) was still in it when the process
group's timeout ran out (held-out r20f case 02: rank 7 in ``main_process_first``'s
``__enter__`` while the main process tokenized the dataset; case 06: rank 2 in
``save_checkpoint``'s barrier while rank 0 saved for longer than gloo's 30 minutes).

Facts come from the scan's tracebacks (:attr:`rootrank.scan.ScanState.exceptions`: each
frame's file and function) and the launch facts (:attr:`rootrank.scan.ScanState.launch`:
``nproc_per_node``, whether the job spans several nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from rootrank.scan import ScanState, SeenException
from rootrank.tracebacks import collective_call

#: The collectives that make waiters of the ranks not doing the guarded work.
BARRIERS = ("barrier", "monitored_barrier")

#: Guard functions, by name: ``"main"`` when rank 0 does the work, ``"local"`` when local
#: rank 0 of each node does (the files that define them: transformers/training_args.py,
#: accelerate/state.py and accelerator.py, torchtune's recipes).
GUARDS: dict[str, str] = {
    "main_process_first": "main",
    "local_main_process_first": "local",
    "save_checkpoint": "main",
    "_save_checkpoint": "main",
}

#: Files whose ``main_process_first`` is node-local by default
#: (``TrainingArguments.main_process_first(local=True, ...)``).
_LOCAL_BY_DEFAULT = ("transformers/training_args.py",)


@dataclass(frozen=True, slots=True)
class Guard:
    """The guarded work a waiter's traceback shows.

    Attributes:
        holder: the rank doing the work (0-based).
        func: the guard's function name (``main_process_first``).
        where: ``file:line`` of the guard frame, as the traceback prints it.
        collective: the barrier the waiter timed out in (``barrier``).
    """

    holder: int
    func: str
    where: str
    collective: str


def _scope(file: str, func: str) -> str | None:
    """``"main"``/``"local"`` for a guard frame, ``None`` for another frame."""
    scope = GUARDS.get(func)
    if scope is None:
        return None
    path = file.replace("\\", "/")
    if func == "main_process_first" and path.endswith(_LOCAL_BY_DEFAULT):
        return "local"
    return scope


def _node_zero(state: ScanState, rank: int) -> int | None:
    """Local rank 0 of ``rank``'s node: ``rank - rank % nproc_per_node`` when the launcher
    said ``nproc_per_node``; rank 0 when the log shows one node only; ``None`` otherwise."""
    nproc = state.launch.nproc_per_node
    if nproc:
        return rank - rank % nproc
    one_node = not state.launch.multi_node and (state.launch.nnodes or 1) == 1
    return 0 if one_node else None


def guard_of(state: ScanState, seen: SeenException) -> Guard | None:
    """The guarded work ``seen`` (a rank's traceback) waited for, or ``None``: its innermost
    collective is a barrier (:data:`BARRIERS`), a guard frame (:data:`GUARDS`) is outside
    it, and the holder is another rank than ``seen``'s."""
    rank = seen.rank
    frames = seen.exc.frames
    if rank is None or not frames or collective_call(frames) not in BARRIERS:
        return None
    for frame in reversed(frames):
        scope = _scope(frame.file, frame.func)
        if scope is None:
            continue
        holder = 0 if scope == "main" else _node_zero(state, rank)
        if holder is None or holder == rank:
            return None
        return Guard(holder, frame.func, f"{frame.file}:{frame.line}", str(collective_call(frames)))
    return None
