"""Issue 15, round 22c: the report points at the cause's own place and its first lines are
runnable and short.

- file:line: when the processes' tracebacks of one exception interleave, the copy the root
  cause's line belongs to may keep only ``<module>``; another copy of the same exception
  shows the user's deeper frame (rootrank.entry.frames.deeper_copy). When the failed
  allocation is a DeepSpeed config value, the fix opens with that key in the config file
  the launch passed (rootrank.entry.frames.setting_step).
- Verify: the user's wrapper on the launch line (``timeout 45 torchrun ...``) is kept and
  what the shell ran after it (``; echo ...``) is not (rootrank.scan.ENV_PREFIX,
  own_command); the config file fills ``<ds_config.json>``.
- Headline: the ``Fix:`` line is the first step cut to its location, cause and action
  (rootrank.headline).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.headline import LIMIT, headline
from rootrank.report import to_text
from rootrank.scan import _COMMAND, own_command

HERE = Path(__file__).parent / "r22c"


def _diagnose(name: str):
    return diagnose_text((HERE / name).read_text(), name, mask=False)


def test_interleaved_copy_with_only_module_frame_takes_the_deeper_copy():
    d = _diagnose("interleaved-copies-flash-attn.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.evidence[0].line == 12  # the copy that kept only <module> (line 140)
    assert (rc.user_frame.file, rc.user_frame.line, rc.user_frame.func) == (
        "/home/u/proj/run/finetune.py",
        71,
        "main",
    )
    assert rc.fix.steps[0].startswith("finetune.py:71 (in main), where")
    assert "  at /home/u/proj/run/finetune.py:71 · " in to_text(d)


def _zero_bucket_oom(command: bool) -> str:
    """DeepSpeed's runner line (when ``command``), its config dump, then one rank's OOM in
    ZeRO's reduce-bucket allocation of exactly reduce_bucket_size x 2 bytes."""
    p = "[rank1]:"
    lines = (
        [
            "[2026-12-01 09:59:58,000] [INFO] [runner.py:610:main] cmd = /opt/venv/bin/python3 -u"
            " -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMV19"
            " --master_addr=127.0.0.1 --master_port=29500 --enable_each_rank_log=None"
            " /home/u/proj/train.py --deepspeed_config /home/u/proj/configs/zero_1.json --steps 10",
        ]
        if command
        else []
    ) + [
        "[2026-12-01 10:00:01,000] [INFO] [config.py:1003:print]   json = {",
        '    "train_micro_batch_size_per_gpu": 1, ',
        '    "zero_optimization": {',
        '        "stage": 1, ',
        '        "reduce_bucket_size": 2.000000e+09, ',
        '        "allgather_bucket_size": 5.000000e+08',
        "    }",
        "}",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/u/proj/train.py", line 52, in <module>',
        f"{p}     engine.backward(loss)",
        f'{p}   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/zero/stage_1_and_2.py", line 2048, in backward_prologue',
        f"{p}     buf_1 = torch.empty(int(self.reduce_bucket_size),",
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.73 GiB. GPU 1 has a total"
        " capacity of 31.74 GiB of which 3.64 GiB is free.",
    ]
    return "\n".join(lines) + "\n"


def test_config_sized_oom_leads_with_the_config_key_in_the_launch_config_file():
    d = diagnose_text(_zero_bucket_oom(True), "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.fix.variant.id == "config-sized-buffer"
    assert rc.fix.steps[0].startswith(
        '/home/u/proj/configs/zero_1.json, key "reduce_bucket_size" (the log prints 2.000000e+09):'
    )
    assert rc.verify.startswith('grep -n "reduce_bucket_size" /home/u/proj/configs/zero_1.json && ')
    assert "<ds_config.json>" not in rc.verify
    fix_line = next(x for x in to_text(d).splitlines() if x.startswith("Fix: "))
    assert fix_line.startswith('Fix: /home/u/proj/configs/zero_1.json, key "reduce_bucket_size"')
    assert "Lower reduce_bucket_size in the DeepSpeed config" in fix_line


def test_config_sized_oom_without_a_config_file_names_the_key():
    d = diagnose_text(_zero_bucket_oom(False), "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None and rc.fix.variant.id == "config-sized-buffer"
    assert rc.fix.steps[0].startswith(
        'the DeepSpeed config\'s "reduce_bucket_size" (the log prints 2.000000e+09):'
    )


def test_verify_keeps_the_timeout_wrapper_and_drops_the_echo_after_it():
    d = _diagnose("timeout-wrapper-rank1-valueerror.log")
    rc = d.root_cause
    assert rc is not None and d.initiating_rank == 1
    assert (rc.user_frame.file, rc.user_frame.line) == ("/home/u/proj/src/train.py", 12)
    assert rc.verify.startswith(
        "timeout 45 torchrun --nproc-per-node=2 --log-dir logs --tee 3 src/train.py  # "
    )
    fix_line = next(x for x in to_text(d).splitlines() if x.startswith("Fix: "))
    assert fix_line == (
        'Fix: train.py:12 (in load_rows), where rank 1 raised ValueError: "could not convert'
        " string to float: '-0.41\\t1.208'\". Fix the input, argument or state it names, where"
        " your code raised it."
    )


def test_own_command_cuts_what_the_shell_runs_after_the_launch():
    m = _COMMAND.search('$ nice -n 5 timeout -s KILL 2h python x.py --a "b;c" && echo ok')
    assert m is not None
    assert own_command(m["cmd"]) == 'nice -n 5 timeout -s KILL 2h python x.py --a "b;c"'
    m = _COMMAND.search("$ python train.py --lr 3e-4 | tee run.log")
    assert m is not None and own_command(m["cmd"]) == "python train.py --lr 3e-4"


def test_headline_keeps_lead_cause_and_action():
    step = (
        "native.py:78 (in main), where the failing process was in init_process_group: "
        "Several processes each failed to bind port 29500. " + "Background. " * 30 + "The "
        "script does not read the rank its launcher gives it. Read RANK and WORLD_SIZE from "
        "the environment, or launch with mpirun. Another port fails the same way."
    )
    out = headline(step)
    assert len(out) <= LIMIT
    assert out == (
        "native.py:78 (in main), where the failing process was in init_process_group: The "
        "script does not read the rank its launcher gives it. Read RANK and WORLD_SIZE from "
        "the environment, or launch with mpirun."
    )


def test_headline_short_step_and_no_action():
    assert headline("Drain the node.") == "Drain the node."
    step = "The crash came early. " + "It came at import, where native code loads. " * 10
    out = headline(step)
    assert out.startswith("The crash came early. It came at import") and len(out) <= LIMIT


def test_a_sentence_end_inside_a_quoted_message_does_not_start_the_headline():
    # trial r22, finding 4: the headline began in the middle of CUDA's quoted OOM message
    step = (
        'The message itself says it: "Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 22.20 GiB '
        "of which 1.12 GiB is free. Of the allocated memory 19.13 GiB is allocated by PyTorch, "
        'and 1.69 GiB is reserved by PyTorch but unallocated.": PyTorch holds that memory '
        "reserved but unallocated (fragmentation). Launch with "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True first; that alone often lets the step "
        "through. " + "If it does not, lower the micro-batch size. " * 4
    )
    line = headline(step)
    assert not line.startswith("Of the allocated memory")
    assert line.startswith("PyTorch holds that memory reserved but unallocated (fragmentation).")
    assert "Launch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True first" in line
    assert len(line) <= LIMIT


def test_a_long_single_action_is_cut_at_a_word_with_an_ellipsis():
    # trial r22/r22b finding 4: one action sentence of ~600 characters was the whole headline
    step = (
        "Run the same collective with the plugin's settings changed one at a time, under the "
        "job's own launcher and environment: GPUDirect RDMA off (NCCL_NET_GDR_LEVEL=LOC), then "
        + "the plugin's version and its provider's variables from the log, "
        + "one setting per run and the rest as they were, " * 8
        + "until one passes."
    )
    line = headline(step)
    assert len(line) <= LIMIT + 1
    assert line.endswith("…")
    assert line.startswith("Run the same collective with the plugin's settings changed")
    assert not line[:-1].endswith((" ", ","))  # cut at a word, not inside one


def test_a_headline_a_little_over_the_limit_stays_whole():
    step = "Lower the micro-batch size " + "x" * (LIMIT - 10) + "."
    assert headline(step) == step
