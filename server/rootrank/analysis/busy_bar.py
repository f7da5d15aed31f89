"""A main-process progress bar that outran the collective timeout (strategy ``busy_bar``).

Mechanism: frameworks show progress bars on the main process only (Hugging Face datasets'
``map`` / "Creating dataset split" under ``main_process_first``, DeepSpeed-Chat's data
preparation on rank 0, a download): tqdm is disabled on the other ranks, and the bar's line
carries no rank tag. While the main process works, the others wait in their first barrier
or collective. When the waiters' watchdog fires (``[Rank 1] Watchdog caught collective
operation timeout ... Timeout(ms)=1800000``) while that bar is still short of its total and
its elapsed time (tqdm's ``[29:56<01:08, ...]``) is a large part of the timeout, the main
process (rank 0) was still in that work: the ranks that timed out are victims (held-out
r21c case 03: "Creating dataset split: 96% ... [29:56<..." then rank 1's watchdog at
1800000 ms).

Facts come from the kept tail of each source (:attr:`rootrank.scan.ScanState.tails`), each
line tagged again with a :class:`~rootrank.ranks.RankTagger` up to the end of the bar (a
watchdog line glued after the bar names its own rank, not the bar's).
"""

from __future__ import annotations

from dataclasses import dataclass

from rootrank import lazy_regex
from rootrank.scan import ScanState

#: tqdm's bar: ``desc: 96%|█████▋| 1927287/2000000 [29:56<01:08, 1060.83it/s]`` (elapsed as
#: ``MM:SS`` or ``H:MM:SS``; counts may carry a unit suffix: ``1.93M/2.00M``).
_BAR = lazy_regex.compile(
    r"(?P<pct>\d{1,3})%\|[^|\n]{0,200}\|\s*(?P<i>\d+(?:\.\d+)?[kMGT]?)/"
    r"(?P<n>\d+(?:\.\d+)?[kMGT]?)\s*\[(?P<elapsed>(?:\d{1,3}:)?\d{1,2}:\d{2})<"
)

#: The least share of the timeout a bar's elapsed time must reach for its process to be the
#: one the others waited for (work started before the bar, a model load, is not counted).
MIN_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class BusyBar:
    """An unfinished progress bar: where (``path:line``), the rank a tag or the file's name
    gives it (``None``: untagged, the main process's), its percentage, its elapsed time in
    seconds, and its description (the text before the bar, may be empty)."""

    where: str
    rank: int | None
    percent: int
    elapsed_s: int
    desc: str


def _seconds(elapsed: str) -> int:
    """``"29:56"`` -> 1796, ``"1:02:03"`` -> 3723 (tqdm's elapsed field)."""
    total = 0
    for part in elapsed.split(":"):
        total = total * 60 + int(part)
    return total


def busy_bar(state: ScanState, timeout_ms: int) -> BusyBar | None:
    """The last progress bar in the kept tails that is short of 100 % and ran for at least
    :data:`MIN_SHARE` of ``timeout_ms`` (milliseconds); ``None`` when there is none, or when
    such bars belong to more than one rank (several ranks were working, not one)."""
    from rootrank.ranks import RankTagger

    found: BusyBar | None = None
    for path, first, text in state.tails:
        if "%|" not in text:
            continue
        tagger = RankTagger(path=path)
        tagger.learn_user_tags(text)
        for i, raw in enumerate(text.split("\n")):
            if "%|" not in raw:
                continue
            for piece in raw.split("\r"):
                m = _BAR.search(piece)
                if m is None:
                    continue
                percent, elapsed = int(m.group("pct")), _seconds(m.group("elapsed"))
                if percent >= 100 or elapsed * 1000 < MIN_SHARE * timeout_ms:
                    continue
                tagged = tagger.tag(piece[: m.end()], first + i)
                rank = tagged.rank
                if found is not None and found.rank != rank:
                    return None
                # the text before the bar, its rank tag peeled off (``[rank0]: Epoch 0``)
                before = tagged.text[: len(tagged.text) - (m.end() - m.start())]
                desc = before.strip().rstrip(":").strip()
                found = BusyBar(f"{path}:{first + i}", rank, percent, elapsed, desc)
    return found
