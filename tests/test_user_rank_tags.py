"""A user's own rank tag (``[r3]``, ``rank3:``, ``[GPU 3]``, ``[worker-3]``) is read as the
line's rank only when the log shows the tag numbers the ranks: several distinct numbers that
fit the job (below its world size, or dense from 0). One number alone, numbers beyond the world
size, or a GPU index on several hosts name no rank.
"""

from __future__ import annotations

from rootrank.ranks import RankTagger


def _tagger(block: str) -> RankTagger:
    tagger = RankTagger()
    tagger.learn_user_tags(block)
    return tagger


def test_bracketed_r_tag_with_every_rank_is_a_rank():
    block = "".join(f"[r{r}] it 00 local_loss 1.0\n" for r in (3, 2, 0, 1))
    tagger = _tagger(block)
    got = tagger.tag("[r3] it 00 local_loss 1.0", 1)
    assert got.rank == 3
    assert got.text == "it 00 local_loss 1.0"


def test_other_forms_are_read_the_same_way():
    for lines, line, rank in (
        ("rank0: ok\nrank1: ok\n", "rank1: loss 2.0", 1),
        ("[GPU 0] ok\n[GPU 1] ok\n[GPU 2] ok\n", "[GPU 2] loss 2.0", 2),
        ("[worker-0] ok\n[worker-1] ok\n", "[worker-1] loss 2.0", 1),
        ("worker_0 | ok\nworker_1 | ok\n", "worker_0 | loss 2.0", 0),
        ("Rank 0: ok\nRank 1: ok\n", "Rank 1: loss 2.0", 1),
        ("train | rank 0 | step 1\ntrain | rank 2 | step 1\n", "train | rank 2 | step 2", 2),
    ):
        assert _tagger(lines).tag(line, 1).rank == rank, line


def test_one_number_alone_names_no_rank():
    # a log of rank 0's output only (or a tag that names something else): no rank
    tagger = _tagger("[r0] it 00 loss 1.0\n[r0] it 01 loss 0.9\n")
    assert tagger.tag("[r0] it 01 loss 0.9", 2).rank is None


def test_numbers_beyond_the_world_size_name_no_rank():
    tagger = _tagger("world_size=2\n[r0] a\n[r5] b\n")
    tagger.tag("world_size=2", 1)
    assert tagger.tag("[r5] b", 3).rank is None
    assert tagger.tag("[r0] a", 2).rank is None


def test_sparse_numbers_with_no_world_size_name_no_rank():
    # "[r12]" and "[r250]" (a retry count, a run id): not a numbering of ranks from 0
    tagger = _tagger("[r12] retry\n[r250] retry\n")
    assert tagger.tag("[r250] retry", 2).rank is None


def test_gpu_index_on_several_hosts_names_no_rank():
    tagger = _tagger("[GPU 0] a\n[GPU 1] b\n")
    tagger.tag("node01: [GPU 0] a", 1)
    tagger.tag("node02: [GPU 1] b", 2)
    assert tagger.tag("node02: [GPU 1] b", 3).rank is None


def test_a_tag_after_a_logger_header_is_counted_as_its_lines_are_read():
    tagger = RankTagger()
    first = tagger.tag("2026-01-05 10:00:00,100 - INFO - [r1] it 00 loss 1.0", 1)
    second = tagger.tag("2026-01-05 10:00:00,200 - INFO - [r0] it 00 loss 1.1", 2)
    assert first.rank is None  # one number seen so far
    assert second.rank == 0


def test_worker_colon_at_a_line_start_stays_a_pdsh_host():
    tagger = _tagger("worker-0: a\nworker-1: b\n")
    got = tagger.tag("worker-1: b", 2)
    assert (got.rank, got.host) == (None, "worker-1")


def test_a_launcher_prefix_wins_over_a_user_tag():
    tagger = _tagger("[r0] a\n[r1] b\n")
    assert tagger.tag("[rank1]:[r0] a", 1).rank == 1


def test_gpu_indices_of_one_node_in_a_larger_job_name_no_rank():
    # world size 16, GPU tags 0-7: one node's local indices, not global ranks
    tagger = _tagger("".join(f"[GPU {g}] x\n" for g in range(8)))
    tagger.tag("WORLD_SIZE=16", 1)
    assert tagger.tag("[GPU 3] x", 2).rank is None
    full = _tagger("".join(f"[GPU {g}] x\n" for g in range(8)))
    full.tag("WORLD_SIZE=8", 1)
    assert full.tag("[GPU 3] x", 2).rank == 3


def test_dataloader_worker_indices_short_of_the_world_size_name_no_rank():
    tagger = _tagger("".join(f"[worker-{w}] loading shard\n" for w in range(4)))
    tagger.tag("world_size=8", 1)
    assert tagger.tag("[worker-2] loading shard", 2).rank is None
