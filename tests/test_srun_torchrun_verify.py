"""torchrun's agents started by srun, one task per node (``srun ... torchrun ...`` in a job
script, the launch PyTorch's and torchtitan's Slurm examples use): the verification reruns the
job the same way, through srun from the allocation, with c10d's rendezvous on the allocation's
first host, and the node count the agents' srun task ids show (trial r19 finding 6: the command
dropped srun and left ``--nnodes=<nodes> --node-rank=<node rank>`` blanks).

Fixture ``srun_torchrun/two-node-oom.log``: written from the tools' own formats: srun
``--label``'s ``N: `` task prefix, torchrun's agent lines (torch/distributed/run.py's banner,
elastic/multiprocessing/api.py's ``Sending process N closing signal SIGTERM`` and ``failed
(exitcode: 1) local_rank: 1 (pid: N)``), its failure table (``rank : 5 (local_rank: 1)``), the
``[rankN]:`` prefix of a worker's traceback and srun's ``srun: error: HOST: task N:`` lines.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.entry.commands import SLURM_HEAD, Launch, fit

LOG = Path(__file__).resolve().parent / "data" / "srun_torchrun" / "two-node-oom.log"


def test_oom_under_srun_torchrun_names_rank_and_reruns_through_srun() -> None:
    d = diagnose_text(LOG.read_text(), LOG.name, mask=False)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.rank) == ("cuda-oom", 5)
    assert rc.verify.startswith(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True srun --nodes=2 --ntasks-per-node=1 "
        "torchrun --nproc-per-node=4 --nnodes=2 --rdzv-backend=c10d "
        f"--rdzv-endpoint={SLURM_HEAD}:29500 train.py  #"
    )
    assert "<node rank>" not in rc.verify


def test_agent_lines_under_srun_are_no_rank() -> None:
    # "1: W... Sending process 3010 closing signal SIGTERM" is task 1's agent (node 1), not rank 1
    d = diagnose_text(LOG.read_text(), LOG.name, mask=False)
    assert d.root_cause is not None
    stopped = [c for c in d.collateral if any("closing signal" in e.text for e in c.evidence)]
    assert [c.ranks for c in stopped] == [[]]
    # "srun: error: gpu-node-02: task 1: Exited with exit code 1" is node 1's agent exiting
    failed = [c.ranks for c in d.collateral if c.signature == "elastic-child-failed"]
    assert failed == [[5]]


def test_fit_without_srun_keeps_the_node_rank_blank() -> None:
    launch = Launch("torchrun", None, "train.py", 4, None, multi_node=True, nodes=2)
    assert fit("torchrun --nproc-per-node=4 train.py  # ok", launch, verify=True) == (
        "torchrun --nproc-per-node=4 --nnodes=2 --node-rank=<node rank> --rdzv-backend=c10d"
        " --rdzv-endpoint=<master host>:<port> train.py  # ok"
    )
    srun = Launch("torchrun", None, "train.py", 4, None, multi_node=True, nodes=2, under_srun=True)
    assert fit("torchrun --nproc-per-node=4 train.py  # ok", srun, verify=True) == (
        "srun --nodes=2 --ntasks-per-node=1 torchrun --nproc-per-node=4 --nnodes=2"
        f" --rdzv-backend=c10d --rdzv-endpoint={SLURM_HEAD}:29500 train.py  # ok"
    )
