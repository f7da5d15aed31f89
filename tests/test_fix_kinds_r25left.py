"""Kinds round 24 left open (issue #8), on fixtures of our own (real torch 2.13 CPU runs
where the kind can be run): a BrokenPipeError from a local pipe (``os.pipe``/``os.write``, a
``multiprocessing`` Connection, the process's own piped stdout) is its reader's exit on the
rank that wrote, not a network peer's reset; and no rendered fix, summary or verify of any
signature's positive fixture shows a raw ``<field>`` placeholder (a field the log did not
carry reads as the words the signature gives for it, ``entry.unknown``, or its aside is
dropped)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def test_an_os_pipe_write_in_an_mp_spawn_worker_is_the_local_readers_exit_on_that_rank():
    # a real mp.spawn run: rank 2 closed the read end of its os.pipe() and then wrote to it
    # (before: connection-reset-by-peer, rank unknown, "Find the process at <peer>")
    d = _diag("process/subprocess-pipe-reader-exited.positive-2.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.signature == "subprocess-pipe-reader-exited"
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 34
    assert rc.title.startswith("BrokenPipeError writing to a local pipe")
    step = rc.fix.steps[0]
    assert "spawn_pipe.py:28" in step
    assert "Find why the reader of the pipe rank 2 writes to was gone" in step
    assert "network" not in " ".join(rc.fix.steps)
    assert rc.verify.startswith("python spawn_pipe.py  # no BrokenPipeError on rank 2")


def test_a_socket_broken_pipe_is_still_a_network_peer():
    # the near-miss writes to a TCP socket whose server closed: a peer, not a local pipe
    d = _diag("process/subprocess-pipe-reader-exited.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature != "subprocess-pipe-reader-exited"
    assert "local pipe" not in d.root_cause.title


_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_BLANK = re.compile(r"<([a-z_][a-z0-9_]*)>")


def _positives() -> list[Path]:
    return sorted(SIGNATURES.glob("*/*.positive*.log"))


@pytest.mark.parametrize("chunk", range(4))
def test_no_positive_fixture_renders_a_raw_field_placeholder(library, chunk):
    """A ``<field>`` whose name is one of the signature's template fields is a field the log
    did not fill, printed raw (r24 trial finding 2: "Find the process at <peer>"). Python's
    own ``<module>`` frame name is not a blank, nor are ``<rank>``/``<host>``, the blanks a
    path the user fills keeps on purpose (``logs/<run>/attempt_0/<rank>/stderr.log``)."""
    bad: list[str] = []
    logs = _positives()[chunk::4]
    for log in logs:
        d = diagnose_paths([str(log)], mask=False)
        rc = d.root_cause
        if rc is None:
            continue
        sig = library.signatures[rc.signature]
        fields = set(_FIELD.findall(json.dumps([sig.entry, sig.fix, sig.verify], default=str)))
        texts = [*rc.fix.steps, rc.verify or "", rc.summary or ""]
        for text in texts:
            for name in _BLANK.findall(text.replace("(in <module>)", "")):
                if name in fields and name not in ("rank", "host"):
                    bad.append(f"{log.name}: <{name}> in {text[:120]!r}")
    assert len(logs) > 100
    assert bad == []


VARIANTS = Path(__file__).parent / "fix_variants"
HERE = Path(__file__).parent / "r25left"


def test_a_refused_nccl_connect_with_no_peer_error_points_at_the_listener_not_collateral():
    # rank 3 retries "Connection refused" and fails; no other rank printed an error of its own
    # (before: "this error is collateral: find that rank's own first error")
    d = diagnose_paths([str(VARIANTS / "nccl-socket-connect-failed/refused-no-peer-error.log")])
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl-socket-connect-failed"
    assert rc.failure_class == "network-fabric-error"
    assert d.initiating_rank == 3
    assert rc.evidence[0].line == 17
    assert rc.fix.variant is not None and rc.fix.variant.id == "refused-no-peer-error"
    text = " ".join(rc.fix.steps)
    assert "Nothing was listening at" in text and "when rank 3 connected" in text
    assert "this is not collateral" in text and "NCCL_SOCKET_IFNAME=<iface>" in text
    assert "nc -zv" in text
    assert "this error is collateral" not in text


def test_a_one_line_refusal_with_no_other_rank_shown_keeps_the_collateral_reading():
    d = diagnose_paths([str(VARIANTS / "nccl-socket-connect-failed/refused.log")])
    assert d.root_cause is not None and d.root_cause.fix.variant is not None
    assert d.root_cause.fix.variant.id == "refused"


def test_a_terminate_abort_mid_run_gets_no_end_of_training_advice():
    # the ranks printed step 3 of 12 and one aborted in std::terminate: not teardown
    d = diagnose_paths([str(VARIANTS / "cpp-terminate-abort/mid-run.log")])
    rc = d.root_cause
    assert rc is not None and rc.signature == "cpp-terminate-abort"
    assert rc.failure_class == "segfault"
    assert d.initiating_rank == 1
    assert rc.evidence[0].line == 10
    assert rc.fix.variant is not None and rc.fix.variant.id == "mid-run"
    text = " ".join(rc.fix.steps)
    assert "The abort came mid-run" in text
    assert "end of training (last step logged" not in text
    assert "middle of training" in rc.summary
    # at exit (the run's last line is its end), the shutdown advice stays
    d2 = diagnose_paths([str(VARIANTS / "cpp-terminate-abort/at-exit.log")])
    assert d2.root_cause is not None and d2.root_cause.fix.variant is not None
    assert d2.root_cause.fix.variant.id == "at-exit"
    assert "Shut down explicitly" in d2.root_cause.fix.steps[0]


def test_deepspeeds_runner_line_keeps_the_nodes_and_port_in_the_verify():
    # no typed command; the runner's "cmd = pdsh ... -w n1,n2 ... --master_port=29711" and the
    # workers' argv are in the log (before: "deepspeed sft_main.py ...", one node, port lost)
    d = diagnose_paths([str(HERE / "ds_runner_two_nodes.log")], mask=False)
    rc = d.root_cause
    assert rc is not None
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 13
    assert rc.verify.startswith(
        "deepspeed --hostfile=<hostfile> --master_port=29711 sft_main.py"
        " --deepspeed cfg/z3.json --epochs 2  #"
    )


def test_a_completed_run_names_the_error_every_rank_survived():
    # every rank printed a kernel-load failure, fell back, trained to 200/200, exit 0: no
    # failure, but the report says every rank ran without what failed (trial r24b finding 3)
    d = diagnose_paths([str(HERE / "kernel_fallback_every_rank_exit0.log")], mask=False)
    assert d.root_cause is None and d.initiating_rank is None
    said = [r for r in d.reasoning if r.startswith("Survived, not harmless")]
    assert len(said) == 1
    assert "precompiled GPU kernel" in said[0]
    assert "kernel_fallback_every_rank_exit0.log:3, 4 line(s), ranks 0, 1, 2, 3" in said[0]
    assert "every rank printed it and ran on" in said[0]
    assert not any(r.startswith("No rank printed a training step") for r in d.reasoning)


def test_a_completed_run_with_no_step_does_not_claim_training_ran():
    d = diagnose_paths([str(HERE / "kernel_fallback_no_steps_exit0.log")], mask=False)
    assert d.root_cause is None
    assert any(r.startswith("No rank printed a training step") for r in d.reasoning)


def test_the_kernel_load_verify_quotes_the_logs_own_error():
    # the criterion is the runtime's error the log printed, not a string it never had
    d = _diag("cuda/precompiled-kernel-launch-failed.positive.log")
    assert d.root_cause is not None
    assert 'no line showing "invalid resource handle"' in d.root_cause.verify
    assert "fail to call hipModule" not in d.root_cause.verify
    d2 = diagnose_paths([str(HERE / "kernel_fallback_every_rank_exit0.log")], mask=False)
    # (the same signature on a run that failed would quote CUDA_ERROR_NO_BINARY_FOR_GPU)
    assert d2.collateral[0].captures["error"] == "CUDA_ERROR_NO_BINARY_FOR_GPU"


def test_the_holder_of_a_shared_lock_starts_the_failure_not_its_waiter():
    # a real torchrun run: rank 1 rebuilds an index inside one SQLite write transaction; ranks
    # 0 and 2 raise "database is locked"; torchrun SIGTERMs rank 1, still rebuilding (before:
    # rank 0, the first waiter, as torchrun's "first observed failure" says)
    d = _diag("io/shared-lock-busy.positive.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.signature == "shared-lock-busy"
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "lock_holder"
    assert rc.evidence[0].line == 33
    assert rc.fix.variant is not None and rc.fix.variant.id == "holder-shown"
    first = rc.fix.steps[0]
    assert first.startswith("Shorten what rank 1 does while it holds the lock")
    assert "line 25: `[rank1] rebuilding shard index 3/6`" in first
    # the waiter's line is named as where it waited, not as the cause (kind 5)
    assert rc.fix.steps[1].startswith(
        "index_train.py:20 (in record) is where rank 0 waited (its traceback), not the cause:"
        " the cause is what rank 1 was doing at its last own line, line 25:"
    )
    assert rc.verify.startswith(
        "torchrun --nproc-per-node=3 index_train.py  # no 'database is locked'"
    )


def test_a_lock_timeout_with_no_holder_in_the_log_names_no_holder():
    d = diagnose_paths([str(VARIANTS / "shared-lock-busy/holder-unknown.log")], mask=False)
    rc = d.root_cause
    assert rc is not None and rc.signature == "shared-lock-busy"
    assert d.initiating_rank is None
    assert rc.evidence[0].line == 10
    assert rc.fix.variant is not None and rc.fix.variant.id == "holder-unknown"
    assert "Find the process that held the lock" in rc.fix.steps[0]
    assert "no 'could not be acquired'" in rc.verify


def test_a_hang_whose_initiator_printed_no_traceback_says_where_the_waiters_waited():
    # rank 0 tokenized past the barrier's timeout and printed no traceback; ranks 1-2 timed out
    # in the barrier: their line is where they waited, not the cause (kind 5)
    log = Path(__file__).parent / "r19b" / "10-spawn-rank0-slow-tokenize-barrier-timeout.log"
    d = diagnose_paths([str(log)], mask=False)
    rc = d.root_cause
    assert rc is not None and d.initiating_rank == 0
    assert rc.fix.steps[1] == (
        "10_spawn_preprocess.py:25 (in worker) is where rank 1 waited (its traceback), not the"
        " cause: the cause is what rank 0 was doing then (it printed no traceback)."
    )
