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

A death that came first (:func:`died_before_timeouts`): the signature says a collective
timeout in the same log explains the death (the watchdog aborts a hung worker, and Ray's
report of that abort often comes before the watchdog's own line). That holds only when the
log shows a timed-out process being torn down: a native stack (``libc.so.6(+0x94ac3)``),
ProcessGroupNCCL's "taking the entire process down", C++'s ``terminate called``, an
abort. A death printed before the first timeout with none of these is a worker that went
away while its peers were still working: they then wait for it in their next collective
until the watchdog fires. The finding becomes ``ray-worker-died-peers-waited`` (no such
``explained_by``): the death is the cause and the timeouts its consequence.
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
#: What a process torn down after its collective timed out prints: a native stack frame
#: (``/usr/lib/x86_64-linux-gnu/libc.so.6(+0x94ac3) [0x14c05d3fdac3]``, ``frame #3:``),
#: ProcessGroupNCCL's teardown notice, C++'s uncaught-exception abort, the signal itself.
_TEARDOWN = lazy_regex.compile(
    r"\.so(?:\.\d+)*\(\+0x[0-9a-fA-F]+\)|^\s*frame #\d+:|taking the entire process down|"
    r"terminate called after throwing|Fatal Python error: Aborted|SIGABRT|Aborted \(core dumped\)"
)
#: The signature a death before the timeouts becomes.
TO_SIGNATURE = "ray-worker-died-peers-waited"
#: The class of the timeouts it is read against.
HANG_CLASS = "collective-timeout"

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


def _teardown_printed(state: ScanState) -> bool:
    """Whether the scan's kept text holds a line of a process torn down (:data:`_TEARDOWN`)."""
    for _path, _first, text in (*state.heads, *state.tails):
        for line in text.split("\n"):
            if _TEARDOWN.search(line) is not None:
                return True
    return False


def died_before_timeouts(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each ``ray-worker-killed`` finding printed before the log's first
    collective-timeout finding read as :data:`TO_SIGNATURE`, when the log shows no teardown
    of a timed-out process (see the module docstring); unchanged otherwise (no timeout, a
    timeout first, a teardown printed, or the signature not in ``library``)."""
    sig = library.signatures.get(TO_SIGNATURE)
    deaths = [f for f in findings if f.signature == FROM_SIGNATURE]
    hangs = [f.order for f in findings if f.failure_class == HANG_CLASS]
    if sig is None or not deaths or not hangs:
        return findings
    first_hang = min(hangs)
    if not any(f.order < first_hang for f in deaths) or _teardown_printed(state):
        return findings
    return [
        f.recast(sig) if f.signature == FROM_SIGNATURE and f.order < first_hang else f
        for f in findings
    ]
