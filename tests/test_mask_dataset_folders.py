"""A data set's folder under ``/data`` is no user's folder (trial r15b, finding 9).

``/data/prefs/shard-02.jsonl`` was shown as ``/data/<user>/shard-02.jsonl``: ``prefs`` has a
login's shape, and ``/data`` is a users' root on some machines. A folder whose file is a data
record directly inside it is a data set's (:func:`rootrank.mask._dataset_folder`), so the path
in the report is one that exists; a user's own tree (code, checkpoints, folders) stays masked,
and a name the log shows as a user's elsewhere is masked whatever the path."""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.mask import Masker
from rootrank.report import to_json, to_text

KEPT = [
    "/data/prefs/shard-02.jsonl",
    "'/data/prefs/a.jsonl'",
    "/data/tulu/train-00001-of-00004.parquet",
    "/mnt/data/occany/010135_cam09.npz",
    "/data/prefs/x.tar.gz",
]
MASKED = [
    ("/data/dave/ckpt/last.pt", "/data/<user>/ckpt/last.pt"),  # a folder inside: a user's tree
    ("/data/dave/train.py", "/data/<user>/train.py"),  # code: a user's tree
    ("/mnt/data/alice.nguyen/shards/x.parquet", "/mnt/data/<user>/shards/x.parquet"),
    ("/scratch/prefs/a.jsonl", "/scratch/<user>/a.jsonl"),  # /scratch is users' only
]


@pytest.mark.parametrize("raw", KEPT)
def test_a_data_set_folder_under_data_is_kept(raw):
    assert Masker().text(raw) == raw


@pytest.mark.parametrize(("raw", "masked"), MASKED)
def test_a_user_tree_under_data_is_still_masked(raw, masked):
    assert Masker().text(raw) == masked


def test_a_name_the_log_shows_as_a_user_is_masked_in_a_data_path_too():
    log = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/home/dave/dpo/train_dpo.py", line 90, in load_pairs\n'
        "[rank2]:     raise ValueError(f'bad record {i} in {path}')\n"
        "[rank2]: ValueError: bad record 4121 in /data/dave/shard-02.jsonl\n"
    )
    out = to_json(diagnose_text(log, "train.log"))
    assert "dave" not in out
    assert "/data/<user>/shard-02.jsonl" in out


def test_the_report_quotes_the_data_file_that_exists():
    log = (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/workspace/dpo/data_utils.py", line 90, in load_pairs\n'
        "[rank2]:     raise ValueError(f'bad record {i} in {path}')\n"
        "[rank2]: ValueError: bad record 4121 in /data/prefs/shard-02.jsonl\n"
    )
    diag = diagnose_text(log, "train.log")
    assert diag.initiating_rank == 2
    text = to_text(diag)
    assert "/data/prefs/shard-02.jsonl" in text
    assert "<user>" not in text
