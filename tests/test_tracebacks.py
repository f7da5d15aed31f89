"""Traceback reading: frames, user code, exception lines and chains."""

from __future__ import annotations

from rootrank.tracebacks import TracebackReader, is_user_frame

CHAINED = """Traceback (most recent call last):
  File "/home/user/proj/data.py", line 12, in load
    raise KeyError(name)
KeyError: 'shard-07'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/user/proj/train.py", line 40, in <module>
    main()
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 631, in __next__
    data = self._next_data()
    ^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: could not load shard
"""


def read(text):
    r = TracebackReader()
    out = []
    for i, line in enumerate(text.split("\n")):
        exc = r.feed(line, i + 1)
        if exc:
            out.append(exc)
    return out


def test_chain_order_frames_and_user_code():
    first, second = read(CHAINED)
    assert (first.type, first.message, first.log_line, first.chain_index, first.chained) == (
        "KeyError",
        "'shard-07'",
        4,
        0,
        None,
    )
    assert (second.type, second.log_line, second.chain_index, second.chained) == (
        "RuntimeError",
        14,
        1,
        "cause",
    )
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.user) for f in second.frames] == [
        ("train.py", 40, True),
        ("dataloader.py", 631, False),
    ]
    assert second.user_frame.line == 40


def test_dataloader_original_traceback_and_dotted_type():
    text = (
        "Original Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop\n'
        "    data = fetcher.fetch(index)\n"
        "torch.utils.data._utils.collate.SomethingError: stack expects each tensor to be equal size\n"
    )
    (exc,) = read(text)
    assert exc.type == "torch.utils.data._utils.collate.SomethingError"
    assert exc.frames[0].user is False


def test_is_user_frame():
    assert is_user_frame("/home/user/proj/train.py")
    assert is_user_frame("train.py")
    assert not is_user_frame("/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py")
    assert not is_user_frame("<frozen runpy>")


def test_a_cut_traceback_yields_nothing():
    assert read('Traceback (most recent call last):\n  File "x.py", line 1, in f\n') == []


def test_exception_ignored_in_del_is_marked_ignored():
    text = (
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f2b1c8a3e20>\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/multiprocessing/process.py", line 160, in is_alive\n'
        "AssertionError: can only test a child process\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 3, in <module>\n'
        "ValueError: real failure\n"
    )
    first, second = read(text)
    assert (first.type, first.ignored) == ("AssertionError", True)
    assert (second.type, second.ignored) == ("ValueError", False)
