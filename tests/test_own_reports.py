"""rootrank's own reports saved beside the logs (``rootrank diagnose logs/ > logs/diagnosis.txt``)
are not read as logs of the job when a folder is diagnosed (new-user trial r20, finding 10: a
saved report was read and its lines quoted as evidence). Every output form is recognised by its
first bytes (rootrank.engine.own_report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.cli import main
from rootrank.engine import diagnose_paths, own_report

OOM = (
    "[rank1]:Traceback (most recent call last):\n"
    '[rank1]:  File "/home/u/train.py", line 50, in <module>\n'
    "[rank1]:    loss = model(x)\n"
    "[rank1]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
    " total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)


@pytest.mark.parametrize("form", ["text", "json", "markdown", "github"])
def test_a_saved_report_in_the_folder_is_left_out(tmp_path: Path, capsys, form: str) -> None:
    (tmp_path / "job.log").write_text(OOM)
    assert main(["diagnose", str(tmp_path), "-f", form]) == 0
    (tmp_path / "diagnosis.txt").write_text(capsys.readouterr().out)
    assert own_report(str(tmp_path / "diagnosis.txt"))
    assert not own_report(str(tmp_path / "job.log"))
    d = diagnose_paths([str(tmp_path)], mask=False)
    assert d.sources == [str(tmp_path / "job.log")]
    assert (d.root_cause.failure_class, d.initiating_rank) == ("cuda-oom", 1)
    assert any("left out rootrank's own saved reports (diagnosis.txt)" in w for w in d.warnings)


def test_a_report_named_on_the_command_line_is_still_read(tmp_path: Path) -> None:
    # only a folder's files are filtered: a file the user names is read as given
    log = tmp_path / "job.log"
    log.write_text("Root cause: see below\n" + OOM)
    d = diagnose_paths([str(log)], mask=False)
    assert d.initiating_rank == 1


def test_unclassified_and_eval_reports_are_reports(tmp_path: Path, capsys) -> None:
    # an exception no signature names ("Unclassified failure: ...") and `rootrank eval`'s
    # summary, saved beside the logs (new-user trial r20b finding 6)
    (tmp_path / "u.log").write_text(
        'Traceback (most recent call last):\n  File "u.py", line 1, in <module>\n'
        "    foo()\nZZError: weird\n"
    )
    assert main(["diagnose", str(tmp_path)]) == 3
    (tmp_path / "unclassified.txt").write_text(capsys.readouterr().out)
    assert own_report(str(tmp_path / "unclassified.txt"))
    (tmp_path / "eval.txt").write_text(
        "cases: 14 (12 failing runs, 2 healthy)\nclass accuracy: 91.7%\n"
    )
    assert own_report(str(tmp_path / "eval.txt"))
    assert not own_report(str(tmp_path / "u.log"))
