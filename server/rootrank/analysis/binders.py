"""Several processes of one launch failing to host the rendezvous store: each took rank 0.

Mechanism: with ``init_method="env://"`` and no torchrun agent store (DeepSpeed's per-node
launcher, a hand-written launcher, mpirun), ``init_process_group`` creates the TCPStore
server in the process whose rank is 0 and every other rank connects to it
(torch/distributed/rendezvous.py ``_env_rendezvous_handler`` -> ``_create_c10d_store``,
``is_server = rank == 0``). So one process of a job at most binds MASTER_PORT. When two or
more processes of one launch fail to bind it there (EADDRINUSE), each of them believed it
was rank 0: the script does not read the rank the launcher exported (RANK, LOCAL_RANK,
WORLD_SIZE: torchrun and DeepSpeed's launcher set them) but another launcher's variables
with a default of 0 (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK) or a fixed rank. The
first of them binds and runs alone; any other port fails the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank import lazy_regex
from rootrank.scan import SeenException

#: Frames of a worker's env:// (or tcp://) rendezvous in torch/distributed/rendezvous.py, where
#: ``is_server = rank == 0`` (not torchrun's agent, whose store is its own). The store's own
#: ``_create_c10d_store`` counts alone: two processes' tracebacks printed at once interleave,
#: and a copy may keep only its innermost frames.
RENDEZVOUS_FRAMES = frozenset(
    {"_env_rendezvous_handler", "_tcp_rendezvous_handler", "_create_c10d_store"}
)
#: The bind failure, in c10d's words across versions (EADDRINUSE, errno 98/48, Windows 10048).
BIND_FAILED = lazy_regex.compile(
    r"EADDRINUSE|Address already in use|errno: (?:98|48)\b|system error: 10048\b"
)


def store_binders(exceptions: Iterable[SeenException]) -> int:
    """How many processes failed to bind the rendezvous port in a worker's env:// rendezvous
    (a frame of :data:`RENDEZVOUS_FRAMES` in the traceback, :data:`BIND_FAILED` in the message):
    separate tracebacks (each exception line once; a chained copy or an ignored one is not
    counted), one per process that tried to host the store."""
    found = {
        (seen.path, seen.exc.log_line)
        for seen in exceptions
        if seen.exc.chain_index == 0
        and not seen.exc.ignored
        and any(fr.func in RENDEZVOUS_FRAMES for fr in seen.exc.frames)
        and BIND_FAILED.search(seen.exc.message)
    }
    return len(found)
