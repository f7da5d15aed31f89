"""Debugger and notebook pastes: the exception named by VS Code's exception widget
(``Exception has occurred: T`` + message, debugpy's frames) and by IPython/Jupyter's
``T      Traceback (most recent call last)`` header reaches the matcher and the
unclassified fallback as an exception line in a plain traceback does.

Wordings: VS Code ``exceptionWidget.ts`` ('Exception has occurred: {0}', 'User-unhandled
exception has occurred: {0}'), debugpy ``pydevd_comm.build_exception_info_response``
(exceptionId = the type's ``__qualname__``, the "(note: full exception trace is shown but
execution is paused at: ...)" suffix, ``traceback.format_list`` frames), IPython ``ultratb``
(``Cell In[n], line N``, ``File path:N, in func(...)``, ``---->`` markers)."""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.tracebacks import TracebackReader

VSCODE_OOM = """Exception has occurred: OutOfMemoryError       (note: full exception trace is shown but execution is paused at: forward)
CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.34 GiB already allocated; 11.44 MiB free; 6.52 GiB reserved in total by PyTorch)
  File "/home/user/proj/model.py", line 57, in forward
    h = self.mlp(x)
  File "/home/user/proj/train.py", line 120, in <module>
    loss = model(batch)
"""

VSCODE_PORT = """Exception has occurred: OSError
[Errno 98] Address already in use
  File "/home/user/proj/train.py", line 30, in <module>
    dist.init_process_group("nccl")
"""

VSCODE_UNKNOWN = """Exception has occurred: ShardMissingError
shard 7 of the training set was never written
  File "/home/user/proj/data.py", line 12, in load
    raise ShardMissingError(f"shard {i} of the training set was never written")
  File "/home/user/proj/train.py", line 40, in <module>
    ds = load(7)
"""

VSCODE_WITH_FINAL_LINE = """User-unhandled exception has occurred: ShardMissingError
shard 7 of the training set was never written
  File "/home/user/proj/data.py", line 12, in load
    raise ShardMissingError(f"shard {i} of the training set was never written")
data.ShardMissingError: shard 7 of the training set was never written
"""

IPYTHON_UNKNOWN = """---------------------------------------------------------------------------
ShardMissingError                         Traceback (most recent call last)
Cell In[4], line 2
      1 import data
----> 2 ds = data.load(7)

File ~/proj/data.py:12, in load(i)
     10 def load(i):
     11     if not exists(i):
---> 12         raise ShardMissingError(f"shard {i} of the training set was never written")

ShardMissingError: shard 7 of the training set was never written
"""

IPYTHON_CODE_IS_NOT_A_MESSAGE = """---------------------------------------------------------------------------
ShardMissingError                         Traceback (most recent call last)
Cell In[7], line 3
      1 # a notebook that raises its own error with an OOM-looking text
      2 import data
----> 3 raise ShardMissingError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 8.00 GiB total capacity")

ShardMissingError: missing
"""


def test_vscode_header_and_message_fire_an_exception_keyed_signature_at_the_header():
    # port-in-use is keyed on the exception type ("OSError ... Address already in use"):
    # the message line alone does not carry it; the header names the type.
    diag = diagnose_text(VSCODE_PORT, mask=False)
    rc = diag.root_cause
    assert (rc.signature, rc.failure_class) == ("port-in-use", "port-in-use")
    ev = rc.evidence[0]
    assert ev.line == 1
    assert VSCODE_PORT.splitlines()[0][ev.column_start : ev.column_end] == "OSError"


def test_vscode_oom_paste_is_cuda_oom_with_the_note_suffix_ignored():
    diag = diagnose_text(VSCODE_OOM, mask=False)
    rc = diag.root_cause
    assert (rc.signature, rc.failure_class) == ("cuda-oom", "cuda-oom")
    assert rc.evidence[0].line == 2
    assert rc.captures["size"] == "20.00 MiB"


def test_vscode_unclassified_names_the_header_exception_at_the_header_line():
    diag = diagnose_text(VSCODE_UNKNOWN, mask=False)
    assert diag.root_cause is None
    u = diag.unclassified
    assert u.title == "ShardMissingError: shard 7 of the training set was never written"
    assert u.evidence[0].line == 1
    assert (
        VSCODE_UNKNOWN.splitlines()[0][u.evidence[0].column_start : u.evidence[0].column_end]
        == "ShardMissingError"
    )


def test_vscode_paste_with_debugpys_final_line_uses_that_line():
    diag = diagnose_text(VSCODE_WITH_FINAL_LINE, mask=False)
    u = diag.unclassified
    assert u.title == "data.ShardMissingError: shard 7 of the training set was never written"
    assert u.evidence[0].line == 5


def test_ipython_traceback_is_read_with_its_frames_and_exception():
    reader = TracebackReader()
    found = [
        e for i, line in enumerate(IPYTHON_UNKNOWN.split("\n")) if (e := reader.feed(line, i + 1))
    ]
    (exc,) = found
    assert (exc.type, exc.message, exc.log_line, exc.header) == (
        "ShardMissingError",
        "shard 7 of the training set was never written",
        12,
        "ipython",
    )
    assert [(f.file, f.line, f.func, f.user) for f in exc.frames] == [
        ("Cell In[4]", 2, "", True),
        ("~/proj/data.py", 12, "load(i)", True),
    ]
    diag = diagnose_text(IPYTHON_UNKNOWN, mask=False)
    assert diag.root_cause is None
    assert (
        diag.unclassified.title
        == "ShardMissingError: shard 7 of the training set was never written"
    )
    assert diag.unclassified.evidence[0].line == 12


def test_ipython_jupyter_keyerror_is_a_user_code_exception_on_its_line():
    text = (
        "---------------------------------------------------------------------------\n"
        "KeyError                                  Traceback (most recent call last)\n"
        "Cell In[3], line 5\n"
        "      3 d = {}\n"
        "      4 # look up a label\n"
        '----> 5 x = d["a"]\n'
        "\n"
        "KeyError: 'a'\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert (rc.failure_class, rc.evidence[0].line) == ("user-code-exception", 8)


def test_ipython_arrow_code_line_is_source_not_a_message():
    diag = diagnose_text(IPYTHON_CODE_IS_NOT_A_MESSAGE, mask=False)
    assert "cuda-oom" not in {f.signature for f in diag.findings}
    assert diag.unclassified.title == "ShardMissingError: missing"
    assert diag.unclassified.evidence[0].line == 8


def test_debugger_chain_in_debugpys_stack_text_keeps_both_exceptions():
    text = (
        "Exception has occurred: RuntimeError\n"
        "could not load shard\n"
        '  File "/home/user/proj/data.py", line 12, in load\n'
        "    raise KeyError(name)\n"
        "KeyError: 'shard-07'\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        '  File "/home/user/proj/train.py", line 40, in <module>\n'
        "    main()\n"
        "RuntimeError: could not load shard\n"
    )
    reader = TracebackReader()
    found = [e for i, line in enumerate(text.split("\n")) if (e := reader.feed(line, i + 1))]
    assert [(e.type, e.log_line, e.chain_index, e.chained) for e in found] == [
        ("KeyError", 5, 0, None),
        ("RuntimeError", 11, 1, "cause"),
    ]
    assert found[1].frames[0].line == 40


def test_bare_pytorch_name_in_the_header_is_matched_with_its_module():
    # debugpy names the type by __qualname__; the dynamo signature needs torch._dynamo.exc.
    text = (
        "Exception has occurred: Unsupported\n"
        "Attempted to call function marked as skipped\n"
        '  File "/home/user/proj/train.py", line 88, in train_step\n'
        "    out = compiled(x)\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "dynamo-unsupported",
        "compile-dynamo-error",
        1,
    )
    assert (
        text.splitlines()[0][rc.evidence[0].column_start : rc.evidence[0].column_end]
        == "Unsupported"
    )


def test_signatures_keyed_on_the_exception_line_fire_on_the_header_and_message():
    # Two probes keyed the way exception-line signatures are written: "RuntimeError: CUDA
    # out of memory" and "torch.OutOfMemoryError: CUDA out of memory" at the line start.
    import dataclasses

    from rootrank.engine import default_library
    from rootrank.signatures import Library, Pattern

    base = default_library().signatures["cuda-oom"]
    library = Library(
        signatures={
            "probe-runtimeerror": dataclasses.replace(
                base,
                id="probe-runtimeerror",
                patterns=[
                    Pattern(
                        "RuntimeError: CUDA out of memory", r"^RuntimeError: CUDA out of memory\."
                    )
                ],
            ),
            "probe-torch-oom": dataclasses.replace(
                base,
                id="probe-torch-oom",
                patterns=[
                    Pattern(
                        "torch.OutOfMemoryError: CUDA",
                        r"^torch\.OutOfMemoryError: CUDA out of memory\.",
                    )
                ],
            ),
        }
    )
    old_torch = VSCODE_OOM.replace("OutOfMemoryError ", "RuntimeError ", 1)
    rc = diagnose_text(old_torch, library=library, mask=False).root_cause
    assert (rc.signature, rc.evidence[0].line) == ("probe-runtimeerror", 1)
    rc = diagnose_text(VSCODE_OOM, library=library, mask=False).root_cause
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "probe-torch-oom",
        "cuda-oom",
        1,
    )
