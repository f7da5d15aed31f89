"""A log indented as a whole (pasted as a Markdown code block, per-rank files that keep the
space after a ``[rankN]:`` prefix) reads like the unindented log: same class, rank, frames
and line, evidence columns shifted by the indent (rootrank.ingest.dedented). The log is
written in the shape torchrun and PyTorch print."""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.ingest import Block, dedented, text_blocks

LOG = """\
[rank0]: step 10 loss 2.113
[rank1]: step 10 loss 2.118
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/job/train.py", line 41, in <module>
[rank1]:     loss.backward()
[rank1]:   File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 648, in backward
[rank1]:     torch.autograd.backward(
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a \
total capacity of 79.11 GiB of which 612.00 MiB is free.
W1202 00:10:11.123000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending \
process 4301 closing signal SIGTERM
E1202 00:10:11.456000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed \
(exitcode: 1) local_rank: 0 (pid: 4300) of binary: /usr/bin/python3
"""


def _root(text: str) -> tuple:
    r = diagnose_text(text, "job.log").to_dict()["root_cause"]
    ev = r["evidence"][0]
    return r["failure_class"], r["rank"], r["user_frame"], ev["line"], ev["column_start"]


@pytest.mark.parametrize("indent", [" ", "    ", "\t"])
def test_an_indented_log_reads_like_the_unindented_one(indent):
    plain = _root(LOG)
    frame = {"file": "/srv/job/train.py", "line": 41, "func": "<module>"}
    assert plain == ("cuda-oom", 1, frame, 8, 33)
    shifted = "".join(indent + line for line in LOG.splitlines(keepends=True))
    # Before: the [rank1]: prefix was not seen (rank 0 from the launcher, no frames).
    assert _root(shifted) == ("cuda-oom", 1, frame, 8, 33 + len(indent))


def test_a_blank_line_and_a_deeper_line_keep_the_common_indent_only():
    (block,) = dedented(text_blocks("  Traceback (most recent call last):\n\n    File x\n  E\n"))
    assert (block.text, block.offset) == ("Traceback (most recent call last):\n\n  File x\nE", 2)
    assert block.lower_bytes == block.text.lower().encode()


def test_a_log_with_one_unindented_line_is_left_as_it_is():
    text = "  Traceback (most recent call last):\n    File x\nRuntimeError: boom\n"
    (block,) = dedented(text_blocks(text))
    assert (block.text, block.offset) == (text.rstrip("\n"), 0)


def test_later_blocks_lose_the_first_blocks_indent_only_when_all_their_lines_carry_it():
    blocks = [
        Block("  a\n  b", b"  a\n  b", 1),
        Block("  C\n   d", b"  c\n   d", 3),
        Block("  e\nf", b"  e\nf", 5),
        Block("x" * 10, b"x" * 10, 6, continues=True, offset=7),
    ]
    out = [(b.text, b.lower_bytes, b.first_line, b.offset) for b in dedented(blocks)]
    assert out == [
        ("a\nb", b"a\nb", 1, 2),
        ("C\n d", b"c\n d", 3, 2),
        ("  e\nf", b"  e\nf", 5, 0),
        ("x" * 10, b"x" * 10, 6, 7),
    ]
