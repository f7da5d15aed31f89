"""Commands that fit the job (issues 10 and 15): the launcher and its arguments as the user
ran them, the process count the log shows, the entry script; success is an exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.entry.commands import UNSHOWN_LAUNCH_NOTE
from rootrank.report import unfilled_placeholders
from rootrank.scan import LaunchFacts

HERE = Path(__file__).resolve().parent / "fix_variants"
OOM = (
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
    "GPU 1 has a total capacity of 79.15 GiB of which 1.21 GiB is free.\n"
)


@pytest.mark.parametrize(
    ("line", "launchers", "command"),
    [
        (
            "$ torchrun --nproc-per-node=4 train.py --lr 1",
            {"torchrun"},
            "torchrun --nproc-per-node=4 train.py --lr 1",
        ),
        (
            "+ mpirun -np 4 -x NCCL_DEBUG=INFO python train.py",
            {"mpirun"},
            "mpirun -np 4 -x NCCL_DEBUG=INFO python train.py",
        ),
        ("python3 -m app.trainer --epochs 3", {"python"}, "python3 -m app.trainer --epochs 3"),
        (
            "$ python -m torch.distributed.run --nproc-per-node 2 t.py",
            {"torchrun"},
            "python -m torch.distributed.run --nproc-per-node 2 t.py",
        ),
        ("[1,0]<stderr>:Traceback (most recent call last):", {"mpirun"}, None),
        ("srun: error: node01: tasks 2-3: Exited with exit code 1", {"srun"}, None),
        # torchrun --tee's prefix: role "default", local rank 3
        ("[default3]:  what():  CUDA error: unknown error", {"torchrun"}, None),
        ("node02: [default3]:[rank11]: RuntimeError: x", {"torchrun"}, None),
        ('  File "/x/torch/multiprocessing/spawn.py", line 3, in join', {"mp.spawn"}, None),
        ("python 3.6", set(), None),
        ("Using python 3.10 on linux", set(), None),
    ],
)
def test_launch_facts_read_the_launcher_and_the_printed_command(line, launchers, command):
    facts = LaunchFacts()
    facts.read(line, 1)
    assert facts.launchers == launchers
    assert facts.command == command


def test_a_script_that_calls_mp_spawn_is_run_with_python():
    rc = diagnose_paths([str(HERE / "env-rendezvous-var-missing" / "mp-spawn.log")]).root_cause
    assert rc.verify == "python spawn_noenv.py  # init_process_group succeeds"


def test_srun_job_is_verified_with_srun():
    rc = diagnose_paths([str(HERE / "env-rendezvous-var-missing" / "srun.log")]).root_cause
    # the log shows no launch command: the check says to resubmit the job as it was started
    assert rc.verify == (
        "srun --ntasks=<np> python train.py  # init_process_group succeeds " + UNSHOWN_LAUNCH_NOTE
    )
    assert unfilled_placeholders(rc.verify) == ["<np>"]


def test_processes_per_node_come_from_the_ranks_torchrun_ran():
    rc = diagnose_paths([str(HERE / "timeout-call-site-divergence" / "rank-branch.log")]).root_cause
    assert "torchrun --nproc-per-node=3 branch_desync.py" in rc.verify
    assert unfilled_placeholders(rc.verify) == []


def test_the_printed_command_is_reused_whole():
    rc = diagnose_text(
        "+ torchrun --nnodes 1 --nproc-per-node 4 recipes/sft.py --lr 1e-4\n" + OOM
    ).root_cause
    assert rc.verify.startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nnodes 1 --nproc-per-node 4 recipes/sft.py --lr 1e-4  #"
    )


def test_an_unknown_count_is_every_gpu_and_an_unknown_script_a_blank():
    rc = diagnose_text(OOM).root_cause
    assert "torchrun --nproc-per-node=gpu <train.py>  #" in rc.verify
    assert unfilled_placeholders(rc.verify) == ["<train.py>"]


def test_a_file_the_log_never_shows_is_a_blank_not_a_ready_command():
    log = (HERE / "accelerate-config-error" / "general.log").read_text()
    rc = diagnose_text(log).root_cause
    assert rc.verify.startswith("accelerate launch --config_file <accel.yaml> train.py ")
    rc = diagnose_text("$ accelerate launch --config_file accel.yaml train.py\n" + log).root_cause
    assert rc.verify.startswith("accelerate launch --config_file accel.yaml train.py ")


def test_no_verify_command_tests_success_with_grep_c(library):
    # `grep -c` exits 1 when it counts 0: the command would fail exactly when the fix worked
    for sig in library.signatures.values():
        verifies = [sig.verify, *(v.get("verify", "") for v in sig.fix.get("variants", []))]
        for verify in verifies:
            assert "grep -c" not in verify.split("  # ", 1)[0], sig.id


def test_a_module_the_log_never_shows_is_a_blank():
    from rootrank.entry.commands import Launch, ready

    launch = Launch(None, None, None, None, None, frozenset({"utils.py"}))
    command = 'python -c "from train import loader; next(iter(loader))"  # one batch collates'
    assert (
        ready(command, launch)
        == 'python -c "from <train> import loader; next(iter(loader))"  # one batch collates'
    )
    assert (
        ready('python -c "from utils import collate"', launch)
        == 'python -c "from utils import collate"'
    )
    assert (
        ready('python -c "import torch.distributed as d"', launch)
        == 'python -c "import torch.distributed as d"'
    )
    assert unfilled_placeholders(ready(command, launch)) == ["<train>"]


def test_an_option_of_the_users_script_the_log_never_shows_moves_to_the_comment():
    root = Path(__file__).resolve().parents[1]
    d = diagnose_paths([str(root / "examples" / "ddp-unused-parameters.log")], mask=False)
    verify = d.root_cause.verify
    # The entry's "--max-steps 20" is not in the log's command: the script may not take it,
    # and as a blank "<--max-steps 20>" a shell would read "<" as a redirect. The command
    # runs as printed; the option is suggested in the comment. The log names the rank whose
    # parameters got no grad (rank 2 of 4 ranks): the rerun runs the job's own 4 processes.
    command, _, comment = verify.partition("  # ")
    assert command == (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=4 scenarios/ddp_unused_parameters.py"
    )
    assert comment.endswith(
        "(add --max-steps 20 if ddp_unused_parameters.py takes it, for a short run) "
        + UNSHOWN_LAUNCH_NOTE
    )


LIGHTNING_FSDP_OOM = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/mei/vlm/lit_train.py", line 120, in <module>
[rank0]:     trainer.fit(module, datamodule=dm)
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/lightning/pytorch/trainer/trainer.py", line 538, in fit
[rank0]:     call._call_and_handle_interrupt(
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/lightning/pytorch/trainer/call.py", line 46, in _call_and_handle_interrupt
[rank0]:     return trainer.strategy.launcher.launch(trainer_fn, *args, trainer=trainer, **kwargs)
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/lightning/pytorch/strategies/launchers/subprocess_script.py", line 105, in launch
[rank0]:     return function(*args, **kwargs)
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/lightning/pytorch/strategies/fsdp.py", line 294, in _setup_model
[rank0]:     model = FullyShardedDataParallel(
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/torch/distributed/fsdp/fully_sharded_data_parallel.py", line 509, in __init__
[rank0]:     _init_param_handle_from_module(
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/torch/distributed/fsdp/_init_utils.py", line 648, in _init_param_handle_from_params
[rank0]:     handle = FlatParamHandle(
[rank0]:   File "/home/mei/.venv/lib/python3.11/site-packages/torch/distributed/fsdp/_flat_param.py", line 848, in flatten_tensors
[rank0]:     return torch.cat(flat_tensors, dim=0)
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.48 GiB. GPU 0 has a total capacity of 23.65 GiB of which 9.80 GiB is free.
"""


def test_a_lightning_job_is_verified_as_lightning_runs_it():
    """Lightning's Trainer starts the other processes from ``python script.py`` itself (its
    SubprocessScriptLauncher in the traceback): no torchrun, and the FSDP wrapping OOM gets
    the auto-wrap policy, in Lightning's own words."""
    rc = diagnose_text(LIGHTNING_FSDP_OOM).root_cause
    assert rc.fix.variant.id == "fsdp-flatten"
    assert "FSDPStrategy(auto_wrap_policy=" in rc.fix.steps[0]
    assert rc.verify.startswith("python lit_train.py  # FSDP wraps the model")
    assert "torchrun" not in rc.verify


def test_an_accelerate_entry_in_a_lightning_job_is_not_launched_with_accelerate():
    log = LIGHTNING_FSDP_OOM.replace(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.48 GiB. GPU 0 has a total capacity of 23.65 GiB of which 9.80 GiB is free.",
        "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32",
    )
    rc = diagnose_text(log).root_cause
    assert "accelerate" not in rc.verify
    assert rc.verify.startswith("python lit_train.py ")


def test_a_deepspeed_job_with_no_launcher_line_is_verified_with_deepspeeds_launcher():
    """Six identical tracebacks and DeepSpeed's own log lines, no launcher printed: several
    processes (never ``python train.py`` alone), started by the launcher DeepSpeed documents."""
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/srv/ana/train_ds.py", line 80, in <module>\n'
        "    main()\n"
        '  File "/srv/ana/train_ds.py", line 52, in main\n'
        "    opt = build_optimizer(model.named_parameters())\n"
        "AttributeError: 'tuple' object has no attribute 'named_parameters'\n"
    )
    log = (
        "[2026-11-20 10:01:02,100] [INFO] [logging.py:96:log_dist] [Rank -1] DeepSpeed info: "
        "version=0.14.0, git-hash=unknown, git-branch=unknown\n" + tb * 3
    )
    rc = diagnose_text(log).root_cause
    assert rc.fix.variant.id == "tuple-returned"
    assert "Unpack it where it is assigned" in rc.fix.steps[0]
    assert rc.fix.steps[0].startswith("train_ds.py:52")
    assert rc.verify.startswith("deepspeed train_ds.py  # ")


def test_a_torchrun_flag_with_spaces_is_not_cut_for_a_store_error():
    """The TCPStore's own error is a distributed job's: its port fix keeps torchrun whole."""
    log = (
        "RuntimeError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n"
    )
    rc = diagnose_text(log).root_cause
    assert "python <train.py> +" not in rc.verify
    assert rc.verify.startswith(
        "torchrun --nproc-per-node=gpu --master-port=$((29500 + RANDOM % 1000))"
    )
