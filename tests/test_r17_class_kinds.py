"""Round-17 kinds of class and healthy-run reasoning (held-out sets r17a, r17b).

1. A run whose every rank's last line is its own end-of-run record (``rank 1 training
   complete``, ``rank 0 done, skipped 2 steps``), with no launcher failure and only caught
   tracebacks before it, is healthy (rule ``run_completed``, rootrank.scan._RANK_END). The
   fixtures are real torchrun runs of this machine (torch 2.13 CPU, gloo; r17b cases 12 and 13,
   scripts 12_healthy_noise.py and 13_healthy_retry.py), whole; the controls are contiguous cuts
   of the same output that end before one rank's end record.
2. A ``RuntimeError`` raised by a native op straight into the user's line (``torch.cat`` of a
   2-D and a 3-D tensor) is a user-code exception (rootrank.analysis.prepare.user_op_errors).
3. Accelerate's debug-mode shape check is a collective shape mismatch
   (signatures/collective/accelerate-operation-shape-mismatch.yaml).
4. "Fatal Python error: Aborted" right after the NCCL watchdog's ``what():`` line is the
   watchdog's own abort: the root is the collective timeout (explained_by: [abort-message]).
5. A framework's checkout (``LLaMA-Factory/src/llamafactory/...``) is not the user's code, and
   its dataset loader's "File X not found." is a config error (framework_missing_files).

The logs of 2-5 are written here in the tools' own wording (torch's TORCH_CHECK message,
accelerate's DistributedOperationException, ProcessGroupNCCL's watchdog and faulthandler's
banner, LLaMA-Factory's loader) with values of our own.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.tracebacks import is_user_frame

_DATA = Path(__file__).parent / "r17_class"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# 1. healthy runs: every rank printed its own end


def test_logged_fallback_then_every_rank_training_complete_is_healthy() -> None:
    d = diagnose_text(_read("healthy-logged-fallback-ranks-complete.log"), "run.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "run.log:82" in done[0]
    assert "rank 2: 'rank 2 training complete'" in done[0]


def test_retried_download_then_every_rank_done_is_healthy() -> None:
    d = diagnose_text(_read("healthy-retried-download-ranks-done.log"), "run.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "run.log:70" in done[0]
    assert "rank 3: 'rank 3 done, skipped 2 steps'" in done[0]


def test_a_rank_whose_last_line_is_a_step_keeps_the_failure() -> None:
    """Control: the same run cut before rank 2's end record (line 82): rank 2's last line is
    a step, so the run's end is not shown and the logged ModuleNotFoundError stays the root."""
    lines = _read("healthy-logged-fallback-ranks-complete.log").splitlines()[:81]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_a_rank_that_printed_no_end_keeps_the_failure() -> None:
    """Control: cut before rank 3's "done" (line 70): three of four ranks ended."""
    lines = _read("healthy-retried-download-ranks-done.log").splitlines()[:69]
    d = diagnose_text("\n".join(lines) + "\n", "run.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_an_error_after_every_rank_ended_is_not_survived() -> None:
    """Control: an uncaught traceback after the end records (teardown) is a failure."""
    text = _read("healthy-retried-download-ranks-done.log") + (
        "16:14:16 Traceback (most recent call last):\n"
        '16:14:16   File "/srv/job/train.py", line 90, in <module>\n'
        "16:14:16     upload(ckpt)\n"
        "16:14:16 ConnectionResetError: [Errno 104] Connection reset by peer\n"
    )
    d = diagnose_text(text, "run.log", mask=False)
    assert d.root_cause is not None or d.unclassified is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


# 2. a native op's RuntimeError raised at the user's line


def _cat_trace(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/ml/vla/train.py", line 61, in <module>',
        f"{p}     loss = policy(batch)",
        f'{p}   File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",'
        " line 1775, in _wrapped_call_impl",
        f"{p}     return self._call_impl(*args, **kwargs)",
        f'{p}   File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",'
        " line 1786, in _call_impl",
        f"{p}     return forward_call(*args, **kwargs)",
        f'{p}   File "/home/ml/vla/models/fuse.py", line 58, in forward',
        f"{p}     z = torch.cat([coarse, tokens], dim=1)",
        f"{p} RuntimeError: Tensors must have same number of dimensions: got 2 and 3",
    ]


def test_torch_op_runtime_error_at_the_users_line_is_a_user_code_exception() -> None:
    d = diagnose_text("\n".join(_cat_trace(1) + _cat_trace(0)) + "\n", "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "user-code-exception"
    assert rc.captures["exc_type"] == "RuntimeError"
    assert rc.fix.steps[0].startswith("fuse.py:58 (in forward)")
    assert d.initiating_rank is None  # both ranks raise the same deterministic error


def test_runtime_error_raised_inside_a_library_stays_unclassified() -> None:
    """Control: the innermost frame is the library's own: not the user's arguments."""
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/home/ml/vla/train.py", line 61, in <module>',
            "    store.flush()",
            '  File "/opt/venv/lib/python3.11/site-packages/blobstore/client.py", line 212,'
            " in flush",
            '    raise RuntimeError(f"backend returned status {code}")',
            "RuntimeError: backend returned status 7",
        ]
    )
    d = diagnose_text(log + "\n", "job.log", mask=False)
    assert d.root_cause is None and d.unclassified is not None


# 3. accelerate's debug-mode shape check


def _accelerate_trace(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/ml/rlhf/dpo_eval.py", line 77, in <module>',
        f"{p}     all_logps = accelerator.gather(logps)",
        f'{p}   File "/opt/conda/lib/python3.11/site-packages/accelerate/utils/operations.py",'
        " line 376, in wrapper",
        f"{p}     raise DistributedOperationException(",
        f"{p} accelerate.utils.operations.DistributedOperationException: Cannot apply desired"
        " operation due to shape mismatches. All shapes across devices must be valid.",
        "",
        f"{p} Operation: `accelerate.utils.operations.gather`",
        f"{p} Input shapes:",
        f"{p}   - Process 0: [8, 412]",
        f"{p}   - Process 1: [8, 377]",
    ]


def test_accelerate_shape_check_is_a_collective_shape_mismatch() -> None:
    log = "\n".join(_accelerate_trace(1) + _accelerate_trace(0)) + "\n"
    d = diagnose_text(log, "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "collective-shape-mismatch"
    assert rc.signature == "accelerate-operation-shape-mismatch"
    assert any("pad_across_processes" in s for s in rc.fix.steps)


# 4. the watchdog's abort is the collective timeout's consequence

_WATCHDOG_ABORT = [
    "[rank2]:[E1204 09:40:11.402118311 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught"
    " collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLGATHER, NumelIn=1, NumelOut=4,"
    " Timeout(ms)=600000) ran for 600083 milliseconds before timing out.",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated"
    " with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1,"
    " OpType=ALLGATHER, NumelIn=1, NumelOut=4, Timeout(ms)=600000) ran for 600083 milliseconds"
    " before timing out.",
    "Fatal Python error: Aborted",
    "",
    "Thread 0x00007f3be5fff640 (most recent call first):",
    "  <no Python frame>",
]


def test_fatal_abort_after_the_watchdog_what_line_is_the_timeouts_collateral() -> None:
    d = diagnose_text("\n".join(_WATCHDOG_ABORT) + "\n", "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "collective-timeout"
    assert "fatal-python-error-abort" in {f.signature for f in d.collateral}
    assert any("[declared_explanations]" in r and "Fatal Python error" in r for r in d.reasoning)


def test_fatal_abort_with_no_message_before_it_stays_a_native_crash() -> None:
    """Control: the banner alone (no what(): payload above it) is the native abort."""
    log = [
        "Fatal Python error: Aborted",
        "",
        "Current thread 0x00007f3be5fff640 (most recent call first):",
        '  File "/home/ml/vla/decode.py", line 30 in unpack',
        '  File "/home/ml/vla/train.py", line 61 in <module>',
    ]
    d = diagnose_text("\n".join(log) + "\n", "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "segfault"


# 5. a framework's checkout and its dataset loader


def test_framework_checkout_frames_are_not_user_code() -> None:
    assert not is_user_frame("/data/u/LLaMA-Factory/src/llamafactory/data/loader.py")
    assert not is_user_frame("/home/u/lightning/src/lightning/pytorch/trainer/trainer.py")
    assert not is_user_frame("/home/u/transformers/src/transformers/trainer.py")
    assert is_user_frame("/data/u/VeOmni/tasks/train_torch.py")
    assert is_user_frame("/home/u/proj/data/loader.py")


def _llamafactory_trace(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    root = "/srv/ft/LLaMA-Factory/src/llamafactory"
    return [
        f"{p} Traceback (most recent call last):",
        f'{p}   File "{root}/launcher.py", line 23, in <module>',
        f"{p}     launch()",
        f'{p}   File "{root}/data/loader.py", line 171, in _get_merged_dataset',
        f"{p}     datasets.append(_load_single_dataset(dataset_attr, model_args, data_args,"
        " training_args))",
        f'{p}   File "{root}/data/loader.py", line 75, in _load_single_dataset',
        f'{p}     raise ValueError(f"File {{local_path}} not found.")',
        f"{p} ValueError: File data/vqa_train_v3.json not found.",
    ]


def test_framework_loader_file_not_found_is_a_config_error() -> None:
    log = "\n".join(_llamafactory_trace(3) + _llamafactory_trace(1)) + "\n"
    d = diagnose_text(log, "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "config-error"
    assert rc.signature == "framework-data-file-not-found"
    assert rc.captures["path"] == "data/vqa_train_v3.json"
    assert "dataset_info.json" in rc.fix.steps[0]
    assert "your code" not in " ".join(d.reasoning)


def test_the_same_message_raised_in_the_users_file_stays_theirs() -> None:
    """Control: the user's own loader raising it is the user's exception."""
    log = [
        "Traceback (most recent call last):",
        '  File "/home/ml/proj/prep.py", line 40, in <module>',
        "    rows = read_rows(args.input)",
        '  File "/home/ml/proj/prep.py", line 18, in read_rows',
        '    raise ValueError(f"File {path} not found.")',
        "ValueError: File data/vqa_train_v3.json not found.",
    ]
    d = diagnose_text("\n".join(log) + "\n", "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "user-code-exception"


# 6. fixes that lead with the line that decides them (signature variants)

_FIX = Path(__file__).parent / "fix_variants"


def _root(path: Path):
    d = diagnose_text(path.read_text(encoding="utf-8"), path.name, mask=False)
    assert d.root_cause is not None
    return d.root_cause


def test_nccl_socket_last_error_leads_with_the_network() -> None:
    rc = _root(_FIX / "nccl-unhandled-system-error" / "socket-connect.log")
    assert rc.failure_class == "nccl-system-error"
    assert "NCCL_SOCKET_IFNAME" in rc.fix.steps[0] or "NCCL_SOCKET_IFNAME" in rc.fix.steps[1]
    assert not any(s.startswith("Read the first 'NCCL WARN'") for s in rc.fix.steps)


def test_ucx_cuda_ipc_error_before_the_segfault_leads_with_ucx_tls() -> None:
    rc = _root(_FIX / "native-signal-banner" / "ucx-cuda-ipc.log")
    assert rc.failure_class == "segfault"
    assert "UCX_TLS=^cuda_ipc" in rc.fix.steps[0]
    assert rc.verify.startswith("UCX_TLS=^cuda_ipc ")


def test_ddp_grad_missing_on_one_rank_leads_with_find_unused_and_verifies_with_that_rank() -> None:
    """Real run (r17b case 02, torchrun 4 --tee 3): rank 2's batch took a branch."""
    rc = _root(_DATA / "ddp-unused-branch-rank2-tee.log")
    assert rc.failure_class == "ddp-unused-parameters" and rc.rank == 2
    first = next(s for s in rc.fix.steps if "Rank 2's backward" in s)
    assert rc.fix.steps.index(first) <= 1 and "find_unused_parameters=True" in first
    assert "--nproc-per-node=4" in rc.verify  # rank 2 exists in the rerun


def test_dataloader_worker_exit_code_points_at_the_code_that_exited() -> None:
    """Real run (r17b case 06, mp.spawn 3): a worker's os._exit(3) on a bad record."""
    rc = _root(_FIX / "dataloader-worker-exited" / "worker-exit-code.log")
    assert rc.fix.variant is not None and rc.fix.variant.id == "worker-exit-code"
    assert "exit code 3: a plain exit, not a signal" in rc.fix.steps[0]
    # the user's line comes from the chain's next link (the iterator's re-raise under the loop)
    assert rc.fix.steps[0].startswith("06_spawn_loader.py:41 (in worker)")
    assert "dmesg" not in rc.fix.steps[0]


def test_per_rank_settings_that_differ_lead_with_the_same_launch_settings() -> None:
    """Real run (r17b case 11, two torchrun nodes): MODEL_WIDTH exported on node 0 only."""
    rc = _root(_FIX / "ddp-param-shape-mismatch" / "launch-settings-differ.log")
    assert rc.failure_class == "divergent-model-across-ranks" and rc.rank == 3
    step = next(s for s in rc.fix.steps if "launched with different settings" in s)
    assert "hidden 64 on rank 3, 128 on ranks 0, 1, 2" in step
    assert "Launch every node with the same settings" in step


def test_sigkill_without_an_oom_line_covers_an_outside_kill() -> None:
    """Real run (r17b case 05): `kill -9` on rank 1 from outside; no OOM line anywhere."""
    rc = _root(_DATA / "rank1-sigkill-timestamped.log")
    assert rc.rank == 1
    assert "another process" in rc.fix.steps[0] and "outside kill" in rc.fix.steps[0]
    assert "Cut host RAM" in rc.fix.steps[0]
    assert "dmesg" in rc.fix.steps[1] and "auditctl" in rc.fix.steps[1]


# 7. verify commands for the launcher the log shows

_DETERMINED = [
    "[2026-03-02T08:14:40.002114Z] 3c1e9a07 || INFO: [318] determined.launch.torch_distributed:"
    " Distributed training is being used",
    "[2026-03-02T08:14:49.731552Z] 3c1e9a07 [rank=0] || INFO: [402] determined.core: Starting"
    " training",
    "[2026-03-02T08:14:51.120931Z] 3c1e9a07 [rank=1] || Traceback (most recent call last):",
    '[2026-03-02T08:14:51.120960Z] 3c1e9a07 [rank=1] ||   File "/run/determined/workdir/train.py",'
    " line 131, in <module>",
    "[2026-03-02T08:14:51.120975Z] 3c1e9a07 [rank=1] ||     main()",
    '[2026-03-02T08:14:51.120990Z] 3c1e9a07 [rank=1] ||   File "/run/determined/workdir/train.py",'
    " line 88, in main",
    '[2026-03-02T08:14:51.121012Z] 3c1e9a07 [rank=1] ||     labels = batch["label_ids"]',
    "[2026-03-02T08:14:51.121040Z] 3c1e9a07 [rank=1] || KeyError: 'label_ids'",
]


def test_determined_trial_lines_are_read_and_rerun_as_an_experiment() -> None:
    d = diagnose_text("\n".join(_DETERMINED) + "\n", "trial.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "user-code-exception" and rc.rank == 1
    assert rc.fix.steps[0].startswith("train.py:88 (in main)")
    assert rc.verify.startswith("det experiment create ")
    assert "torchrun" not in rc.verify


_SRUN_UCX = [
    "0: [1700000311.101933] [gpu-b03:20416:0]           init.c:90   UCX  DEBUG cmd line:"
    " /opt/conda/bin/python bcast_check.py ",
    "1: [1700000311.104417] [gpu-b03:20417:0]           init.c:90   UCX  DEBUG cmd line:"
    " /opt/conda/bin/python bcast_check.py ",
    "1: [1700000316.882930] [gpu-b03:20417:2]    cuda_ipc_md.c:62   UCX  ERROR"
    " cuCtxGetDevice(&cu_device) is failed. ret:invalid device context",
    "1: [gpu-b03:20417:2:20470] Caught signal 11 (Segmentation fault: address not mapped to"
    " object at address 0x18)",
]


def test_srun_labelled_job_verifies_with_srun_and_its_script() -> None:
    d = diagnose_text("\n".join(_SRUN_UCX) + "\n", "job.out", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "segfault"
    assert rc.verify.startswith("UCX_TLS=^cuda_ipc srun ")
    assert "python bcast_check.py" in rc.verify and "<your launch command>" not in rc.verify
