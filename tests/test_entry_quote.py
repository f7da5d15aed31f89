"""A fix that quotes the exception's message (``{message}``) quotes it whole up to a
length, then by sentences or clauses, never cut inside a number or a word, and keeps the
sentence the chosen variant rests on (round-13 trial, item 6: the CUDA OOM fix quoted
``"... Process 2521733 has 4"`` and left out "8.56 GiB is reserved by PyTorch but
unallocated", the figure its fragmentation advice rests on)."""

from __future__ import annotations

import json

from conftest import run_cli

from rootrank.entry import MAX_MESSAGE_CHARS, quote_message

# PyTorch 2.x's allocator message (c10/cuda/CUDACachingAllocator.cpp, OutOfMemoryError),
# on a GPU three other processes share.
OOM_MESSAGE = (
    "CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 has a total capacity of 63.42 GiB "
    "of which 1.70 GiB is free. Process 2521735 has 474.00 MiB memory in use. Process 2521734 "
    "has 474.00 MiB memory in use. Process 2521733 has 474.00 MiB memory in use. Including "
    "non-PyTorch memory, this process has 60.30 GiB memory in use. Of the allocated memory "
    "50.94 GiB is allocated by PyTorch, and 8.56 GiB is reserved by PyTorch but unallocated. "
    "If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
KEEP = r"(?:[1-9]\d*(?:\.\d+)?\s*GiB|[5-9]\d{2}(?:\.\d+)?\s*MiB) is reserved by PyTorch but unallocated"


def test_a_short_message_is_quoted_whole():
    assert quote_message("bad sample at index 7") == "bad sample at index 7"


def test_a_long_message_is_cut_between_sentences_and_keeps_the_figure_the_advice_needs():
    plain = quote_message(OOM_MESSAGE)
    assert plain == (
        "CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 has a total capacity of "
        "63.42 GiB of which 1.70 GiB is free. Process 2521735 has 474.00 MiB memory in use. "
        "Process 2521734 has 474.00 MiB memory in use. Process 2521733 has 474.00 MiB memory "
        "in use. …"
    )
    kept = quote_message(OOM_MESSAGE, keep=KEEP)
    assert kept.startswith("CUDA out of memory. Tried to allocate 4.35 GiB. ")
    assert (
        "… Of the allocated memory 50.94 GiB is allocated by PyTorch, and 8.56 GiB is "
        "reserved by PyTorch but unallocated. …"
    ) in kept
    assert len(kept) <= MAX_MESSAGE_CHARS + 10


def test_one_long_sentence_is_cut_at_a_space_never_inside_a_number():
    text = "expected " + " ".join(f"{i}.25" for i in range(200))
    quoted = quote_message(text, limit=50)
    assert quoted == "expected 0.25 1.25 2.25 3.25 4.25 5.25 6.25 7.25 …"


def test_the_cuda_oom_fix_quotes_the_reserved_but_unallocated_figure(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "[rank11]: Traceback (most recent call last):\n"
        '[rank11]:   File "train.py", line 40, in <module>\n'
        "[rank11]:     loss.backward()\n"
        f"[rank11]: torch.OutOfMemoryError: {OOM_MESSAGE}\n"
    )
    done = run_cli("diagnose", str(log), "--format", "json")
    diag = json.loads(done.stdout)
    rc = diag["root_cause"]
    assert (rc["signature"], diag["initiating_rank"]) == ("cuda-oom", 11)
    assert rc["fix"]["variant"]["id"] == "fragmentation"
    step = next(s for s in rc["fix"]["steps"] if "The message itself says it" in s)
    assert '8.56 GiB is reserved by PyTorch but unallocated. …"' in step
    assert 'Process 2521733 has 4"' not in step
