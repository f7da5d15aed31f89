"""Verification commands this user can run (issue 15, round 19): the verification reuses the
launch the log itself shows, in preference to a generic torchrun line, and writes a blank only
for what the log does not show. One kind each:

1. An entry that writes the script as a blank (``python <train.py>``, ``accelerate launch
   <train.py>``) is filled like ``train.py``: with the script, launcher or framework entry the
   log shows (``commands.fit``).
2. The entry script's ``<module>`` frame in a traceback the log cuts (an excerpt that ends inside
   the next rank's traceback, or starts inside one) names the script (``entry_script``).
3. A network check written as nccl-tests (``mpirun -H <hostA>,<hostB> ./build/all_reduce_perf``)
   for a log that shows no nccl-tests is the job's own launch with ``NCCL_DEBUG=INFO``: the
   printed command, else the launcher and script the log shows (``job_network_check``); a log
   that ran nccl-tests keeps its own benchmark line.
4. An entry's elided ``torchrun ...`` (no script after it) is the job's launch.
5. horovodrun's own worker tag (``[1]<stderr>:``, Gloo mode) names horovodrun as the launcher.
6. A script whose argparse rejected the launcher's argument is rerun with its arguments.
7. A framework's dataset loader's missing file fills the ``ls -l`` check.

Fixtures (tests/r19_verify/): real runs on this machine (torch 2.13 CPU, gloo):
``zero-count-python-run.log`` (``python empty_split.py``, a DataLoader with drop_last and fewer
samples than one batch), ``torchrun-cut-module-frame.log`` (a contiguous part of ``torchrun
--nproc-per-node=2 shard_keys.py``: rank 1's traceback after its ``<module>`` frame, rank 0's cut
inside), ``launch-module-local-rank-argparse.log`` (``python -m torch.distributed.launch
--nproc_per_node=2 det_train.py det_cfg.py --launcher pytorch``, whose parser defines only
``--local_rank``). Written from the tools' own formats: ``hvd-gloo-tag-user-error.log``
(horovod/runner/common/util/safe_shell_exec.py forward_stream's ``[{rank}]<{prefix}>:`` tag,
gloo's ``gloo::IoException`` abort), ``srun-label-ibv-create-cq.log`` and
``printed-srun-socket-no-route.log`` (srun --label's ``N: `` task prefix and its ``srun: error:
HOST: task N:`` lines, NCCL's ``misc/ibvwrap.cc`` / ``misc/socket.cc`` WARN lines and torch's
``DistBackendError`` text), ``bootstrap-no-interface-cut.log`` (NCCL's ``bootstrap.cc`` WARN,
torchrun's ``[rank0]:`` prefix, the traceback cut inside).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.entry.commands import UNSHOWN_LAUNCH_NOTE, Launch, fit, job_network_check

HERE = Path(__file__).resolve().parent / "r19_verify"


def _verify(name: str) -> str:
    d = diagnose_text((HERE / name).read_text(), name, mask=False)
    assert d.root_cause is not None
    return d.root_cause.verify


# 1. an entry's script blank is filled like train.py


def test_script_blank_is_the_script_the_log_runs() -> None:
    assert _verify("zero-count-python-run.log") == (
        'python empty_split.py  # prints "len(train_loader)" above 0 and runs the first step'
    )


def test_script_blank_takes_the_launcher_and_framework_entry() -> None:
    accelerate = Launch("accelerate", None, "orpo_train.py", None, None)
    assert fit(
        "ACCELERATE_DEBUG_MODE=1 accelerate launch <train.py>  # ok", accelerate, verify=True
    ) == ("ACCELERATE_DEBUG_MODE=1 accelerate launch orpo_train.py  # ok")
    framework = Launch(
        None, None, None, None, None, entry="llamafactory-cli train <your config.yaml>"
    )
    assert fit(
        "ls -l a.json && torchrun --nproc-per-node=<gpus> <train.py>  # ok", framework, verify=True
    ) == ("ls -l a.json && llamafactory-cli train <your config.yaml>  # ok")


# 2. a cut traceback's <module> frame names the entry script


def test_cut_traceback_module_frame_names_the_script() -> None:
    assert _verify("torchrun-cut-module-frame.log") == (
        "torchrun --nproc-per-node=gpu shard_keys.py"
        "  # the same arguments: past the line that raised, no KeyError"
    )


# 3. nccl-tests only when the log shows them; else the job's own launch with NCCL_DEBUG=INFO


def test_network_check_without_nccl_tests_is_the_srun_job() -> None:
    assert _verify("srun-label-ibv-create-cq.log") == (
        "NCCL_DEBUG=INFO srun --ntasks=<np> python probe_ddp.py"
        "  # the job itself, launched as before (the log shows no nccl-tests):"
        " 'Init COMPLETE' on every rank, no 'Call to ibv_' WARN " + UNSHOWN_LAUNCH_NOTE
    )


def test_network_check_reruns_the_printed_command() -> None:
    assert _verify("printed-srun-socket-no-route.log") == (
        "NCCL_SOCKET_IFNAME=<iface> NCCL_DEBUG=INFO srun -u -l python probe_ddp.py --backend nccl"
        " --steps 20  # the job itself, launched as before (the log shows no nccl-tests):"
        " 'Init COMPLETE' on every rank, no 'NCCL WARN'"
    )


def test_job_network_check_keeps_the_runs_variables_and_prose() -> None:
    assert job_network_check(
        "NCCL_NET_GDR_LEVEL=LOC mpirun -H <hostA>,<hostB> ./build/all_reduce_perf -b 8 -e 1G"
        " -f 2 -g <gpus>  # exit 0, no 'NET/IB' WARN; then again without NCCL_NET_GDR_LEVEL"
    ) == (
        "NCCL_NET_GDR_LEVEL=LOC NCCL_DEBUG=INFO torchrun --nproc-per-node=<gpus> train.py"
        "  # the job itself, launched as before (the log shows no nccl-tests): 'Init COMPLETE'"
        " on every rank, no 'NET/IB' WARN, then again without NCCL_NET_GDR_LEVEL"
    )
    # a sentence about the benchmark, and a benchmark offered in the comment, stay as written
    prose = "all_reduce_perf over the same nodes with NCCL_DEBUG=INFO completes"
    assert job_network_check(prose) == prose
    other = "NCCL_P2P_DISABLE=1 torchrun --nproc-per-node=<n> train.py  # or: ./build/all_reduce_perf -g <n>"
    assert job_network_check(other) == other


def test_a_log_that_ran_nccl_tests_keeps_its_benchmark() -> None:
    run = Launch(
        "nccl-tests", None, None, None, None, tool_command="all_reduce_perf -b 8 -e 1G -g 8"
    )
    assert (
        fit(
            "mpirun -H <hostA>,<hostB> ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 8  # no WARN",
            run,
            verify=True,
        )
        == "all_reduce_perf -b 8 -e 1G -g 8  # no WARN"
    )


# 4. an elided torchrun is the job's launch


def test_elided_torchrun_is_the_jobs_launch() -> None:
    assert _verify("bootstrap-no-interface-cut.log") == (
        "NCCL_DEBUG=INFO torchrun --nproc-per-node=gpu train_seg.py 2>&1"
        " | grep -m1 'Bootstrap : Using'  # an interface is selected"
    )


# 5. horovodrun's worker tag


def test_horovodrun_tag_names_the_launcher() -> None:
    assert _verify("hvd-gloo-tag-user-error.log") == (
        "horovodrun -np <np> python train_hvd.py"
        "  # the same launch as the failed run: exit 0, past the step that raised"
    )


# 6. a script with a parser is rerun with its arguments


def test_argparse_rejected_local_rank_reruns_with_arguments() -> None:
    assert _verify("launch-module-local-rank-argparse.log") == (
        "torchrun --nproc-per-node=2 det_train.py <the same arguments>"
        '  # every worker starts: no "unrecognized arguments: --local-rank"'
    )


# 7. the loader's missing file fills the check


def test_framework_loader_missing_file_is_listed_and_the_framework_reruns() -> None:
    lines: list[str] = []
    root = "/srv/ft/LLaMA-Factory/src/llamafactory"
    for rank in (2, 0):
        p = f"[rank{rank}]:"
        lines += [
            f"{p} Traceback (most recent call last):",
            f'{p}   File "{root}/launcher.py", line 23, in <module>',
            f"{p}     launch()",
            f'{p}   File "{root}/data/loader.py", line 75, in _load_single_dataset',
            f'{p}     raise ValueError(f"File {{local_path}} not found.")',
            f"{p} ValueError: File data/caption_train.json not found.",
        ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "framework-data-file-not-found"
    assert d.root_cause.verify == (
        "ls -l data/caption_train.json && llamafactory-cli train <your config.yaml>"
        "  # the dataset loads on every rank: no 'not found' from the loader"
    )
    assert d.root_cause.confirm == [
        "ls -l data/caption_train.json  # on every node, from the job's working directory"
    ]


def test_relative_module_frame_keeps_the_path_the_command_typed() -> None:
    """Python before 3.9 prints the ``<module>`` frame's file as argv[0] was typed
    (``python scripts/pretrain.py`` from the repository root): the rerun names it so."""
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "scripts/pretrain.py", line 212, in <module>',
            "    main(cfg)",
            '  File "scripts/pretrain.py", line 140, in main',
            "    model = DDP(model, device_ids=[local_rank])",
            '  File "/opt/conda/lib/python3.8/site-packages/torch/nn/parallel/distributed.py",'
            " line 646, in __init__",
            "    _verify_param_shape_across_processes(self.process_group, parameters)",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for"
            " details), NCCL version 2.19.3",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed"
            " or device error. ",
            "Last error:",
            "socketStartConnect: Connect to 10.20.0.5<41233> failed : Connection refused",
        ]
    )
    d = diagnose_text(log + "\n", "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.verify == (
        "NCCL_SOCKET_IFNAME=<iface> NCCL_DEBUG=INFO torchrun --nproc-per-node=gpu"
        " scripts/pretrain.py  # the job itself, launched as before (the log shows no"
        " nccl-tests): 'Init COMPLETE' on every rank, no 'NCCL WARN'"
    )
