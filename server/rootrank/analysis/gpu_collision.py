"""Which ranks NCCL found on one GPU, and what that pattern says about who chose the GPUs.

Mechanism: at communicator creation every rank compares its GPU's PCI bus id with those of
the ranks on the same host (NCCL init.cc: peers with its own ``hostHash``) and reports the
first (lowest-numbered) one that matches: ``Duplicate GPU detected : rank 9 and rank 1 both
on CUDA device 34000``. The pairs the log prints tell apart three causes:

- ``one-device``: rank 0 is the partner of two or more other ranks, all on one bus id: three
  or more processes of the host all use one GPU. Either the processes see only one GPU (the
  container started with one, ``CUDA_VISIBLE_DEVICES`` set to one device for the job) or
  none of them picks its own (no ``set_device``); a framework that picks the device from
  ``LOCAL_RANK`` itself (Megatron, DeepSpeed, verl, Accelerate) leaves only the first.
- ``node-stride``: the lower rank of a pair is not 0 and the two ranks stand a power of
  two (2, 4, 8, 16: a node's GPU count) apart, the lower one below that distance: rank i of
  the first node and rank i of the next one. Within one host each rank picks its own GPU
  (rank 0 has a device of its own), and NCCL compares bus ids only between ranks it believes
  share a host: two nodes it sees as one host (the same machine listed twice, containers
  cloned with one hostname or boot id, a node's two launchers on one machine).

The finding gets the captures ``collision`` (one of the names above) and ``collided`` (the
ranks, as the log pairs them); the fix variants of ``nccl-duplicate-gpu`` read them (``when:
captures``). Its signature, rank and lines stay as they were.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Finding
from rootrank.signatures import Library

#: The signature whose findings are read.
FROM_SIGNATURE = "nccl-duplicate-gpu"
#: NCCL init.cc's warning (NCCL 2.5 .. 2.29).
_PAIR = lazy_regex.compile(
    r"Duplicate GPU detected : rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device "
    r"(?P<busid>[0-9a-fA-F]+)"
)
#: Rank distances that are a node's GPU count.
NODE_SIZES = frozenset({2, 4, 8, 16})


def collision_kind(pairs: set[tuple[int, int, str]]) -> str | None:
    """``"one-device"``, ``"node-stride"`` or ``None`` for the ``(rank, rank, bus id)`` pairs
    NCCL printed (see the module docstring)."""
    ordered = {(min(a, b), max(a, b), bus.lower()) for a, b, bus in pairs}
    partners_of_0 = {hi for lo, hi, _bus in ordered if lo == 0}
    if (
        len(partners_of_0) >= 2
        and all(lo == 0 for lo, _hi, _bus in ordered)
        and len({bus for _lo, _hi, bus in ordered}) == 1
    ):
        return "one-device"
    for lo, hi, _bus in ordered:
        if lo > 0 and hi - lo in NODE_SIZES and lo < hi - lo:
            return "node-stride"
    return None


def gpu_collision_captures(findings: list[Finding], library: Library) -> list[Finding]:
    """``findings`` with each ``nccl-duplicate-gpu`` finding given ``collision`` and
    ``collided`` (see the module docstring) when the pairs of all of them show a pattern;
    unchanged otherwise."""
    sig = library.signatures.get(FROM_SIGNATURE)
    if sig is None:
        return findings
    pairs: set[tuple[int, int, str]] = set()
    for f in findings:
        if f.signature == FROM_SIGNATURE:
            for e in f.evidence:
                for m in _PAIR.finditer(e.text):
                    pairs.add((int(m["a"]), int(m["b"]), m["busid"]))
    kind = collision_kind(pairs) if pairs else None
    if kind is None:
        return findings
    collided = ", ".join(f"{a} and {b}" for a, b, _bus in sorted(pairs))
    return [
        f.recast(sig, {**f.captures, "collision": kind, "collided": collided})
        if f.signature == FROM_SIGNATURE
        else f
        for f in findings
    ]
