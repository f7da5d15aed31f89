"""Fixes and verifications that work as written (issue 15, round 16): the kinds of "no" the
r14c/r15b/r15c development sets still showed, each on text in the tools' real shape (Python's
``threading``/``multiprocessing`` tracebacks, faulthandler's crash stack, torch's messages):

V. a verification needs the entry script and the launcher the log shows. A thread's or a
   ``multiprocessing.Process``'s traceback has no ``<module>`` frame (it starts in the
   standard library's bootstrap): when every user frame of the log is in one ``.py`` file,
   that file is the entry script. A ``Process`` target in the user's code (the frame right
   under ``multiprocessing/process.py`` ``run``) means the script starts its own processes:
   it is rerun with ``python``, as ``mp.spawn`` scripts are, not a torchrun template.
E. a segfault whose faulthandler stack ends in ctypes' ``string_at``/``memmove`` called from
   the user's code is the user's raw memory access, not an extension to rebuild.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import default_library, diagnose_text, matcher_for
from rootrank.ingest import text_blocks
from rootrank.scan import Scanner

# -- V ------------------------------------------------------------------------------------

THREAD_DIED = """\
[r0] step 1 loss 0.512
[r1] step 1 loss 0.498
Exception in thread loader:
Traceback (most recent call last):
  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner
    self.run()
  File "/usr/lib/python3.11/threading.py", line 982, in run
    self._target(*self._args, **self._kwargs)
  File "/srv/job/pretrain.py", line 31, in loader
    for rec in parse(path):
  File "/srv/job/pretrain.py", line 22, in parse
    raise ValueError(f"truncated record at byte {off} in {path}")
ValueError: truncated record at byte 4096 in data/part-7.bin
[r0] step 2 loss 0.401
"""


def test_v_a_thread_traceback_names_the_entry_script():
    d = diagnose_text(THREAD_DIED, mask=False)
    rc = d.root_cause
    assert rc is not None and rc.fix.steps[0].startswith("pretrain.py:22 (in parse)")
    assert "pretrain.py" in rc.verify and "<train.py>" not in rc.verify


def test_v_two_user_files_and_no_module_frame_name_no_script():
    # the thread's target lives in one file, the failing helper in another: neither is
    # known to be the script the user ran
    text = THREAD_DIED.replace(
        '"/srv/job/pretrain.py", line 22, in parse', '"/srv/job/records.py", line 22, in parse'
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert rc is not None and "pretrain.py" not in rc.verify
    assert "<train.py>" in rc.verify


PROCESS_TARGET = """\
it 3 loss 0.41
Fatal Python error: Segmentation fault

Current thread 0x00007f11c2d4e740 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/srv/job/decode_train.py", line 14 in unpack
  File "/srv/job/decode_train.py", line 40 in trainer
  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314 in _bootstrap
  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122 in spawn_main
  File "<string>", line 1 in <module>

Extension modules: torch._C (total: 1)
Process trainer-0:
Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
  File "/usr/lib/python3.11/multiprocessing/process.py", line 108, in run
    self._target(*self._args, **self._kwargs)
  File "/srv/job/decode_train.py", line 46, in trainer
    dist.all_reduce(p.grad)
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
    work.wait()
RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:40112
"""


def test_v_a_process_target_in_user_code_reruns_the_script_with_python():
    rc = diagnose_text(PROCESS_TARGET, mask=False).root_cause
    assert rc is not None and rc.signature == "worker-segfault"
    assert rc.verify.startswith("PYTHONFAULTHANDLER=1 python decode_train.py")
    assert "torchrun" not in rc.verify


def _launchers(text: str) -> set[str]:
    scanner = Scanner(matcher_for(default_library()))
    scanner.scan_source("job.log", text_blocks(text))
    return scanner.state.launch.launchers


def test_v_a_dataloader_worker_stack_is_no_own_process():
    assert _launchers(PROCESS_TARGET) == {"mp.spawn"}
    # a DataLoader worker's target is torch's _worker_loop, not the user's code: the
    # script did not start that process itself
    worker = PROCESS_TARGET.replace(
        '  File "/srv/job/decode_train.py", line 40 in trainer\n',
        '  File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 309'
        " in _worker_loop\n",
    ).split("Process trainer-0:")[0]
    assert "mp.spawn" not in _launchers(worker)


# -- E ------------------------------------------------------------------------------------


def test_e_a_ctypes_read_in_user_code_is_not_an_extension_to_rebuild():
    rc = diagnose_text(PROCESS_TARGET, mask=False).root_cause
    assert rc.fix.variant is not None and rc.fix.variant.id == "own-ctypes-call"
    assert rc.fix.steps[0].startswith("decode_train.py:14 (in unpack)")
    assert "Rebuild/reinstall" not in rc.fix.steps[0]


def test_e_a_segfault_with_no_ctypes_frame_keeps_the_general_fix():
    text = PROCESS_TARGET.replace(
        '  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at\n', ""
    )
    rc = diagnose_text(text, mask=False).root_cause
    assert rc.fix.variant is not None and rc.fix.variant.id != "own-ctypes-call"


# -- V: the path the exception names fills <output_dir> / <path> ----------------------------

PERMISSION = """\
[rank2]: Traceback (most recent call last):
[rank2]:   File "/srv/job/train.py", line 60, in <module>
[rank2]:     save_shard(state, step)
[rank2]:   File "/srv/job/train.py", line 21, in save_shard
[rank2]:     torch.save(state, tmp)
[rank2]: PermissionError: [Errno 13] Permission denied: 'out/shards/rank2/step8.pt.tmp'
"""


def test_v_the_denied_path_fills_the_verify_and_confirm_blanks():
    rc = diagnose_text(PERMISSION, mask=False).root_cause
    assert rc is not None and rc.signature == "permission-denied"
    assert rc.verify.startswith("touch out/shards/rank2/.ok && ")
    assert "<output_dir>" not in rc.verify
    assert any("ls -ld out/shards/rank2/step8.pt.tmp" in c for c in rc.confirm)


def test_v_path_blanks_quote_what_a_shell_would_split():
    from rootrank.entry.commands import fill_path_blanks

    assert fill_path_blanks("touch <output_dir>/.ok", "run 1/ckpt.pt") == "touch 'run 1'/.ok"
    assert fill_path_blanks("df -h <output_dir>", "ckpt.pt") == "df -h ."
    assert fill_path_blanks("df -h <output_dir>", "/ckpt.pt") == "df -h /"
    # a masked or missing path leaves the blank for the user
    assert fill_path_blanks("df -h <output_dir>", "/home/<user>/x.pt") == "df -h <output_dir>"
    assert fill_path_blanks("df -h <output_dir>", None) == "df -h <output_dir>"


# -- B: a custom autograd Function's backward -------------------------------------------------


def test_b_custom_backward_names_the_users_backward():
    from rootrank.entry.variants import custom_backward

    frames = [
        {"file": "/w/train.py", "line": 40, "func": "main", "user": True},
        {"file": "/v/site-packages/torch/autograd/function.py", "line": 307, "func": "apply"},
        {"file": "/w/ops.py", "line": 17, "func": "backward", "user": True},
    ]
    assert custom_backward(frames) == "ops.py:17 (backward)"
    # a library's Function (flash-attn's backward in site-packages) is not the user's
    library = [*frames[:2], {"file": "/v/site-packages/flash_attn/fa.py", "func": "backward"}]
    assert custom_backward(library) is None
    # a user's backward that autograd did not call through Function.apply (a trainer method)
    assert custom_backward([frames[0], frames[2]]) is None


def test_b_the_custom_backward_variant_quotes_the_message_at_the_users_line():
    text = (
        Path(__file__).resolve().parent / "fix_variants/shape-mismatch/custom-backward.log"
    ).read_text()
    rc = diagnose_text(text, mask=False).root_cause
    assert rc.rank == 1
    assert rc.fix.variant.id == "custom-backward"
    assert rc.fix.steps[0].startswith("fused.py:42 (in backward)")
    assert "shape '[-1, 4, 16]' is invalid for input of size 1000" in rc.fix.steps[0]
    assert "gradcheck" in rc.fix.steps[1]


# -- D: a skipped step in JSON progress records ------------------------------------------------


def test_d_json_records_give_their_step_and_rank():
    from rootrank.progress import read_step
    from rootrank.scan import body_rank

    line = '{"rank": 2, "step": 7, "loss": 0.12978}'
    assert read_step(line) == (7, None, "plain")
    assert body_rank(line) == 2
    assert read_step('{"step": 1, "loss": 0.057}') == (1, None, "plain")
    # a config dump's settings are no progress; two records glued on one line name no rank
    assert read_step('"max_steps": 100,') is None
    assert body_rank('{"rank": 2, "step": 7}{"rank": 1, "step": 7}') is None


def test_d_the_rank_that_skipped_a_step_is_named_with_its_step():
    text = (
        Path(__file__).resolve().parent / "fix_variants/gloo-size-mismatch/skipped-step.log"
    ).read_text()
    d = diagnose_text(text, mask=False)
    assert d.initiating_rank == 1
    rc = d.root_cause
    assert rc.fix.variant.id == "skipped-step"
    assert "rank 1's own progress skips step 5" in rc.fix.steps[0]
    assert "all_reduce the flag" in rc.fix.steps[0]


def test_d_byte_counts_twice_apart_ask_for_the_dtype():
    text = (
        Path(__file__).resolve().parent / "fix_variants/gloo-size-mismatch/dtype-width.log"
    ).read_text()
    rc = diagnose_text(text, mask=False).root_cause
    assert rc.fix.variant.id == "dtype-width"
    assert "(24 vs 12)" in rc.fix.steps[0] and "t.dtype and t.numel()" in rc.fix.steps[0]


# -- H: a hang whose log names no rank: what the log shows and the one look that decides --------


def test_h_last_steps_says_what_the_log_shows():
    from rootrank.entry.hang_capture import last_steps
    from rootrank.progress import Progress

    def at(rank, step, line):
        return Progress(rank, step, None, None, "x.log", line, "plain")

    assert last_steps({}) == "the log prints no per-rank step to compare"
    assert last_steps({0: at(0, 12, 9), 1: at(1, 12, 10)}) == "every rank printed step 12 last"
    behind = {0: at(0, 12, 9), 1: at(1, 12, 10), 2: at(2, 11, 7), 3: at(3, 12, 11)}
    assert last_steps(behind) == (
        "rank 2 printed step 11 last (line 7) while ranks 0, 1 and 3 reached step 12"
    )
    split = {0: at(0, 12, 1), 1: at(1, 12, 2), 2: at(2, 11, 3), 3: at(3, 11, 4)}
    assert last_steps(split) == "ranks 0 and 1 at step 12, ranks 2 and 3 at step 11"
    # lines that name no rank are not a rank's
    assert last_steps({None: at(None, 3, 1), 0: at(0, 3, 2)}).startswith("the log prints no")


GLOO_HANG = """\
[rank0]: step 7 loss 0.31
[rank1]: step 7 loss 0.29
[rank2]: step 7 loss 0.33
[rank0]: step 8 loss 0.30
[rank1]: step 8 loss 0.28
[rank2]: step 8 loss 0.32
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/job/pretrain.py", line 90, in <module>
[rank1]:     main()
[rank1]:   File "/srv/job/pretrain.py", line 61, in main
[rank1]:     dist.all_reduce(loss)
[rank1]:   File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
[rank1]:     work.wait()
[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete
"""


def test_h_a_gloo_hang_with_no_rank_leads_with_the_look_that_decides():
    d = diagnose_text(GLOO_HANG, mask=False)
    rc = d.root_cause
    assert rc.signature == "gloo-collective-timeout" and d.initiating_rank is None
    first = rc.fix.steps[0]
    assert first.startswith("pretrain.py:61 (in main)")
    assert "What it shows: every rank printed step 8 last." in first
    assert "py-spy dump --pid" in first and "pgrep -f pretrain.py" in first
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in rc.fix.steps[1]


# -- C: one collective at two lines, and one line whose op one traceback does not show ----------


def _site(rank, line, op="all_reduce"):
    from rootrank.model import CallSite

    return CallSite(rank=rank, file="/srv/job/train.py", line=line, func="main", collective=op)


def test_c_a_minority_behind_at_the_same_op_points_at_the_group():
    from rootrank.entry.frames import location_step

    sites = [_site(0, 31), _site(1, 31), _site(3, 30)]
    step = location_step(None, sites, 0, None, world=4)
    assert step.startswith("train.py:31: ranks 0 and 1 call all_reduce here while rank 3")
    assert "rank 3 did not get past line 30" in step
    assert "rank 2 (no call site in the log" in step
    assert "dist.new_group must be called by every rank" in step


def test_c_one_rank_ahead_is_a_skipped_call_not_a_group():
    from rootrank.entry.frames import location_step

    sites = [_site(0, 31), _site(1, 31), _site(2, 31), _site(3, 33)]
    step = location_step(None, sites, 3, None, world=4)
    assert step.startswith("train.py:33: rank 3 calls all_reduce here while ranks 0, 1 and 2")
    assert "new_group" not in step
    # different ops keep the order sentence alone
    ops = [_site(0, 31), _site(1, 31), _site(2, 40, "broadcast")]
    assert "Every site calls" not in location_step(None, ops, 2, None, world=3)


TWO_VIEWS_ONE_LINE = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/srv/job/train.py", line 70, in <module>
[rank0]:     main()
[rank0]:   File "/srv/job/train.py", line 52, in main
[rank0]:     dist.all_reduce(grad)
[rank0]:   File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
[rank0]:     work.wait()
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/job/train.py", line 70, in <module>
[rank1]:     main()
[rank1]:   File "/srv/job/train.py", line 52, in main
[rank1]:     dist.all_reduce(grad)
[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete
"""


def test_c_one_line_seen_with_and_without_its_collective_is_one_site():
    # rank 1's traceback stops at the user's line (no torch frame): it is the same call site
    rc = diagnose_text(TWO_VIEWS_ONE_LINE, mask=False).root_cause
    assert rc.call_sites == []
    assert not any("while rank" in s for s in rc.fix.steps)
