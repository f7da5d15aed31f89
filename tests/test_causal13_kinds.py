"""The kinds of miss round 13 fixes, each on text written here in the tools' real shape:

A. torchelastic's failure summary quotes the failing rank's own traceback (its error file,
   ``py_callstack``, every line indented two more spaces: ``_format_failure`` in
   torch/distributed/elastic/multiprocessing/errors/__init__.py): the quoted traceback is
   that rank's, its exception is the root cause and the summary is collateral; a paste cut
   inside it still shows the message's tail (a Dynamo graph-break error) and the user's
   frame.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

# -- A ------------------------------------------------------------------------------------

_SUMMARY_HEAD = """\
W1203 10:00:01.000000 1234 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2001 closing signal SIGTERM
E1203 10:00:01.500000 1234 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 2002) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-03_10:00:01
  host      : node01
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 2002)
  error_file: /tmp/torchelastic_abc/none_xyz/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "/usr/lib/python3.12/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/home/u/train.py", line 40, in main
      loss = model(batch).sum()
    File "/home/u/model.py", line 12, in forward
      return self.proj(x)
"""


def test_the_summary_s_quoted_exception_is_its_rank_s_root_cause():
    log = (
        _SUMMARY_HEAD
        + "  RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 256x128)\n"
        + "  \n"
        + "=" * 60
        + "\n"
    )
    d = diagnose_text(log, "torchrun.log", mask=False)
    assert d.root_cause.signature == "shape-mismatch"
    assert d.root_cause.evidence[0].line == 24
    assert d.root_cause.evidence[0].rank == 1
    assert d.initiating_rank == 1
    assert (d.root_cause.user_frame.file, d.root_cause.user_frame.line) == ("/home/u/model.py", 12)
    assert "elastic-child-failed" in {f.signature for f in d.collateral}


def test_a_cut_quoted_traceback_s_graph_break_tail_is_the_rank_s_compile_error():
    # the paste lost the exception line: the message's tail (a Dynamo graph break, each line
    # indented two spaces by torchelastic) is what is left of it
    log = _SUMMARY_HEAD + (
        "    Hint: Use `torch.cond` to express dynamic control flow.\n"
        "  \n"
        "    Developer debug context: attempted to jump with TensorVariable()\n"
        "  \n"
        "   For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html\n"
        "  \n"
        "  from user code:\n"
        '     File "/home/u/model.py", line 14, in forward\n'
        "      if gate.sum() > 0:\n"
    )
    d = diagnose_text(log, "torchrun.log", mask=False)
    assert d.root_cause.signature == "dynamo-graph-break-error"
    assert d.root_cause.failure_class == "compile-dynamo-error"
    assert d.root_cause.evidence[0].line == 28
    assert d.initiating_rank == 1
    # the "Hint:" line at the frames' indent is a message line, not an exception (read as
    # one, the innermost user frame would be its frames' model.py:12)
    assert (d.root_cause.user_frame.file, d.root_cause.user_frame.line) == ("/home/u/model.py", 14)
    assert "elastic-child-failed" in {f.signature for f in d.collateral}


def test_a_graph_break_logged_by_torch_logging_is_no_error():
    log = (
        "[rank0]:W1203 09:30:03.010000 51002 torch/_dynamo/exc.py:514] [1/0] Graph break from "
        "`Tensor.item()`, consider setting torch._dynamo.config.capture_scalar_outputs = True\n"
        "[rank0]:W1203 09:30:03.010000 51002 torch/_dynamo/exc.py:514] [1/0]  For more details "
        "about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html\n"
        "step 10 | loss 3.912\nstep 20 | loss 3.544\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause is None
    assert "dynamo-graph-break-error" not in {f.signature for f in d.findings}
