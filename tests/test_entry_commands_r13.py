"""A verification the user can run as written (issue 15, round 13): the log's own launch
command whatever started the job (a framework's shell script or CLI, ``composer x.py a.yaml``,
variables and a wrapper before it), and, with no command printed, the entry point of the
framework whose code the traceback runs through (LLaMA-Factory, torchtitan, OpenRLHF), or
the launcher whose own line the log shows (Lightning's child-process observer); never a
``torchrun ... <train.py>`` template for a job that another entry point started.

The lines are written from what the tools print: torchtitan's ``run_train.sh`` reads ``NGPU``
and ``CONFIG_FILE`` (torchtitan/run_train.sh), composer's launcher logs "Rank N crashed with
exit code C." (composer/cli/launcher.py), Lightning's ``_ChildProcessObserver`` prints
"[rank: N] Child process with PID P terminated with code C. Forcefully terminating all other
processes to avoid zombies" (lightning/fabric/strategies/launchers/subprocess_script.py),
NCCL's shared-memory and system errors are torch's ``DistBackendError`` texts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_text
from rootrank.scan import LaunchFacts

HERE = Path(__file__).resolve().parent / "fix_variants"

IMA = (
    "[rank0]:[E128 13:23:00.788972321 ProcessGroupNCCL.cpp:1897] [PG ID 0 PG GUID 0(default_pg)"
    " Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal"
    " memory access was encountered\n"
)
SHM_BARRIER = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/opt/LLaMA-Factory/src/llamafactory/launcher.py", line 23, in <module>
[rank1]:     launch()
[rank1]:   File "/opt/LLaMA-Factory/src/llamafactory/train/tuner.py", line 92, in run_exp
[rank1]:     _training_function(config={"args": args, "callbacks": callbacks})
[rank1]:   File "/opt/conda/lib/python3.11/site-packages/transformers/training_args.py", line 2496, in main_process_first
[rank1]:     dist.barrier()
[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4551, in barrier
[rank1]:     work = group.barrier(opts=opts)
[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
[rank1]: Last error:
[rank1]: Error while creating shared memory segment /dev/shm/nccl-Qx81aB (size 9637888)
"""


@pytest.mark.parametrize(
    ("line", "command"),
    [
        # a framework's shell script, with the variables it reads and a site's wrapper before
        (
            '(venv) [user@node01 ~/torchtitan (main)]$ with-proxy CONFIG_FILE="./train_configs/debug_model.toml" NGPU=2 ./run_llama_train.sh',
            'with-proxy CONFIG_FILE="./train_configs/debug_model.toml" NGPU=2 ./run_llama_train.sh',
        ),
        ("+ bash scripts/pretrain_gpt.sh 8", "bash scripts/pretrain_gpt.sh 8"),
        (
            "root@node01:/app# llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml",
            "llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml",
        ),
        # variables before a launcher belong to the command
        (
            "$ CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node=2 train.py --lr 1",
            "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node=2 train.py --lr 1",
        ),
        # a shell's own error about a script is no command; nor is a script named in passing
        ("/opt/app/setup.sh: line 3: foo: command not found", None),
        ("see ./run_train.sh for the options", None),
    ],
)
def test_the_command_the_shell_typed_is_read_whole(line, command):
    facts = LaunchFacts()
    facts.read(line, 1)
    assert facts.command == command


def test_rootrank_run_keeps_the_variables_before_the_launcher():
    facts = LaunchFacts()
    assert facts.ran("env NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1 python x.py --steps 3")
    assert facts.command == "env NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1 python x.py --steps 3"
    assert facts.script == "x.py"
    assert facts.launchers == {"python"}
    assert not LaunchFacts().ran("bash launch.sh")


def test_a_framework_shell_script_is_rerun_as_typed():
    log = "[user@node01 torchtitan]$ NGPU=2 CONFIG_FILE=./train_configs/debug_model.toml ./run_train.sh\n"
    rc = diagnose_text(log + IMA).root_cause
    assert rc.signature == "cuda-illegal-memory-access"
    assert rc.verify.startswith(
        "CUDA_LAUNCH_BLOCKING=1 NGPU=2 CONFIG_FILE=./train_configs/debug_model.toml ./run_train.sh  #"
    )
    assert "<train.py>" not in rc.verify and "torchrun" not in rc.verify


def test_composers_sigbus_exit_leads_with_shared_memory():
    log = (
        "root@node01:/llm-foundry/scripts/train# composer train.py yamls/finetune/gpt2-arc.yaml\n"
        "Building trainer...\n"
        "ERROR:composer.cli.launcher:Rank 2 crashed with exit code -7.\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.rank == 2
    # -7 is SIGBUS whatever launcher reports it (rootrank.analysis.signal_exit): /dev/shm
    # first, not a faulthandler rerun; its check is /dev/shm's free space
    assert rc.signature == "worker-sigbus-exit"
    assert "--ipc=host" in rc.fix.steps[0]
    # the verify is the user's launch (trial r24 finding 5); /dev/shm is what decides the cause
    assert rc.verify.startswith("composer train.py yamls/finetune/gpt2-arc.yaml  # ")
    assert "df -h /dev/shm" in rc.fix.steps[0]


def test_a_llamafactory_job_is_verified_with_its_cli():
    rc = diagnose_text(SHM_BARRIER).root_cause
    assert rc.signature == "nccl-shm-no-space"
    assert "llamafactory-cli train <your config.yaml>  #" in rc.verify
    assert "torchrun" not in rc.verify


def test_an_openrlhf_ray_job_is_verified_with_its_module():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/workdir/openrlhf/cli/train_ppo_ray.py", line 417, in <module>\n'
        "    train(args)\n"
        '  File "/workdir/openrlhf/cli/train_ppo_ray.py", line 171, in train\n'
        "    ray.get(refs)\n"
        "[rank6]:[E1224 23:47:14.381 ProcessGroupNCCL.cpp:632] [Rank 6] Watchdog caught collective"
        " operation timeout: WorkNCCL(SeqNum=970, OpType=_ALLGATHER_BASE, NumelIn=4718592,"
        " NumelOut=75497472, Timeout(ms)=1800000) ran for 1800076 milliseconds before timing out.\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "collective-timeout"
    assert "python3 -m openrlhf.cli.train_ppo_ray <your arguments>  #" in rc.verify
    assert "torchrun" not in rc.verify


def test_a_torchtitan_job_is_verified_with_run_train_sh():
    log = (
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-06-29_14:19:03\n"
        "  host      : node01\n"
        "  rank      : 7 (local_rank: 7)\n"
        "  exitcode  : 1 (pid: 297621)\n"
        "  error_file: /tmp/torchelastic_x/none_y/attempt_0/7/error.json\n"
        "  traceback : Traceback (most recent call last):\n"
        '    File "/home/user/torchtitan/torchtitan/trainer.py", line 894, in train\n'
        "      self.train_step(data_iterator)\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.rank == 7
    assert rc.verify.startswith("NGPU=<gpus> CONFIG_FILE=<your config .toml> ./run_train.sh  #")


def test_lightnings_child_process_observer_names_its_launcher():
    facts = LaunchFacts()
    facts.read(
        "[rank: 7] Child process with PID 37032 terminated with code 1. Forcefully terminating"
        " all other processes to avoid zombies \N{ZOMBIE}",
        1,
    )
    assert facts.launchers == {"lightning"}


def test_an_engines_check_replaces_a_multi_node_torchrun_template():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/sglang/srt/distributed/device_communicators/pynccl.py", line 108, in __init__\n'
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"
        '  File "/opt/venv/lib/python3.10/site-packages/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 329, in NCCL_CHECK\n'
        '    raise RuntimeError(f"NCCL error: {error_str}")\n'
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "nccl-unhandled-system-error"
    # no script calling sgl.Engine in the log: SGLang ran as its server, started as its users
    # start it (python -m sglang.launch_server), and the check is that server coming up
    assert rc.verify.startswith(
        "NCCL_DEBUG=WARN python -m sglang.launch_server --model-path <model>"
    )
    assert "fired up and ready to roll" in rc.verify
    assert "torchrun" not in rc.verify


def test_a_name_taken_in_dev_shm_is_a_stale_segment_not_a_bad_record():
    log = (HERE / "user-code-exception" / "stale-shared-memory.log").read_text()
    rc = diagnose_text(log).root_cause
    assert rc.signature == "user-code-exception" and rc.rank == 3
    assert rc.fix.variant is not None and rc.fix.variant.id == "stale-shared-memory"
    assert "'/000004_locals'" in rc.fix.steps[0]
    assert "clean_stale_shared_memory()" in rc.fix.steps[0]
    # a directory that exists is another FileExistsError: not a shared-memory segment
    other = (
        "Traceback (most recent call last):\n"
        '  File "/home/pat/run/train.py", line 12, in <module>\n'
        "    os.makedirs(args.out)\n"
        '  File "/usr/lib/python3.10/os.py", line 225, in makedirs\n'
        "    mkdir(name, mode)\n"
        "FileExistsError: [Errno 17] File exists: 'out/run1'\n"
    )
    rc = diagnose_text(other).root_cause
    assert rc.signature == "user-code-exception"
    assert rc.fix.variant is not None and rc.fix.variant.id == "general"


def test_a_refused_connection_inside_one_nodes_spawn_is_the_socket_interface():
    log = (HERE / "nccl-socket-connect-failed" / "refused-one-node.log").read_text()
    rc = diagnose_text(log).root_cause
    assert rc.fix.variant is not None and rc.fix.variant.id == "refused-one-node"
    assert "NCCL_SOCKET_IFNAME=<iface>" in rc.fix.steps[0]
    assert rc.verify.startswith("NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=<iface> python main.py")
    # the same refusal in a job the log shows on two nodes: the peer may have died first
    rc = diagnose_text("Starting node_rank=1 of nnodes=2\n" + log).root_cause
    assert rc.fix.variant is not None and rc.fix.variant.id == "refused"


def test_a_script_that_spawns_its_own_workers_is_told_to_use_one_launcher():
    log = (HERE / "nccl-invalid-usage" / "self-spawning-script.log").read_text()
    rc = diagnose_text(log).root_cause
    assert rc.signature == "nccl-invalid-usage"
    assert rc.fix.variant is not None and rc.fix.variant.id == "self-spawning-script"
    assert "Use one launcher" in rc.fix.steps[0]
    assert rc.verify.startswith("NCCL_DEBUG=WARN python train_mt.py")


def test_a_rankless_traceback_at_the_root_line_gives_the_users_line():
    # a worker's traceback printed with no rank prefix; torchrun's summary names the rank
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/pat/t5/pretrain.py", line 150, in <module>\n'
        "    trainer.train()\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/_utils.py", line 457, in reraise\n'
        "    raise exception\n"
        "IndexError: Caught IndexError in DataLoader worker process 3.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/utils/data/_utils/fetch.py", line 49, in <listcomp>\n'
        "    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
        '  File "/home/pat/t5/pretrain.py", line 35, in __getitem__\n'
        "    noised_text = fields[1]\n"
        "IndexError: list index out of range\n"
        "\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 4"
        " (pid: 24321) of binary: /opt/conda/bin/python\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2022-07-11_09:56:03\n"
        "  host      : node01\n"
        "  rank      : 4 (local_rank: 4)\n"
        "  exitcode  : 1 (pid: 24321)\n"
        "  error_file: <N/A>\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "user-code-exception" and rc.rank == 4
    assert rc.user_frame is not None
    assert (rc.user_frame.file.rsplit("/", 1)[-1], rc.user_frame.line) == ("pretrain.py", 35)
    assert rc.fix.steps[0].startswith("pretrain.py:35 (in __getitem__), where rank 4 raised")


def test_a_users_script_that_imports_a_framework_keeps_its_own_launch():
    # torchtitan used as a library by the user's own script: torchrun runs that script
    log = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/pat/my_pretrain.py", line 40, in <module>\n'
        "[rank1]:     loss = step(model, batch)\n"
        '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torchtitan/models/llama3/model.py", line 48, in forward\n'
        "[rank1]:     h = x + self.attention(x)\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
        " total capacity of 79.15 GiB of which 1.21 GiB is free.\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "my_pretrain.py FAILED\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "cuda-oom"
    assert "torchrun --nproc-per-node=gpu my_pretrain.py" in rc.verify
    assert "run_train.sh" not in rc.verify


def test_a_port_clash_fragment_is_no_one_process_run():
    """Two pasted lines, no launcher: a TCPStore that cannot bind its port belongs to a
    process group (port-in-use is a class of several processes), so the fix and verify keep
    the launcher's words; and 'torchrun' in prose is never rewritten as a command."""
    log = (
        "    store = TCPStore(master_addr, master_port, world_size, start_daemon, timeout)\n"
        "RuntimeError: Address already in use\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "port-in-use"
    assert rc.verify.startswith("torchrun --nproc-per-node=gpu --master-port=")
    assert "python train.py pick" not in " ".join(rc.fix.steps)
    assert "to let torchrun pick one" in rc.fix.steps[0]


def test_an_mpirun_command_line_is_the_jobs_verify_and_gpu0_pairs_get_set_device():
    """An ``mpirun ... python x.py`` line printed with no prompt is the job's command (the
    gate reads MPI launch lines), so the verify reruns it, not ``python <train.py>``; and a
    device mismatch that pairs cuda:0 with another GPU gets the set_device variant."""
    log = (
        "mpirun -np 4 python /opt/proj/tools/train.py configs/det.py --launcher mpi\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two"
        " devices, cuda:0 and cuda:3! (when checking argument for argument weight in method"
        " wrapper_CUDA__cudnn_convolution)\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.signature == "device-mismatch"
    assert rc.fix.variant is not None and rc.fix.variant.id == "every-process-on-gpu0"
    assert "torch.cuda.set_device(local_rank)" in rc.fix.steps[0]
    assert rc.verify.startswith(
        "mpirun -np 4 python /opt/proj/tools/train.py configs/det.py --launcher mpi  #"
    )


def test_a_ray_train_job_is_verified_with_its_driver_script_not_torchrun():
    """Ray Train (RaySGD before it) runs the driver script with python and starts the
    workers as Ray actors: an entry's torchrun, even its multi-node form, becomes python."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/ray/train/_internal/worker_group.py",'
        " line 33, in __execute\n"
        "    raise skipped from exception_cause(skipped)\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/distributed.py",'
        " line 798, in __init__\n"
        "    _verify_param_shape_across_processes(self.process_group, parameters)\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details),"
        " NCCL version 2.20.5\n"
    )
    rc = diagnose_text(log).root_cause
    assert rc.failure_class == "nccl-system-error"
    assert "torchrun" not in rc.verify
    # the driver script is not in the log: the class's standalone check (r25d)
    assert rc.verify.startswith('python -c "import torch; print(torch.__version__')
