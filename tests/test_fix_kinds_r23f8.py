"""Round 23, fix helper 8: kinds the held-out sets showed, each with a fixture of our own.

A folder with the terminal's output and torchrun's ``--log-dir``/``--tee`` per-rank files: the
terminal shows the run's own end (Lightning's "`Trainer.fit` stopped: `max_epochs=N`
reached.") and every per-rank file repeats a traceback the terminal printed, caught, before
it. The terminal's end speaks for the whole job (rule ``run_completed``,
rootrank.analysis.completed._completed_mirrored): adding the rank files must not turn a
healthy verdict into a failure. A rank file that holds what the terminal never showed (a
traceback up to ``<module>``) keeps the rule off.

The lines are written in the tools' shapes: torchrun's ``[defaultN]:`` prefixes of ``--tee``,
a worker's own ``logger.exception`` traceback of a warm start caught in ``warm_start``, the
per-rank ``stderr.log`` files of ``--log-dir`` without a prefix.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

_CAUGHT = [
    "warm start failed, training the head from scratch",
    "Traceback (most recent call last):",
    '  File "/srv/proj/fit.py", line 33, in warm_start',
    "    head.load_state_dict(torch.load(path), strict=True)",
    '  File "/opt/env/lib/python3.12/site-packages/torch/nn/modules/module.py",'
    " line 2593, in load_state_dict",
    "    raise RuntimeError(",
    "RuntimeError: Error(s) in loading state_dict for Head:",
    "\tsize mismatch for proj.weight: copying a param with shape torch.Size([6, 32])"
    " from checkpoint, the shape in current model is torch.Size([9, 32]).",
]

_UNCAUGHT = [
    "Traceback (most recent call last):",
    '  File "/srv/proj/fit.py", line 71, in <module>',
    "    main()",
    '  File "/srv/proj/fit.py", line 64, in main',
    "    trainer.fit(model, loader)",
    "ValueError: batch of rank 2 holds no samples",
]


def _folder(tmp: Path, *, uncaught_in_rank_file: bool = False) -> Path:
    term: list[str] = []
    for r in range(3):
        term += [f"[default{r}]:{line}" for line in _CAUGHT]
    for epoch in range(2):
        term.append(
            f"[default0]:INFO: Epoch {epoch}, global step {8 * (epoch + 1)}: 'val_acc'"
            f" reached {0.61 + epoch / 10:.5f}"
        )
    term.append("[default0]:INFO: `Trainer.fit` stopped: `max_epochs=2` reached.")
    term.append("finished with status 0")
    (tmp / "console.log").write_text("\n".join(term) + "\n")
    for r in range(3):
        d = tmp / "logs" / "job_x1" / "attempt_0" / str(r)
        d.mkdir(parents=True)
        lines = list(_CAUGHT)
        if uncaught_in_rank_file and r == 2:
            lines += _UNCAUGHT
        (d / "stderr.log").write_text("\n".join(lines) + "\n")
        out = ["INFO: `Trainer.fit` stopped: `max_epochs=2` reached."] if r == 0 else []
        (d / "stdout.log").write_text("\n".join(out) + "\n")
    return tmp


def test_rank_files_repeating_caught_tracebacks_stay_healthy(tmp_path: Path) -> None:
    d = diagnose_paths([str(_folder(tmp_path))], mask=False)
    assert d.root_cause is None
    done = [r for r in d.reasoning if "[run_completed]" in r]
    assert done and "console.log:" in done[0] and "max_epochs=2" in done[0]


def test_rank_file_with_its_own_uncaught_traceback_is_no_healthy_run(tmp_path: Path) -> None:
    d = diagnose_paths([str(_folder(tmp_path, uncaught_in_rank_file=True))], mask=False)
    assert d.root_cause is not None
    assert not any("[run_completed]" in r for r in d.reasoning)


# A real run (tests/r23f8/retry.sh.txt running tests/r23f8/fit.py.txt: torch 2.13.0+cpu, gloo,
# torchrun --nproc-per-node=3, both tries appended into one log): try 1 raises KeyError: 'x'
# on rank 1 (a row without the field), try 2 sets TOLERATE_ROWS=1, rank 1 drops that batch,
# runs one DDP step fewer, and its final all_reduce meets the others' gradient all_reduce:
# gloo's "820 vs 4" aborts rank 1 (SIGABRT).
_RETRY = Path(__file__).parent / "r23f8" / "retry-tolerated-row.log"


def test_retry_failing_on_the_same_rank_is_explained_by_the_first_error() -> None:
    d = diagnose_paths([str(_RETRY)], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "user-code-exception"
    assert d.root_cause.evidence[0].line == 9
    assert d.initiating_rank == 1
    assert any("[retry_after_fault]" in r for r in d.reasoning)


def test_the_last_try_alone_stays_a_desync(tmp_path: Path) -> None:
    lines = _RETRY.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("=== try 2"))
    cut = tmp_path / "try2.log"
    cut.write_text("".join(lines[start:]))
    d = diagnose_paths([str(cut)], mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "collective-desync"
    assert d.initiating_rank == 1


# The verification of a hang fits the job's own limit: the signature's real run under
# `timeout 25` (signatures/training/progress-stalled.positive-2.log: 21 s of silence before the
# stop) gets a watch of 10 s, not the 600 a cluster's hours allow; a slurm time limit after an
# hour's silence keeps 600.
_SIGS = Path(__file__).parent.parent / "signatures" / "training"


def _stall_of(verify: str) -> int:
    return int(verify.split("--stall ", 1)[1].split()[0])


def test_stall_watch_fits_a_short_wrapper_limit() -> None:
    d = diagnose_paths([str(_SIGS / "progress-stalled.positive-2.log")], mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "progress-stalled"
    assert d.initiating_rank == 2
    assert _stall_of(d.root_cause.verify) == 10
    assert "no stall reported" in d.root_cause.verify


def test_stall_watch_of_a_long_hang_stays_at_ten_minutes() -> None:
    d = diagnose_paths([str(_SIGS / "progress-stalled.positive.log")], mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "progress-stalled"
    assert _stall_of(d.root_cause.verify) == 600
