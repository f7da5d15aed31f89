"""Two different jobs' logs in one file (``cat job-a/train.log job-b/train.log > mix.log``)
when the later job prints no launch banner of its own or names no script: the sections are
told apart by the program their tracebacks ran (rootrank.runs.other_process: another entry
script, or an inference engine's processes against a user's script), the last job is
diagnosed, and its fix, verification and stack come from its own lines only
(rootrank.scan.Scanner._own_stacks, _peek_section).

Fixtures (tests/catjobs/, see its README.md):
- ``torchrun-embedding-index.log``: a real ``torchrun --nproc-per-node=2 embed_train.py`` run
  (torch 2.13 CPU, gloo): rank 1 indexes past its embedding table at step 3 (IndexError), rank
  0 sees gloo's "Connection closed by peer", torchrun's failure summary ends it (80 lines);
- ``python-eval-missing-checkpoint.log``: a real ``python eval_ckpt.py`` run, another script
  in one process: torch.load of a missing checkpoint (FileNotFoundError; 20 lines);
- ``torchrun-embedding-index-long.log``: the same script run longer (2,100 steps, the bad ids
  at step 2000; 4,074 lines, 90 kB): its first traceback is further from its banner than the
  scanner reads ahead (rootrank.scan.PEEK_CHARS), so the jobs are told apart at the file's end;
- ``vllm-engine-core-profile-oom.log``: a ``vllm serve`` start-up whose engine core runs out of
  memory in the profiling run (written from vLLM's v1 source: ``run_engine_core`` ->
  ``_initialize_kv_caches`` -> ``determine_available_memory`` -> ``profile_run``; the
  engine-core logger's copy, the process's own traceback and the API server's
  "Engine core initialization failed"; 101 lines);
- ``vllm-rank0-tail-profile-oom.log``: the end of that traceback as a paste that cut its head,
  under torch.distributed's ``[rank0]:`` prefix (no banner, no header; 19 lines).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_text
from rootrank.runs import SectionFacts, other_process
from rootrank.scan import PEEK_CHARS

HERE = Path(__file__).resolve().parent / "catjobs"
TORCHRUN = "torchrun-embedding-index.log"  # 80 lines
TORCHRUN_LONG = "torchrun-embedding-index-long.log"  # 4,074 lines
EVAL = "python-eval-missing-checkpoint.log"  # 20 lines
VLLM = "vllm-engine-core-profile-oom.log"  # 101 lines
VLLM_TAIL = "vllm-rank0-tail-profile-oom.log"  # 19 lines


def cat(*names: str) -> str:
    return "".join((HERE / name).read_text(encoding="utf-8") for name in names)


def other_runs(d) -> list[str]:
    return [r for r in d.reasoning if r.startswith("The log holds") and "different runs" in r]


def test_the_fixtures_are_the_lengths_the_tests_count_on():
    names = (TORCHRUN, TORCHRUN_LONG, EVAL, VLLM, VLLM_TAIL)
    lengths = {n: len(cat(n).splitlines()) for n in names}
    assert lengths == {TORCHRUN: 80, TORCHRUN_LONG: 4074, EVAL: 20, VLLM: 101, VLLM_TAIL: 19}
    # the long run's first traceback is past what the scan reads ahead at its banner
    text = cat(TORCHRUN_LONG)
    assert text.index("Traceback") > PEEK_CHARS


def test_a_vllm_tail_after_a_torchrun_job_is_the_last_job_and_is_diagnosed():
    """The vLLM tail has no banner and no traceback header: its first frame after torchrun's
    failure summary (the agent's last words) starts a section, and its frames (vLLM's engine
    code only) against the torchrun job's (embed_train.py) make it another job."""
    d = diagnose_text(cat(TORCHRUN, VLLM_TAIL), "mix.log", mask=False)
    assert d.root_cause.signature == "cuda-oom"
    assert d.root_cause.evidence[0].line == 80 + 19
    assert d.attempts == 1
    (line,) = other_runs(d)
    assert "(from line 81)" in line and "Left out: the run at lines 1-80" in line
    assert "it ran embed_train.py, the next run only vllm's engine code" in line
    assert "index-out-of-range" not in {f.signature for f in d.findings}
    # the fix and the verification are the engine's, from its own lines
    assert d.stack == ["vllm"]
    assert "from vllm import LLM" in d.root_cause.verify
    assert "embed_train.py" not in d.root_cause.verify and "torchrun" not in d.root_cause.verify
    assert d.root_cause.user_frame is None  # vLLM's frames only: no user code in this job


def test_a_vllm_tail_before_a_torchrun_job_is_left_out_and_not_an_attempt():
    d = diagnose_text(cat(VLLM_TAIL, TORCHRUN), "mix.log", mask=False)
    assert d.root_cause.signature == "index-out-of-range"
    assert d.initiating_rank == 1 and d.root_cause.evidence[0].line == 19 + 29
    assert d.attempts == 1  # not "2 runs of the job"
    (line,) = other_runs(d)
    assert "Left out: the run at lines 1-21" in line
    assert "its processes ran only vllm's engine code" in line and "next run embed_train.py" in line
    assert d.stack == []  # the vLLM frames before the job name no stack of it
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=2 embed_train.py")
    assert "vllm" not in d.root_cause.verify
    uf = d.root_cause.user_frame
    assert (uf.file, uf.line, uf.func) == ("/home/user/proj/embed_train.py", 18, "main")


def test_a_vllm_serve_start_up_after_a_torchrun_job_is_diagnosed():
    d = diagnose_text(cat(TORCHRUN, VLLM), "mix.log", mask=False)
    assert d.root_cause.signature == "cuda-oom"
    assert d.root_cause.evidence[0].line == 80 + 42  # the engine core's own OutOfMemoryError
    assert d.attempts == 1
    (line,) = other_runs(d)
    assert "Left out: the run at lines 1-80" in line and "it ran embed_train.py" in line
    assert d.stack == ["vllm"] and "from vllm import LLM" in d.root_cause.verify


def test_a_torchrun_job_after_a_vllm_serve_start_up_is_diagnosed_with_its_own_verify():
    d = diagnose_text(cat(VLLM, TORCHRUN), "mix.log", mask=False)
    assert d.root_cause.signature == "index-out-of-range"
    assert d.initiating_rank == 1 and d.root_cause.evidence[0].line == 101 + 29
    assert d.attempts == 1
    (line,) = other_runs(d)
    assert "Left out: the run at lines 1-103" in line
    assert d.stack == []
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=2 embed_train.py")
    # the fix's steps and code are for the torchrun job's stack, not the engine's
    assert not any("vllm" in step.lower() for step in d.root_cause.fix.steps)
    assert "vllm" not in d.root_cause.fix.code


def test_a_long_torchrun_job_after_a_vllm_serve_start_up_is_told_apart_at_the_end():
    """The lines ahead of the banner show no traceback yet: the cut is held as a relaunch's
    until the file's end shows the two programs. The torchrun job's launch facts are then the
    ones read from its own lines on (before: the vLLM job's ``vllm`` launcher picked a
    ``python -c "from <vllm> import LLM ..."`` verification, and the stack was vLLM's)."""
    d = diagnose_text(cat(VLLM, TORCHRUN_LONG), "mix.log", mask=False)
    assert d.root_cause.signature == "index-out-of-range" and d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 101 + 4023
    assert d.attempts == 1
    (line,) = other_runs(d)
    assert "Left out: the run at lines 1-103" in line
    assert "its processes ran only vllm's engine code" in line
    assert d.stack == []
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=2 embed_train.py")


def test_another_script_in_one_process_after_a_torchrun_job_gets_its_own_launch():
    """The second job is ``python eval_ckpt.py``: its verification runs that, not the earlier
    job's torchrun (the launch facts of the job left out are dropped with it)."""
    d = diagnose_text(cat(TORCHRUN, EVAL), "mix.log", mask=False)
    assert d.root_cause.signature == "checkpoint-file-missing"
    assert d.root_cause.evidence[0].line == 80 + 20
    (line,) = other_runs(d)
    assert "it ran embed_train.py, the next run eval_ckpt.py" in line
    assert "&& python eval_ckpt.py" in d.root_cause.verify
    assert "torchrun" not in d.root_cause.verify


def test_a_torchrun_job_after_another_script_is_no_relaunch_of_it():
    """Before: "2 runs of the job" (torchrun's banner after a failure read as a relaunch)."""
    d = diagnose_text(cat(EVAL, TORCHRUN), "mix.log", mask=False)
    assert d.root_cause.signature == "index-out-of-range" and d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 20 + 29
    assert d.attempts == 1
    (line,) = other_runs(d)
    assert "it ran eval_ckpt.py, the next run embed_train.py" in line
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=2 embed_train.py")


def test_the_same_job_appended_twice_stays_one_job_of_two_attempts():
    """A relaunch runs the same program: the same entry script, the same user files."""
    d = diagnose_text(cat(TORCHRUN, TORCHRUN), "mix.log", mask=False)
    assert d.root_cause.signature == "index-out-of-range"
    assert d.root_cause.evidence[0].line == 80 + 29
    assert d.attempts == 2 and not other_runs(d)


def test_a_vllm_start_up_after_a_one_process_script_with_no_banner_is_another_job():
    """Neither job prints a launch banner or torchrun's summary: the vLLM engine core's
    traceback after the failed ``python eval_ckpt.py`` runs another program (vLLM's engine
    code only, against eval_ckpt.py), so it starts the next job (rootrank.scan.Scanner.
    _other_program); the eval job's FileNotFoundError is left out."""
    d = diagnose_text(cat(EVAL, VLLM), "mix.log", mask=False)
    assert d.root_cause.signature == "cuda-oom"
    assert d.root_cause.evidence[0].line == 20 + 42
    (line,) = other_runs(d)
    assert "Left out: the run at lines 1-26" in line and "it ran eval_ckpt.py" in line
    assert "checkpoint-file-missing" not in {f.signature for f in d.findings}
    assert d.stack == ["vllm"] and "eval_ckpt.py" not in d.root_cause.verify
    d = diagnose_text(cat(EVAL, VLLM_TAIL), "mix.log", mask=False)
    assert d.root_cause.signature == "cuda-oom" and d.root_cause.evidence[0].line == 20 + 19
    assert d.root_cause.user_frame is None


def test_a_one_process_script_after_a_vllm_start_up_with_no_banner_is_another_job():
    d = diagnose_text(cat(VLLM, EVAL), "mix.log", mask=False)
    assert d.root_cause.signature == "checkpoint-file-missing"
    assert d.root_cause.evidence[0].line == 101 + 20
    (line,) = other_runs(d)
    assert "its processes ran only vllm's engine code" in line and "next run eval_ckpt.py" in line
    assert d.stack == []
    assert "&& python eval_ckpt.py  #" in d.root_cause.verify and "vllm" not in d.root_cause.verify
    uf = d.root_cause.user_frame
    assert (uf.file, uf.line) == ("/home/user/proj/eval_ckpt.py", 5)


def test_two_tracebacks_of_one_program_with_no_banner_stay_one_job():
    """Another process of the same program (the same entry script) is the same job: no cut."""
    d = diagnose_text(cat(EVAL, EVAL), "mix.log", mask=False)
    assert d.root_cause.signature == "checkpoint-file-missing"
    assert not other_runs(d) and d.attempts == 1
    assert d.root_cause.evidence[0].line == 20


def _facts(**kw) -> SectionFacts:
    f = SectionFacts()
    for k, v in kw.items():
        setattr(f, k, v)
    return f


def test_other_process_tells_programs_apart_only_on_what_the_tracebacks_show():
    train = _facts(entries={"train.py"}, user_files={"train.py", "data.py"})
    engine = _facts(engines={"vllm"})
    assert other_process(train, _facts(entries={"train.py"}, user_files={"train.py"})) is None
    assert (
        other_process(train, _facts(entries={"eval.py"})) == "it ran train.py, the next run eval.py"
    )
    assert other_process(engine, train) == (
        "its processes ran only vllm's engine code (no script of the user's), the next run train.py"
    )
    # a torchrun job that left no traceback is known by the script its summary names
    assert other_process(_facts(script="train.py"), engine) == (
        "it ran train.py, the next run only vllm's engine code (no script of the user's)"
    )
    # a training script that runs the engine in-process (RL rollouts) shows its own frames
    # above the engine's: the same program as a relaunch that failed outside the engine
    rollouts = _facts(entries={"grpo.py"}, user_files={"grpo.py"}, engines={"vllm"})
    assert other_process(rollouts, _facts(user_files={"grpo.py"})) is None
    assert other_process(rollouts, engine) is None
    # nothing shown on one side: no reason to split
    assert other_process(_facts(), engine) is None
    assert other_process(train, _facts()) is None
