"""A run that finished its work and then aborted in C++ ``std::terminate`` at exit: the
native abort on that rank is the root cause (class ``segfault``), the agent's SIGTERMs and
ChildFailedError summary are collateral. ``terminate called after throwing ...`` with a
``what():`` text keeps the cause that text names.

Wordings: libstdc++ ``__gnu_cxx::__verbose_terminate_handler`` ("terminate called without an
active exception", "terminate called after throwing an instance of '...'", "  what():  ...",
"terminate called recursively"); torch/distributed/elastic ("Sending process N closing signal
SIGTERM", "failed (exitcode: -6) local_rank: ...", "Signal 6 (SIGABRT) received by PID N")."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.signatures import builtin_dir

FIXTURE = builtin_dir() / "process" / "cpp-terminate-abort.positive.log"


def _fixture_text() -> str:
    return Path(FIXTURE).read_text()


def test_teardown_abort_is_the_root_cause_and_the_rest_is_collateral():
    # The fixture is a real run (torchrun, gloo, 3 ranks, torch 2.13): rank 1 logged nothing
    # after "training finished" and called std::terminate at interpreter exit; the agent
    # SIGTERMed ranks 0 and 2 and named rank 1 (exit -6, SIGABRT) as the root cause.
    diag = diagnose_text(_fixture_text(), "ci.log", mask=False)
    rc = diag.root_cause
    assert (rc.signature, rc.failure_class, rc.rank) == (
        "cpp-terminate-abort",
        "segfault",
        1,
    )
    assert rc.evidence[0].line == 9
    assert rc.captures["how"] == "without an active exception"
    assert diag.initiating_rank == 1
    collateral = {c.signature: c.ranks for c in diag.collateral}
    assert collateral == {"agent-sigterm-to-workers": [0, 2], "elastic-child-failed": [1]}


def test_prefixed_abort_names_its_rank_itself():
    text = _fixture_text().replace("terminate called without", "[rank1]:terminate called without")
    diag = diagnose_text(text, mask=False)
    rc = diag.root_cause
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "cpp-terminate-abort",
        "segfault",
        9,
    )
    assert rc.evidence[0].rank == 1
    assert diag.initiating_rank == 1


def test_terminate_with_a_what_text_keeps_the_specific_cause():
    text = (
        "[rank2]:terminate called after throwing an instance of 'c10::Error'\n"
        "[rank2]:  what():  CUDA error: an illegal memory access was encountered\n"
        "[rank2]:terminate called recursively\n"
        "E1129 10:02:11.602000 1990 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -6) local_rank: 2 (pid: 2003) of binary: /usr/bin/python3\n"
    )
    diag = diagnose_text(text, mask=False)
    rc = diag.root_cause
    assert (rc.failure_class, rc.rank, rc.evidence[0].line) == (
        "cuda-illegal-memory-access",
        2,
        2,
    )
    assert "cpp-terminate-abort" in {c.signature for c in diag.collateral}


def test_gloo_enforce_abort_stays_a_size_mismatch():
    text = (
        "[rank0]:terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "[rank0]:  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
        "op.preamble.length <= op.nbytes. 6232 vs 4\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    # the enforce text is read, not the terminate line; 6232 vs 4 is >= 16x apart: two
    # different collectives (gloo-size-collectives-apart, collective-desync; fix-r23-7)
    assert (rc.signature, rc.failure_class, rc.evidence[0].line) == (
        "gloo-size-collectives-apart",
        "collective-desync",
        2,
    )


def test_watchdog_timeout_rethrown_by_terminate_is_still_a_timeout():
    text = (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600123 milliseconds before timing out.\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert rc.failure_class == "collective-timeout"


def test_unknown_what_text_is_the_unclassified_exception_of_that_rank():
    text = (
        "[rank1]:terminate called after throwing an instance of 'c10::Error'\n"
        "[rank1]:  what():  Trying to free a pointer not allocated here\n"
        "[rank1]:Exception raised from free at /opt/pytorch/c10/cuda/CUDACachingAllocator.cpp:2104 (most recent call first):\n"
    )
    diag = diagnose_text(text, mask=False)
    assert diag.root_cause is None
    u = diag.unclassified
    assert (u.title, u.rank, u.evidence[0].line) == (
        "c10::Error: Trying to free a pointer not allocated here",
        1,
        2,
    )
    assert text.splitlines()[1][u.evidence[0].column_start :].startswith("Trying to free")


def test_a_wrapped_what_text_is_joined_for_the_matcher():
    # The gloo enforce text is cut after "<=": only the joined what() message holds the sizes.
    text = (
        "[rank0]:terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "[rank0]:  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <=\n"
        "op.nbytes. 6232 vs 4\n"
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert (rc.signature, rc.rank, rc.evidence[0].line) == ("gloo-size-collectives-apart", 0, 2)
    assert (rc.captures["size"], rc.captures["expected_size"]) == ("6232", "4")
