"""A setting the failure names, printed with another value on the failing rank: a per-node
environment mismatch.

Mechanism: the ranks of one job run one program, so a transport setting read from the
environment (``GLOO_SOCKET_IFNAME``, ``NCCL_SOCKET_IFNAME``, ``NCCL_IB_HCA``, ...) has one value
on every rank unless a node's own shell set it (a profile or env file sourced on one node
only, a container image of another cluster). When the root's own signature names such a
variable (in its title, fix or verify) and the ranks printed ``NAME=value`` before the
failure with a value on the failing rank that no rank of another value shares, the setting
is not wrong everywhere: it differs between nodes, and the failing rank's node is the one
that differs (class ``rank-environment-mismatch``). The fix is to give every node the same
environment (remove the stray setting from that node), and the check runs without the
value found wrong, never setting it again.

Needed, all of: the root's signature names the variable (:data:`_VAR`); at least two ranks
printed it (:data:`_PRINTED`: a line naming its rank and ``NAME=value``), with two values at
least; the failing rank (the initiator's, else the root's) printed a value other ranks did
not. With no failing rank known, the value the root's own error names (a capture: the
interface gloo could not find) marks the failing ranks when exactly one printed value is
one. The initiating rank is left as the initiator found it. Read from ``state.heads`` (each source's
first lines), the first value each rank printed.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.initiator import Initiator
from rootrank.analysis.prepare import Context
from rootrank.model import Evidence, Finding

#: The signature the root becomes (class rank-environment-mismatch, ``detector: analysis``).
MISMATCH_SIGNATURE = "per-node-environment-mismatch"
#: An environment variable's name as the signatures write it (``GLOO_SOCKET_IFNAME``).
_VAR = lazy_regex.compile(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b")
#: A printed line that names its rank and a setting's value: ``rank 2 NAME=ib0``,
#: ``[setup] rank=3 ... NAME=eth1``, ``[rank1]: NAME: <unset>``.
_PRINTED = lazy_regex.compile(
    r"(?i)\brank[\s=:#\]]{0,3}(?P<rank>\d{1,5})\b.{0,200}?\b(?P<name>[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+)"
    r"\s?[=:]\s?(?P<value>\S{1,80})"
)
#: Characters of a printed line quoted as evidence.
_QUOTE = 200


def _named_vars(sig: object) -> set[str]:
    """The environment variable names the signature ``sig`` writes in its title, fix or verify."""
    text = " ".join(str(getattr(sig, field, "")) for field in ("title", "fix", "verify", "entry"))
    return set(_VAR.findall(text))


def _printed_values(ctx: Context, names: set[str]) -> dict[str, dict[int, tuple[str, Evidence]]]:
    """For each name of ``names``: each rank's first printed value and its line."""
    out: dict[str, dict[int, tuple[str, Evidence]]] = {}
    for path, first, text in ctx.state.heads:
        for number, line in enumerate(text.split("\n"), first):
            if "=" not in line and ":" not in line:
                continue
            for m in _PRINTED.finditer(line):
                name = m["name"]
                if name not in names:
                    continue
                value = m["value"].strip("'\",;")
                ev = Evidence(path, number, line[:_QUOTE], int(m["rank"]))
                out.setdefault(name, {}).setdefault(int(m["rank"]), (value, ev))
    return out


def env_mismatch_root(ctx: Context, root: Finding, initiator: Initiator) -> Finding | None:
    """A finding of :data:`MISMATCH_SIGNATURE` in place of ``root`` (its lines, the printed
    lines of both values added) when the module's conditions hold, else ``None``. Captures
    ``env_name``, ``env_value`` (the failing rank's), ``env_other`` (the other ranks'),
    ``env_ranks`` (``rank 2`` / ``ranks 2, 3``: those that printed the failing rank's value) and the root's own."""
    sig = ctx.library.signatures.get(MISMATCH_SIGNATURE)
    from_sig = ctx.library.signatures.get(root.signature)
    rank = initiator.rank if initiator.rank is not None else root.rank
    if sig is None or from_sig is None or root.signature == MISMATCH_SIGNATURE:
        return None
    names = _named_vars(from_sig)
    if not names:
        return None
    captured = {v for v in root.captures.values() if v}
    for name, per_rank in sorted(_printed_values(ctx, names).items()):
        if len(per_rank) < 2:
            continue
        if rank is not None and rank in per_rank:
            odd = per_rank[rank][0]
        else:
            # no rank named: the failing ranks are those that printed the value the error
            # itself names (the interface gloo could not find)
            named = {v for v, _ in per_rank.values()} & captured
            if rank is not None or len(named) != 1:
                continue
            odd = named.pop()
        same = sorted(r for r, (v, _) in per_rank.items() if v == odd)
        others = sorted({v for v, _ in per_rank.values() if v != odd})
        if not others:
            continue
        other_rank = next(r for r, (v, _) in sorted(per_rank.items()) if v != odd)
        captures = {
            **root.captures,
            "env_name": name,
            "env_value": odd,
            "env_other": " / ".join(others),
            "env_ranks": ("rank " if len(same) == 1 else "ranks ")
            + ", ".join(str(r) for r in same),
        }
        new = root.recast(sig, captures)
        for r in (same[0], other_rank):
            ev = per_rank[r][1]
            if all((e.path, e.line) != (ev.path, ev.line) for e in new.evidence):
                new.evidence.append(ev)
        return new
    return None
