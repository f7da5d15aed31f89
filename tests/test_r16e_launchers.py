"""Round-16 set E kind: the launcher a log's own line prefixes show (srun --label task ids,
Ray's actor prefixes) decides the verification command (held-out GitHub-issue logs scored
blind at b8c6e93; see the set's MISSES.md).

Every log here is written for this test in the tools' own wording (srun --label's ``N: ``
task prefix before torch's ``[rankN]:``; Ray's log-monitor prefix ``(Class pid=N, ip=X)``,
raylet's lines and its ``[repeated Nx across cluster]`` note), never copied from a held-out
log.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.scan import LaunchFacts


@pytest.mark.parametrize(
    ("line", "launchers"),
    [
        # srun --label: the task id is the rank torch prints (one task per rank)
        ("10: [rank10]: AssertionError: num_layers should be divisible", {"srun"}),
        (' 2: [rank2]:   File "/opt/x/train.py", line 3, in main', {"srun"}),
        # a number that is not the rank on that line is not srun's task label
        ("3: [rank4]: RuntimeError: x", set()),
        ("12: step 400 loss 2.1", set()),
        # Ray's prefixes: an actor on another node (ip=), raylet, the dedup note
        ("(ActorModelRayActor pid=748, ip=10.0.0.27) [rank12]:[E416 13:21:26] x", {"ray"}),
        ("(raylet) A worker died or was killed while executing a task", {"ray"}),
        ("(TaskRunner pid=41) step 3 [repeated 4x across cluster]", {"ray"}),
        # vLLM's multiprocessing worker prefix has no ip: not Ray
        ("(VllmWorkerProcess pid=7311) INFO 10-02 08:15:20 worker ready", {"vllm"}),
    ],
)
def test_line_prefixes_name_their_launcher(line, launchers):
    facts = LaunchFacts()
    facts.read(line, 1)
    assert facts.launchers == launchers


#: srun-native launch (srun --label, one task per GPU): every rank fails the same
#: Megatron-core check while building the model.
LOG_SRUN_LABEL = """\
 0: [rank0]: Traceback (most recent call last):
 1: [rank1]: Traceback (most recent call last):
 0: [rank0]:   File "/usr/local/lib/python3.12/dist-packages/megatron/core/transformer/transformer_block.py", line 110, in get_num_layers_to_build
 0: [rank0]:     num_layers % config.pipeline_model_parallel_size == 0
 0: [rank0]: AssertionError: num_layers should be divisible by pipeline_model_parallel_size
 1: [rank1]: AssertionError: num_layers should be divisible by pipeline_model_parallel_size
"""


def test_an_srun_labelled_job_is_verified_with_srun_not_one_python_process():
    d = diagnose_text(LOG_SRUN_LABEL)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.evidence[0].line) == ("config-error", 5)
    assert d.initiating_rank is None  # both ranks fail the same check
    assert rc.verify.startswith("srun --ntasks=")


#: An RL trainer on Ray: the training actors' watchdog, prefixed by Ray with the actor's node.
LOG_RAY_ACTORS = """\
(PolicyActor pid=901, ip=10.0.0.5) [rank3]:[E0511 02:10:44.118000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4012, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.
(PolicyActor pid=902, ip=10.0.0.5) [rank2]:[E0511 02:10:44.120000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4012, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600033 milliseconds before timing out.
"""


def test_a_ray_actor_job_is_not_verified_with_torchrun():
    d = diagnose_text(LOG_RAY_ACTORS)
    rc = d.root_cause
    assert rc is not None
    assert (rc.failure_class, rc.evidence[0].line) == ("collective-timeout", 1)
    assert d.initiating_rank is None
    assert "torchrun" not in rc.verify
    assert "python" in rc.verify
