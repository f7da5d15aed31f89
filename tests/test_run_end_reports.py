"""A launcher's or trainer's own report that training ended normally shows the errors before
it were survived (rule ``run_completed``), as the progress at its total already did.

- torchelastic's agent logs ``[default] worker group successfully finished. Waiting 300
  seconds for other agents to finish.`` only when its monitor saw ``WorkerState.SUCCEEDED``
  (torch/distributed/elastic/agent/server/api.py ``_invoke_run``): every local worker exited
  0, so no worker died of an error it printed before.
- Lightning's fit loop logs ``\\`Trainer.fit\\` stopped: \\`max_epochs=3\\` reached.`` on rank
  zero once the loop reached its configured end (``_FitLoop.done``).
- torchtitan's train.py logs ``Training completed`` after its loop.
- Megatron-LM prints ``[after training is done] datetime: ...`` once ``train()`` returned.
- DeepSpeed's launcher logs ``Process <pid> exits successfully.`` for each worker that
  returned 0 (deepspeed/launcher/launch.py ``main``).

The logs are written here in those tools' shapes (torch 2.x glog headers of the agent,
``[rankN]:`` prefixes of a worker's traceback printed by its own handler), with a warm-start
``load_state_dict`` size mismatch caught on every rank before the first epoch: the healthy run
the round-14 blind set showed, whose epochs have no total for the progress rule to reach.
"""

from __future__ import annotations

from rootrank.engine import diagnose_text

_API = "torch/distributed/elastic/agent/server/api.py"


def _caught_mismatch(rank: int) -> list[str]:
    p = f"[rank{rank}]:"
    return [
        f"{p}could not warm-start the head from /ckpt/base.pt; training it from scratch",
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/srv/job/train.py", line 40, in warm_start',
        f"{p}    model.load_state_dict(state, strict=True)",
        f'{p}  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",'
        " line 2584, in load_state_dict",
        f"{p}    raise RuntimeError(",
        f"{p}RuntimeError: Error(s) in loading state_dict for Net:",
        f"{p}\tsize mismatch for head.weight: copying a param with shape torch.Size([10, 64])"
        " from checkpoint, the shape in current model is torch.Size([12, 64]).",
    ]


def _log(end: list[str], *, error_after: bool = False) -> str:
    lines = [
        "W1203 10:00:00.000000 140 torch/distributed/run.py:793] Setting OMP_NUM_THREADS"
        " environment variable for each process to be 1 in default, to avoid your system"
        " being overloaded, please further tune the variable for optimal performance in your"
        " application as needed.",
    ]
    for r in (0, 1):
        lines += _caught_mismatch(r)
    for epoch in range(3):
        for r in (0, 1):
            lines.append(f"[rank{r}]:epoch {epoch} train_loss {2.3 - epoch / 3 - r / 50:.4f}")
    if error_after:
        lines += _caught_mismatch(1)
    lines += end
    return "\n".join(lines) + "\n"


_AGENT_SUCCEEDED = [
    f"I1203 10:05:00.000000 140 {_API}:879] [default] worker group successfully finished."
    " Waiting 300 seconds for other agents to finish.",
    f"I1203 10:05:00.100000 140 {_API}:932] Local worker group finished"
    " (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
    f"I1203 10:05:00.200000 140 {_API}:946] Done waiting for other agents. Elapsed:"
    " 0.0013275146484375 seconds",
]

_LIGHTNING_END = ["[rank0]:`Trainer.fit` stopped: `max_epochs=3` reached."]

_TITAN_END = [
    "[rank0]:[titan] 2026-12-03 10:05:00,000 - root - INFO - Sleeping 2 seconds for other ranks"
    " to complete",
    "[rank0]:[titan] 2026-12-03 10:05:02,004 - root - INFO - Training completed",
]


def test_agent_success_sets_caught_errors_aside() -> None:
    d = diagnose_text(_log(_AGENT_SUCCEEDED), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "worker group finished successfully" in done[0]
    assert "train.log:" + str(len(_log([]).splitlines()) + 1) in done[0]
    assert "state-dict-size-mismatch" in {f.signature for f in d.collateral}


def test_lightning_fit_end_sets_caught_errors_aside() -> None:
    d = diagnose_text(_log(_LIGHTNING_END), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "max_epochs=3" in done[0]


def test_torchtitan_training_completed_sets_caught_errors_aside() -> None:
    d = diagnose_text(_log(_TITAN_END), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "Training completed" in done[0]


_DS_END = [
    f"[2026-12-03 10:05:00,{ms}] [INFO] [launch.py:351:main] Process {pid} exits successfully."
    for ms, pid in (("112", 20418), ("113", 20417))
]


def test_deepspeed_workers_exiting_0_set_caught_errors_aside() -> None:
    d = diagnose_text(_log(_DS_END), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "exits successfully" in done[0]


def test_a_deepspeed_worker_returning_1_keeps_the_failure() -> None:
    """Control: DeepSpeed's launcher reports the other worker's nonzero return code."""
    failed = [
        "[2026-12-03 10:05:01,200] [ERROR] [launch.py:325:sigkill_handler] ['/opt/venv/bin/python',"
        " '-u', 'train.py', '--local_rank=1'] exits with return code = 1",
    ]
    d = diagnose_text(_log(_DS_END[:1] + failed), "train.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_megatron_after_training_sets_caught_errors_aside() -> None:
    end = ["[rank0]:[after training is done] datetime: 2026-12-03 10:05:00 "]
    d = diagnose_text(_log(end), "train.log", mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "after training is done" in done[0]


def test_an_error_after_megatron_s_end_keeps_the_failure() -> None:
    """Control: the final save after the schedule's end fails: an error after the end line."""
    end = ["[rank0]:[after training is done] datetime: 2026-12-03 10:05:00 "]
    after = [
        "[rank0]:Traceback (most recent call last):",
        '[rank0]:  File "/srv/job/pretrain_gpt.py", line 301, in <module>',
        "[rank0]:    pretrain(train_valid_test_datasets_provider, model_provider)",
        "[rank0]:OSError: [Errno 28] No space left on device",
    ]
    d = diagnose_text(_log(end + after), "train.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_a_sentence_that_goes_on_is_no_end_report() -> None:
    """Control: 'Training completed' inside a longer message is the script's words."""
    text = _log(["[rank0]:Training completed 2 of 3 epochs, checkpointing"])
    d = diagnose_text(text, "train.log", mask=False)
    assert d.root_cause is not None


def test_without_an_end_report_the_error_is_still_the_root() -> None:
    """Control: the same log cut before any end report keeps the size mismatch."""
    d = diagnose_text(_log([]), "train.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "state-dict-size-mismatch"


def test_an_agent_that_reports_a_failed_worker_keeps_the_failure() -> None:
    """Another agent's failure in the same log: the end report of one group proves nothing."""
    failed = [
        "E1203 10:05:00.300000 141 torch/distributed/elastic/multiprocessing/api.py:869]"
        " failed (exitcode: 1) local_rank: 1 (pid: 2201) of binary: /opt/venv/bin/python3",
    ]
    d = diagnose_text(_log(_AGENT_SUCCEEDED + failed), "train.log", mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


def test_an_error_caught_again_before_the_end_is_survived_too() -> None:
    """The handler caught the error again after the epochs, still before the agent's report:
    more lines than the finding keeps as evidence, all before the end."""
    d = diagnose_text(_log(_AGENT_SUCCEEDED, error_after=True), "train.log", mask=False)
    assert d.root_cause is None
