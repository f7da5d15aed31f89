"""An error the process survived is not the root cause (rootrank.analysis.survived, rule
``error_survived``): the rank that raised must be seen to advance (a step greater than every
step it printed before the exception, in the same attempt), its traceback must have the shape
of a caught one, and no launcher may report its worker failed.

The logs are written here in the shapes the tools print: torchrun's ``[rankN]:`` (workers'
stderr, torch >= 2.2) and ``[defaultN]:`` (``--tee 3``) prefixes, its agent's glog lines and
failure summary (torch/distributed/elastic/multiprocessing/api.py and errors/__init__.py, as
in ``signatures/training/metric-nonfinite.positive-2.log``, a real run), Python's
``logging`` default format and ``logger.exception`` traceback, ``threading.excepthook``'s
``Exception in thread NAME (target):`` (CPython Lib/threading.py, 3.10+), Hugging Face
Trainer's tqdm bar (tqdm ``format_meter``: `` 12%|█▏        | 120/1000 [01:10<08:30,
1.72it/s]``, drawn with ``\\r`` frames, the metric dict written with ``tqdm.write``), and a plain
loop's ``step N loss X``.
"""

from __future__ import annotations

import os

from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rootrank.engine import diagnose_text
from rootrank.progress import AdvanceWatch, Progress

FUZZ = settings(
    max_examples=int(os.environ.get("ROOTRANK_FUZZ_EXAMPLES", "40")),
    deadline=None,
    database=None,
    derandomize=not os.environ.get("ROOTRANK_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow],
)

SURVIVED = "[error_survived]"


def step(rank: int, n: int) -> str:
    """A plain loop's progress line of one rank under torchrun."""
    return f"[rank{rank}]: step {n} loss {2.5 - n / 1000:.4f} lr 3.0e-04\n"


def caught_oom(rank: int, at: int | None) -> str:
    """``logger.exception`` in the loop's OOM handler (the traceback holds the frames from
    the handler's function down: a caught exception). Its message names the step ``at``
    (read as the rank's progress: the step it was on), or none."""
    p = f"[rank{rank}]: "
    where = f" at step {at}" if at is not None else ""
    return (
        f"{p}ERROR:__main__:CUDA OOM{where} with micro-batch 16; retrying with 8\n"
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/srv/job/train.py", line 88, in train_step\n'
        f"{p}    loss = model(batch).loss\n"
        f'{p}  File "/srv/job/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl\n'
        f"{p}    return self._call_impl(*args, **kwargs)\n"
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 1 has a"
        " total capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory,"
        " this process has 78.11 GiB memory in use.\n"
    )


def uncaught_oom(rank: int) -> str:
    """The same OOM that nothing caught: the traceback begins at the script's top level."""
    p = f"[rank{rank}]: "
    return (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/srv/job/train.py", line 140, in <module>\n'
        f"{p}    main()\n"
        f'{p}  File "/srv/job/train.py", line 88, in main\n'
        f"{p}    loss = model(batch).loss\n"
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 1 has a"
        " total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
    )


def uncaught_value_error(rank: int) -> str:
    """A later, different failure that ends rank ``rank`` (uncaught)."""
    p = f"[rank{rank}]: "
    return (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/srv/job/train.py", line 140, in <module>\n'
        f"{p}    main()\n"
        f'{p}  File "/srv/job/train.py", line 97, in main\n'
        f"{p}    batch = collate(samples)\n"
        f'{p}  File "/srv/job/data.py", line 41, in collate\n'
        f'{p}    raise ValueError(f"sample {{i}} has {{n}} tokens, more than max_len {{max_len}}")\n'
        f"{p}ValueError: sample 17 has 4127 tokens, more than max_len 4096\n"
    )


def agent_failed(local_rank: int, pid: int, code: int = 1) -> str:
    return (
        "E1203 08:12:40.406000 3911 torch/distributed/elastic/multiprocessing/api.py:874]"
        f" failed (exitcode: {code}) local_rank: {local_rank} (pid: {pid}) of binary:"
        " /srv/job/.venv/bin/python\n"
    )


def closing_signal(pid: int) -> str:
    return (
        "W1203 08:12:40.153000 3911 torch/distributed/elastic/multiprocessing/api.py:900]"
        f" Sending process {pid} closing signal SIGTERM\n"
    )


def summary(root_rank: int, root_pid: int, others: list[tuple[int, int, int]]) -> str:
    """torchelastic's failure summary: ``others`` are ``(rank, pid, exitcode)``."""
    out = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n",
        "============================================================\n",
        "train.py FAILED\n",
        "------------------------------------------------------------\n",
        "Failures:\n",
    ]
    if not others:
        out.append("  <NO_OTHER_FAILURES>\n")
    for i, (rank, pid, code) in enumerate(others, 1):
        out += [
            f"[{i}]:\n",
            "  time      : 2026-12-03_08:12:40\n",
            "  host      : gpu-node-1\n",
            f"  rank      : {rank} (local_rank: {rank})\n",
            f"  exitcode  : {code} (pid: {pid})  (SIGTERM)\n",
            "  error_file: <N/A>\n",
            f"  traceback : Signal 15 (SIGTERM) received by PID {pid}\n",
        ]
    out += [
        "------------------------------------------------------------\n",
        "Root Cause (first observed failure):\n",
        "[0]:\n",
        "  time      : 2026-12-03_08:12:40\n",
        "  host      : gpu-node-1\n",
        f"  rank      : {root_rank} (local_rank: {root_rank})\n",
        f"  exitcode  : 1 (pid: {root_pid})\n",
        "  error_file: <N/A>\n",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n",
        "============================================================\n",
    ]
    return "".join(out)


HEAD = "".join(step(r, n) for n in (38, 39) for r in (0, 1))
RANK1_GOES_ON = "".join(step(r, n) for n in (40, 41, 42) for r in (0, 1))


def survived_lines(d) -> list[str]:
    return [r for r in d.reasoning if SURVIVED in r]


# -- the error is set aside ----------------------------------------------------------------


def test_a_retried_oom_the_rank_advanced_after_is_no_failure_exit_1():
    log = HEAD + caught_oom(1, 40) + RANK1_GOES_ON
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    assert survived_lines(d) == [
        '"CUDA out of memory in the caching allocator" (job.log:11) was survived: rank 1 went'
        " on to step 41 (line 15), past step 40, its highest before it, and no launcher"
        " reports its worker failed; collateral, not the root cause [error_survived]."
    ]
    assert [(g.signature, g.ranks) for g in d.collateral] == [("cuda-oom", [1])]
    proc = run_cli("diagnose", "-", stdin=log.encode())
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert out.startswith("No known failure found.\n") and SURVIVED in out


def test_the_job_failing_later_for_another_reason_is_the_root_and_the_oom_collateral():
    log = (
        HEAD
        + caught_oom(1, 40)
        + RANK1_GOES_ON
        + uncaught_value_error(0)
        + closing_signal(4102)
        + agent_failed(0, 4101)
        + summary(0, 4101, [(1, 4102, -15)])
    )
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature == "user-code-exception"
    assert (
        d.root_cause.evidence[0].line
        == log.splitlines().index(
            "[rank0]: ValueError: sample 17 has 4127 tokens, more than max_len 4096"
        )
        + 1
    )
    assert d.initiating_rank == 0
    assert len(survived_lines(d)) == 1 and "rank 1 went on to step 41" in survived_lines(d)[0]
    assert ("cuda-oom", [1]) in [(g.signature, g.ranks) for g in d.collateral]


def test_hf_trainer_bar_and_a_logger_thread_that_died():
    """``python train.py`` with Hugging Face Trainer: its bar is drawn with ``\\r`` frames and
    the metric dict written with ``tqdm.write``; a metrics thread's HTTP error is printed by
    threading.excepthook, then the bar goes on. No signature names the HTTPError: without
    the rule it would be 'unclassified' (exit 3)."""
    bar = "\r{pct:3d}%|{fill}| {n}/1000 [{m:02d}:{s:02d}<08:30,  1.72it/s]"

    def frames(*ns: int) -> str:
        return (
            "".join(
                bar.format(pct=n // 10, fill="█" * (n // 100) + " " * 9, n=n, m=n // 60, s=n % 60)
                for n in ns
            )
            + "\n"
        )

    log = (
        frames(118, 119, 120)
        + "{'loss': 2.0131, 'grad_norm': 1.25, 'learning_rate': 4.8e-05, 'epoch': 0.12}\n"
        + frames(120, 121)
        + "Exception in thread Thread-5 (push_metrics):\n"
        + "Traceback (most recent call last):\n"
        + '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
        + "    self.run()\n"
        + '  File "/usr/lib/python3.11/threading.py", line 982, in run\n'
        + "    self._target(*self._args, **self._kwargs)\n"
        + '  File "/srv/job/callbacks.py", line 31, in push_metrics\n'
        + "    resp.raise_for_status()\n"
        + "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url:"
        " https://metrics.example.org/api/push\n" + frames(121, 122, 123)
    )
    d = diagnose_text(log, "train.log", mask=False)
    assert d.root_cause is None and d.unclassified is None
    assert survived_lines(d) == [
        '"requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url:'
        ' https://metrics.example.org/api/push" (train.log:12) was survived: the process went'
        " on to step 123 (line 13), past step 121, its highest before it, and no launcher"
        " reports its worker failed; collateral, not the root cause [error_survived]."
    ]
    # the same log where the thread's error was the main thread's, uncaught: exit 3
    fatal = log.replace(
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n',
        '  File "/srv/job/train.py", line 210, in <module>\n',
    )
    d = diagnose_text(fatal, "train.log", mask=False)
    assert d.unclassified is not None and not survived_lines(d)


# -- the error stays a candidate -----------------------------------------------------------


def test_the_same_oom_is_the_root_when_the_launcher_reports_the_rank_failed():
    log = HEAD + caught_oom(1, 40) + RANK1_GOES_ON + agent_failed(1, 4102)
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1 and not survived_lines(d)


def test_another_ranks_progress_is_no_advance():
    log = HEAD + caught_oom(1, 40) + "".join(step(0, n) for n in (40, 41, 42))
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1 and not survived_lines(d)


def test_a_step_the_rank_had_reached_already_is_no_advance():
    """A loop resumed from its checkpoint prints steps it had passed; the bar is redrawn at
    its step."""
    log = HEAD + caught_oom(1, 40) + step(1, 39) + step(1, 38) + step(1, 39)
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert not survived_lines(d)


def test_an_uncaught_traceback_is_never_survived_whatever_follows_it():
    """A worker's stdout is a pipe under torchrun (block-buffered): the steps it printed
    before dying are flushed at exit, after its traceback. The traceback begins at <module>:
    nothing caught it."""
    log = HEAD + uncaught_oom(1) + step(1, 40) + step(1, 41)
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert d.initiating_rank == 1 and not survived_lines(d)


def test_no_step_before_the_exception_proves_no_advance():
    log = caught_oom(1, None) + step(1, 1) + step(1, 2)
    d = diagnose_text(log, "job.log", mask=False)
    assert d.root_cause is not None and d.root_cause.signature == "cuda-oom"
    assert not survived_lines(d)


def test_a_step_after_the_agent_restarted_the_workers_is_another_attempts():
    """The agent's failure line ends the attempt (``--max-restarts``): steps after it are
    the restarted worker's, resumed from a checkpoint."""
    log = HEAD + caught_oom(1, 40) + agent_failed(1, 4102, code=-9) + step(1, 40) + step(1, 41)
    d = diagnose_text(log, "job.log", mask=False)
    assert not survived_lines(d)


def test_untagged_progress_of_a_multi_rank_log_is_nobodys():
    body = caught_oom(1, 40).replace("[rank1]: ", "")
    log = HEAD + body + "step 40 loss 2.4600\nstep 41 loss 2.4590\n"
    d = diagnose_text(log, "job.log", mask=False)
    assert not survived_lines(d)


def test_advance_watch_counts_steps_only_within_a_section_and_a_process():
    w = AdvanceWatch()
    key, other = ("a.log", None, 1, None), ("a.log", None, 0, None)

    def p(line: int, n: int) -> Progress:
        return Progress(1, n, None, None, "a.log", line, "plain")

    w.see(key, p(1, 39))
    w.see(key, p(3, 40))  # read before the reader reported the exception of line 2
    early = w.watch(key, 2)
    assert early.before == {"plain": 39} and early.after is not None and early.after.line == 3
    a = w.watch(key, 4)
    assert (a.before, a.after) == ({"plain": 40}, None)
    w.see(key, Progress(1, 900, 1000, None, "a.log", 5, "tqdm"))
    assert a.after is None  # another counter (a bar), not past the "step N" lines
    w.see(other, p(5, 50))
    assert a.after is None
    w.new_section()
    w.see(key, p(6, 41))
    assert a.after is None  # a later section's step
    b = w.watch(key, 7)
    assert b.before == {"plain": 41}
    w.see(key, p(8, 42))
    assert b.after is not None and b.after.line == 8


# -- property: a progress line that does not advance never flips the verdict ---------------


def _verdict(d) -> tuple:
    rc = d.root_cause
    return (
        rc.signature if rc else None,
        d.initiating_rank,
        d.unclassified is not None,
        len(survived_lines(d)),
    )


@FUZZ
@given(
    before=st.integers(1, 4),
    after=st.lists(st.integers(-3, 3), max_size=4),
    inserts=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 1), st.integers(0, 10_000)),
        min_size=1,
        max_size=4,
    ),
)
def test_a_progress_line_with_no_advance_never_flips_the_verdict(before, after, inserts):
    """Base logs of both verdicts: rank 1 logs a caught OOM after ``before`` steps, then
    prints the steps ``last + d`` for ``d`` in ``after`` (an advance only when some ``d`` >
    0). Each insert is a line of rank 0 or 1 whose step is at most the highest that rank
    printed before the insertion point (rank 1's not inside its own traceback: a process
    prints its traceback whole)."""
    first = 30
    lines = [step(r, first + i).rstrip("\n") for i in range(before) for r in (0, 1)]
    last = first + before - 1
    lines += caught_oom(1, last + 1).rstrip("\n").split("\n")
    lines += [step(1, last + d).rstrip("\n") for d in after]
    base = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    mixed = list(lines)
    for pos, rank, pick in inserts:
        at = pos % (len(mixed) + 1)
        at = max(at, 2)  # after each rank's first step
        tb_start = next(i for i, ln in enumerate(mixed) if "ERROR:__main__" in ln)
        tb_end = next(i for i, ln in enumerate(mixed) if "OutOfMemoryError" in ln) + 1
        if rank == 1 and tb_start < at < tb_end:
            at = tb_end
        seen = [int(ln.split()[2]) for ln in mixed[:at] if ln.startswith(f"[rank{rank}]: step ")]
        mixed.insert(at, step(rank, pick % (max(seen) + 1)).rstrip("\n"))
    got = diagnose_text("\n".join(mixed) + "\n", "job.log", mask=False)
    assert _verdict(got) == _verdict(base)


def test_the_property_covers_both_verdicts():
    lines = HEAD + caught_oom(1, 40)
    kept = diagnose_text(lines + step(1, 39), "job.log", mask=False)
    gone = diagnose_text(lines + step(1, 41), "job.log", mask=False)
    assert _verdict(kept) == ("cuda-oom", 1, False, 0)
    assert _verdict(gone) == (None, None, False, 1)
