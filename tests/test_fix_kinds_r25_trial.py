"""New-user trial r25 kinds (/work/notes/trial-r25.md), each on a real torch 2.13 CPU run
captured for it (tests/r25_trial, the scripts there as ``*.txt``; the two variants' runs
under tests/fix_variants/user-code-exception; ``vdb7`` and
``img4`` are local packages whose module names hold a digit):

- an exception whose dotted type holds a digit in a module part and whose class does not end
  in ``Error`` (``vdb7.errors.SerializationFailure``, ``img4.error``) was peeled off its line as
  a pdsh host label: a single process was "No known failure", a torchrun job
  elastic-child-failed with the exception's name as rank 1's host (and so two "nodes", and
  ``--nproc-per-node=gpu`` in the verify); the masker showed it as ``host-1``;
- a bare ``NotImplementedError`` raised by a method the frame above called on an object (a
  base class's abstract method) got the dispatcher fix ("add a branch");
- an assert whose own message names both numbers of a divisibility check got "log the values";
- the Fix summary cut a quoted message at its first embedded ``"``;
- the missing-file check read ``test -e <that path>`` under a message that quotes the path;
- the batch-split fix sized labels at the loss line instead of cutting input and target alike.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.exc_name import exception_path
from rootrank.mask import Masker
from rootrank.report import to_text

HERE = Path(__file__).parent / "r25_trial"
VARIANTS = Path(__file__).parent / "fix_variants" / "user-code-exception"


def _diag(name: str, mask: bool = False):
    path = HERE / name if (HERE / name).exists() else VARIANTS / name
    return diagnose_paths([str(path)], mask=mask)


def _summary_fix(name: str) -> str:
    text = to_text(_diag(name, mask=True))
    return next(line for line in text.splitlines() if line.startswith("Fix: "))


def test_digit_module_exception_under_torchrun_is_the_user_exception_on_rank_1():
    # before: elastic-child-failed, "rank 1, host vdb7.errors.SerializationFailure" (unmasked),
    # verify "torchrun --log-dir logs --redirects 3 --tee 3 --nproc-per-node=gpu ledger.py"
    d = _diag("ledger.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert rc.host == "localhost"
    assert rc.evidence[0].line == 10
    assert rc.user_frame is not None and rc.user_frame.line == 10
    assert rc.verify.startswith("torchrun --nproc-per-node=2 ledger.py")


def test_digit_module_exception_line_is_not_masked_as_a_host():
    d = _diag("ledger.log", mask=True)
    rc = d.root_cause
    assert rc is not None and rc.host == "localhost"
    assert rc.evidence[0].text.startswith("[rank1]: vdb7.errors.SerializationFailure: ")
    m = Masker()
    assert m.text("img4.error: (-5:Bad argument) image is empty") == (
        "img4.error: (-5:Bad argument) image is empty"
    )
    # real host labels stay masked, also one written in capitals
    assert m.text("gpu7.cluster.local: step 3").startswith("host-")
    assert m.text("Node3.Corp.Local: step 3").startswith("host-")
    assert m.text("node01: [rank3]: loss 0.1").startswith("host-")


def test_lower_case_class_in_a_digit_module_single_process_is_read():
    # before: "No known failure found." (exit 1) on a crashed run
    d = _diag("thumbs.log")
    assert d.root_cause is None
    u = d.unclassified
    assert u is not None
    assert u.evidence[0].line == 5
    assert u.captures.get("exc_type") == "img4.error" or "img4.error" in u.evidence[0].text


def test_exception_path_shape():
    for name in (
        "psycopg2.errors.UniqueViolation",
        "cv2.error",
        "socket.gaierror",
        "socket.timeout",
        "h5py.h5f.FileIDError",
        "MySQLdb._exceptions.OperationalError",
    ):
        assert exception_path(name), name
    for name in ("node01", "gpu7.cluster.local", "Node3.Corp.Local", "node-1.a.b", "10.0.0.5"):
        assert not exception_path(name), name


def test_abstract_method_not_overridden_gets_implement_in_subclass():
    # before: "Add a branch (or register an implementation) in ... for the value this run passed"
    d = _diag("abstract-method.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 0
    assert rc.evidence[0].line == 12
    assert rc.fix.variant is not None and rc.fix.variant.id == "abstract-method"
    first = rc.fix.steps[0]
    assert "Implement weights() in the subclass your code uses" in first
    assert "`w = src.weights(len(src))` (sampler_abs.py:19)" in first
    assert "Add a branch" not in first


def test_bare_raise_in_a_plain_function_keeps_the_dispatcher_fix():
    d = _diag("pick_loader.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.evidence[0].line == 8
    assert rc.fix.variant is not None and rc.fix.variant.id == "bare-raise"
    assert "raised NotImplementedError: Add a branch" in rc.fix.steps[0]


def test_assert_message_naming_both_numbers_gives_the_multiples():
    # before: "find which value breaks it (log them just before the assert)"
    d = _diag("assert-not-divisible.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank is None  # every rank raised it
    assert rc.user_frame is not None and rc.user_frame.line == 8
    assert rc.fix.variant is not None and rc.fix.variant.id == "assert-not-divisible"
    first = rc.fix.steps[0]
    assert "raised AssertionError: Make 14 a multiple of 3 (set it to 12 or 15)" in first
    assert "launch 1 or 2 instead" in first
    assert '"micro-batches 14 not evenly divisible by 3 ranks"' in first
    assert "log them just before" not in first
    assert rc.verify.startswith("torchrun --nproc-per-node=3 microbatch.py")


def test_fix_summary_keeps_a_message_with_an_embedded_quote_whole():
    # before: raised SerializationFailure: "could not serialize access ... update of ".
    line = _summary_fix("ledger.log")
    assert '"could not serialize access due to concurrent update of "ledger""' in line


def test_missing_file_check_names_the_quoted_path_shell_quoted():
    # before: "`test -e <that path>`" under the message that quotes the path
    d = _diag("labels_open.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "user-code-exception"
    assert rc.evidence[0].line == 6
    assert rc.fix.variant is not None and rc.fix.variant.id == "missing-file"
    steps = " ".join(rc.fix.steps)
    assert "`test -e '/tmp/r25t_cache/labels v2.json'`" in steps
    assert "<that path>" not in steps


def test_missing_file_with_no_path_in_its_message_keeps_the_blank():
    d = _diag("no_shards.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.evidence[0].line == 5
    assert "`test -e <that path>`" in " ".join(rc.fix.steps)


def test_batch_split_fix_cuts_input_and_target_with_one_rule():
    # before: "labels = torch.arange(scores.shape[0])" at the loss line, for a run whose inputs
    # were a floor slice and whose targets came from torch.tensor_split
    d = _diag("pairs_split.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.signature == "batch-not-divisible-by-world-size"
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank is None
    assert rc.evidence[0].line == 23
    first = rc.fix.steps[0]
    assert (
        "Cut this rank's input and target with one rule where your code splits the batch" in first
    )
    assert "torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]" in first
    assert "agree only when 14 is a multiple of 4" in first


def test_rank_output_folder_is_the_local_rank_the_summary_names():
    # before: "read logs/<run>/attempt_0/<rank>/stderr.log" with local_rank: 1 in the log
    d = _diag("quiet_exit.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "elastic-child-failed"
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 17
    assert "read logs/<run id>/attempt_0/1/stderr.log" in rc.fix.steps[0]


def test_pdsh_exit_code_other_than_255_is_the_remote_commands_not_a_failed_ssh():
    """ssh exits with the remote command's status, or 255 when ssh itself failed: pdsh's
    "ssh exited with exit code 1" after the node printed its steps and a traceback is that
    worker's exit, and the traceback is the root cause (trial r25b finding 1: a psycopg2 error
    was reported as an ssh set-up failure)."""
    log = HERE.parent.parent / "signatures/launch/ssh-launch-failed.near-miss-2.log"
    d = diagnose_paths([str(log)], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 13
    assert "UniqueViolation" in d.root_cause.fix.steps[0]
    assert not any(f.signature == "ssh-launch-failed" for f in d.findings)
