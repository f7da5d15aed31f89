"""The launcher's record of the one worker that failed by itself, read as the first failure.

torchrun's agent polls its workers and logs every worker it finds failed at that poll
(``failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: ...``,
torch/distributed/elastic/multiprocessing/api.py, ``PContext._poll``), then stops the rest
with SIGTERM; its summary's "Root Cause (first observed failure)" is the earliest of them
(errors/__init__.py, ``ChildFailedError.get_first_failure``). srun and mp.spawn report the
first worker to exit the same way. When the log's launcher records name exactly one worker
that exited by itself, and that worker's traceback is the only one in the log, the two
independent sources agree: that rank failed first, even for an error of the set-up every
rank runs (the others were still unwinding or were stopped before they printed it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootrank.analysis.events import launcher_exits

if TYPE_CHECKING:
    from rootrank.analysis.initiator import Case


def sole_launcher_failure(case: Case, rank: int) -> int | None:
    """The exit code the launcher reports for ``rank`` when its records (exit lines and
    torchelastic's summary entries, :func:`~rootrank.analysis.events.launcher_exits`) name
    ``rank`` and no other worker as exiting by itself with a real exit code, and the log
    shows no other rank's output; else ``None``. A root from an earlier attempt is not
    compared: the launcher lines kept describe the last attempt."""
    ctx = case.ctx
    if ctx.from_earlier_attempt(case.root) or ctx.state.ranks_seen - {rank}:
        return None
    exits = launcher_exits(ctx.events)
    if set(exits) != {rank}:
        return None
    return exits[rank]
