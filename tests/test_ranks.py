"""Rank, host and time attribution for what real launchers print."""

from __future__ import annotations

from rootrank.ranks import RankTagger, parse_time, rank_from_path


def tag_all(lines, **kw):
    t = RankTagger(**kw)
    return t, [t.tag(line, i + 1) for i, line in enumerate(lines)]


def test_torchrun_stacked_prefix_teaches_continuation_lines():
    _, out = tag_all(
        [
            "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] watchdog",
            "[default0]:frame #0: c10::Error::Error",
            "[default1]:frame #0: other process",
        ]
    )
    assert [(o.rank, o.local_rank) for o in out] == [(12, 0), (12, 0), (None, 1)]
    assert out[1].text == "frame #0: c10::Error::Error"


def test_slurm_label_mpi_tag_and_pdsh_host():
    _, out = tag_all(
        [
            "3: RuntimeError: x",
            "0 :Error in compute_loss",
            "[1,5]<stderr>: Traceback",
            "node07: [rank9]: boom",
        ]
    )
    assert [(o.rank, o.host, o.text) for o in out] == [
        (3, None, "RuntimeError: x"),
        (0, None, "Error in compute_loss"),
        (5, None, "Traceback"),
        (9, "node07", "boom"),
    ]


def test_time_of_day_is_not_a_slurm_label():
    _, out = tag_all(["12:34:56 INFO started"])
    assert out[0].rank is None


def test_subgroup_rank_is_not_the_global_rank():
    _, out = tag_all(
        [
            "[PG 1 Rank 0] Watchdog caught collective operation timeout",
            "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog caught collective operation timeout",
            "[Rank 6] Watchdog caught collective operation timeout",
        ]
    )
    assert [o.rank for o in out] == [None, 3, 6]


def test_nccl_device_is_not_the_rank_comm_line_maps_pid():
    t, out = tag_all(
        [
            "node01:15325:16199 [2] NCCL INFO Channel 00/02 : 0 1",
            "node01:15325:16199 [2] NCCL INFO comm 0x55d5a0 rank 6 nranks 8 cudaDev 2 busId 41000 commId 0x1 - Init START",
            "node01:15325:16199 [2] NCCL INFO [Service thread] Connection closed by localRank 2",
        ]
    )
    assert [o.rank for o in out] == [None, 6, 6]
    assert out[0].host == "node01" and out[0].pid == 15325
    assert t.world_size == 8


def test_elastic_summary_entries():
    t, _ = tag_all(
        [
            "Failures:",
            "[1]:",
            "  time      : 2026-11-29_13:34:28",
            "  host      : node01",
            "  rank      : 2 (local_rank: 2)",
            "  exitcode  : -15 (pid: 25062)",
            "  traceback : Signal 15 (SIGTERM) received by PID 25062",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-29_13:34:27",
            "  host      : node02",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : 1 (pid: 25061)",
            "============================================================",
        ]
    )
    got = [(e.rank, e.local_rank, e.host, e.exitcode, e.root_cause) for e in t.elastic]
    assert got == [(2, 2, "node01", -15, False), (1, 1, "node02", 1, True)]
    assert t.hosts == {2: "node01", 1: "node02"}


def test_a_retyped_summary_with_glued_fields_still_names_its_entry():
    # A summary copied from a rendered table: a space before the colons, the table's header
    # keys on their own lines, and the rank and exitcode fields glued onto one line.
    t, _ = tag_all(
        [
            "Failures:",
            "<NO OTHER FAILURES>",
            "Root Cause (first observed failure) :",
            "[0]:",
            "time",
            "host",
            "2026-11-30 08:12:09",
            "gpu-a7",
            "rank5 (local rank: 1)exitcode: -9 (pid: 4410)error file: <N/A>",
            "traceback : signal 9 (SIGKILL) received by PID 4410",
        ]
    )
    got = [(e.rank, e.local_rank, e.exitcode, e.pid, e.root_cause) for e in t.elastic]
    assert got == [(5, 1, -9, 4410, True)]


def test_a_glued_line_outside_a_summary_is_not_an_entry():
    t, _ = tag_all(["rank5 (local rank: 1)exitcode: -9 (pid: 4410)"])
    assert t.elastic == []


def test_mp_spawn_banner_names_the_process_of_the_traceback():
    _, out = tag_all(
        [
            "-- Process 1 terminated with the following error:",
            "Traceback (most recent call last):",
            '  File "/w/train.py", line 9, in run',
            "ValueError: bad shard",
            "",
            "unrelated line",
        ]
    )
    assert [o.rank for o in out] == [None, 1, 1, 1, 1, None]


def test_rank_from_path_layouts():
    assert rank_from_path("logs/run/attempt_0/3/stderr.log") == (3, True)
    assert rank_from_path("slurm-81234-5.out") == (5, False)
    assert rank_from_path("out/rank_7.log") == (7, False)
    assert rank_from_path("train.log") == (None, False)


def test_timestamps_order_across_formats():
    glog = parse_time("[E1129 10:02:11.500000 ProcessGroupNCCL.cpp:632] x")
    iso = parse_time("2024-11-29 10:02:12,000 - INFO - y")
    elastic = parse_time("2026-11-29_10:02:13")
    assert glog is not None and iso is not None and elastic is not None
    assert glog < iso < elastic
    assert iso - glog == 0.5
    assert parse_time("[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515]") is not None


def test_logger_headers_are_removed_after_their_time_is_read():
    _, out = tag_all(
        [
            "ERROR 04-29 00:53:54 [core.py:398] ModuleNotFoundError: No module named 'flash_attn'",
            "2024-05-29T11:23:16Z [rank3]: torch.OutOfMemoryError: CUDA out of memory.",
            "[rank1]:[E1129 10:12:01.554000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout",
            "(RayWorkerWrapper pid=4242, ip=10.0.0.3) ValueError: bad shard",
            "vllm-1  | Traceback (most recent call last):",
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 1)",
            "!!! Exception during processing !!! No CUDA GPUs are available",
        ]
    )
    assert [o.text for o in out] == [
        "ModuleNotFoundError: No module named 'flash_attn'",
        "torch.OutOfMemoryError: CUDA out of memory.",
        "[Rank 1] Watchdog caught collective operation timeout",
        "ValueError: bad shard",
        "Traceback (most recent call last):",
        "failed (exitcode: -9) local_rank: 0 (pid: 1)",
        "No CUDA GPUs are available",
    ]
    assert [o.rank for o in out[:3]] == [None, 3, 1]
    assert out[1].time is not None and out[2].time is not None


def test_accelerate_stream_tags_are_peeled_without_a_rank():
    _, out = tag_all(["stderr: Traceback (most recent call last):", "stdout: [rank3]: step 1"])
    assert [(o.text, o.rank) for o in out] == [
        ("Traceback (most recent call last):", None),
        ("step 1", 3),
    ]


def test_stacked_prefixes_are_learnt_per_block_for_lines_that_show_only_the_local_tag():
    t = RankTagger()
    block = "[default1]:[rank9]: step 1\nnode02: [default2]:[rank10]: step 1\n[default0]:[rank8]: step 1\n"
    assert t.learn_stacked(block) == {8, 9, 10}
    assert t.tag("[default1]:Traceback (most recent call last):", 7).rank == 9
    assert t.tag("node02: [default2]:RuntimeError: x", 8).rank == 10
    assert t.learn_stacked("[rank3]: no stacked prefix here\n") == set()


def test_application_rank_tags_name_the_rank_and_are_peeled():
    from rootrank.ranks import RankTagger

    tagger = RankTagger()
    lines = [
        "[rank 0] step 10 loss 2.1",
        "[RANK 1] step 10 loss 2.2",
        "2024-05-01 10:00:00 INFO [Rank 3/8] Traceback (most recent call last):",
        "rank=4: saving checkpoint",
        "the ranks 5 and 6 agree",  # prose, not a tag
    ]
    tagged = [tagger.tag(line, n) for n, line in enumerate(lines, 1)]
    assert [t.rank for t in tagged] == [0, 1, 3, 4, None]
    assert tagged[2].text == "Traceback (most recent call last):"


def test_an_application_tagged_traceback_is_that_ranks(tmp_path):
    from rootrank.engine import diagnose_paths

    log = tmp_path / "app.log"
    log.write_text(
        "[rank 0] step 10 loss 2.1\n"
        "[rank 2] Traceback (most recent call last):\n"
        '[rank 2]   File "/home/u/train.py", line 3, in <module>\n'
        '[rank 2]     x = torch.empty(10**12, device="cuda")\n'
        "[rank 2] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.64 TiB. GPU 2 has a total "
        "capacity of 79.10 GiB of which 78.00 GiB is free.\n"
    )
    d = diagnose_paths([str(log)], mask=False)
    assert d.root_cause.failure_class == "cuda-oom"
    assert d.initiating_rank == 2
    assert d.root_cause.evidence[0].line == 5
