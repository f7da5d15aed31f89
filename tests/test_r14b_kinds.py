"""Round 14, set B: the kinds of fault the held-out set r14b showed, each by its mechanism.

Fixtures are written for these tests (the formats are what the tools print: torchrun --tee's
``[defaultN]:`` prefix, tqdm's postfix, a training script's per-epoch print); none is a held-out log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.metrics import EPOCH_SUFFIX, MetricsReader, epoch_summary

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "signatures" / "training"


def _pace_onsets(values: list[float]) -> list[tuple[str, int]]:
    """Onsets of one rank's throughput series fed one value per step (steps 1, 2, ...)."""
    reader = MetricsReader()
    for step, v in enumerate(values, start=1):
        reader.observe(f"step {step} samples/sec={v}", rank=0, time=None, path="x.log", line=step)
    return [(o.kind, o.point.step) for o in reader.onsets()]


def test_slowdown_that_came_back_to_its_pace_is_not_reported():
    """A slow stretch (every rank at a quarter of its speed for 14 steps: a busy shared file
    system, a profiling epoch) followed by the early pace to the end of the run: the run was not
    stopped by it, so no training-slowdown (the detector found the stretch, then saw the pace
    restored for SUSTAIN steps)."""
    values = [1500.0] * 19 + [380.0] * 14 + [1500.0] * 27
    assert _pace_onsets(values) == []


def test_slowdown_that_lasts_to_the_end_is_reported_at_its_first_slow_step():
    values = [1500.0] * 19 + [380.0] * 41
    assert _pace_onsets(values) == [("training-slowdown", 20)]


def test_second_slowdown_after_a_recovered_one_is_reported_at_its_own_start():
    """The first stretch passed; the second one lasts: the onset is the second's first step."""
    values = [1500.0] * 19 + [380.0] * 10 + [1500.0] * 15 + [380.0] * 16
    assert _pace_onsets(values) == [("training-slowdown", 45)]


def test_recovered_slowdown_fixture_is_silent_and_the_lasting_one_is_not():
    quiet = diagnose_paths([str(TRAINING / "training-slowdown.near-miss-2.log")], mask=False)
    assert quiet.root_cause is None
    assert not [f for f in quiet.findings if f.signature == "training-slowdown"]
    slow = diagnose_paths([str(TRAINING / "training-slowdown.positive.log")], mask=False)
    assert slow.root_cause is not None and slow.root_cause.signature == "training-slowdown"
    assert slow.root_cause.rank is None


@pytest.mark.parametrize(
    "text,summary",
    [
        ("[Epoch 8] Loss: 1314.3089, Epoch Time: 444.65s", True),
        ("Epoch 3 | train loss 412.90 | val loss 1.93 | time 118.2s", True),
        ("epoch 4, loss 0.1234, train acc 0.912, test acc 0.887", True),  # d2l's print
        ("Epoch: 3 Train Loss: 0.1234 Val Loss: 0.2", True),
        ("2024-01-01 10:00:00,123 INFO Epoch 3: loss=0.51", True),
        ("epoch 7 finished: loss 120.4102 | time 41.23s", True),
        # a step's or a batch's print, or a tqdm meter: not an epoch summary
        ("Epoch 9/10: 300it [07:24,  1.48s/it, loss=2.29]", False),
        ("Epoch 2: 120it [00:41,  2.91it/s, loss=2.312]", False),
        ("Train Epoch: 1 [640/60000 (1%)]\tLoss: 1.234", False),  # PyTorch's MNIST example
        ("Epoch [2/10], Step [100/600], Loss: 0.1", False),
        ("[0] [2/10: 0/15000 (0%)] epoch=2.0000 step=60.0000 dt=1.0867", False),
        ("{'loss': 1.2, 'learning_rate': 0.0001, 'epoch': 3.0}", False),
        ("step 120 loss=1.41 epoch 2", False),
        ("epoch 0 it 2 loss=0.6891", False),
        # mmcv's and mmengine's iteration logs: the epoch, then the position in it
        ("Epoch [1][950/7330]\tlr: 2.000e-02, eta: 21:14:03, time: 0.871, loss: 0.9396", False),
        ("Epoch(train)  [1][  50/7330]  lr: 2.0000e-02  eta: 1 day, 0:41:22  loss: 1.2133", False),
    ],
)
def test_epoch_summary_lines(text, summary):
    assert epoch_summary(text) is summary


def _reader(lines: list[str]) -> MetricsReader:
    reader = MetricsReader()
    for n, line in enumerate(lines, start=1):
        reader.observe(line, rank=0, time=None, path="x.log", line=n)
    reader.finish()
    return reader


def _epochs(spike_at: int | None = None) -> list[str]:
    """tqdm's postfix per epoch (one batch's loss) and the script's summary (the epoch's summed
    loss, about 120 times larger, and its duration), as an IterableDataset run prints them."""
    out = []
    for ep in range(1, 13):
        loss = 2.3 * 0.92**ep
        batch = loss * (12.0 if ep == spike_at else 1.0)
        out.append(f"Epoch {ep}: 120it [00:41,  2.91it/s, loss={batch:.3f}]")
        out.append(f"epoch {ep} finished: loss {120 * loss:.4f} | time 41.{ep:02d}s")
    return out


def test_epoch_summaries_get_their_own_series_and_no_spike():
    reader = _reader(_epochs())
    names = {name for name, _ in reader.series}
    assert {"loss", "loss" + EPOCH_SUFFIX, "step_time" + EPOCH_SUFFIX} <= names
    assert "step_time" not in names  # an epoch's 41 s is not a step time
    assert [v for _, v in reader.series[("loss", 0)].points()][:2] == [2.116, 1.947]
    assert reader.onsets() == []


def test_a_real_spike_of_the_step_loss_is_still_found_beside_epoch_summaries():
    reader = _reader(_epochs(spike_at=11))
    got = [(o.kind, o.name, o.point.line) for o in reader.onsets()]
    assert got == [("loss-spike", "loss", 21)]


def test_epoch_summary_fixture_is_silent():
    d = diagnose_paths([str(TRAINING / "loss-spike.near-miss-2.log")], mask=False)
    assert d.root_cause is None
    assert not [f for f in d.findings if f.signature == "loss-spike"]


EFA_FIXTURE = ROOT / "signatures" / "network" / "efa-ofi-error.positive-3.log"


def _remote_error_log(tmp_path: Path, last_error: str) -> Path:
    """rank 5's DistBackendError whose NCCL 'Last error:' is ``last_error`` (the shape torch
    2.4+ prints for an ncclRemoteError, every line under the ``[rank5]:`` prefix)."""
    p = tmp_path / "rank5.log"
    p.write_text(
        "[rank5]: Traceback (most recent call last):\n"
        '[rank5]:   File "/work/train.py", line 90, in <module>\n'
        "[rank5]:     dist.all_reduce(t)\n"
        '[rank5]:   File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",'
        " line 2806, in all_reduce\n"
        "[rank5]:     work = group.allreduce([tensor], opts)\n"
        "[rank5]: torch.distributed.DistBackendError: NCCL error in: "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, remote process exited or"
        " there was a network error, NCCL version 2.21.5\n"
        "[rank5]: ncclRemoteError: A call failed possibly due to a network error or a remote"
        " process exiting prematurely.\n"
        "[rank5]: Last error:\n"
        f"[rank5]: {last_error}\n"
    )
    return p


def test_efa_unresponsive_receiver_names_no_rank():
    """aws-ofi-nccl's 4124/4126 (libfabric efa_errno.h: the receiver did not answer) is the
    sender's report of its peer: rank 2 printed it, the peer is the suspect."""
    d = diagnose_paths([str(EFA_FIXTURE)], mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "efa-ofi-error",
        "network-fabric-error",
        13,
    )
    assert d.initiating_rank is None
    assert d.initiator is not None and "other end of its connection" in d.initiator.why


@pytest.mark.parametrize(
    "last_error,rank",
    [
        # retry counter exceeded (12) / RNR retry exceeded (13): the peer stopped answering
        (
            "NET/IB : Got completion from peer 10.0.3.7<36121> with error 12, opcode 0, len 0,"
            " vendor err 129 (Send) localGid ::ffff:10.0.3.5 remoteGid ::ffff:10.0.3.7",
            None,
        ),
        (
            "NET/IB : Got completion from peer 10.0.3.7<36121> with error 13, opcode 0, len 0,"
            " vendor err 135 (Send) localGid ::ffff:10.0.3.5 remoteGid ::ffff:10.0.3.7",
            None,
        ),
        # a local protection error (4): the rank's own memory registration, its own fault
        (
            "NET/IB : Got completion from peer 10.0.3.7<36121> with error 4, opcode 0, len 0,"
            " vendor err 51 (Recv) localGid ::ffff:10.0.3.5 remoteGid ::ffff:10.0.3.7",
            5,
        ),
        # an EFA local error (5: the local memory registration): rank 5's own
        (
            "NET/OFI Request 0x7f3a2c01d9e0 completed with error. RC: 22. Error: 5 (Local memory"
            " registration is invalid, has insufficient access flags or does not match IOVA)."
            " Completed length: 0",
            5,
        ),
    ],
)
def test_transport_completion_errors_name_the_reporter_only_for_local_faults(
    tmp_path, last_error, rank
):
    d = diagnose_paths([str(_remote_error_log(tmp_path, last_error))], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "network-fabric-error"
    assert d.initiating_rank == rank


REMOTE_FIXTURE = ROOT / "signatures" / "nccl" / "nccl-remote-error.positive-2.log"


def test_teardown_for_a_remote_error_is_not_a_timeout():
    """ProcessGroupNCCL prints 'Some NCCL operations have failed or timed out ... taking the
    entire process down' for any async NCCL error; here its reason is ncclRemoteError (a peer
    exited), so the teardown is read as that error (class nccl-system-error), not as a
    collective timeout, and the rank that exited by itself (srun's task 2, no report of its
    own) is the initiator."""
    d = diagnose_paths([str(REMOTE_FIXTURE)], mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "nccl-remote-error",
        "nccl-system-error",
        7,
    )
    assert d.initiating_rank == 2
    teardown = [f for f in d.findings if f.signature == "nccl-async-error-teardown"]
    assert teardown and all(f is not rc for f in teardown)


FIX_VARIANTS = ROOT / "tests" / "fix_variants" / "dtype-mismatch"


@pytest.mark.parametrize(
    "name,variant,says",
    [
        ("integer-input.log", "integer-input", "x.to(layer.weight.dtype)"),
        ("general.log", "general", "torch.from_numpy(x).float()"),
    ],
)
def test_dtype_fix_reads_the_two_dtypes_of_a_linear(name, variant, says):
    """'mat1 and mat2 ... but got Long and BFloat16': an integer input into a float layer is cast
    to the layer's dtype (a .float() would fail again against bf16/fp16 weights); 'Double and
    Float' keeps the general cast-at-creation fix."""
    d = diagnose_paths([str(FIX_VARIANTS / name)], mask=False)
    rc = d.root_cause
    assert rc.signature == "dtype-mismatch" and rc.fix.variant.id == variant
    assert says in rc.fix.steps[0]
    if variant == "integer-input":
        assert (rc.captures["found"], rc.captures["expected"]) == ("Long", "BFloat16")
        assert d.initiating_rank == 1


def test_registry_built_object_gets_the_config_fix():
    """mmengine's build_from_cfg re-raises the constructor's TypeError ("class `X` in ...:
    X.__init__() got an unexpected keyword argument ..."): the config entry is what to change."""
    path = ROOT / "tests" / "fix_variants" / "user-code-exception" / "config-built-object.log"
    d = diagnose_paths([str(path)], mask=False)
    rc = d.root_cause
    assert (rc.signature, rc.evidence[0].line) == ("user-code-exception", 14)
    assert rc.fix.variant.id == "config-built-object"
    assert "Change the config, not the code line" in rc.fix.steps[0]
    assert "print_config.py" in rc.verify


def test_plain_type_error_outside_a_registry_keeps_the_general_fix(tmp_path):
    p = tmp_path / "plain.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 40, in <module>\n'
        "    model = Net(hidden=256)\n"
        "TypeError: Net.__init__() missing 1 required positional argument: 'depth'\n"
    )
    rc = diagnose_paths([str(p)], mask=False).root_cause
    assert rc.signature == "user-code-exception" and rc.fix.variant.id == "general"


def test_teardown_after_a_timeout_stays_a_timeout(tmp_path):
    """The same teardown lines after a watchdog timeout, with torch's 'terminate called after
    throwing an instance of c10::DistBackendError' wrapper (a symptom that only repeats the
    error): the timeout is still the root, the wrapper explains nothing."""
    p = tmp_path / "timeout.log"
    p.write_text(
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG 0 Rank 1] Process group watchdog thread terminated with exception: [Rank 1]"
        " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE,"
        " NumelIn=1048576, NumelOut=1048576, Timeout(ms)=120000) ran for 120092 milliseconds"
        " before timing out.\n"
        "[rank2]:[E ProcessGroupNCCL.cpp:577] [Rank 2] Some NCCL operations have failed or timed"
        " out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run"
        " on corrupted/incomplete data.\n"
        "[rank2]:[E ProcessGroupNCCL.cpp:583] [Rank 2] To avoid data inconsistency, we are taking"
        " the entire process down.\n"
        "[rank2]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 2] Process group watchdog thread"
        " terminated with exception: [Rank 2] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576,"
        " Timeout(ms)=120000) ran for 120094 milliseconds before timing out.\n"
    )
    d = diagnose_paths([str(p)], mask=False)
    assert (d.root_cause.signature, d.root_cause.failure_class) == (
        "nccl-watchdog-timeout",
        "collective-timeout",
    )
    assert not [e for e in d.explanations if e.cause.signature == "dist-backend-error-wrapper"]


def test_multi_node_torchrun_verify_takes_the_launcher_the_log_shows():
    """The NCCL entries verify with ``torchrun --nnodes=<n> --nproc-per-node=<gpus> train.py``;
    a job srun started (``srun: error: ... task N``) is rerun with srun, whatever flags came
    before the script."""
    d = diagnose_paths([str(REMOTE_FIXTURE)], mask=False)
    verify = d.root_cause.verify
    assert verify.startswith("NCCL_DEBUG=WARN srun --ntasks=")
    assert "torchrun" not in verify


def test_config_builder_type_error_is_the_configs_not_a_version_mismatch():
    """mmcv's build_from_cfg calls ``obj_cls(**args)`` with the config entry's keys: the inner
    TypeError's last frame is library code (mmcv/utils/registry.py), yet the call's arguments are
    the user's config, not one package calling another: no library-call-signature-mismatch, the
    exception with the config-entry fix."""
    d = diagnose_paths([str(ROOT / "tests" / "kinds_r14b" / "mmcv-build-from-cfg-missing-arg.log")])
    rc = d.root_cause
    assert rc.signature == "user-code-exception" and rc.failure_class == "user-code-exception"
    assert rc.fix.variant.id == "config-built-object"
    assert not [f for f in d.findings if f.signature == "library-call-signature-mismatch"]
