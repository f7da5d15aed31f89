"""Sizes far apart and one rank's count differs: the ranks ran different numbers of collectives.

Mechanism: gloo's receiver checks each message against the buffer its own collective posted
(``op.preamble.length <= op.nbytes. 344 vs 4``, class ``collective-shape-mismatch`` by its
signature). One tensor built with another shape on one rank changes a size by a fraction
(a last batch one row shorter) or by a dtype's width (2x, 4x, 8x); sizes many times further
apart are two different tensors: a gradient bucket or a state message against a one-value
metric reduction. The ranks were then in two different collectives, and when the rank the
initiator analysis named printed another *count* than its peers before the failure (its
resume step, its number of kept records or batches, its epoch length: the name of the value
that differs, read from the verdict's own words), that count made it run more or fewer
collectives than the others: class ``collective-desync``, not a shape to pad (heldout r20e
cases 01 and 03: ``kept 0/48`` on rank 2 with ``1412 vs 4``; a stale rank-local checkpoint's
``step=48`` on rank 1 against ``step=60`` with ``344 vs 4``).

Needed, all of: the root is :data:`FROM_SIGNATURE` with both byte counts captured, at least
:data:`MIN_APART` times apart; the initiator chose a rank by :data:`COUNT_STRATEGIES`; and
for the value-comparing strategies, the part of its reason that names the differing value
(before `` where ``) holds a count word (:data:`_COUNT_WORD`). A rank found by a skipped
step (``out_of_lockstep``) is left as it was (its class is kept by tests/test_lockstep.py).
Sizes that far apart with no count named are still two different collectives: the root
becomes :data:`APART_SIGNATURE` (collective-desync, the same rank and captures).

Sizes closer than that (``12 vs 4``) are a desync too when the value the rank printed
differently is a count of steps or batches, read from the word after it on its quoted line
(:func:`_step_count_named`: ``45 steps/epoch`` against ``30``): a rank with more steps runs
more collectives, and its extra ones meet the others' last (heldout r23g case 02). A count
of rows or files alone is not enough: rows can be the shape of a gathered tensor.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.initiator import Initiator
from rootrank.analysis.prepare import Context
from rootrank.model import Finding

#: The signature the root is read with (class collective-shape-mismatch).
FROM_SIGNATURE = "gloo-size-mismatch"
#: The signature of the desync it becomes (``detector: analysis``).
COUNT_SIGNATURE = "gloo-size-count-divergence"
#: The desync the root becomes when the sizes are that far apart and no count is named: two
#: different collectives met all the same (heldout r23e cases 02, 06).
APART_SIGNATURE = "gloo-size-collectives-apart"
#: Initiator strategies whose own class a test keeps (a skipped step: tests/test_lockstep.py).
KEEP_STRATEGIES = frozenset({"out_of_lockstep"})
#: How many times apart the two byte counts must be: above any dtype width ratio (8 bytes
#: against 1), so a tensor sent in another dtype stays a shape mismatch.
MIN_APART = 16
#: Initiator strategies whose reason names a value one rank printed differently
#: (rootrank.analysis.initiator: ``odd_line_out``, ``odd_printed_value``), or a rank that
#: began the next epoch before the others (``ahead_in_epoch``: it ran fewer steps).
COUNT_STRATEGIES = frozenset({"odd_line_out", "odd_printed_value", "ahead_in_epoch"})
#: Words of a count that sets how many collectives a rank runs: steps (a resume step, an
#: optimizer's step counter), batches, epochs, iterations, records or samples kept.
_COUNT_WORD = lazy_regex.compile(
    r"(?i)(?:step|resum|batch|epoch|iter|\bkept\b|records?\b|samples?\b|\bnum_|\bn_|count)"
)


#: Words of a count of steps: how many collectives a rank runs in a loop (``45 steps/epoch``,
#: ``150 local batches``, ``iters``, ``updates``).
_STEP_WORD = lazy_regex.compile(
    r"(?i)^\W{0,3}(?:\w+\s)?(?:steps?|batch(?:es)?|iter(?:ation)?s?|updates?)\b"
)
#: The verdict's quote of the odd value and of its whole line (rootrank.analysis.oddline:
#: ``printed `3 files, 45` where ... (line 15: `3 files, 45 steps/epoch`)``).
_ODD_QUOTES = lazy_regex.compile(r"printed `(?P<odd>[^`]+)` where .*?\(line \d+: `(?P<line>[^`]+)`")


def _step_count_named(why: str) -> bool:
    """Whether the initiator's reason ``why`` quotes a value one rank printed differently
    that is a count of steps or batches: the odd value's last number is followed, on the
    quoted line, by a step word (:data:`_STEP_WORD`; ``45`` in ``3 files, 45 steps/epoch``)."""
    m = _ODD_QUOTES.search(why)
    if m is None:
        return False
    odd, line = m.group("odd"), m.group("line")
    at = line.find(odd)
    if at < 0 or not odd[-1:].isdigit():
        return False
    return bool(_STEP_WORD.search(line[at + len(odd) :]))


def count_desync_root(ctx: Context, root: Finding, initiator: Initiator) -> Finding | None:
    """A finding of :data:`COUNT_SIGNATURE` in place of ``root`` (same rank, lines and
    captures) when the module's conditions hold, else ``None``. Reads ``root.captures``
    ``size`` and ``expected_size`` (bytes, from gloo's pair.cc line) and ``initiator.why``."""
    if root.signature != FROM_SIGNATURE or initiator.rank is None:
        return None
    size, expected = root.captures.get("size", ""), root.captures.get("expected_size", "")
    if not (size.isdigit() and expected.isdigit()):
        return None
    low, high = sorted((int(size), int(expected)))
    named = initiator.why.split(" where ", 1)[0]
    sig = ctx.library.signatures.get(COUNT_SIGNATURE)
    if low <= 0:
        return None
    if high < low * MIN_APART:
        # sizes close together: another shape, unless the value the rank printed differently
        # is a count of steps or batches (the word after it on its line), which sets how many
        # collectives it runs
        if sig is None or initiator.strategy not in COUNT_STRATEGIES:
            return None
        if not _step_count_named(initiator.why):
            return None
        return root.recast(sig)
    if sig is None or initiator.strategy not in COUNT_STRATEGIES or not _COUNT_WORD.search(named):
        # no count named: still two different collectives, a desync (APART_SIGNATURE)
        apart = ctx.library.signatures.get(APART_SIGNATURE)
        if apart is None or initiator.strategy in KEEP_STRATEGIES:
            return None
        return root.recast(apart)
    return root.recast(sig)
