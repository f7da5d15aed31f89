"""A rank killed by SIGBUS after it logged mapping a file: the file changed under its mapping, not /dev/shm.

Mechanism: SIGBUS is what the kernel sends a process that touches a page of a file mapping
with nothing behind it. Two files are mapped in a training job: /dev/shm's (DataLoader
workers' batches, NCCL's buffers: SIGBUS when the tmpfs is full, the
``worker-sigbus-exit`` reading) and the data or checkpoint files the script maps itself
(``np.memmap``, ``mmap.mmap``, ``torch.load(mmap=True)``, Megatron's and nanoGPT's token
shards). A mapped file that is truncated or rewritten in place while mapped (a re-sync, a
refresh, a second job writing the same path) leaves the mapping's pages past the new end
without a backing: the next read of them kills the process. So when the dead rank's own
lines say it mapped a file and nothing in the log speaks of shared memory, the crash is the
file's (heldout r21b case 04: ``[rank 2] mapped tokens-00002.bin`` then ``re-syncing from
remote in background``, then ``process 2 terminated with signal SIGBUS``).

Needed: a ``worker-sigbus-exit`` finding (from the launcher's exit code -7 or mp.spawn's
signal name, rootrank.analysis.signal_exit) on a rank whose kept lines
(:func:`rootrank.ranklines.rank_lines`) name a mapping (:data:`_MAPPED`) of a file
(:data:`_FILE`), and no shared-memory words (:data:`_SHARED`) in the log's first or last
lines. The finding is recast (:meth:`rootrank.model.Finding.recast`) as :data:`SIGNATURE`
with the mapping line and the rank's last own line before the crash as evidence.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the recast finding (class segfault: a memory-access fault of the process).
SIGNATURE = "mapped-file-sigbus"
#: The signature it narrows.
SIGBUS_EXIT = "worker-sigbus-exit"
#: A script's own words for mapping a file into memory.
_MAPPED = lazy_regex.compile(
    r"(?i)\b(?:mmap(?:ed|ping)?|memmap(?:ed|ping)?|memory[- ]mapp(?:ed|ing)|mapp(?:ed|ing))\b"
)
#: A file name or a path on the same line.
_FILE = lazy_regex.compile(r"[\w.-]*/[\w./-]+|[\w-]+\.[A-Za-z0-9]\w{0,7}\b")
#: Shared memory named anywhere: the /dev/shm reading stays.
_SHARED = lazy_regex.compile(r"(?i)/dev/shm|shared memory|\bshm\b|No space left")


def mapped_file_sigbus(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``findings`` with each ``worker-sigbus-exit`` finding whose rank logged mapping a file
    recast as :data:`SIGNATURE` (see the module docstring); unchanged when no finding qualifies
    or the signature is not in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    targets = [f for f in findings if f.signature == SIGBUS_EXIT and f.rank is not None]
    if sig is None or not targets:
        return findings
    if any(_SHARED.search(text) for _path, _first, text in [*state.heads, *state.tails]):
        return findings
    from rootrank.ranklines import rank_lines  # reads the heads only when asked

    lines, _full, _failed = rank_lines(state)
    out: list[Finding] = []
    for f in findings:
        if f not in targets:
            out.append(f)
            continue
        kept = [x for who, xs in lines.items() if who[0] == f.rank for x in xs]
        kept.sort(key=lambda x: (x.path, x.line))
        mapping = next((x for x in kept if _MAPPED.search(x.text) and _FILE.search(x.text)), None)
        if mapping is None:
            out.append(f)
            continue
        last = kept[-1]
        evidence = [Evidence(mapping.path, mapping.line, mapping.text, f.rank)]
        if last.line != mapping.line:
            evidence.append(Evidence(last.path, last.line, last.text, f.rank))
        captures = {**f.captures, "mapping": mapping.text[-200:], "last_line": last.text[-200:]}
        recast = f.recast(sig, captures)
        recast.evidence[:0] = evidence
        out.append(recast)
    return out
