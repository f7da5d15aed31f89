"""A verification command must be able to fail (rootrank.verify_check)."""

from __future__ import annotations

import pytest
from conftest import ROOT

from rootrank.verify_check import cannot_fail

# -- a verification command must be able to fail --------------------------------------------


@pytest.mark.parametrize(
    "command, program",
    [
        ("df -h /dev/shm  # several GB", "df"),
        ("sacct -j <jobid> -o State  # COMPLETED", "sacct"),
        ("dmesg -T | tail  # no new Xid", "tail"),
        ("nvidia-smi -L | wc -l", "wc"),
        ("torchrun --nproc-per-node=2 train.py 2>&1 | tee run.log", "tee"),
        ("torchrun train.py; echo done", "echo"),
        ("python train.py || true", "true"),
        ("sudo -E dmesg && free -g", "free"),
    ],
)
def test_commands_that_exit_0_whatever_happened_cannot_fail(command, program):
    why = cannot_fail(command)
    assert why is not None and f"'{program}'" in why


@pytest.mark.parametrize(
    "command",
    [
        "sacct -j <new jobid> -n -X -o State | grep -q COMPLETED",
        "! journalctl -k | grep -q oom_reaper  # nothing killed",
        'test "$(nvidia-smi -L | wc -l)" -eq 8',
        "df -h /data && python -c 'import torch; assert torch.cuda.is_available()'",
        "NCCL_DEBUG=WARN timeout 600 torchrun --nproc-per-node=2 train.py  # exit 0",
        "/usr/bin/time -v torchrun train.py 2>&1 | grep 'Maximum resident'",
    ],
)
def test_commands_whose_status_shows_a_failure_can_fail(command):
    assert cannot_fail(command) is None


def test_the_library_check_refuses_a_verify_that_cannot_fail(tmp_path):
    from rootrank.signatures import SignatureProblems, load_signature

    text = (ROOT / "signatures" / "io" / "disk-full.yaml").read_text(encoding="utf-8")
    lines = [
        'verify: "df -h <output_dir>  # enough free space"' if line.startswith("verify:") else line
        for line in text.split("\n")
    ]
    target = tmp_path / "io" / "disk-full.yaml"
    target.parent.mkdir()
    target.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises((SignatureProblems, ValueError)) as err:
        load_signature(target)
    assert "verify" in str(err.value) and "cannot fail" in str(err.value)


def test_a_negated_probe_that_is_true_once_the_job_died_is_refused():
    from rootrank.verify_check import cannot_fail

    assert "'ss'" in (cannot_fail("! ss -ltn | grep -q ':29500 '  # port free") or "")
    assert "'pgrep'" in (cannot_fail("! pgrep -f train.py") or "")
    # a rerun after the probe is judged by the rerun
    assert (
        cannot_fail("! ss -ltn | grep -q ':29500 ' && torchrun --nproc-per-node=2 train.py") is None
    )
    assert cannot_fail("ss -ltnp | grep -q ':29500 '") is None


_RDZV_TIMEOUT = (
    "[E1201 07:40:02.118201 311 socket.cpp:1028] [c10d] The client socket has timed out after 300000ms "
    "while trying to connect to (trainer-head, 41877).\n"
    "[E1201 07:40:02.118377 311 TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host "
    "trainer-head:41877 - timed out (try=0, timeout=300000ms): The client socket has timed out after "
    "300000ms while trying to connect to (trainer-head, 41877).\n"
)


def test_a_masked_host_in_the_verify_is_a_blank_to_fill_not_a_name_to_run():
    from rootrank.engine import diagnose_text
    from rootrank.report import unfilled_placeholders

    masked = diagnose_text(_RDZV_TIMEOUT).root_cause
    head = masked.verify.split("  # ", 1)[0]
    assert "<host-1>" in head and "<host-1>:41877" in head
    assert "<host-1>" in unfilled_placeholders(masked.verify)
    # without masking the real name is what the user runs
    plain = diagnose_text(_RDZV_TIMEOUT, mask=False).root_cause
    assert "trainer-head:41877" in plain.verify and "<host-1>" not in plain.verify


def test_a_multi_node_job_is_rerun_with_its_node_flags():
    from rootrank.entry.commands import Launch, fit

    two_nodes = Launch("torchrun", None, "pretrain.py", None, 16, multi_node=True, nodes=2)
    assert fit("torchrun --nproc-per-node=<gpus> train.py  # passes", two_nodes) == (
        "torchrun --nproc-per-node=gpu --nnodes=2 --node-rank=<node rank> --rdzv-backend=c10d"
        " --rdzv-endpoint=<master host>:<port> pretrain.py  # passes"
    )
    one_node = Launch("torchrun", None, "pretrain.py", 4, 4)
    assert fit("torchrun --nproc-per-node=<gpus> train.py", one_node) == (
        "torchrun --nproc-per-node=4 pretrain.py"
    )


def _watchdog(prefix: str, rank: int) -> str:
    return (
        f"{prefix}[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600412 "
        "milliseconds before timing out.\n"
    )


def test_more_ranks_than_one_node_holds_means_a_multi_node_rerun():
    from rootrank.engine import diagnose_text

    log = "".join(_watchdog(f"[rank{r}]:", r) for r in (3, 9, 12))
    verify = diagnose_text(log).root_cause.verify
    assert "--nnodes=<nodes> --node-rank=<node rank>" in verify
    assert "--rdzv-endpoint=<master host>:<port>" in verify


def test_a_vllm_job_is_verified_by_starting_the_engine_not_by_torchrun():
    from rootrank.engine import diagnose_text

    log = "".join(_watchdog(f"(RayWorkerVllm pid={4100 + r}) ", r) for r in (0, 1))
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "collective-timeout"
    assert "torchrun" not in rc.verify
    assert "from vllm import LLM; LLM('<model>', tensor_parallel_size=" in rc.verify


def test_an_nccl_tests_run_is_verified_by_its_own_benchmark_command():
    from rootrank.engine import diagnose_text

    log = (
        "$ mpirun -np 2 -H gpu-a:1,gpu-b:1 -x NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 4\n"
        "# nThread 1 nGpus 4 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
        "gpu-b:5120:5188 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.12<0>\n"
        "gpu-b:5120:5188 [0] include/socket.h:409 NCCL WARN Net : Connect to 10.1.0.11<51817> failed : No route to host\n"
        "gpu-b:5120:5188 [0] NCCL INFO transport/net_socket.cc:334 -> 2\n"
    )
    d = diagnose_text(log, mask=False)
    assert d.root_cause is not None
    # the entry's nccl-tests line becomes the one the log ran
    assert d.root_cause.verify.startswith(
        "mpirun -np 2 -H gpu-a:1,gpu-b:1 -x NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 4  # "
    )
    from rootrank.entry.commands import Launch, fit

    run = Launch(
        "nccl-tests", None, None, None, None, tool_command="all_reduce_perf -b 8 -e 1G -f 2 -g 4"
    )
    assert fit(
        "NCCL_DEBUG=WARN torchrun --nproc-per-node=<gpus> train.py  # no 'NCCL WARN'", run
    ) == ("NCCL_DEBUG=WARN all_reduce_perf -b 8 -e 1G -f 2 -g 4  # no 'NCCL WARN'")
    bare = Launch("nccl-tests", None, None, None, None)
    assert fit("NCCL_DEBUG=WARN torchrun --nnodes=<n> ...  # ok", bare) == (
        "NCCL_DEBUG=WARN all_reduce_perf -b 8 -e 128M -f 2 -g <gpus per process>  # ok"
    )


def test_the_scan_reads_a_printed_nccl_tests_command():
    from rootrank.scan import LaunchFacts

    facts = LaunchFacts()
    line = "$ mpirun -np 16 --hostfile hosts ./build/all_gather_perf -b 8 -e 8G -f 2 -g 1"
    facts.read(line, 1, line)
    assert "nccl-tests" in facts.launchers
    assert (
        facts.tool_command
        == "mpirun -np 16 --hostfile hosts ./build/all_gather_perf -b 8 -e 8G -f 2 -g 1"
    )


@pytest.mark.parametrize(
    "command",
    [
        "the Ray job completes with no SYSTEM_ERROR exits",
        "the step runs on MPS with the smaller batch",
    ],
)
def test_a_sentence_is_no_verification_command(command):
    assert "a sentence, not a command" in (cannot_fail(command) or "")


@pytest.mark.parametrize(
    "command",
    ["python train.py  # the Ray driver: exit 0", "make test", "pytest tests"],
)
def test_short_or_marked_commands_are_not_taken_for_sentences(command):
    assert cannot_fail(command) is None


# -- the verification runs the job the way the log shows it ran ----------------------------

# One process started by hand: no launcher, no rank, no distributed line (the kernel's record
# of the OOM kill and the shell's report, as dmesg and bash print them).
_ONE_PROCESS_KILLED = (
    "epoch 3:  41%|████      | 120/291 [02:11<03:07,  1.10s/it]\n"
    "[123456.789012] Out of memory: Killed process 40211 (python) total-vm:98123456kB,"
    " anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0\n"
    "Killed\n"
)

# torchrun's two workers: rank 1's traceback in the user's script (as torch 2.x prints it).
_TORCHRUN_CPU_OOM = (
    "W1204 10:00:00.000000 5120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment"
    " variable for each process to be 1 in default\n"
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/home/user/proj/build_cache.py", line 21, in <module>\n'
    "[rank1]:     cache = torch.empty(n_items, n_items, dtype=torch.float64)\n"
    "[rank1]: RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator:"
    " not enough memory: you tried to allocate 800000000000 bytes.\n"
    "E1204 10:00:03.000000 5120 torch/distributed/elastic/multiprocessing/api.py:869] failed"
    " (exitcode: 1) local_rank: 1 (pid: 5200) of binary: /usr/bin/python3\n"
)


def test_a_one_process_job_is_verified_with_python_not_torchrun():
    from rootrank.engine import diagnose_text

    rc = diagnose_text(_ONE_PROCESS_KILLED).root_cause
    assert rc is not None and rc.failure_class == "host-oom-killed"
    assert "torchrun" not in rc.verify
    # no launch in the log: the class's standalone check (r25d), which names no launcher
    assert rc.verify.startswith("dmesg -T | grep -iE 'killed process|out of memory'")


def test_a_torchrun_job_is_not_verified_with_one_python_process():
    from rootrank.engine import diagnose_text

    rc = diagnose_text(_TORCHRUN_CPU_OOM).root_cause
    assert rc is not None and rc.signature == "cpu-alloc-failed" and rc.rank == 1
    assert "torchrun --nproc-per-node=gpu build_cache.py" in rc.verify
    assert "python build_cache.py" not in rc.verify


def test_processes_of_reads_launchers_ranks_and_distributed_lines():
    from rootrank.entry.commands import Launch, fit

    one = Launch(None, None, "eval.py", None, None, processes="one")
    assert fit("/usr/bin/time -v torchrun ... 2>&1 | grep RSS", one) == (
        "/usr/bin/time -v python eval.py 2>&1 | grep RSS"
    )
    assert fit("torchrun --nproc-per-node=<gpus> train.py --x 1  # ok", one) == (
        "python eval.py --x 1  # ok"
    )
    several = Launch("torchrun", None, "eval.py", 4, 4, processes="several")
    assert fit("python train.py --steps 5  # ok", several, verify=True) == (
        "torchrun --nproc-per-node=4 eval.py --steps 5  # ok"
    )
    # a step (not the verification) may ask for one process on purpose (pdb, one GPU)
    assert fit("python train.py --steps 5", several) == "python eval.py --steps 5"
    # mp.spawn starts its workers from one python process: python is how it was run
    spawn = Launch("mp.spawn", None, "eval.py", None, 2, processes="several")
    assert fit("python train.py", spawn, verify=True) == "python eval.py"
