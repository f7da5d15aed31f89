"""Stack dumps of a hung job grouped by collective (rootrank.analysis.stack_desync)."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.stack_desync import dumped_stacks
from rootrank.engine import diagnose_text

# A paste that groups identical py-spy stacks: several headers over one stack, and a count
# heading over one header (the format people post; frames as py-spy prints them).
GROUPED = """\
job stopped printing after step 120
node-a:
3 in:
Thread 4101 (active): "MainThread"
Thread 4102 (active): "MainThread"
Thread 4103 (active): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    step (train.py:88)
    <module> (train.py:120)

1 in:
Thread 4104 (idle): "MainThread"
    wait (threading.py:320)
    get (queue.py:171)
    _try_get_data (torch/utils/data/dataloader.py:1133)
    __next__ (torch/utils/data/dataloader.py:631)
    step (train.py:80)
    <module> (train.py:120)
"""

COUNTED = """\
5 processes are in:
```
Thread 900 (active): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:3700)
    save (train.py:40)
```
2 processes are in:
```
Thread 905 (active): "MainThread"
    broadcast (torch/distributed/distributed_c10d.py:1191)
    sync_flag (train.py:55)
```
"""


def test_grouped_headers_share_their_stack() -> None:
    stacks = dumped_stacks(1, GROUPED)
    assert [d.pid for d in stacks] == ["4101", "4102", "4103", "4104"]
    assert [d.collective() for d in stacks] == ["all_reduce"] * 3 + ["none"]
    assert [d.weight for d in stacks] == [1, 1, 1, 1]


def test_count_heading_weights_one_header() -> None:
    stacks = dumped_stacks(1, COUNTED)
    assert [(d.pid, d.collective(), d.weight) for d in stacks] == [
        ("900", "barrier", 5),
        ("905", "broadcast", 2),
    ]


def test_odd_process_outside_any_collective() -> None:
    root = diagnose_text(GROUPED).root_cause
    assert root is not None
    assert root.signature == "stack-dump-desync"
    assert root.failure_class == "collective-desync"
    assert root.rank is None
    assert root.captures["pid"] == "4104"
    assert root.evidence[0].line == 12
    assert "_try_get_data" in root.evidence[1].text


def test_minority_in_another_collective() -> None:
    root = diagnose_text(COUNTED).root_cause
    assert root is not None and root.signature == "stack-dump-desync"
    assert root.captures["pid"] == "905" and root.captures["odd_count"] == "2"


def test_real_run_names_the_rank_the_log_pairs_with_the_pid() -> None:
    log = Path(__file__).parents[1] / "signatures/collective/stack-dump-desync.positive.log"
    root = diagnose_text(log.read_text()).root_cause
    assert root is not None and root.signature == "stack-dump-desync"
    assert root.rank == 2
    assert root.evidence[1].text == "load_extra_shard (hang.py:8)"
    # it left the others' path at main's line 17 (the branch), they are at line 18 (all_reduce)
    assert root.captures["user_frame"] == "hang.py:17 (main), where the others are at hang.py:18"
    assert root.evidence[2].line == 30


def test_every_process_in_one_collective_says_nothing() -> None:
    same = GROUPED.replace(
        "wait (threading.py:320)", "all_reduce (torch/distributed/distributed_c10d.py:2050)"
    )
    root = diagnose_text(same.split("1 in:")[0]).root_cause
    assert root is None or root.signature != "stack-dump-desync"
