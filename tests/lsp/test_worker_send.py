"""The text reaches the engine process in pieces (:data:`rootrank.lsp.worker.SEND_CHARS`
code points each): the engine must read exactly the bytes of the whole text's encoding."""

from __future__ import annotations

import asyncio
import json

import pytest

from rootrank.engine import default_library, diagnose_utf8
from rootrank.lsp import worker

TEXT = (
    "[rank1]: step 3 loss 1.20 — warm-up done, café ☕ \ud800 lone surrogate\n"
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/home/u/proj/train.py", line 3, in <module>\n'
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.mark.parametrize("text", [TEXT, TEXT.encode("ascii", "replace").decode("ascii")])
def test_the_engine_reads_the_text_sent_in_pieces_as_the_whole_text(monkeypatch, text):
    monkeypatch.setattr(worker, "SEND_CHARS", 7)  # a piece boundary inside é, ☕ and the surrogate

    async def run() -> dict:
        pool = worker.EnginePool(1)
        try:
            return await pool.diagnose(text, "train.log")
        finally:
            await pool.aclose()

    got = asyncio.run(run())
    expected = diagnose_utf8(
        text.encode("utf-8", "replace"), "train.log", library=default_library(), chars=len(text)
    ).to_dict()
    assert got == json.loads(json.dumps(expected, default=str))
    assert got["root_cause"]["signature"] == "cuda-oom"
    assert got["root_cause"]["rank"] == 0
    assert got["lines_read"] == 4
