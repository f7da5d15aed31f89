"""A job started from a notebook cell is verified in the notebook (trial r15b, finding 8).

accelerate's ``notebook_launcher`` runs the training function of a cell in processes forked
from the kernel: there is no script, so ``python <train.py>`` (with "fill in <train.py>")
could not be run. The verification sets the variables in the kernel's environment, which the
processes inherit, and reruns the launching cell. The log is written here in the shape
IPython 8 and ``torch.multiprocessing.spawn`` print (tests/data/notebook-launcher-oom.txt)."""

from __future__ import annotations

from conftest import ROOT

from rootrank.engine import diagnose_paths
from rootrank.entry.frames import IN_NOTEBOOK, notebook_cell, notebook_verify

LOG = ROOT / "tests" / "data" / "notebook-launcher-oom.txt"


def test_a_notebook_launcher_job_is_verified_by_rerunning_its_cell():
    rc = diagnose_paths([str(LOG)]).root_cause
    assert rc is not None and rc.failure_class == "cuda-oom" and rc.rank == 2
    assert rc.verify == (
        'in the notebook: import os; os.environ["PYTORCH_CUDA_ALLOC_CONF"] = '
        '"expandable_segments:True" in a cell run before notebook_launcher, then rerun the '
        "cell that calls notebook_launcher  # run past the failing step; no OutOfMemoryError "
        "on any rank"
    )
    assert "<train.py>" not in rc.verify


def test_the_notebook_form_keeps_terminal_commands_and_the_script_form_elsewhere():
    # a command a terminal runs as it is stays
    assert notebook_verify("nvidia-smi  # 0 processes", None) == "nvidia-smi  # 0 processes"
    assert notebook_verify('python -c "import torch"', None) == 'python -c "import torch"'
    # a rerun with no settings: the cell again, after a restart (CUDA state is per kernel)
    assert notebook_verify("torchrun --nproc-per-node=2 <train.py>  # ok", None) == (
        f"{IN_NOTEBOOK} restart the kernel and rerun the cell that starts the job  # ok"
    )
    assert notebook_cell("Cell In[7]") and notebook_cell("/tmp/ipykernel_1/22.py")
    assert not notebook_cell("/home/ana/nb/train_utils.py")


def test_a_script_job_keeps_its_command():
    rc = diagnose_paths([str(ROOT / "examples" / "ddp-unused-parameters.log")]).root_cause
    assert rc is not None and not rc.verify.startswith(IN_NOTEBOOK)
