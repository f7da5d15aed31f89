"""An input's own name is never masked as a host (trial r15, finding 3).

rootrank writes a location as ``<source>:<line>``. A source named like a machine with no
extension (``Untitled-1``, which VS Code gives every untitled editor; ``worker-1``) read as
host-and-port to the masker (``node02:29500``), so the reasoning said ``host-2:14`` where the
header said ``Untitled-1:14``: a location no one can open. A real ``host:port`` in the log
is still masked.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text

LOG = (
    "[rank0]: MASTER_ADDR=node02 endpoint node02:29500\n"
    + "".join(f"[rank{r}]: step {s} loss 2.0\n" for s in range(1, 6) for r in (0, 1))
    + "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/workspace/train.py", line 12, in <module>\n'
    '[rank1]:     raise ValueError("bad shard")\n'
    "[rank1]: ValueError: bad shard\n"
    "[rank0]:[E1203 10:26:14.051829071 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught"
    " collective operation timeout: WorkNCCL(SeqNum=30, OpType=ALLREDUCE, NumelIn=1,"
    " NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.\n"
)


@pytest.mark.parametrize("name", ["Untitled-1", "worker-1"])
def test_source_name_stays_in_the_reasoning_and_collateral(name):
    diag = diagnose_text(LOG, name)
    assert diag.root_cause is not None and diag.initiating_rank == 1
    assert f'"{diag.root_cause.title}" ({name}:15)' in " ".join(diag.reasoning)
    watchdog = next(g for g in diag.collateral if g.signature == "nccl-watchdog-timeout")
    assert [(e.path, e.line) for e in watchdog.evidence] == [(name, 16)]
    text = repr(diag.to_dict())
    assert "host-2:" not in text and f"{name}:" in text
    # (a line number of two digits or more reads as a port); the log's own host and port
    # are still masked
    assert "node02" not in text


def test_a_folder_of_the_input_path_is_no_host_and_the_path_is_shown_as_typed():
    """Trial r21 findings 8 and 10: ``exp2/u.log`` was written ``host-1/u.log`` (a folder
    name with a digit read as a host), and ``/work/alice/run/input.log`` as
    ``/work/<user>/run/input.log`` (the HPC-root rule): the report's locations are the paths
    the user typed."""
    log = (
        "step 1\nTraceback (most recent call last):\n"
        '  File "/home/bob/x.py", line 3, in <module>\n'
        "    foo()\nzzz.WeirdThing: totally novel failure\n"
    )
    for source in ("exp2/u.log", "/work/alice/run/input.log"):
        diag = diagnose_text(log, source)
        text = repr(diag.to_dict())
        assert f"{source}:5" in text, source
        assert "host-1" not in text and "/work/<user>" not in text
