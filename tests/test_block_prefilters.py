"""The scan's per-block prefilters give what the substring searches they replace give.

``mask.learn_users(text, users, lower)`` and ``scan._stacks_in_block(text, lower, known)``
first ask one native pass over the block's lower-cased bytes which literals may be there,
then search only those in the text as written. The argument (every literal is ASCII; an
ASCII character of a decoded block is the same byte of its encoding) is checked here on
generated blocks: mixed case, non-ASCII text, bytes that are not UTF-8 (decoded with
replacement characters, as ``rootrank.ingest`` decodes a block), literals cut or touching.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import frameworks, mask, scan

_PIECES = st.one_of(
    st.sampled_from(
        [
            *mask._USER_DIR_LITERALS,
            *(w for _, words in frameworks.STACK_WORDS for w in words),
            "/HOME/",
            "/users/",
            "DEEPSPEED",
            "Transformers",
            "/home/alice/train.py",
            "/scratch/bob/run/",
            "C:\\Users\\carol\\x.py",
            "~dave/x",
            " ",
            "\n",
            "[rank3]: ",
            "é",
            "Убито",
            "\u00c4",
        ]
    ),
    st.text(max_size=6),
)
_BAD_BYTES = st.sampled_from([b"", b"\xff", b"\xc3", b"\xe2\x82", b"\x80\x80"])


def _block(parts: list[str], junk: list[bytes]) -> tuple[str, bytes]:
    """A block's text and lower-cased bytes, as ``rootrank.ingest`` makes them."""
    data = b"".join(
        p.encode("utf-8", "surrogatepass") + j for p, j in zip(parts, junk, strict=True)
    )
    return data.decode("utf-8", errors="replace"), data.lower()


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30), st.data())
def test_learn_users_same_with_prefilter(parts: list[str], data: st.DataObject) -> None:
    junk = [data.draw(_BAD_BYTES) for _ in parts]
    text, lower = _block(parts, junk)
    plain: set[str] = set()
    fast: set[str] = set()
    mask.learn_users(text, plain)
    mask.learn_users(text, fast, lower)
    assert fast == plain


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30), st.data(), st.sets(st.sampled_from(frameworks.STACK_NAMES)))
def test_stacks_same_with_prefilter(parts: list[str], data: st.DataObject, known: set[str]) -> None:
    junk = [data.draw(_BAD_BYTES) for _ in parts]
    text, lower = _block(parts, junk)
    assert scan._stacks_in_block(text, lower, known) == frameworks.stacks_in(text, known)


def test_prefilters_find_real_values() -> None:
    """A block naming a home folder, a scratch folder and two stacks: the names and stacks."""
    text = (
        '[rank1]:   File "/home/alice/train.py", line 3, in <module>\n'
        "[rank2]: saving to /scratch/bob/ckpt\n"
        "[rank0]: [2026-11-29 09:04:28,866] [INFO] [real_accelerator.py:203] DeepSpeed info\n"
        "[rank0]: Megatron-LM args\n"
    )
    lower = text.encode().lower()
    users: set[str] = set()
    mask.learn_users(text, users, lower)
    assert users == {"alice", "bob"}
    assert scan._stacks_in_block(text, lower, set()) == {"deepspeed", "megatron"}
    assert scan._stacks_in_block(text, lower, {"deepspeed"}) == {"megatron"}
    # lower-case bytes of an upper-case word: the prefilter passes, the exact test does not
    assert scan._stacks_in_block("MEGATRON", b"megatron", set()) == set()


_HOST_PIECES = st.one_of(
    st.sampled_from(
        [
            "on",
            "ON",
            "From",
            "to",
            "at",
            "node",
            "hoſt",  # long s: folds to "s"
            "\u212aworker",  # Kelvin sign: folds to "k"
            "wor\u212aer",
            "machine",
            "server",
            "peer",
            "via",
            " ",
            "\t",
            "  ",
            "'",
            '"',
            "(",
            "-",
            "gpu-node-",
            "node",
            "cuda",
            "step",
            "é",
            "Ω",
            "²",
            "Ⅻ",
            "٣",
            "7",
            "018",
            ".",
            ":",
            "<",
            "Tried to allocate 2.00 GiB",
        ]
    ),
    st.text(max_size=4),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_HOST_PIECES, max_size=14))
def test_host_word_cheap_test_keeps_every_match(parts: list[str]) -> None:
    """The stdlib prefilter of the host_word rule passes on every string the rule matches, so
    masking is the same as with the old test (a digit anywhere)."""
    s = "".join(parts)
    rule = next(p for name, _, p in mask._HOST_RULES if name == "host_word")
    if rule.search(s):
        assert mask._NEAR_HOST_WORD.search(s)
    if any(c.isdigit() for c in s):
        assert mask.Masker().text(s) == _masked_with_digit_test(s)


def _masked_with_digit_test(s: str) -> str:
    """``Masker().text(s)`` with host_word's cheap test as it was (any digit)."""
    saved = list(mask._HOST_RULES)
    try:
        mask._HOST_RULES[:] = [
            (n, (lambda t: any(c.isdigit() for c in t)) if n == "host_word" else test, p)
            for n, test, p in saved
        ]
        return mask.Masker().text(s)
    finally:
        mask._HOST_RULES[:] = saved


def test_host_word_cheap_test_real_values() -> None:
    assert mask._NEAR_HOST_WORD.search("CUDA out of memory. Tried to allocate 2.00 GiB") is None
    assert mask._NEAR_HOST_WORD.search('File "train.py", line 3, in <module>') is None
    assert mask.Masker().text("connection from gpu-node-018 lost") == "connection from host-1 lost"
    assert mask.Masker().text("moved to step3") == "moved to step3"


@settings(max_examples=400, deadline=None)
@given(
    st.text(max_size=8),
    st.sampled_from(["on", "FROM", "To", "at", "node", "hoſt", "\u212aworker", "peer", "via"]),
    st.sampled_from([" ", "\t", "  \t", "    "]),
    st.sampled_from(["", "'", '"', "("]),
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=8),
    st.lists(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=4)),
    st.sampled_from(["7", "018", "٣", "9", "-3"]),
    st.text(max_size=6),
)
def test_host_word_shaped_strings(
    head: str,
    word: str,
    blank: str,
    quote: str,
    first: str,
    parts: list[str],
    digits: str,
    tail: str,
) -> None:
    """Strings shaped like host_word's matches (a word, blanks, a name ending in a digit)."""
    s = f"{head}{word}{blank}{quote}{first}{''.join('-' + p for p in parts)}{digits}{tail}"
    rule = next(p for name, _, p in mask._HOST_RULES if name == "host_word")
    if rule.search(s):
        assert mask._NEAR_HOST_WORD.search(s)
    assert mask.Masker().text(s) == _masked_with_digit_test(s)
