"""Round 11's kinds of bad advice (issue 15), each on a log written for this test (not a
held-out or corpus log): the fix's first line is the decision the log supports and the
verify command is one this job can run.

- a first collective every rank waits in with the same size: the P2P smoke test, not
  "compare NumelIn";
- a broadcast only a receiver reports: the source rank's work before it;
- an OOM while loading, or on a GPU several processes share: not "lower the batch";
- a missing module of the user's own tree / a missing submodule of an installed package:
  not "pip install a.b.c";
- a ZeroDivisionError on a count, a missing config file, a port below 1024;
- NCCL's out of memory with no training launcher in the log: every engine's memory share;
- placeholders the log fills (the module of an ImportError) and the job's own launcher in
  the verify command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.entry.variants import agreed_values, local_module_frame

HERE = Path(__file__).resolve().parent
VARIANTS = HERE / "fix_variants"
KINDS = HERE / "fix_kinds_r11"


def _rc(path: Path):
    rc = diagnose_paths([str(path)]).root_cause
    assert rc is not None
    return rc


def test_first_transfer_with_equal_sizes_gets_the_p2p_decision():
    rc = _rc(VARIANTS / "fsdp-init-collective-watchdog-timeout" / "first-transfer-p2p.log")
    assert rc.fix.variant.id == "first-transfer-p2p"
    assert "every reporting rank gives the same numel 65536000" in rc.fix.variant.why
    first = rc.fix.steps[0]
    assert first.startswith("Every rank waits in the same first collective (BROADCAST SeqNum 1")
    assert "NumelIn 65536000 on each" in first and "NCCL_P2P_DISABLE=1" in first
    assert not first.startswith("Compare NumelIn")
    # the smoke test runs under torchrun whatever launched the job (deepspeed here)
    assert rc.verify.startswith(
        "NCCL_P2P_DISABLE=1 timeout 300 torchrun --standalone --nproc-per-node=2 /tmp/p2p_check.py"
    )
    assert "/tmp/p2p_check.py" in rc.fix.code["pytorch"]


def test_a_single_rank_report_keeps_the_compare_step():
    # one rank only: whether the sizes agree is not known, so the general step stays
    rc = _rc(VARIANTS / "fsdp-init-collective-watchdog-timeout" / "general.log")
    assert rc.fix.variant.id == "general"
    assert rc.fix.steps[0].startswith("Compare NumelIn across ranks")


def test_agreed_values_need_two_ranks_and_one_value():
    assert agreed_values([(0, {"numel": "8"}), (1, {"numel": "8"})]) == {"numel": "8"}
    assert agreed_values([(0, {"numel": "8"}), (1, {"numel": "9"})]) == {}
    assert agreed_values([(0, {"numel": "8"}), (0, {"numel": "8"})]) == {}
    assert agreed_values([(0, {"numel": "8"}), (None, {"numel": "8"})]) == {}


def test_a_receiver_of_a_broadcast_is_sent_to_the_source():
    rc = _rc(VARIANTS / "nccl-watchdog-timeout" / "broadcast-source.log")
    assert rc.fix.variant.id == "broadcast-source"
    first = rc.fix.steps[0]
    assert first.startswith("The collective that hung is a broadcast (BROADCAST SeqNum 20417)")
    assert "rank 0 unless the call passes src=" in first
    assert "passes SeqNum 20417" in rc.verify


def test_oom_on_a_shared_gpu_says_set_device_and_sharded_loading():
    rc = _rc(VARIANTS / "cuda-oom" / "shared-gpu.log")
    assert rc.fix.variant.id == "shared-gpu"
    assert "torch.cuda.set_device(local_rank) before any CUDA work" in rc.fix.steps[0]
    assert "the batch size does not matter there" in rc.fix.steps[1]
    assert "zero.Init" in rc.fix.steps[1]
    assert not any(s.startswith("Lower the peak memory") for s in rc.fix.steps)


def test_oom_while_loading_the_model_is_not_a_batch_size_problem():
    rc = _rc(VARIANTS / "cuda-oom" / "at-load.log")
    assert rc.fix.variant.id == "at-load"
    assert "modeling_utils.py:_load_pretrained_model" in rc.fix.variant.why
    step = next(s for s in rc.fix.steps if "before any training step" in s)
    assert "the batch size does not matter there" in step
    assert "low_cpu_mem_usage=True" in step
    assert "launch_sft.py" in rc.verify and "passes model loading" in rc.verify


def test_a_missing_file_of_the_users_own_package_is_not_pip_installed():
    rc = _rc(VARIANTS / "module-not-found" / "own-module.log")
    assert rc.fix.variant.id == "own-module"
    first = rc.fix.steps[0]
    # the user's line first, then the decision
    assert first.startswith("__init__.py:7 (in <module>), where the failing process raised")
    assert (
        "segtool.models.heads.fpn_head_v2 is part of your own source tree, not a package to install: "
        "segtool/models/heads/__init__.py:7 imports it"
    ) in first
    assert "pip install segtool" not in " ".join(rc.fix.steps)
    # the module the log names is imported as it is, not blanked to <segtool>
    assert rc.verify.startswith('python -c "import segtool.models.heads.fpn_head_v2"')


def test_a_missing_submodule_of_an_installed_package_names_the_check():
    rc = _rc(VARIANTS / "module-not-found" / "missing-submodule.log")
    assert rc.fix.variant.id == "missing-submodule"
    assert rc.fix.steps[0].startswith(
        "Python imported transformers.models and found no gemma3 in it"
    )
    assert (
        '`python -c "import transformers.models; print(transformers.models.__file__)"`'
        in rc.fix.steps[0]
    )
    assert "the installed transformers is a release without gemma3" in rc.fix.steps[1]
    assert rc.verify.startswith('python -c "import transformers.models.gemma3"')


def test_a_top_level_module_keeps_the_install_advice():
    rc = _rc(VARIANTS / "module-not-found" / "general.log")
    assert rc.fix.variant.id == "general"
    assert "ModuleNotFoundError: Install wandb into the same interpreter" in rc.fix.steps[0]


def test_local_module_frame_reads_the_package_directory():
    frames = [
        ("/usr/lib/python3.10/runpy.py", 197),
        ("/w/proj/pkg/sub/__init__.py", 4),
    ]
    assert local_module_frame("pkg.sub.missing", frames) == "pkg/sub/__init__.py:4"
    assert local_module_frame("missing", frames) is None  # no package part
    site = [("/opt/venv/lib/python3.10/site-packages/pkg/sub/__init__.py", 4)]
    assert local_module_frame("pkg.sub.missing", site) is None


def test_import_name_error_fills_the_module_the_message_names():
    rc = _rc(KINDS / "import-name.log")
    assert rc.signature == "import-name-error"
    assert (
        "ImportError: torch.nn.attention.flex_attention has no create_block_mask"
        in (rc.fix.steps[0])
    )
    assert rc.verify.startswith(
        'python -c "from torch.nn.attention.flex_attention import create_block_mask"'
    )
    assert "<module>" not in rc.verify and "import <module>" not in " ".join(rc.confirm)


def test_zero_division_on_a_count_says_the_data_is_smaller_than_a_batch():
    rc = _rc(VARIANTS / "user-code-exception" / "zero-count.log")
    assert rc.fix.variant.id == "zero-count"
    step = next(s for s in rc.fix.steps if "divides by a count that is 0" in s)
    assert "`warmup = cfg.warmup_ratio * total_steps // num_batches_per_epoch`" in step
    assert "fewer samples than one global batch" in step
    # one process, no launcher or rank in the log: rerun as it ran (python, not torchrun)
    assert rc.verify.startswith("python train_ctc.py")


def test_a_missing_config_file_is_fixed_at_its_path():
    rc = _rc(VARIANTS / "user-code-exception" / "missing-file.log")
    assert rc.fix.variant.id == "missing-file"
    assert "configs/EDIT_ME.yaml" in rc.fix.steps[0]
    assert "pdb" not in " ".join(rc.fix.steps)


def test_the_exception_verify_reruns_the_jobs_own_launch():
    rc = _rc(KINDS / "torchrun-six-ranks-exception.log")
    assert rc.signature == "user-code-exception" and rc.rank == 3
    # the printed torchrun command (six processes), never a one-process python run
    assert rc.verify.startswith(
        "torchrun --standalone --nproc_per_node=6 pretrain_t5.py --data /data/c4"
    )
    assert "python pretrain_t5.py" not in rc.verify


def test_a_port_below_1024_comes_from_the_environment():
    rc = _rc(VARIANTS / "port-in-use" / "system-port.log")
    assert rc.fix.variant.id == "system-port"
    assert rc.fix.steps[0].startswith("Port 80 is a system service's port")
    assert "PORT=${PORT:-29500}" in rc.fix.steps[0]
    assert "stop the process holding" not in " ".join(rc.fix.steps)
    assert "PORT=29500 MASTER_PORT=29500 <your launch command>" in rc.verify


@pytest.mark.parametrize(
    ("log", "variant", "verify_head"),
    [
        # no launch in the log: the class's standalone check (r25d)
        ("general.log", "general", "nvidia-smi --query-gpu=index,memory.used,memory.total"),
        # fix15r14: the log shows the launch and no step, so the warm-up variant of a training job
        (
            "training-at-start-up.log",
            "training-at-start-up",
            "NCCL_DEBUG=WARN torchrun --nproc_per_node=4 pretrain_vae.py",
        ),
    ],
)
def test_nccl_out_of_memory_by_what_the_log_shows(log, variant, verify_head):
    rc = _rc(VARIANTS / "nccl-cuda-oom" / log)
    assert rc.fix.variant.id == variant
    assert rc.verify.startswith(verify_head)
    if variant == "general":  # no training launcher: every engine's memory share is named
        assert "kv_cache_free_gpu_mem_fraction" in rc.fix.steps[0]
        assert "gpu_memory_utilization" in rc.fix.steps[0]
    else:
        assert rc.fix.steps[0].startswith("Create all process groups")


def test_an_old_torch_named_by_its_thc_lines_is_upgraded_first():
    rc = _rc(VARIANTS / "cuda-illegal-memory-access" / "old-torch.log")
    assert rc.fix.variant.id == "old-torch"
    assert "Upgrade PyTorch to a current release first" in rc.fix.steps[0]
    assert not rc.fix.steps[0].startswith("Rerun the failing step")
    assert rc.verify.startswith('python -c "import torch; print(torch.__version__)')


def test_ib_retry_exceeded_decides_by_which_hosts_report_it():
    rc = _rc(VARIANTS / "ib-completion-error" / "retry-exceeded.log")
    assert rc.fix.variant.id == "retry-exceeded"
    first = rc.fix.steps[0]
    assert "Which hosts report it decides." in first
    # one host: its link; every host at once: GPUDirect RDMA first
    assert "drain the host that reports it" in first
    assert "Every host of the job at once" in first and "NCCL_NET_GDR_LEVEL=LOC" in first
