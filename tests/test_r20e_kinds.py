"""Kinds from the held-out r20e set, each with its own fixture.

Fixtures in ``tests/r20e/``, written in the formats the tools print (torch 2.x torchrun and
excepthook ``[rankN]:`` prefixes, gloo's pair.cc enforce line, the Hugging Face logging
format ``[LEVEL|file.py:N] <time> >> message``; paths, hosts, pids and values are made up
for these tests):

- ``hf-format-save-retry-completed.log``: a WARNING announcing a retry, the traceback it
  logged (a checkpoint's missing parent directory), the same save succeeding, more steps and
  the Trainer's "Training completed. Do not forget to share your model ..." end line.
- ``clock-host-wrapper-traceback.log``: a job wrapper's ``HH:MM:SS host| `` prefix before
  torchrun's ``[rank1]:`` on every line; rank 1's IndexError in the user's ``model.py:41``.
- ``tests/fix_variants/user-code-exception/dataset-unpicklable-worker.log``: ``TypeError: cannot pickle '_io.BufferedReader'
  object`` from a DataLoader's ``w.start()`` through ``popen_spawn_posix`` / ``reduction.dump``.
- ``tests/fix_variants/user-code-exception/batchnorm-batch-of-one.log``: BatchNorm's ``Expected more than 1 value per channel
  when training`` on rank 3.

The count-desync kind's fixtures are the signature's own
(``signatures/collective/gloo-size-count-divergence.{positive,near-miss}.log``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.scan import RUN_END_REPORT

HERE = Path(__file__).resolve().parent / "r20e"
VARIANTS = Path(__file__).resolve().parent / "fix_variants" / "user-code-exception"
SIGS = Path(__file__).resolve().parents[1] / "signatures" / "collective"


def _diagnose(path: Path):  # type: ignore[no-untyped-def]
    return diagnose_text(path.read_text(encoding="utf-8"), "job.log", mask=False)


def test_the_trainers_end_line_is_a_run_end_after_any_logger_header():
    """The Hugging Face Trainer's end line, alone on its line or after a ``>>`` header."""
    for line in (
        "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "[INFO|trainer.py:2585] 2026-11-30 14:02:33,180 >> Training completed. Do not forget"
        " to share your model on huggingface.co/models =)",
        "[INFO|run.py:9] 2026-11-30 14:02:33,180 >> Training completed.",
    ):
        assert RUN_END_REPORT.search(line) is not None, line
    assert RUN_END_REPORT.search("Training completed 3 of 10 epochs, resuming") is None


def test_a_logged_traceback_the_run_retried_past_is_handled():
    """Kind 1: a warning that announces a retry, its traceback, the same save succeeding and
    the run's own end line: the error was handled, the log is healthy."""
    d = _diagnose(HERE / "hf-format-save-retry-completed.log")
    assert d.root_cause is None
    assert d.initiating_rank is None
    assert any("run_completed" in r for r in d.reasoning)


def test_a_clock_and_host_wrapper_prefix_is_peeled_before_the_frames():
    """Kind 2: ``11:40:07 gpu07| [rank1]: File ...``: the frames and the user's line are
    read as on an unprefixed line."""
    d = _diagnose(HERE / "clock-host-wrapper-traceback.log")
    root = d.root_cause
    assert root is not None
    assert root.failure_class == "index-out-of-range"
    assert d.initiating_rank == 1
    assert root.user_frame is not None
    assert (root.user_frame.file, root.user_frame.line) == ("/home/ana/lm/model.py", 41)


def test_sizes_far_apart_and_a_rank_s_step_count_is_a_desync():
    """Kind 3: 5136 vs 4 bytes and rank 2 resumed at another step: different numbers of
    collectives (collective-desync), rank 2; sizes a few bytes apart with a differing sample
    count stay a shape mismatch."""
    d = _diagnose(SIGS / "gloo-size-count-divergence.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.signature == "gloo-size-count-divergence"
    assert d.initiating_rank == 2
    near = _diagnose(SIGS / "gloo-size-count-divergence.near-miss.log")
    assert near.root_cause is not None
    assert near.root_cause.failure_class == "collective-shape-mismatch"


def test_a_pickling_error_while_starting_dataloader_workers_names_the_dataset():
    """Kind 4: the spawn start method pickles the dataset; an open handle in it fails."""
    d = _diagnose(VARIANTS / "dataset-unpicklable-worker.log")
    root = d.root_cause
    assert root is not None
    assert root.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert root.fix.variant is not None
    assert root.fix.variant.id == "dataset-unpicklable-worker"
    assert "open the file in each worker" in root.fix.steps[0]


def test_batchnorm_one_value_per_channel_is_a_batch_of_one():
    """Kind 5: BatchNorm's training-mode check on a batch of one sample: drop_last."""
    d = _diagnose(VARIANTS / "batchnorm-batch-of-one.log")
    root = d.root_cause
    assert root is not None
    assert d.initiating_rank == 3
    assert root.fix.variant is not None
    assert root.fix.variant.id == "batchnorm-batch-of-one"
    assert "drop_last=True" in root.fix.steps[0]
