"""Round 15, set B: the kinds of fault the held-out set r15b showed, each by its mechanism.

Fixtures are written for these tests in the shape the tools print them (vLLM's cumem allocator's
``CUDA Error: %s at %s:%d``, argparse's usage + error, torchelastic's failure summary, HCCL's
error on Ascend); none is a held-out log.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

ROOT = Path(__file__).resolve().parents[1]
SIGS = ROOT / "signatures"


def test_vllm_cumem_out_of_memory_on_wake_up_is_a_gpu_oom_with_the_colocate_fix():
    """vLLM's sleep-mode allocator raises "CUDA Error: out of memory at .../cumem_allocator.cpp:62"
    (its CUDA_CHECK macro, cuGetErrorString's text) when wake_up cannot map the engine's memory
    back: a GPU OOM outside torch's allocator, on the rank whose traceback it is, with the fix for
    a trainer and a colocated vLLM engine sharing one GPU."""
    d = diagnose_paths([str(SIGS / "memory" / "gpu-oom-driver-level.positive-2.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("gpu-oom-driver-level", "cuda-oom")
    assert (d.initiating_rank, rc.evidence[0].line) == (3, 24)
    assert rc.fix.variant.id == "vllm-wake-up-colocated"
    assert "offload" in rc.fix.steps[0] and "gpu_memory_utilization" in rc.fix.steps[1]


def test_cumem_out_of_memory_outside_wake_up_keeps_the_general_fix(tmp_path):
    p = tmp_path / "alloc.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/vllm/device_allocator/cumem.py", line 131, in malloc\n'
        "    python_create_and_map(*handle)\n"
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"
    )
    rc = diagnose_paths([str(p)], mask=False).root_cause
    assert rc is not None and rc.failure_class == "cuda-oom"
    assert rc.fix.variant.id == "general"


def test_script_name_with_a_digit_is_not_peeled_as_a_pdsh_host():
    """argparse prefixes its error with the program name: "finetune_v2.py: error: ...". A name
    with a digit has the shape of a pdsh host tag ("node01: "), but a script's name (.py, .sh) is
    never one: the line keeps its name and the argparse signature reads it (before, the prefix
    was peeled, "error: unrecognized arguments: true" matched nothing, and torchrun's bare
    ChildFailedError summary became the root cause)."""
    d = diagnose_paths([str(SIGS / "environment" / "argparse-error.positive-2.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("argparse-error", "config-error")
    assert rc.evidence[0].line == 9 and rc.captures["prog"] == "finetune_v2.py"
    assert d.initiating_rank is None  # every worker parses the same command line
    assert rc.fix.variant.id == "value-after-switch"


def test_bash_error_of_a_numbered_script_keeps_its_name(tmp_path):
    p = tmp_path / "run.log"
    p.write_text("run2.sh: line 5: torchrun: command not found\n")
    d = diagnose_paths([str(p)], mask=False)
    assert all(f.host != "run2.sh" for f in d.findings)


def test_unrecognized_option_other_than_a_boolean_keeps_the_general_fix(tmp_path):
    p = tmp_path / "args.log"
    p.write_text(
        "usage: train3.py [-h] [--lr LR]\n"
        "train3.py: error: unrecognized arguments: --learning-rate 3e-4\n"
    )
    rc = diagnose_paths([str(p)], mask=False).root_cause
    assert rc is not None and rc.signature == "argparse-error"
    assert rc.fix.variant.id == "general"


KINDS = ROOT / "tests" / "kinds_r15b"


def test_summary_alone_with_a_sigbus_root_is_read_as_the_signal():
    """torchelastic's failure summary pasted alone (no agent 'failed (exitcode: -7)' line): the
    root-cause entry's 'exitcode  : -7 ... Signal 7 (SIGBUS)' is the signal's reading (shared
    memory), on that entry's rank, when the summary's other entries are the agent's SIGTERMs."""
    d = diagnose_paths([str(KINDS / "summary-only-sigbus.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == (
        "worker-sigbus-exit",
        "dataloader-worker-killed-or-shm",
    )
    assert d.initiating_rank == 2 and rc.captures["exitcode"] == "-7"


def test_summary_sigbus_with_another_rank_failing_by_itself_is_not_read_as_the_signal():
    """Another entry exited 1 by itself: two failures, the signal is not the only story."""
    d = diagnose_paths([str(KINDS / "summary-sigbus-and-another-failure.log")], mask=False)
    rc = d.root_cause
    assert rc is None or rc.signature != "worker-sigbus-exit"


def test_hccl_barrier_failure_of_several_ranks_is_a_collective_failure_not_user_code():
    """Seven ranks raise torch_npu's 'The Inner error is reported as above ... operator name is
    HcclAllreduce' from dist.barrier(): an HCCL collective failed (Ascend NPUs), read by its
    signature with the barrier fix; the copies beyond the finding's kept evidence are the same
    message, so none of them becomes a user-code exception."""
    d = diagnose_paths([str(KINDS / "hccl-barrier-seven-ranks.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("npu-hccl-collective-failed", "collective-timeout")
    assert rc.captures["optype"] == "HcclAllreduce" and rc.evidence[0].line == 9
    assert rc.fix.variant.id == "barrier-wait"
    assert not [f for f in d.findings if f.signature == "user-code-exception"]


def test_npu_operator_failure_that_is_not_hccl_is_not_a_collective(tmp_path):
    p = tmp_path / "op.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/run.py", line 40, in <module>\n'
        "    out = model(x)\n"
        "RuntimeError: The Inner error is reported as above. The process exits for this inner"
        " error, and the current working operator name is GridSampler3D.\n"
    )
    d = diagnose_paths([str(p)], mask=False)
    assert not [f for f in d.findings if f.signature == "npu-hccl-collective-failed"]


def test_framework_settings_check_with_no_user_frame_is_a_config_error():
    """vLLM's ParallelConfig.__post_init__ raising ValueError from its CLI entry point: the
    framework checked the options it was started with; no user code is on the way, so the
    value is the launch's, not the user's program's."""
    d = diagnose_paths(
        [str(SIGS / "environment" / "library-argument-check-failed.positive.log")], mask=False
    )
    rc = d.root_cause
    assert rc is not None
    assert (rc.signature, rc.failure_class) == ("library-argument-check-failed", "config-error")
    assert rc.evidence[0].line == 9 and rc.captures["check"] == "__post_init__"
    assert rc.captures["where"] == "config.py:1712"


def test_settings_check_in_the_users_own_config_stays_the_users_exception():
    d = diagnose_paths(
        [str(SIGS / "environment" / "library-argument-check-failed.near-miss.log")], mask=False
    )
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"


def test_argument_assertion_of_two_mpi_ranks_is_read_once_per_rank(tmp_path):
    """Open MPI's [job,rank]<stderr>: prefixes: each rank raised the same settings check."""
    tb = [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/launch_server.py", line 14, in <module>',
        "    server_args = prepare_server_args(sys.argv[1:])",
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 2210, in from_cli_args',
        "    return cls(**{attr: getattr(args, attr) for attr in attrs})",
        '  File "<string>", line 190, in __init__',
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/server_args.py", line 512, in __post_init__',
        "    assert self.tp_size % self.pp_size == 0",
        "AssertionError: tp_size must be divisible by pp_size",
    ]
    p = tmp_path / "mpi.log"
    p.write_text("\n".join(f"[1,{r}]<stderr>:{line}" for r in (0, 1) for line in tb) + "\n")
    d = diagnose_paths([str(p)], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "config-error"
    assert d.initiating_rank is None  # both ranks parse the same options


FIX_UCE = ROOT / "tests" / "fix_variants" / "user-code-exception"
FIX_DSU = ROOT / "tests" / "fix_variants" / "dataset-sample-unreadable"


def test_missing_data_sample_gets_the_restore_and_check_the_index_fix():
    """A FileNotFoundError for a data file (.npz) opened by a dataset's __getitem__ on one rank:
    a file the index lists is gone (purged, never synced), not a launch setting on every rank.
    Since r21c a bad record of the data (data-error: rootrank.analysis.sample_load)."""
    d = diagnose_paths([str(FIX_DSU / "general.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "dataset-sample-unreadable"
    assert rc.failure_class == "data-error"
    assert (d.initiating_rank, rc.evidence[0].line) == (2, 16)
    assert rc.fix.variant.id == "general"
    assert "index" in rc.fix.steps[0] and "start-up" not in rc.fix.steps[0]


def test_missing_data_file_outside_a_dataset_keeps_the_missing_sample_fix():
    """The same kind of file opened by the training loop itself (no dataset frame)."""
    d = diagnose_paths([str(FIX_UCE / "missing-data-sample.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert (d.initiating_rank, rc.evidence[0].line) == (1, 7)
    assert rc.fix.variant.id == "missing-data-sample"


def test_missing_config_file_keeps_the_point_at_the_real_file_fix(tmp_path):
    p = tmp_path / "cfg.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 12, in <module>\n'
        "    cfg = yaml.safe_load(open(args.config))\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'configs/your_config.yaml'\n"
    )
    rc = diagnose_paths([str(p)], mask=False).root_cause
    assert rc is not None and rc.fix.variant.id == "missing-file"


def test_directory_created_by_two_ranks_at_once_gets_the_one_rank_prepares_fix():
    d = diagnose_paths([str(FIX_UCE / "concurrent-create.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.fix.variant.id == "concurrent-create"
    assert d.initiating_rank == 1 and "exist_ok=True" in rc.fix.steps[0]


def test_one_rank_stopped_while_the_others_issued_the_next_collective_is_the_initiator():
    """Rank 1's dump line: last enqueued 40 = last completed 40 (it issued nothing after work
    40); ranks 0, 2, 3 timed out in SeqNum 41 (enqueued 41, completed 40): rank 1 never issued
    the all-gather the others wait in, so it is the rank they waited for; the fix says the
    ranks ran different collective sequences (a timeout raise would not help)."""
    path = (
        ROOT
        / "tests"
        / "fix_variants"
        / "nccl-watchdog-timeout"
        / "ranks-issued-different-collectives.log"
    )
    d = diagnose_paths([str(path)], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl-watchdog-timeout"
    assert d.initiating_rank == 1 and d.initiator.strategy == "enqueued_split"
    assert rc.fix.variant.id == "ranks-issued-different-collectives"
    assert "never issued work 41" in rc.fix.steps[0]


def test_several_stopped_ranks_are_candidates_and_no_rank_is_claimed():
    d = diagnose_paths([str(KINDS / "enqueued-split-two-stopped.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.fix.variant.id == "ranks-issued-different-collectives"
    assert d.initiating_rank is None and d.initiator.strategy == "enqueued_split"
    assert "ranks 0, 1 never issued work 41" in rc.fix.steps[0]


def test_no_kernel_image_from_torch_itself_leads_with_a_build_that_lists_the_gpu():
    """torch's own .to() on a V100 (sm_70) under a build that starts at sm_75: the headline is
    the build to install, for a GPU older than the build as well as a newer one (not a
    comparison to run first)."""
    d = diagnose_paths(
        [str(ROOT / "tests" / "fix_variants" / "cuda-no-kernel-image" / "general.log")], mask=False
    )
    rc = d.root_cause
    assert rc is not None and rc.signature == "cuda-no-kernel-image"
    assert rc.fix.variant.id == "general" and rc.evidence[0].line == 9
    assert "older than the build" in rc.fix.steps[0] and "cu126" in rc.fix.steps[0]


def test_no_kernel_image_inside_an_extension_leads_with_rebuilding_it():
    d = diagnose_paths(
        [str(ROOT / "tests" / "fix_variants" / "cuda-no-kernel-image" / "extension.log")],
        mask=False,
    )
    rc = d.root_cause
    assert rc is not None and rc.fix.variant.id == "extension"
    assert "TORCH_CUDA_ARCH_LIST" in rc.fix.steps[0]


def test_ten_ranks_on_one_host_get_a_single_node_verify(tmp_path):
    """torchelastic's summary names one host for all ten ranks (local rank == rank): one
    10-GPU node, so the verify command is a single-node torchrun, not a multi-node template
    with --nnodes/--rdzv-endpoint placeholders (more ranks than 8 alone is no second node)."""
    entries = []
    for r in range(10):
        entries += [
            f"[{r}]:",
            "  time      : 2024-02-01_10:00:00",
            "  host      : gpu-box",
            f"  rank      : {r} (local_rank: {r})",
            f"  exitcode  : 1 (pid: {500 + r})",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        ]
    p = tmp_path / "ten.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 9, in <module>\n'
        "    steps = int(cfg['steps']) / None\n"
        "TypeError: unsupported operand type(s) for /: 'int' and 'NoneType'\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "Root Cause (first observed failure):\n" + "\n".join(entries) + "\n"
    )
    d = diagnose_paths([str(p)], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert "--nproc-per-node=10" in rc.verify and "--nnodes" not in rc.verify
