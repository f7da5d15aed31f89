"""A traceback logged through a formatter that repeats the record's header on every line.

vLLM's ``NewLineFormatter`` (vllm/logging_utils/formatter.py) replaces each newline of a
record with a newline plus the record's prefix (``%(levelname)s %(asctime)s
[%(filename)s:%(lineno)d] ``, one space before the message), so ``logger.exception(...)``
prints a whole traceback with ``ERROR 05-12 10:41:09 [core.py:396] `` in front of each of its
lines; a worker process's lines carry its own ``(VllmWorker rank=1 pid=4102) `` /
``(Worker_TP1 pid=4102) `` / ``(EngineCore_DP0 pid=4090) `` prefix first (one space too, as
Ray's ``(Name pid=N, ip=X) `` log prefix). The header ends at that one space: what follows is
the message's own text, the frames' two-space and the quoted code's four-space indentation
included. Eating every space after the header made each quoted code line look like a line
outside the traceback, so the traceback ended at its first frame and the exception had no
frames (no user file:line, no frame-based rule).

Logs written here in vLLM V1's shape (v0.8-0.10: ``run_engine_core``'s ``EngineCore failed
to start.``, the multiproc executor's ``WorkerProc hit an exception.``).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.ranks import strip_log_header

_SITE = "/opt/venv/lib/python3.12/site-packages/vllm"

# One V1 engine core (tensor_parallel_size=1): the record's header on every line, then the
# process's own uncaught re-raise, which only shows the engine's outer frames.
_ENGINE_CORE = f"""\
INFO 05-12 10:40:51 [core.py:61] Initializing a V1 LLM engine (v0.8.5) with config: model='/models/m', tensor_parallel_size=1
ERROR 05-12 10:41:09 [core.py:396] EngineCore failed to start.
ERROR 05-12 10:41:09 [core.py:396] Traceback (most recent call last):
ERROR 05-12 10:41:09 [core.py:396]   File "{_SITE}/v1/engine/core.py", line 387, in run_engine_core
ERROR 05-12 10:41:09 [core.py:396]     engine_core = EngineCoreProc(*args, **kwargs)
ERROR 05-12 10:41:09 [core.py:396]                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ERROR 05-12 10:41:09 [core.py:396]   File "{_SITE}/v1/engine/core.py", line 71, in __init__
ERROR 05-12 10:41:09 [core.py:396]     self.model_executor = executor_class(vllm_config)
ERROR 05-12 10:41:09 [core.py:396]   File "/srv/plugins/custom_loader.py", line 42, in load_weights
ERROR 05-12 10:41:09 [core.py:396]     table = self.index[shard_name]
ERROR 05-12 10:41:09 [core.py:396] KeyError: 'model-00003-of-00004.safetensors'
Process EngineCore_0:
Traceback (most recent call last):
  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
  File "{_SITE}/v1/engine/core.py", line 400, in run_engine_core
    raise e
KeyError: 'model-00003-of-00004.safetensors'
"""

# Two TP workers under the multiproc executor; worker 1 raises in a plugin model's forward.
_WORKER = f"""\
INFO 05-12 10:40:51 [core.py:61] Initializing a V1 LLM engine (v0.8.5) with config: model='/models/m', tensor_parallel_size=2
(VllmWorker rank=0 pid=4101) INFO 05-12 10:40:58 [parallel_state.py:1004] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0
(VllmWorker rank=1 pid=4102) INFO 05-12 10:40:58 [parallel_state.py:1004] rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470] WorkerProc hit an exception.
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470] Traceback (most recent call last):
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]   File "{_SITE}/v1/executor/multiproc_executor.py", line 465, in worker_busy_loop
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]     output = func(*args, **kwargs)
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]   File "{_SITE}/v1/worker/gpu_model_runner.py", line 1200, in execute_model
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]     hidden_states = self.model(input_ids=input_ids, positions=positions)
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]   File "/srv/plugins/my_moe.py", line 88, in forward
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470]     x = self.experts[self.route(x)](x)
(VllmWorker rank=1 pid=4102) ERROR 05-12 10:41:09 [multiproc_executor.py:470] KeyError: 'expert_17'
ERROR 05-12 10:41:09 [core.py:396] EngineCore encountered a fatal error.
"""


def test_header_ends_at_its_one_space() -> None:
    """The message after a per-line header keeps its own indentation."""
    frame = f'ERROR 05-12 10:41:09 [core.py:396]   File "{_SITE}/v1/engine/core.py", line 71'
    assert strip_log_header(frame) == f'  File "{_SITE}/v1/engine/core.py", line 71'
    code = "ERROR 05-12 10:41:09 [core.py:396]     engine_core = EngineCoreProc()"
    assert strip_log_header(code) == "    engine_core = EngineCoreProc()"
    assert strip_log_header("INFO 05-12 10:40:51 [core.py:61] Initializing") == "Initializing"
    ray = '(RayTrainWorker pid=1942, ip=10.0.0.1)   File "train.py", line 9, in f'
    assert strip_log_header(ray) == '  File "train.py", line 9, in f'


def test_engine_core_traceback_keeps_its_frames() -> None:
    """The logged traceback's frames reach the exception: the plugin's frame is named."""
    diag = diagnose_text(_ENGINE_CORE)
    root = diag.root_cause
    assert root is not None
    assert root.signature == "user-code-exception"
    assert root.evidence[0].line == 11
    files = [(f["file"].rsplit("/", 1)[-1], f["line"]) for f in root.frames]
    assert files == [("core.py", 387), ("core.py", 71), ("custom_loader.py", 42)]
    assert root.user_frame is not None
    assert (root.user_frame.file, root.user_frame.line) == ("/srv/plugins/custom_loader.py", 42)


def test_worker_traceback_keeps_rank_and_frames() -> None:
    """A worker's prefix names its rank; the frames below the two headers are read whole."""
    diag = diagnose_text(_WORKER)
    root = diag.root_cause
    assert root is not None
    assert root.signature == "user-code-exception"
    assert diag.initiating_rank == 1
    assert root.evidence[0].line == 12
    assert [f["line"] for f in root.frames] == [465, 1200, 88]
    assert root.user_frame is not None
    assert (root.user_frame.file, root.user_frame.line) == ("/srv/plugins/my_moe.py", 88)


def test_cut_logged_traceback_is_shown_unclassified() -> None:
    """A logged traceback the paste cuts before its exception line is still a traceback: the
    run failed with a cause no signature names (exit 3's shape: no root, a cut traceback)."""
    cut = "\n".join(_WORKER.splitlines()[:10]) + "\n"
    diag = diagnose_text(cut)
    assert diag.root_cause is None
    assert diag.unclassified is not None, diag.reasoning
    assert diag.unclassified.rank == 1
