"""The scan's fast paths (issue 11) give what the plain ones give.

- the line-start rank sweeps (``ranks_in``, ``RankTagger.learn_stacked``), which search for a
  prefix after a literal newline, find what a line-by-line match of the same prefix finds;
- a folder of per-rank files (``slurm-%j-%t.out`` beside the job's ``slurm-%j.out``, split by
  ``bench/gen_log.py`` from one generated multi-node log) is diagnosed like the one file it
  came from: the same root cause, its rank and line of evidence in that rank's file, and the
  same collateral ranks;
- the progress/metric sampling budget is the scan's, across files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import scan
from rootrank.engine import diagnose_paths
from rootrank.ranks import RankTagger, ranks_in

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gen_log  # noqa: E402

# The launcher prefixes as ranks.py documents them, matched line by line (the reference).
_PREFIX = regex.compile(
    r"\[rank(\d{1,6})\]:|\[\d+,(\d{1,6})\]<std(?:out|err)>:|(\d{1,6}) ?:(?!\d)"
    r"|\[(?:rank|RANK|Rank)[ =](\d{1,6})(?:/\d{1,6})?\] "
)
_STACK = regex.compile(r"(?:([A-Za-z][\w.-]{0,62}): )?\[default(\d{1,6})\]:\[rank(\d{1,6})\]:")

_PIECES = st.sampled_from(
    [
        "[rank3]: step 1",
        "[rank12]:[W1129 10:01:58 x.cpp:1] Warning",
        "[1,7]<stderr>: boom",
        "5: hello",
        "0 : x",
        "12:30:01 not a rank",
        "[Rank 4] loss",
        "[rank=9/16] ok",
        "[default1]:[rank9]: x",
        "node02: [default3]:[rank11]: y",
        "plain text [rank2]: mid-line",
        "",
        " [rank1]: indented",
        "\r[rank6]: after cr",
        "٣: arabic-indic digit",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12), st.booleans())
def test_rank_sweeps_find_what_a_line_by_line_match_finds(lines, trailing_newline):
    text = "\n".join(lines) + ("\n" if trailing_newline else "")
    want: set[int] = set()
    stacked: set[int] = set()
    for line in text.split("\n"):
        m = _PREFIX.match(line)
        if m:
            want.update(int(g) for g in m.groups() if g)
        s = _STACK.match(line)
        if s:
            stacked.add(int(s.group(3)))
    assert ranks_in(text) == want
    assert RankTagger().learn_stacked(text) == stacked


def _split_log(tmp_path: Path) -> tuple[Path, Path, gen_log.Meta]:
    one = tmp_path / "train.log"
    meta = gen_log.generate(str(one), 3 << 20, seed=5, world=16, fail_rank=11)
    folder = tmp_path / "slurm"
    names = gen_log.split_per_rank(str(one), str(folder), 16)
    assert len(names) == 17  # 16 ranks and the job's own output
    return one, folder, meta


def test_a_folder_of_per_rank_files_is_diagnosed_like_the_one_file(tmp_path):
    one, folder, meta = _split_log(tmp_path)
    single = diagnose_paths([str(one)], mask=False)
    split = diagnose_paths([str(folder)], mask=False)
    assert len(split.sources) == 17
    for d in (single, split):
        assert d.root_cause is not None
        assert d.root_cause.signature == "cuda-oom"
        assert d.root_cause.rank == meta.rank == 11
    evidence = split.root_cause.evidence[0]
    assert evidence.path.endswith(f"slurm-{gen_log.SPLIT_JOB_ID}-11.out")
    with open(evidence.path, encoding="utf-8") as fh:
        line = fh.read().split("\n")[evidence.line - 1]
    assert "OutOfMemoryError" in line

    def collateral(d):
        return {c.signature: sorted(c.ranks) for c in d.collateral}

    assert collateral(split)["nccl-watchdog-timeout"] == sorted(meta.timeout_ranks)
    assert collateral(split) == collateral(single)
    assert split.ranks.world_size == single.ranks.world_size == 16


def test_the_metric_sampling_budget_is_shared_by_the_files_of_a_scan(tmp_path, monkeypatch):
    """With a budget of 40 lines read in full, 4 files of 30 metric lines each read 40 in full
    then every 2nd or 4th (plus each file's last): not 4 x 30."""
    monkeypatch.setattr(scan, "LIGHT_FULL", 40)
    read: list[int] = []
    original = scan.Scanner._light

    def counting(self, number, line, path, tagger):  # type: ignore[no-untyped-def]
        read.append(number)
        return original(self, number, line, path, tagger)

    monkeypatch.setattr(scan.Scanner, "_light", counting)
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(
            "".join(f"step {i} | loss {1.0 + i / 100:.3f}\n" for i in range(30)), encoding="utf-8"
        )
    diagnose_paths([str(tmp_path)], mask=False)
    # 40 in full, then lines 41..79 at stride 2, 80..120 at stride 4, plus the last of the
    # files whose last line was skipped.
    assert 40 + 15 < len(read) < 120
    assert read[:30] == list(range(1, 31))
