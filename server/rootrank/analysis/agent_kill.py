"""The launcher's own death signal, sent from inside the job by a rank that was killing processes.

torchrun's agent logs ``Received 15 death signal, shutting down workers`` (or raises
``SignalException: Process P got signal: 15``) when something signals the agent itself, and
that is read as a stop from outside (``agent-received-signal``: a scheduler, a person, a closed
terminal). One more sender is inside the job: a rank that kills processes by a pattern or a
group (``pkill -f <path>``, ``killall python``, ``kill 0``, ``os.killpg``) whose pattern also
matches the agent's command line (``pkill -f`` reads the whole command line, and a scratch
path, a cache directory or a script name passed to torchrun is in the agent's and every
worker's). The agent then dies of that rank's kill, right after that rank printed that it was
killing or cleaning up processes, with no scheduler line around.

So when the agent's signal is SIGTERM, SIGKILL, SIGINT or SIGQUIT and exactly one rank's last
own line before the agent's line (its launcher prefix or its own ``rank N`` tag,
:func:`rootrank.analysis.own_kill._last_line`), within :data:`MAX_GAP` lines of it, says it
was stopping, killing or cleaning up a process (:data:`rootrank.analysis.own_kill._STOPPING`
and ``_PROCESS_WORD``), the finding becomes :data:`SIGNATURE` on that rank: the kill
pattern in its code is the cause. A signal the scheduler sent comes with the scheduler's own
line and is read by its own signature (``slurm-time-limit``, ``slurm-preemption``), not this
one.
"""

from __future__ import annotations

import dataclasses

from rootrank.analysis.own_kill import _PROCESS_WORD, _STOPPING, MAX_LINE, _last_line
from rootrank.analysis.prepare import finding_from
from rootrank.model import Evidence, Finding
from rootrank.ranklines import rank_lines
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (class user-code-exception, ``detector: analysis``).
SIGNATURE = "agent-killed-by-rank-kill"
#: The finding it replaces: the agent's death signal read as a stop from outside.
AGENT_SIGNATURE = "agent-received-signal"
#: Signals a kill command sends (by number or by name).
_KILL_SIGNALS = frozenset({"2", "3", "9", "15", "SIGINT", "SIGQUIT", "SIGKILL", "SIGTERM"})
#: Log lines at most between the rank's kill line and the agent's line: a kill the rank
#: announced long before did not reach the agent then.
MAX_GAP = 20


def rank_kills_of_agent(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each :data:`AGENT_SIGNATURE` finding of a kill signal replaced by
    one of :data:`SIGNATURE` (its captures plus ``rank`` and ``last_line``, that line first in
    its evidence, the finding's rank set) when exactly one rank's last own line before the
    agent's line, at most :data:`MAX_GAP` lines above it, says it was stopping or killing a
    process. Unchanged when the signature is not in ``library``. Raises nothing."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None or not any(f.signature == AGENT_SIGNATURE for f in findings):
        return findings
    lines, _, _ = rank_lines(state)
    ranks = sorted({who[0] for who in lines if who[0] is not None})
    out: list[Finding] = []
    for f in findings:
        if (
            f.signature != AGENT_SIGNATURE
            or f.captures.get("signal", "") not in _KILL_SIGNALS
            or not f.evidence
        ):
            out.append(f)
            continue
        at = f.evidence[0]
        killers = []
        for rank in ranks:
            last = _last_line(state, at, rank)
            if (
                last is not None
                and at.line - last[1] <= MAX_GAP
                and _STOPPING.search(last[2])
                and _PROCESS_WORD.search(last[2])
            ):
                killers.append((rank, last))
        if len(killers) != 1:
            out.append(f)
            continue
        rank, (path, number, text) = killers[0]
        made = finding_from(
            sig,
            f,
            {
                **f.captures,
                "rank": str(rank),
                "last_line": text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "...",
            },
            evidence=[Evidence(path=path, line=number, text=text, rank=rank), *f.evidence[:1]],
        )
        out.append(dataclasses.replace(made, rank=rank))
    return out
