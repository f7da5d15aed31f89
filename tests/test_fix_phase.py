"""Fixes chosen by the phase the failure happened in (issue 15): an OOM while the model is
loaded or the engine set up is not answered with a smaller batch, and a segfault after the
run ended (teardown) or before its first step (native code loaded at start-up) gets its own
fix (rootrank.entry.variants.run_phase, the ``phase`` and ``run_frames`` conditions)."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths
from rootrank.entry.variants import Facts, check_when, choose, run_phase
from rootrank.progress import Progress

HERE = Path(__file__).resolve().parent / "fix_variants"


def _step(line: int, step: int = 10, total: int | None = 500) -> Progress:
    return Progress(0, step, total, None, "a.log", line, "tqdm")


def test_no_step_with_the_launch_shown_is_start_up():
    phase, why = run_phase("a.log", 40, [], [], True)
    assert phase == "start-up" and "no training step" in why


def test_no_step_in_a_pasted_tail_is_before_steps_not_start_up():
    assert run_phase("a.log", 40, [], [], False)[0] == "before-steps"


def test_a_run_ended_before_the_fault_is_finished():
    phase, why = run_phase(
        "a.log", 40, [_step(30, 500)], [("a.log", 31, "its progress reached step 500 of 500")], True
    )
    assert phase == "finished" and "line 31" in why


def test_an_end_after_the_fault_or_in_another_source_is_not_finished():
    ended = [("a.log", 50, "x"), ("b.log", 10, "y")]
    assert run_phase("a.log", 40, [_step(30)], ended, True)[0] == "training"


def test_phase_names_are_checked_at_load():
    assert check_when({"phase": ["teardown"]}) is not None
    assert check_when({"phase": ["finished", "start-up"]}) is None
    assert check_when({"run_frames": "from_pretrained"}) is None


def test_run_frames_match_a_quoted_source_line():
    fix = {
        "variants": [
            {"id": "load", "when": {"run_frames": r"\bload_model\b", "phase": ["start-up"]}},
            {"id": "general"},
        ]
    }
    facts = Facts(run_frames=["sft.py:main", "model = load_model(name)"], phase="start-up")
    facts.phase_why = "w"
    variant, chosen = choose(fix, facts)
    assert variant["id"] == "load" and chosen is not None
    facts.phase = "training"  # the same frames during training: not the load-phase fix
    assert choose(fix, facts)[0]["id"] == "general"


def _chosen(path: Path) -> tuple[str, str | None, int | None]:
    rc = diagnose_paths([str(path)]).root_cause
    assert rc is not None and rc.fix.variant is not None
    return rc.signature, rc.fix.variant.id, rc.rank


def test_oom_with_another_ranks_loader_traceback_gets_the_load_fix():
    sig, variant, rank = _chosen(HERE / "cuda-oom" / "at-load-before-first-step.log")
    assert (sig, variant, rank) == ("cuda-oom", "at-load-before-first-step", 2)


def test_segfault_after_the_run_ended_is_a_teardown_crash():
    sig, variant, rank = _chosen(HERE / "worker-segfault" / "at-exit.log")
    assert (sig, variant, rank) == ("worker-segfault", "at-exit", 1)
    steps = diagnose_paths([str(HERE / "worker-segfault" / "at-exit.log")]).root_cause.fix.steps
    assert "step 500 of 500" in steps[0] and "Rebuild" not in steps[0]


def test_segfault_before_the_first_step_is_a_start_up_crash():
    sig, variant, rank = _chosen(HERE / "worker-segfault" / "at-start-up.log")
    assert (sig, variant, rank) == ("worker-segfault", "at-start-up", 1)


def test_segfault_in_a_tail_with_steps_keeps_the_general_fix():
    sig, variant, _ = _chosen(HERE / "worker-segfault" / "general.log")
    assert (sig, variant) == ("worker-segfault", "general")


# A DeepSpeed engine set up by accelerate's Accelerator (HF Trainer / accelerate scripts): the
# frames are accelerate/accelerator.py's _prepare_deepspeed -> deepspeed.initialize.
_ENGINE_INIT_OOM = """\
Traceback (most recent call last):
  File "/work/sft/train.py", line 151, in <module>
    main()
  File "/work/sft/train.py", line 146, in main
    trainer.train()
{driver}  File "/usr/local/lib/python3.11/site-packages/deepspeed/__init__.py", line 193, in initialize
    engine = DeepSpeedEngine(args=args,
  File "/usr/local/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 269, in __init__
    self._configure_distributed_model(model)
  File "/usr/local/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 1188, in _configure_distributed_model
    self.module.to(self.device)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 39.39 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 38.36 GiB memory in use. Of the allocated memory 37.80 GiB is allocated by PyTorch, and 61.21 MiB is reserved by PyTorch but unallocated.
"""
_ACCELERATE_FRAMES = """\
  File "/usr/local/lib/python3.11/site-packages/accelerate/accelerator.py", line 1898, in _prepare_deepspeed
    engine, optimizer, _, lr_scheduler = ds_initialize(**kwargs)
"""


def test_verify_uses_accelerate_launch_when_accelerate_built_the_deepspeed_engine(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(_ENGINE_INIT_OOM.format(driver=_ACCELERATE_FRAMES))
    rc = diagnose_paths([str(log)]).root_cause
    assert rc is not None and rc.signature == "cuda-oom"
    assert rc.fix.variant is not None and rc.fix.variant.id == "at-load"
    assert rc.verify.startswith("accelerate launch --config_file <accelerate config (DeepSpeed)>")


def test_verify_keeps_the_deepspeed_cli_without_accelerate_frames(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(_ENGINE_INIT_OOM.format(driver=""))
    rc = diagnose_paths([str(log)]).root_cause
    assert rc is not None and rc.verify.startswith("deepspeed train.py  #")
