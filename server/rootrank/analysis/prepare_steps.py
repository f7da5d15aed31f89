"""The steps of :func:`rootrank.analysis.prepare.prepare`, in the order they run.

:data:`STEPS` takes a finished scan to the findings the rules reason about: each step reads
the :class:`Draft` (the scan, the library, the findings so far) and adds findings the scan
could not make alone, replaces findings with a better reading of the same lines, or sets
findings aside. :data:`CONTEXT_STEPS` then run on the :class:`~rootrank.analysis.prepare.Context`
built from the draft: each adds at most one finding read from the whole log (a hang, a rank
that left, a skipped collective).

Each step is a small function named after what it does, its docstring saying what it adds
(or takes away) and the mechanism; the function it calls holds the details. A step that
depends on an earlier one comes after it: the set-asides (survived, completed) before the
findings made from what is left, the findings a cause would explain before
:func:`_exception_findings` (which reads exceptions only when no cause was found), and
the captures that refine a finding after every finding is made.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rootrank.analysis.after_run_end import collective_after_run_end
from rootrank.analysis.agent_kill import rank_kills_of_agent
from rootrank.analysis.apart import apart_finding
from rootrank.analysis.batch_split import uneven_batch_splits
from rootrank.analysis.broken_pipe import sigpipe_reader
from rootrank.analysis.cancelled import cancelled_finding
from rootrank.analysis.completed import Completed, completed_run
from rootrank.analysis.completed import set_aside as set_aside_completed
from rootrank.analysis.connect_retry import connect_retry_findings
from rootrank.analysis.cut_frames import cut_traceback_operations
from rootrank.analysis.dataset_open import dataset_open_errors
from rootrank.analysis.departed import departed_finding, uneven_batches_finding
from rootrank.analysis.ends_at_peer_loss import lost_peer_at_end
from rootrank.analysis.epoch_repeat import repeated_epochs
from rootrank.analysis.gpu_collision import gpu_collision_captures
from rootrank.analysis.handled import folded, handled_skip_finding
from rootrank.analysis.host_memory import host_memory_findings
from rootrank.analysis.init_trail import init_phase_trails
from rootrank.analysis.inspection import inspection_step_reports
from rootrank.analysis.logged import logged_exit_reasons
from rootrank.analysis.logged_handled import logged_handled_errors
from rootrank.analysis.lookup import label_lookup_errors
from rootrank.analysis.mapped_file import mapped_file_sigbus
from rootrank.analysis.named_group import named_group_captures
from rootrank.analysis.odd_line_stall import odd_line_stall_finding
from rootrank.analysis.optimizer_state import optimizer_state_sizes
from rootrank.analysis.own_kill import own_group_kills
from rootrank.analysis.parallel_wrapper import parallel_wrapper_mixes
from rootrank.analysis.pool_crash import pool_child_crashes
from rootrank.analysis.prepare import (
    Context,
    arch_mismatches,
    caught_into_warning,
    chain_user_frames,
    checkpoint_key_errors,
    child_status_first,
    config_parse_errors,
    dcp_rank_keys,
    destroyed_groups,
    earlier_faults,
    earlier_service_bind,
    exception_findings,
    framework_missing_files,
    global_ranks_from_local,
    infer,
    library_argument_checks,
    library_call_mismatches,
    node_local_files,
    nonfinite_record_fields,
    nonpositive_count_arguments,
    own_service_bind,
    record_field_errors,
    user_op_errors,
    user_statement_first,
    zero_count_divisions,
)
from rootrank.analysis.rank_files import rank_file_misses
from rootrank.analysis.ray_death import died_before_timeouts, ray_stack_hints
from rootrank.analysis.retry_loop import retry_loop_findings
from rootrank.analysis.sample_load import sample_load_errors
from rootrank.analysis.self_kill import self_kills
from rootrank.analysis.signal_exit import agent_sent, signal_exit_findings
from rootrank.analysis.silent import silent_rank_finding
from rootrank.analysis.silent_stage import silent_stage_findings
from rootrank.analysis.stack_desync import stack_desync_finding
from rootrank.analysis.stall import stall_finding
from rootrank.analysis.stuck_process import stuck_process_finding
from rootrank.analysis.subprocess_pipe import subprocess_pipe_findings
from rootrank.analysis.survived import Survived, set_aside, survived_errors, survived_values
from rootrank.analysis.truncated_read import truncated_reads
from rootrank.analysis.unfinished_phase import unfinished_phase_findings
from rootrank.analysis.unflushed_write import writer_of_read_file
from rootrank.model import Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library


@dataclass
class Draft:
    """What the :data:`STEPS` read and change, in order.

    ``state`` is the scan, or a view of it without the exceptions a step set aside (the scan
    itself is not changed, except that mapped findings' evidence learns its global rank);
    ``findings`` the findings so far; ``local_why`` the sentence that justified a
    local-to-global rank mapping (``""`` when none); ``survived``, ``handled`` and
    ``completed`` what :func:`_survived_errors`, :func:`_survived_values` and
    :func:`_completed_run` set aside (:class:`~rootrank.analysis.prepare.Context` keeps them).
    """

    state: ScanState
    library: Library
    findings: list[Finding] = field(default_factory=list)
    local_why: str = ""
    survived: list[Survived] = field(default_factory=list)
    handled: list[Finding] = field(default_factory=list)
    completed: Completed | None = None


#: A step of :data:`STEPS`: reads the draft and adds, replaces or drops its findings.
Step = Callable[[Draft], None]
#: A step of :data:`CONTEXT_STEPS`: reads the context and adds to its findings.
ContextStep = Callable[[Context], None]


def _counted(d: Draft) -> None:
    """Starts from the scan's findings whose signature matched at least its ``min_count``
    lines over the whole log (the lines a signature needs before it is a finding: one line
    of some warnings means nothing, many mean a fault)."""
    totals: Counter[str] = Counter()
    for f in d.state.findings.values():
        totals[f.signature] += f.count
    d.findings = [
        f
        for f in d.state.findings.values()
        if totals[f.signature] >= d.library.signatures[f.signature].min_count
    ]


def _agent_sent(d: Draft) -> None:
    """Drops a worker's SIGTERM/SIGHUP read as a stop from outside when torchrun's agent
    itself sent that pid its closing signal: the agent names the earliest of the failures,
    including those of the workers it stopped (:func:`~rootrank.analysis.signal_exit.agent_sent`)."""
    d.findings = agent_sent(d.findings, d.state.launch.closing_pids)


def _self_kills(d: Draft) -> None:
    """Replaces a stop from outside by a worker's own watchdog's SIGTERM to its own pid, while
    one rank retried an input (:func:`~rootrank.analysis.self_kill.self_kills`)."""
    d.findings = self_kills(d.findings, d.state, d.library)


def _own_group_kills(d: Draft) -> None:
    """Replaces a stop from outside the agent did not send by the worker's own kill of a
    child's process group, when its last line says it was stopping a process
    (:func:`~rootrank.analysis.own_kill.own_group_kills`)."""
    d.findings = own_group_kills(d.findings, d.state, d.library)


def _rank_kills_of_agent(d: Draft) -> None:
    """Replaces the launcher's own death signal by the kill of one rank that said, just
    before, it was killing processes (:func:`~rootrank.analysis.agent_kill.rank_kills_of_agent`)."""
    d.findings = rank_kills_of_agent(d.findings, d.state, d.library)


def _caught_into_warning(d: Draft) -> None:
    """Drops findings read only from a warnings-module line quoting an exception's repr: the
    library caught the exception and went on (:func:`~rootrank.analysis.prepare.caught_into_warning`)."""
    d.findings = [f for f in d.findings if not caught_into_warning(f)]


def _inspection_steps(d: Draft) -> None:
    """Drops findings read only from the user's own inspection step's srun report: that step
    is not the job (:func:`~rootrank.analysis.inspection.inspection_step_reports`)."""
    d.findings = inspection_step_reports(d.findings, d.state)


def _local_ranks(d: Draft) -> None:
    """Gives a global rank to findings that carry only torchrun's ``local_rank`` where the log
    proves the mapping (torchelastic's summary names the worker's pid and global rank, or the
    job runs on one node), merging it into that rank's own finding, and keeps the sentence
    why (:func:`~rootrank.analysis.prepare.global_ranks_from_local`)."""
    d.local_why = global_ranks_from_local(d.findings, d.state)


def _survived_errors(d: Draft) -> None:
    """Sets aside the exceptions their process caught and went on training after, and the
    findings read from them: an error the process survived is not the root cause
    (:func:`~rootrank.analysis.survived.survived_errors`)."""
    d.survived = survived_errors(d.state, d.findings, d.library)
    d.state, d.findings = set_aside(d.state, d.findings, d.survived)


def _logged_handled(d: Draft) -> None:
    """Sets aside the tracebacks a logging handler printed in a process that printed on after
    them, while the run's progress advanced and nothing else failed: handled errors, not a
    root cause (:func:`~rootrank.analysis.logged_handled.logged_handled_errors`)."""
    handled = logged_handled_errors(d.state, d.findings, d.library, d.survived)
    d.survived = [*d.survived, *handled]
    d.state, d.findings = set_aside(d.state, d.findings, handled)


def _survived_values(d: Draft) -> None:
    """Sets aside the non-finite losses the run went on past: a loss finite again later had
    its update skipped (:func:`~rootrank.analysis.survived.survived_values`)."""
    d.findings, d.handled = survived_values(d.state, d.findings, d.library)


def _completed_run(d: Draft) -> None:
    """Sets aside the errors printed before a run's visible end: the run went on past them
    to its end (:func:`~rootrank.analysis.completed.completed_run`)."""
    d.completed = completed_run(d.state, d.findings, d.library)
    d.state, d.findings = set_aside_completed(d.state, d.findings, d.completed)


def _earlier_faults(d: Draft) -> None:
    """Adds the faults of the attempts before a torchrun restart when a finding of the last
    attempt may be the restart's own; their local ranks are mapped like the last attempt's
    (a restarted attempt prints no summary of its own)
    (:func:`~rootrank.analysis.prepare.earlier_faults`)."""
    earlier = earlier_faults(d.findings, d.state, d.library)
    d.local_why = global_ranks_from_local(earlier, d.state) or d.local_why
    d.findings.extend(earlier)


def _inferred(d: Draft) -> None:
    """Adds the findings of ``inferred`` signatures: the rank whose collective differs from
    the others' at one SeqNum, or the groups the streams split into
    (:func:`~rootrank.analysis.prepare.infer`)."""
    d.findings.extend(infer(d.findings, d.library))


def _zero_count_divisions(d: Draft) -> None:
    """Adds a config error on a ZeroDivisionError after the run printed a count of 0: the
    division is by that count (:func:`~rootrank.analysis.prepare.zero_count_divisions`)."""
    d.findings.extend(zero_count_divisions(d.findings, d.state, d.library))


def _checkpoint_key_errors(d: Draft) -> None:
    """Adds a checkpoint mismatch on a KeyError raised indexing a loaded checkpoint
    (:func:`~rootrank.analysis.prepare.checkpoint_key_errors`)."""
    d.findings.extend(checkpoint_key_errors(d.findings, d.state, d.library))


def _optimizer_state_sizes(d: Draft) -> None:
    """Replaces a shape mismatch inside ``optimizer.step`` whose sizes are flat shards cut for
    two world sizes by optimizer state saved with another world size
    (:func:`~rootrank.analysis.optimizer_state.optimizer_state_sizes`)."""
    d.findings = optimizer_state_sizes(d.findings, d.state, d.library)


def _truncated_reads(d: Draft) -> None:
    """Replaces an invalid view that asks for more elements than its input holds, raised
    reading a file, by a file cut short (:func:`~rootrank.analysis.truncated_read.truncated_reads`)."""
    d.findings = truncated_reads(d.findings, d.state, d.library)


def _uneven_batch_splits(d: Draft) -> None:
    """Replaces a shape mismatch whose two sizes are the split sizes of a global batch the log
    prints over the rank count, not divisible by it, by the uneven-split finding
    (:func:`~rootrank.analysis.batch_split.uneven_batch_splits`)."""
    d.findings = uneven_batch_splits(d.findings, d.state, d.library)


def _record_field_errors(d: Draft) -> None:
    """Adds a data error on a KeyError at a user line that subscripts a record by the same
    field name: one record lacks that field
    (:func:`~rootrank.analysis.prepare.record_field_errors`)."""
    d.findings.extend(record_field_errors(d.findings, d.state, d.library))


def _label_lookup_errors(d: Draft) -> None:
    """Adds a data error on a KeyError from a label or vocabulary table indexed by a value
    the data holds (:func:`~rootrank.analysis.lookup.label_lookup_errors`)."""
    d.findings.extend(label_lookup_errors(d.findings, d.state, d.library))


def _dcp_rank_keys(d: Draft) -> None:
    """Tells a distributed-checkpoint failure which key the ranks missed and, when the key
    names a failing rank, that the checkpoint was saved by fewer ranks
    (:func:`~rootrank.analysis.prepare.dcp_rank_keys`)."""
    d.findings = dcp_rank_keys(d.findings, d.state)


def _config_parse_errors(d: Draft) -> None:
    """Adds a config file that does not parse on a parser's syntax error raised under a user
    frame that reads a configuration (:func:`~rootrank.analysis.prepare.config_parse_errors`)."""
    d.findings.extend(config_parse_errors(d.findings, d.state, d.library))


def _nonpositive_count_arguments(d: Draft) -> None:
    """Adds a config error on a library's refusal of a count that is not positive, raised from
    a user frame (:func:`~rootrank.analysis.prepare.nonpositive_count_arguments`)."""
    d.findings.extend(nonpositive_count_arguments(d.findings, d.state, d.library))


def _nonfinite_record_fields(d: Draft) -> None:
    """Adds a data error on an infinity or NaN converted to an integer on a user line that
    reads a record's field (:func:`~rootrank.analysis.prepare.nonfinite_record_fields`)."""
    d.findings.extend(nonfinite_record_fields(d.findings, d.state, d.library))


def _library_call_mismatches(d: Draft) -> None:
    """Adds a version mismatch on a TypeError about a call's arguments raised in library code:
    one installed package calls another with arguments its installed version does not take
    (:func:`~rootrank.analysis.prepare.library_call_mismatches`)."""
    d.findings.extend(library_call_mismatches(d.findings, d.state, d.library))


def _library_argument_checks(d: Draft) -> None:
    """Adds a config error on a library's check of its own settings failing with no user
    frame: the options it was started with (:func:`~rootrank.analysis.prepare.library_argument_checks`)."""
    d.findings.extend(library_argument_checks(d.findings, d.state, d.library))


def _parallel_wrapper_mixes(d: Draft) -> None:
    """Adds DTensor's refusal of a plain tensor raised under one of torch's parallel wrappers
    (:func:`~rootrank.analysis.parallel_wrapper.parallel_wrapper_mixes`)."""
    d.findings.extend(parallel_wrapper_mixes(d.findings, d.state, d.library))


def _arch_mismatches(d: Draft) -> None:
    """Adds a GPU newer than the CUDA build the log names, when a CUDA library error follows
    (:func:`~rootrank.analysis.prepare.arch_mismatches`)."""
    d.findings.extend(arch_mismatches(d.findings, d.library))


def _node_local_files(d: Draft) -> None:
    """Adds a file missing on another node: one host cannot find a path another host's lines
    read or wrote (:func:`~rootrank.analysis.prepare.node_local_files`)."""
    d.findings.extend(node_local_files(d.findings, d.state, d.library))


def _framework_missing_files(d: Draft) -> None:
    """Adds a data file not found, raised in a framework's data-loading code with no user frame
    on the way (:func:`~rootrank.analysis.prepare.framework_missing_files`)."""
    d.findings.extend(framework_missing_files(d.findings, d.state, d.library))


def _sample_load_errors(d: Draft) -> None:
    """Adds an exception raised loading one sample of a dataset, naming that sample's file
    (:func:`~rootrank.analysis.sample_load.sample_load_errors`)."""
    d.findings.extend(sample_load_errors(d.findings, d.state, d.library))


def _dataset_open_errors(d: Draft) -> None:
    """Adds a data/config error where every rank failed to open the dataset while its loader
    was built, before any step (:func:`~rootrank.analysis.dataset_open.dataset_open_errors`)."""
    d.findings.extend(dataset_open_errors(d.findings, d.state, d.library))


def _user_op_errors(d: Draft) -> None:
    """Adds a user-code exception on a RuntimeError raised in the user's own code on a line no
    signature reads (:func:`~rootrank.analysis.prepare.user_op_errors`)."""
    d.findings.extend(user_op_errors(d.findings, d.state, d.library))


def _destroyed_groups(d: Draft) -> None:
    """Adds a process group destroyed early: a rank that trained then found no default group,
    while another rank did not (:func:`~rootrank.analysis.prepare.destroyed_groups`)."""
    d.findings.extend(destroyed_groups(d.findings, d.state, d.library))


def _own_service_binds(d: Draft) -> None:
    """Drops a port-in-use finding whose traceback binds a server of the program's own (its
    exception becomes the process's own in :func:`_exception_findings`), or keeps an earlier
    attempt's as what it is (:func:`~rootrank.analysis.prepare.earlier_service_bind`)."""
    kept: list[Finding] = []
    for f in d.findings:
        own = earlier_service_bind(f, d.state, d.library) if own_service_bind(f) else f
        if own is not None:
            kept.append(own)
    d.findings = kept


def _exception_findings(d: Draft) -> None:
    """Adds, when no finding is a cause, each rank's first Python exception no finding reads:
    the process ended on it by itself (:func:`~rootrank.analysis.prepare.exception_findings`)."""
    d.findings.extend(exception_findings(d.findings, d.state, d.library))


def _writers_of_read_files(d: Draft) -> None:
    """Recasts the readers' parse errors of a file another rank said it wrote before them on
    the writer's rank (an unflushed or unsynchronised write)
    (:func:`~rootrank.analysis.unflushed_write.writer_of_read_file`)."""
    d.findings = writer_of_read_file(d.findings, d.state, d.library)


def _rank_file_misses(d: Draft) -> None:
    """Replaces a FileNotFoundError by a hand-off without a barrier (another rank's later line
    says it wrote that path) or by a per-rank file beyond the data's count
    (:func:`~rootrank.analysis.rank_files.rank_file_misses`)."""
    d.findings = rank_file_misses(d.findings, d.state, d.library)


def _repeated_epochs(d: Draft) -> None:
    """Replaces a user check's exception on a rank whose counts over E epochs are all
    multiples of E (the same data every epoch: a sampler without ``set_epoch``)
    (:func:`~rootrank.analysis.epoch_repeat.repeated_epochs`)."""
    d.findings = repeated_epochs(d.findings, d.state, d.library)


def _logged_exit_reasons(d: Draft) -> None:
    """Adds the logged reason of a rank that ended itself (a logged error, then an exit code
    of its own) (:func:`~rootrank.analysis.logged.logged_exit_reasons`)."""
    d.findings.extend(logged_exit_reasons(d.findings, d.state, d.library))


def _retry_loop(d: Draft) -> None:
    """Adds one rank's warning repeated on item after item until the job was stopped: a
    retry loop that never succeeds (:func:`~rootrank.analysis.retry_loop.retry_loop_findings`)."""
    d.findings.extend(retry_loop_findings(d.findings, d.state, d.library))


def _connect_retry(d: Draft) -> None:
    """Adds NCCL's connect retries that last until the log ends: the ranks never formed their
    group (:func:`~rootrank.analysis.connect_retry.connect_retry_findings`)."""
    d.findings.extend(connect_retry_findings(d.findings, d.state, d.library))


def _init_phase_trails(d: Draft) -> None:
    """Drops a socket-layer trail whose source and rank also hold an init.cc trail: it is
    communicator set-up failing (:func:`~rootrank.analysis.init_trail.init_phase_trails`)."""
    d.findings = init_phase_trails(d.findings)


def _host_memory(d: Draft) -> None:
    """Adds a host OOM kill on the rank whose host memory climbed in its own progress lines
    until the job was killed (:func:`~rootrank.analysis.host_memory.host_memory_findings`)."""
    d.findings.extend(host_memory_findings(d.findings, d.state, d.library))


def _unfinished_phase(d: Draft) -> None:
    """Adds the rank that started a phase every rank started and never ended it, before a stop
    from outside (:func:`~rootrank.analysis.unfinished_phase.unfinished_phase_findings`)."""
    d.findings.extend(unfinished_phase_findings(d.findings, d.state, d.library))


def _after_run_end(d: Draft) -> None:
    """Adds a desync on the one rank still in a collective after the run reported its end:
    it ran a collective in code only it executes
    (:func:`~rootrank.analysis.after_run_end.collective_after_run_end`)."""
    d.findings.extend(collective_after_run_end(d.findings, d.state, d.library))


def _silent_stage(d: Draft) -> None:
    """Adds the job's last stage that started again and printed nothing more until a stop
    from outside (:func:`~rootrank.analysis.silent_stage.silent_stage_findings`)."""
    d.findings.extend(silent_stage_findings(d.findings, d.state, d.library))


def _cut_tracebacks(d: Draft) -> None:
    """Adds the operation a traceback the log cuts before its exception line was inside, read
    from its deepest frames (:func:`~rootrank.analysis.cut_frames.cut_traceback_operations`)."""
    d.findings.extend(cut_traceback_operations(d.findings, d.state, d.library))


def _lost_peer_at_end(d: Draft) -> None:
    """Adds a log that stops at a report that a peer went away: the job died there, on the
    peer's side (:func:`~rootrank.analysis.ends_at_peer_loss.lost_peer_at_end`)."""
    d.findings.extend(lost_peer_at_end(d.findings, d.state, d.library))


def _user_frames(d: Draft) -> None:
    """Reads each finding from the user's own re-raise, from a wrapper that states a child's
    exit status, and from the next link of its chain when only that link shows user code
    (:func:`~rootrank.analysis.prepare.user_statement_first`,
    :func:`~rootrank.analysis.prepare.child_status_first`,
    :func:`~rootrank.analysis.prepare.chain_user_frames`)."""
    d.findings = [
        chain_user_frames(child_status_first(user_statement_first(f, d.state), d.state), d.state)
        for f in d.findings
    ]


def _signal_exits(d: Draft) -> None:
    """Adds the signal of a launcher's negative exit code when nothing deeper is found
    (:func:`~rootrank.analysis.signal_exit.signal_exit_findings`)."""
    d.findings.extend(signal_exit_findings(d.findings, d.library, d.state.elastic))


def _mapped_file_sigbus(d: Draft) -> None:
    """Replaces a SIGBUS exit of a rank that logged mapping a file by that file changing under
    its mapping (:func:`~rootrank.analysis.mapped_file.mapped_file_sigbus`)."""
    d.findings = mapped_file_sigbus(d.findings, d.state, d.library)


def _sigpipe_reader(d: Draft) -> None:
    """Quotes the pipe reader's own last words in a SIGPIPE exit
    (:func:`~rootrank.analysis.broken_pipe.sigpipe_reader`)."""
    d.findings = sigpipe_reader(d.findings, d.state, d.library)


def _subprocess_pipes(d: Draft) -> None:
    """Replaces a BrokenPipeError raised writing to a child process's pipe by the child's
    exit: no peer is involved (:func:`~rootrank.analysis.subprocess_pipe.subprocess_pipe_findings`)."""
    d.findings = subprocess_pipe_findings(d.findings, d.state, d.library)


def _named_groups(d: Draft) -> None:
    """Names the process group a timed-out collective ran on, when a library described it
    (:func:`~rootrank.analysis.named_group.named_group_captures`)."""
    d.findings = named_group_captures(d.findings, d.library)


def _ray_stack_hints(d: Draft) -> None:
    """Gives a Ray worker that vanished with no memory record its stack's hint
    (:func:`~rootrank.analysis.ray_death.ray_stack_hints`)."""
    d.findings = ray_stack_hints(d.findings, d.state, d.library)


def _gpu_collisions(d: Draft) -> None:
    """Captures which ranks NCCL found on one GPU, so the duplicate-GPU fix picks its variant
    by the pattern of the pairs (:func:`~rootrank.analysis.gpu_collision.gpu_collision_captures`)."""
    d.findings = gpu_collision_captures(d.findings, d.library)


def _ray_deaths_before_timeouts(d: Draft) -> None:
    """A Ray worker's death printed before the first collective timeout, with no sign that a
    timed-out process was torn down, is the cause the timeouts wait on
    (:func:`~rootrank.analysis.ray_death.died_before_timeouts`)."""
    d.findings = died_before_timeouts(d.findings, d.state, d.library)


def _pool_child_crashes(d: Draft) -> None:
    """Gives a process pool's natively crashed child the rank of its parent's
    BrokenProcessPool (:func:`~rootrank.analysis.pool_crash.pool_child_crashes`)."""
    d.findings = pool_child_crashes(d.findings, d.state)


def _log_order(d: Draft) -> None:
    """Puts the findings in log order (``Finding.order``): the rules read them so."""
    d.findings.sort(key=lambda f: f.order)


#: The steps from a finished scan to the findings the rules reason about, in order.
STEPS: tuple[tuple[str, Step], ...] = (
    ("counted", _counted),
    ("agent_sent", _agent_sent),
    ("self_kills", _self_kills),
    ("own_group_kills", _own_group_kills),
    ("rank_kills_of_agent", _rank_kills_of_agent),
    ("caught_into_warning", _caught_into_warning),
    ("inspection_steps", _inspection_steps),
    ("local_ranks", _local_ranks),
    ("survived_errors", _survived_errors),
    ("survived_values", _survived_values),
    ("completed_run", _completed_run),
    ("logged_handled", _logged_handled),
    ("earlier_faults", _earlier_faults),
    ("inferred", _inferred),
    ("zero_count_divisions", _zero_count_divisions),
    ("checkpoint_key_errors", _checkpoint_key_errors),
    ("optimizer_state_sizes", _optimizer_state_sizes),
    ("truncated_reads", _truncated_reads),
    ("uneven_batch_splits", _uneven_batch_splits),
    ("record_field_errors", _record_field_errors),
    ("label_lookup_errors", _label_lookup_errors),
    ("dcp_rank_keys", _dcp_rank_keys),
    ("config_parse_errors", _config_parse_errors),
    ("nonpositive_count_arguments", _nonpositive_count_arguments),
    ("nonfinite_record_fields", _nonfinite_record_fields),
    ("library_call_mismatches", _library_call_mismatches),
    ("library_argument_checks", _library_argument_checks),
    ("parallel_wrapper_mixes", _parallel_wrapper_mixes),
    ("arch_mismatches", _arch_mismatches),
    ("node_local_files", _node_local_files),
    ("framework_missing_files", _framework_missing_files),
    ("sample_load_errors", _sample_load_errors),
    ("dataset_open_errors", _dataset_open_errors),
    ("user_op_errors", _user_op_errors),
    ("destroyed_groups", _destroyed_groups),
    ("own_service_binds", _own_service_binds),
    ("exception_findings", _exception_findings),
    ("writers_of_read_files", _writers_of_read_files),
    ("rank_file_misses", _rank_file_misses),
    ("repeated_epochs", _repeated_epochs),
    ("logged_exit_reasons", _logged_exit_reasons),
    ("retry_loop", _retry_loop),
    ("connect_retry", _connect_retry),
    ("init_phase_trails", _init_phase_trails),
    ("host_memory", _host_memory),
    ("unfinished_phase", _unfinished_phase),
    ("after_run_end", _after_run_end),
    ("silent_stage", _silent_stage),
    ("cut_tracebacks", _cut_tracebacks),
    ("lost_peer_at_end", _lost_peer_at_end),
    ("user_frames", _user_frames),
    ("signal_exits", _signal_exits),
    ("mapped_file_sigbus", _mapped_file_sigbus),
    ("sigpipe_reader", _sigpipe_reader),
    ("subprocess_pipes", _subprocess_pipes),
    ("named_groups", _named_groups),
    ("gpu_collisions", _gpu_collisions),
    ("ray_stack_hints", _ray_stack_hints),
    ("ray_deaths_before_timeouts", _ray_deaths_before_timeouts),
    ("pool_child_crashes", _pool_child_crashes),
    ("log_order", _log_order),
)


def _added(ctx: Context, extra: Finding | None) -> None:
    """Add ``extra`` (when not ``None``) to ``ctx.findings``, kept in log order."""
    if extra is not None:
        ctx.findings.append(extra)
        ctx.findings.sort(key=lambda f: f.order)


def _stall(ctx: Context) -> None:
    """Adds a hang read from progress: the scheduler's stop came many progress intervals
    after the last progress line and no other fault explains it
    (:func:`~rootrank.analysis.stall.stall_finding`)."""
    _added(ctx, stall_finding(ctx))


def _odd_line_stall(ctx: Context) -> None:
    """Adds a hang with no progress lines that a time limit ended: the one rank that printed
    lines the others did not just before the silence took the path that blocked
    (:func:`~rootrank.analysis.odd_line_stall.odd_line_stall_finding`)."""
    _added(ctx, odd_line_stall_finding(ctx))


def _cancelled(ctx: Context) -> None:
    """Adds a Slurm cancellation no task caused: the job was stopped from outside
    (:func:`~rootrank.analysis.cancelled.cancelled_finding`)."""
    _added(ctx, cancelled_finding(ctx))


def _departed(ctx: Context) -> None:
    """Adds the rank that left the job early: the peer the others lost, the one rank with no
    failure of its own (:func:`~rootrank.analysis.departed.departed_finding`)."""
    _added(ctx, departed_finding(ctx))


def _uneven_batches(ctx: Context) -> None:
    """Adds the rank that printed fewer batches than the others before a peer was lost: it
    ended its epoch first and its collectives no longer matched
    (:func:`~rootrank.analysis.departed.uneven_batches_finding`)."""
    _added(ctx, uneven_batches_finding(ctx))


def _silent_rank(ctx: Context) -> None:
    """Adds the one rank missing from the per-rank lines the log ends on: a hang shown only by
    how the log ends (:func:`~rootrank.analysis.silent.silent_rank_finding`)."""
    _added(ctx, silent_rank_finding(ctx))


def _apart(ctx: Context) -> None:
    """Adds ranks whose last counters of the same line are far apart at the log's end: a hang
    shown only by how the log ends (:func:`~rootrank.analysis.apart.apart_finding`)."""
    _added(ctx, apart_finding(ctx))


def _stack_desync(ctx: Context) -> None:
    """Adds the odd process of the stack dumps the log ends with: it waits in another
    collective than the others (:func:`~rootrank.analysis.stack_desync.stack_desync_finding`)."""
    _added(ctx, stack_desync_finding(ctx))


def _stuck_process(ctx: Context) -> None:
    """Adds the one process in uninterruptible sleep (``D``) of a pasted ``ps`` table
    (:func:`~rootrank.analysis.stuck_process.stuck_process_finding`)."""
    _added(ctx, stuck_process_finding(ctx))


def _handled_skip(ctx: Context) -> None:
    """Adds the rank that caught an error and went on before the others' collective timeout
    (it skipped a collective), folding the error it caught into it as its trigger
    (:func:`~rootrank.analysis.handled.handled_skip_finding`)."""
    handled_skip = handled_skip_finding(ctx)
    if handled_skip is not None:
        ctx.findings[:] = folded([*ctx.findings, handled_skip], handled_skip)
        ctx.findings.sort(key=lambda f: f.order)


#: The steps that read the whole :class:`~rootrank.analysis.prepare.Context`, in order.
CONTEXT_STEPS: tuple[tuple[str, ContextStep], ...] = (
    ("stall", _stall),
    ("odd_line_stall", _odd_line_stall),
    ("cancelled", _cancelled),
    ("departed", _departed),
    ("uneven_batches", _uneven_batches),
    ("silent_rank", _silent_rank),
    ("apart", _apart),
    ("stack_desync", _stack_desync),
    ("stuck_process", _stuck_process),
    ("handled_skip", _handled_skip),
)
