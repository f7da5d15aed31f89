"""A line's shape read by a learnt template is the shape the number split gives (issue 11).

:func:`rootrank.progress.shape` learns a template for a shape it has seen a few times and reads
later lines of that shape with one match; these tests hold it to the plain split
(:data:`rootrank.progress._NUMBER`), on lines built from the characters where the two could part
ways: signs next to numbers, exponents, points, digits glued to words.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import progress


def split_shape(text: str) -> tuple[str, list[str]]:
    """The shape by the split alone (no template, no memory)."""
    parts = progress._NUMBER.split(text)
    return "\x00".join(parts[0::2]), parts[1::2]


@pytest.fixture(autouse=True)
def _fresh_templates(monkeypatch):
    monkeypatch.setattr(progress, "_templates", ())
    monkeypatch.setattr(progress, "_shape_seen", {})
    monkeypatch.setattr(progress, "_last_shape", ["", ("", [])])


def learn(text: str) -> None:
    """Show ``text`` until its shape has a template (when it has numbers)."""
    for _ in range(progress.TEMPLATE_AFTER):
        progress._last_shape[0] = None  # read again, not from the memory of the last line
        progress.shape(text)


def test_a_step_line_is_read_by_its_template():
    learn("step 1 | loss 10.4721 | lr 3.000e-04 | mem 66.59GiB")
    assert len(progress._templates) == 1
    got = progress.shape("step 257 | loss 9.25 | lr 2.5e-05 | mem 61.0GiB")
    assert got == (
        "step \x00 | loss \x00 | lr \x00 | mem \x00GiB",
        ["257", "9.25", "2.5e-05", "61.0"],
    )
    assert progress._templates[0][0].fullmatch("step 257 | loss 9.25 | lr 2.5e-05 | mem 61.0GiB")


@pytest.mark.parametrize(
    ("learnt", "other"),
    [
        # a literal that ends in a sign: "x-5" splits as "x" and "-5", not "x-" and "5"
        ("x--5 y", "x-5 y"),
        ("a-+3", "a-3"),
        # a point after a number belongs to it ("3." is a number), so ".x" never follows one
        ("a 2e5.x b", "a 3.x b"),
        # an exponent without digits is not one
        ("v 1e-x", "v 1e-5x"),
        # two numbers with nothing between them
        ("1-2", "12"),
        ("1-2", "1e-2"),
    ],
)
def test_a_line_of_another_shape_is_not_read_by_a_template(learnt, other):
    learn(learnt)
    assert progress._templates, "the learnt shape has a template"
    progress._last_shape[0] = None
    assert progress.shape(other) == split_shape(other)


_PIECES = st.lists(
    st.sampled_from([*"1 23 4.5 6. 7e8 9E-1 2e+3 - + . e E x | : = \u0661 \u0663".split(), " "]),
    max_size=14,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(learnt=_PIECES, others=st.lists(_PIECES, max_size=6))
def test_the_template_gives_the_split(learnt, others):
    progress._templates = ()
    progress._shape_seen.clear()
    learn(learnt)
    for text in [learnt, *others]:
        progress._last_shape[0] = None
        assert progress.shape(text) == split_shape(text), text
