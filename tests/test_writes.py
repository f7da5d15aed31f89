"""Whole writes (rootrank.writes): a signal that lands while a pipe is full never cuts a line.

CPython's buffered writers can drop the rest of a large write interrupted by a handled
signal (seen in ``rootrank triage --format json`` under Ctrl-C: a job line cut after 8,192
bytes, the next line glued to it). These tests make the interruption happen for real: a
child blocked writing into a full pipe gets SIGINT, which its handler takes and returns from.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rootrank.writes import write_all, write_text

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
LINES = 12  # 12 lines of ~27 KB: ~5 times a 64 KiB pipe
CHILD = f"""
import json, signal, sys
from rootrank.writes import write_text
signal.signal(signal.SIGINT, lambda *a: None)  # taken and returned from, as triage's first Ctrl-C
for i in range({LINES}):
    write_text(sys.stdout, json.dumps({{"i": i, "pad": "x" * 27000}}) + "\\n")
"""


def _in_pipe_write(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")  # anon_pipe_write too
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc wchan")
def test_lines_stay_whole_when_a_signal_lands_during_a_blocked_write():
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, env=ENV)
        for _ in range(24)
    ]
    deadline = time.monotonic() + 60
    waiting = set(range(len(children)))
    while waiting and time.monotonic() < deadline:  # each child blocked on its full pipe
        waiting = {k for k in waiting if not _in_pipe_write(children[k].pid)}
        time.sleep(0.01)
    assert not waiting, "the children never filled their pipes"
    for child in children:
        child.send_signal(signal.SIGINT)
    for child in children:
        out = child.stdout.read()
        assert child.wait(timeout=60) == 0
        lines = out.decode().splitlines()
        assert [json.loads(x)["i"] for x in lines] == list(range(LINES))
        assert all(len(x) == len(lines[0]) for x in lines[:10])


def test_write_text_without_a_descriptor_uses_the_stream():
    out = io.StringIO()
    assert write_text(out, "one line\n") is True
    assert out.getvalue() == "one line\n"


def test_write_all_reports_a_reader_that_left():
    r, w = os.pipe()
    os.close(r)
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        assert write_all(w, b"x" * 10) is False
    finally:
        signal.signal(signal.SIGPIPE, previous)
        os.close(w)


def test_write_text_flushes_what_the_stream_holds_first(tmp_path):
    path = tmp_path / "out.txt"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("held ")  # still in the stream's buffer
        assert write_text(fh, "then whole: é\n") is True
    assert path.read_text(encoding="utf-8") == "held then whole: é\n"
