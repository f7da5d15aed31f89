"""The holder of a shared lock, not its waiter, starts a lock-wait failure (strategy ``lock_holder``).

Mechanism: a shared file or database admits one writer at a time (a SQLite write transaction
until COMMIT, a ``filelock``/``flock`` lock until released). A rank that takes it around long
work makes every other writer wait; a waiter whose timeout runs out raises ("database is
locked", filelock's ``Timeout``: the ``shared-lock-busy`` signature), its process ends, and the launcher stops the rest, the holder
among them, still inside the lock and with no error of its own. The raiser is the waiter; the
holder is where the failure starts.

The log shows the holder when exactly one rank it names is neither a waiter nor a rank with a
traceback of its own (a rank that died of a peer's loss printed one), and that rank's end was
the launcher's stop (torchelastic's summary gives it a signal, or no exit at all): it was
still working when the others gave up. Its last own line, quoted by the fix, is where it was
(the locked work). Otherwise the verdict is left to the other strategies (the waiter, or no
rank).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rootrank.analysis.reasons import format_ranks, say

if TYPE_CHECKING:
    from rootrank.analysis.initiator import Case, Verdict

#: The waiter's signature (signatures/io/shared-lock-busy.yaml).
LOCK_SIGNATURE = "shared-lock-busy"


def lock_holder(case: Case) -> Verdict | None:
    """The one silent, still-working rank of a lock-wait failure (the module's docstring), or
    ``None``. From the scan state: the ranks seen, the exceptions kept, torchelastic's
    summary entries."""
    from rootrank.analysis.initiator import Verdict

    if case.root.signature != LOCK_SIGNATURE:
        return None
    st = case.ctx.state
    waiters = set(case.ranks_with) | ({case.root.rank} if case.root.rank is not None else set())
    if not waiters:
        return None
    erred = {x.rank for x in st.exceptions if x.rank is not None and not x.exc.ignored}
    seen = {r for r in st.ranks_seen if r is not None} | {
        e.rank for e in st.elastic if e.rank is not None
    }
    silent = sorted(seen - erred - waiters)
    if len(silent) != 1:
        return None
    holder = silent[0]
    if any(e.rank == holder and e.exitcode is not None and e.exitcode >= 0 for e in st.elastic):
        return None  # it exited by itself (0: it finished; >0: its own failure elsewhere)
    return Verdict(
        holder,
        say("lock_holder", rank=holder, waiters=format_ranks(sorted(waiters))),
        "lock_holder",
        (holder, *sorted(waiters)),
    )
