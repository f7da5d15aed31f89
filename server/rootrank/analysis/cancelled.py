"""A Slurm cancellation that no task caused: the job was stopped from outside.

slurmstepd prints ``*** STEP 4242.0 ON node01 CANCELLED AT <when> ***`` in two situations:
srun tearing a step down after one of its tasks failed (``--kill-on-bad-exit``: the task's
error comes first, and the cancellation is only the teardown), and ``scancel`` by a person or
a script (Slurm prints no ``DUE TO`` reason and, in many versions, no ``by <user>`` either).
When the log shows no task failing before it -- no error finding other than the teardown's own
lines, no Python exception, no worker that exited non-zero by itself -- the cancellation is
the second kind: the job was stopped while it ran, which is ``preemption-sigterm``
(:func:`cancelled_finding`). Since Slurm 25.05 slurmstepd names the reason itself
(src/slurmd/slurmstepd/req.c, ``_handle_signal_container``): ``DUE TO TASK FAILURE`` is the
teardown (never read as from outside), ``DUE to SIGNAL Terminated`` (or ``Killed``) a signal
sent to the job -- scancel or an administrator -- read as from outside under the same test.
A warning the run stepped past (a progress line after its first occurrence, as DeepSpeed's
``allocator cache flushes`` every step) failed no task either.
"""

from __future__ import annotations

from rootrank.analysis.prepare import Context, finding_at
from rootrank.model import Finding

#: slurmstepd's plain cancellation line (``slurm-step-cancelled``: a symptom by default).
CANCEL_SIGNATURE = "slurm-step-cancelled"
#: What a cancellation from outside is (``CANCELLED AT ... by <user>`` / ``DUE TO PREEMPTION``).
OUTSIDE_SIGNATURE = "slurm-preemption"
#: The ``reason`` capture of a plain cancellation read as from outside: Slurm printed no
#: ``DUE TO`` reason (preemption, time limit, node failure print theirs), so a scancel
#: stopped the job (the signature's ``scancel-by-person`` fix variant).
NO_REASON = "none printed"
#: The ``reason`` capture of the teardown's own wording (Slurm 25.05+), compared lower-case.
TASK_FAILURE = "due to task failure"
#: The lines a step's teardown prints itself, whatever started it: srun's abort notice,
#: the cancellation, a torchrun agent or launcher told to stop. They are no failed task.
TEARDOWN = frozenset(
    {
        CANCEL_SIGNATURE,
        "srun-step-aborted",
        "agent-received-signal",
        "agent-sigterm-to-workers",
        "deepspeed-launcher-received-signal",
    }
)


def cancelled_finding(ctx: Context) -> Finding | None:
    """A finding of :data:`OUTSIDE_SIGNATURE` on the first plain cancellation line when
    nothing before or around it shows a task failing: every error finding is one of the
    :data:`TEARDOWN` lines, the scan saw no Python exception and no cut traceback, and no
    worker exited with a positive code (a negative code is a signal, as the cancellation
    sends). ``None`` otherwise (then the failing task explains the cancellation)."""
    if CANCEL_SIGNATURE not in ctx.library.signatures:
        return None
    if OUTSIDE_SIGNATURE not in ctx.library.signatures:
        return None
    cancels = [
        f
        for f in ctx.findings
        if f.signature == CANCEL_SIGNATURE
        and (f.captures.get("reason") or "").lower() != TASK_FAILURE
    ]
    if not cancels:
        return None
    st = ctx.state
    if st.exceptions or st.traceback_cut or st.cut_traceback_ranks:
        return None
    if any(e.exitcode is not None and e.exitcode > 0 for e in st.elastic):
        return None
    if any(
        f.signature not in TEARDOWN
        and (f.severity == "error" or f.role == "cause")
        and not stepped_past(ctx, f)
        for f in ctx.findings
    ):
        return None
    first = min(cancels, key=lambda f: f.order)
    return finding_at(
        ctx.library.signatures[OUTSIDE_SIGNATURE],
        first,
        {**first.captures, "reason": first.captures.get("reason") or NO_REASON},
        rank=None,
        order=max(0, first.order - 1),
        host=first.host,
        time=first.time,
    )


def stepped_past(ctx: Context, f: Finding) -> bool:
    """Whether ``f`` is a warning the run went on training after: some rank's last progress
    line (:meth:`rootrank.progress.ProgressModel.last`) is in the same file, after the line of
    its first evidence. An error finding never is (the survived-exception analysis decides
    those); a finding with no evidence line is not."""
    if f.severity == "error" or not f.evidence:
        return False
    first = f.evidence[0]
    return any(
        p.path == first.path and p.line > first.line for p in ctx.state.progress.last().values()
    )
