"""Commands that fit the job (issues 10 and 15): the launcher and its arguments as the user
ran them, the process count the log shows, the entry script; success is an exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
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
    assert rc.verify == "srun --ntasks=<np> python train.py  # init_process_group succeeds"
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


def test_an_unknown_count_stays_a_visible_blank():
    rc = diagnose_text(OOM).root_cause
    assert "torchrun --nproc-per-node=<gpus> <train.py>  #" in rc.verify
    assert unfilled_placeholders(rc.verify) == ["<gpus>", "<train.py>"]


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
    # runs as printed; the option is suggested in the comment.
    command, _, comment = verify.partition("  # ")
    assert command == (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=2 scenarios/ddp_unused_parameters.py"
    )
    assert comment.endswith(
        "(add --max-steps 20 if ddp_unused_parameters.py takes it, for a short run)"
    )
