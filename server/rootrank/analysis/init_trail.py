"""A socket-layer return-code trail that reaches init.cc is communicator set-up failing.

Mechanism: NCCL's NCCLCHECK logs ``file.cc:line -> code`` at INFO for every caller an error
passes on its way out (src/include/checks.h), so one failing call prints a trail: the
innermost line names the layer that failed (``misc/socket.cc``, ``transport/net_socket.cc``:
``nccl-socket-return-code``), the outer ones the phase it failed in. When the same source
holds a trail through ``init.cc`` (``nccl-init-return-code``) on the same rank, the socket
error happened while ncclCommInitRank set the communicator up, and the init entry (its
set-up fixes: interface, devices, versions) reads the whole trail; the socket finding is the
same fault's inner line and is dropped. Without an init.cc line (a communicator that worked
and then lost a connection mid-run) the socket trail stays the first error.
"""

from __future__ import annotations

from rootrank.model import Finding

#: The socket-layer trail (signatures/network/nccl-socket-return-code.yaml).
SOCKET_TRAIL = "nccl-socket-return-code"
#: The communicator set-up trail (signatures/nccl/nccl-init-return-code.yaml).
INIT_TRAIL = "nccl-init-return-code"


def init_phase_trails(findings: list[Finding]) -> list[Finding]:
    """``findings`` without the socket-trail findings whose source and rank also hold an
    init.cc trail (the order of the rest is kept)."""
    inits = {
        (f.evidence[0].path, f.rank) for f in findings if f.signature == INIT_TRAIL and f.evidence
    }
    if not inits:
        return findings
    return [
        f
        for f in findings
        if not (
            f.signature == SOCKET_TRAIL and f.evidence and (f.evidence[0].path, f.rank) in inits
        )
    ]
