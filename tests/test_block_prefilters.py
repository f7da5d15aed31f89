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
