"""A log that stops at a report that a peer went away: the job died there, on the peer's side.

Mechanism: a process that reports a lost peer (NCCL's ``socketProgress: Connection closed by
remote peer <host><port>``, a reset connection, the store's host gone) is still alive when it
prints it; if the job had survived it, the log would go on (the next step, a retry, the
run's end, or at least the process's own exception when the next collective fails). A log
whose last line is that report -- nothing after it, no run's end anywhere, no exception, no
error of its own -- was cut when the job died at that moment: the launcher on the other side
tore the job down (or its node went away) and this side was killed before it printed more.
Typical of one node's log of a multi-node job (each node writes its own file; the failing
node's is not in the paste). The failure is real, the class is the lost peer's transport
(the signature's class: ``nccl-system-error`` for NCCL's socket), and the cause is on the
named peer: this log cannot tell which rank started it (rank ``None``).

Needed, all of: one source; no error finding, no exception, no cut traceback, no failed
launcher exit, no run's end; the source's last non-blank line is the evidence of a warning
finding whose signature reports a lost peer (tag :data:`PEER_TAG`) and that names the remote
peer (a ``peer`` capture: a local rank's exit is its rank's to read). The finding is of
:data:`SIGNATURE`, with the peer's captures (``peer``: the host NCCL names) and ``what``
(the lost-peer report's title).
"""

from __future__ import annotations

from rootrank.analysis.prepare import finding_at
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (``detector: analysis``).
SIGNATURE = "log-ends-at-lost-peer"
#: The tag of the signatures whose line reports that a peer went away.
PEER_TAG = "peer-exit"


def _last_line(state: ScanState, path: str) -> int | None:
    """The 1-based number of ``path``'s last non-blank line from its kept tail
    (``ScanState.tails``), or ``None`` when the scan kept no tail of it."""
    for source, first, text in state.tails:
        if source != path:
            continue
        lines = text.split("\n")
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip():
                return first + i
    return None


def lost_peer_at_end(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``[finding]`` of :data:`SIGNATURE` when the log stops at a lost-peer report (the
    module's docstring gives the mechanism and what is needed), else ``[]``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None or len(state.sources) != 1:
        return []
    if (
        state.exceptions
        or state.traceback_cut
        or state.run_ended
        or any(f.severity == "error" for f in findings)
        or any(e.exitcode not in (None, 0) for e in state.elastic)
    ):
        return []
    path = state.sources[0]
    last = _last_line(state, path)
    if last is None:
        return []
    for f in findings:
        peer_sig = library.signatures.get(f.signature)
        if peer_sig is None or PEER_TAG not in (getattr(peer_sig, "tags", ()) or ()):
            continue
        ev = [e for e in f.evidence if e.path == path and e.line == last]
        if not ev or not f.captures.get("peer"):
            continue  # a local rank's exit ("closed by localRank 3") is read by its rank
        e = ev[0]
        return [
            finding_at(
                sig,
                Evidence(path=e.path, line=e.line, text=e.text, rank=None),
                {
                    **f.captures,
                    # NCCL writes the peer as host<port>: the host is whose log to read
                    "peer": (f.captures.get("peer") or "").split("<", 1)[0] or "the peer",
                    "what": peer_sig.title,
                },
                rank=None,
                order=f.order,
                host=f.host,
                time=f.time,
            )
        ]
    return []
