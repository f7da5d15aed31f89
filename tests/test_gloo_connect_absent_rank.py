"""A rank that never reaches init_process_group under gloo: the others time out in gloo's
full-mesh connect waiting for its address key, whose last component is that rank
(signature ``gloo-connect-peer-never-joined``, capture ``absent_rank``).

Fixture ``tests/attempts/gloo-connect-rank1-exits0-before-init.log``: captured from a real run
(torch 2.13 CPU, gloo, ``torchrun --nproc-per-node=3``, timeout 10 s) whose rank 1 finds no
data shard and calls ``sys.exit(0)`` before ``init_process_group``; ranks 0 and 2 fail with
``DistStoreError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/1`` (unprefixed
tracebacks), torchrun names rank 0 and never lists rank 1 (exit code 0). Paths anonymized.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

HERE = Path(__file__).resolve().parent
LOG = (HERE / "attempts" / "gloo-connect-rank1-exits0-before-init.log").read_text(encoding="utf-8")
POSITIVE = (
    HERE.parent / "signatures" / "launch" / "gloo-connect-peer-never-joined.positive.log"
).read_text(encoding="utf-8")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_key_names_the_rank_that_never_joined_not_the_launchers_first():
    d = diagnose_text(LOG, "job.log", mask=False)
    assert d.root_cause.signature == "gloo-connect-peer-never-joined"
    assert d.root_cause.failure_class == "rendezvous-failure"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == _line_of(LOG, "keys: /default_pg/0//cpu//0/1")
    # the fix sends the reader to rank 1, and the verification runs the whole job: rank 1
    # printed no rank prefix and exited 0, so the summary alone would count two ranks
    first = d.root_cause.fix.steps[0]
    assert first.startswith(
        "train.py:11 (in <module>), where the ranks waiting for rank 1 were in init_process_group:"
    )
    assert "Read rank 1's output before init_process_group" in first
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=3 train.py")


def test_a_late_rank_is_named_too():
    """The positive fixture: rank 2 sleeps past the 10 s timeout before init (a download)."""
    d = diagnose_text(POSITIVE, "job.log", mask=False)
    assert d.initiating_rank == 2
    assert d.root_cause.captures["absent_rank"] == "2"


def test_nccl_unique_id_key_is_not_a_rank():
    """NCCL's ``//cuda//0`` key is a communicator counter: the generic store-key signature
    stays, with no rank read from the key."""
    text = POSITIVE.replace("//cpu//0/2", "//cuda//0")
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause.signature == "store-key-wait-timeout"
    assert "absent_rank" not in d.root_cause.captures
