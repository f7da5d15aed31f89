"""torchrun's ``--max-restarts``: the agent restarts its workers in the same process and, at
its default log level, says so only by logging a second "failed (exitcode: ...)" line. The
logs here are real torch 2.13 runs (gloo on CPU) captured by ``scenarios/run.py`` and
anonymized (``tests/scenarios/test_scenarios.py`` reruns them live).

- ``torchrun-max-restarts-same-fault.log``: rank 2 rejects its shard before joining the
  group, in both attempts (``bad_data_raise.py --check-first``, 3 workers);
- ``torchrun-max-restarts-regroup-refused.log``: rank 2 raises mid-step; with the static
  rendezvous the restarted rank 2 cannot connect gloo's mesh ("Connection refused");
- ``torchrun-two-agents-one-file.log``: two agents (2 nodes x 2 workers, c10d) writing to one
  file; each logs its one failure: no restart.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

HERE = Path(__file__).resolve().parent / "attempts"


def test_a_restart_that_meets_the_same_fault_is_diagnosed_on_the_last_attempt():
    d = diagnose_paths([str(HERE / "torchrun-max-restarts-same-fault.log")], mask=False)
    assert d.attempts == 2
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2  # from torchrun's summary: raised before the [rank2]: prefix
    assert [e.line for e in d.root_cause.evidence] == [23]  # the second attempt's
    assert any("holds 2 runs" in r and "from line 16" in r for r in d.reasoning), d.reasoning


def test_a_restart_that_cannot_reform_the_group_is_explained_by_the_first_attempts_fault():
    d = diagnose_paths([str(HERE / "torchrun-max-restarts-regroup-refused.log")], mask=False)
    assert d.attempts == 2
    rc = d.root_cause
    assert (rc.signature, d.initiating_rank, rc.evidence[0].line) == (
        "user-code-exception",
        2,
        19,
    )
    edges = [
        (x.cause.line, x.effect.signature, x.effect.line)
        for x in d.explanations
        if x.rule == "restart_after_failure"
    ]
    assert edges == [(19, "gloo-connect-full-mesh-failed", 53)]
    assert any("failed as it restarted" in r and "from line 49" in r for r in d.reasoning)


def test_the_restarts_launcher_lines_do_not_contest_the_first_attempts_rank():
    # A real capture where, in the restart, the agent saw rank 0 exit first (its gloo mesh
    # refused): that line reports how the restart failed, not who failed first in the
    # attempt the root cause belongs to, so it does not withdraw rank 2.
    path = HERE / "torchrun-max-restarts-regroup-refused-rank0-exits-first.log"
    d = diagnose_paths([str(path)], mask=False)
    assert d.attempts == 2
    rc = d.root_cause
    assert (rc.signature, d.initiating_rank, rc.evidence[0].line) == (
        "user-code-exception",
        2,
        19,
    )


def test_the_restart_alone_reads_as_a_gloo_connect_failure():
    """Without the first attempt in the file, nothing explains the refused connect: the
    restart rule needs a fault of an earlier attempt."""
    text = (HERE / "torchrun-max-restarts-regroup-refused.log").read_text(encoding="utf-8")
    tail = "".join(text.splitlines(keepends=True)[48:])
    d = diagnose_text(tail, mask=False)
    assert d.attempts == 1
    assert d.root_cause.signature == "gloo-connect-full-mesh-failed"


def test_one_failure_line_per_agent_is_not_a_restart():
    d = diagnose_paths([str(HERE / "torchrun-two-agents-one-file.log")], mask=False)
    assert d.attempts == 1
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 3
