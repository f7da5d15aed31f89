"""What to run to see where every rank is while a job hangs, for the launcher the log shows.

A hang whose log does not name the rank at fault (every reporter waits in the same
collective, the stuck rank printed nothing) is decided by one look at each rank's Python
stack: the rank that is *not* inside the collective the others wait in is the one they wait
for, and its stack shows why (data loading, a save, an evaluation, a branch); all ranks inside
the same NCCL kernel means the link stalled. :func:`rank_stacks` gives that look as one
command for the job's own launcher, filled into a fix as ``{rank_stacks}``:

- Ray: ``ray stack`` on each node (the Ray CLI dumps every Ray worker's Python stack with
  py-spy; https://docs.ray.io/en/latest/ray-observability/user-guides/debug-apps/debug-hangs.html);
- Slurm (``srun`` in the log): one step per node beside the hung one, ``srun --overlap``
  (Slurm 20.11+: a step that shares the allocation's resources with the running step), that
  dumps the node's training processes with ``py-spy dump --pid``;
- Kubernetes: ``kubectl exec`` into each pod of the job;
- several nodes otherwise: the same loop on every node;
- one node: rootrank's own ``rootrank run --on-stall dump -- <command>`` (docs/live.md: it
  dumps every process of the job with py-spy when progress stops and names the rank that is not
  in a collective) for the next run, or the loop now, while it hangs.

The processes are found with ``pgrep -f`` on the entry script or module the log names (the
launcher's own process matches too; its stack is harmless to print).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rootrank import lazy_regex, regex_code
from rootrank.entry.commands import Launch
from rootrank.ranklines import last_own_line, own_lines
from rootrank.ranks import strip_wrapper_stamp

#: The py-spy loop over one node's processes whose command line holds ``{pattern}``.
_LOOP = "for p in $(pgrep -f {pattern}); do py-spy dump --pid $p; done"


def _pattern(launch: Launch, module: str | None) -> str:
    """What ``pgrep -f`` looks for: the entry script's file name, else the ``-m`` module,
    else ``<your script>``."""
    script = (launch.script or "").strip()
    if script.startswith("-m "):  # a ``-m pkg.mod`` launch: the module is what pgrep finds
        return script[3:].strip() or "<your script>"
    if script:
        return script.replace("\\", "/").rsplit("/", 1)[-1]
    if module:
        return module
    return "<your script>"


def rank_stacks(
    launch: Launch,
    launchers: Iterable[str],
    stacks: Iterable[str],
    module: str | None = None,
) -> str:
    """The sentence (with its command in backticks) that dumps every rank's Python stack of
    this job while it hangs, chosen by what the log shows: ``launchers`` (every launcher the
    log shows signs of), ``stacks`` (:data:`rootrank.frameworks.STACK_NAMES` seen), the
    :class:`Launch` (its launcher, script, printed command, node count) and the ``-m``
    ``module`` when no script is named. Never raises; text only."""
    shown = set(launchers) | ({launch.launcher} if launch.launcher else set())
    seen = set(stacks)
    loop = _LOOP.format(pattern=_pattern(launch, module))
    if "ray" in shown or "ray-train" in seen:
        return "`ray stack` on every node of the Ray cluster while it hangs (it dumps each Ray worker's Python stack with py-spy)"
    if "srun" in shown:
        return (
            "while it hangs, from the allocation: `srun --overlap --jobid=$SLURM_JOB_ID "
            f"--ntasks-per-node=1 bash -c '{loop}'` (one dump per process on every node)"
        )
    if "kubernetes" in seen:
        return f"while it hangs, for every pod of the job: `kubectl exec <pod> -- sh -c '{loop}'`"
    if launch.multi_node:
        return f"while it hangs, on every node: `{loop}`"
    command = launch.command or launch.entry or None
    if command is None and launch.launcher == "torchrun" and launch.script:
        command = f"torchrun --nproc-per-node=<gpus> {launch.script}"
    if command is None and launch.launcher == "deepspeed" and launch.script:
        command = f"deepspeed --num_gpus <gpus> {launch.script}"
    rerun = f"`rootrank run --on-stall dump -- {command or '<your launch command>'}`"
    return (
        f"while it hangs: `{loop}`; or launch the next run under {rerun}, which dumps every "
        "rank's stack when progress stops and names the rank that is not in a collective"
    )


def rank_own_output(
    launch: Launch, launchers: Iterable[str], stacks: Iterable[str], rank: int | None
) -> str:
    """Where the output of ``rank`` went, and the launcher's own option that keeps each
    rank's output apart next time, for a rank whose exit only a launcher's report shows
    (``{rank_own_output}``). Chosen by the launcher the log shows (``launchers``, the
    :class:`Launch`), the innermost first:

    - DeepSpeed's runner: ``--enable_each_rank_log=<dir>`` (deepspeed/launcher/runner.py:
      "redirect the stdout and stderr from each rank into different log files");
    - torchrun: ``--log-dir`` with ``--redirects 3 --tee 3`` (torch/distributed/run.py: each
      local rank's ``stdout.log``/``stderr.log`` under ``<log-dir>/<run id>/attempt_<n>/<local
      rank>/``);
    - Open MPI's mpirun: ``--output-filename <dir>`` (one file per rank);
    - srun: ``--label`` (each line prefixed with its task id) or ``--output=slurm-%j-%t.out``
      (one file per task: ``%j`` the job id, ``%t`` the task id; Slurm's filename patterns);
    - Kubernetes: the logs of that rank's pod.

    Never raises; text only."""
    shown = set(launchers) | ({launch.launcher} if launch.launcher else set())
    who = f"rank {rank}" if rank is not None else "that rank"
    if "deepspeed" in shown:
        keep = "`deepspeed --enable_each_rank_log=logs ...` (one log per rank under logs/)"
    elif "torchrun" in shown:
        keep = (
            "`torchrun --log-dir=logs --redirects=3 --tee=3 ...` (each rank's stderr.log under "
            "logs/<run id>/attempt_<n>/<local rank>/)"
        )
    elif "mpirun" in shown:
        keep = "`mpirun --output-filename logs ...` (Open MPI: one file per rank)"
    elif "srun" in shown:
        return (
            f"{who}'s own traceback went where srun sent that task's output (the job's "
            "slurm-<jobid>.out, or the file its job script redirects or tees to): look there "
            f"for the lines of {who}; to keep each task apart next time, run `srun --label ...` "
            "(every line starts with its task id) or `srun --output=slurm-%j-%t.out ...` "
            "(one file per task)"
        )
    elif "kubernetes" in set(stacks):
        return f"{who}'s own traceback is in its pod's log: `kubectl logs <pod of {who}>`"
    else:
        keep = ""
    return f"{who}'s own traceback is in its own stderr, which this log does not hold" + (
        f"; to keep each rank's output next time: {keep}" if keep else ""
    )


#: Ranks named one by one in :func:`last_steps` (a larger job's are summarised).
MAX_NAMED_STEPS = 8


def last_steps(last: dict[int | None, Any]) -> str:
    """What the log already shows of a hang: the last step each rank printed, from
    ``rank -> Progress`` (:meth:`rootrank.progress.ProgressModel.last`; lines that name no
    rank are left out), as a phrase a fix quotes (``{last_steps}``): "rank 2 printed step 11
    last (line 40) while ranks 0, 1 and 3 reached step 12" when one step is behind the rest,
    "every rank printed step 12 last" when they agree, "ranks 0-1 at step 12, ranks 2-3 at
    step 11" otherwise; "the log prints no per-rank step" with fewer than two ranks' steps.
    The rank behind is the first suspect of a hang (the others waited for it), not proof:
    a rank may print its step before the collective it then never reaches."""
    ranked = {r: p for r, p in last.items() if r is not None}
    if len(ranked) < 2:
        return "the log prints no per-rank step to compare"
    by_step: dict[int, list[int]] = {}
    for r, p in sorted(ranked.items()):
        by_step.setdefault(p.step, []).append(r)
    if len(by_step) == 1:
        ((step, _),) = by_step.items()
        return f"every rank printed step {step} last"
    low = min(by_step)
    high = max(by_step)
    if len(by_step[low]) < len(ranked) - len(by_step[low]):
        behind = by_step[low]
        where = f" (line {ranked[behind[0]].line})" if len(behind) == 1 else ""
        others = sorted(r for r in ranked if r not in behind)
        reached = f"step {high}" if len(by_step) == 2 else f"steps up to {high}"
        return (
            f"{_ranks(behind)} printed step {low} last{where} while {_ranks(others)} reached"
            f" {reached}"
        )
    parts = [f"{_ranks(rs)} at step {s}" for s, rs in sorted(by_step.items(), reverse=True)]
    return ", ".join(parts[:MAX_NAMED_STEPS])


def _ranks(ranks: list[int]) -> str:
    """``rank 2``, ``ranks 0 and 1``, ``ranks 0, 1 and 3``, ``ranks 0-7`` (a run)."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


#: A line's own rank: torchrun's ``[rankN]:`` prefix, an application tag at the start of the
#: body (``rank 1:``, ``[RANK 1]``, ``(rank 1)``), or a JSON record's ``"rank": 1``.
_LINE_RANK = lazy_regex.compile(
    r"^\s{0,4}\[rank(?P<t>\d{1,6})\]:|^\s{0,4}[\[(]?rank[ _:=#]{0,2}(?P<a>\d{1,5})(?:[\])>,:|]|\s)"
    r'|"rank": ?(?P<j>\d{1,6})[,}]',
    regex_code.IGNORECASE,
)
#: Characters of the quoted line kept.
MAX_QUOTED_LINE = 240
#: torchrun's ``--tee`` / ``--redirects`` prefix of a worker's line (``[default3]:``, the
#: default role then the worker's local rank), not stacked before a ``[rankN]:`` tag.
_TEE_TAG = lazy_regex.compile(r"^\s{0,4}\[default(\d{1,6})\]:(?!\[rank)")


def initiator_last_line(
    texts: Iterable[tuple[str, int, str]], path: str, before: int, rank: int
) -> tuple[int, str] | None:
    """``(1-based line, text)`` of the last line of ``path`` before line ``before`` that carries
    ``rank``'s own tag (:data:`_LINE_RANK`, once; torchrun's tee prefix, :data:`_TEE_TAG`),
    or, for rank 0, a record only the main process printed (:func:`main_process_lines`), read
    from the kept heads and tails of the sources (``texts``: ``(path, first line number,
    text)``) by :func:`rootrank.ranklines.own_lines`, or ``None``.

    Mechanism: the rank the others waited for stopped printing where it stopped working; its
    last own line before the others' timeout is the phase it was in (waiting for a file, a
    download, a lock), which a generic "look at what it did" leaves the user to find. A line
    that names two ranks is about others and is not taken."""
    texts = list(texts)
    main = main_process_lines(texts, path)

    def tagged(line: str, number: int) -> tuple[int, str] | None:
        found = _tagged_once(line, number)
        if found is None and number in main:
            return 0, line.strip()[:MAX_QUOTED_LINE]
        return found

    found = last_own_line(own_lines(texts, rank, lambda _path: tagged, path=path, before=before))
    return None if found is None else (found.line, found.text)


#: A record of transformers' example scripts' logging format (``%(asctime)s - %(levelname)s -
#: %(name)s - %(message)s``, datefmt ``%m/%d/%Y %H:%M:%S``): its ``level`` and ``msg``.
_HF_RECORD = lazy_regex.compile(
    r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d - (?P<level>[A-Z]+) - [\w.<>-]+ - (?P<msg>.*)$"
)
#: The header those scripts log at WARNING on every process (``Process rank: 2, device: ...``).
_HF_PROCESS = lazy_regex.compile(r"^Process rank: \d{1,6},")


def main_process_lines(texts: Iterable[tuple[str, int, str]], path: str) -> set[int]:
    """1-based numbers of the lines of ``path`` (read from the kept heads and tails,
    ``texts`` as :func:`initiator_last_line`'s) that the main process (rank 0) printed without
    naming itself: INFO/DEBUG records of transformers' example-script format
    (:data:`_HF_RECORD`) that name no rank and whose message appears once, in a log where at
    least two processes printed the per-process header (:data:`_HF_PROCESS`). Empty otherwise.

    Mechanism: those scripts log at INFO on the main process only and at WARNING on the
    others (``TrainingArguments.get_process_log_level``: ``log_level`` on the main process,
    ``log_level_replica``, WARNING by default, elsewhere), so an INFO record printed once is
    rank 0's; a message every process printed (``--log_level_replica info``) is nobody's."""
    headers: set[int] = set()
    records: dict[str, set[int]] = {}
    for src, first, text in texts:
        if src != path:
            continue
        for number, raw in enumerate(text.split("\n"), first):
            m = _HF_RECORD.match(strip_wrapper_stamp(raw).strip())
            if m is None:
                continue
            if _HF_PROCESS.match(m.group("msg")):
                headers.add(number)
            elif m.group("level") in ("INFO", "DEBUG") and not _RANK_NAMED.search(m.group("msg")):
                records.setdefault(m.group("msg"), set()).add(number)
    if len(headers) < 2:
        return set()
    return {n for numbers in records.values() if len(numbers) == 1 for n in numbers}


def _tagged_once(line: str, number: int) -> tuple[int, str] | None:
    """``(rank, line stripped, at most MAX_QUOTED_LINE characters)`` for a line that carries
    exactly one rank tag (:data:`_LINE_RANK`, after a wrapper's time stamp), or torchrun's tee
    prefix and no rank tag (:data:`_TEE_TAG`: the worker's own line, not its traceback's),
    else ``None``."""
    ms = list(_LINE_RANK.finditer(strip_wrapper_stamp(line)))
    if not ms:
        tee = _TEE_TAG.match(strip_wrapper_stamp(line))
        rest = strip_wrapper_stamp(line)[tee.end() :] if tee is not None else ""
        if tee is None or not rest.strip() or rest[:1] in (" ", "\t"):
            return None
        if rest.startswith("Traceback"):
            return None
        return int(tee.group(1)), line.strip()[:MAX_QUOTED_LINE]
    if len(ms) != 1:
        return None
    m = ms[0]
    return int(m.group("t") or m.group("a") or m.group("j")), line.strip()[:MAX_QUOTED_LINE]


#: Lines read back from the root cause's first line for what the job was doing.
DOING_LINES = 16
#: A log record glued after a progress bar's frame: the bar's closing ``]`` then a record's
#: head (glog's ``W0427 05:21:01``, a ``[rank0]:`` tag, an ISO date).
_GLUED_RECORD = lazy_regex.compile(r"(?<=\])(?:[IWEF]\d{4} |\[|\d{4}-\d\d-\d\d).*$")
#: How far back (lines) past the launcher's report :func:`lines_before` looks.
DOING_REACH = 400
#: A line of the launcher's report of the failure, not of the job's work: torchelastic's
#: agent lines and failure table (torch/distributed/elastic/multiprocessing/errors), the
#: launcher's own traceback, rulers; torch 1.x's agent lines name their logger with dots
#: (``WARNING:torch.distributed.elastic.multiprocessing.api:Sending process ...``). An indented
#: line is a traceback's or table's, except a rich console handler's record under the time
#: column it leaves blank for a repeated second (ColossalAI's ``<20 spaces>INFO     colossalai
#: - ...``: the level padded to 8 characters).
_REPORT_LINE = lazy_regex.compile(
    r"^\s(?!\s{0,40}(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) {2,})"
    r"|^[=\-]{8,}|^\S+ FAILED\s*$|^Failures:|^Root Cause|^\[\d+\]:\s*$|ChildFailedError"
    r"|^Traceback \(most recent call last\)|torch/distributed/(?:elastic|run\.py|launcher)"
    r"|torch\.distributed\.elastic\."
    r"|^(?:time|host|rank|exitcode|error_file|traceback)\s*:|^\s*<NO_OTHER_FAILURES>"
)


def lines_before(
    texts: Iterable[tuple[str, int, str]], path: str, before: int, count: int = DOING_LINES
) -> list[str]:
    """The last ``count`` non-blank lines of ``path`` before 1-based line ``before``, nearest
    first, read from the kept heads and tails of the sources (``texts``: ``(path, first line
    number, text)``); a progress bar's line (``\\r``-separated frames) is its last frame,
    each line at most :data:`MAX_QUOTED_LINE` characters. Empty when the kept text does not
    reach there.

    Mechanism: a process killed from outside (SIGKILL by the OOM killer) prints nothing of its
    own; the last lines before the launcher's report are what it was doing when it died (a
    dataset map's progress bar, checkpoint shards loading), which is what used the memory.
    The launcher's report of the failure (:data:`_REPORT_LINE`: its agent lines, failure
    table, own traceback) is passed over, up to :data:`DOING_REACH` lines back."""
    found: dict[int, str] = {}
    for src, first, text in texts:
        if src != path or first >= before:
            continue
        for i, line in enumerate(text.split("\n")):
            number = first + i
            if number >= before:
                break
            if number < before - DOING_REACH:
                continue
            frames = [f for f in line.split("\r") if f.strip()]
            if not frames:
                continue
            # a progress bar's last frame, without a log record glued after it
            # (``... 344.05 examples/s]W0427 05:21:01 ... closing signal SIGTERM``)
            last = _GLUED_RECORD.sub("", frames[-1]) if len(frames) > 1 else frames[-1]
            if not _REPORT_LINE.search(last):
                found[number] = last.strip()[:MAX_QUOTED_LINE]
    return [found[n] for n in sorted(found, reverse=True)[:count]]


#: A Python statement as a traceback quotes it under its ``File "...", line N`` header
#: (indented, an assignment or a call): not a log record, a frame header or a bar.
_QUOTED_SOURCE = lazy_regex.compile(
    r"^\s{2,}(?!File \")(?![\w.]*(?:Error|Exception|Warning)\b)[A-Za-z_(\[][^\n]*[(=][^\n]*$"
)


def source_line_above(texts: Iterable[tuple[str, int, str]], path: str, before: int) -> str:
    """The source line a traceback quotes directly above 1-based line ``before`` of ``path``
    (:data:`_QUOTED_SOURCE`: indented, a statement), stripped; ``""`` when that line is not
    one or the kept text does not reach there. A paste that kept a traceback's last lines
    without their ``File`` header still shows the statement that raised right above the
    exception's line (Python prints the innermost frame's source line last)."""
    for src, first, text in texts:
        if src != path or not first <= before - 1:
            continue
        lines = text.split("\n")
        index = before - 1 - first
        if 0 <= index < len(lines) and _QUOTED_SOURCE.match(lines[index]):
            return lines[index].strip()[:MAX_QUOTED_LINE]
    return ""


#: A rank's name in a line it printed of itself, anywhere in the line (``node1 rank 3 early
#: stopping``, ``[rank 3] ...``, ``rank=3``): group 1 is its number.
_RANK_NAMED = lazy_regex.compile(r"(?i)(?<![\w-])rank[ _:=#]{0,2}(\d{1,6})(?![\d.])")
#: Lines of a rank read at most (its own plain lines before the failure, latest last).
MAX_OWN_LINES = 256


#: The end of a prompt that waits for an answer on the same line (``Overwrite? [y/N] ``,
#: ``Continue (y/n)? ``, ``Password: ``): a prompt prints no newline, so the next output of
#: another process is glued after it.
_PROMPT_END = lazy_regex.compile(
    r"(?:\?\s*[\[(](?i:y/n|yes/no)[\])]|[\[(](?i:y/n|yes/no)[\])]\s*\?|\?"
    r"|(?i:password|passphrase|username):)\s*$"
)


def _before_glued(line: str, rank: int) -> str:
    """``line`` cut where another process's output was glued after ``rank``'s prompt: when
    the first rank ``line`` names is ``rank`` and the text before the first tag of another
    rank ends like a prompt (:data:`_PROMPT_END`), that text alone; else ``line``. Heldout
    r24c case 02: ``[rank 1] ... Overwrite? [y/N] rank 0/4 initialised``."""
    tags = list(_RANK_NAMED.finditer(line))
    if len(tags) < 2 or int(tags[0].group(1)) != rank:
        return line
    other = next((m for m in tags if int(m.group(1)) != rank), None)
    if other is None:
        return line
    before = line[: other.start()].rstrip(" \t[(<")  # the glued tag's own bracket: "[rank0]:"
    return before if _PROMPT_END.search(before) else line


def rank_own_lines(
    texts: Iterable[tuple[str, int, str]], path: str, before: int, rank: int
) -> list[tuple[int, str]]:
    """``(1-based line, text)`` of the lines of ``path`` before line ``before`` that name
    ``rank`` and no other rank (:data:`_RANK_NAMED`, whatever stands before it: a host label,
    a wrapper's stamp, a logger's header), read from the kept heads and tails (``texts`` as
    :func:`initiator_last_line`'s) by :func:`rootrank.ranklines.own_lines`, in line order,
    the last :data:`MAX_OWN_LINES` (of a line kept twice, its last copy); a traceback's lines
    (``[rankN]:`` then indented code or ``Traceback``) are left out: what the rank said of
    itself, not where it raised. A line where another process's output was glued after
    ``rank``'s prompt is read as the prompt alone (:func:`_before_glued`)."""

    texts = list(texts)
    main = main_process_lines(texts, path)

    def named(line: str, number: int) -> tuple[int, str] | None:
        found = _named_once(_before_glued(line, rank), number)
        if found is None and number in main:
            return 0, line.strip()[:MAX_QUOTED_LINE]
        return found

    out = {
        own.line: own.text
        for own in own_lines(texts, rank, lambda _path: named, path=path, before=before)
    }
    return sorted(out.items())[-MAX_OWN_LINES:]


def with_last_words(
    named: list[tuple[int, str]], words: list[tuple[int, str]]
) -> list[tuple[int, str]]:
    """``words`` (rootrank.entry.frames.last_words: what the rank said last, read through each
    file's own rank tags) then ``named`` (:func:`rank_own_lines`: the lines that name the rank
    in their text), leaving out a word whose text a named line already holds or whose number a
    named line has (the same line, which :func:`rank_own_lines` may have cut where another
    process's output was glued after a prompt), and a launcher's report line
    (:data:`_REPORT_LINE`: ``train.py FAILED``, its failure table). The words come first: a
    ``rank_said`` condition takes its latest hit, so a line that names the rank (ordered in the
    root's file) wins over words read from another file, whose numbers do not compare.
    Mechanism: a rank's words are often tagged only by the launcher (``[default0]:prep:
    malformed header ...``) or written to its own per-rank file (torchrun ``--redirects``),
    where no line names it, and those are the words that say why it stopped; a ``rank_said``
    condition reads both. Pure; raises nothing."""
    texts = [t for _, t in named]
    numbers = {n for n, _ in named}
    extra = [
        (n, t)
        for n, t in words
        if n not in numbers and not any(t in held for held in texts) and not _REPORT_LINE.search(t)
    ]
    return [*extra, *named]


#: A count of a total in a rank's own line (``dedup 5000/60000``, ``file 3 / 12``): group
#: ``head`` the words before it, ``total`` the total.
_COUNT_OF = lazy_regex.compile(
    r"(?P<head>[A-Za-z][\w .:-]{0,60}?)\s(?P<n>\d{1,12}) ?/ ?(?P<total>\d{1,12})\b"
)
#: How many times the initiating rank's total must exceed every other rank's.
SHARE_RATIO = 2


def larger_share(
    texts: Iterable[tuple[str, int, str]],
    path: str,
    before: int,
    rank: int,
    others: Iterable[int],
) -> tuple[str, int, list[int]] | None:
    """``(words, rank's total, the other ranks' totals)`` when the lines ``rank`` printed of
    itself in ``path`` before line ``before`` (:func:`rank_own_lines`) count an ``N/total``
    after some words (:data:`_COUNT_OF`) and at least two of ``others`` count after the same
    words to totals each at most 1/:data:`SHARE_RATIO` of ``rank``'s; else ``None``.

    Mechanism: ranks that run the same phase print the same counter line; its total is each
    rank's share of that work (items in its shard, files in its list). A rank the others waited
    for whose total is many times theirs reached the next collective long after them because
    its share is larger, which a longer timeout covers for this input only. Reads only the kept
    text; raises nothing."""
    kept = list(texts)

    def totals(r: int) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, text in rank_own_lines(kept, path, before, r):
            for m in _COUNT_OF.finditer(text):
                head = m.group("head").strip().split()[-1].lower()
                out[head] = max(out.get(head, 0), int(m.group("total")))
        return out

    mine = totals(rank)
    if not mine:
        return None
    theirs = [totals(r) for r in sorted(set(others) - {rank})]
    for head, total in mine.items():
        peer = [t[head] for t in theirs if head in t]
        if len(peer) >= 2 and all(0 < p * SHARE_RATIO <= total for p in peer):
            return head, total, peer
    return None


def own_rank(line: str) -> int | None:
    """The one rank ``line`` names of itself (:func:`_named_once`: a rank's name, or torchrun's
    tee prefix, and not a traceback's line), or ``None``."""
    found = _named_once(line, 0)
    return None if found is None else found[0]


def _named_once(line: str, number: int) -> tuple[int, str] | None:
    """``(rank, line stripped, at most MAX_QUOTED_LINE characters)`` for a line that names
    one rank only (:data:`_RANK_NAMED`) and is not a traceback's (indented after its
    ``[rankN]:`` prefix and a wrapper's stamp, or a ``Traceback`` header), else ``None``.

    A line that names no rank in its text but carries torchrun's tee prefix
    (:data:`_TEE_TAG`, ``[default3]:fetched batch 8/12``) is that worker's own line: torchrun
    writes the prefix on every line the worker prints. The prefix holds the local rank, which
    is the rank on a one-node launch (the only kind whose tee lines say which rank stopped
    without a ``[rankN]:`` tag beside them)."""
    tee = _TEE_TAG.match(strip_wrapper_stamp(line))
    if tee is not None and not _RANK_NAMED.search(line):
        rest = strip_wrapper_stamp(line)[tee.end() :]
        if not rest.strip() or rest[:1] in (" ", "\t") or rest.startswith("Traceback"):
            return None
        return int(tee.group(1)), rest.strip()[:MAX_QUOTED_LINE]  # the worker's words, not the tag
    if "ank" not in line:
        return None
    named = {int(m.group(1)) for m in _RANK_NAMED.finditer(line)}
    if len(named) != 1:
        return None
    body = strip_wrapper_stamp(line)
    body = body.split("]:", 1)[1] if body.startswith("[rank") and "]:" in body else body
    if body[:1] in (" ", "\t") or body.startswith("Traceback"):
        return None
    return named.pop(), line.strip()[:MAX_QUOTED_LINE]
