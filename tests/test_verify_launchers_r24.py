"""Round 24, verify helper: a verification command runs the job the way the log shows it
was started, and runs it with the setting the fix is about.

- The launcher and script come from what the log gives: a command typed at a prompt (``$
  python train.py``, after variables too; a framework's own CLI such as ``nemo llm
  finetune`` or ``swift sft``), a launcher's module path in a traceback
  (torch/multiprocessing/spawn.py, accelerate/commands/launch.py,
  deepspeed/launcher/runner.py). The typed script is the entry, not the script of a
  subprocess whose traceback comes first.
- An entry's ``torchrun --log-dir DIR ...`` (a flag with its value after a space) becomes
  the launcher the log shows as a whole.
- A variable the check sets or unsets is not set again by the printed command written after
  it (``env -u GLOO_SOCKET_IFNAME`` then ``GLOO_SOCKET_IFNAME=bad torchrun ...``).
- A check that imports a name from the user's script names only what the log shows of it.
- A traceback cut above the entry's ``main`` (Hydra prints it from the task function on)
  names ``main``'s file as the script.

Fixtures: real runs of torch 2.13's CPU build (gloo) in tests/r24_verify (the scripts beside
them as ``*.py.txt``, the prompt line as the terminal shows it), and launch lines written in
the launchers' own forms with our own values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths, diagnose_text
from rootrank.entry.commands import UNSHOWN_LAUNCH_NOTE, Launch, check_settings_win, ready

HERE = Path(__file__).parent / "r24_verify"


def _verify(path: Path) -> tuple[str, str]:
    rc = diagnose_paths([str(path)], mask=False).root_cause
    assert rc is not None
    return rc.failure_class, rc.verify


def test_mp_spawn_job_is_rerun_with_the_typed_script_not_a_subprocess_script():
    # rank 1's subprocess (tools/count_tokens.py) raised first; the job is `python train.py`
    cls, verify = _verify(HERE / "mp-spawn-subprocess-script.log")
    assert cls == "user-code-exception"
    assert verify.split("  # ")[0] == "python train.py"


def test_mp_spawn_job_is_not_rerun_under_torchrun_with_log_dir_flags():
    # the SIGPIPE death is read as the rank's own (worker-sigpipe-exit), and its verify is
    # still the typed launch
    cls, verify = _verify(HERE / "mp-spawn-sigpipe.log")
    assert cls == "user-code-exception"
    assert verify.split("  # ")[0] == "python train.py"


def test_the_check_does_not_set_the_interface_that_was_missing_again():
    cls, verify = _verify(HERE / "gloo-ifname-missing.log")
    assert cls == "network-fabric-error"
    assert verify == (
        "env -u GLOO_SOCKET_IFNAME torchrun --nproc-per-node=2 --master-port=29617 train.py"
        "  # gloo groups initialize on every node, no 'Unable to find address for: enp9s0'"
    )


_OOM = [
    "step 40 loss 1.9027",
    "[rank2]: Traceback (most recent call last):",
    '[rank2]:   File "/srv/lab/sft_run.py", line 120, in <module>',
    "[rank2]:     main()",
    '[rank2]:   File "/srv/lab/sft_run.py", line 97, in main',
    "[rank2]:     out = model(**batch)",
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 2"
    " has a total capacity of 39.38 GiB of which 812.00 MiB is free. Including non-PyTorch"
    " memory, this process has 38.57 GiB memory in use. Of the allocated memory 36.90 GiB is"
    " allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated.",
]
_OOM_CHECK = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
_OOM_NOTE = "  # run past the failing step; no OutOfMemoryError on any rank"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("$ accelerate launch --num_processes 8 sft_run.py --lr 1e-5", None),
        ("$ deepspeed --hostfile hosts.txt sft_run.py --deepspeed zero2.json", None),
        ("$ mpiexec -n 16 --ppn 4 python sft_run.py", None),  # PBS (PALS mpiexec)
        ("$ srun --ntasks=16 python sft_run.py", None),
        ("$ nemo llm finetune --factory llama31_8b trainer.max_steps=50", None),
        ("$ NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-1.5B --dataset sft.jsonl", None),
        ("$ CUDA_VISIBLE_DEVICES=0,1,2,3 python sft_run.py --epochs 2", None),
        # GPT-NeoX's launcher script names a train.py of its own: kept as typed
        ("$ python ./deepy.py train.py -d configs small.yml setup.yml", None),
    ],
)
def test_the_typed_launch_is_the_check(typed, expected):
    rc = diagnose_text("\n".join([typed, *_OOM]) + "\n").root_cause
    assert rc is not None and rc.failure_class == "cuda-oom"
    assert rc.verify == _OOM_CHECK + (expected or typed[2:]) + _OOM_NOTE


_ACCELERATE_TB = [
    "Traceback (most recent call last):",
    '  File "/srv/lab/env/bin/accelerate", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/srv/lab/env/lib/python3.11/site-packages/accelerate/commands/accelerate_cli.py",'
    " line 50, in main",
    "    args.func(args)",
    '  File "/srv/lab/env/lib/python3.11/site-packages/accelerate/commands/launch.py",'
    " line 1182, in launch_command",
    "    multi_gpu_launcher(args)",
]
_DEEPSPEED_TB = [
    "Traceback (most recent call last):",
    '  File "/srv/lab/env/bin/deepspeed", line 6, in <module>',
    "    main()",
    '  File "/srv/lab/env/lib/python3.11/site-packages/deepspeed/launcher/runner.py",'
    " line 611, in main",
    "    result.wait()",
]


@pytest.mark.parametrize(
    ("launcher_lines", "expected"),
    [
        (_ACCELERATE_TB, "accelerate launch --num_processes <gpus> sft_run.py"),
        (_DEEPSPEED_TB, "deepspeed sft_run.py"),
    ],
)
def test_a_launchers_own_frames_name_the_launcher(launcher_lines, expected):
    rc = diagnose_text("\n".join([*_OOM, *launcher_lines]) + "\n").root_cause
    assert rc is not None and rc.failure_class == "cuda-oom"
    # the frames name the launcher and the script, not the arguments: resubmit as it was started
    assert rc.verify == _OOM_CHECK + expected + _OOM_NOTE + " " + UNSHOWN_LAUNCH_NOTE


def test_the_checks_own_setting_wins_over_the_printed_commands():
    assert check_settings_win(
        "NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_P2P_DISABLE=0 torchrun x.py  # A=1 A=2"
    ) == ("NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO torchrun x.py  # A=1 A=2")
    assert check_settings_win("env -u X X=bad python x.py") == "env -u X python x.py"
    assert check_settings_win("A=1 python x.py --b=2") == "A=1 python x.py --b=2"


def test_a_name_the_users_script_is_not_shown_to_have_is_a_blank():
    launch = Launch(
        None, None, None, None, None, frozenset({"train.py"}), names=frozenset({"batches"})
    )
    command = 'python -c "from train import loader; next(iter(loader))"  # one batch'
    assert ready(command, launch) == (
        'python -c "from train import <loader>; next(iter(<loader>))"  # one batch'
    )
    shown = Launch(
        None, None, None, None, None, frozenset({"train.py"}), names=frozenset({"loader"})
    )
    assert ready(command, shown) == command


_CUT_AT_MAIN = [
    "[rank3]: Traceback (most recent call last):",
    '[rank3]:   File "/srv/lab/recipes/pretrain_gpt.py", line 58, in main',
    "[rank3]:     trainer.fit(model)",
    '[rank3]:   File "/srv/lab/env/lib/python3.11/site-packages/lightning/pytorch/trainer/'
    'trainer.py", line 561, in fit',
    "[rank3]:     call._call_and_handle_interrupt(",
    "[rank3]: ValueError: tokenizer vocab_size 50257 does not match the checkpoint's 50304",
]


def test_a_traceback_cut_above_main_names_mains_file_as_the_script():
    # Hydra prints the traceback from the task function on; a paste may start there too
    rc = diagnose_text("\n".join(_CUT_AT_MAIN) + "\n").root_cause
    assert rc is not None
    # (Lightning's Trainer starts the other ranks from ``python script.py``)
    assert rc.verify.split("  # ")[0] == "python pretrain_gpt.py"


def test_a_traceback_that_starts_in_another_function_names_no_script():
    lines = [line.replace(", in main", ", in forward") for line in _CUT_AT_MAIN]
    rc = diagnose_text("\n".join(lines) + "\n").root_cause
    assert rc is not None
    assert "pretrain_gpt.py" not in rc.verify.split("  # ")[0]
