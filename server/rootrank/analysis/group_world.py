"""The size of the process group a timed-out collective ran in, read from its shape.

Mechanism: the watchdog's ``WorkNCCL(OpType=_ALLGATHER_BASE, NumelIn=a, NumelOut=b)`` names a
collective into one tensor: an all-gather's output holds one input per member (size = b / a),
a reduce-scatter's input one output per member (size = a / b). When the same rank's PG status
line for that work (``[PG ID 0 PG GUID 0(default_pg) Rank 1] Timeout at NCCL work: 5919``)
puts it in the default group, that group is the whole job: its ranks are ``0 .. size - 1``,
so the members that did not report the timeout are known even when the paste shows none of
their lines (held-out r22c case 07: a two-rank job, only rank 1's report, rank 0 the one that
never entered the all-gather).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.model import Finding

#: Collectives into one tensor whose output holds one input per member.
GATHERS = frozenset({"ALLGATHER", "_ALLGATHER_BASE", "ALLGATHER_COALESCED"})
#: Collectives whose input holds one output per member.
SCATTERS = frozenset({"REDUCE_SCATTER", "_REDUCE_SCATTER_BASE", "REDUCE_SCATTER_COALESCED"})


def shape_group_size(captures: dict[str, str]) -> int | None:
    """The group size a collective's ``optype``, ``numel`` (NumelIn) and ``numel_out``
    (NumelOut) captures imply (see the module docstring), or ``None`` when they are missing,
    not positive integers, of another collective, or not a whole multiple."""
    op = captures.get("optype", "")
    try:
        n_in, n_out = int(captures.get("numel", "")), int(captures.get("numel_out", ""))
    except ValueError:
        return None
    if n_in <= 0 or n_out <= 0:
        return None
    if op in GATHERS and n_out % n_in == 0:
        return n_out // n_in
    if op in SCATTERS and n_in % n_out == 0:
        return n_in // n_out
    return None


def default_group_world(root: Finding, findings: Iterable[Finding]) -> int | None:
    """The job's world size when ``root``'s collective (its ``seqnum`` capture) ran in the
    default process group: the size its shape implies (:func:`shape_group_size`, two at
    least), when ``root`` itself or a finding of the same rank reporting the same work
    (``timeout_work`` equal to the sequence number) captured ``pg`` ``0``. ``None`` otherwise
    (the group is unknown: a subgroup's all-gather says nothing of the world)."""
    size = shape_group_size(root.captures)
    seq = root.captures.get("seqnum", "")
    if size is None or size < 2 or root.rank is None or not seq:
        return None
    if root.captures.get("pg") == "0":
        return size
    for f in findings:
        caps = f.captures
        if f.rank == root.rank and caps.get("pg") == "0" and caps.get("timeout_work") == seq:
            return size
    return None
