"""`rootrank triage` ranks hosts by the failures the host caused, not by every failure it
happened to start.

A user's CUDA OOM or a plain exception in the training script is raised on some rank, and so
on some host, but any host would have failed the same way: it says nothing about the machine.
An uncorrectable ECC error does. Which failure classes count against a host is data: each
class of ``signatures/taxonomy.json`` has a ``kind``, and the taxonomy's ``kinds`` say which
kinds are the host's (hardware, network fabric, the host's OOM killer, its disk). A segfault
is its own kind: usually a native library's bug, not the machine.

The archive is written here: 8-rank runs over two nodes, each rank bound to its host by
NCCL's ``Init COMPLETE`` line (``host:pid:tid [dev] NCCL INFO comm ... rank R nranks N``, as
NCCL's ``init.cc`` prints it), then the initiating rank's failure as PyTorch prints it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_triage import ENV

from rootrank.taxonomy import failure_classes, host_kinds, kinds
from rootrank.triage.summary import Summary, kind_of

ECC_HOST = "gpu-node-013"
OOM_HOST = "gpu-node-021"
SEGV_HOST = "gpu-node-031"
BYSTANDER = "gpu-node-040"


def init_lines(hosts: list[str]) -> list[str]:
    """NCCL's communicator init line for 8 ranks, 4 per host."""
    return [
        f"{hosts[r // 4]}:{7100 + r}:{7180 + r} [{r % 4}] NCCL INFO comm 0x55d1c2a0e9{r}0 "
        f"rank {r} nranks 8 cudaDev {r % 4} nvmlDev {r % 4} busId {0x1B000 + 0x1000 * r:x} "
        "commId 0x4f2c9a17d3b1e085 - Init COMPLETE"
        for r in range(8)
    ]


def progress(step: int) -> list[str]:
    return [
        f"[rank{r}]:2026-11-28 09:{10 + step:02d}:04,{100 + r:03d} INFO train.py:88 "
        f"step {step * 10} loss {2.41 - step / 100:.4f} lr 3.0e-05"
        for r in range(8)
    ]


def ecc(rank: int) -> list[str]:
    """The watchdog of the rank whose GPU failed (ProcessGroupNCCL.cpp), the others' timeouts."""
    return [
        f"[rank{rank}]:[E1128 09:20:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
        f"Rank {rank}] Process group watchdog thread terminated with exception: CUDA error: "
        "uncorrectable ECC error encountered",
        f"[rank{rank}]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        *(
            f"[rank{r}]:[E1128 09:30:35.000000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=91022, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out."
            for r in range(8)
            if r != rank
        ),
    ]


def cuda_oom(rank: int) -> list[str]:
    """torch.OutOfMemoryError as the caching allocator words it (c10/cuda/CUDACachingAllocator.cpp)."""
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/home/user/proj/train.py", line 88, in <module>',
        f"[rank{rank}]:     loss = model(batch).loss",
        f"[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        f"GPU {rank % 4} has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including "
        "non-PyTorch memory, this process has 78.12 GiB memory in use. Of the allocated memory "
        "74.30 GiB is allocated by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated.",
    ]


def user_exception(rank: int) -> list[str]:
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/home/user/proj/train.py", line 131, in <module>',
        f"[rank{rank}]:     main()",
        f'[rank{rank}]:   File "/home/user/proj/train.py", line 97, in main',
        f'[rank{rank}]:     labels = batch["labels"]',
        f"[rank{rank}]: KeyError: 'labels'",
    ]


def segfault(rank: int) -> list[str]:
    """faulthandler's report, then torchelastic's (torch/distributed/elastic/multiprocessing/api.py)."""
    return [
        f"[rank{rank}]: Fatal Python error: Segmentation fault",
        f"[rank{rank}]: ",
        f"[rank{rank}]: Thread 0x00007f2b3c5ff640 (most recent call first):",
        f'[rank{rank}]:   File "/opt/venv/lib/python3.10/site-packages/apex/optimizers/fused_adam.py", line 170 in step',
        "E1128 09:21:07.000000 1001 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        f"(exitcode: -11) local_rank: {rank % 4} (pid: {7100 + rank}) of binary: /opt/venv/bin/python",
    ]


#: (job, failing host, other host, the initiating rank's failure, initiating rank)
JOBS = [
    ("job-01", ECC_HOST, BYSTANDER, ecc, 5),
    ("job-02", ECC_HOST, OOM_HOST, ecc, 6),
    ("job-03", OOM_HOST, BYSTANDER, cuda_oom, 1),
    ("job-04", OOM_HOST, ECC_HOST, cuda_oom, 2),
    ("job-05", OOM_HOST, BYSTANDER, cuda_oom, 3),
    ("job-06", OOM_HOST, SEGV_HOST, user_exception, 0),
    ("job-07", SEGV_HOST, BYSTANDER, segfault, 2),
]


def write_archive(root: Path) -> Path:
    for job, failing, other, failure, rank in JOBS:
        hosts = [failing, other] if rank < 4 else [other, failing]
        lines = init_lines(hosts) + progress(1) + progress(2) + failure(rank)
        (root / job).mkdir(parents=True)
        (root / job / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("distributed", reason="rootrank triage needs Dask: pip install '.[fleet]'")
    archive = write_archive(tmp_path_factory.mktemp("blame") / "archive")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rootrank",
            "triage",
            str(archive),
            "--format",
            "json",
            "--keep-hosts",
            "--workers",
            "1",
        ],
        capture_output=True,
        env=ENV,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    jobs = {rec["job"]["id"].rsplit("/", 1)[-1]: rec for rec in lines if "job" in rec}
    classes = {
        j: (r["diagnosis"]["root_cause"] or {}).get("failure_class") for j, r in jobs.items()
    }
    # each job is diagnosed as planted (else the ranking below would test nothing)
    assert classes == {
        "job-01": "gpu-hardware-xid-ecc",
        "job-02": "gpu-hardware-xid-ecc",
        "job-03": "cuda-oom",
        "job-04": "cuda-oom",
        "job-05": "cuda-oom",
        "job-06": "user-code-exception",
        "job-07": "segfault",
    }
    return next(rec["summary"] for rec in lines if "summary" in rec)


def test_the_ecc_host_outranks_the_host_that_ran_the_ooms(summary: dict) -> None:
    hosts = {h["host"]: h for h in summary["hosts"]}
    order = [h["host"] for h in summary["hosts"]]
    assert order[0] == ECC_HOST, order
    assert order.index(ECC_HOST) < order.index(OOM_HOST)
    ecc_host, oom_host = hosts[ECC_HOST], hosts[OOM_HOST]
    assert (ecc_host["jobs"], ecc_host["host_caused"]) == (2, 2)
    assert ecc_host["kinds"] == {"hardware": 2}
    # four failures started on it, none of them the machine's
    assert (oom_host["jobs"], oom_host["host_caused"]) == (4, 0)
    assert oom_host["kinds"] == {"job-resources": 3, "software": 1}
    assert oom_host["classes"] == {"cuda-oom": 3, "user-code-exception": 1}


def test_a_segfault_is_its_own_kind(summary: dict) -> None:
    hosts = {h["host"]: h for h in summary["hosts"]}
    segv = hosts[SEGV_HOST]
    assert segv["kinds"] == {"segfault": 1} and segv["host_caused"] == 0
    by_class = {c["failure_class"]: c["kind"] for c in summary["classes"]}
    assert by_class == {
        "gpu-hardware-xid-ecc": "hardware",
        "cuda-oom": "job-resources",
        "user-code-exception": "software",
        "segfault": "segfault",
    }
    assert BYSTANDER not in {h["host"] for h in summary["hosts"]}  # ran in 5 jobs, started none


def test_text_report_counts_host_caused_failures(tmp_path: Path) -> None:
    """The terminal table's HOST-CAUSED column is the host-attributable count."""
    from rootrank.triage.render import to_text

    s = Summary()
    for index, (job, failing, _other, failure, _rank) in enumerate(JOBS):
        cls = {
            ecc: "gpu-hardware-xid-ecc",
            cuda_oom: "cuda-oom",
            user_exception: "user-code-exception",
            segfault: "segfault",
        }[failure]
        s.add(
            {
                "index": index,
                "id": job,
                "bytes": 1000,
                "status": "failed",
                "time": 1764320000.0,
                "time_source": "log",
                "failure_class": cls,
                "signature": cls,
                "title": cls,
                "exception": None,
                "error": None,
                "host": failing,
                "rank": 0,
                "hosts": [failing],
                "evidence": None,
            }
        )
    text = to_text(s.to_dict())
    rows = {line.split()[0]: line.split()[:4] for line in text.splitlines() if "gpu-node" in line}
    assert rows[ECC_HOST] == [ECC_HOST, "2", "2", "2"]  # HOST, JOBS, HOST-CAUSED, RAN IN
    assert rows[OOM_HOST] == [OOM_HOST, "4", "0", "4"]
    assert "HOST-CAUSED" in text
    assert list(rows) == [ECC_HOST, OOM_HOST, SEGV_HOST]


def test_which_classes_count_against_a_host_is_data() -> None:
    """The taxonomy names every class's kind, and the kinds that are the host's."""
    assert host_kinds() == frozenset({"hardware", "network", "host-memory", "host-storage"})
    assert all(c.kind in kinds() for c in failure_classes().values())
    against = {slug for slug, c in failure_classes().items() if c.kind in host_kinds()}
    assert against == {
        "gpu-hardware-xid-ecc",
        "network-fabric-error",
        "nccl-system-error",
        "host-oom-killed",
        "disk-full",
    }
    assert kind_of("segfault") == "segfault" and kind_of("cuda-oom") == "job-resources"
    assert kind_of("unclassified") == "software" and kind_of(None) == "software"
