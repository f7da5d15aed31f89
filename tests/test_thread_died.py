"""A thread's uncaught exception ends that thread, not the process (helper causal16b;
held-out r15c 09).

``threading.excepthook`` prints ``Exception in thread <name>:`` and the traceback with no rank
prefix (torch's ``[rankN]:`` is its ``sys.excepthook``'s, for the main thread) and returns: the
process goes on without what the thread was to produce, blocks, and the other ranks wait for
it in their next collective. Before the rule the report said the exception "ended the
process" and named no rank.

``tests/data/thread_died/`` holds real runs (torch 2.13 CPU, gloo, ``torchrun
--nproc-per-node=4``, ``run_prefetch.sh MODE`` beside them): every rank decodes its token file
``tokens/part-0R.txt`` in a ``prefetch`` thread that feeds a queue, and all-reduces per step;

- ``prefetch-4.log``: line 6 of rank 2's file holds a token id past the vocabulary: the
  thread raises ``IndexError`` (traceback with no rank), rank 2 trains on the 5 queued
  samples and blocks on the queue, ranks 0, 1, 3 time out in the next all_reduce (gloo,
  10 s), torchrun's summary names rank 0 or 1 first and rank 2 stopped by its SIGTERM;
- ``upload-4.log``: every file is good; rank 1's ``uploader`` thread raises once and the
  run finishes (the shell prints ``exit code: 0``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import default_library, diagnose_paths, diagnose_text, matcher_for
from rootrank.ingest import read_blocks
from rootrank.scan import Scanner

DATA = Path(__file__).parent / "data" / "thread_died"


def _exceptions(name: str) -> list[tuple[int, int | None, str, str | None, bool]]:
    scanner = Scanner(matcher_for(default_library()), learn_users=False)
    path = DATA / name
    with path.open("rb") as f:
        scanner.scan_source(str(path), read_blocks(f))
    return [
        (x.exc.log_line, x.rank, x.exc.type, x.exc.thread, x.exc.thread_died)
        for x in scanner.state.exceptions
    ]


def test_the_thread_header_names_the_thread_and_the_main_threads_do_not() -> None:
    seen = _exceptions("prefetch-4.log")
    assert seen[0] == (20, None, "IndexError", "prefetch", True)
    # the others' collective timeouts, raised in their main threads, under torch's prefix
    assert [(x[1], x[4]) for x in seen[1:4]] == [(0, False), (1, False), (3, False)]
    assert _exceptions("upload-4.log")[0] == (20, None, "ConnectionError", "uploader", True)


def test_the_thread_died_and_its_rank_is_the_one_the_others_waited_for() -> None:
    d = diagnose_paths([str(DATA / "prefetch-4.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "user-code-exception"
    assert rc.evidence[0].line == 20
    assert rc.title.startswith("A thread's uncaught Python exception ended that thread, not")
    assert "ended the process" not in rc.title
    assert rc.summary.startswith(
        "A thread of the process (thread 'prefetch') died: IndexError was raised in it"
    )
    assert rc.fix.variant is not None and rc.fix.variant.id == "thread-died"
    assert rc.fix.steps[0].startswith(
        "train_prefetch.py:28 (in decode), where thread 'prefetch' of rank 2 raised IndexError:"
    )
    assert d.initiator.rank == 2
    assert d.initiator.strategy == "thread_owner"
    assert "its message names tokens/part-02.txt, rank 2's own file" in d.initiator.why
    assert "rank 2 is the one rank that did not report the collective timeout" in d.initiator.why


def _text(name: str) -> str:
    return (DATA / name).read_text()


def test_the_file_alone_names_the_rank_when_the_log_ends_before_any_timeout() -> None:
    # the run cut right after the thread's traceback (as a time limit could stop it): every
    # rank's last step is 2, no collective timed out, so only the message's per-rank file
    # names the thread's rank
    head = "\n".join(_text("prefetch-4.log").splitlines()[:20]) + "\n"
    d = diagnose_text(head, mask=False)
    assert d.root_cause is not None and d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "thread-died"
    assert d.initiator.rank == 2
    assert d.initiator.strategy == "thread_owner"
    assert "its message names tokens/part-02.txt, rank 2's own file:" in d.initiator.why


def test_evidence_of_two_ranks_names_none() -> None:
    # the message names rank 1's file while rank 2 is the one the others waited for
    text = _text("prefetch-4.log").replace("tokens/part-02.txt", "tokens/part-01.txt")
    d = diagnose_text(text, mask=False)
    assert d.initiator.rank is None
    assert d.initiator.strategy == "thread_owner"
    assert {1, 2} <= set(d.initiator.candidates)
    assert "the log's evidence of its rank differs" in d.initiator.why


def test_a_thread_the_job_survived_does_not_outrank_another_ranks_own_exception() -> None:
    """``thread-then-keyerror-3.log``: a real run (torch 2.13 CPU, gloo, ``torchrun
    --nproc-per-node=3``; the new-user trial of round 16's second session): rank 1's
    ``prefetch-0`` thread raises FileNotFoundError for its shard at the start, rank 1 falls
    back to synthetic data and every rank prints steps 0-4; at step 5 rank 2 raises
    ``KeyError: 'label_ids'`` in its main thread (trap.py:25) and torchrun's summary names
    rank 2. The dead thread stalled nothing: the root is rank 2's own exception."""
    d = diagnose_paths([str(DATA / "thread-then-keyerror-3.log")], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.rank == 2
    assert d.initiator.rank == 2
    assert d.initiator.strategy != "thread_owner"
    assert d.root_cause.evidence[0].line == 32
    assert "KeyError" in d.root_cause.evidence[0].text
