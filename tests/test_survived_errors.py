"""An error the process survived (it went on training after it, and no worker failed) is not
a root cause: analysis/survived.py. Logs written here in the shapes the tools print."""

from __future__ import annotations

from rootrank.engine import diagnose_text

OOM_TB = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/srv/job/loop.py", line 77, in step\n'
    "[rank1]:     out = model(batch)\n"
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 1 has a"
    " total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)
RANK1_GOES_ON = (
    "[rank1]: retrying step 40 with micro-batch 8 (was 16)\n"
    "[rank1]: step 40 loss 2.113 lr 3.0e-04\n"
    "[rank1]: step 41 loss 2.101 lr 3.0e-04\n"
)
STEPS_BEFORE = "".join(f"[rank{r}]: step 39 loss 2.120 lr 3.0e-04\n" for r in (0, 1))


def test_an_oom_the_rank_trained_on_after_is_no_root_cause():
    d = diagnose_text(STEPS_BEFORE + OOM_TB + RANK1_GOES_ON, "job.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    assert [r for r in d.reasoning if "was survived" in r] == [
        "CUDA out of memory in the caching allocator (line 6) was survived: the same process went"
        " on training after it (progress at line 9) and no worker failed, so it is not a root cause"
    ]


def test_the_same_oom_is_the_root_when_the_launcher_reports_the_worker_failed():
    fail = (
        "E1201 10:00:03.100000 811 torch/distributed/elastic/multiprocessing/api.py:869]"
        " failed (exitcode: 1) local_rank: 1 (pid: 822) of binary: /usr/bin/python3\n"
    )
    d = diagnose_text(STEPS_BEFORE + OOM_TB + RANK1_GOES_ON + fail, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1


def test_another_ranks_progress_does_not_make_an_error_survived():
    others = "[rank0]: step 40 loss 2.113 lr 3.0e-04\n[rank0]: step 41 loss 2.101 lr 3.0e-04\n"
    d = diagnose_text(STEPS_BEFORE + OOM_TB + others, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"


def test_a_progress_bar_redrawn_as_the_exception_closes_it_is_no_going_on():
    log = (
        " 12%|█▏        | 120/1000 [01:10<08:30,  1.72it/s]\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 40, in <module>\n'
        "    trainer.train()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        " 12%|█▏        | 120/1000 [01:11<08:31,  1.72it/s]\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"


def test_a_logged_exception_no_signature_names_is_not_unclassified_when_training_went_on():
    log = (
        "step 10 loss 1.80\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/hooks.py", line 12, in upload\n'
        "    client.push(metrics)\n"
        "MetricsSinkError: sink at metrics.internal refused the batch\n"
        "step 11 loss 1.77\n"
        "step 12 loss 1.75\n"
    )
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    assert any("MetricsSinkError" in r and "was survived" in r for r in d.reasoning)
