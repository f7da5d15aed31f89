"""Every sentence of reasoning the analysis writes, in one place.

A reason is a kind (the name of a template below) and its parameters; :func:`say` turns it
into English. Rules and strategies return reasons, never finished text, so the wording can
change (or be translated) here without touching the logic, and a test can assert the kind.
"""

from __future__ import annotations

from typing import Any


def format_ranks(ranks: list[int] | set[int]) -> str:
    """``[0, 1, 2, 3, 6, 7]`` -> ``"0-3, 6, 7"``."""
    out: list[str] = []
    values = sorted(set(ranks))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{values[i]}-{values[j]}")
        else:
            out.extend(str(v) for v in values[i : j + 1])
        i = j + 1
    return ", ".join(out)


def fmt_time(t: float | None) -> str:
    """A log time (seconds, see :mod:`rootrank.model`) as ``HH:MM:SS``; ``""`` when unknown."""
    if t is None:
        return ""
    import datetime as _dt  # only when a time is shown (issue 11: not at every start)

    stamp = _dt.datetime(2000, 1, 1) + _dt.timedelta(seconds=t)
    return stamp.strftime("%H:%M:%S")


def fmt_span(seconds: float) -> str:
    """``4000.0`` -> ``"1 h 6 min"``; ``75`` -> ``"1 min 15 s"``."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s} s"


def ranks_word(ranks: list[int] | set[int]) -> str:
    """``"rank 3"`` or ``"ranks 0-2"``."""
    return ("ranks " if len(set(ranks)) > 1 else "rank ") + format_ranks(ranks)


_TEMPLATES: dict[str, str] = {
    # --- what happened (the root cause's own line)
    "root_on_rank": 'Rank {rank} hit "{title}"{when} ({where}).',
    "root_no_rank": 'The log reports "{title}"{when} ({where}), with no rank named on that line.',
    "first_failure_explained": (
        'The failure that "{title}" led to broke first on rank {rank}: the only rank whose error'
        " it explains."
    ),
    "root_reported_by": '{Reporters} reported "{title}"{when} ({where}).',
    "victims": '{Victims} then showed "{kind}"{detail}: collateral.',
    "elastic_named_victim": (
        'torchrun\'s "first observed failure" names rank {rank}, which was a victim, not the initiator.'
    ),
    "explained": "{cause_title} explains {effect_title}{effect_where}: {why} [{rule}].",
    "root_choice": "It is the root cause: nothing else in the log explains it{most}.",
    # --- progress (a hang or a time limit)
    "progress_stopped": (
        "the last progress line was step {step}{rank_part} at {time}; no rank made progress for {silent} before the "
        "job was stopped: it had hung, it did not run out of time while training"
    ),
    "named_in_message": "the failure's own message names rank {rank} as the one at fault",
    "odd_in_table": (
        "the failure's own per-rank table gives rank {rank} the value {value} where every other"
        " rank has {majority}: rank {rank} diverged, the rank that raised only checked"
    ),
    "awaited_root_rank": (
        "{Waiters} timed out waiting in the c10d store for the NCCL unique id that rank {rank},"
        " the communicator's root, writes: rank {rank} never reached the communicator's"
        " creation, and the others waited for it"
    ),
    "own_report": "the line that reports it is rank {rank}'s, and no other rank's failure comes before it",
    "missing_from_ready": (
        "rank {rank} is the one rank missing from the ranks ready in the stalled collective"
        " ({ready}): the others waited for it"
    ),
    "first_nonfinite": (
        "rank {rank}'s own {name} went non-finite at step {step} while every other rank that prints it"
        " still had a finite value there: the NaN entered on rank {rank}, the all-reduced values and"
        " any guard on another rank followed"
    ),
    "uneven_batches": (
        "rank {rank} printed {value} {name} where every other rank printed {usual}: it ran out of"
        " batches first and went on to its next collective while the others were still in a"
        " training step's, so ranks {reporters} lost their peer"
    ),
    "uneven_batches_wait": (
        "rank {rank} printed {value} {name} where every other rank printed {usual}: it ran out of"
        " batches first and went on to its next collective while the others were still in a"
        " training step's, and the ranks waited in different collectives until the timeout"
        " (reported by rank {reporters})"
    ),
    "lone_nonfinite": (
        "rank {rank} alone printed its own {name} non-finite ({where}: '{text}'), no other rank"
        " printed one: the non-finite value entered on rank {rank}, the error every rank raised"
        " followed from it"
    ),
    "odd_message": (
        "every rank raised {exc} and rank {rank}'s message alone names '{value}' where the"
        " others name '{majority}': rank {rank} is the one whose own input differs (the others"
        " failed on what it sent)"
    ),
    "peer_victim": (
        "rank {rank} exited first, but its own error only says a peer closed the connection:"
        " it was the first victim, and the log does not show which peer left"
    ),
    "left_early": (
        "rank {rank} shows no failure at all (no error, no entry in torchelastic's failure summary,"
        " not stopped by the agent) while ranks {reporters} lost their connection to a peer: rank"
        " {rank} had left the job (it exited 0: its data ran out, or it returned early), the peer"
        " they lost"
    ),
    "signal_exit": (
        "the launcher reports exit code {code}, and a negative exit code is the signal that killed"
        " the worker: {number}, {name} (Python's subprocess returncode); nothing deeper is in the"
        " log"
    ),
    "behind_at_stop": (
        "when the job was stopped, rank {rank}'s last progress was {own} while the other ranks"
        " had reached step {top}; {timing}, so the log does not show whether the job had hung:"
        " if it had, rank {rank} is where to look"
    ),
    "left_behind": (
        "{word} {ranks} never printed the step the other ranks printed last (step {step}, line"
        " {line}): the others reached it and waited in its collective for {word} {ranks} until"
        ' the job was stopped ("{stopped_by}"): a hang on {word} {ranks}, not a lack of time'
    ),
    "progress_behind_rank": (
        "rank {rank} stopped making progress at step {step} while the other ranks reached step {others}: they "
        "waited for it"
    ),
    # --- initiating-rank strategies
    "skipped_step": (
        "rank {rank}'s own progress skips {missing} (first at line {line}), which every"
        " other rank printed, and it ended ahead of them (step {last} against {others}): it"
        " skipped a step's collectives, so its later ones met the others' earlier ones"
    ),
    "lone_submitter": (
        "rank {rank} alone submitted a collective the other ranks ({others}) never did, and is"
        " missing from theirs: the ranks wait in different collectives"
    ),
    "named_together": "ranks {ranks} are named together and the log does not tell which one started",
    "same_step": (
        "ranks {ranks} went wrong at the same step ({step}): a cause common to every rank,"
        " not one rank's"
    ),
    "odd_collective": "rank {rank} was waiting in {value} while the other ranks were in {majority}",
    "odd_optype": "rank {rank} was running {value} while the other ranks were running {majority}",
    "odd_capture": "rank {rank} passed {key} {value} where the other ranks passed {majority}",
    "guarded_work": (
        "{Ranks} failed waiting in `{collective}` inside `{func}` ({where}), the barrier the other"
        " ranks wait in while rank {rank} does the guarded work alone (dataset pre-processing,"
        " a checkpoint save): rank {rank} was still in that work when the process group's"
        " timeout ran out; the waiters are victims"
    ),
    "lock_holder": (
        "Rank(s) {waiters} gave up waiting for a shared lock; rank {rank} is the one rank that"
        " printed no error and was still working when the launcher stopped it: it held the lock"
        " (the error names the waiter, not the holder)"
    ),
    "still_working": (
        "rank {rank} was still printing its own progress ({done} of {total}, {where}) after the"
        " last line of {others}, and did not report the timeout: they waited for it in the"
        " collective while it did work only it does"
    ),
    "main_process_bar": (
        "the progress bar {desc}({whose}, {where}) was at {percent}% after {elapsed} when"
        " {ranks} timed out waiting: rank {rank} was still in that work, which only it"
        " does, and {ranks} waited for it in the collective (victims, not the cause)"
    ),
    "device_of_engine_worker": (
        "the error names GPU {rank}, and it is a vLLM tensor-parallel worker's own output: the"
        " engine starts one worker per GPU of the node, worker i on cuda:i (no device remap in"
        " the log), so GPU {rank} is worker rank {rank}'s (the local device index)"
    ),
    "device_of_error": (
        "the error names GPU {rank}, and the job ran {world} processes on one node, one per"
        " GPU (process i on cuda:i, no device remap in the log): GPU {rank} is rank {rank}'s"
    ),
    "against_reference": (
        "ranks {reporters} each compared their parameter #{index} with rank {rank}'s (\"in"
        ' process {rank}") and all found the same shape [{shape}], different from rank'
        " {rank}'s: the one model that differs is rank {rank}'s"
    ),
    "odd_printed": "every rank printed {shape} and rank {rank} printed {value} where the others printed {majority} ({where})",
    "odd_line": (
        "rank {rank} printed `{value}` where ranks {others} printed `{usual}` in the same line (line {line}: "
        "`{text}`): it took another branch before the failure, which the other ranks then saw"
    ),
    "odd_step_line": (
        "at the step the ranks stopped at, rank {rank} printed `{value}` where ranks {others}"
        " printed `{usual}` (line {line}: `{text}`), after printing the same as they did at the"
        " steps before: that step took another branch on rank {rank} (other collectives, or the"
        " same ones in another order), and the others waited in theirs"
    ),
    "odd_setting": (
        "rank {rank} printed {name} {value} where ranks {others} printed {usual} (line {line}): "
        "it ran with other settings, and what it computed reached the other ranks through the "
        "collectives"
    ),
    "lone_dtype": (
        "rank {rank} alone printed a line naming {dtype} (line {line}: `{text}`), and the byte"
        " counts are {ratio:g} times apart, the ratio of {dtype} to the others' dtype: it sent"
        " its tensor in another dtype, and the rank that aborted only received it"
    ),
    "missing_milestone": (
        "rank {rank} never printed `{text}`, which ranks {others} printed (line {line}): it did not reach "
        "that point, and the others waited for it"
    ),
    "child_signal_exit": (
        "the parent's report of its processes' exit codes ({codes}) shows {name} (rank {rank}) ended by "
        "signal {signal} while the others exited with a status of their own: it crashed first"
    ),
    "child_lone_failure": (
        "the parent's report of its processes' exit codes ({codes}) shows {name} (rank {rank}) alone "
        "exited with {code}"
    ),
    "seqnum_behind": "rank {rank} is behind (SeqNum {low}; the others are at {high})",
    "epoch_ahead": (
        "rank {rank} began epoch {epoch} (line {line}: `{text}`) before the failure while ranks"
        " {others} were still in epoch {behind}: it ran fewer steps in the epoch before (fewer"
        " batches, or a step it skipped), so its next collectives met the others' earlier ones"
    ),
    "phase_line": "rank {rank} alone logged that it entered another phase of the loop ({where}: `{text}`): it left the training step first, and its next collectives (a metric reduction, a barrier) met the others' gradient all-reduces",
    "numel_scale": "{small} passed {low} element(s), {big} passed {high}",
    "streams_diverged": "rank {rank} waits in {op} at SeqNum {low} while rank(s) {others} wait in {other_op} at SeqNum {high}: the ranks wait in different operations, so their collective streams diverged (a rank-dependent branch, unequal batch counts) and the SeqNum order does not tell which rank branched",
    "ahead_of_unbuffered": (
        "rank {rank} runs {value} at SeqNum {ahead} while the other ranks wait in {majority} at"
        " SeqNum {high} with {numel} elements, more than the transport's buffers hold: no"
        " member completes such a collective while another is still inside it, so rank {rank}"
        " never ran it: its collective sequence diverged"
    ),
    "ahead_in_sequence": "rank {rank} runs {value} at SeqNum {ahead}, past SeqNum {high} where the other ranks wait: it completed the collective they are stuck in, so its different {key} is its next collective, not a divergence, and the log does not show the rank they wait for",
    "enqueued_split": "ranks {stopped} stopped at NCCL work {done} with everything they enqueued completed, while ranks {issued} completed work {done} too and enqueued up to work {queued}: ranks {stopped} never issued work {next}, the collective the others wait in (the ranks ran different collective sequences)",
    "completed_work_behind": "rank {rank} timed out in work {work} of process group {pg}, which rank {peer} of the same group had already completed (its last completed work: {peer_done}): rank {rank} is behind, the others wait for it",
    "enqueued_work_ahead": (
        "the other {n} ranks enqueued and completed NCCL work up to {work} and issued nothing"
        " more, while rank {rank} completed {done} and enqueued up to {queued}: it issued"
        " collectives no other rank joined, the others wait for it"
    ),
    "barrier_early": "rank {rank} entered {value} while the other rank was in {other}: it left the loop early",
    "diverged_groups": "the ranks' collective streams diverged: {groups}; the log does not tell which side started",
    "lacking_keys": (
        "rank {rank} printed {n} names where every other rank printed the same {m}: it lacks {missing}"
    ),
    "two_disagree": "ranks {a} and {b} disagree ({key} {va} vs {vb}) and the log does not tell which one diverged",
    # the reason only (the fix text and the heading "Initiating rank: N" say the conclusion,
    # "Rank N is the rank the others waited for (<this reason>)")
    "missing_reporter": "rank {rank} is the one known rank that did not report it",
    "silent_straggler": (
        "rank {rank} raised nothing while ranks {waiters} failed waiting in the collective"
        " (timed out, or lost a timed-out peer's connection), and only a signal ended it{last}"
    ),
    # a thread's uncaught exception printed with no rank (threading.excepthook writes no rank
    # prefix): whose thread it was, from what the log gives (analysis.initiator.thread_owner)
    "thread_owner": (
        "{thread} died with no rank on its lines; {evidence}: its process went on without"
        " what the thread was to produce and stalled, and the others waited for it"
    ),
    "thread_owner_file": "its message names {file}, rank {rank}'s own file",
    "thread_owner_reporters": (
        "rank {rank} is the one rank that did not report the collective timeout (ranks"
        " {others} did: they waited for it)"
    ),
    "thread_owner_census": (
        "rank {rank} is the one rank that did not report the collective timeout (rank {others}"
        " did: it waited for it), and the launcher's failure table, which lists every rank of"
        " the job, shows rank {rank} stopped by the agent's closing signal: it was alive, not"
        " in the collective"
    ),
    "thread_owner_differ": (
        "{thread} died with no rank on its lines, and the log's evidence of its rank differs"
        " ({evidence}): the log does not tell whose thread it was"
    ),
    "missing_reporter_table": (
        "rank {rank} is the one rank the launcher's failure table shows stopped by the agent's closing signal"
        " while ranks {aborted} aborted themselves (SIGABRT: their watchdogs timed out)"
    ),
    "missing_reporter_cut": (
        "rank {rank} is the one known rank that did not report it, but the log cuts its"
        " traceback before the error line, so that line may simply be missing: the log does"
        " not tell which rank the others waited for"
    ),
    "missing_reporter_cut_line": (
        "rank {rank} is the one known rank that did not report it, but the log cuts its error"
        " line at that moment before the message, so that line may be its report: the log does"
        " not tell which rank the others waited for"
    ),
    "silent_in_lines": (
        "ranks {printers} each printed the same per-rank line until the log ends, rank {rank}"
        " never did and printed nothing else: rank {rank} stopped, and the others waited for"
        " it in their next collective"
    ),
    "silent_behind_in_lines": (
        "ranks {printers} each printed the same per-rank line at least {lag} more times after"
        " rank {rank}'s last one, until the log ends with no error: rank {rank} stopped, and the"
        " others waited for it in their next collective"
    ),
    "missing_progress": (
        "rank {rank} is the one rank missing from the last progress (step {step}); the other ranks went on and "
        "waited for it"
    ),
    "p2p_peer": (
        "rank {rank}'s timed-out op is a point-to-point {op} in a job of two ranks: its only peer,"
        " the {role}, is rank {peer}, which stopped (crashed, stuck, or idle with nothing to send)"
    ),
    "victims_only": "{Ranks} only reported the consequence (a victim's view); the log does not show which rank started it",
    "signal_not_sent": (
        "rank {rank} was killed by signal {signal} (pid {pid}) that torchrun's agent did not send: something outside "
        "the job killed it first (the kernel's OOM killer, a preemption, a person)"
    ),
    "object_broadcast_rank": (
        "rank {rank} was in a BROADCAST of a few int64s (broadcast_object_list's object sizes:"
        " an object shared from one rank, as checkpoint or rank-0-only code does) while its peer"
        " was in the training step's collective on float tensors (the gradient all-reduce every"
        " rank runs): rank {rank} left the common path"
    ),
    "pair_no_majority": (
        "rank {rank}'s message only says it differs from rank {peer}, and the log shows no other"
        " rank's output: it does not tell which of the two deviates"
    ),
    "first_mismatched_peer": (
        "the collective check compares each rank's fingerprint with every rank's in rank order and"
        " stops at the first that differs: ranks {agree} run the same collective and rank {rank} is the"
        " first that runs another, so rank {rank} left the path the others follow"
    ),
    "host_library": (
        "rank {rank} printed it, but the process could not load {library}, a library of the host"
        " or container that every rank on it loads the same way: no other rank got further, so"
        " the log shows the first copy of a shared failure, not a rank where it began"
    ),
    "peer_wait_timeout": (
        "rank {rank} raised it, but it is a timeout while waiting for data its peers send"
        " ({awaited}): the process that raises is only the first whose timeout fired, every"
        " rank in the same call waits alike, and no rank shows a fault of its own"
    ),
    "connect_one_end": (
        "rank {rank} could not connect to a peer ({what}), and the log shows no other rank: a"
        " failed connection has two ends, NCCL names the peer by address if at all, and"
        " which end broke it (a peer that exited or never started, a blocked port, an"
        " address this end cannot route to) the log does not tell"
    ),
    "remote_end_transport": (
        "rank {rank} printed it, but the transport error is about the other end of its connection"
        " ({what}): the peer did not answer or refused the request, and the log names that peer by"
        " address only, not by rank"
    ),
    "comparison_reporter": (
        "rank {rank} reports that its collective differs from another rank's (each side of a"
        " mismatch raises it, its own rank first), and the log shows no other rank's output: it"
        " does not tell which side deviates"
    ),
    "cut_trace_before": (
        "rank {rank} printed it, but the log starts inside an earlier trace (line {line}) whose"
        " rank and error the paste cut, so it does not show that rank {rank} failed first"
    ),
    "node_environment": (
        "rank {rank} printed it, but it is a fault of its node's environment (interfaces,"
        " hostname, the variables set there), and rank {mates} on the same host {host} runs"
        " with the same settings: the node is where it began, not a rank"
    ),
    "set_up_oom_elsewhere": (
        "rank {rank} printed it first, but rank {other} failed too before any step, in the"
        " same set-up every rank runs on the same weights: ranks {ranks} hit one memory limit"
        " together, so no rank is where it began"
    ),
    "unexplained_elsewhere": (
        "rank {other} also failed with an exception no signature explains, and the log does not show which of ranks "
        "{ranks} failed first"
    ),
    "implied_rank_group_formed": (
        "by design rank {rank} hosts it, but the job's process group formed and ran anyway ({what}): the process"
        " that failed was another one (a second launcher on the master node, another job), no rank of this group"
    ),
    "subgroup_unknown_member": (
        "the launcher names rank {rank}, but the collective that timed out ran in a group of {size} ranks"
        " (of at least {world}), and the log does not show that rank {rank} belongs to it"
    ),
    "launcher_first_elsewhere": (
        "rank {rank} printed it, but torchrun's agent saw rank {other} exit first by itself (exit code {code}) and"
        " the log shows nothing of rank {other}'s own error: the log does not show which of ranks {ranks} failed first"
    ),
    "engine_rank_zero": (
        "rank {rank} is {engine}'s engine process, the only rank whose output the log shows:"
        " {engine} runs torch.distributed in it whatever the parallel size, and its other"
        " workers (if any) run the same model code in processes whose output is not here, so"
        " the [rank0] prefix does not show which worker failed first"
    ),
    "only_visible_rank": (
        "rank {rank} is the only rank whose output the log shows, while the job ran more ({more}):"
        " a log that keeps one rank's lines shows that rank's copy of the error, not who started it,"
        " and no launcher report names rank {rank} as the first to fail"
    ),
    "alone_in_world": (
        "rank {rank} is the only rank of this job (its world size is 1), so the error it raised"
        " started there"
    ),
    "same_on_every_rank": (
        "only rank {rank}'s copy of this set-up error is in the log, and every rank runs the same set-up: "
        "the log does not show which rank hit it first"
    ),
    "sole_launcher_failure": (
        "only rank {rank}'s copy of this set-up error is in the log, and the launcher's record of"
        " the first failure it observed names rank {rank} alone (exit code {code}): the launcher"
        " logs the workers it finds failed and stops the rest, so rank {rank} is the first"
        " observed failure"
    ),
    "went_further": (
        "only rank {rank} raised this set-up error, and {others} went on past it (line {line}:"
        " `{text}`, which rank {rank} never printed): the others passed the same check, so"
        " the value it tested was rank {rank}'s own"
    ),
    "same_on_every_rank_launcher": (
        "the launcher saw rank {rank} fail first, but no line names the rank that raised it and every rank "
        "runs the same set-up: the log does not show which rank hit it first"
    ),
    "odd_call_site": (
        "rank {rank} waits in {its} at {where} while {others} wait in {theirs} at {their_where}: "
        "the one rank whose collective call site differs from every other rank's took another "
        "path through the code, and the others waited for a collective it never reached"
    ),
    "watchdog_abort": (
        "torchelastic's summary names rank {rank}, but its exit (SIGABRT) is how the NCCL watchdog ends a rank "
        "whose collective timed out: the first rank to time out, not the one the others waited for"
    ),
    "lone_non_aborter": (
        "gloo's receive-size check aborted ranks {aborted} (SIGABRT in torchelastic's summary) and "
        "not rank {rank}: gloo checks sizes where data arrives, so every other rank received more "
        "than it expected from one peer, and rank {rank}, which received no more than it posted, "
        "is that sender"
    ),
    "timeout_reporter_exit": (
        "torchelastic's summary names rank {rank}, but the root is a hang that rank reported (it waited "
        "in a collective or sat in place until a timeout ended it): the first rank to give up waiting, "
        "not the one the others waited for"
    ),
    "spawn_self_signal": (
        "mp.spawn's parent reports that process {rank} (its rank) ended with {sig}, a signal no other"
        " process sends: its own abort, and the error printed with no rank before it is rank {rank}'s;"
        " the parent then terminated the others"
    ),
    "unpaired_p2p_peer": (
        "the ranks printed their point-to-point peers, and rank {rank}'s do not pair: {sides}."
        " A send completes only when its destination receives from that rank, so rank {rank}'s"
        ' peer table is wrong ("{text}", {where}) and the ranks around it wait until the timeout'
    ),
    "reported_by_launcher": "the launcher reports that rank {rank} exited by itself with code {code}",
    "launcher_first_failure": (
        "the launcher names rank {rank} as the first process that failed; {victims} only"
        ' reported the consequence ("{title}"), so rank {rank}\'s own error started it (it'
        " is not in the log: read rank {rank}'s output)"
    ),
    "died_unrequested": (
        "{manager} reports that rank {rank}'s process (pid {pid}) died without being asked to"
        " (exit type {exit_type}): its own death, not a stop the job sent it"
    ),
    "reported_by_launcher_unranked": (
        "no rank is named on that line; the launcher reports that only rank {rank} exited by"
        " itself (with code {code}), so it is the rank that raised it"
    ),
    "launcher_one_of_copies": (
        "no rank is named on that line, and {n} processes printed the same exception without"
        " a rank: the launcher's report of rank {rank} exiting by itself (code {code}) names"
        " the first exit it saw, not the process that raised it first"
    ),
    "reported_first": "rank {rank} reported it first, at {time}",
    "same_second": (
        "{Ranks} report it within the same second ({time}); their lines carry no timestamp"
        " of their own (a traceback prints none), so the stamps before them are only lower"
        " bounds in one second of the log's clock and give no order between them"
    ),
    "seqnum_spread": (
        "rank {rank}'s SeqNum stands out, but the ranks' watchdogs report {n} different"
        " SeqNums ({values}): ranks far ahead of a peer in collectives that need it completed"
        " them locally, so the traffic between them stalled (a transport signature), not one"
        " lagging rank"
    ),
    "seqnum_by_host": (
        "rank {rank}'s SeqNum stands out, but the ranks that agree ({ranks}) are exactly the"
        " ranks of host {host}: one node's ranks ahead or behind together is a node against a"
        " node (its transport), not one lagging rank"
    ),
    "all_report": "{Ranks} all report it and the log does not tell which one started",
    "scheduler_kill": (
        "the scheduler killed the job or step itself (slurmstepd's CANCELLED AT line): every"
        " task was stopped at once, and a task label in front of that line is only the stream"
        " it came through, so no rank started it"
    ),
    "one_host_exited": (
        "ranks {ranks}, the only ranks that report it, are exactly the tasks srun reports"
        " exiting by themselves, all on {host}, while srun killed every other task: one node"
        " failed alike, {host} (its first rank {first})"
    ),
    "silent_block": (
        "ranks {ranks} ({n} of world size {world}) print no line at all while {reporters} ranks"
        " report the timeout: they never started or never joined{between} (one node's tasks),"
        " and the others waited for them; rank {first} is the first of them"
    ),
    "ahead_of_dump_receivers": (
        "rank {rank} timed out in work {work} after completing work {done}, while {peers}"
        " (which received its dump signal) completed work {done} too with nothing more"
        " enqueued: work {work} is a collective only rank {rank} issued (the ranks' collective"
        " sequences differ by one)"
    ),
    "counters_crossed": (
        "rank {rank} timed out in work {work} with work up to {queued} enqueued and only {done}"
        " completed, while {peers} completed work {peer_done} and more yet enqueued no further"
        " than {peer_queued}: the same work numbers are not the same collectives on both sides,"
        " so rank {rank} issued collectives the others never joined (its stream diverged)"
    ),
    "printed_and_exited_first": (
        "several ranks report it, but rank {rank} printed it first (line {line}) and the"
        " launcher reports its own end ({code}) before any other rank's: {others} failed"
        " the same way after it"
    ),
    "alone_first_attempt": (
        "{Ranks} all report it in the last attempt, but in the first attempt of the job (lines "
        "before {line}) rank {rank} alone raised the same {exc}: what the failed attempts left "
        "behind makes more ranks fail alike after a restart"
    ),
    "implied_rank": "this failure happens on rank {rank} by design ({reason})",
    "next_traceback_rank": (
        "rank {rank}, the only rank the log names, raised the traceback that follows it"
        ' (line {line}): the unranked "{title}" is the error of that process'
    ),
    "implied_rank_agent": (
        "its traceback runs through the launcher (torchrun's agent, torch.distributed.launch), not a worker:"
        " the process that failed is no training rank"
    ),
    "implied_rank_several_binders": (
        "{n} processes each failed to bind the store's port in their own init_process_group, "
        "which only rank 0's process does: each took rank 0 itself, so the log does not show "
        "which rank of the launch any of them was"
    ),
    "implied_rank_worker_untagged": (
        "a worker's traceback runs through init_process_group, but no line names that worker's rank: "
        "the log does not show which rank failed to bind the store"
    ),
    "implied_rank_worker": (
        "rank {rank}'s own traceback runs through init_process_group: its process failed to bind the store"
    ),
    "elastic_only_real": (
        "torchelastic's summary shows rank {rank} exited with code {code} while the others were stopped by the agent"
    ),
    "elastic_single": "torchelastic's summary names rank {rank} (exit code {code}); no other rank's failure is in the log",
    "elastic_first_with_siblings": (
        "torchelastic's summary names rank {rank} (exit code {code}) as the first observed failure: the earliest "
        "timestamp of its summary, which also lists {siblings}"
    ),
    "elastic_first": "torchelastic's summaries show rank {rank} failed first (exit code {code}), before ranks {others}",
    "elastic_first_precise": (
        "torchelastic's summaries give the same second for ranks {others} and rank {rank}, but"
        " the agents' own failure lines show rank {rank} exited first (exit code {code}), {gap} s"
        " before any other"
    ),
    "elastic_same_time": (
        "ranks {ranks} all failed at the same time (torchelastic's summary); the log does not tell which one started"
    ),
    "strategies_disagree": (
        "the evidence points at different ranks ({candidates}); rootrank names none rather than a wrong one"
    ),
    "odd_watchdog_stack": (
        "faulthandler's watchdog stacks show rank {rank} stalled in its own code at {where} (in"
        " {func}) while the other {n} stacks waited at {their_where} (in {their_func}): every"
        " rank's watchdog fired, and the others were waiting for rank {rank}"
    ),
    "agree": "Other evidence points at the same rank ({strategies})",
    "other_runs": (
        "The log holds {n} different runs, one after the other; this is the diagnosis of the last"
        " one (from line {line}), as a folder of several runs is diagnosed by its newest. Left"
        " out: {runs}."
    ),
    "other_runs_note": (
        "{path}: the file holds {n} different runs: diagnosed the last (from line {line});"
        " left out {runs}"
    ),
    "attempts": (
        "The log holds {n} runs of the job, each started after the one before had failed; this is the "
        "diagnosis of the last one (from line {line}), the run that ended the job."
    ),
    "attempts_finished": (
        "The log holds {n} runs, one after the other, each started after the one before had failed;"
        " this is the diagnosis of the last one (from line {line}), and it finished: {why} ({where})."
        " The failure before it (lines {first}-{before}) ended an earlier run, not this one:"
        " diagnose those lines alone for it."
    ),
    "other_runs_finished": (
        "The run diagnosed (from line {line}) finished: {why} ({where}); the failure of the run"
        " left out is that run's, not this one's: diagnose its lines alone for it."
    ),
    "attempts_restart": (
        "The log holds {n} runs of the job, each started after the one before had failed; the last "
        "one (from line {line}) failed as it restarted, so the fault of the run before it is the cause."
    ),
    "node_sections": (
        "The section from line {line} begins like a new run, but it is another node of the same run ({why}): "
        "the nodes' output is read as one run."
    ),
    "quiet_tail": (
        "The part of the log from line {line} begins like a new run but shows no failure, no"
        " end and no training step of its own (a run ends in a failure or an end; this part was"
        " cut before either); the failure of the part before it (lines {first}-{before}) is"
        " read as the job's."
    ),
    "survived": (
        '"{title}" ({where}) was survived: {who} went on to step {after} (line {after_line}),'
        " past step {before}, its highest before it, and no launcher reports its worker failed;"
        " collateral, not the root cause [{rule}]."
    ),
    "logged_handled": (
        '"{title}" ({where}) was handled: a logging handler printed its traceback and its process'
        " printed on, the run's progress reached step {after} (line {after_line}), and no"
        " re-raise, launcher or Ray report of a death or a failed exit follows; collateral, not"
        " the root cause [{rule}]."
    ),
    "logged_handled_again": (
        '"{title}" ({where}) was handled: the same logging handler printed the same error, at the'
        " same line, that the run went on past (to step {after}, line {after_line}) before, and"
        " no re-raise, launcher or Ray report of a death or a failed exit follows; collateral,"
        " not the root cause [{rule}]."
    ),
    "value_survived": (
        '"{title}" ({where}) was survived: the same loss series was finite again after it, to its last step {after}'
        " (a NaN that reached the weights keeps every later loss NaN, so that step's update was"
        " skipped), and no launcher reports a worker failed; collateral, not the root cause"
        " [{rule}]."
    ),
    "run_completed": (
        "The run reached its end at {where} ({why}) after the errors before it ({n} lines), with no"
        " launcher reporting a failed worker and no process dying of a traceback (none up to the"
        " script's top level, or every rank printed on after it): they were caught and"
        " survived; collateral, not the root cause [{rule}]."
    ),
    "completed_set_aside": ('Survived, not harmless: "{title}" ({where}{ranks}){every}'),
    "completed_no_steps": (
        "No rank printed a training step before that end: the end shows the processes exited"
        " cleanly, not that training ran; check the run did its work (its steps, its outputs)"
    ),
    "same_error_elsewhere": (
        "{others} also printed the same error as rank {rank} (or a traceback the log cuts"
        " before its error line): ranks running the same code and config raise it alike, so the log"
        " does not tell which of ranks {ranks} started it"
    ),
    "earlier_unexplained": (
        "{text} ({where}, no rank) was printed before the root cause, nothing explains it and"
        " the run went on after it: an earlier failure of its own, not the root cause's effect."
    ),
    "no_known_failure": "No known failure found. The last exception{rank_part} is {type} at {where}.",
    "log_ends_in_traceback": (
        "The log ends inside a traceback{rank_part} ({where}): the exception line that would name"
        " the failure is cut off, so a failure was under way but the log does not say which."
    ),
    "local_rank_summary": "torchrun's summary gives pid {pid} (local_rank {local}) the global rank {rank}",
    "local_rank_single_node": "local_rank {local} is global rank {local}: {proof}",
    "local_rank_same_agent": (
        "local_rank {local} (pid {pid}) is global rank {rank}: the torchrun agent (pid {agent}) that"
        " saw it fail reports its later worker pid {other} as rank {other_rank} (local_rank"
        " {other_local}) in its summary, and the rendezvous gives the same agents the same node"
        " rank on every restart"
    ),
}


def say(reason: str, /, **params: Any) -> str:
    """The sentence for ``reason`` with ``params`` filled in.

    A parameter whose name starts with a capital (``Ranks``) is filled with its value with
    the first letter upper-cased (sentence start). Raises ``KeyError`` for an unknown kind.
    """
    text = _TEMPLATES[reason]
    values = dict(params)
    for key, value in params.items():
        if isinstance(value, str) and key[:1].isupper():
            values[key] = value[:1].upper() + value[1:]
    return text.format(**values)


def sentence(text: str) -> str:
    """``text`` as a sentence: first letter upper-case, one final period."""
    text = text.strip()
    if not text:
        return text
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
