"""The user's line of a torch.compile failure is the one dynamo names under "from user
code:" after the exception line, not the traceback's last user frame (the compiled call).

Fixture ``tests/data/dynamo-graph-break-from-user-code.log``: captured from a real run
(torch 2.13 CPU, ``python train.py``) of a model compiled with
``torch.compile(backend="eager", fullgraph=True)`` whose forward calls a helper that still
holds a ``torch._dynamo.graph_break()``: the traceback ends at ``train.py:21`` (the call in
``<module>``), dynamo's message names ``train.py:16`` (forward) then ``train.py:6``
(normalize, the graph break). Paths anonymized.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

LOG = (
    Path(__file__).resolve().parent / "data" / "dynamo-graph-break-from-user-code.log"
).read_text(encoding="utf-8")


def test_dynamo_names_the_innermost_traced_user_line():
    d = diagnose_text(LOG, "job.log", mask=False)
    assert d.root_cause.signature == "dynamo-unsupported"
    frame = d.root_cause.user_frame
    assert frame is not None
    assert (frame.file, frame.line, frame.func) == ("/home/user/job/train.py", 6, "normalize")
    assert d.root_cause.fix.steps[0].startswith("train.py:6 (in normalize)")


def test_a_from_user_code_section_far_below_is_not_this_exceptions():
    """Past TRACED_FRAME_LINES lines of other output, the section belongs to no exception
    the reader can tie it to: the traceback's own user frame stays."""
    lines = LOG.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "from user code:")
    filler = [f"step {i} waiting for the next batch" for i in range(45)]
    text = "\n".join([*lines[:at], *filler, *lines[at:]]) + "\n"
    d = diagnose_text(text, "job.log", mask=False)
    frame = d.root_cause.user_frame
    assert frame is not None and (frame.line, frame.func) == (21, "<module>")
