"""The step one line of live output reports, with its rank.

The step itself is read by the progress model shared with the post-mortem engine
(:mod:`rootrank.progress`: Megatron-LM, DeepSpeed, torchtitan, Lightning and tqdm/HF bars,
plain ``step N`` / ``iter N`` prints; evaluation and data bars are not progress). This module
adds what a live stream needs first: which rank printed the line.

The rank comes from the launcher prefix: ``[rank3]:``, ``[default3]:[rank11]:`` and ``3: `` are
read at once (most lines), anything else through :class:`rootrank.ranks.RankTagger` (Open MPI,
pdsh hosts, Ray actors, timestamps in front); torchrun's local ``[default3]:`` alone counts as
rank 3 (one node; the stacked form gives the global rank on several), else the line itself
(``[rank 3]``, ``rank 3:``, DeepSpeed's ``[Rank 3]``), else the file's path (``rank3.log``,
``attempt_0/3/stdout.log``); ``None`` when nothing names it.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.progress import Progress, ProgressModel
from rootrank.ranks import RankTagger

_DIGIT = lazy_regex.compile(r"\d")
#: The launcher prefixes most lines carry, read without the full tagger.
_FAST_PREFIX = lazy_regex.compile(
    r"\[(?:rank(?P<r>\d{1,6})|default(?P<l>\d{1,6}))\]: ?(?:\[rank(?P<r2>\d{1,6})\]: ?)?|(?P<s>\d{1,6}): "
)
#: What may start the other prefixes RankTagger reads (Ray/vLLM ``(``, Open MPI ``[1,3]``,
#: CloudWatch ``|``, kubectl's timestamp, SLURM's ``3 :``, a pdsh host ``node01: ``).
_OTHER_PREFIX = lazy_regex.compile(r"[(\[]|\s*\|\s*\d|\d|[A-Za-z][\w.-]{0,62}: ")
_INLINE_RANK = lazy_regex.compile(
    r"(?i)\[rank\s*(?P<r>\d{1,6})\]|(?<![\w.])rank\s*[:=#]?\s*(?P<r2>\d{1,6})\b"
)


def may_hold_step(text: str) -> bool:
    """Cheap pre-test: ``False`` when ``text`` cannot hold a step (most lines)."""
    low = text.lower()
    return ("step" in low or "iter" in low or "%|" in low) and _DIGIT.search(text) is not None


def attribute(text: str, tagger: RankTagger, number: int = 0) -> tuple[int | None, str]:
    """``(rank, body)`` of one cleaned line: the rank it belongs to (or ``None``) and the line
    without its launcher prefix. ``tagger`` keeps per-source state (feed lines in order);
    ``number`` is the 1-based line number."""
    fast = _FAST_PREFIX.match(text)
    rank: int | None
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
        rank = tagged.rank if tagged.rank is not None else tagged.local_rank
    if rank is None and tagger.path_rank is not None:
        rank = tagger.path_rank
    if rank is None and ("rank" in body or "Rank" in body):
        rm = _INLINE_RANK.search(body)
        if rm is not None:
            rank = int(rm.group("r") or rm.group("r2"))
    return rank, body


def read_step(
    text: str,
    tagger: RankTagger,
    number: int = 0,
    *,
    model: ProgressModel | None = None,
    time: float | None = None,
    path: str = "",
) -> Progress | None:
    """The progress ``text`` (one cleaned line, launcher prefixes included) shows, or ``None``.

    ``model`` (shared by the sources of one job) keeps the last step per rank and tells a
    training bar from an evaluation bar drawn under it; ``time`` (s since the epoch) and
    ``path`` are recorded with the step.
    """
    if not may_hold_step(text):
        return None
    rank, body = attribute(text, tagger, number)
    model = model if model is not None else ProgressModel()
    return model.observe(body, rank=rank, time=time, path=path, line=number)
