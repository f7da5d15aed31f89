"""The rank of a process stuck in state D on a multi-node job: on the job's first node.

A ``ps`` table pasted after ``ssh <host>`` is that host's; srun places task 0 of any step
on the allocation's first node, whose launcher starts global ranks 0 to n-1, so with one
compute process per GPU there (nvidia-smi's ``Processes:`` table) the stuck process's GPU
index is its global rank. On another node its node rank is not known: no rank.

Fixtures (``tests/stuck_first_node``) are written in the tools' own formats (srun's ``srun:
error: <host>: task <k>: ...``, nvidia-smi's process table, ``ps aux``): a user's paste of a
2-node x 4-GPU job that hung, with a py-spy srun step, then ``ssh gpu-a01`` (task 0's node)
or ``ssh gpu-a02`` (task 1's), where GPU 0's process is in state ``Dl``.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).resolve().parent / "stuck_first_node"


def test_a_d_state_process_on_srun_task_0s_node_is_its_gpus_global_rank():
    d = diagnose_paths([str(HERE / "ssh_to_task0_node.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "process-stuck-uninterruptible"
    assert rc.evidence[0].line == 20  # the Dl row of pid 51120 (GPU 0)
    assert d.initiating_rank == 0


def test_a_d_state_process_on_another_node_gets_no_rank():
    d = diagnose_paths([str(HERE / "ssh_to_task1_node.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "process-stuck-uninterruptible"
    assert d.initiating_rank is None
