"""Round-20a kinds of reasoning (held-out set /work/notes/heldout-r20a, real pasted logs).

The fixtures in ``tests/r20a/`` are written for these tests in the formats the tools print
(torchrun's ``--tee`` tags, NCCL's ``checks.h`` return-code lines and ``nvmlwrap.cc`` WARN,
c10d's ``socket.cpp`` record, ProcessGroupNCCL's watchdog lines); none is a held-out log.

A. Stacked launcher prefixes: a job or task name, then torchrun's ``[defaultN]:``, then
   ``[rankN]:`` (``pretrain/0 [default1]:[rank1]: ...``, NeMo-Run) are all peeled, so the
   traceback under them is read; and a traceback the log cuts before its exception line
   gets a provisional class from its innermost recognisable frame (a checkpoint loader).
B. A template field the log line does not carry is dropped from its aside, never printed as
   ``<optype>``; torch 2.5+'s ``work sequence id: N`` fills ``{seqnum}``.
C. NCCL's return-code chain through init.cc classifies a communicator-init failure with no
   Python exception; NVML's "Not Found" for a bus id means partial GPU visibility.
D. A c10d record the terminal wrapped (``(172.17.0.3`` then ``, 29611).``) is rejoined before
   matching; the connect failure to a docker-bridge address is the cause, a later watchdog
   on another process its consequence.
E. Ranks at different SeqNums wait in different collectives: the one behind is named, the
   Numel difference is no two-way ambiguity.
F. A traceback cut before its exception line does not stop naming the rank with the
   explicit error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import default_library, diagnose_text
from rootrank.entry import drop_unknown_fields, render
from rootrank.ranks import RankTagger

_DATA = Path(__file__).parent / "r20a"


def _diagnose(name: str):  # type: ignore[no-untyped-def]
    return diagnose_text((_DATA / name).read_text(encoding="utf-8"), "run.log", mask=False)


# A. stacked prefixes and a cut traceback's operation


def test_task_name_before_tee_and_rank_tags_is_peeled() -> None:
    tagger = RankTagger()
    tagged = tagger.tag("pretrain/0 [default1]:[rank1]: Traceback (most recent call last):", 1)
    assert tagged.text == "Traceback (most recent call last):"
    assert tagged.rank == 1
    assert tagged.local_rank == 1


def test_cut_traceback_inside_a_checkpoint_loader_is_a_checkpoint_load_failure() -> None:
    d = _diagnose("stacked-task-prefix-dcp-load-cut.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "checkpoint-load-cut-off"
    assert d.root_cause.failure_class == "checkpoint-load-mismatch"
    assert d.root_cause.evidence[0].line == 10
    assert "state_dict_loader.py" in d.root_cause.evidence[0].text
    # a checkpoint load runs alike on every rank: the one rank in the paste started nothing
    assert d.initiating_rank is None


def test_cut_traceback_outside_any_known_operation_stays_unclassified() -> None:
    d = diagnose_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/w/train.py", line 70, in main\n'
        "[rank1]:     loss = model(batch).sum()\n",
        "run.log",
        mask=False,
    )
    assert d.root_cause is None
    assert d.unclassified is not None


# B. template fields the log does not carry


def test_unknown_field_is_dropped_from_its_aside() -> None:
    t = "wait in the same collective ({optype} SeqNum {seqnum}): x"
    assert render(t, {"seqnum": "9120"}) == "wait in the same collective (SeqNum 9120): x"
    assert render(t, {}) == "wait in the same collective: x"
    assert render("A collective (SeqNum {seqnum}, {optype}) hung", {"seqnum": "7"}) == (
        "A collective (SeqNum 7) hung"
    )
    assert render("others wait in {optype} for it", {}) == "others wait in the collective for it"
    assert render("a point-to-point {optype}", {}) == "a point-to-point collective"
    # rank/host keep their phrases; a known value is never touched
    assert render("rank {rank} ({optype})", {"optype": "ALLREDUCE"}) == (
        "the failing rank (ALLREDUCE)"
    )
    assert drop_unknown_fields("no fields here (x)", {}) == "no fields here (x)"


def test_no_library_entry_prints_an_unfilled_optype() -> None:
    for sig in default_library().signatures.values():
        texts = [str(sig.entry.get("summary", "")), sig.verify]
        fix = sig.fix or {}
        texts += [str(s) for s in fix.get("steps", [])]
        for variant in fix.get("variants", []) or []:
            texts += [str(s) for s in variant.get("steps", [])]
            texts.append(str(variant.get("verify", "")))
        for text in texts:
            for values in ({"seqnum": "9120"}, {}):
                assert "<optype>" not in render(text, values), (sig.id, text[:80])


def test_watchdog_work_sequence_id_fills_seqnum() -> None:
    d = _diagnose("watchdog-work-sequence-id-no-optype.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-watchdog-timeout"
    text = " ".join([*d.root_cause.fix.steps, d.root_cause.verify])
    assert "<seqnum>" not in text and "<optype>" not in text
    assert "SeqNum 9120" in d.root_cause.verify


# C. NCCL return codes and NVML visibility


def test_init_return_code_chain_alone_is_an_nccl_system_error() -> None:
    d = _diagnose("nccl-init-chain-no-exception.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-init-return-code"
    assert d.root_cause.failure_class == "nccl-system-error"
    assert d.root_cause.evidence[0].line == 4
    assert d.initiating_rank is None


def test_nvml_bus_id_not_found_means_partial_gpu_visibility() -> None:
    d = _diagnose("nccl-nvml-not-found-two-local-ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl-nvml-peer-gpu-not-found"
    assert d.root_cause.failure_class == "nccl-system-error"
    assert d.root_cause.evidence[0].line == 3
    assert d.initiating_rank is None  # every local rank fails its init alike
    assert "NCCL_HOSTID" in " ".join(d.root_cause.fix.steps)


# D. wrapped c10d record, bridge address, earlier connect failure


def test_wrapped_connect_timeout_to_a_bridge_address_is_the_cause() -> None:
    d = _diagnose("wrapped-c10d-connect-then-watchdog.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "tcpstore-connect-retry"
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.root_cause.evidence[0].line == 1
    steps = " ".join(d.root_cause.fix.steps)
    assert "172.17.0.3:29611" in steps and "--network host" in steps
    assert any(c.signature == "nccl-watchdog-timeout" for c in d.collateral)


# E. SeqNum order before content


def test_lower_seqnum_is_behind_even_when_numel_differs() -> None:
    d = _diagnose("seqnum-offset-two-ranks.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert any("SeqNum 804" in r for r in d.reasoning)


# F. a cut traceback does not compete with an explicit error


@pytest.mark.parametrize("name", ["oom-then-cut-traceback-other-rank.log"])
def test_explicit_error_rank_is_named_beside_a_later_cut_traceback(name: str) -> None:
    d = _diagnose(name)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 3


def test_shape_error_beside_a_later_cut_traceback_names_no_rank() -> None:
    # a code path every rank runs alike: the cut traceback may be that rank's own copy
    d = diagnose_text(
        '[rank3]:   File "/opt/venv/lib/python3.12/site-packages/pkg/advantage.py", line 51, in f\n'
        "[rank3]:     r = r - beta * kl\n"
        "[rank3]: RuntimeError: The size of tensor a (512) must match the size of tensor b"
        " (2048) at non-singleton dimension 0\n"
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/opt/venv/lib/python3.12/site-packages/pkg/train.py", line 70, in run\n'
        "[rank2]:     trainer.train()\n",
        "run.log",
        mask=False,
    )
    assert d.root_cause is not None
    assert d.initiating_rank is None
