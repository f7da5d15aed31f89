"""Round-18d kinds of reasoning (held-out set /work/notes/heldout-r18d, now a development set).

The fixtures in ``tests/r18d/`` are that set's real runs on this machine (torch 2.13 CPU,
gloo, torchrun or mp.spawn, 2026-12-04), whole, named after their case folders; the scripts
that made them are in the set's ``_scripts/``.

1. mp.spawn's ``ProcessExitedException: process 2 terminated with signal SIGABRT`` names the
   process (its rank) that ended by a signal of its own, after gloo's receive-size enforce
   (``op.preamble.length <= op.nbytes. 4096 vs 2048``) printed with no rank: that rank
   received more than its buffer held, so its tensor is the one that differs
   (rootrank.analysis.initiator.spawn_self_signal).
2. A pipeline whose every rank times out in ``dist.send``/``dist.recv`` at once: the ranks'
   own prints of their peers (``[stage 1] recv from 0, send to 3`` against ``[stage 2] recv
   from 1`` and ``[stage 3] recv from 2``) pair each send with its destination's receive; the
   rank common to every unpaired side has the wrong peer table
   (rootrank.analysis.oddline.p2p_unmatched, initiator.unpaired_p2p_peer); the fix names
   that peer table (timeout-call-site-divergence variant ``p2p-peer-table``), and a send and
   a recv at two lines are not compared as call sites (rootrank.entry.frames.call_sites).
3. Class from what the message says, not the generic exception: torch.save's ``open file
   failed with strerror: Permission denied`` is a write the file system refused
   (signatures/io/permission-denied.yaml: fix on the directory's owner/mode, which the
   message does not name); ``ProcessGroupGloo::scatter: Incorrect input list size 2. Input
   list size should be 3`` is a collective's own argument check on the raising rank
   (signatures/collective/gloo-local-size-check.yaml: one tensor per rank; the peers' call
   sites, a scatter's source and non-source branches, are not compared). A parser's syntax
   error (``json.decoder.JSONDecodeError: Unterminated string ...``) under a user frame that
   reads a config (``load_config``) is a config file that does not parse: config-error, with
   the copy on the failing rank's node to compare and re-copy
   (rootrank.analysis.prepare.config_parse_errors). A library's refusal of a count
   (``set_num_threads expects a positive integer``) is config-error, with the rank's own
   printed empty share (``[rank 2] cores [] of [0, 1]``) quoted as where the 0 came from
   (rootrank.analysis.prepare.nonpositive_count_arguments). ``OverflowError: cannot
   convert float infinity to integer`` on a line that reads a named field
   (``meta["num_tokens"]``) is a record loaded from a file with inf in it: data-error, fix
   on that file and a finiteness check in the loader
   (rootrank.analysis.prepare.nonfinite_record_fields).
4. The silent rank's last own line is a logging record (``2026-12-04 19:43:43,130 [rank2]
   metrics INFO: flushing metrics snapshot``): the reader of a rank's last line peels
   logging's asctime before a bracketed rank tag (rootrank.ranks.strip_wrapper_stamp), so the
   fix quotes the phase rank 2 stopped in instead of "raise the timeout".
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text

_DATA = Path(__file__).parent / "r18d"


def _read(name: str) -> str:
    return (_DATA / name).read_text(encoding="utf-8")


# 1. mp.spawn's process index of a self-inflicted signal


def test_spawn_sigabrt_names_the_aborting_rank() -> None:
    log = _read("03-spawn-rank2-bf16-default-dtype-broadcast.log")
    # the whole log: the ranks' own dtype prints set rank 2 apart first (round 19: a dtype a
    # rank prints of itself is a setting, rootrank.scan._DTYPE_SETTING)
    d = diagnose_text(log, "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator is not None
    assert d.initiator.rank == 2
    assert d.initiator.strategy == "odd_setting_out"
    # the contiguous part from gloo's abort on (without the ranks' prints): mp.spawn's report
    # of the process that took the signal names it
    tail = "\n".join(log.split("\n")[3:])
    assert tail.startswith("terminate called after throwing")
    d = diagnose_text(tail, "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.initiator is not None
    assert d.initiator.rank == 2
    assert d.initiator.strategy == "spawn_self_signal"


# 2. point-to-point peers paired across ranks


def test_p2p_peer_table_names_the_rank_that_sends_nowhere() -> None:
    d = diagnose_text(_read("05-rank1-sends-to-wrong-stage-logdir-tee.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiator is not None
    assert d.initiator.rank == 1
    assert d.initiator.strategy == "unpaired_p2p_peer"
    assert "rank 1 sends to 3, which receives from 2" in d.initiator.why
    # the fix names the peer table, not the send and recv lines as a divergence
    step = d.root_cause.fix.steps[0]
    assert "05_pipeline_p2p.py:33" in step
    assert "Rank 1's point-to-point peers are wrong" in step
    assert "same collectives in the same order" not in step


# 3. class from the message's own words


def test_torch_save_open_failed_is_a_permission_fault_of_rank_1() -> None:
    d = diagnose_text(_read("02-rank1-ckpt-dir-not-writable-wrapper-ts.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "filesystem-permission"
    assert d.root_cause.rank == 1
    assert d.initiator is not None and d.initiator.rank == 1
    step = d.root_cause.fix.steps[0]
    assert "02_save_shards.py:18" in step
    assert "ls -ld" in step and "names no path" in step


def test_scatter_list_size_check_is_a_shape_mismatch_of_the_source_rank() -> None:
    d = diagnose_text(
        _read("06-rank0-scatter-list-two-shards-three-ranks.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.root_cause.signature == "gloo-local-size-check"
    assert d.initiator is not None and d.initiator.rank == 0
    step = d.root_cause.fix.steps[0]
    assert "06_scatter_shards.py:20" in step
    assert "list of 2 tensors where the process group has 3 ranks" in step
    assert "did not get past line" not in step


def test_json_config_that_does_not_parse_is_a_config_error_of_node_1() -> None:
    d = diagnose_text(_read("11-node1-rank2-truncated-json-config.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "config-error"
    assert d.root_cause.signature == "config-file-unparseable"
    assert d.root_cause.rank == 2
    assert d.initiator is not None and d.initiator.rank == 2
    step = d.root_cause.fix.steps[0]
    assert "11_node_config.py:15 (in load_config)" in step
    assert "md5sum" in step


def test_nonpositive_thread_count_is_a_config_error_with_the_empty_share() -> None:
    d = diagnose_text(_read("04-rank2-zero-cores-set-num-threads.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "config-error"
    assert d.root_cause.signature == "nonpositive-count-argument"
    assert d.root_cause.rank == 2
    assert d.initiator is not None and d.initiator.rank == 2
    step = d.root_cause.fix.steps[0]
    assert "04_pin_threads.py:17" in step
    assert 'it printed "cores [] of [0, 1]"' in step
    assert "max(1, n)" in step


def test_inf_in_a_manifest_field_is_a_data_error_of_rank_1() -> None:
    d = diagnose_text(_read("10-spawn-rank1-manifest-1e999-overflow.log"), "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.root_cause.signature == "nonfinite-record-field"
    assert d.root_cause.rank == 1
    assert d.initiator is not None and d.initiator.rank == 1
    step = d.root_cause.fix.steps[0]
    assert "field num_tokens that rank 1 read at 10_spawn_manifest.py:19" in step
    assert "is inf" in step


# 4. the silent rank's last logging record


def test_silent_rank_last_logging_record_is_quoted_in_the_fix() -> None:
    d = diagnose_text(
        _read("08-rank2-metrics-thread-holds-lock-wrapper.log"), "run.log", mask=False
    )
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-timeout"
    assert d.initiator is not None and d.initiator.rank == 2
    step = d.root_cause.fix.steps[0]
    assert "[rank2] metrics INFO: flushing metrics snapshot" in step
    assert "raise the timeout" not in step
