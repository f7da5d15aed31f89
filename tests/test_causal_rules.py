"""Each explanation rule and initiating-rank strategy alone, on small lists of findings.

The findings use real signature ids (their YAML gives role, kind and ``explained_by``);
the scan state is empty unless a test needs launcher facts."""

from __future__ import annotations

import pytest

from rootrank.analysis.graph import explain, pick_root
from rootrank.analysis.initiator import (
    Case,
    elastic_summary,
    find_initiator,
    missing_reporter,
    named_by_root,
    odd_value_out,
    reported_by_launcher,
    signal_not_sent_by_agent,
)
from rootrank.analysis.prepare import Context, infer
from rootrank.analysis.rules import (
    cause_explains_symptoms,
    declared_explanations,
    hardware_explains_gpu_faults,
    one_fault_one_explanation,
    onset_explains_what_follows,
    terminal_after_fault,
)
from rootrank.model import Evidence, Finding
from rootrank.ranks import ElasticFailure
from rootrank.scan import ScanState

_ORDER = iter(range(1, 10_000))


def finding(
    library, sig_id: str, *, rank=None, line=1, time=None, path="job.log", **captures
) -> Finding:
    return Finding.of(
        library.signatures[sig_id],
        rank=rank,
        host=None,
        time=time,
        order=next(_ORDER),
        evidence=[Evidence(path=path, line=line, text=sig_id, rank=rank)],
        captures={k: str(v) for k, v in captures.items()},
    )


def context(library, findings, state=None) -> Context:
    return Context(state or ScanState(), library, sorted(findings, key=lambda f: f.order), True)


def edges(rule, ctx):
    return {(e.cause.signature, e.effect.signature) for e in rule(ctx, ctx.findings)}


def test_a_cause_explains_the_watchdog_timeouts_of_the_others(library):
    oom = finding(library, "cuda-oom", rank=5, line=3)
    wd = finding(library, "nccl-watchdog-timeout", rank=0, line=9)
    ctx = context(library, [oom, wd])
    assert edges(cause_explains_symptoms, ctx) == {("cuda-oom", "nccl-watchdog-timeout")}
    assert pick_root(explain(ctx)) is oom


def test_a_time_limit_after_a_transport_error_is_explained_by_it(library):
    ib = finding(library, "ib-completion-error", rank=3, line=10, time=100.0)
    limit = finding(library, "slurm-time-limit", line=400, time=7200.0)
    ctx = context(library, [ib, limit])
    assert ("ib-completion-error", "slurm-time-limit") in edges(terminal_after_fault, ctx)
    root = pick_root(explain(ctx))
    assert root is ib  # not the time limit, although it is more specific


def test_a_time_limit_with_no_earlier_fault_is_the_root(library):
    limit = finding(library, "slurm-time-limit", line=400, time=7200.0)
    later = finding(library, "nccl-watchdog-timeout", rank=1, line=410, time=7260.0)
    ctx = context(library, [limit, later])
    assert edges(terminal_after_fault, ctx) == set()
    assert pick_root(explain(ctx)) is limit


def test_the_launchers_report_is_explained_whatever_the_log_order(library):
    child = finding(library, "elastic-child-failed", rank=1, line=1)
    wd = finding(library, "nccl-watchdog-timeout", rank=0, line=18, time=50.0)
    ctx = context(library, [child, wd])
    assert ("nccl-watchdog-timeout", "elastic-child-failed") in edges(terminal_after_fault, ctx)
    assert pick_root(explain(ctx)) is wd


def test_a_hardware_xid_explains_the_cuda_errors_after_it(library):
    xid = finding(library, "nvrm-xid-hardware", line=2, time=10.0)
    ima = finding(library, "cuda-illegal-memory-access", rank=2, line=5, time=11.0)
    ctx = context(library, [xid, ima])
    assert edges(hardware_explains_gpu_faults, ctx) == {
        ("nvrm-xid-hardware", "cuda-illegal-memory-access")
    }
    assert pick_root(explain(ctx)) is xid


def test_a_hardware_xid_after_the_error_does_not_explain_it(library):
    ima = finding(library, "cuda-illegal-memory-access", rank=2, line=5, time=11.0)
    xid = finding(library, "nvrm-xid-hardware", line=9, time=30.0)
    assert edges(hardware_explains_gpu_faults, context(library, [ima, xid])) == set()


def test_a_peer_report_is_explained_by_a_fault_on_another_rank(library):
    reset = finding(library, "connection-reset-by-peer", rank=0, line=4)
    sigkill = finding(library, "worker-sigkill-exit", rank=1, line=30)
    ctx = context(library, [reset, sigkill])
    assert ("worker-sigkill-exit", "connection-reset-by-peer") in edges(declared_explanations, ctx)
    assert pick_root(explain(ctx)) is sigkill


def test_a_wrapper_exception_is_explained_by_the_one_it_re_raises(library):
    wrapper = finding(library, "dataloader-worker-exception", rank=1, line=4)
    inner = finding(library, "collate-unequal-size", rank=1, line=9)
    ctx = context(library, [wrapper, inner])
    assert ("collate-unequal-size", "dataloader-worker-exception") in edges(
        declared_explanations, ctx
    )
    assert pick_root(explain(ctx)) is inner


def test_two_readings_of_one_message_leave_the_more_specific(library):
    generic = finding(library, "user-code-exception", line=6)
    specific = finding(library, "cuda-driver-too-old", line=7)
    ctx = context(library, [generic, specific])
    assert edges(one_fault_one_explanation, ctx) == {("cuda-driver-too-old", "user-code-exception")}
    assert pick_root(explain(ctx)) is specific


def test_diverged_watchdog_groups_are_a_desync_with_no_rank(library):
    group = [
        finding(
            library,
            "nccl-watchdog-timeout",
            rank=r,
            line=r + 1,
            seqnum=15170 if r in (6, 7) else 15173,
            optype="BROADCAST" if r in (6, 7) else "ALLREDUCE",
        )
        for r in (0, 1, 2, 3, 6, 7)
    ]
    inferred = infer(group, library)
    assert [(f.signature, f.failure_class, f.rank) for f in inferred] == [
        ("watchdog-optype-divergence", "collective-desync", None)
    ]
    assert "ranks 6, 7 in BROADCAST (SeqNum 15170)" in inferred[0].captures["why"]


def test_odd_value_out_names_the_single_rank_behind(library):
    group = [
        finding(
            library,
            "nccl-watchdog-timeout",
            rank=r,
            line=r + 1,
            seqnum=411 if r == 2 else 412,
            optype="ALLREDUCE",
        )
        for r in range(4)
    ]
    ctx = context(library, group)
    v = odd_value_out(Case(ctx, group[0], group))
    assert (v.rank, v.strategy) == (2, "odd_value_out")


def test_missing_reporter_is_the_rank_the_others_waited_for(library):
    group = [
        finding(library, "nccl-watchdog-timeout", rank=r, line=r + 1, seqnum=7, optype="ALLREDUCE")
        for r in (0, 1, 3)
    ]
    state = ScanState()
    state.world_size = 4
    ctx = context(library, group, state)
    v = missing_reporter(Case(ctx, group[0], group))
    assert v is not None and v.rank == 2


def test_a_signal_the_agent_did_not_send_names_the_rank(library):
    state = ScanState()
    state.launch.closing_pids.update({101, 103})
    state.elastic = [
        ElasticFailure(rank=1, exitcode=-9, pid=102),
        ElasticFailure(rank=0, exitcode=-15, pid=101),
        ElasticFailure(rank=2, exitcode=-15, pid=103),
    ]
    root = finding(library, "agent-sigterm-to-workers", line=3)
    ctx = context(library, [root], state)
    v = signal_not_sent_by_agent(Case(ctx, root, [root]))
    assert (v.rank, v.strategy) == (1, "signal_not_sent_by_agent")
    assert "SIGKILL" in v.why and "102" in v.why


def test_a_set_up_error_seen_on_one_rank_only_names_no_rank(library):
    root = finding(library, "module-not-found", rank=3, line=4)
    state = ScanState()
    state.ranks_seen = {3}
    v = named_by_root(Case(context(library, [root], state), root, [root]))
    assert v.rank is None and v.undecided


def test_an_oom_on_one_rank_names_it(library):
    root = finding(library, "cuda-oom", rank=5, line=4)
    state = ScanState()
    state.ranks_seen = {0, 5}
    v = named_by_root(Case(context(library, [root], state), root, [root]))
    assert v.rank == 5


def test_the_launchers_report_of_a_real_exit_code_names_the_task(library):
    root = finding(library, "elastic-child-failed", rank=3, line=4, exitcode=1)
    v = reported_by_launcher(Case(context(library, [root]), root, [root]))
    assert v.rank == 3
    killed = finding(library, "elastic-child-failed", rank=3, line=4, exitcode=-15)
    assert reported_by_launcher(Case(context(library, [killed]), killed, [killed])) is None


def test_a_watchdog_abort_in_the_summary_is_not_the_initiator(library):
    state = ScanState()
    state.elastic = [ElasticFailure(rank=1, exitcode=-6, pid=9, root_cause=True)]
    root = finding(library, "nccl-watchdog-timeout", rank=1, line=2, seqnum=5, optype="ALLREDUCE")
    v = elastic_summary(Case(context(library, [root], state), root, [root]))
    assert v.rank is None and v.undecided


@pytest.mark.parametrize("agree", [True, False])
def test_agreeing_strategies_are_reported(library, agree):
    state = ScanState()
    state.ranks_seen = {0, 1, 2}
    state.elastic = [ElasticFailure(rank=2 if agree else 0, exitcode=1, pid=7)]
    root = finding(library, "cuda-oom", rank=2, line=4)
    init = find_initiator(context(library, [root], state), root)
    assert init.rank == 2 and init.strategy == "named_by_root"
    assert ("elastic_summary" in init.agreeing) is agree


def test_the_one_rank_that_printed_another_value_is_the_initiator():
    from rootrank.engine import diagnose_text

    log = (
        "[rank 0] step 0: all_reduce of flat grad buffer numel=4096\n"
        "[rank 1] step 0: all_reduce of flat grad buffer numel=4096\n"
        "[rank 2] step 0: all_reduce of flat grad buffer numel=4097\n"
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
        "op.preamble.length <= op.nbytes. 2728 vs 2724. Received data size doesn't match expected size.\n"
    )
    d = diagnose_text(log, mask=False)
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "odd_printed_value"
    assert "rank 2 printed 4097 where the others printed 4096" in d.initiator.why


def test_per_rank_values_that_all_differ_name_no_rank():
    from rootrank.engine import diagnose_text

    log = "".join(f"[rank {r}] step 0 loss={0.61 + r / 100:.2f}\n" for r in range(3)) + (
        "  what():  [enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 2728 vs 2724. "
        "Received data size doesn't match expected size.\n"
    )
    d = diagnose_text(log, mask=False)
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator is None or d.initiator.strategy != "odd_printed_value"


def test_a_curve_onset_explains_the_guard_but_not_an_unrelated_error(library):
    onset = finding(library, "metric-nonfinite", rank=1, line=11)
    guard = finding(library, "nan-guard-exception", rank=1, line=17)
    ctx = context(library, [onset, guard])
    assert edges(onset_explains_what_follows, ctx) == {("metric-nonfinite", "nan-guard-exception")}
    assert pick_root(explain(ctx), ctx) is onset
    spike = finding(library, "loss-spike", line=40)
    ddp = finding(library, "ddp-unused-parameters", rank=2, line=9000)
    ctx = context(library, [spike, ddp])
    # A spike of the loss curve says nothing of a DDP reduction error: the error ended the job.
    assert pick_root(explain(ctx), ctx) is ddp


def test_a_teardown_printed_before_the_timeout_it_reports_is_not_the_root(library):
    """ProcessGroupNCCL prints "taking the entire process down" as it rethrows the watchdog's
    exception, so the teardown banner can come first in the log; the timeout it reports
    explains it (``explained_by: [collective-timeout]``), whatever the order."""
    teardown = finding(library, "nccl-async-error-teardown", rank=3, line=2)
    timeout = finding(
        library, "nccl-watchdog-timeout", rank=3, line=3, seqnum=41, optype="ALLREDUCE"
    )
    ctx = context(library, [teardown, timeout])
    assert ("nccl-watchdog-timeout", "nccl-async-error-teardown") in edges(
        declared_explanations, ctx
    )
    assert pick_root(explain(ctx), ctx) is timeout


def test_a_count_printed_before_its_noun_names_the_rank_that_differs():
    """'<count> <noun>' prints (a parameter count with thousands separators, a dataset
    length) are values each rank prints: the one rank with another count is the initiator,
    not the rank torchelastic saw exit first."""
    from rootrank.engine import diagnose_text

    counts = {0: "1,310,720", 1: "1,310,720", 2: "1,310,720", 3: "1,311,232"}
    log = "".join(
        f"rank {r}: wrapped model, {counts[r]} trainable parameters\n" for r in (1, 3, 0, 2)
    )
    log += (
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
        "op.preamble.length <= op.nbytes. 5244928 vs 5242880. Received data size doesn't match expected size.\n"
    )
    d = diagnose_text(log, mask=False)
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 3
    assert d.initiator is not None and d.initiator.strategy == "odd_printed_value"
    assert "rank 3 printed 1311232 where the others printed 1310720" in d.initiator.why


def test_counts_that_differ_on_every_rank_name_no_rank():
    from rootrank.engine import diagnose_text

    log = "".join(f"rank {r}: loaded {1000 + 7 * r} samples\n" for r in range(4)) + (
        "  what():  [enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 2728 vs 2724. "
        "Received data size doesn't match expected size.\n"
    )
    d = diagnose_text(log, mask=False)
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator is None or d.initiator.strategy != "odd_printed_value"


#: Ranks 0-3 each report the same watchdog timeout (SeqNum 5): no reporter is missing, none odd.
_EVERY_RANK_TIMES_OUT = "".join(
    f"[rank{r}]:[E1203 10:00:0{r}.000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1024, "
    "NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    for r in range(4)
)


@pytest.mark.parametrize(
    ("noun", "counts"),
    [
        ("layers", (24, 24, 23, 24)),
        ("Sequences", (12000, 12000, 11000, 12000)),
        ("blocks", (32, 32, 31, 32)),
        ("params", (1024, 1024, 1000, 1024)),
    ],
)
def test_every_count_noun_the_reader_knows_reaches_it(noun, counts):
    """Each noun :data:`rootrank.metrics._COUNTED` reads is also a word of the curve gate
    (:data:`rootrank.progress.COUNT_NOUNS`): a line that prints only '24 layers' (no step, no
    loss) still reaches the reader, so the rank that printed another count is the initiator
    even when every rank reports the same watchdog timeout."""
    from rootrank.engine import diagnose_text

    log = "".join(f"[rank{r}]: model built with {counts[r]} {noun}\n" for r in range(4))
    log += _EVERY_RANK_TIMES_OUT
    d = diagnose_text(log, mask=False)
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "odd_printed_value"
    assert f"rank 2 printed {counts[2]}" in d.initiator.why


@pytest.mark.parametrize(
    "template",
    [
        "len(train_dataset) = {v}",
        "Dataset length {v}",
        "tokenizer vocab size: {v}",
        "vocab_size={v}",
        "num_batches: {v}",
        "flat param numel {v}",
    ],
)
def test_a_size_printed_after_its_key_names_the_rank_that_differs(template):
    """Sizes printed after their key (:data:`rootrank.progress.SIZE_KEYS`, read by
    :data:`rootrank.metrics._SIZED` or as any ``key=value``): rank 1's other value names it,
    although rank 1 reports the watchdog timeout like every other rank."""
    from rootrank.engine import diagnose_text

    values = (32000, 32001, 32000, 32000)
    log = "".join(f"[rank{r}]: " + template.format(v=values[r]) + "\n" for r in range(4))
    log += _EVERY_RANK_TIMES_OUT
    d = diagnose_text(log, mask=False)
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "odd_printed_value"
    assert "rank 1 printed 32001 where the others printed 32000" in d.initiator.why


def test_sizes_printed_on_many_lines_are_not_a_training_curve():
    """A size printed on several lines with no rank ('len(keys): 7', 'numel 4096') is a
    constant read for the odd rank out, never charted as a curve; the loss beside it is."""
    from rootrank.engine import diagnose_text

    log = "".join(
        f"step {s} loss {2.0 - s / 10:.2f} len(keys): {7 if s != 3 else 3} numel 4096\n"
        for s in range(1, 7)
    )
    d = diagnose_text(log + "RuntimeError: boom\n", mask=False)
    names = {m.name for m in d.metrics}
    assert "loss" in names
    assert not names & {"len(keys)", "numel"}
