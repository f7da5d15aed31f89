"""Hard-wrapped exception messages (a pasted issue or a terminal copy cuts a long message
over lines): the matcher sees the joined message, evidence stays on the exception line, and
lines that are not part of the message are never joined to it."""

from __future__ import annotations

import dataclasses

import pytest

from rootrank.engine import default_library, diagnose_text
from rootrank.signatures import Library, Pattern
from rootrank.tracebacks import continues_message


def _probe_library() -> Library:
    """The built-in cuda-oom entry with two patterns of our own: the allocator's message up
    to the size (which a wrap splits) and, alone, the tail a wrap leaves on the next line
    ("... reserved in total by PyTorch)"), so these tests do not move when the library's
    own patterns change."""
    base = default_library().signatures["cuda-oom"]
    probe = dataclasses.replace(
        base,
        patterns=[
            Pattern(
                "out of memory. Tried to allocate",
                r"out of memory\. Tried to allocate (?P<size>[\d.]+ ?[KMGT]?i?B)",
            ),
            Pattern(
                "reserved in total by PyTorch",
                r"(?P<reserved>[\d.]+ ?[KMGT]?i?B) reserved in total by PyTorch\)",
            ),
        ],
    )
    return Library(signatures={probe.id: probe})


PROBE = _probe_library()

FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/proj/train.py", line 120, in <module>\n'
    "    loss = model(batch)\n"
)


def test_word_wrapped_oom_message_is_matched_on_its_first_line():
    text = FRAMES + (
        "RuntimeError: CUDA out of memory. Tried to\n"
        "allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.34 GiB\n"
        "already allocated; 11.44 MiB free; 6.52 GiB reserved in total by PyTorch)\n"
    )
    rc = diagnose_text(text, library=PROBE, mask=False).root_cause
    assert (rc.signature, rc.failure_class) == ("cuda-oom", "cuda-oom")
    ev = rc.evidence[0]
    assert ev.line == 4
    assert rc.captures["size"] == "20.00 MiB"
    # the columns cover the part of the match on the exception line
    assert text.splitlines()[3][ev.column_start : ev.column_end] == "out of memory. Tried to"


def test_fixed_width_terminal_wrap_inside_a_word_with_rank_prefix():
    text = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/proj/train.py", line 120, in <module>\n'
        "[rank1]:     loss = model(batch)\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allo\n"
        "cate 20.00 MiB. GPU 1 has a total capacity of 79.15 GiB of which 1.2 GiB is free.\n"
    )
    diag = diagnose_text(text, library=PROBE, mask=False)
    rc = diag.root_cause
    assert (rc.failure_class, rc.rank, rc.evidence[0].line) == ("cuda-oom", 1, 4)
    assert diag.initiating_rank == 1
    assert rc.captures["size"] == "20.00 MiB"
    assert rc.frames[-1]["line"] == 120


def test_no_join_across_a_log_record_a_frame_or_another_rank():
    # The same words, but the second half is a new log record / another rank's line.
    for tail in (
        "2026-11-29 10:02:11,004 INFO allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity;\n",
        "[rank0]: allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity;\n",
        "W1129 10:02:11.436000 1990 api.py:897] allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity;\n",
    ):
        text = (
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/home/user/proj/train.py", line 120, in <module>\n'
            "[rank1]:     loss = model(batch)\n"
            "[rank1]: RuntimeError: CUDA out of memory. Tried to\n" + tail
        )
        diag = diagnose_text(text, library=PROBE, mask=False)
        assert "cuda-oom" not in {f.signature for f in diag.findings}, tail
        assert diag.unclassified.title == "RuntimeError: CUDA out of memory. Tried to"


def test_no_join_when_a_line_comes_between():
    text = FRAMES + (
        "RuntimeError: CUDA out of memory. Tried to\n"
        "\n"
        "allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.34 GiB\n"
    )
    assert "cuda-oom" not in {
        f.signature for f in diagnose_text(text, library=PROBE, mask=False).findings
    }


def test_a_first_line_already_matched_is_not_counted_again_by_the_join():
    text = FRAMES + (
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.34 GiB\n"
        "already allocated; 11.44 MiB free; 6.52 GiB reserved in total\n"
    )
    diag = diagnose_text(text, library=PROBE, mask=False)
    (oom,) = [f for f in diag.findings if f.signature == "cuda-oom"]
    assert (oom.count, [e.line for e in oom.evidence]) == (1, [4])


def test_a_tail_that_matched_alone_is_repointed_at_the_exception_line_with_its_rank():
    # The tail line carries no prefix and matches on its own; it is rank 3's message and
    # the evidence moves to the exception's first line once the joined message matches.
    text = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/home/user/proj/train.py", line 120, in <module>\n'
        "[rank3]:     loss = model(batch)\n"
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to\n"
        "allocate 1.50 GiB (GPU 3; 79.15 GiB total capacity; 76.00 GiB already allocated; 6.52 GiB reserved in total by PyTorch)\n"
    )
    diag = diagnose_text(text, library=PROBE, mask=False)
    rc = diag.root_cause
    assert (rc.rank, diag.initiating_rank, rc.evidence[0].line) == (3, 3, 4)
    assert (rc.captures["size"], rc.captures["reserved"]) == ("1.50 GiB", "6.52 GiB")
    (oom,) = [f for f in diag.findings if f.signature == "cuda-oom"]
    assert [e.line for e in oom.evidence] == [4]


@pytest.mark.parametrize(
    ("line", "continues"),
    [
        ("already allocated; 11.44 MiB free; 6.52 GiB reserved in total by PyTorch)", True),
        ("cate 20.00 MiB. GPU 1 has a total capacity of 79.15 GiB", True),
        ("", False),
        ('  File "/x/train.py", line 3, in <module>', False),
        ("Traceback (most recent call last):", False),
        ("The above exception was the direct cause of the following exception:", False),
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", False),
        ("UserWarning: something", False),
        ("[W1129 10:02:11.123 ProcessGroupNCCL.cpp:1234] Warning", False),
        ("E1129 10:02:11.436000 1990 api.py:869] failed", False),
        ("INFO:root:epoch 3", False),
        ("terminate called after throwing an instance of 'c10::Error'", False),
        ("Exception raised from c10_cuda_check_implementation at CUDAException.cpp:43", False),
        ("frame #0: c10::Error::Error(...)", False),
        ("============================================================", False),
        ("Exception has occurred: KeyError", False),
    ],
)
def test_continues_message(line, continues):
    assert continues_message(line) is continues


def test_frame_lines_cut_by_a_fixed_width_wrap_do_not_end_the_traceback():
    from rootrank.tracebacks import TracebackReader

    text = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1255, i\n'
        "n num_nodes_waiting   \n"
        "    self._state_holder.sync()\n"
        '  File "/venv/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 11\n'
        "9, in _call_store                 \n"
        "    raise RendezvousConnectionError(\n"
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed.\n"
    )
    reader = TracebackReader()
    found = [e for i, line in enumerate(text.split("\n")) if (e := reader.feed(line, i + 1))]
    (exc,) = found
    assert exc.log_line == 8
    assert [(f.line, f.func) for f in exc.frames] == [
        (1255, "num_nodes_waiting"),
        (119, "_call_store"),
    ]


def test_with_the_builtin_library_a_word_wrapped_oom_is_cuda_oom_on_the_exception_line():
    text = FRAMES + (
        "RuntimeError: CUDA out of memory. Tried to\n"
        "allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.34 GiB\n"
        "already allocated; 11.44 MiB free)\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert (rc.failure_class, rc.evidence[0].line, rc.captures.get("size")) == (
        "cuda-oom",
        4,
        "20.00 MiB",
    )
