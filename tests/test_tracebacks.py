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


# rich.traceback's rendering (rich/traceback.py, Traceback._render_stack), 80 columns, with
# show_locals: a frame per "path:line in func", the current line marked "❱", a long path
# folded at the panel's width, a nested locals panel, and a chained cause between panels.
RICH = """╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /work/lena/tok/shards.py:57 in read_shard                                    │
│                                                                              │
│   54 │   with open(path, "rb") as fh:                                        │
│   55 │   │   header = fh.read(16)                                            │
│   56 │   │   if header[:4] != MAGIC:                                         │
│ ❱ 57 │   │   │   raise ValueError(f"bad magic in {path}")                    │
│                                                                              │
│ ╭──────────────────────────────── locals ─────────────────────────────────╮ │
│ │ header = b'\\x00\\x00\\x00\\x00'                                           │ │
│ │   path = '/data/tok/shard-0031.bin'                                     │ │
│ ╰─────────────────────────────────────────────────────────────────────────╯ │
╰──────────────────────────────────────────────────────────────────────────────╯
ValueError: bad magic in /data/tok/shard-0031.bin

The above exception was the direct cause of the following exception:

╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /work/lena/tok/cli.py:88 in pretokenize                                      │
│                                                                              │
│   85 │   for i, path in enumerate(paths):                                    │
│   86 │   │   try:                                                            │
│ ❱ 88 │   │   │   rows += read_shard(path)                                    │
│                                                                              │
│ /opt/conda/envs/tok/lib/python3.11/site-packages/datasets/arrow_writer.py:   │
│ 612 in write_batch                                                           │
│                                                                              │
╰──────────────────────────────────────────────────────────────────────────────╯
RuntimeError: shard 31 of 64 unreadable
"""


def test_rich_panels_give_frames_code_and_the_chain():
    first, second = read(RICH)
    assert (first.type, first.message, first.log_line, first.chained) == (
        "ValueError",
        "bad magic in /data/tok/shard-0031.bin",
        14,
        None,
    )
    assert [(f.file, f.line, f.func, f.user) for f in first.frames] == [
        ("/work/lena/tok/shards.py", 57, "read_shard", True)
    ]
    assert first.frames[0].code == 'raise ValueError(f"bad magic in {path}")'
    assert (second.type, second.log_line, second.chain_index, second.chained) == (
        "RuntimeError",
        29,
        1,
        "cause",
    )
    # the library path folded at the panel's width is one frame, joined with its tail
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.func, f.user) for f in second.frames] == [
        ("cli.py", 88, "pretokenize", True),
        ("arrow_writer.py", 612, "write_batch", False),
    ]
    assert second.user_frame.line == 88


def test_a_rich_panel_cut_before_its_edge_yields_nothing_and_later_lines_are_read():
    cut = RICH.split("\n")[:6] + ["step 12 loss 2.31", "KeyError: 'x'"]
    (exc,) = read("\n".join(cut))
    # the panel was cut: its frame belongs to no exception; the bare line after it is read
    assert (exc.type, exc.header, exc.frames) == ("KeyError", "bare", [])


def test_a_ranks_rich_traceback_names_its_user_frame_and_accelerates_process_count(tmp_path):
    """Through the engine: ``[rank1]:``-prefixed rich panels give rank 1's own frame as the
    fix's location, and accelerate's report of the defaults it used ("`--num_processes` was
    set to a value of `2`", accelerate/commands/launch.py) fills the verify's process count."""
    from rootrank.engine import diagnose_paths

    lines = [
        "The following values were not passed to `accelerate launch` and had defaults used instead:",
        "\t`--num_processes` was set to a value of `2`",
        "[rank0]: step 10/400 loss 3.02",
        "[rank1]: step 10/400 loss 3.05",
    ] + [f"[rank1]: {line}" for line in RICH.strip().split("\n")]
    p = tmp_path / "pretok.log"
    p.write_text("\n".join(lines) + "\n")
    d = diagnose_paths([str(p)], mask=False)
    rc = d.root_cause
    assert rc is not None and d.initiating_rank == 1
    # the chain's deepest cause, raised in the user's own code, is the root
    assert (rc.signature, rc.evidence[0].line) == ("user-code-exception", 4 + 14)
    assert rc.fix.steps[0].startswith(
        "shards.py:57 (in read_shard), where rank 1 raised ValueError"
    )
    assert rc.verify.startswith("accelerate launch --num_processes 2 ")


def test_a_windows_pythons_standard_library_is_not_user_code():
    assert not is_user_frame(r"C:\Users\dev\miniconda3\envs\seg\Lib\multiprocessing\spawn.py")
    assert not is_user_frame(r"C:\Python311\Lib\site-packages\torch\distributed\run.py")
    assert is_user_frame(r"C:\Users\dev\seg\train_seg.py")
