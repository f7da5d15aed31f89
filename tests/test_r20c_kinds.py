"""Kinds from the held-out r20c set (real torch 2.13 CPU gloo runs), each with its own fixture.

Fixtures in ``tests/r20c/``, captured from real runs made for these tests (torch 2.13.0+cpu,
gloo, ``torchrun`` or ``mp.spawn``, timeouts 10-15 s), each run's terminal output (2>&1):

- ``dtype.log``: ``torchrun --nproc-per-node=3``; rank 2 prints ``loss scale overflow,
  switching params to double precision`` and calls ``model.double()``, then every rank
  all-reduces its flattened parameters: rank 1 aborts on ``120 vs 60`` bytes.
- ``notmember.log``: ``torchrun --nproc-per-node=3``; ranks 1 and 2 build ``new_group([1, 2])``
  and broadcast with ``src=0`` read from an environment default: ``Global rank 0 is not part of
  group``.
- ``groups.log``: ``torchrun --nproc-per-node=4``; rank 1 leaves rank 3 out of the ranks list
  it passes to ``new_group`` (``scoring group = [0, 1, 2]``), the others pass ``[0, 1, 2, 3]``;
  ranks 1 and 3 time out, 0 and 2 lose their peer.
- ``swallow.log``: ``torchrun --nproc-per-node=3``; rank 1's ``open`` of a missing file raises
  inside a ``try`` that also holds an ``all_reduce``; the handler logs ``...; continuing without
  them``; 10 s later ranks 0 and 2 time out (rank 0's warning quotes the timeout).
- ``uneven_spawn.log``: ``mp.spawn`` of 3 workers; rank 2 has 5 batches, the others 6; it
  reaches its barrier while the others all-reduce; only rank 1's traceback is printed.
- ``labels.log``: see its test.
- ``resume_lm.log``: ``torchrun --nproc-per-node=2 resume_lm.py``: the checkpoint has a
  1024-token vocabulary, the model is built with the default ``--vocab 1000``.

``peer-closed-logdir/`` is written from what the tools print: ``input.log`` is a real
torchrun terminal under ``--redirects 3 --log-dir`` (a worker aborted, exit -6; script name
changed), the per-rank files under ``logs/<run>/attempt_0/<rank>/`` are written in the
formats gloo and torch print: rank 1 aborts on a gloo size enforce (2048 vs 1024), rank 2
printed that it keeps its embeddings in float64 and lost its peer in all_reduce, rank 0 was
still in ``init_process_group`` (``Gloo connectFullMesh failed with ... Connection closed by
peer``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.signatures import SignatureError, _check_variants

HERE = Path(__file__).resolve().parent / "r20c"


def _diagnose(name: str):  # type: ignore[no-untyped-def]
    return diagnose_text((HERE / name).read_text(encoding="utf-8"), "job.log", mask=False)


def _line_of(name: str, needle: str) -> int:
    text = (HERE / name).read_text(encoding="utf-8")
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_size_abort_names_the_rank_that_printed_the_odd_dtype_not_the_receiver():
    """Kind 1: gloo's receiver aborts; the rank whose own line names float64 sent it."""
    d = _diagnose("dtype.log")
    assert d.root_cause.signature == "gloo-size-mismatch"
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 2  # torchrun's summary names rank 1, the receiver
    assert d.root_cause.evidence[0].line == _line_of("dtype.log", "op.preamble.length")
    first = d.root_cause.fix.steps[0]
    assert "rank 2 alone printed a line naming float64" in first
    assert "Remove the conversion on the branch only rank 2 took" in first
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=3 dtype.py")


def test_peer_closed_at_connect_is_collateral_of_the_size_abort_in_per_rank_files():
    """Kind 2: a connectFullMesh failure that says the peer closed is a victim's; the size
    mismatch in another rank's file is the cause, and the odd dtype names its sender."""
    d = diagnose_paths([str(HERE / "peer-closed-logdir")], mask=False)
    assert d.root_cause.signature == "gloo-size-mismatch"
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].path.endswith("attempt_0/1/stderr.log")
    assert "gloo-connect-full-mesh-failed" not in {f.signature for f in d.findings}
    closed = [f for f in d.findings if f.signature == "gloo-connect-peer-closed"]
    assert closed and closed[0].rank == 0
    assert d.root_cause.fix.steps[0].startswith("The byte counts are 2048 vs 1024")


def test_handled_error_then_timeouts_is_a_desync_on_the_rank_that_went_on():
    """Kind 3: rank 1 logged 'continuing without them'; one timeout later the others failed."""
    d = _diagnose("swallow.log")
    assert d.root_cause.signature == "handled-error-skipped-collective"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == _line_of("swallow.log", "[rank 1] WARNING")
    assert d.root_cause.captures["waiters"] == "0, 2"
    first = d.root_cause.fix.steps
    assert any("Keep collectives out of the try block" in s for s in first)
    assert any("missing/vocab_stats.json" in s for s in first)


def test_a_handled_error_whose_message_is_the_timeout_is_not_the_cause():
    """A rank whose handler caught the collective's own timeout is a waiter: with only such
    lines (rank 1's own line removed) no rank is said to have gone on."""
    text = (HERE / "swallow.log").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if "[rank 1] WARNING" not in ln]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause.signature != "handled-error-skipped-collective"


def test_rank_not_in_group_fix_takes_the_peer_from_the_groups_members():
    """Kind 4: torch's own argument check on src/dst."""
    d = _diagnose("notmember.log")
    assert d.root_cause.signature == "c10d-rank-not-in-group"
    assert d.root_cause.captures["peer"] == "0"
    first = d.root_cause.fix.steps[0]
    assert first.startswith("notmember.py:14 (in main)")
    assert "dist.get_process_group_ranks(group)" in first


def test_differing_group_list_leads_the_fix_to_group_construction():
    """Kind 5: the odd printed value is a new_group ranks list."""
    d = _diagnose("groups.log")
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1
    steps = d.root_cause.fix.steps
    assert steps[0].startswith("The ranks built different process groups")
    assert "rank 1: scoring group = [0, 1, 2]" in steps[0]
    assert "make every rank reach the same collectives" in steps[1]  # the consequence, after


def test_state_dict_size_mismatch_verify_reruns_the_users_launch():
    """Kind 6: the verification is the launch the log shows, not a helper the user lacks."""
    d = _diagnose("resume_lm.log")
    assert d.root_cause.signature == "state-dict-size-mismatch"
    verify = d.root_cause.verify
    assert verify.startswith("torchrun --nproc-per-node=2 resume_lm.py")
    assert "build_model" not in verify
    assert "[1024, 16]" in verify
    assert "[1024, 16] in the checkpoint and [1000, 16]" in d.root_cause.fix.steps[0]


def test_timeout_named_by_a_smaller_batch_count_is_uneven_batches():
    """Kind 7: only a victim's timeout is printed; rank 2's '5 batches' against 6 is the cause."""
    d = _diagnose("uneven_spawn.log")
    assert d.root_cause.signature == "uneven-batches-per-rank"
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == _line_of("uneven_spawn.log", "rank 2: 5 batches")
    assert d.root_cause.captures["usual"] == "6"


def test_sites_after_must_be_a_boolean():
    fix = {
        "variants": [
            {"id": "a", "when": {"initiator": ["odd_line_out"]}, "steps": ["x"], "sites_after": 1},
            {"id": "b", "steps": ["y"]},
        ]
    }
    with pytest.raises(SignatureError, match="sites_after"):
        _check_variants(fix, Path("x.yaml"))


def test_keyerror_on_a_label_table_indexed_by_a_record_value_is_a_data_error():
    """Kind 7 (second half): ``labels.log``, ``torchrun --nproc-per-node=3``: rank 1's shard
    holds label 4, ``CLASS_NAMES`` has 0-2; ``name = CLASS_NAMES[y]`` raises ``KeyError: 4``."""
    d = _diagnose("labels.log")
    assert d.root_cause.signature == "label-lookup-missing-key"
    assert d.root_cause.failure_class == "data-error"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == _line_of("labels.log", "KeyError: 4")
    assert (
        "Rank 1's data holds y = 4, which CLASS_NAMES does not contain"
        in (d.root_cause.fix.steps[0])
    )


def test_keyerror_on_a_literal_key_is_not_the_datas():
    text = (HERE / "labels.log").read_text(encoding="utf-8")
    text = text.replace("name = CLASS_NAMES[y]", 'name = CLASS_NAMES["neg"]').replace(
        "KeyError: 4", "KeyError: 'neg'"
    )
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature != "label-lookup-missing-key"


def test_a_librarys_fallback_warning_before_another_ranks_error_is_not_a_handled_skip():
    """gloo's own ``Unable to resolve hostname ... Using the loopback address as fallback``
    (a c10d log line) on rank 0, then rank 3's allocation error and the others' lost peer:
    rank 3 failed of its own; nobody's except path skipped a collective."""
    path = HERE.parent.parent / "signatures" / "memory" / "cpu-alloc-failed.positive.log"
    d = diagnose_paths([str(path)], mask=False)
    assert d.root_cause.signature == "cpu-alloc-failed"
    assert "handled-error-skipped-collective" not in {f.signature for f in d.findings}
