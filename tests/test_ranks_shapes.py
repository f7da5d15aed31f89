"""The tagger's shaped path (a line layout learnt once, read with one match) gives what the
general path gives, line by line and in the state it leaves, on generated lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank.ranks import RankTagger

_PREFIXES = st.sampled_from(
    [
        "",
        "[rank{r}]: ",
        "[rank{r}]:",
        "[default{l}]:[rank{r}]: ",
        "[default{l}]: ",
        "[trainer{l}]: ",
        "[E{r}]: ",
        "node01: [rank{r}]: ",
        "{r}: ",
        "(pid={r}) ",
    ]
)
_STAMPS = st.tuples(
    st.sampled_from(["2026", "1999", "2126", "0026"]),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.sampled_from([" ", "T", "_"]),
    st.sampled_from(["", ",866", ".5", ",1234567890", "Z", ",866Z", ",1+01:00"]),
)
_HEADERS = st.sampled_from(
    [
        " - ",
        " - ",
        " - ",
        " ",
        " INFO ",
        " - INFO - ",
        " [x.py:12] ",
        " | ",
        ": ",
        "  -  ",
        "] ",
        "",
    ]
)
_MESSAGES = st.one_of(
    st.sampled_from(
        [
            "train - INFO - step 2 | loss 10.4",
            "svc-1 | up",
            "INFO x",
            "rank 3: go",
            "[rank 3] go",
            "step 5 Rank 4 x",
            "world_size=8 a",
            "x NCCL y:1",
            "a-b c",
            "-- Process 1 terminated with the following error:",
            "Failures:",
            " step",
            "rank : 3 (local_rank: 3)",
            "ValueError: x",
            "trainer-2 | x",
            "t",
            "",
        ]
    ),
    st.text(alphabet="abcXIW-|: [](0123456789.,", max_size=30),
    st.builds(str.__add__, st.sampled_from("abrst"), st.text(alphabet="ab -|:01", max_size=20)),
    st.builds(str.__add__, st.sampled_from("abrst"), st.text(alphabet="ab -|:01", max_size=20)),
)


@st.composite
def _lines(draw) -> str:
    prefix = draw(st.one_of(_PREFIXES, st.sampled_from(["", "[rank{r}]: "]))).format(
        r=draw(st.integers(0, 12345)), l=draw(st.integers(0, 9))
    )
    year, mo, d, h, sep, tail = draw(_STAMPS)
    stamp = f"{year}-{mo:02d}-{d:02d}{sep}{h:02d}:04:28{tail}"
    if draw(st.integers(0, 4)) == 0:
        stamp = f"E{mo:02d}{d:02d} {h:02d}:04:28.123456 123 x.cpp:5]"
    return prefix + stamp + draw(_HEADERS) + draw(_MESSAGES)


def _state(t: RankTagger) -> tuple:
    return (
        t.local_to_global,
        t.pid_rank,
        t.world_size,
        t.hosts,
        t.elastic,
        t._last_time,
        t._summary,
        t._summary_item_line,
        t._spawn_proc,
        t.actor_rank,
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(_lines(), min_size=1, max_size=40), st.sampled_from([None, 5]))
def test_shaped_path_equals_general_path(lines: list[str], path_rank: int | None) -> None:
    shaped = RankTagger(path="a.log", path_rank=path_rank)
    general = RankTagger(path="a.log", path_rank=path_rank)
    for number, text in enumerate(lines * 2, 1):  # twice: the second pass uses learnt shapes
        assert shaped.tag(text, number) == general._tag_general(text, number), text
    assert _state(shaped) == _state(general)


def test_step_lines_are_read_by_a_learnt_shape() -> None:
    """The layout of a 1,024-rank log's step lines is learnt from its first line and reads
    the next ones (rank, message, time as the general path gives them)."""
    t = RankTagger()
    first = "[rank943]: 2026-11-29 09:04:28,866 - train - INFO - step 2 | loss 10.4756"
    t.tag(first, 1)
    assert len(t._shapes) == 1
    line = "[rank7]: 2026-11-29 09:04:29,120 - train - INFO - step 3 | loss 10.4"
    assert t._shapes[0].regex.match(line)
    got = t.tag(line, 2)
    assert (got.rank, got.text) == (7, "train - INFO - step 3 | loss 10.4")
    assert got.time == RankTagger()._tag_general(line, 1).time
    assert round(got.time % 86400, 3) == 9 * 3600 + 4 * 60 + 29.12
