"""Round-19d kinds of reasoning (held-out set /work/notes/heldout-r19d, now a development set).

The fixtures in ``tests/r19d/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

A. Every rank raises the same error: the odd rank by value. A script's own cross-rank check
   that prints a list gathered in rank order (``model parameters differ across ranks:
   checksums [4.66, 4.40, 4.40, 4.40]``) names the index that stands alone (case 09), as a
   dict keyed by rank already did.
   Every rank raises the same error in one collective and one rank's message alone names
   another quoted name (``Can't get attribute 'ShardStats'`` on rank 1, ``'ShardStats4'`` on
   ranks 0 and 2): that rank sent the odd object (case 04). A rank alone printing its own
   loss non-finite started the non-finite error every rank raised (case 06).

B. A rank that printed fewer samples than the others, which agree, before a peer's
   ``Connection closed by peer``: uneven batches (collective-desync), not the launcher's
   failed-child summary (case 02).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.compare import odd_in_table
from rootrank.engine import diagnose_text

_DATA = Path(__file__).parent / "r19d"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# A. a per-rank list with one value apart


def test_checksum_list_in_rank_order_names_the_odd_index() -> None:
    d = diagnose_text(_read("09-spawn-rank0-eval-split-rng-checksum.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "divergent-model-across-ranks"
    assert d.root_cause.signature == "replica-check-table-differs"
    assert d.initiating_rank == 0  # mp.spawn printed process 2's traceback: the checker
    assert d.root_cause.evidence[0].line == 40
    assert "private generator" in d.root_cause.fix.steps[0]
    assert d.root_cause.verify.startswith("python 09_spawn_seed_checksum.py")


def test_rank_list_needs_rank_words_and_one_value_apart() -> None:
    assert odd_in_table("differ across ranks: checksums [4.6, 4.4, 4.4, 4.4]") == (0, "4.6", "4.4")
    assert odd_in_table("sizes per rank [3, 3, 5]") == (2, "5", "3")
    assert odd_in_table("differ across ranks: [1.0, 2.0]") is None  # two ranks name no one
    assert odd_in_table("differ across ranks: [1.0, 2.0, 3.0]") is None  # no majority
    assert odd_in_table("rank 1 expected shape [4, 4, 8]") is None  # a shape, not per rank


def test_the_one_rank_that_printed_its_loss_inf_started_the_nonfinite_error() -> None:
    # four identical clip_grad_norm_ 'total norm ... is non-finite' errors; rank 1's own
    # 'local loss is inf' reaches the console after the tracebacks (line 93)
    d = diagnose_text(
        _read("06-rank1-inf-loss-clip-nonfinite-timestamps.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "first_nonfinite"
    assert "run.log:93" in d.initiator.why
    # the fix starts from that rank's own value, not "find the first non-finite value"
    step = d.root_cause.fix.steps[0]
    assert "began on rank 1" in step and "local loss is inf" in step
    assert "x.clamp(-limit, limit)" in step
    assert "set_detect_anomaly" not in " ".join(d.root_cause.fix.steps)
    assert "all_reduce a flag" in d.root_cause.fix.steps[1]


def test_the_one_message_apart_in_a_collective_names_the_odd_rank() -> None:
    d = diagnose_text(_read("04-rank1-gather-object-schema-class.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.initiator is not None and d.initiator.strategy == "odd_message_out"
    assert "'ShardStats'" in d.initiator.why and "'ShardStats4'" in d.initiator.why
    step = d.root_cause.fix.steps[0]
    assert step.startswith("04_gather_shard_stats.py:31 (in main)")
    assert "looks that name up in its own module" in step
    assert "dict(rows=n" in step


# B. a rank with fewer batches, then a peer's closed connection


def test_fewer_samples_on_one_rank_then_a_peer_closed_is_uneven_batches() -> None:
    # mp.spawn shows only rank 0's 'Connection closed by peer' in backward; rank 2 printed
    # 240 samples / 15 batches (ranks 0, 1: 320 / 20) and reached its barrier first
    d = diagnose_text(_read("02-spawn-rank2-sampler-num-replicas.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.root_cause.signature == "uneven-batches-per-rank"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 3
    assert "num_replicas" in d.root_cause.fix.steps[0]
    assert "320" in d.root_cause.fix.steps[0]
    # the script calls mp.spawn itself: verified with its own launch, not torchrun
    assert d.root_cause.verify.startswith("python 02_spawn_sampler.py")


# C. EADDRINUSE from the program's own server, not the master port


def test_address_in_use_from_the_programs_own_server_is_not_the_master_port() -> None:
    # an exporter bound at import (socketserver frames under 05_metrics_exporter.py:18), on
    # local rank 3 only, after torchrun's rendezvous had worked
    d = diagnose_text(_read("05-rank3-exporter-port-import-redirects1.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 3
    step = d.root_cause.fix.steps[0]
    assert step.startswith("05_metrics_exporter.py:18 (in <module>)")
    assert "socketserver.TCPServer" in step
    assert "not the rendezvous/master port" in step
    assert "--master-port=$((" not in " ".join(d.root_cause.fix.steps)


def test_the_stores_own_bind_stays_port_in_use() -> None:
    from rootrank.analysis.prepare import own_service_bind
    from rootrank.model import Finding

    def finding(*files: str) -> Finding:
        frames = [
            {"file": x, "line": 1, "func": "f", "user": "site-packages" not in x} for x in files
        ]
        return Finding(
            "port-in-use", "port-in-use", "t", "cause", "error", 95, 0, None, None, 0, frames=frames
        )

    store = finding("/w/train.py", "/v/site-packages/torch/distributed/rendezvous.py")
    service = finding("/w/train.py", "/usr/lib/python3.11/socketserver.py")
    assert not own_service_bind(store)
    assert own_service_bind(service)


# D. a child's exit status in the user's re-raise: the signal, and the child's last line


def test_child_returncode_minus_14_is_sigalrm_with_the_childs_last_line() -> None:
    # EOFError('data worker closed its stdout') -> RuntimeError('... died (returncode -14)')
    d = diagnose_text(_read("10-node1-rank3-subproc-worker-sigalrm.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 3
    assert d.root_cause.evidence[0].line == 113
    assert d.root_cause.captures["signal"] == "SIGALRM"
    step = d.root_cause.fix.steps[0]
    assert step.startswith("10_train_subproc_loader.py:25 (in next_batch)")
    assert "SIGALRM (returncode -14)" in step
    assert "record 23: large compressed frame, decoding" in step
    assert "signal.alarm" in step


# F. the verify's node count from the log's agents


def test_two_agents_with_localhost_summaries_are_two_nodes() -> None:
    from rootrank.ranks import node_count

    assert node_count({"node0", "node1", "localhost"}, set()) == 2
    assert node_count({"gpu-a", "localhost"}, set()) == 2  # one name and loopback: unchanged
    d = diagnose_text(_read("10-node1-rank3-subproc-worker-sigalrm.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert "--nnodes=2 " in d.root_cause.verify


# E. fix targets from the frames


def test_file_exists_on_a_multi_node_job_is_one_writer_per_node() -> None:
    # node 0's rank 0 saved step_00030; node 1's rank 2 (its local rank 0) then raised.
    # The fixture is the case's log from its line 12 on (contiguous): on the whole log the
    # progress attribution of node 0's first step lines varies with PYTHONHASHSEED (on main
    # too), which the scan digests cannot record
    d = diagnose_text(
        _read("03-node1-rank2-shared-ckpt-fileexists-tee3.cut12.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    step = d.root_cause.fix.steps[0]
    assert step.startswith("03_shared_ckpt.py:13 (in save_checkpoint)")
    assert "if dist.get_rank() == 0:" in step and "local_rank == 0" in step
    assert "exist_ok=True)` alone does not fix it" in step


def test_gloo_all_gather_into_tensor_size_names_the_output_chunk() -> None:
    # 'invalid tensor size at index 0 (expected (16), got (17))' on rank 3, every rank
    # 'scored 16 items': 17 is rank 3's output numel / world (66 / 4), not its input
    d = diagnose_text(
        _read("07-rank3-all-gather-into-tensor-output-size.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiating_rank == 3
    step = d.root_cause.fix.steps[0]
    assert step.startswith("07_gather_scores.py:26 (in main)")
    assert "(16) is the input's shape and (17) one chunk of the output" in step
    assert "world_size * inp.numel()" in step


def test_far_apart_sizes_fix_covers_a_collective_from_a_background_thread() -> None:
    # rank 0's monitor thread all_reduces while the main thread runs DDP's all-reduces:
    # 'op.preamble.length <= op.nbytes. 6408 vs 4' on rank 0, no traceback of its own
    d = diagnose_text(_read("08-rank0-monitor-thread-allreduce-wrapper.log"), "run.log", mask=False)
    assert d.root_cause is not None
    # sizes 1602x apart (6408 vs 4): two different collectives, a desync (fix-r23-7)
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 0
    steps = d.root_cause.fix.steps
    assert "two different collectives met" in steps[0]
    assert "background thread" in steps[1] and "dist.new_group" in steps[1]
