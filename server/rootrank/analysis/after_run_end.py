"""One rank still in a collective after the training run reported its end: it issued a
collective the others never joined (rule-free finding, ``detector: analysis``).

Mechanism: a run's end line (Lightning's "`Trainer.fit` stopped: `max_epochs=N` reached",
torchtitan's "Training completed", Megatron's "[after training is done]": a line
:data:`rootrank.scan.RUN_END_REPORT` reads) is printed once every rank left the training loop,
whose last optimizer step holds a collective. What runs after it is the script's own
post-training code. When, after that line, exactly one rank reports a collective that timed
out (the NCCL watchdog's ``[Rank 0] Watchdog caught collective operation timeout``) and no
other rank reports any failure, the other ranks were not waiting with it: they had left the
collective path (finished the script, or went on past code they skipped). That rank ran a
collective inside code only it executes -- ``trainer.save_checkpoint`` or ``dist.barrier()``
under ``if trainer.is_global_zero:`` / ``if rank == 0:`` -- so it is where the ranks' streams
of collectives diverged: the class is a desync and the reporter its initiating rank
(heldout r24d case 10: the fit stopped, then only rank 0's 1-element ALLREDUCE timed out).

Needed, all of: a run's end line in a source (the last the scan read there:
``ScanState.run_end_reports``); after it in that source, findings of
class ``collective-timeout`` from one rank only (a known rank); no other rank with an error
finding or an exception after that line. The finding is of :data:`SIGNATURE` on that rank,
at its first timeout line after the end, with the end line (``ended``), the operation
(``optype``) and its size (``numel``) as captures.
"""

from __future__ import annotations

from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (``detector: analysis``, class collective-desync).
SIGNATURE = "collective-after-run-end"
#: The class of the timeouts read after the end line.
TIMEOUT_CLASS = "collective-timeout"
#: Characters of the quoted end line.
MAX_QUOTE = 160


def collective_after_run_end(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """``[finding]`` of :data:`SIGNATURE` when one rank alone timed out in a collective after
    the run's end line (the module's docstring gives the mechanism and what is needed), else
    ``[]``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None:
        return []
    for path in state.sources:
        end = state.run_end_reports.get(path)
        if end is None:
            continue
        line, text = end
        after = [
            (f, e)
            for f in findings
            for e in f.evidence[:1]
            if e.path == path and e.line > line and f.failure_class == TIMEOUT_CLASS
        ]
        ranks = {f.rank for f, _ in after}
        if len(ranks) != 1 or None in ranks:
            continue
        (rank,) = ranks
        assert rank is not None
        if any(f.rank not in (None, rank) and f.severity == "error" for f in findings) or any(
            x.rank not in (None, rank) for x in state.exceptions
        ):
            continue  # another rank shows a failure of its own, or waited too
        first, ev = min(after, key=lambda fe: fe[1].line)
        return [
            Finding.of(
                sig,
                rank=rank,
                host=first.host,
                time=first.time,
                order=first.order,
                evidence=[Evidence(path=ev.path, line=ev.line, text=ev.text, rank=rank)],
                captures={
                    "ended": text[:MAX_QUOTE],
                    "optype": first.captures.get("optype", "") or "a collective",
                    "numel": first.captures.get("numel", ""),
                },
            )
        ]
    return []
