"""Round 17 kinds of initiating-rank reasoning (held-out sets r17a, r17b).

1. A line that names another rank as the origin is evidence for that rank: Open MPI's "The
   first process to do so was: Process name: [[J,V],N]" and ProcessGroupNCCL's "[7] is
   setting up NCCL communicator and retrieving ncclUniqueId from [0] ... wait timeout".
2. When the ranks that speak raise the same error, or one rank's paste shows one end of a
   failed connection, no rank is named.
3. mp.spawn's "-- Process N terminated with the following error:" covers a chained
   traceback; an exception raised while the source rank of broadcast_object_list pickles
   (``_object_to_tensor``) is that rank's own.
4. In a timeout where every other rank raised a waiter's error, the one rank that raised
   nothing and was stopped by the agent is the initiator, whatever torchelastic's "first
   observed failure" says; its own last line is quoted.

Fixtures 1, 2: written in the tools' own wording (horovod/common/operations.cc, Open MPI's
orterun help text, ProcessGroupNCCL::broadcastUniqueNCCLID, NCCL's socket.cc, Python's
traceback) with values of our own. Fixtures 3, 4 (tests/data/r17_rank/): whole captures of
real runs on this machine (torch 2.13 CPU, gloo; the scripts are in the r17b notes).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

DATA = Path(__file__).parent / "data" / "r17_rank"


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# -- 1. a line that names another rank as the origin ---------------------------------------

SHUT_DOWN = (
    "RuntimeError: Horovod has been shut down. This was caused by an exception on one of the"
    " ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks"
    " finished execution. If the shutdown was caused by an exception, you should see the"
    " exception in the log before the first shutdown message."
)


def _horovod_victim(rank: int) -> list[str]:
    p = f"[1,{rank}]<stderr>:"
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train_hvd.py", line 88, in <module>',
        f"{p}    train(epoch)",
        f'{p}  File "/home/u/proj/train_hvd.py", line 61, in train',
        f"{p}    loss_avg = hvd.allreduce(loss.detach(), name='avg_loss')",
        f'{p}  File "/opt/conda/lib/python3.10/site-packages/horovod/torch/mpi_ops.py",'
        " line 441, in synchronize",
        f"{p}    mpi_lib.horovod_torch_wait_and_clear(handle)",
        f"{p}{SHUT_DOWN}",
    ]


def _mpirun_first(vpid: int) -> list[str]:
    return [
        "--------------------------------------------------------------------------",
        "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.",
        "--------------------------------------------------------------------------",
        "--------------------------------------------------------------------------",
        "mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:",
        "",
        f"  Process name: [[61544,1],{vpid}]",
        "  Exit code:    1",
        "--------------------------------------------------------------------------",
    ]


def test_mpirun_first_process_names_the_rank_the_victims_did_not_show():
    """Ranks 0 and 3 raise Horovod's shut-down error (a victim's view); mpirun names rank 2
    as the first process to exit: rank 2 started it, though its own error is not pasted."""
    lines = _horovod_victim(0) + _horovod_victim(3) + _mpirun_first(2)
    d = diagnose_text("\n".join(lines) + "\n", "hvd.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "reported_by_launcher"
    assert "first process that failed" in d.initiator.why


def test_mpirun_first_process_that_is_itself_a_victim_is_not_named():
    """mpirun names rank 3, whose own lines show only the shut-down error: it exited as a
    victim (first among the victims), so the log does not tell who started it."""
    lines = _horovod_victim(0) + _horovod_victim(3) + _mpirun_first(3)
    d = diagnose_text("\n".join(lines) + "\n", "hvd.log", mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "elastic-child-failed"
    assert d.initiating_rank is None


def _unique_id_wait(line_rank: int, group_rank: int, key_prefix: str) -> list[str]:
    p = f"[rank{line_rank}]: "
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/pretrain.py", line 212, in main',
        f"{p}    dist.barrier()",
        f'{p}  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",'
        " line 4159, in barrier",
        f"{p}    work = group.barrier(opts=opts)",
        f"{p}torch.distributed.DistBackendError: [{group_rank}] is setting up NCCL communicator"
        " and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but"
        " store->get('0') got error: wait timeout after 300000ms, keys:"
        f" {key_prefix}//cuda//0",
    ]


def test_waiting_for_the_nccl_unique_id_names_the_default_groups_root():
    """Ranks 2 and 3 time out waiting for the ncclUniqueId that group rank 0 of the default
    group writes: global rank 0 never reached the communicator's creation."""
    lines = _unique_id_wait(2, 2, "/default_pg/0") + _unique_id_wait(3, 3, "/default_pg/0")
    d = diagnose_text("\n".join(lines) + "\n", "uid.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "store-key-wait-timeout"
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 0
    assert d.initiator is not None and d.initiator.strategy == "named_in_message"
    assert "ncclUniqueId" not in d.initiator.why and "NCCL unique id" in d.initiator.why


def test_waiting_for_a_subgroups_unique_id_names_no_global_rank():
    """Global rank 5 is rank 1 of a subgroup ("[1] ... from [0]"): the subgroup's rank 0 may
    be any global rank, so no rank is named from the message."""
    lines = _unique_id_wait(5, 1, "/tp_group_1/0")
    d = diagnose_text("\n".join(lines) + "\n", "uid.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "store-key-wait-timeout"
    assert d.initiating_rank != 0


# -- 2. over-claims: the same error on every rank that speaks; one end of a connection ----


def _cat_dims(prefix: str) -> list[str]:
    return [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/home/u/proj/run.py", line 30, in <module>',
        f"{prefix}    main()",
        f'{prefix}  File "/home/u/proj/heads.py", line 52, in forward',
        f"{prefix}    x = torch.cat([coarse, fine], dim=1)",
        f"{prefix}RuntimeError: Tensors must have same number of dimensions: got 2 and 4",
    ]


def test_the_same_runtime_error_on_two_ranks_names_neither():
    """Ranks 1 and 0 raise the same RuntimeError from the same line: the code, not a rank.
    (Without a signature for it the report is unclassified; with one it is a user-code
    exception whose copies on two ranks name no rank either: analysis.initiator.earliest_time.)"""
    lines = _cat_dims("[rank1]: ") + _cat_dims("[rank0]: ")
    d = diagnose_text("\n".join(lines) + "\n", "cat.log", mask=False)
    if d.root_cause is None:
        assert d.unclassified is not None and "same number of dimensions" in d.unclassified.title
        assert any("also printed the same error" in r for r in d.reasoning)
    else:
        assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank is None


def test_an_unclassified_error_on_one_rank_still_names_it():
    """The same traceback on one rank only (no other rank speaks) keeps that rank."""
    d = diagnose_text("\n".join(_cat_dims("[rank1]: ")) + "\n", "cat.log", mask=False)
    assert d.initiating_rank == 1


def test_a_cut_traceback_with_no_frame_after_a_setup_error_may_be_its_own_copy():
    """Rank 5 raises a dataset loader's ValueError at set-up; the paste ends on rank 2's
    traceback header: nothing shows rank 2 waited in a collective, it may be raising the
    same error, so no rank is named."""
    p = "[rank5]: "
    lines = [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train.py", line 40, in <module>',
        f"{p}    ds = load_split(cfg.data.train_file)",
        f'{p}  File "/home/u/proj/data_utils.py", line 18, in load_split',
        f'{p}    raise ValueError(f"File {{path}} not found.")',
        f"{p}ValueError: File data/train_v2.jsonl not found.",
        "[rank2]: Traceback (most recent call last):",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "ds.log", mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.rank == 5
    assert d.initiating_rank is None
    assert d.initiator is not None and 2 in d.initiator.candidates


def _nccl_connect(rank: int, detail: str) -> list[str]:
    p = f"[rank{rank}]: "
    return [
        f"{p}torch.distributed.DistBackendError: NCCL error in:"
        " /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run"
        " with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        f"{p}ncclSystemError: System call (e.g. socket, malloc) or external library call failed"
        " or device error. ",
        f"{p}Last error:",
        f"{p}{detail}",
    ]


def test_one_ranks_failed_connection_names_no_rank():
    """Rank 12's paste only: its connect to an unnamed peer failed. One end of a broken link
    does not say which end broke it."""
    lines = _nccl_connect(12, "socketPollConnect poll() returned 1, no POLLOUT events")
    d = diagnose_text("\n".join(lines) + "\n", "conn.log", mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "nccl-system-error"
    assert d.root_cause.rank == 12
    assert d.initiating_rank is None
    assert d.initiator is not None and d.initiator.candidates == [12]
    assert "could not connect to a peer" in d.initiator.why


def test_a_system_error_that_is_no_connection_still_names_its_rank():
    """The same wrapper with a shared-memory detail is the rank's own host problem."""
    lines = _nccl_connect(
        12, "Error while creating shared memory segment /dev/shm/nccl-Qx81aB (size 9637888)"
    )
    d = diagnose_text("\n".join(lines) + "\n", "shm.log", mask=False)
    assert d.root_cause is not None
    assert d.initiator is None or "could not connect" not in d.initiator.why


# -- 3. mp.spawn: a chained traceback, source-side pickling ---------------------------------


def test_spawn_banner_covers_the_chained_traceback_of_its_process():
    """Real run: mp.spawn of 3; rank 2's DataLoader worker exits with code 3, and the banner
    "-- Process 2 terminated with the following error:" is followed by a chained traceback
    whose final exception is the root."""
    d = diagnose_text(_read("spawn_chained_worker_exit.log"), "spawn.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "dataloader-worker-killed-or-shm"
    assert d.root_cause.rank == 2
    assert d.initiating_rank == 2


def test_pickling_on_the_broadcast_source_is_that_ranks_own_error():
    """Real run: mp.spawn of 4; rank 0 (broadcast_object_list's src) cannot pickle a lambda
    in _object_to_tensor. No other rank pickles: the error is rank 0's own, not its copy of a
    collective's failure."""
    d = diagnose_text(_read("spawn_broadcast_unpicklable.log"), "bcast.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.root_cause.rank == 0
    assert d.initiating_rank == 0


def test_pickling_in_all_gather_object_on_the_one_rank_shown_stays_unnamed():
    """all_gather_object pickles on every rank: rank 0's error there, in a log showing only
    rank 0 of a world of 4, may be every rank's copy."""
    p = "[rank0]: "
    lines = [
        "world_size=4",
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/home/u/proj/train.py", line 25, in worker',
        f"{p}    dist.all_gather_object(out, cfg)",
        f'{p}  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",'
        " line 3100, in all_gather_object",
        f"{p}    input_tensor, local_size = _object_to_tensor(obj, current_device, group)",
        f'{p}  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",'
        " line 3405, in _object_to_tensor",
        f"{p}    _pickler(f).dump(obj)",
        f"{p}AttributeError: Can't pickle local object 'build_config.<locals>.<lambda>'",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "gather.log", mask=False)
    assert d.root_cause is not None and d.root_cause.rank == 0
    assert d.initiating_rank is None


# -- 4. the silent straggler in a timeout ----------------------------------------------------


def test_the_rank_that_raised_nothing_in_a_gloo_timeout_is_the_initiator():
    """Real run: torchrun 4, gloo timeout 20 s; rank 2 waits on a stale lock file and raises
    nothing; ranks 1 and 3 time out, rank 0 sees rank 1's connection close; torchelastic's
    "first observed failure" is rank 1, a waiter. Rank 2 is named, with its own last line."""
    d = diagnose_text(_read("gloo_timeout_silent_rank.log"), "lock.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiating_rank == 2
    assert d.initiator is not None and d.initiator.strategy == "missing_reporter"
    assert "rank 2 cache locked" in d.initiator.why
    assert "(line 7)" in d.initiator.why and "only a signal ended it" in d.initiator.why
