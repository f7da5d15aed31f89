"""A torchelastic error file (``error.json``) that is not what torchelastic writes (a JSON
object with a ``"message"``: torch/distributed/elastic/multiprocessing/errors/error_handler.py,
``ErrorHandler.record_exception``) is still read as text, and the report warns that it was
broken (round-12 trial, item 12: a broken error.json beside a good one was ignored silently)."""

from __future__ import annotations

import json

from conftest import run_cli

from rootrank.engine import diagnose_paths

CALLSTACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/ana/proj/train.py", line 41, in <module>\n'
    "    main()\n"
    '  File "/home/ana/proj/train.py", line 16, in load_batch\n'
    '    raise ValueError("corrupt record in shard-00002.jsonl")\n'
    "ValueError: corrupt record in shard-00002.jsonl\n"
)
GOOD = json.dumps(
    {
        "message": {
            "message": "ValueError: corrupt record in shard-00002.jsonl",
            "extraInfo": {"py_callstack": CALLSTACK, "timestamp": "1733220000"},
        }
    }
)


def _tree(tmp_path, broken: str | None):
    """A torchrun --log-dir attempt: ranks 0-2 with output, rank 2's error file whole, rank 1's
    ``broken`` (if given)."""
    att = tmp_path / "logs" / "none_x1" / "attempt_0"
    for r in range(3):
        (att / str(r)).mkdir(parents=True)
        (att / str(r) / "stdout.log").write_text(f"step 1/100 loss 2.0 rank {r}\n")
    (att / "2" / "error.json").write_text(GOOD)
    if broken is not None:
        (att / "1" / "error.json").write_text(broken)
    return tmp_path / "logs", att / "1" / "error.json"


def test_a_broken_error_file_is_warned_of_and_the_good_one_still_diagnosed(tmp_path):
    logs, bad = _tree(tmp_path, '{"message": {"message": "RuntimeError: CUDA err')
    d = diagnose_paths([str(logs)], mask=False)
    assert d.root_cause is not None and d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert d.warnings == [
        f"{bad}: a torchelastic error file, but it is not valid JSON (Unterminated string"
        " starting at: line 1 column 25 (char 24)): read as text, the rank's error may be missing from it (a worker"
        " killed while writing it leaves it cut)"
    ]
    proc = run_cli("diagnose", str(logs), "--no-mask")
    assert proc.returncode == 0
    assert proc.stderr.decode() == f"rootrank: warning: {d.warnings[0]}\n"


def test_an_empty_or_foreign_error_file_is_named_too(tmp_path):
    for broken, why in (
        ("", "it is empty"),
        ('{"error": "x"}', 'it holds no "message" (torchelastic writes {"message": {...}})'),
    ):
        logs, bad = _tree(tmp_path / str(len(broken)), broken)
        (warning,) = diagnose_paths([str(logs)], mask=False).warnings
        assert warning.startswith(f"{bad}: a torchelastic error file, but {why}: read as text")


def test_whole_error_files_get_no_warning(tmp_path):
    logs, _ = _tree(tmp_path, None)
    d = diagnose_paths([str(logs)], mask=False)
    assert d.warnings == [] and d.initiating_rank == 2
