"""A Ray worker that vanished with no memory record: a death of unknown cause, not an OOM;
and a worker's stack inside a collective, which points at a hang.

Mechanism: Ray reports a worker whose connection to the raylet closed without an exit
message as ``Worker exit type: SYSTEM_ERROR ... connection error code 2. End of file`` and
appends its stock list of possible causes (the OOM killer, ``ray stop --force``, a native
crash). That list is no evidence: the OOM killer's own words (dmesg's ``Out of memory:
Killed process``, a cgroup's OOMKilled, Ray's memory monitor's "killed due to the node
running low on memory") are, and the engine reads them as their own findings (class
``host-oom-killed`` / ``cpu-oom``). With none of them in the log, the death's cause is
unknown: the worker's own log (Ray keeps each worker's stdout/stderr on its node) and the
node's kernel log tell which it was. When a worker's stack printed in the log (faulthandler,
py-spy) stands inside a collective, the workers were waiting in communication: a hang that
ended in this death, more likely than a kill from outside.

The signature ``ray-worker-killed`` carries that reading (class elastic-child-failed: a
memory record, when the log has one, is its own root). Here each of its findings gets the
``stack_hint`` capture: a sentence naming the first stack line in the log's kept text whose
function is a collective (:data:`_COLLECTIVE_FRAME`), or ``""``.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: Ray's report of a worker that vanished (class elastic-child-failed).
FROM_SIGNATURE = "ray-worker-killed"
#: A stack line (a Python traceback's or faulthandler's) inside a collective (not a bare
#: ``wait``/``send``/``recv``: threads and sockets have them too):
#: ``File "...distributed_c10d.py", line 2806 in all_gather_into_tensor``.
_COLLECTIVE_FRAME = lazy_regex.compile(
    r"File \"[^\"]+\", line \d+,? in (?P<func>(?:_?all_?reduce\w*|_?all_?gather\w*|all_to_all\w*|"
    r"alltoall\w*|_?reduce_scatter\w*|broadcast\w*|barrier|monitored_barrier))\b"
)
#: Characters of the quoted stack line kept.
_QUOTE = 160


def _collective_stack(state: ScanState) -> str:
    """A sentence naming the first stack line of the kept text inside a collective, or ``""``."""
    for _path, first, text in (*state.heads, *state.tails):
        for number, line in enumerate(text.split("\n"), first):
            m = _COLLECTIVE_FRAME.search(line)
            if m is not None:
                quote = line.strip()[-_QUOTE:]
                return (
                    f" A worker's stack in this log stands inside a collective ({m['func']},"
                    f" line {number}: `{quote}`): the workers were waiting in communication, so a"
                    " hang that ended in this death is more likely than a kill from outside:"
                    " find the rank that did not reach that collective."
                )
    return ""


def ray_stack_hints(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each ``ray-worker-killed`` finding given its ``stack_hint`` capture
    (see the module docstring); unchanged when there is none or it is not in ``library``."""
    sig = library.signatures.get(FROM_SIGNATURE)
    if sig is None or not any(f.signature == FROM_SIGNATURE for f in findings):
        return findings
    hint = _collective_stack(state)
    return [
        f.recast(sig, {**f.captures, "stack_hint": hint}) if f.signature == FROM_SIGNATURE else f
        for f in findings
    ]
