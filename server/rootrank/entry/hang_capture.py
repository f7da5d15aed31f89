"""What to run to see where every rank is while a job hangs, for the launcher the log shows.

A hang whose log does not name the rank at fault (every reporter waits in the same
collective, the stuck rank printed nothing) is decided by one look at each rank's Python
stack: the rank that is *not* inside the collective the others wait in is the one they wait
for, and its stack shows why (data loading, a save, an evaluation, a branch); all ranks inside
the same NCCL kernel means the link stalled. :func:`rank_stacks` gives that look as one
command for the job's own launcher, filled into a fix as ``{rank_stacks}``:

- Ray: ``ray stack`` on each node (the Ray CLI dumps every Ray worker's Python stack with
  py-spy; https://docs.ray.io/en/latest/ray-observability/user-guides/debug-apps/debug-hangs.html);
- Slurm (``srun`` in the log): one step per node beside the hung one, ``srun --overlap``
  (Slurm 20.11+: a step that shares the allocation's resources with the running step), that
  dumps the node's training processes with ``py-spy dump --pid``;
- Kubernetes: ``kubectl exec`` into each pod of the job;
- several nodes otherwise: the same loop on every node;
- one node: rootrank's own ``rootrank run --on-stall dump -- <command>`` (docs/live.md: it
  dumps every process of the job with py-spy when progress stops and names the rank that is not
  in a collective) for the next run, or the loop now, while it hangs.

The processes are found with ``pgrep -f`` on the entry script or module the log names (the
launcher's own process matches too; its stack is harmless to print).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.entry.commands import Launch

#: The py-spy loop over one node's processes whose command line holds ``{pattern}``.
_LOOP = "for p in $(pgrep -f {pattern}); do py-spy dump --pid $p; done"


def _pattern(launch: Launch, module: str | None) -> str:
    """What ``pgrep -f`` looks for: the entry script's file name, else the ``-m`` module,
    else ``<your script>``."""
    script = (launch.script or "").strip()
    if script.startswith("-m "):  # a ``-m pkg.mod`` launch: the module is what pgrep finds
        return script[3:].strip() or "<your script>"
    if script:
        return script.replace("\\", "/").rsplit("/", 1)[-1]
    if module:
        return module
    return "<your script>"


def rank_stacks(
    launch: Launch,
    launchers: Iterable[str],
    stacks: Iterable[str],
    module: str | None = None,
) -> str:
    """The sentence (with its command in backticks) that dumps every rank's Python stack of
    this job while it hangs, chosen by what the log shows: ``launchers`` (every launcher the
    log shows signs of), ``stacks`` (:data:`rootrank.frameworks.STACK_NAMES` seen), the
    :class:`Launch` (its launcher, script, printed command, node count) and the ``-m``
    ``module`` when no script is named. Never raises; text only."""
    shown = set(launchers) | ({launch.launcher} if launch.launcher else set())
    seen = set(stacks)
    loop = _LOOP.format(pattern=_pattern(launch, module))
    if "ray" in shown or "ray-train" in seen:
        return "`ray stack` on every node of the Ray cluster while it hangs (it dumps each Ray worker's Python stack with py-spy)"
    if "srun" in shown:
        return (
            "while it hangs, from the allocation: `srun --overlap --jobid=$SLURM_JOB_ID "
            f"--ntasks-per-node=1 bash -c '{loop}'` (one dump per process on every node)"
        )
    if "kubernetes" in seen:
        return f"while it hangs, for every pod of the job: `kubectl exec <pod> -- sh -c '{loop}'`"
    if launch.multi_node:
        return f"while it hangs, on every node: `{loop}`"
    command = launch.command or launch.entry or None
    if command is None and launch.launcher == "torchrun" and launch.script:
        command = f"torchrun --nproc-per-node=<gpus> {launch.script}"
    if command is None and launch.launcher == "deepspeed" and launch.script:
        command = f"deepspeed --num_gpus <gpus> {launch.script}"
    rerun = f"`rootrank run --on-stall dump -- {command or '<your launch command>'}`"
    return (
        f"while it hangs: `{loop}`; or launch the next run under {rerun}, which dumps every "
        "rank's stack when progress stops and names the rank that is not in a collective"
    )
