"""A hang at a step whose branch differed on one rank: the ranks ran different collectives.

Mechanism: a collective timeout that every rank reports alike (each rank's own collective
timed out: gloo's ``Timed out waiting ... for recv/send``, every watchdog) says only that no
collective completed. When the per-step line each rank prints (``step 3 n_images=0 sync
order=['text', 'vision']``) matched on every rank at the earlier steps and, at the step they
stopped at, one rank printed it otherwise (``n_images=2 sync order=['vision', 'text']``:
:func:`rootrank.analysis.oddline.odd_step_line`), that step's decision differed on that
rank: it entered other collectives, or the same ones in another order (two overlapping
subgroups synced in opposite orders deadlock: each side waits for a member that is in the
other collective). Nothing was slow: the ranks waited for collectives that could never
match, so the class is ``collective-desync``, and the fix is to make the sequence of
collectives independent of per-rank data, not a longer timeout.

Needed, all of: the root's class is ``collective-timeout`` and the initiator analysis chose
the rank by the ``odd_step_line`` strategy.
"""

from __future__ import annotations

from rootrank.analysis.initiator import Initiator
from rootrank.analysis.prepare import Context
from rootrank.model import Finding

#: The signature of the desync it becomes (``detector: analysis``).
BRANCH_SIGNATURE = "step-branch-divergence"
#: The initiator strategy whose verdict says the step's branch differed on one rank.
STRATEGY = "odd_step_line"
#: The class of the root it replaces.
FROM_CLASS = "collective-timeout"


def branch_desync_root(ctx: Context, root: Finding, initiator: Initiator) -> Finding | None:
    """A finding of :data:`BRANCH_SIGNATURE` in place of ``root`` (same rank and lines; its
    captures plus ``value``/``usual`` (the differing words), ``others`` (the other ranks) and
    ``why`` (the verdict's reason)) when the module's conditions hold, else ``None``."""
    if root.failure_class != FROM_CLASS or initiator.strategy != STRATEGY:
        return None
    sig = ctx.library.signatures.get(BRANCH_SIGNATURE)
    if sig is None:
        return None
    from rootrank.analysis.oddline import odd_step_line_parts

    found = odd_step_line_parts(ctx)
    if found is None:
        return None
    _, value, usual, others, _ = found
    captures = dict(root.captures)
    captures.update(
        value=value,
        usual=usual,
        others=", ".join(str(r) for r in others),
        why=initiator.why,
    )
    return root.recast(sig, captures)
