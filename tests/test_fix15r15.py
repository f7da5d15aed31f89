"""Fix kinds of round 15 (issue 15): decisions the log supports, each tested on a fixture
written from what the tools print (tests/kinds_r15/, tests/fix_variants/) and on the rule's
own function."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.scan import deepspeed_command

KINDS = Path(__file__).resolve().parent / "kinds_r15"


def _diag(name: str):
    diag = diagnose_paths([str(KINDS / name)])
    assert diag.root_cause is not None
    return diag, diag.root_cause


def test_deepspeed_worker_argv_is_the_rerun_command():
    # deepspeed/launcher/launch.py: cmd = [sys.executable, "-u", script, "--local_rank=N", *args]
    assert deepspeed_command(
        "['/usr/bin/python3', '-u', 'x.py', '--local_rank=3', '--lr', '1e-4', '--name', 'a b']"
    ) == ("deepspeed --num_gpus <gpus> x.py --lr 1e-4 --name 'a b'")
    assert deepspeed_command("['/usr/bin/python', '-u', '-m', 'pkg.train', '--local_rank=0']") == (
        "deepspeed --num_gpus <gpus> --module pkg.train"
    )
    assert deepspeed_command("['/usr/bin/python', '-u', 'bash']") is None  # no script
    assert deepspeed_command("['/usr/bin/python', '-u', 'x.py'") is None  # cut short


def test_verify_reruns_the_argv_deepspeed_printed_with_its_arguments():
    diag, rc = _diag("deepspeed-worker-argv.log")
    assert rc.failure_class == "cuda-oom"
    assert diag.initiating_rank == 1
    assert rc.verify.startswith(
        "deepspeed --num_gpus <gpus> train_lm.py --config configs/small.yaml --lr 3e-4"
        " --run_name 'ds trial 2'  # "
    )
    assert "--local_rank" not in rc.verify
