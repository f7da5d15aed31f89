"""Held-out r25e kinds (the set's MISSES.md), each on a real torch 2.13 CPU run captured for
it (the signature fixtures beside signatures/<category>/<id>.yaml):

- a missing file whose name holds the failing rank's own number, built from the rank in the
  user's code, beyond the count the data step says it wrote, is a launch with more processes
  than prepared files (world size vs data layout), not a missing checkpoint;
- a missing file that a later line of another rank says it saved is a hand-off between ranks
  with no barrier between the write and the read, not a wrong path; the verify removes the
  file the failed run left, so the rerun cannot pass on it;
- an input/target batch size mismatch whose two sizes are the uneven split of a global batch
  the log prints over the rank count (``G % W != 0``) is that split, not a layer's
  configuration; the log's own numbers are quoted;
- per-rank counts of what a rank did with its data (``wrote 512 predictions``) differ by
  nature and are never read as a setting that diverged.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.batch_split import split_sizes
from rootrank.engine import diagnose_paths
from rootrank.scan import note_settings, odd_setting

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def _words(d) -> str:
    root = d.root_cause
    return (
        " ".join([*root.fix.steps, *root.fix.code.values(), root.verify or "", *root.confirm])
        if root
        else ""
    )


def test_rank_file_beyond_the_data_count_is_the_launch_size():
    # before: checkpoint-file-missing (checkpoint-load-mismatch), "ls -l", DeepSpeed zero_to_fp32
    d = _diag(SIGNATURES / "data" / "per-rank-file-beyond-data-count.positive.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "per-rank-file-beyond-data-count"
    assert root.failure_class == "user-code-exception"
    assert root.evidence[0].line == 24
    assert any(e.line == 2 for e in root.evidence)  # "made 2 parts in parts/"
    words = _words(d)
    assert "made 2 parts in parts/" in words
    assert "Launch 2 processes" in words
    assert "fit.py:6" in words
    assert "zero_to_fp32" not in words
    assert "os.path.exists('parts/part03.pt')" in (root.verify or "")


def test_every_rank_missing_its_file_stays_a_missing_file():
    d = _diag(SIGNATURES / "data" / "per-rank-file-beyond-data-count.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "checkpoint-file-missing"


def test_a_file_read_before_its_writer_saved_it_is_a_missing_barrier():
    # before: checkpoint-file-missing (checkpoint-load-mismatch): "check the path"
    d = _diag(SIGNATURES / "io" / "file-handoff-without-barrier.positive.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "file-handoff-without-barrier"
    assert root.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert root.evidence[0].line == 22
    assert root.evidence[1].line == 25  # rank 0's "checkpoint written to ckpt/merged.pt"
    words = _words(d)
    assert "dist.barrier()" in words
    assert "export.py:20" in words
    assert (root.verify or "").startswith("rm -f ckpt/merged.pt && torchrun")


def test_a_write_of_another_name_is_no_handoff():
    d = _diag(SIGNATURES / "io" / "file-handoff-without-barrier.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "checkpoint-file-missing"


def test_a_batch_mismatch_from_an_uneven_split_names_the_split():
    # before: shape-mismatch (unsupported-shape-or-dtype): in_features, LazyLinear
    d = _diag(SIGNATURES / "tensor" / "batch-not-divisible-by-world-size.positive.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "batch-not-divisible-by-world-size"
    assert root.failure_class == "user-code-exception"
    assert root.evidence[0].line == 13
    assert root.captures["batch"] == "30"
    assert root.captures["world"] == "4"
    words = _words(d)
    assert "30 % 4 = 2" in words
    assert "torch.arange(scores.shape[0])" in words
    assert "LazyLinear" not in words


def test_a_batch_mismatch_with_a_divisible_batch_stays_a_shape_error():
    d = _diag(SIGNATURES / "tensor" / "batch-not-divisible-by-world-size.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shape-mismatch"


def test_split_sizes():
    assert split_sizes(20, 3) == {6, 7, 8}
    assert split_sizes(30, 4) == {6, 7, 8, 9}
    assert split_sizes(32, 4) == {8}


def test_output_counts_are_not_settings():
    settings: dict[int, dict] = {}
    for rank, rest in (
        (0, "wrote 300 predictions hidden 32"),
        (1, "wrote 45 predictions hidden 32"),
        (2, "wrote 300 predictions hidden 32"),
    ):
        settings[rank] = {}
        note_settings(settings[rank], rest, "x.log", rank + 1)
    assert "wrote" not in settings[1]
    assert odd_setting(settings, 1) is None
    settings[1]["hidden"] = ("64", "x.log", 2)
    assert odd_setting(settings, 1) is not None


HERE = Path(__file__).parent / "r25e"


def test_a_number_read_as_text_names_the_read_not_the_arithmetic():
    # before: the general "fix the input, argument or state it names"
    d = _diag(HERE / "env_number_as_text_compare.log")
    root = d.root_cause
    assert root is not None
    assert root.failure_class == "user-code-exception"
    assert root.evidence[0].line == 12
    assert root.fix.variant is not None and root.fix.variant.id == "text-operand"
    words = _words(d)
    assert "os.environ.get / os.getenv" in words
    assert "that read line, not the arithmetic, is the line to change" in words
    assert "warm.py:9" in words
    assert (root.verify or "").startswith("WARMUP_STEPS=2 torchrun --nproc-per-node=2 warm.py")


def test_a_cuda_utility_call_on_a_cpu_build_is_guarded_not_reinstalled():
    # before: "Reinstall PyTorch from the CUDA index", verify asserting a GPU
    d = _diag(HERE / "cuda_call_on_cpu_build_meter.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "torch-not-compiled-with-cuda"
    assert d.initiating_rank == 0
    assert root.evidence[0].line == 22
    assert root.fix.variant is not None and root.fix.variant.id == "cuda-utility-call"
    words = _words(d)
    assert "if torch.cuda.is_available()" in words
    assert "meter.py:3" in words
    assert "do not reinstall PyTorch" in words
    verify = root.verify or ""
    assert verify.startswith("torchrun --nproc-per-node=2 meter.py")
    assert "torch.version.cuda" not in verify


def test_a_short_timeout_against_a_rank_doing_sized_work_raises_the_timeout():
    # before: "give that wait a deadline ... fix the stuck producer; or move that work before
    # init_process_group" (which would not help: init's rendezvous waits with the same timeout)
    d = _diag(HERE / "short_timeout_slow_rank_download.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "gloo-collective-timeout"
    assert d.initiating_rank == 1
    assert root.evidence[0].line == 19
    assert root.fix.variant is not None and root.fix.variant.id == "short-timeout-slow-rank"
    words = _words(d)
    assert "8000 ms, far below gloo's 30-minute default" in words
    assert "timeout=timedelta(minutes=10)" in words
    assert "downloading 12 files" in words
    assert "stuck producer" not in words
    assert (root.verify or "").startswith("torchrun --nproc-per-node=3 tune.py")


def test_counts_over_epochs_all_multiples_of_the_epochs_is_a_sampler_without_set_epoch():
    # before: the generic assertion text ("find which value breaks it")
    d = _diag(SIGNATURES / "data" / "sampler-same-data-every-epoch.positive.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "sampler-same-data-every-epoch"
    assert root.failure_class == "user-code-exception"
    assert d.initiating_rank == 0
    assert root.evidence[0].line == 15
    assert root.evidence[1].line == 9  # rank 0's "kinds seen over 3 epochs" line
    words = _words(d)
    assert "sampler.set_epoch(epoch)" in words
    assert "the line to change is the epoch loop, not the check that raised" in words


def test_counts_that_change_between_epochs_leave_the_check_as_it_was():
    d = _diag(SIGNATURES / "data" / "sampler-same-data-every-epoch.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "user-code-exception"
