"""Launch a scenario script with ``torch.multiprocessing.spawn`` instead of torchrun.

``python scenarios/spawn_launch.py bad_data_raise --nproc 3 --port 41234 -- --fault-rank 1``
starts ``--nproc`` processes with ``mp.spawn`` (the ``spawn`` start method, ``join=True``); each
sets the variables ``init_process_group("gloo", init_method="env://")`` reads (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK`` = its process index, ``MASTER_ADDR=127.0.0.1``,
``MASTER_PORT=--port``) and runs the scenario's ``main()`` with the arguments after ``--``.

When a process raises, ``mp.spawn`` stops the others (SIGTERM) and re-raises in the parent as
``torch.multiprocessing.spawn.ProcessRaisedException`` ("-- Process N terminated with the
following error:" and the child's traceback); the parent exits 1. A process killed by a
signal gives ``ProcessExitedException`` ("process N terminated with signal SIGKILL").
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import torch.multiprocessing as mp

HERE = Path(__file__).resolve().parent


def _worker(index: int, name: str, nproc: int, port: int, argv: list[str]) -> None:
    """Process ``index`` (0-based, = global rank): set the env:// variables, run ``name``'s main."""
    os.environ.update(
        RANK=str(index),
        WORLD_SIZE=str(nproc),
        LOCAL_RANK=str(index),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    sys.path.insert(0, str(HERE))
    sys.argv = [str(HERE / f"{name}.py"), *argv]
    importlib.import_module(name).main()


def main() -> None:
    """Parse the command line (see the module docstring) and spawn; exits 1 when a process fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="scenario script stem, e.g. bad_data_raise")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--port", type=int, required=True, help="MASTER_PORT for the group")
    ns, rest = parser.parse_known_args()
    argv = [a for a in rest if a != "--"]
    mp.spawn(_worker, args=(ns.name, ns.nproc, ns.port, argv), nprocs=ns.nproc, join=True)


if __name__ == "__main__":
    main()
