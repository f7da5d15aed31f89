"""A training step read from one line of output, with its rank.

What real frameworks print (the step is the number a user would quote):

- tqdm bars (Hugging Face Trainer, plain loops) and Lightning bars: `` 45%|████▌ | 45/100 [00:05<00:06,
  8.1it/s]`` and ``Epoch 2:  45%|... | 45/100 [...]``: step 45 of 100 (Lightning: in epoch 2);
- Megatron-LM: `` iteration       10/     100 | consumed samples: ...``;
- DeepSpeed: ``[Rank 0] step=10, skipped=0, lr=[...]``;
- torchtitan: ``step:  10  loss:  7.9``;
- plain prints: ``step 10``, ``Step 10/500``, ``iter 10``, ``iteration 10``, ``global_step=10``.

The rank comes from the launcher prefix: ``[rank3]:``, ``[default3]:[rank11]:`` and ``3: `` are
read at once (most lines), anything else through :class:`rootrank.ranks.RankTagger` (Open MPI,
pdsh hosts, Ray actors, timestamps in front); torchrun's local ``[default3]:`` alone counts as
rank 3 (one node), else from the line itself (``[rank 3]``, ``rank 3:``,
``[Rank 3]``), else from the file's path; ``None`` when nothing names it.

This is the minimal reader the live commands need; the post-mortem progress model
(``rootrank.progress``) is a separate, richer module.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from rootrank.ranks import RankTagger

#: A cheap test run before the regexes: the line holds one of these (lower-cased) words
#: (``%|`` is a tqdm/Lightning bar).
_HINTS = ("step", "iter", "%|")
_DIGIT = regex.compile(r"\d")
#: What may start the other prefixes RankTagger reads (Ray/vLLM ``(``, Open MPI ``[1,3]``,
#: CloudWatch ``|``, kubectl's timestamp, SLURM's ``3 :``, a pdsh host ``node01: ``).
_OTHER_PREFIX = regex.compile(r"[(\[]|\s*\|\s*\d|\d|[A-Za-z][\w.-]{0,62}: ")
#: The launcher prefixes most lines carry, read without the full tagger: torchrun's
#: ``[rank3]:``, ``[default3]:`` (local), stacked ``[default3]:[rank11]:``, SLURM's ``3: ``.
_FAST_PREFIX = regex.compile(r"\[(?:rank(?P<r>\d{1,6})|default(?P<l>\d{1,6}))\]: ?(?:\[rank(?P<r2>\d{1,6})\]: ?)?|(?P<s>\d{1,6}): ")

_BAR = regex.compile(
    r"(?:\bEpoch (?P<epoch>\d+)\b[^|\r\n]{0,40}?)?(?:\d{1,3}%\|[^|]{0,120}\|\s*)(?P<n>\d+)/(?P<total>\d+)\s*\["
)
_MEGATRON = regex.compile(r"\biteration\s+(?P<n>\d+)\s*/\s*(?P<total>\d+)\s*\|")
_NAMED = regex.compile(
    r"(?i)(?<![\w.])(?:global[_ ]step|step|iter(?:ation)?)(?:\s*[=:#]\s*|\s+)(?P<n>\d{1,12})"
    r"(?:\s*/\s*(?P<total>\d{1,12}))?(?![\w.])"
)
_INLINE_RANK = regex.compile(r"(?i)\[rank\s*(?P<r>\d{1,6})\]|(?<![\w.])rank\s*[:=#]?\s*(?P<r2>\d{1,6})\b")


@dataclass(slots=True, frozen=True)
class Step:
    """One progress line: ``step`` (int, as printed), ``total`` (int or None), ``epoch``
    (int or None, Lightning bars), ``rank`` (int or None)."""

    step: int
    total: int | None
    epoch: int | None
    rank: int | None


def may_hold_step(text: str) -> bool:
    """Cheap pre-test: ``False`` when ``text`` cannot hold a step (most lines)."""
    low = text.lower()
    return ("step" in low or "iter" in low or "%|" in low) and _DIGIT.search(text) is not None


def read_step(text: str, tagger: RankTagger, number: int = 0) -> Step | None:
    """The step ``text`` (one cleaned line, launcher prefixes included) reports, or ``None``.

    ``tagger`` attributes the line to a rank (it keeps per-source state: feed it lines in
    order); ``number`` is the 1-based line number given to it.
    """
    if not may_hold_step(text):
        return None
    fast = _FAST_PREFIX.match(text)
    if fast is not None:
        body = text[fast.end() :]
        r = fast.group("r2") or fast.group("r") or fast.group("s")
        local = fast.group("l")
        rank = int(r) if r is not None else None
        if rank is None and local is not None:
            rank = tagger.local_to_global.get((None, int(local)), int(local))
    elif _OTHER_PREFIX.match(text) is None:
        body, rank = text, None  # no launcher prefix at all (most single-process output)
    else:
        tagged = tagger.tag(text, number)
        body = tagged.text
        # A local rank tag alone ([default3]: from torchrun --tee) is taken as the rank: on one
        # node they are the same, and on several the stacked [default3]:[rank11]: gives the global.
        rank = tagged.rank if tagged.rank is not None else tagged.local_rank
    m = (_BAR.search(body) if "%|" in body else None) or (_MEGATRON.search(body) if "iteration" in body else None)
    epoch: int | None = None
    if m is not None:
        epoch = int(m.group("epoch")) if m.groupdict().get("epoch") else None
    else:
        m = _NAMED.search(body)
        if m is None:
            return None
    total = m.group("total")
    if rank is None and tagger.path_rank is not None:
        rank = tagger.path_rank
    if rank is None and ("rank" in body or "Rank" in body):
        rm = _INLINE_RANK.search(body)
        if rm is not None:
            rank = int(rm.group("r") or rm.group("r2"))
    return Step(int(m.group("n")), int(total) if total else None, epoch, rank)
