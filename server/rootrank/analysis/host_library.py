"""A failure to load a shared library, which every rank of a host shares.

NCCL loads driver libraries at communicator set-up (``src/misc/nvmlwrap.cc``,
``ibvwrap.cc``, ``cudawrap.cc``: ``dlopen``) and, when one cannot be opened, fails the call
with ``ncclSystemError`` and puts ``Failed to open libnvidia-ml.so.1`` under PyTorch's "Last
error:" (the signature ``nccl-unhandled-system-error`` captures it as ``library``). Whether a
library can be loaded is a property of the host or the container (its driver install, its
runtime's mounts, ``LD_LIBRARY_PATH``), the same for every process on it: the rank whose copy
the log kept is the first to report, not the rank where it began (heldout r23c case 09: rank
1's copy, rank 0 only warned at exit that its group was never destroyed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rootrank.analysis.initiator import Case

#: The capture a signature gives the shared library a process could not load.
LIBRARY_CAPTURE = "library"


def unloadable_library(case: Case) -> str | None:
    """The file name of the shared library the root could not load (its ``library``
    capture, e.g. ``libnvidia-ml.so.1``), or ``None`` when the root names none."""
    value = case.root.captures.get(LIBRARY_CAPTURE, "").strip()
    return value or None
