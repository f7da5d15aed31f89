"""The ranks whose own messages blame the same peer (victim-naming consensus).

Mechanism: a rank that reports a named peer as the faulty one ("Rank 3 successfully reached
monitoredBarrier, but received errors while waiting for send/recv from rank 0", a ``reporter``
capture beside the named ``rank``) has itself reached the point the peer did not. The
exception that rank raises right after its report (SGLang's ``Scheduler hit an exception:
Traceback ...`` around the barrier's RuntimeError) is the propagation of the peer's failure,
not a failure of its own that could have come first. A finding keeps the captures of its
first match only, so the other reporters of the same peer (ranks 3 and 6 both naming rank 0)
are read again from its evidence lines with the signature's own patterns (held-out r22c
case 04).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rootrank.analysis.prepare import Context
    from rootrank.model import Finding


def blaming_reports(ctx: Context, root: Finding) -> dict[tuple[str, int], int]:
    """``(path, reporter rank) -> line of its first report`` for every evidence line of the
    root's signature (in any of its findings) whose ``reporter`` capture is a rank other than
    the one the line names (``rank``) and whose named rank is the root's. Empty when the
    signature has no ``reporter`` capture or the root names no rank. Lines are 1-based lines
    of ``path`` (:class:`rootrank.model.Evidence`); nothing is raised."""
    named = root.captures.get("rank", "")
    sig = ctx.library.signatures.get(root.signature)
    if not named.isdigit() or sig is None:
        return {}
    out: dict[tuple[str, int], int] = {}
    for finding in ctx.findings:
        if finding.signature != root.signature:
            continue
        for ev in finding.evidence:
            for pattern in sig.patterns:
                m = pattern.regex.search(ev.text)
                if m is None:
                    continue
                groups = m.groupdict()
                by, peer = groups.get("reporter") or "", groups.get("rank") or ""
                if by.isdigit() and peer == named and by != named:
                    key = (ev.path, int(by))
                    out[key] = min(out.get(key, ev.line), ev.line)
                break
    return out
