"""Held-out r24e kinds (the set's MISSES.md), each on a real torch 2.13 CPU run captured for
it (tests/r24e and the signature fixtures, the scripts beside the logs as ``*.txt``):

- torchrun's agent receiving SIGTERM right after one rank printed that it was killing
  processes is that rank's own kill (``pkill -f`` on a path the launcher's command line also
  holds), not a stop from outside: that rank initiates, the fix is its kill pattern
  (signatures/launch/agent-killed-by-rank-kill);
- a wrapper's ``<time> <host>: `` before a script's own ``[rankN] `` tag (no colon after the
  bracket) still names the rank: the collector prefix is read before a user's bracketed tag
  as before torch's ``[rankN]:``;
- a torchrun restart refused in gloo's full-mesh connect after an attempt that hung (only the
  waiters' timeouts, one rank silent) is that hang's knock-on: the silent rank initiates, and
  the restart's fault explains nothing of the attempt before it;
- a resumed attempt that fails to read the checkpoint an earlier attempt's save failed to
  write (a full disk, a size limit) is that save's failure, on the saving rank;
- an ``id`` every other rank prints the same is one value for the job: a rank printing
  another diverged (tests/test_oddline.py, ``hashid-4``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.ranks import RankTagger

HERE = Path(__file__).parent / "r24e"
SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_agent_sigterm_right_after_a_ranks_kill_line_is_that_ranks_kill():
    # before: agent-received-signal (preemption-sigterm), no rank
    d = _diag(SIGNATURES / "launch" / "agent-killed-by-rank-kill.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "agent-killed-by-rank-kill"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 9
    assert "pgrep -af" in " ".join(d.root_cause.confirm)


def test_agent_sigterm_from_outside_with_no_kill_line_stays_a_stop_from_outside():
    d = _diag(SIGNATURES / "launch" / "agent-killed-by-rank-kill.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "agent-received-signal"
    assert d.initiating_rank is None


def test_a_wrapped_user_rank_tag_names_the_killing_rank():
    # before: agent-received-signal, no rank (the "<time> gpu: [rank1] " line had no rank)
    d = _diag(HERE / "agent_killed_by_rank_pkill_wrapped.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "agent-killed-by-rank-kill"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 10


def test_collector_prefix_before_a_user_bracket_tag():
    t = RankTagger(path="x.log")
    got = t.tag("07:01:02 box: [rank3] cleaning up stale workers", 1)
    assert got.rank == 3
    assert got.text == "cleaning up stale workers"
    plain = t.tag("box: nothing tagged here", 2)
    assert plain.rank is None


def test_restart_refused_after_a_hang_is_the_hung_attempts_silent_rank():
    # before: gloo-connect-full-mesh-failed (network-fabric-error, "set GLOO_SOCKET_IFNAME"):
    # the restart's connect failure explained the earlier attempt's timeouts. A restarted
    # attempt's fault explains nothing of the attempt before it; that attempt's hang (rank 1
    # never reached the barrier, ranks 0 and 2 timed out) is what the restart came from.
    d = _diag(HERE / "restart_refused_after_silent_rank_hang.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.root_cause.signature == "gloo-collective-timeout"
    assert d.root_cause.evidence[0].line == 18
    assert d.initiating_rank == 1


def test_resume_loading_what_a_failed_save_left_is_the_failed_save():
    # before: checkpoint-corrupt-or-wrong-format on every rank, no rank (the last try only).
    # Try 1's save on rank 0 fails (a per-file size limit: torch.save's writer reports
    # "unexpected pos"), leaving a cut file; try 2 (--resume) fails to read it. A finding of
    # the last attempt that names a class in its explained_by (disk-full) is explained by an
    # earlier attempt's fault of that class.
    d = _diag(HERE / "resume_reads_checkpoint_a_failed_save_cut.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "disk-full"
    assert d.root_cause.evidence[0].line == 25
    assert d.initiating_rank == 0
