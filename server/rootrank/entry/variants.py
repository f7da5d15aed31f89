"""Fix variants chosen by evidence.

A signature's ``fix`` may hold ``variants``: a list of ``{id, when, title?, summary?,
mechanism?, steps, code?, confirm?, verify?}``, the default last (it has no ``when``). The first variant whose ``when``
holds is the fix; :func:`choose` also says why, in words taken from the facts that held. A
variant's ``title`` replaces the signature's in the report (the headline, the initiating
rank's sentence, the collateral of the same signature) when the evidence that chose it
narrows the cause the title names ("no GPU or no NCCL" becomes "Windows has no NCCL");
its ``summary`` and ``mechanism`` replace the entry's likewise (a thread's exception did not
end the process the entry's words say it ended).

``when`` is a mapping; every key must hold (and), a list value holds when any item does
(or). Keys (see :data:`WHEN_KEYS`):

- ``captures: {name: regex}``: the root finding captured ``name`` and its value matches
  (``""`` only asks that it is present);
- ``message: regex``: the root cause's evidence lines, its exception message or the
  evidence lines of the other findings of its signature (a WARN line before the error)
  match (case-insensitive);
- ``frames: regex``: a frame of the root cause's traceback (``file:func``) matches;
- ``run_frames: regex``: a frame of any traceback of the diagnosed run (the root's, the
  exception it was handling, another rank's) matches, as ``file:func`` or as the source line
  the frame quotes (``model = load_model(...)``): what the job was doing when it failed,
  when the root's own traceback is not in the log or is cut;
- ``code: regex``: the source line the traceback quotes where the exception was raised
  (its innermost frame: ``assert steps % world_size == 0``) matches;
- ``user_code: regex``: the source line the traceback quotes under its innermost frame of
  the user's own code (the call into a library that then raised: ``out =
  subprocess.check_output(cmd, shell=True)``) matches;
- ``command: regex``: the launch command the log prints (``torchrun ... train.py
  --local_rank 0``) matches;
- ``call_sites_differ: bool``: the ranks' tracebacks stop at different call sites;
- ``user_frame: bool``: the root cause's traceback shows the user's own code;
- ``thread: bool``: the root cause's traceback is a thread's uncaught exception, not the
  process's (``threading.excepthook``'s ``Exception in thread <name>:`` above it, or a
  traceback whose outermost frame is ``threading.py``'s ``_bootstrap_inner``): it ended that
  thread only, and the process went on; the text may quote ``{thread}`` (``thread
  'prefetch'``, or ``thread`` when the log names none);
- ``raised_in_user: bool``: the innermost frame of the root's traceback (where the exception
  was raised) is the user's own code, not an installed library's or the Python library's
  (``raise Empty`` in ``queue.py`` is the standard library's: the user's code called it);
- ``raised_in_library: bool``: the root's traceback shows the user's own code, and its
  innermost frame (where the exception was raised) is in an installed library
  (site-packages / dist-packages) below it: the value the message complains about was used
  by the library's code, so it was either passed in by the user's call or made by the
  library itself (:func:`library_raise`); the text may quote ``{raised_loc}``.
- ``placeholder_argument: bool``: an argument on a launch line the log prints (the printed
  command, a launcher's quoted argv such as DeepSpeed's ``exits with return code`` list) is
  an unfilled template placeholder, the whole value of an option (``'--api_key',
  '{wandb_token}'``, ``--token <your-token>``, ``--key ${WANDB_KEY}`` printed unexpanded):
  the script received that literal text (:func:`placeholder_argument`); the text may quote
  ``{placeholder_arg}``.
- ``cut_traceback: bool``: the initiating rank's own traceback is in the log, cut before its
  exception line (a summary quoting its error file in part), and no exception of that rank;
- ``launcher: [name]``: the job was launched by one of :data:`LAUNCHERS`;
- ``stack: [name]``: the log shows one of these stacks (``hf``, ``deepspeed``, ``vllm``...:
  :data:`rootrank.frameworks.STACK_NAMES`, detected as that module says);
- ``findings: [id or class]`` / ``no_findings: [...]``: another finding of that signature
  id or failure class is (is not) in the log.

What the causal analysis found (:mod:`rootrank.analysis.initiator`), not only what a line
captured:

- ``initiator: [strategy]``: the initiating-rank strategy that decided is one of these
  (the names of :data:`rootrank.analysis.initiator.STRATEGIES`: ``missing_reporter``,
  ``missing_progress``, ``odd_value_out``, ``missing_from_ready``, ``victims_only``...);
- ``initiator_known: bool``: the analysis named the initiating rank (or could not);
- ``odd_op: regex``: the initiating rank runs another collective than the others (its
  ``OpType`` is one capture, the others' the peer's: ``optype``/``peer_optype`` with
  ``self_rank``/``peer_rank``) and its op matches;
- ``ops_differ: bool``: the two fingerprints a line compares name different ops
  (``optype`` vs ``peer_optype``), whichever rank is the odd one.
- ``rank_outside_world: bool``: a source line of the traceback passes a literal ``rank=R``
  with ``world_size=W`` and ``R >= W`` (``init_process_group(..., world_size=1, rank=1)``;
  ranks are 0-based, so no process is rank 0 and none hosts the TCPStore:
  :func:`rank_outside_world`).
- ``endpoint_without_port: bool``: the launch printed its rendezvous endpoint as a host with
  no port (torchrun's ``--rdzv_endpoint=node01``, its agent's config table ``rdzv_endpoint :
  node01``: :attr:`rootrank.scan.LaunchFacts.endpoint_no_port`) and no whole ``host:port``;
  the text may quote ``{endpoint_host}``.
- ``joined_over_world: bool``: the root finding's ``joined`` capture (processes that checked
  in at a store barrier: ``worker_count=16``) is greater than its ``world_size`` capture: more
  check-ins than the job has processes, so stale or extra ones (a store or init file reused
  from an earlier attempt, another job on the same address and port), not missing ranks.
- ``group_formed: bool``: after the root cause the job's process group formed and ran
  (a later NCCL or collective finding, a later traceback waiting in a collective:
  :func:`rootrank.analysis.initiator.formed_after`): a set-up failure that should have
  stopped the job was another process's (a second launcher of the same job).

What the ranks' progress lines show (:class:`rootrank.progress.ProgressModel`, the last
step per rank):

- ``peer_erred: bool``: a rank other than the root's shows an error of its own (an
  exception with that rank's tag, or a finding of a ``role: cause`` signature on it:
  :func:`rootrank.entry.peer_error`); ``false``: the log shows the root's rank and other
  ranks, and the root's rank is the only one that erred, so its error cannot be "collateral"
  of a peer's. Neither holds when the root has no rank or no other rank speaks.
- ``agree: [capture]``: at least two ranks report the root cause (its signature's findings)
  and every one of them captured the same value of each named capture (``numel``: the
  ranks wait in collectives of one size, so they built the same model);
- ``module_local: bool``: the missing module a finding captured (``module``: a dotted
  name with a package) lives in the user's own source tree: a traceback frame's file outside
  site-packages is in that package's directory (``mmseg/models/backbones/__init__.py`` for
  ``mmseg.models.backbones.x``), so no ``pip install`` brings the file back.

- ``phase: [name]``: when the root cause happened in the run: ``start-up`` (no rank printed
  a training step, :mod:`rootrank.progress`, and the log shows the run's start: loading,
  engine set-up, the first step), ``before-steps`` (no step either, but the log does not show
  the start: a pasted tail), ``finished`` (the run's progress had reached its total, or the Trainer printed its
  end-of-run summary, before the root's line: teardown, interpreter exit) or ``training``
  (anything else) (:func:`run_phase`).
- ``loss_trend: [steady | blew_up]``: what the metric series the log printed say of how a
  non-finite value came (:func:`rootrank.entry.loss_trend.loss_trend`): ``blew_up`` when a
  loss spike, gradient-norm explosion or loss-scale collapse was logged, ``steady`` when a
  finite loss was logged and none of those; the text may quote ``{loss_trend_why}``.
- ``neighbouring_sizes: bool``: the root captured two shapes of one batch (``shape_a``,
  ``shape_b``) that differ in one dimension by a step or two (``[62]`` and ``[63]``) and the
  job ran several processes (:func:`rootrank.entry.split_group.neighbouring_sizes`): a
  length-grouped sampler's group split across the ranks; the text may quote
  ``{neighbouring_sizes}``.
- ``uneven_progress: bool``: the ranks ran different numbers of batches in the epoch: the
  totals their progress lines print differ (``1250/1250`` on one rank, ``1249/1251`` on
  another), or one rank's last line reached its total (it finished the epoch) while another
  rank's stopped short of its own (:func:`uneven_progress`).

What the root's own message says about the job's other processes:

- ``sizes_apart: int``: the root captured two byte or element counts of one transfer,
  ``size`` (what arrived, what one rank passed) and ``expected_size`` (the buffer the other
  posted), and the larger is at least this many times the smaller (:func:`sizes_apart`):
  one tensor built alike on every rank and cut or padded differently (an uneven last batch,
  a list one item longer) differs by a fraction; sizes many times apart are two different
  tensors, so two different collectives met (one rank skipped or added a collective).
- ``custom_backward: bool``: the root's traceback runs through a hand-written backward: a
  frame of the user's code called by torch's ``autograd/function.py`` ``apply`` (the C++
  engine runs a ``torch.autograd.Function``'s ``backward`` through it:
  :func:`custom_backward`), so the failing op is in the user's gradient code, not a layer's;
- ``sizes_ratio: int``: as ``sizes_apart``, the larger size exactly this many times the
  smaller (``8 vs 4`` bytes: the same elements in a dtype twice as wide, float64 against
  float32, arrive exactly 2 times apart);
- ``ranks_share_path: bool``: the root and a finding of its signature on another rank
  captured the same ``path`` (two ranks failed on one file: every rank writes it);
- ``initiator_output_missing: bool``: the analysis named the initiating rank, and all the
  log holds of that rank is a launcher's report of its exit (``srun: error: node1: task 0:
  Exited with exit code 1``, torchelastic's table): no traceback, exception or other finding
  of its own (:func:`initiator_output_missing`); the text may quote ``{rank_own_output}``,
  where that rank's own output is and how to keep it, for the launcher the log shows.
- ``multi_node: bool``: the log shows the job on several nodes (launcher node flags, several
  hosts, more ranks than one node holds: :attr:`rootrank.entry.commands.Launch.multi_node`),
  or (``false``) it shows nothing of a second node;
- ``setting_differs: bool``: the root's rank printed a numeric setting of itself (``rank 3
  on vm group_rank 1 hidden 64``: a name and value after its own name, not a per-rank name such
  as a rank, host, step or loss) with another value than every other rank that printed it, the
  others agreeing (:func:`rootrank.scan.odd_setting`): the ranks were launched with different
  settings; the text may quote ``{setting_diff}``;
- ``doing: regex``: one of the last lines before the root cause's first line (a progress
  bar's last frame; rootrank.entry.hang_capture.lines_before) matches: what the job was
  doing when it failed (a dataset map, shards loading); the text may quote ``{doing_line}``;
- ``initiator_last_line: bool``: the analysis named the initiating rank, it is not the rank
  of the root's line, and a line tagged with that rank comes before the root's first evidence
  line (rootrank.entry.hang_capture.initiator_last_line): its last own line, the phase it
  stopped in, is ``{initiator_last_line}`` in the text;
- ``crash_in_user_line: bool``: faulthandler's stack of the thread that crashed (``Fatal
  Python error: Segmentation fault`` then ``Current thread ...``: rootrank.entry.frames.
  crash_stack) ends in a frame of the user's own code: that line was running a native call
  (a ctypes/cffi foreign function, a C extension, a torch op) when the signal came
  (``{crash_line}`` in the text);
- ``larger_share: bool``: the initiating rank's own counter line (``dedup 5000/60000``)
  counts to a total at least twice every other rank's in the same line
  (rootrank.entry.hang_capture.larger_share): its share of that work is larger; the text may
  quote ``{share_totals}``;
- ``rank_said: regex``: a line the initiating rank printed of itself before the root cause
  (its name and no other rank's in it, not a traceback's line:
  rootrank.entry.hang_capture.rank_own_lines) matches (``early stopping``: it decided to
  stop); the latest such line is ``{rank_said_line}`` in the text;
- ``stalled_stack: bool``: faulthandler's watchdog stacks (``Timeout (H:MM:SS)!``) stop at
  two places, one of them a single process's in its own code while the others share the
  other (rootrank.entry.frames.odd_watchdog_stack): that process stalled and held the others
  up (``{stalled_line}`` in the text: ``file:line (in func)``, ``{waited_line}`` the others');
- ``from_data: bool``: the root's traceback runs through the data pipeline: the
  DataLoader's fetch of a batch (``torch/utils/data/_utils/fetch.py`` ``fetch``, a worker's
  ``_worker_loop``) called the user's code, or the user's frame that raised is a Dataset's
  ``__getitem__``/``__iter__`` or a ``*collate*`` function (:func:`data_frame`): the value
  the message names (an index, a key, a size) was read from a record of the batch, not
  computed by the training step; the text may quote ``{data_loc}`` (``file:line (in
  func)`` of that user frame);
- ``message_directive: bool``: the exception's own message says what to change: a sentence
  of it tells the user to act (``Specify ...``, ``Set ...``, ``Use X instead``, ``You can
  ...``, ``Either ... or ...``, ``Please ...``, ``... requires X``, ``Expected A but got
  B``: :func:`message_directive`); the text may quote ``{directive}``, that sentence, and
  ``{directive_how}``, how to do it in the user's code when it names an option
  (:func:`directive_how`; empty otherwise), and ``{directive_context}``, the whole message
  when the directive is only part of it (empty otherwise);
- ``most_ranks_raised: bool``: the root's exception (its type and message) was raised by
  more ranks than the ranks the log shows that did not raise it, and at least one did not
  (ranks 1, 2 and 3 raise ``KeyError: 'img_r1'`` where rank 0 went on):
  :func:`spared_ranks`. The same line fails on every rank but the spared ones, so what it
  reads was made on those ranks only (code under ``if rank == 0``); the text may quote
  ``{raised_ranks}`` and ``{spared_ranks}`` (``ranks 1, 2 and 3``, ``rank 0``);
- ``lone_raiser: bool``: one rank alone raised the root's exception (its type and message)
  while the log shows other ranks that did not (they went past the same code, or failed
  later of something else): :func:`lone_raiser`. Every rank ran the same line, so what
  differs is that rank's input (its own file, shard or setting); the text may quote
  ``{spared_ranks}`` (``ranks 0 and 2``);
- ``passed_in: bool``: the innermost user frame's quoted line uses a name that the next
  user frame out (another function, its caller) passes in its call (``x = torch.cat([a,
  z_v])`` under ``delta = self.crh(a_norm, z_v)``): :func:`passed_in`. The value the
  message complains about was made by the caller; the text may quote ``{passed_names}``
  (```z_v```), ``{passed_verb}`` (``is``/``are``), ``{caller_loc}`` (``policy.py:176 (in
  forward)``) and ``{caller_code}``; every template may quote ``{user_code}``, the innermost
  line of the user's own code the traceback quotes (the raising line may be a library's);
- ``several_agents_one_node: bool``: two or more torchrun agents (their own pids on
  torchelastic's lines) in a log that shows one node only: the launch started torchrun once
  per Slurm task (``srun`` with ``--ntasks-per-node`` above 1), so each agent started its own
  workers on the same GPUs (:func:`several_agents_one_node`);
- ``worker_on_same_gpu: bool``: the message names another process holding memory on this
  GPU (CUDA's OOM "Process 4711 has 2.42 GiB memory in use"), that pid is another worker
  of this job (the launchers' worker pids: torchrun's agent, DeepSpeed's "Killing
  subprocess N"), and without it the allocation would have fit: two ranks share one GPU
  (:func:`worker_on_same_gpu`).

Besides the captures, ``rank``, ``host`` and ``world_size``, a variant's text may use
(:func:`rootrank.entry.fill_entry`): ``{initiating_rank}``, ``{initiator_why}`` (the
strategy's sentence), ``{odd_op}`` / ``{others_op}`` (the initiating rank's op and the
others'). A value the log does not give shows as ``<name>``.

Values are checked at load (:func:`check_when`); matching is pure Python over
:class:`Facts`, no code from the signature is run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rootrank import lazy_regex, regex_code
from rootrank.frameworks import STACK_NAMES

LAUNCHERS = (
    "torchrun",
    "mp.spawn",
    "mpirun",
    "pals",
    "deepspeed",
    "accelerate",
    "composer",
    "srun",
    "horovodrun",
    "lightning",
    "ray",
    "python",
    "vllm",
    "nccl-tests",
    "determined",
)
#: The ``why`` of a fix chosen because no variant's condition held (reports show no note).
GENERAL_WHY = "no other variant's condition holds: the general fix"
#: ``when`` keys and the type of their value.
WHEN_KEYS: dict[str, type] = {
    "captures": dict,
    "message": str,
    "frames": str,
    "run_frames": str,
    "phase": list,
    "loss_trend": list,
    "neighbouring_sizes": bool,
    "command": str,
    "code": str,
    "user_code": str,
    "call_sites_differ": bool,
    "user_frame": bool,
    "raised_in_user": bool,
    "raised_in_library": bool,
    "placeholder_argument": bool,
    "cut_traceback": bool,
    "launcher": list,
    "stack": list,
    "findings": list,
    "no_findings": list,
    "initiator": list,
    "initiator_known": bool,
    "odd_op": str,
    "ops_differ": bool,
    "uneven_progress": bool,
    "worker_on_same_gpu": bool,
    "several_agents_one_node": bool,
    "ranks_share_path": bool,
    "sizes_apart": int,
    "sizes_ratio": int,
    "group_formed": bool,
    "peer_erred": bool,
    "joined_over_world": bool,
    "agree": list,
    "module_local": bool,
    "rank_outside_world": bool,
    "endpoint_without_port": bool,
    "multi_node": bool,
    "setting_differs": bool,
    "initiator_output_missing": bool,
    "custom_backward": bool,
    "thread": bool,
    "crash_in_user_line": bool,
    "stalled_stack": bool,
    "initiator_last_line": bool,
    "doing": str,
    "rank_said": str,
    "larger_share": bool,
    "from_data": bool,
    "message_directive": bool,
    "most_ranks_raised": bool,
    "lone_raiser": bool,
    "passed_in": bool,
    "several_store_binders": bool,
    "log_lines": str,
    "request_is_setting": str,
    "memory_full": bool,
}

#: The names ``phase:`` accepts (:func:`run_phase`).
PHASES = ("start-up", "before-steps", "training", "finished")

_RANK_ARG = lazy_regex.compile(r"(?<![\w.])rank\s*=\s*(\d+)\b")
_WORLD_ARG = lazy_regex.compile(r"\bworld_size\s*=\s*(\d+)\b")
#: A file under an installed package (group 1 its path there).
_INSTALLED_FILE = lazy_regex.compile(r"[/\\](?:site|dist)-packages/(.+)$")


def rank_outside_world(codes: list[str]) -> tuple[str, int, int] | None:
    """The first source line of ``codes`` (the lines a traceback quotes under its frames)
    that passes literal keyword arguments ``rank=R`` and ``world_size=W`` with ``R >= W``,
    as ``(line, R, W)``; ``None`` when no line does. Ranks are 0-based (``0..W-1``), so such
    a call asks for a rank no world of that size has: with ``W`` processes numbered that
    way, no process is rank 0, which is the one that hosts the rendezvous TCPStore
    (``torch.distributed.rendezvous``: ``start_daemon = rank == 0``)."""
    for code in codes:
        r, w = _RANK_ARG.search(code), _WORLD_ARG.search(code)
        if r and w and int(r.group(1)) >= int(w.group(1)):
            return code, int(r.group(1)), int(w.group(1))
    return None


#: Failure classes whose findings are a launcher's report of a worker's exit, not the
#: worker's own output.
LAUNCHER_REPORT_CLASSES = frozenset({"elastic-child-failed"})


def initiator_output_missing(
    rank: int | None,
    exception_ranks: list[int | None],
    rank_findings: list[tuple[int | None, str, str]],
) -> str | None:
    """The text of the launcher's report of ``rank``'s exit when that report is all the log
    shows of ``rank``: no exception (``exception_ranks``: the rank of every traceback of the
    run, cut ones too) and every finding on that rank (``rank_findings``: ``(rank, failure
    class, first evidence line)``) is of :data:`LAUNCHER_REPORT_CLASSES`. ``None`` when
    ``rank`` is unknown, the rank printed something of its own, or no report names it.

    Mechanism: a launcher (srun, torchrun's agent, mpirun) reports a worker's exit code from
    outside the worker; the worker's own traceback goes to its own stderr, which the
    launcher's console shows only when the job keeps every task's output together. A rank
    named by that report and by nothing else failed where this log cannot see."""
    if rank is None or rank in exception_ranks:
        return None
    mine = [(cls, text) for r, cls, text in rank_findings if r == rank]
    if not mine or any(cls not in LAUNCHER_REPORT_CLASSES for cls, _ in mine):
        return None
    return mine[0][1].strip()


def initiator_names() -> tuple[str, ...]:
    """The names ``initiator:`` accepts: the strategy functions of
    :data:`rootrank.analysis.initiator.STRATEGIES` (imported here, not at module load:
    the analysis imports this package)."""
    from rootrank.analysis.initiator import STRATEGIES

    return tuple(s.__name__ for s in STRATEGIES)


@dataclass
class Facts:
    """What the log shows about this failure, for the ``when`` conditions.

    ``texts``: the root cause's evidence lines, its exception message and the evidence
    lines of the other findings of its signature (the group); ``frames``:
    ``file:func`` of every frame of its traceback; ``findings``: signature id and failure
    class of every other finding, mapped to its title.
    """

    captures: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    #: The thread whose uncaught exception the root is (its name, ``""`` when the log does not
    #: give it), not the process's: ``None`` for the main thread's
    #: (:attr:`rootrank.tracebacks.PyException.thread_died`).
    thread: str | None = None
    #: ``file:func`` and the quoted source line of every frame of every traceback of the run.
    run_frames: list[str] = field(default_factory=list)
    #: When the root cause happened (one of :data:`PHASES`) and what shows it.
    phase: str = "training"
    #: What the metric series logged before say of a non-finite value
    #: (:func:`rootrank.entry.loss_trend.loss_trend`): ``"steady"``, ``"blew_up"`` or ``""``.
    loss_trend: str = ""
    #: Two shapes of one batch one step apart in one dimension, in a job of several processes
    #: (:func:`rootrank.entry.split_group.neighbouring_sizes`): ``"[62] and [63]"``, else ``None``.
    neighbouring_sizes: str | None = None
    loss_trend_why: str = ""
    phase_why: str = ""
    #: The launch command line the log prints, or ``""``.
    command: str = ""
    #: The source line quoted under the traceback's innermost frame, or ``""``.
    code: str = ""
    #: The source line quoted under the traceback's innermost frame of the user's own code,
    #: or ``""`` (:data:`WHEN_KEYS` ``user_code``).
    user_code: str = ""
    call_sites_differ: bool = False
    user_frame: bool = False
    #: An option whose value on a printed launch line is an unfilled placeholder (:func:`placeholder_argument`).
    placeholder_argument: str | None = None
    #: Whether the innermost frame of the root's traceback is the user's own code.
    raised_in_user: bool = False
    #: Where in a library the exception was raised, below the user's frame (:func:`library_raise`).
    raised_in_library: str | None = None
    cut_traceback: bool = False
    launchers: list[str] = field(default_factory=list)
    stacks: list[str] = field(default_factory=list)
    findings: dict[str, str] = field(default_factory=dict)
    #: The initiating-rank strategy that decided (``None``: none applied) and whether it named a rank.
    initiator: str | None = None
    initiator_known: bool = False
    #: The initiating rank's collective and the others' when they differ (``None`` otherwise).
    odd_op: str | None = None
    others_op: str | None = None
    ops_differ: bool = False
    #: The ranks' progress shows different numbers of batches in the epoch (:func:`uneven_progress`).
    uneven_progress: bool = False
    #: What shows the process group formed after the root (``None``: nothing does).
    group_formed: str | None = None
    #: Another rank's own error (an exception, or a cause finding, of a rank other than the
    #: root's: ``"rank 1's ValueError (line 40)"``); ``None``: no other rank erred.
    peer_erred: str | None = None
    #: The log shows the root's rank and at least one other rank (so "no other rank erred"
    #: is something it tells, not a paste of one line).
    peers_seen: bool = False
    #: Capture name -> the one value at least two reporting ranks all captured
    #: (:func:`agreed_values`); a name the ranks disagree on, or only one rank gave, is absent.
    agree: dict[str, str] = field(default_factory=dict)
    #: The user's file that imports the missing module (``file:line``), when the module
    #: lives in the user's own source tree (``module_local``), else ``None``.
    module_local: str | None = None
    #: The traceback's source line that asks for a rank outside the world (:func:`rank_outside_world`).
    rank_outside_world: str | None = None
    #: The host of a rendezvous endpoint the launch printed without a port
    #: (:attr:`rootrank.scan.LaunchFacts.endpoint_no_port`), or ``None``.
    endpoint_no_port: str | None = None
    #: The pid of another worker of the job the root's message names on this GPU, or ``None``.
    worker_on_same_gpu: int | None = None
    #: ``line N: `text``` of the initiating rank's last own line before the root's evidence
    #: (:data:`WHEN_KEYS` ``initiator_last_line``), else ``None``.
    initiator_last_line: str | None = None
    #: The last lines before the root cause's first line, nearest first
    #: (rootrank.entry.hang_capture.lines_before): what the job was doing (:data:`WHEN_KEYS`
    #: ``doing``).
    doing: list[str] = field(default_factory=list)
    #: The initiating rank's own plain lines before the root's evidence, ``(1-based line,
    #: text)`` in line order (rootrank.entry.hang_capture.rank_own_lines), for
    #: :data:`WHEN_KEYS` ``rank_said``.
    rank_lines: list[tuple[int, str]] = field(default_factory=list)
    #: The initiating rank's counter total is many times the others' (:data:`WHEN_KEYS`
    #: ``larger_share``).
    larger_share: bool = False
    #: ``file:line (in func)`` of the user's frame innermost in faulthandler's crash stack,
    #: when the crashing thread's innermost frame is the user's (:data:`WHEN_KEYS`
    #: ``crash_in_user_line``), else ``None``.
    crash_user_line: str | None = None
    #: ``file:line (in func)`` of the stalled process's innermost user frame among faulthandler's
    #: watchdog stacks (:data:`WHEN_KEYS` ``stalled_stack``), else ``None``.
    stalled_line: str | None = None
    #: The torchrun agents' own pids when two or more ran on one node, else empty.
    several_agents: list[int] = field(default_factory=list)
    #: The ranks whose findings of the root's signature captured the root's ``path`` (two or more), else empty.
    ranks_share_path: list[int] = field(default_factory=list)
    #: The log shows the job on several nodes (``rootrank.entry.commands.Launch.multi_node``).
    multi_node: bool = False
    #: A setting the root's rank printed of itself with another value than every other rank
    #: that printed it (rootrank.scan.odd_setting), in words (``hidden 64 on rank 3, 128 on
    #: ranks 0, 1, 2``), else ``None``.
    setting_differs: str | None = None
    #: The launcher's report of the initiating rank's exit, when that report is all the log
    #: holds of the rank (:func:`initiator_output_missing`), else ``None``.
    initiator_output_missing: str | None = None
    #: ``file:line (func)`` of the user's hand-written ``backward`` the root's traceback runs
    #: through (:func:`custom_backward`), else ``None``.
    custom_backward: str | None = None
    #: ``file:line (in func)`` of the user's frame the data pipeline ran when it raised
    #: (:func:`data_frame`), else ``None``.
    data_loc: str | None = None
    #: The sentence of the exception's message that says what to change
    #: (:func:`message_directive`), else ``None``.
    directive: str | None = None
    #: ``(raised, spared)`` ranks of :func:`spared_ranks` when most ranks raised the root's
    #: exception and some did not, else ``None``.
    spared: tuple[list[int], list[int]] | None = None
    #: ``(rank, spared)`` of :func:`lone_raiser`, else ``None``.
    lone: tuple[int, list[int]] | None = None
    #: ``(caller_loc, caller_code, names)`` of :func:`passed_in`, else ``None``.
    passed: tuple[str, str, list[str]] | None = None
    #: How many processes failed to bind the rendezvous port in a worker's env:// rendezvous
    #: (:func:`rootrank.analysis.binders.store_binders`).
    store_binders: int = 0
    #: The log's first and last lines as the scan kept them (``ScanState.heads`` and
    #: ``tails`` texts), for :data:`WHEN_KEYS` ``log_lines``.
    log_text: list[str] = field(default_factory=list)
    #: ``(setting, value as printed, bytes per element)`` the failed allocation equals, set
    #: when a ``request_is_setting`` condition holds
    #: (:func:`rootrank.analysis.setting_size.setting_sized`), else ``None``.
    request_setting: tuple[str, str, int] | None = None


def check_when(when: Any) -> str | None:
    """What is wrong with a ``when`` mapping (``"key: problem"``), or ``None`` when it is
    valid: known keys, value types, regexes that compile, known launchers and stacks."""
    if not isinstance(when, dict) or not when:
        return "must be a non-empty mapping"
    for key, raw in when.items():
        typ = WHEN_KEYS.get(key)
        if typ is None:
            return f"{key}: unknown condition (one of {', '.join(WHEN_KEYS)})"
        if not isinstance(raw, typ):
            return f"{key}: must be {typ.__name__}"
        if typ is int and (isinstance(raw, bool) or not isinstance(raw, int) or raw < 2):
            return f"{key}: must be a whole number of 2 or more"
        value: Any = raw  # a dict, str, list or bool, as typ says
        patterns: list[Any] = []
        if key == "captures":
            patterns = list(value.values())
            if not value or not all(isinstance(k, str) for k in value):
                return f"{key}: must map capture names to regexes"
        elif typ is str:
            patterns = [value]
        elif typ is list:
            if not value or not all(isinstance(v, str) and v for v in value):
                return f"{key}: must be a non-empty list of names"
            allowed = {
                "launcher": LAUNCHERS,
                "stack": STACK_NAMES,
                "initiator": initiator_names() if key == "initiator" else (),
                "phase": PHASES,
                "loss_trend": ("steady", "blew_up"),
            }.get(key)
            bad = [v for v in value if allowed is not None and v not in allowed]
            if bad:
                return f"{key}: {bad[0]!r} is not one of {', '.join(allowed or ())}"
        for pattern in patterns:
            if not isinstance(pattern, str):
                return f"{key}: must be a regex string"
            try:
                regex_code.compile(pattern)
            except regex_code.error as exc:
                return f"{key}: regex does not compile: {exc}"
    return None


#: The ``when`` keys whose values are patterns, and the flags :func:`_holds` searches with.
WHEN_PATTERN_FLAGS: dict[str, int] = {
    "captures": regex_code.IGNORECASE,
    "message": regex_code.IGNORECASE,
    "frames": 0,
    "run_frames": 0,
    "code": 0,
    "command": 0,
    "odd_op": regex_code.IGNORECASE,
    "log_lines": 0,
    "request_is_setting": 0,
}


def when_patterns(when: dict[str, Any]) -> list[tuple[str, int]]:
    """The ``(pattern, flags)`` a ``when`` mapping's conditions search with (for
    :func:`rootrank.regex_code.sources`)."""
    found: list[tuple[str, int]] = []
    for key, value in when.items():
        flags = WHEN_PATTERN_FLAGS.get(key)
        if flags is not None:
            values = value.values() if isinstance(value, dict) else [value]
            found.extend((v, int(flags)) for v in values if isinstance(v, str))
    if isinstance(when.get("request_is_setting"), str):
        from rootrank.analysis.setting_size import setting_pattern  # (a build-time call)

        found.append((setting_pattern(when["request_is_setting"]), 0))
    return found


def _holds(key: str, value: Any, facts: Facts) -> str | None:
    """The reason ``key: value`` holds for ``facts``, or ``None`` when it does not."""
    if key == "captures":
        said = []
        for name, pattern in value.items():
            got = facts.captures.get(name)
            if got is None or not regex_code.search(pattern, str(got), regex_code.IGNORECASE):
                return None
            said.append(f"{name} {got}")
        return "the log gives " + ", ".join(said)
    if key == "message":
        for text in facts.texts:
            m = regex_code.search(value, text, regex_code.IGNORECASE)
            if m:
                return f'the message says "{m.group(0).strip()[:120]}"'
        return None
    if key == "frames":
        for frame in reversed(facts.frames):
            if regex_code.search(value, frame):
                return f"the traceback runs through {frame}"
        return None
    if key == "run_frames":
        for frame in reversed(facts.run_frames):
            if regex_code.search(value, frame):
                return f"a traceback of the run shows {frame.strip()[:120]}"
        return None
    if key == "neighbouring_sizes":
        sizes = facts.neighbouring_sizes
        if (sizes is not None) != value:
            return None
        return (
            f"one batch mixed the neighbouring sizes {sizes} in a job of several processes"
            if value
            else "the batch's sizes are not neighbours, or the job ran one process"
        )
    if key == "loss_trend":
        return facts.loss_trend_why if facts.loss_trend and facts.loss_trend in value else None
    if key == "phase":
        return facts.phase_why if facts.phase in value else None
    if key == "code":
        m = regex_code.search(value, facts.code) if facts.code else None
        return f"the line that raised is `{facts.code[:120]}`" if m else None
    if key == "user_code":
        m = regex_code.search(value, facts.user_code) if facts.user_code else None
        return f"your line that made the call is `{facts.user_code[:120]}`" if m else None
    if key == "command":
        m = regex_code.search(value, facts.command) if facts.command else None
        return f'the launch command has "{m.group(0).strip()[:120]}"' if m else None
    if key == "call_sites_differ":
        if facts.call_sites_differ != value:
            return None
        return (
            "the ranks' tracebacks stop at different call sites"
            if value
            else "the tracebacks show no ranks at different call sites"
        )
    if key == "cut_traceback":
        if facts.cut_traceback != value:
            return None
        return (
            "the rank's own traceback is in the log, cut before its exception line"
            if value
            else "the log holds no cut traceback of the rank"
        )
    if key == "thread":
        if (facts.thread is not None) != value:
            return None
        if not value:
            return "the exception ended the process's main thread"
        name = f"thread {facts.thread!r}" if facts.thread else "a thread"
        return (
            f"the traceback is that of {name} (threading.excepthook printed it):"
            " it ended that thread only, and the process went on"
        )
    if key == "doing":
        for text in facts.doing:
            m = regex_code.search(value, text)
            if m:
                return f"the job was at `{text[:120]}` just before"
        return None
    if key == "larger_share":
        if facts.larger_share != value:
            return None
        return (
            "the initiating rank's own counter runs to a total many times the others'"
            if value
            else "no rank's counter runs far past the others'"
        )
    if key == "rank_said":
        hits = [(n, t) for n, t in facts.rank_lines if regex_code.search(value, t)]
        if not hits:
            return None
        return f"the initiating rank said so itself at line {hits[-1][0]}: `{hits[-1][1]}`"
    if key == "initiator_last_line":
        if (facts.initiator_last_line is not None) != value:
            return None
        return (
            f"the initiating rank's last own line is {facts.initiator_last_line}"
            if value
            else "the log shows no line of the initiating rank before the failure"
        )
    if key == "stalled_stack":
        if (facts.stalled_line is not None) != value:
            return None
        return (
            f"one watchdog stack stopped in your code at {facts.stalled_line}, the others"
            " waited elsewhere"
            if value
            else "no watchdog stack stands apart from the others"
        )
    if key == "crash_in_user_line":
        if (facts.crash_user_line is not None) != value:
            return None
        return (
            f"faulthandler's crash stack ends in your own line {facts.crash_user_line}"
            if value
            else "faulthandler's crash stack does not end in your code"
        )
    if key == "user_frame":
        if facts.user_frame != value:
            return None
        return (
            "the traceback shows your own code"
            if value
            else "the traceback shows none of your code"
        )
    if key == "placeholder_argument":
        if bool(facts.placeholder_argument) != value:
            return None
        return (
            f"the printed launch line passes {facts.placeholder_argument}"
            if value
            else "no printed launch line passes a placeholder"
        )
    if key == "raised_in_user":
        if facts.raised_in_user != value:
            return None
        return "it was raised in your own code" if value else "it was raised outside your own code"
    if key == "raised_in_library":
        if bool(facts.raised_in_library) != value:
            return None
        return (
            f"it was raised in a library's code ({facts.raised_in_library}), below your own frame"
            if value
            else "it was raised in your own code"
        )
    if key == "initiator_output_missing":
        if bool(facts.initiator_output_missing) != value:
            return None
        return (
            f'the launcher\'s report "{facts.initiator_output_missing[:120]}" is all the log'
            " shows of the initiating rank"
            if facts.initiator_output_missing
            else "the log shows the initiating rank's own output"
        )
    if key == "setting_differs":
        if bool(facts.setting_differs) != value:
            return None
        return (
            f"the ranks printed different settings ({facts.setting_differs})"
            if value
            else "the ranks printed no setting that differs"
        )
    if key == "multi_node":
        if facts.multi_node != value:
            return None
        return (
            "the log shows the job on several nodes"
            if value
            else "the log shows the job on one node"
        )
    if key == "launcher":
        hit = [v for v in value if v in facts.launchers]
        return f"the job was launched with {hit[0]}" if hit else None
    if key == "stack":
        hit = [v for v in value if v in facts.stacks]
        return f"the log shows {hit[0]}" if hit else None
    if key == "findings":
        hit = [v for v in value if v in facts.findings]
        return f'the log also shows "{facts.findings[hit[0]]}"' if hit else None
    if key == "no_findings":
        hit = [v for v in value if v in facts.findings]
        return None if hit else "nothing else in the log points elsewhere"
    if key == "initiator":
        if facts.initiator not in value:
            return None
        return f"the rank analysis ended at {facts.initiator}"
    if key == "initiator_known":
        if facts.initiator_known != value:
            return None
        return (
            "the analysis names the initiating rank"
            if value
            else "the log does not show which rank stopped first"
        )
    if key == "odd_op":
        if facts.odd_op is None or not regex_code.search(
            value, facts.odd_op, regex_code.IGNORECASE
        ):
            return None
        return f"the initiating rank runs {facts.odd_op} while the others run {facts.others_op}"
    if key == "ops_differ":
        if facts.ops_differ != value:
            return None
        return (
            "the ranks run different collectives" if value else "the ranks run the same collective"
        )
    if key == "joined_over_world":
        joined, world = facts.captures.get("joined", ""), facts.captures.get("world_size", "")
        over = joined.isdigit() and world.isdigit() and int(joined) > int(world)
        if over != value:
            return None
        return (
            f"{joined} check-ins at the barrier for a world size of {world}"
            if value
            else "no more check-ins than the world size"
        )
    if key == "several_store_binders":
        if (facts.store_binders >= 2) != value:
            return None
        return (
            f"{facts.store_binders} processes of the launch each failed to host the rendezvous"
            " store on its port, which only rank 0's process does"
            if value
            else "at most one process tried to host the rendezvous store"
        )
    if key == "request_is_setting":
        from rootrank.analysis.setting_size import setting_sized

        found = setting_sized(value, facts.texts, facts.log_text)
        if found is None:
            return None
        facts.request_setting = found  # for the variant's text (rootrank.entry.fill_entry)
        name, printed, width = found
        return f"the allocation that failed is {name} ({printed}) x {width} bytes"
    if key == "memory_full":
        full = next((f for t in facts.texts if (f := memory_full(t)) is not None), None)
        if (full is not None) != value:
            return None
        return full if value else "the message shows room to defragment or free"
    if key == "log_lines":
        for text in facts.log_text:
            m = regex_code.search(value, text)
            if m:
                return f'the log shows "{m.group(0).strip()[:120]}"'
        return None
    if key == "group_formed":
        if bool(facts.group_formed) != value:
            return None
        return (
            f"the job's process group formed and ran afterwards ({facts.group_formed})"
            if value
            else "nothing shows the job's process group formed afterwards"
        )
    if key == "peer_erred":
        if bool(facts.peer_erred) != value or not facts.peers_seen:
            return None
        return (
            f"another rank erred too ({facts.peer_erred})"
            if value
            else "no other rank shows an error of its own"
        )
    if key == "agree":
        if not all(name in facts.agree for name in value):
            return None
        agreed = ", ".join(f"{name} {facts.agree[name]}" for name in value)
        return f"every reporting rank gives the same {agreed}"
    if key == "module_local":
        if bool(facts.module_local) != value:
            return None
        return (
            f"the missing module is in your own source tree (imported at {facts.module_local})"
            if value
            else "the missing module is not in your source tree"
        )
    if key == "rank_outside_world":
        call = facts.rank_outside_world or ""
        if bool(call) != value:
            return None
        return (
            f"the traceback's call `{call[:120]}` asks for a rank outside the world"
            if value
            else "no call in the traceback asks for a rank outside the world"
        )
    if key == "endpoint_without_port":
        host = facts.endpoint_no_port
        if (host is not None) != value:
            return None
        return (
            f"the launch printed its rendezvous endpoint as `{host}`, with no port"
            if value
            else "the launch printed no rendezvous endpoint without a port"
        )
    if key == "uneven_progress":
        if facts.uneven_progress != value:
            return None
        return (
            "the ranks' progress shows different numbers of batches in the epoch"
            if value
            else "the ranks' progress shows the same number of batches"
        )
    if key == "sizes_apart":
        ratio = sizes_apart(facts.captures)
        if ratio is None or ratio < value:
            return None
        size, expected = facts.captures["size"], facts.captures["expected_size"]
        return f"the sizes are {size} and {expected}: {ratio:g} times apart"
    if key == "custom_backward":
        if bool(facts.custom_backward) != value:
            return None
        return (
            f"autograd ran your own backward at {facts.custom_backward}"
            if value
            else "the traceback runs through no hand-written backward"
        )
    if key == "sizes_ratio":
        ratio = sizes_apart(facts.captures)
        if ratio != value:
            return None
        size, expected = facts.captures["size"], facts.captures["expected_size"]
        return f"the sizes are {size} and {expected}: exactly {value} times apart"
    if key == "ranks_share_path":
        if bool(facts.ranks_share_path) != value:
            return None
        return (
            f"ranks {', '.join(str(r) for r in facts.ranks_share_path)} failed on the same path"
            if value
            else "no two ranks failed on the same path"
        )
    if key == "several_agents_one_node":
        if bool(facts.several_agents) != value:
            return None
        return (
            f"the log shows {len(facts.several_agents)} torchrun agents on one node "
            f"(pids {', '.join(str(p) for p in facts.several_agents)})"
            if value
            else "the log shows one torchrun agent per node"
        )
    if key == "from_data":
        if (facts.data_loc is not None) != value:
            return None
        return (
            f"the DataLoader ran your {facts.data_loc} for the batch when it raised: the value"
            " came from a data record"
            if value
            else "the traceback does not run through the data pipeline"
        )
    if key == "message_directive":
        if (facts.directive is not None) != value:
            return None
        return (
            f'the message says what to change: "{(facts.directive or "")[:160]}"'
            if value
            else "the message does not say what to change"
        )
    if key == "most_ranks_raised":
        if (facts.spared is not None) != value:
            return None
        if not value or facts.spared is None:
            return "the ranks that raised it are not most of the job's, or none went on"
        raised, spared = facts.spared
        return (
            f"{rank_list(raised)} raised it and {rank_list(spared)} did not: the same line"
            " failed on every rank but those"
        )
    if key == "lone_raiser":
        if (facts.lone is not None) != value:
            return None
        if not value or facts.lone is None:
            return "it was not one rank alone that raised it"
        rank, others = facts.lone
        return f"rank {rank} alone raised it; {rank_list(others)} ran the same code and did not"
    if key == "passed_in":
        if (facts.passed is not None) != value:
            return None
        if not value or facts.passed is None:
            return "the line that raised uses no value its caller passes"
        loc, _code, names = facts.passed
        return f"{', '.join(names)} in the line that raised {'is' if len(names) == 1 else 'are'} passed in by {loc}"
    if key == "worker_on_same_gpu":
        if (facts.worker_on_same_gpu is not None) != value:
            return None
        return (
            f"the message shows process {facts.worker_on_same_gpu}, another worker of this job, holding memory on the same GPU"
            if value
            else "the message names no other worker of this job on the GPU"
        )
    return None


#: CUDA's OOM message (c10/cuda/CUDACachingAllocator.cpp): the request, what is free, and the
#: other processes on the GPU ("Process 198907 has 2.42 GiB memory in use").
_OTHER_PROCESS = lazy_regex.compile(
    r"\bProcess (?P<pid>\d+) has (?P<size>\d+(?:\.\d+)? [KMGT]?i?B) memory in use"
)
_REQUEST = lazy_regex.compile(r"Tried to allocate (?P<size>\d+(?:\.\d+)? ?[KMGT]?i?B)")
_FREE = lazy_regex.compile(r"of which (?P<size>\d+(?:\.\d+)? ?[KMGT]?i?B) is free")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


#: The allocator's out-of-memory figures (c10/cuda/CUDACachingAllocator.cpp, also HIP's and
#: XPU's): "GPU 1 has a total capacity of 63.98 GiB of which 0 bytes is free" and "1.39 GiB is
#: reserved by PyTorch but unallocated".
_OOM_CAPACITY = lazy_regex.compile(
    r"total capac(?:ity|ty) of (?P<capacity>[\d.]+ ?[KMGT]?i?B) of which (?P<free>[\d.]+ ?(?:[KMGT]i?B|bytes|B)) is free"
)
_OOM_UNALLOCATED = lazy_regex.compile(
    r"(?P<unallocated>[\d.]+ ?(?:[KMGT]i?B|bytes|B)) is reserved by PyTorch but unallocated"
)
#: The share of the device's capacity below which the free memory and the reserved but
#: unallocated memory are "little": what releasing or defragmenting them could give back.
FULL_SHARE = 0.05


def memory_full(message: str) -> str | None:
    """Why an out-of-memory ``message`` shows a device genuinely full, or ``None``: it prints
    the device's capacity, its free memory and PyTorch's reserved-but-unallocated memory, and
    both the free and the unallocated memory are below :data:`FULL_SHARE` of the capacity.
    Then fragmentation is not the cause (``expandable_segments`` could give back at most the
    unallocated part): the process holds nearly the whole device, and only holding less
    (sharding, offloading, a smaller peak) fits the step."""
    cap_m, un_m = _OOM_CAPACITY.search(message), _OOM_UNALLOCATED.search(message)
    if cap_m is None or un_m is None:
        return None
    capacity = _bytes(cap_m["capacity"])
    free = _bytes(cap_m["free"].replace("bytes", "B"))
    unallocated = _bytes(un_m["unallocated"].replace("bytes", "B"))
    if not capacity or free is None or unallocated is None:
        return None
    if free >= FULL_SHARE * capacity or unallocated >= FULL_SHARE * capacity:
        return None
    return (
        f"the device is full: {cap_m['free']} free of {cap_m['capacity']}, and only"
        f" {un_m['unallocated']} reserved but unallocated"
    )


def _bytes(size: str) -> float | None:
    """``"2.42 GiB"`` -> bytes (float), ``None`` for a unit CUDA does not print."""
    num = regex_code.match(r"\d+(?:\.\d+)?", size)
    unit = size[num.end() :].strip() if num else ""
    return float(num.group(0)) * _UNITS[unit] if num and unit in _UNITS else None


#: A template placeholder as a whole value: ``{name}``, ``<name>`` / ``<your token>``, ``${NAME}``.
_PLACEHOLDER_VALUE = r"(?:\{[A-Za-z_]\w{0,60}\}|<[A-Za-z_][\w -]{0,60}>|\$\{[A-Za-z_]\w{0,60}\})"
#: In a quoted argv list (DeepSpeed's launcher, subprocess reprs): ``'--opt', '{value}'``.
_QUOTED_PLACEHOLDER = lazy_regex.compile(
    r"""(?P<arg>['"]--?[A-Za-z][\w.-]{0,60}['"],\s?['"]""" + _PLACEHOLDER_VALUE + r"""['"])"""
)
#: On a printed command line: ``--opt {value}`` / ``--opt=<value>``.
_SHELL_PLACEHOLDER = lazy_regex.compile(
    r"(?:^|\s)(?P<arg>--?[A-Za-z][\w.-]{0,60}[ =]" + _PLACEHOLDER_VALUE + r")(?=\s|$)"
)


def placeholder_argument(lines: list[str]) -> str | None:
    """The first option of ``lines`` (launch lines the log prints: a command, a launcher's
    quoted argv) whose whole value is an unfilled template placeholder, as printed
    (``'--use_wandb', '{wandb_token}'``), else ``None``. A placeholder inside a longer value
    (a prompt template ``'User: {}'``, ``--fmt {x}.txt``) is a value, not a blank."""
    for line in lines:
        m = _QUOTED_PLACEHOLDER.search(line) or _SHELL_PLACEHOLDER.search(line)
        if m:
            return m.group("arg")
    return None


def library_raise(frames: list[dict[str, Any]], has_user_frame: bool) -> str | None:
    """``pkg/file.py:LINE (in func)`` of the innermost of ``frames`` (a traceback's frames,
    outermost first, as the root cause carries them: ``file``, ``line``, ``func``, ``user``)
    when it is an installed library's file (under ``site-packages``/``dist-packages``, the
    path shown from there) and the traceback also shows the user's own code
    (``has_user_frame``); ``None`` otherwise (raised in the user's code, in the Python library,
    or no user frame to contrast with)."""
    if not frames or not has_user_frame:
        return None
    last = frames[-1]
    path = str(last.get("file") or "").replace("\\", "/")
    m = _INSTALLED_FILE.search(path)
    if last.get("user") or m is None:
        return None
    func = str(last.get("func") or "")
    line = last.get("line")
    where = f"{m.group(1)}:{line}" if line else m.group(1)
    return f"{where} (in {func})" if func else where


#: torch's DataLoader fetching a batch: the map-style fetcher calls the dataset and the
#: collate_fn (torch/utils/data/_utils/fetch.py ``fetch``), a worker process runs it under
#: ``_worker_loop`` (torch/utils/data/_utils/worker.py).
_DATA_FETCH = lazy_regex.compile(r"torch[/\\]utils[/\\]data[/\\]_utils[/\\](?:fetch|worker)\.py$")
#: A user function of the data pipeline by its name: a Dataset's item access or a collate_fn.
_DATA_FUNC = lazy_regex.compile(r"^(?:__getitem__|__getitems__|__iter__|\w*collate\w*)$")


def data_frame(frames: list[dict[str, Any]]) -> str | None:
    """``file:line (in func)`` of the innermost user frame of ``frames`` (a traceback's
    frames, outermost first: ``file``, ``line``, ``func``, ``user``) when that frame runs in
    the data pipeline: the DataLoader's fetch or worker loop (:data:`_DATA_FETCH`) is an
    outer frame of it, or its function is a Dataset's ``__getitem__``/``__iter__`` or a
    ``*collate*`` function (:data:`_DATA_FUNC`); ``None`` otherwise (the raise is the
    training step's own, or no user frame).

    Mechanism: the DataLoader calls the dataset for each index and the collate_fn on the
    list of samples (``return self.collate_fn(data)``), so an exception raised there is
    about a value a record of the batch carries (an id, a label, a path, a length), and the
    record, not the step, is what to look at."""
    inner = None
    fetched = False
    for f in frames:
        if _DATA_FETCH.search(str(f.get("file") or "")):
            fetched = True
        elif f.get("user"):
            inner = (f, fetched)
    if inner is None:
        return None
    f, fetched = inner
    func = str(f.get("func") or "")
    if not fetched and not _DATA_FUNC.match(func):
        return None
    name = str(f.get("file") or "").replace("\\", "/").rsplit("/", 1)[-1]
    line = f.get("line")
    where = f"{name}:{line}" if line else name
    return f"{where} (in {func})" if func else where


#: A sentence of an exception message that tells the user what to do: an imperative at its
#: start (``Specify the reduction dim``, ``Set X``, ``Use Y instead``, ``Please pass``), an
#: offer (``You can ...``, ``You should``, ``Either set ... or ...``, ``Consider``, ``Try``,
#: ``We suggest``).
_DIRECTIVE = lazy_regex.compile(
    r"(?:^|(?<=[.:;!?]\s{1,3}))"
    r"(?P<s>(?:(?:Please|Either|Try|Consider|Specify|Set|Use|Pass|Call|Make sure|Ensure|Add|Remove"
    r"|Install|Upgrade|Downgrade|Enable|Disable|Increase|Decrease|Reduce|Change|Provide|Define"
    r"|Move|Register|Wrap|Rename|Turn off|Turn on)\b"
    r"|You (?:can|could|should|must|may|need to|might want to)\b"
    r"|We (?:suggest|recommend)\b|It is recommended\b)"
    r"[^\n]{0,400}?(?:[.!?](?=\s|$)|$))",
    regex_code.IGNORECASE,
)
#: A sentence that states a requirement or both sides of a contrast (``X requires Y``,
#: ``expected A but got B``, ``... instead``): what to change when a library says it about
#: the arguments it was given, a description when the user's own check raised it.
_REQUIREMENT = lazy_regex.compile(
    r"(?:^|(?<=[.:;!?]\s{1,3}))"
    r"(?P<s>[^.;:!?\n]{0,160}?\b(?:requires?|instead of|instead\b|expected\b[^.;\n]{1,120}\b(?:but|got)\b)"
    r"[^\n]{0,400}?(?:[.!?](?=\s|$)|$))",
    regex_code.IGNORECASE,
)


def message_directive(message: str, *, requirement: bool = True) -> str | None:
    """The sentences of ``message`` (an exception's message, as the traceback prints it)
    that say what to change (:data:`_DIRECTIVE`; with ``requirement``, also a stated
    requirement or contrast, :data:`_REQUIREMENT`), from the first such sentence to the end
    of the last one that follows it directly (``You can turn off determinism just for this
    operation, or you can use the 'warn_only=True' option``), at most 400 characters;
    ``None`` when no sentence does. A link to file an issue, or advice to print more
    (verbose, logs), is not a directive. ``requirement=False`` when the user's own code
    raised it: ``expected 16 features, got 15`` is then the user's check describing a bad
    value, not advice."""
    found: list[str] = []
    end = -1
    hits = list(_DIRECTIVE.finditer(message or ""))
    if requirement:
        hits += list(_REQUIREMENT.finditer(message or ""))
    hits.sort(key=lambda m: m.start("s"))
    for m in hits:
        if found and m.start("s") < end:
            continue  # the same sentence, matched by both
        text = m.group("s").strip()
        if not text or regex_code.search(
            r"(?i)\bfile an issue\b|github\.com|report (?:this|a bug)|TORCHDYNAMO_VERBOSE"
            r"|TORCH_LOGS|suppress_errors|for more (?:information|details)|stack trace",
            text,
        ):
            continue
        if found and m.start("s") - end > 3:
            break
        found.append(text)
        end = m.end("s")
    if not found:
        return None
    said = " ".join(found)
    return said if len(said) <= 400 else said[:397].rstrip() + "..."


def rank_list(ranks: list[int]) -> str:
    """``rank 0``, ``ranks 1 and 2``, ``ranks 1, 2 and 3`` (at most 8 named, then ``...``)."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    shown = [str(r) for r in ranks[:8]]
    if len(ranks) > 8:
        return "ranks " + ", ".join(shown) + " ..."
    return "ranks " + ", ".join(shown[:-1]) + f" and {shown[-1]}"


def spared_ranks(
    raised: Iterable[int | None], seen: Iterable[int]
) -> tuple[list[int], list[int]] | None:
    """``(raised, spared)``: the ranks that raised the root's exception (``raised``: the rank
    of each exception of the run with the root's type and message) and the ranks the log
    shows (``seen``) that did not, when more ranks raised it than were spared and at least
    one was; ``None`` otherwise (one rank alone, or as many spared: a data record or a file
    of that rank is as likely as code that runs on some ranks only).

    Mechanism: every rank runs the same script, so one line that fails on most ranks and
    not on the others reads something the others have and they do not: a value set only
    under ``if rank == 0`` / ``is_main_process`` (an evaluation's result dict, a logger or
    writer object created on the main process), which the line then uses on every rank."""
    hit = sorted({r for r in raised if r is not None})
    spared = sorted(set(seen) - set(hit))
    if not hit or not spared or len(hit) <= len(spared):
        return None
    return hit, spared


#: A Python name, not preceded by a dot (``a.b`` yields ``a``).
_NAME = lazy_regex.compile(r"(?<![\w.])[A-Za-z_]\w*")
#: Names that say nothing of where a value came from (modules, builtins, keywords).
_COMMON_NAMES = frozenset(
    "self cls torch nn F np math os sys dist True False None and or not in is if else for"
    " lambda return dim len int float str list dict tuple range print super kwargs args"
    " device dtype".split()
)


def passed_in(frames: list[tuple[str, int, str, bool, str]]) -> tuple[str, str, list[str]] | None:
    """Where the value a failing line uses came from, read from a traceback's frames
    (outermost first, ``(file, line, func, user, code)``): the innermost user frame's quoted
    line and the next user frame out (its caller, directly or through library frames such as
    nn.Module's ``__call__``; two ``forward`` methods of one file are two frames); when names of the inner line
    (not attributes, modules or builtins) appear in the caller's call arguments (after its
    first ``(``), ``(caller "file:line (in func)", caller's line, those names)``; ``None``
    otherwise. Mechanism: a function's inputs are what its caller passed, so a value the
    failing line used under the same name was made at (or before) the caller's line, which is
    the line to look at and change."""
    user = [f for f in frames if f[3] and f[4]]
    if len(user) < 2:
        return None
    inner, caller = user[-1], user[-2]
    if "(" not in caller[4]:
        return None
    used = {n for n in _NAME.findall(inner[4].split("#", 1)[0]) if n not in _COMMON_NAMES}
    args = caller[4].split("(", 1)[1]
    names = [n for n in dict.fromkeys(_NAME.findall(args)) if n in used]
    if not names:
        return None
    name = caller[0].replace("\\", "/").rsplit("/", 1)[-1]
    return f"{name}:{caller[1]} (in {caller[2]})", caller[4], names


def lone_raiser(raised: Iterable[int | None], seen: Iterable[int]) -> tuple[int, list[int]] | None:
    """``(rank, spared)``: the one rank that raised the root's exception (``raised``: the
    rank of each exception of the run with the root's type and message) and the ranks the
    log shows (``seen``) that did not, when exactly one rank raised it and at least one other
    is shown; ``None`` otherwise. The complement of :func:`spared_ranks`: the same code ran
    on every rank, so what made the one rank fail is its own input (a per-rank file, shard,
    environment or setting), not the code."""
    hit = {r for r in raised if r is not None}
    if len(hit) != 1:
        return None
    rank = hit.pop()
    others = sorted(set(seen) - {rank})
    return (rank, others) if others else None


#: An option as a directive names it: ``'warn_only=True'``, ``save_only_model=False``.
_OPTION = lazy_regex.compile(
    r"(?<![\w.])[`'\"]?(?P<name>[A-Za-z_]\w{0,60})=(?P<value>[\w.\-]{1,40})[`'\"]?"
)
#: A call the message quotes as the user made it: ``'torch.use_deterministic_algorithms(True)'``.
_QUOTED_CALL = lazy_regex.compile(
    r"[`'\"](?P<func>[A-Za-z_][\w.]{0,80})\((?P<args>[^()`'\"]{0,80})\)[`'\"]"
)


def directive_how(directive: str, message: str) -> str:
    """How to do what ``directive`` (:func:`message_directive`) says, in the user's code, when
    it names an option (``'warn_only=True'``): `` Here: ...`` with the call the message quotes
    rewritten to pass it (``torch.use_deterministic_algorithms(True, warn_only=True)``), or
    the option alone when the message quotes no call; ``""`` when the directive names no
    option (it then speaks for itself)."""
    opt = _OPTION.search(directive)
    if opt is None:
        return ""
    name, value = opt["name"], opt["value"]
    call = _QUOTED_CALL.search(message)
    if call is not None and f"{name}=" not in call["args"]:
        args = call["args"].strip()
        new = f"{call['func']}({args + ', ' if args else ''}{name}={value})"
        return f" Here: where your code calls `{call['func']}({args})`, pass the option: `{new}`."
    return f" Here: set `{name}={value}` where the job passes {name} (the keyword of the call that takes it, the launch command or the config file)."


def sizes_apart(captures: dict[str, str]) -> float | None:
    """How many times the larger of the captures ``size`` and ``expected_size`` is the
    smaller (both plain counts, bytes or elements as the message gives them), or ``None``
    when either is missing, not a count (a shape such as ``(9)`` is read as its number) or
    zero."""
    values = []
    for name in ("size", "expected_size"):
        m = regex_code.fullmatch(r"\(?\s*(\d+)\s*,?\s*\)?", str(captures.get(name, "")).strip())
        if m is None or int(m.group(1)) == 0:
            return None
        values.append(int(m.group(1)))
    return max(values) / min(values)


def custom_backward(frames: list[dict[str, Any]]) -> str | None:
    """``file:line (func)`` of the innermost user frame that torch's
    ``torch/autograd/function.py`` ``apply`` called, in a traceback's frames (outermost
    first, dicts with ``file``/``line``/``func``/``user``): the C++ autograd engine runs a
    custom ``torch.autograd.Function``'s ``backward`` as ``BackwardCFunction.apply`` ->
    ``user_fn(self, *args)`` (torch/autograd/function.py), so that frame is the user's own
    gradient code. ``None`` when no such frame is in the traceback (a library's Function,
    flash-attn's, has its backward in site-packages: not the user's)."""
    found = None
    for outer, inner in zip(frames, frames[1:], strict=False):
        path = str(outer.get("file", "")).replace("\\", "/")
        if (
            path.endswith("torch/autograd/function.py")
            and outer.get("func") == "apply"
            and inner.get("user")
        ):
            name = str(inner.get("file", "")).replace("\\", "/").rsplit("/", 1)[-1]
            found = f"{name}:{inner.get('line')} ({inner.get('func')})"
    return found


def ranks_share_path(findings: list[Any]) -> list[int]:
    """The ranks (sorted) of ``findings`` (the root and the other findings of its signature)
    that captured the root's ``path`` (``findings[0]`` is the root), when there are two or
    more; else ``[]``."""
    path = findings[0].captures.get("path") if findings else None
    if not path:
        return []
    ranks = sorted(
        {f.rank for f in findings if f.rank is not None and f.captures.get("path") == path}
    )
    return ranks if len(ranks) >= 2 else []


def several_agents_one_node(
    agents: set[int],
    multi_node: list[str],
    summary_ranks: Iterable[tuple[int | None, int | None]] = (),
) -> list[int]:
    """The torchrun agents' own pids (sorted) when the log shows two or more of them and no
    sign of several nodes (``multi_node``: a node rank above 0; or an entry of an agent's
    failure summary, given as ``(rank, local_rank)`` in ``summary_ranks``, whose global rank
    is not its local rank), else ``[]``.

    Mechanism: one torchrun agent per node starts ``--nproc-per-node`` workers; under Slurm,
    ``srun torchrun ...`` runs one agent per task, so ``--ntasks-per-node=2`` on one node runs
    two agents, each with its own rank 0..N-1 (``--standalone``: its own store), on the same
    GPUs: two copies of the job share every GPU. Two agents of one ``--nnodes=2`` job number
    their workers on from each other instead: torchelastic gives node k's local rank L the
    global rank ``k * nproc + L`` (its summary prints ``rank: 2 (local_rank: 0)``), which a
    copy of a one-node job never does, whatever host its lines show."""
    if len(agents) < 2 or multi_node:
        return []
    if any(r is not None and local is not None and r != local for r, local in summary_ranks):
        return []
    return sorted(agents)


def worker_on_same_gpu(texts: list[str], worker_pids: set[int]) -> int | None:
    """The pid of another worker of this job (``worker_pids``, as its launchers name them)
    that an OOM message in ``texts`` shows holding memory on the failing GPU, when without
    those workers the allocation would have fit (free memory plus theirs >= the request:
    a CUDA context of a few hundred MiB beside a rank that needs more is not the cause);
    ``None`` otherwise."""
    for text in texts:
        theirs = [
            (int(m.group("pid")), _bytes(m.group("size")))
            for m in _OTHER_PROCESS.finditer(text)
            if int(m.group("pid")) in worker_pids
        ]
        req, free = _REQUEST.search(text), _FREE.search(text)
        if not theirs or req is None or free is None:
            continue
        need, have = _bytes(req.group("size")), _bytes(free.group("size"))
        if need is None or have is None or any(b is None for _, b in theirs):
            continue
        if have + sum(b for _, b in theirs if b is not None) >= need:
            return theirs[0][0]
    return None


def run_phase(
    root_path: str,
    root_line: int,
    steps: list[Any],
    ended: list[tuple[str, int, str]],
    start_seen: bool,
) -> tuple[str, str]:
    """When the root cause (at ``root_path:root_line``) happened: ``(phase, why)``, the phase
    one of :data:`PHASES`. ``steps`` are the ranks' last progress lines
    (:class:`rootrank.progress.Progress`) and ``ended`` the scan's ``run_ended``
    (``(path, line, why)``: the run's progress reached its total, the Trainer's end-of-run
    summary). A run ended before the root's line (same source) is ``finished``: the fault came
    in teardown (saving, freeing, interpreter exit). No progress line at all is ``start-up``
    when ``start_seen`` (the log shows the run's launch: the job never printed a step, so it
    failed in loading, engine set-up or the first step), else ``before-steps`` (a pasted tail
    shows no step whatever the phase was).
    Progress in another source than the root's cannot be ordered against it and counts as
    ``training``."""
    for path, line, why in ended:
        if path == root_path and line < root_line:
            return "finished", f"the run had ended before it failed ({why}, line {line})"
    if not steps and start_seen:
        return "start-up", "the log shows the run's launch and no training step before the failure"
    if not steps:
        return "before-steps", "no rank printed a training step before it failed"
    return "training", "the ranks printed training steps before it failed"


def uneven_progress(last: dict[int | None, Any]) -> bool:
    """Whether the ranks' last progress lines (``rank -> Progress`` as
    :meth:`rootrank.progress.ProgressModel.last` gives them; lines with no rank ignored) show
    ranks running different numbers of batches in one epoch: at least two ranks printed a
    total (``step/total``) and the totals differ, or one rank's step equals its total while
    another stopped short of its own. ``False`` with fewer than two ranks' totals."""
    ranked = [p for r, p in last.items() if r is not None and p.total]
    if len(ranked) < 2:
        return False
    if len({p.total for p in ranked}) > 1:
        return True
    done = [p for p in ranked if p.step == p.total]
    return bool(done) and len(done) < len(ranked)


def agreed_values(reports: list[tuple[int | None, dict[str, str]]]) -> dict[str, str]:
    """Capture name -> value for the names on which the ranks agree: ``reports`` holds
    ``(rank, captures)`` of each finding of the root cause's signature; a name counts when
    at least two different ranks captured it and all captured values are equal. Findings
    with no rank are left out (they may repeat a ranked line)."""
    seen: dict[str, dict[int, str]] = {}
    for rank, caps in reports:
        if rank is None:
            continue
        for name, value in caps.items():
            if value:
                seen.setdefault(name, {})[rank] = str(value)
    return {
        name: next(iter(by_rank.values()))
        for name, by_rank in seen.items()
        if len(by_rank) >= 2 and len(set(by_rank.values())) == 1
    }


def local_module_frame(module: str | None, frames: list[tuple[str, int | None]]) -> str | None:
    """``file:line`` (the path from the package's top directory) of the frame that shows ``module`` (``pkg.sub.name``) lives in the
    user's own tree: a frame file (``(path, line)`` pairs, any traceback of the log) outside
    ``site-packages``/``dist-packages`` and the Python library whose directory ends with the
    module's package path (``.../pkg/sub/__init__.py``); ``None`` when there is none or the
    module has no package part (a top-level name says nothing about where it lives). A
    directory of that name inside another package (an ``__init__.py`` of its parent directory
    is a frame file) is a subpackage, not the module's package."""
    if not module or "." not in module:
        return None
    package = "/" + "/".join(module.split(".")[:-1]) + "/"
    files = {"/" + path.replace("\\", "/").lstrip("/") for path, _ in frames}
    for path, line in frames:
        p = "/" + path.replace("\\", "/").lstrip("/")
        if "-packages/" in p or regex_code.search(r"/lib/python\d", p):
            continue
        at = p.rfind(package)
        if at >= 0 and p[: at + 1] + "__init__.py" in files:
            # the directory above is a package itself (its __init__.py ran in a frame): this
            # is a subpackage of the same name (nemo/.../common/megatron/), not the top-level
            # package the import names
            continue
        if at >= 0 and p.rsplit("/", 1)[0] + "/" == p[: at + len(package)]:
            shown = p[at + 1 :]  # from the package's top directory: mmseg/models/.../x.py
            return f"{shown}:{line}" if line is not None else shown
    return None


def choose(fix: dict[str, Any], facts: Facts) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The variant of ``fix`` that fits ``facts``, and ``{"id", "why"}`` for the report;
    a fix with no ``variants`` is its own answer (``None`` for the variant)."""
    variants = fix.get("variants")
    if not variants:
        return fix, None
    for variant in variants:
        when = variant.get("when")
        if not when:
            return variant, {
                "id": variant["id"],
                "why": GENERAL_WHY,
            }
        reasons = []
        for key, value in when.items():
            reason = _holds(key, value, facts)
            if reason is None:
                break
            reasons.append(reason)
        else:
            return variant, {"id": variant["id"], "why": "; ".join(reasons)}
    last = variants[-1]
    return last, {"id": last["id"], "why": GENERAL_WHY}
