"""The scan's gating shortcuts (issue 11, speed) give what the slower forms they replace give.

- ``scan._gated_lines`` (both gates' line starts merged in one generator, flags in the low
  bits) against the plain merge of the two gates' :meth:`~rootrank.match.Gate.line_starts`;
- the launcher-sign and stack-word pre-checks (one Aho-Corasick pass) against the substring
  tests they skip.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import scan
from rootrank.engine import default_library, matcher_for
from rootrank.frameworks import STACK_WORDS
from rootrank.ingest import text_blocks
from rootrank.progress import LITERALS

_MAIN_WORDS = ["Traceback (most recent call last):", "CUDA out of memory", " nranks ", "NCCL WARN"]
_PIECES = st.sampled_from(
    [
        *LITERALS,
        *(w.upper() for w in LITERALS),
        *_MAIN_WORDS,
        *(w for _, words in STACK_WORDS for w in words),
        *(lit for _, lits, _ in scan._LAUNCHER_SIGNS for lit in lits),
        "step 12 loss 2.5",
        "\n",
        "\n",
        " ",
        "é",
        "日本",
        "\ufffd",
        "x",
    ]
)
_TEXT = st.lists(_PIECES, max_size=40).map("".join)


def _merged(gate, block) -> list[tuple[int, bool, bool]]:
    """What the scan did before: both gates' line starts merged; (start, curve, light)."""
    main = set(gate.line_starts(block))
    curve = set(scan._CURVE_GATE.line_starts(block))
    return [(s, s in curve, s not in main) for s in sorted(main | curve)]


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_gated_lines_are_the_merge_of_both_gates(text: str) -> None:
    gate = matcher_for(default_library()).gate
    for block in text_blocks(text):
        got = [(v >> 2, bool(v & 2), bool(v & 1)) for v in scan._gated_lines(gate, block)]
        assert got == _merged(gate, block)


def test_gated_lines_on_a_known_block() -> None:
    gate = matcher_for(default_library()).gate
    text = (
        "hello\n"
        "step 3 loss 2.0\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "plain\n"
        "Traceback (most recent call last):\n"
    )
    (block,) = list(text_blocks(text))
    got = [(v >> 2, bool(v & 2), bool(v & 1)) for v in scan._gated_lines(gate, block)]
    step, oom, trace = text.index("step"), text.index("torch."), text.index("Traceback")
    assert got == [(step, True, True), (oom, False, False), (trace, False, False)]


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_word_prechecks_agree_with_the_substring_tests(text: str) -> None:
    stack = any(w in text for _, words in STACK_WORDS for w in words)
    assert bool(scan._STACK_WORDS.find_matches_as_indexes(text)) == stack
    launcher = any(lit in text for _, lits, _ in scan._LAUNCHER_SIGNS for lit in lits)
    assert bool(scan._LAUNCHER_WORDS.find_matches_as_indexes(text)) == launcher


def test_launch_facts_read_the_same_with_the_precheck() -> None:
    facts = scan.LaunchFacts()
    facts.read("plain line with no launcher", 1)
    assert facts.launchers == set()
    facts.read("srun: error: node7: task 3: Exited with exit code 1", 2)
    facts.read("[1,3]<stderr>:Traceback (most recent call last):", 3)
    assert facts.launchers == {"srun", "mpirun"}
