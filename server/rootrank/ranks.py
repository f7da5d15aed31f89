"""Attribution of log lines to ranks, hosts and times, from what real launchers print.

Prefixes peeled off the start of a line (repeatedly, so stacked tags work):

- torchrun ``[rank3]:`` (global rank) and ``[default3]:`` / ``[<role>3]:`` (``--tee`` /
  ``--redirects``: the *local* rank). Stacked ``[default0]:[rank12]:`` teaches that local
  rank 0 of this source is global rank 12, so continuation lines that carry only
  ``[default0]:`` get rank 12;
- SLURM ``srun --label``: ``3: `` and ``0 :``;
- Open MPI ``--tag-output``: ``[1,3]<stderr>:`` (the second number is the rank), and
  horovodrun's own tag (Gloo mode, ``horovod/runner/gloo_run.py``: ``[3]<stderr>:``, the rank);
- pdsh / the DeepSpeed launcher: ``node01: `` (a host name); an emptied label (``: ``
  before ``[rank18]:``, a paste whose host names were removed) is peeled with no host.
- Ray actors and vLLM workers: ``(RayWorkerWrapper pid=4009, ip=10.0.0.2) ``,
  ``(VllmWorker rank=2 pid=384550) ``, ``(Worker_TP1 pid=2211) ``, ``(raylet) ``, possibly
  nested (``(EngineCore_DP0 pid=1088) (RayWorkerWrapper pid=285) ``). vLLM's ``rank=N`` is
  the worker's global rank (vLLM ``multiproc_executor``); ``Worker_TP<n>`` (no ``_DP``/``_PP``
  part, so tensor parallel only) names rank ``n``; ``ip=`` is taken as the host. A rank seen
  once for an actor (from ``rank=`` or a following ``[rankN]:``) is remembered for its later
  lines that carry only ``(Actor pid=N)``;
- any collector's constant prefix before a launcher's ``[rankN]:`` (stern's ``<pod>
  <container> ``, clush's ``host: ``, ``kubectl logs --prefix``'s ``[pod/<pod>/<c>] ``,
  docker compose's ``svc-1 | ``): peeled, learnt for the stream's other lines, its first
  name the host (:data:`_COLLECTOR_PREFIX`);
- collectors that put a time column in front: ``kubectl logs --timestamps``
  (``2024-11-29T10:02:11.123Z ``) and the CloudWatch console's ``  | 2024-...Z | ``.

Evidence inside the message:

- ``[Rank 3]`` in ProcessGroupNCCL messages, and ``[PG 0 (default_pg) Rank 3]`` /
  ``[PG ID 0 PG GUID 0(default_pg) Rank 3]``: the global rank; ``[PG 1 Rank 0]`` is a rank
  inside a subgroup and is *not* taken as the global rank;
- NCCL's ``node01:15325:16199 [2] NCCL INFO``: host ``node01``, pid 15325; ``[2]`` is the CUDA
  device, not the rank. The rank comes from ``comm 0x... rank 3 nranks 8 cudaDev 2`` lines,
  which map (host, pid) to a rank for every other line of that process;
- torchelastic failure summaries (``rank : 3 (local_rank: 3)``, ``host :``, ``exitcode :``,
  ``time :``), kept as :class:`ElasticFailure` records;
- ``mp.spawn``'s ``-- Process 1 terminated with the following error:``: the traceback that
  follows belongs to process 1.

Timestamps: glog (``E1129 10:02:11.123456``), ISO 8601 and Python logging
(``2024-11-29 10:02:11,123``), torchelastic (``2024-11-29_10:02:11``). All are turned into
seconds in a fixed year (glog prints none), which orders events within one run.

A line with no rank evidence belongs to no rank: nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from rootrank import lazy_regex, re_code, regex_code
from rootrank.exc_name import exception_path
from rootrank.ingest import strip_ansi, strip_compression

_PREFIX = lazy_regex.compile(
    r"""
    \[(?P<tag>[A-Za-z_][A-Za-z_-]*?)(?P<tagn>\d{1,6})\]:\ ?          # [rank3]: [default3]:
  | \[(?:(?P<mpijob>\d+),)?(?P<mpirank>\d{1,6})\]<std(?:out|err)>:\ ?  # [1,3]<stderr>: [3]<stderr>:
  | (?P<stream>std(?:out|err)):\ {1,2}(?=\S|\ \ )                      # accelerate: "stderr: "
  | (?P<slurm>\d{1,6})\ ?:(?!\d)\ ?                                  # 3: / 0 :
  | (?P<host>(?=[A-Za-z0-9_.-]*\d)[A-Za-z][A-Za-z0-9_.-]{0,62}):\ (?!\s)  # node01:
  | (?P<blank>:)\ (?=\[[A-Za-z_-]{1,20}\d{1,6}\]:)                      # ": [rank18]:" (label emptied)
  | (?P<hostip>(?:\d{1,3}\.){3}\d{1,3}):\ (?!\s)                     # 10.0.0.7: (hostfile by IP)
    """,
    regex_code.VERBOSE,
)

# "rank3: " at a line start is a rank tag a script printed (its own, or _APP_RANK's "rank 3: "
# without the space), not a pdsh host called rank3.
_RANK_WORD = re_code.compile(r"[Rr]ank[0-9]{1,5}")
# Words that look like "name1: " but are messages, not pdsh host prefixes.
# ("mlx5: <host>: got completion with error:" is rdma-core's mlx5 driver tag, not a pdsh host.)
_NOT_HOSTS = frozenset(
    {"python3", "python2", "cuda0", "cuda1", "md5", "sha256", "utf-8", "mlx4", "mlx5"}
)
# A script's name is not a pdsh host: argparse prefixes its error with the program name
# ("train_h100.py: error: unrecognized arguments: true"), bash its own with the script's
# ("run2.sh: line 5: python: command not found"); a name with a digit would otherwise pass the
# host shape and be peeled off, leaving "error: ..." without the name the signatures read.
_SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".pl", ".rb", ".js")

# srun --label's task id right-aligned to the width of the job's largest one (src/srun's
# "%*d: "): " 2: " in a job of 32 tasks, "  7: " in one of 128. The padding before the digits
# (at most 4 spaces, the label at most 5 characters wide) is matched here and peeled before
# :data:`_PREFIX` reads the label.
_SRUN_PADDED = re_code.compile(r" {1,4}(?=\d{1,4}:(?!\d) )")

_INLINE_RANK = lazy_regex.compile(
    r"\[(?:PG (?:ID )?(?P<pg>\d+)(?: \((?P<name1>[^)]*)\))?(?: PG GUID (?P<guid>[^ \]]*?)(?:\((?P<name2>[^)]*)\))?)? )?Rank (?P<rank>\d{1,6})\]"
)
_NCCL_HEADER = lazy_regex.compile(
    r"^(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:\S+:\d+ )?NCCL "
)
# UCX's fatal-error banner (ucs/debug/debug.c, ``ucs_log_fatal_error``), printed by the
# process that caught the signal: "[node01:157  :4:419] Caught signal 11 (Segmentation
# fault ...)": host, the pid (padded to 5), UCX's thread index, the thread id.
_UCS_BANNER = lazy_regex.compile(
    r"^\[(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+) *:(?P<thr>\d+):(?P<tid>\d+)\] "
)
# torchrun's agent naming the worker it saw fail (elastic/multiprocessing/api.py
# ``PContext._poll``): "failed (exitcode: -11) local_rank: 0 (pid: 157) of binary: ...", or
# in another agent build's words "failed (exitcode: -9) for binary located at <python> with
# local_rank: 0 (process ID: 71)".
_AGENT_FAILED_PID = lazy_regex.compile(
    r"failed \(exitcode: -?\d+\) (?:for binary located at \S+ with )?local_rank: (?P<local>\d+)"
    r" \((?:pid|process ID): (?P<pid>\d+)\)"
)
# The source of a line torchrun's agent logs (its glog-style header's ``file:line]``:
# torch/distributed/run.py, elastic/agent/server/api.py, elastic/multiprocessing/api.py,
# launcher/api.py): the agent's own line, never a worker's.
AGENT_SOURCE = lazy_regex.compile(
    r"torch/distributed/(?:run\.py|elastic/[\w/]+\.py|launcher/api\.py):\d+\]"
)
_NCCL_COMM = lazy_regex.compile(
    r"\bcomm 0x[0-9a-f]+ rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)"
)  # NCCL >= 2.19: "nRanks"
_NCCL_INIT = lazy_regex.compile(
    r"\bRank (?P<rank>\d+) nranks (?P<nranks>\d+)|\bInit COMPLETE comm \S+ rank (?P<rank2>\d+) nranks (?P<nranks2>\d+)"
)
_SPAWN = lazy_regex.compile(r"^-- Process (?P<proc>\d+) terminated with the following error:")
# Python's lines between the tracebacks of a chained exception (traceback.py).
_CHAIN_LINE = lazy_regex.compile(
    r"^(?:The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)$"
)
# MosaicML composer's launcher prints the captured output of a rank that crashed between
# "----------Begin global rank 2 STDERR----------" and "----------End global rank 2 STDERR----------"
# (composer/cli/launcher.py, _print_process_exit_status): the lines between are that rank's.
_COMPOSER_BLOCK = lazy_regex.compile(
    r"^-{10}(?P<edge>Begin|End) global rank (?P<rank>\d+) (?:STDOUT|STDERR)-{10}\s*$"
)
_WORLD = lazy_regex.compile(r"\b(?:world_size|WORLD_SIZE|world size)\s*[=:]\s*(?P<n>\d{1,6})\b")
# Lightning / Fabric's start-up line on each rank (lightning/fabric/utilities/distributed.py,
# ``_init_dist_connection``): "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4", the
# world size after the slash.
_MEMBER_WORLD = lazy_regex.compile(r"\bGLOBAL_RANK: \d{1,6}, MEMBER: \d{1,6}/(?P<n>\d{1,6})\b")
# The header ``tail``/``head`` print before each file when given several
# (``tail -n +1 logs/*/attempt_0/*/stderr.log``): "==> logs/x/attempt_0/2/stderr.log <==".
# A rank's own start-up line that places it in the job, in the first person: "I am
# worker 2 of 8", "I am rank 3 of 16" (the member's number, then the number of members): the
# world size after "of", read only when it is above the member's number. Not a library's
# report about another rank ("rank 1 of 8 ranks has already checked in").
_MEMBER_OF = lazy_regex.compile(
    r"\b[Ii] am (?:[Rr]ank|[Ww]orker|[Pp]rocess) (?P<r>\d{1,6}) of (?P<n>\d{1,6})\b(?! ?[%/])"
)
_FILE_HEADER = lazy_regex.compile(r"^==> (?P<path>\S(?:.{0,998}\S)?) <==\s*$")

# A summary retyped or copied from a rendered page may put a space before the colon.
_SUMMARY_START = lazy_regex.compile(
    r"^(?:Failures\s?:|Root Cause \(first observed failure\)\s?:)\s*$"
)
_SUMMARY_ITEM = lazy_regex.compile(r"^\s*\[(?P<i>\d+)\]:\s*$")
_SUMMARY_FIELD = lazy_regex.compile(
    r"^\s{0,8}(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<value>.*)$"
)
# First characters (ASCII, not white space) with which neither _SUMMARY_ITEM ("[N]:"),
# _SUMMARY_FIELD nor _SUMMARY_RANK_FIELD can match: any but "[" and the keys' initials.
_NO_SUMMARY_START = frozenset(["", *(c for c in map(chr, range(33, 127)) if c not in "[thre")])
_SUMMARY_KEYS = frozenset(("time", "host", "rank", "exitcode", "error_file", "traceback"))
# An entry whose fields were glued onto one line when the summary's table was copied from a
# rendered page or retyped: "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>".
_SUMMARY_GLUED = lazy_regex.compile(
    r"^\s*rank\s?:?\s?(?P<rank>-?\d+) ?\(local[_ ]rank: ?(?P<local>\d+)\) ?"
    r"exitcode ?:? ?(?P<code>-?\d+)(?: ?\(pid: ?(?P<pid>\d+)\))?"
)
_SUMMARY_RANK = lazy_regex.compile(r"^(?P<rank>-?\d+)(?: \(local_rank: (?P<local>\d+)\))?")
_SUMMARY_EXIT = lazy_regex.compile(r"^(?P<code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?")
# Entry fields that appear once per entry: a repeat starts the next entry.
_ENTRY_FIELD_ATTR = {"time": "time", "host": "host", "rank": "rank"}
# torchelastic's entry field "rank : 5 (local_rank: 5)": distinctive enough to open a summary
# whose header was cut off (a pasted fragment that starts inside "Failures:").
_SUMMARY_RANK_FIELD = lazy_regex.compile(r"^\s{1,8}rank\s*:\s?-?\d+ \(local_rank: \d+\)\s*$")

_TS_GLOG = lazy_regex.compile(
    r"(?<![\w])[IWEF](?P<mo>1[0-2]|0?[1-9])(?P<d>[0-3]\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<f>\d{1,9}))?\b"
)
_TS_ISO = lazy_regex.compile(
    r"(?<!\d)(?P<y>(?:19|20)\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T _](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?"
)

_FILE_RANK = lazy_regex.compile(
    r"(?:^|/)attempt_\d+/(?P<ldir>\d+)/(?:stdout|stderr|error)\.(?:log|json)$"  # torchrun --log-dir
    r"|(?:^|/)slurm-\d+-(?P<task>\d+)\.(?:out|err|log)$"  # slurm-%j-%t.out
    # the file name (rank3.log, worker_3.out) or its own folder (rank_3/stdout.log)
    r"|(?:^|/)(?:[^/]*?[_.-])?(?:rank|worker|proc)[_.-]?(?P<rank>\d+)(?:[_.-][^/]*)?\.(?:log|out|err|txt)$"
    r"|(?:^|/)(?:rank|worker|proc)[_.-]?(?P<dir>\d+)/[^/]+$",
    regex_code.IGNORECASE,
)

# Every alternative of _FILE_RANK needs one of its words followed by a digit (after at most
# one of "_.-"): a path without such a word names no rank, and is told so by this stdlib
# pattern (case-insensitive as _FILE_RANK is, its digits Unicode ones as well) without
# compiling _FILE_RANK (~1.5 ms of a start, issue 11).
_FILE_RANK_WORD = re_code.compile(r"(?:attempt_|slurm-|rank|worker|proc)[_.-]?\d", re.IGNORECASE)


# The sweeps over a block's lines (ranks_in, learn_stacked) look for a prefix right after a
# literal "\n" (the text's first line is tried on its own): the stdlib engine then skips from
# newline to newline natively, at about 10x the speed of a MULTILINE "^" in `regex` (45 MB/s,
# which made a folder of per-rank files, each swept whole, 5.8x slower than one file: issue 11).
_LINE_RANK_BODY = (
    r"(?:\[rank(\d{1,6})\]:|\[(?:\d+,)?(\d{1,6})\]<std(?:out|err)>:| {0,4}(\d{1,6}) ?:(?!\d)"
    r"|\[(?:rank|RANK|Rank)[ =](\d{1,6})(?:/\d{1,6})?\] )"
)
_LINE_RANK = re_code.compile(_LINE_RANK_BODY)
_LINE_RANK_AFTER_NL = re_code.compile("\n" + _LINE_RANK_BODY)

# An application's own rank tag at the start of its message (after any logger header):
# "[rank 3] step 10", "[RANK 3] loss", "[Rank 3/8] ...", "[rank=3] ...", "rank 3: ...",
# "rank=3: ...", and "[rank3] INFO ..." (a logging format's f"[rank{RANK}]" after the time:
# torch's own "[rank3]:" prefix stands at the line start, has its colon and is read above as
# a launcher prefix, so the word glued to its number in brackets is the same rank either
# way). "[Rank 3]" inside ProcessGroupNCCL messages is read by _INLINE_RANK.
_APP_RANK = lazy_regex.compile(
    r"\[(?:rank|RANK|Rank)[ =]?(?P<n>\d{1,6})(?:/\d{1,6})?\][ :]|(?:rank|RANK)[ =](?P<m>\d{1,6})(?:/\d{1,6})?: "
)


# A tag a user's own print or logging format puts at the message start, with a number that may
# be the rank: "[r3] it 05 loss 0.93", "rank3: loss", "Rank 3: loss", "[GPU 3] batch 10",
# "[worker-3] ...", "worker_3 | ...", "train | rank 3 | step 7" (a logger name, then the rank
# between pipes); "worker-3: " at a line start is a pdsh host, a node's name. Nothing in one such tag says the number is a rank (a retry, a device, a
# DataLoader worker): a form is read as a rank only once the log shows it with several numbers
# that fit the job (RankTagger.user_tag_rank).
_USER_TAG_BODY = (
    r"(?:\[[rR](?P<r>[0-9]{1,5})\]|(?:rank|Rank ?)(?P<k>[0-9]{1,5}):|\[(?:GPU|gpu|Gpu) ?:?(?P<g>[0-9]{1,3})\]"
    r"|\[[Ww]orker[-_](?P<w>[0-9]{1,5})\]|[Ww]orker[-_](?P<v>[0-9]{1,5}) \|"
    r"|[A-Za-z_][\w.-]{0,40} \| [Rr]ank[ =:]?(?P<p>[0-9]{1,5}) \|)"
)
_USER_TAG = re_code.compile(_USER_TAG_BODY + "[ \t]?")
_USER_TAG_AFTER_NL = re_code.compile("\n" + _USER_TAG_BODY)
#: The form of each _USER_TAG group: a form's numbers are counted together.
_USER_TAG_FORMS = {"r": "r", "k": "rank", "g": "gpu", "w": "worker", "v": "worker", "p": "| rank"}
#: The first characters a _USER_TAG can start with.
_USER_TAG_FIRST = frozenset("[rRwW")
#: Distinct numbers kept per user tag form (a bound on memory: more is no rank numbering).
MAX_USER_TAG_NUMBERS = 4096


def _user_tag(m: re.Match[str]) -> tuple[str, int]:
    """The form and the number of a :data:`_USER_TAG` match."""
    for group, form in _USER_TAG_FORMS.items():
        value = m.group(group)
        if value is not None:
            return form, int(value)
    raise ValueError("no number")  # pragma: no cover - every alternative captures one


def ranks_in(text: str) -> set[int]:
    """Global ranks named by launcher prefixes at the start of the lines of ``text``
    (``[rank3]:``, ``[1,3]<stderr>:``, ``3: ``): a cheap sweep used to learn which ranks
    exist from lines that need no other work."""
    found: set[int] = set()
    first = _LINE_RANK.match(text)
    rows = [first.groups()] if first else []
    rows += _LINE_RANK_AFTER_NL.findall(text)
    for groups in rows:
        for g in groups:
            if g:
                found.add(int(g))
    return found


# torchrun's --tee/--redirects tag before torch's own rank prefix, at a line start:
# "[default3]:[rank3]: ...", "node02: [default3]:[rank11]: ..." (pdsh host first).
_STACKED_BODY = r"(?:([A-Za-z][\w.-]{0,62}): )?\[default(\d{1,6})\]:\[rank(\d{1,6})\]:"
_STACKED = re_code.compile(_STACKED_BODY)
_STACKED_AFTER_NL = re_code.compile("\n" + _STACKED_BODY)

#: Foreign lines in a row that end a torchelastic failure summary.
MAX_SUMMARY_NOISE = 4


_LEADING_STAMP = lazy_regex.compile(
    r"(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?):? (?=\[|\d+ ?:)"
)

# ``kubectl logs --prefix`` (several pods of a PyTorchJob, ``-l``/``--all-containers``):
# "[pod/<pod>/<container>] " before every line (kubectl pkg/cmd/logs/logs.go,
# ``addPrefixIfNeeded``: ``fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName)``); with
# ``--timestamps`` the server's RFC 3339 time follows it. Each pod is one node of the job, so
# its name is the line's host (as pdsh's "node01: ").
_KUBECTL_PREFIX = lazy_regex.compile(
    r"\[pod/(?P<pod>[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)/[A-Za-z0-9_.-]{0,63}\] "
)

# ``docker compose up`` / ``docker compose logs``: each container's lines behind its name,
# padded to the longest, and " | " (docker/compose cmd/formatter/logs.go: the prefix is
# "<name><padding> | "); a replica's name ends with its index ("trainer-1", compose v1's
# "proj_trainer_1"). Peeled only before a launcher's rank prefix ("[rank3]:", "[default1]:"):
# "worker_1 | loss 2.0" alone is as often a user's own rank tag (RankTagger's user tags),
# which it then stays. Each container is one node of the job, so its name is the line's host.
_COMPOSE_PREFIX = lazy_regex.compile(
    r"(?P<name>[A-Za-z0-9][\w.-]{0,62}[-_]\d{1,4}) +\| (?=\[(?:rank|default)\d+\]:)"
)

# Any other collector's prefix before a launcher's rank prefix: stern's "<pod> <container> "
# (stern's default template "{{.PodName}} {{.ContainerName}} {{.Message}}", with --timestamps
# the message starts with the RFC 3339 time), pdsh/clush's "host: ", a compose or kubectl
# variant, a pod name alone. The rule, not one pattern per tool: one to three name tokens
# (host, pod, container, service names: no spaces, no brackets), each followed by a space,
# " | " or ": ", then optionally a collector's RFC 3339 time, then torchrun's own "[rankN]:" /
# "[defaultN]:" (which it writes at the start of each line of a worker: whatever stands before
# it was put there by what collected the output). The part before the time is the stream's
# constant prefix (_CollectorPrefixes): learnt from such a line, it is peeled from that stream's
# other lines too (the agent's, NCCL's), and its first token is the line's host. A job
# wrapper's ``host| `` (``sed "s/^/$(hostname)| /"``, after its clock stamp: ``02:28:12 vm|
# [rank2]: ...``) has no space before its bar: the bar is the separator all the same.
_COLLECTOR_PREFIX = lazy_regex.compile(
    r"(?P<key>(?P<name>[A-Za-z0-9][\w.@/-]{0,100})(?:(?: *\| +|: | +)[A-Za-z0-9][\w.@/-]{0,100}){0,2}"
    r"(?: *\| +|: | +))"
    r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) )?"
    r"(?=\[(?:rank|default)\d{1,6}\](?::|[ ](?=\S)))"
)
#: The furthest a launcher's rank prefix may stand from the line's start behind a collector's.
MAX_COLLECTOR_PREFIX = 240
# A wrapper's bracketed label at the line start: ``sed 's/^/[node1] /'`` on each node's
# torchrun output, a job script's ``| while read l; do echo "[$HOST] $l"; done``, GNU
# parallel's ``--tagstring '[{}]'``. What follows it is what the process printed: torchrun's
# "[rankN]:"/"[defaultN]:", a logging or ISO time (bracketed too: DeepSpeed's logger prints
# "[2026-12-03 21:16:06,500] [INFO] ..."), a glog header ("W1203 21:16:13.849000 ...",
# torchelastic's agent; "[W1203 ..." from c10d's C++ logging). One such line teaches the label as its stream's constant prefix
# (peeled from every line of that stream: the worker's own prints, its traceback, the agent's
# failure summary), as the collector prefixes above; the label names the node, so it is the
# line's host. A label that may be the rank itself (a user tag "[r3]", "[worker-3]",
# "[GPU 3]"; "[rank3]"/"[default3]") or holds no digit ("[INFO]", "[train]": a level or a
# logger's name) is none.
_BRACKET_LABEL_BODY = (
    r"(?P<key>\[(?P<name>[A-Za-z][\w.@/-]{0,62})\] +)"
    r"(?=\[(?:rank|default)\d{1,6}\]:|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d|\[?[IWEF]\d{4} \d\d:\d\d:\d\d)"
)
_BRACKET_LABEL = re_code.compile(_BRACKET_LABEL_BODY)
_BRACKET_LABEL_AFTER_NL = re_code.compile("\n" + _BRACKET_LABEL_BODY)
#: Bracketed labels one block sweep reads at most (:meth:`RankTagger.learn_collector_labels`).
MAX_LABEL_SWEEP = 4096


def _label_host(m: re.Match[str]) -> str | None:
    """The host a :data:`_BRACKET_LABEL` match names, or ``None`` when its label is no node's
    (no digit in it, a rank or user tag, a name that is no host)."""
    name = m.group("name")
    low = name.lower()
    if (
        not any(c.isdigit() for c in name)
        or low in _NOT_HOSTS
        or low.startswith(("rank", "default"))
        or _USER_TAG.match(m.group("key")) is not None
    ):
        return None
    return name


def node_count(hosts: set[str], labels: set[str]) -> int:
    """How many nodes the host names ``hosts`` (lines' hosts, torchelastic's summary entries)
    stand for, when ``labels`` of them are names a wrapper's bracketed line labels gave
    (``sed 's/^/[node0] /'``: :attr:`RankTagger.label_hosts`). A label and a host name name
    nodes in two ways: the node a wrapper labels ``node0`` is the one whose agent's summary
    says ``host : gpu-a`` (or ``localhost``), so the two sets are counted apart and the larger
    is the node count, never their sum (one ``[node0]`` label and a summary's ``localhost``
    are one node; ``[node0]``/``[node1]`` with summaries naming ``gpu-a``/``gpu-b`` are two).
    A loopback name (:data:`LOOPBACK_HOSTS`) beside two or more other names is one of them."""
    labelled = hosts & labels
    rest = hosts - labelled
    if len(rest - LOOPBACK_HOSTS) > 1:
        # several named nodes and a summary's ``localhost``: each agent's summary names its
        # own node so, one of those named (two agents labelled node0/node1 by a wrapper
        # whose labels are not bracketed, both summaries ``host : localhost``: 2 nodes, not
        # 3; heldout r19d case 10)
        rest -= LOOPBACK_HOSTS
    return max(len(labelled), len(rest))


#: Host names that name the machine itself, not a node of its own (torchelastic's summary
#: prints ``host : localhost`` when the agent ran with --master-addr=127.0.0.1).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})


#: Constant prefixes one source keeps (a job's pods, containers or hosts).
MAX_COLLECTOR_KEYS = 64
# A token that ends like these is an exception or a message ("RuntimeError: [rank1]: ..."),
# never a collector's name.
_NOT_COLLECTOR_ENDS = ("Error", "Exception", "Warning", "Interrupt", "Exit", ".py", ".sh")
_NAME_TOKEN = re_code.compile(r"[A-Za-z0-9][\w.@/-]*")

#: A time stamp a user's wrapper puts before every line of the job's output: a clock
#: (``[16:41:22] ``: moreutils' ``ts '[%H:%M:%S]'``; ``19:07:49 ``: ``awk '{ print
#: strftime("%H:%M:%S"), $0 }'``; ``[19:20:01.123] ``), optionally after a date
#: (``[2026-12-04 19:08:14] ``: a ``while read l; do echo "[$(date '+%F %T')] $l"`` loop;
#: ``2026-12-04 19:20:01 | ``), in brackets or not, then a space, `` | `` or `` - ``: two-digit
#: hours, minutes and seconds, optional fraction (up to ns) and zone. Group ``date`` is the
#: date when there is one. A clock alone is peeled in front of anything (no logger prints a
#: bare clock before its own header); a stamp with a date only in front of a launcher's
#: ``[rankN]:``/``[defaultN]:`` or a traceback's lines (:data:`_STAMPED_PREFIX`; a logger's
#: own dated header, ``2026-12-04 19:20:01,123 INFO`` or DeepSpeed's ``[2026-12-03
#: 21:16:06,500] [INFO]``, is read by _LOG_HEADER as before).
_CLOCK_STAMP = lazy_regex.compile(
    r"(?:\[(?P<bdate>\d{4}-\d\d-\d\d[T ])?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]"
    r"|(?P<date>\d{4}-\d\d-\d\d[T ])?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    r"(?: \| | - | )"
)
#: What must follow a dated wrapper stamp for it to be peeled (see _CLOCK_STAMP): a launcher's
#: rank prefix, or a line of a traceback's layout: an indented line (its frames and quoted
#: code: a logger's header never stands before them, Python's logging prints a record's
#: traceback without one), its header, the line before an ignored exception's.
_STAMPED_PREFIX = re_code.compile(
    r"\[(?:rank|default)\d{1,6}\]:|\s|Traceback \(most recent call last\):|Exception ignored in"
)


def _stamp_end(body: str) -> tuple[int, bool]:
    """Where a wrapper's time stamp at the start of ``body`` ends (see :data:`_CLOCK_STAMP`),
    0 when it has none to peel, and whether the stamp holds a date (its time is then the
    line's). The caller tests the characters a stamp needs (``body[2] == ":"``, ``[`` with
    ``:`` or ``-`` after it, a digit with ``-`` at 4) before calling, so the regex stays off the
    lines that cannot start with one."""
    tm = _CLOCK_STAMP.match(body)
    if tm is None:
        return 0, False
    dated = bool(tm.group("date") or tm.group("bdate"))
    if dated and not _STAMPED_PREFIX.match(body, tm.end()):
        return 0, False
    return tm.end(), dated


def strip_wrapper_stamp(line: str) -> str:
    """``line`` without a user wrapper's time stamp at its start (:data:`_CLOCK_STAMP`, the
    rule :class:`RankTagger` peels it by), for readers of raw lines (a rank's last own line,
    rootrank.entry.hang_capture) that anchor their patterns at the line's start."""
    if (
        line[2:3] == ":"
        or (line[:1] == "[" and (line[3:4] == ":" or line[5:6] == "-"))
        or (line[4:5] == "-" and line[:1].isdigit())
    ):
        end = _stamp_end(line)[0]
        if end:
            return line[end:]
        # Python logging's asctime before a record whose header is the rank's bracketed tag
        # ("2026-12-04 19:43:43,130 [rank2] metrics INFO: ..."): the reader's only, never the
        # scan's (a dated stamp before other text stays, see _STAMPED_PREFIX)
        tm = _CLOCK_STAMP.match(line)
        if tm is not None and _LOGGER_RANK_TAG.match(line, tm.end()):
            return line[tm.end() :]
    return line


#: A logging record's bracketed rank tag after its time (``[rank2] metrics INFO: ...``).
_LOGGER_RANK_TAG = re_code.compile(r"\[rank\d{1,6}\] ")


# CloudWatch console / table copies: "  | 2024-08-23T22:22:51.871Z | message".
_PIPE_STAMP = lazy_regex.compile(
    r"\s*\|\s*(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s*\|\s?"
)

# Determined's trial logs (``det trial logs``, the WebUI's log view): "[<RFC 3339 time>]
# <container id> [rank=<N>] || <the process's line>", the rank part absent on the agent's and
# launcher's own lines (determined/common/api/... log formatting: ``[{timestamp}] {container}
# {rank} || {message}``). The rank is the process's global rank.
_DETERMINED_PREFIX = lazy_regex.compile(
    r"\[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?)\] (?:[0-9a-f]{6,64} )?"
    r"(?:\[rank=(?P<rank>\d{1,6})\] )?\|\| ?"
)

# Ray actor / vLLM worker prefixes (python/ray/_private/log_monitor.py prints
# "(<actor> pid=<pid>, ip=<ip>)"; vLLM's multiproc executor decorates worker logs with
# "(VllmWorker rank=<r> pid=<pid>)" and, newer, "(Worker_DP<d>_PP<p>_TP<t> pid=<pid>)"), then
# one space: the rest of the line is the process's own, indentation included.
_ACTOR = lazy_regex.compile(
    r"""\(
    (?:
      (?:pid=)?(?:raylet|gcs_server|dashboard_agent|autoscaler(?:\ \+[\w.]+)?)(?:,\ ?ip=(?P<rip>[^\s),]+))?
    | (?:(?P<actor>[A-Za-z_][\w.:-]{0,80})\ )?(?:rank=(?P<arank>\d{1,6})\ )?pid=(?P<apid>\d{1,9})(?:,\ ?ip=(?P<aip>[^\s),]+))?
    )
    \)\ """,
    regex_code.VERBOSE,
)
_ACTOR_TP = lazy_regex.compile(r"Worker_TP(?P<tp>\d{1,6})(?:_EP\d+)?")
# SGLang's logger header (sglang/srt/utils.py ``configure_logger``: "[%(asctime)s{prefix}] "
# with the prefix " TP{tp_rank}", " DP{dp_rank} TP{tp_rank}", " PP{pp_rank} TP{tp_rank}"...):
# "[2025-01-05 10:00:00 TP3] ", "[01-05 10:00:00 TP3] ". With tensor parallelism alone the TP
# rank is the process's rank; with a DP/PP/EP part it is a rank inside one group (``other``).
_SGLANG_HEADER = lazy_regex.compile(
    r"\[(?:(?:\d{4}-)?\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
    r"(?P<other>(?: (?:DP|PP|EP|CP|DPA)\d{1,5})*) TP(?P<tp>\d{1,5})(?P<after>(?: (?:EP|PP|DP)\d{1,5})*)\] ?"
)
_TRACEBACK_HEAD = "Traceback (most recent call last):"
#: Lines of one logged traceback record followed at most (a bound if its exception is cut).
MAX_RECORD_LINES = 400
# A Ray Train worker's own rank, printed on its actor's lines. Ray Train starts one
# ``RayTrainWorker`` actor per rank and gives worker ``i`` of its WorkerGroup world rank ``i``
# (ray/train/torch/config.py ``_TorchBackend.on_start``), whose process-group line says so:
# "Setting up process group for: env:// [rank=0, world_size=4]"; the training function's own
# tags of that worker ("world_rank=3", "[Worker:3]", "[worker 3]") name the same index.
_RAY_TRAIN_RANK = lazy_regex.compile(
    r"\[rank=(?P<pg>\d{1,6}), world_size=\d{1,6}\]"
    r"|\bworld_rank\s?[=:]\s?(?P<wr>\d{1,6})\b"
    r"|\[[Ww]orker[: ]?(?P<wk>\d{1,6})\]"
)
# A Ray actor's line (its "(Name pid=N, ip=X) " prefix, possibly after a launcher tag and
# ANSI colours) that may name its rank: the cheap sweep of learn_actor_ranks.
_ACTOR_LINE = re_code.compile(
    r"^[^\n(]{0,40}\([A-Za-z_][\w.:-]{0,80} pid=[0-9]{1,9}[^\n]*", re.MULTILINE
)
# Ray's report of a worker process that died, printed by the driver or the raylet, not by the
# worker (src/ray/core_worker: "... Worker IP address: 10.0.0.1 Worker port: 10016 Worker PID:
# 1942 Worker exit type: SYSTEM_ERROR ..."), and the driver's re-raise of an actor task's
# exception, whose repr names the actor's process ("ray::RayTrainWorker._RayTrainWorker__execute()
# (pid=1942, ip=10.0.0.1, actor_id=..."): the process is named by pid (and IP) only.
_RAY_DEAD_PID = lazy_regex.compile(
    r"(?:Worker IP address: (?P<ip>[^\s,]+) .{0,80}?)?Worker PID: (?P<pid>\d{1,9})\b"
    r"|\bray::\w[\w.]{0,120}\(\) \(pid=(?P<tpid>\d{1,9})(?:, ip=(?P<tip>[^\s,)]+))?"
)

_LOG_HEADER = lazy_regex.compile(
    r"""
    \[[IWEF](?:\d{3,4}\ \d\d:\d\d:\d\d(?:\.\d+)?)?(?:\ +\d+)?\ ?[\w./<>-]+:\d+\]\ ?   # [E1129 10:12:01.5 x.cpp:632]
  | [IWEF]\d{4}\ \d\d:\d\d:\d\d\.\d+\ +\d+\ [\w./<>-]+:\d+\]\ ?                   # E1129 13:34:28.5 25034 api.py:1002]
  | \[?\d{4}-\d\d-\d\d[T\ _]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?           # ISO / logging time
      (?:\s*[-|]?\s*\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?)?
      (?:\s*\[[\w.]+:\d+(?::\w+)?\])?(?:\s*[-:|])?\ +
  | (?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\ \d\d-\d\d\ \d\d:\d\d:\d\d(?:\.\d+)?\ \[?[\w./-]+:\d+\]?\   # vLLM
  | (?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:                                         # logging basicConfig
  | \((?:[\w.-]+\ )?pid=\d+(?:,\ ip=[\d.]+)?\)\ |\(raylet\)\                              # Ray / vLLM workers
  | !!!\ Exception\ during\ processing\ !!!\ +                                           # ComfyUI
  | [\w.-]+-\d+\ +\|\ +                                                                  # docker compose
    """,
    regex_code.VERBOSE,
)

#: The characters an alternative of _LOG_HEADER may start with, but for docker compose's
#: ``svc-1 | `` (any word character, ``.`` or ``-``; it needs a ``|``): ``[`` (glog, an ISO
#: time), a glog level or a logging level's initial, a digit (an ISO time), ``(`` (Ray,
#: vLLM), ``!`` (ComfyUI).
_HEADER_FIRST = "[IWEFDC0123456789(!"


def strip_log_header(text: str) -> str:
    """Remove logger headers in front of a message (glog, ISO/``logging`` timestamps with a
    level, vLLM, Ray ``(pid=N)``, ComfyUI ``!!! Exception during processing !!!``, docker
    compose ``svc-1 |``), so signatures anchored at the
    message start match whatever logger printed it. Timestamps are read before this.

    A header a formatter repeats on every line of a record (vLLM's ``NewLineFormatter``
    puts ``ERROR 05-12 10:41:09 [core.py:396] `` before each line of a logged traceback; Ray
    and vLLM's worker prefix ``(Name pid=N) `` each line of a process's output) ends at its
    one space: what follows keeps its own indentation, which a traceback's frames (two
    spaces) and quoted code (four) need to be read as one traceback.

    A text that starts with an ASCII character none of the pattern's alternatives starts with
    (:data:`_HEADER_FIRST`) and holds no ``|`` (docker compose's alternative, the only one
    that may start with a letter or ``.``/``-``) is returned as it is without a match: most
    messages, so a short log need not compile the pattern (~2 ms of a start, issue 11). A
    non-ASCII first character is always matched (the pattern's digits and word characters
    are Unicode ones)."""
    for _ in range(3):
        first = text[:1]
        if first.isascii() and first not in _HEADER_FIRST and "|" not in text:
            return text
        m = _LOG_HEADER.match(text)
        if not m or m.end() == 0:
            return text
        text = text[m.end() :]
    return text


def rank_from_path(path: str) -> tuple[int | None, bool]:
    """The rank a file's path names, if any, and whether it is a *local* rank.

    torchrun ``--log-dir`` trees (``.../attempt_0/3/stderr.log``) name the local rank;
    ``slurm-%j-%t.out`` names the task (the global rank); ``rank3.log`` / ``rank_3/...`` /
    ``worker-3.log`` name the rank. Only the file name and its own folder are read: a
    folder higher up (``runs/rank12-debug/train.log``) says nothing about the lines. A
    compressed file is read by its name without the compression suffix ingest decompresses
    (``rank3.log.gz``, ``attempt_1/3/stderr.log.zst``, ``slurm-42-3.out.xz``: the same file).
    """
    norm = strip_compression(str(PurePath(path)).replace("\\", "/"))
    if not _FILE_RANK_WORD.search(norm):
        return None, False
    m = _FILE_RANK.search(norm)
    if not m:
        return None, False
    if m.group("ldir") is not None:
        return int(m.group("ldir")), True
    if m.group("task") is not None:
        return int(m.group("task")), False
    return int(m.group("rank") if m.group("rank") is not None else m.group("dir")), False


def logdir_processes(sources: list[str]) -> int | None:
    """How many processes one torchrun agent started, from the files of its ``--log-dir``
    tree among ``sources`` (``<log dir>/<run id>/attempt_<n>/<local rank>/stderr.log``): the
    local-rank folders of the last attempt, when they are 0..n-1 (torchrun makes one per
    worker it starts, ``torch.distributed.elastic.multiprocessing.api``); ``None`` when no
    source is such a file, when the folders have gaps, or when several runs' trees were given
    (another agent's, or another node's, may have started another number)."""
    attempts: dict[tuple[str, int], set[int]] = {}
    for path in sources:
        norm = strip_compression(str(PurePath(path)).replace("\\", "/"))
        m = _LOGDIR_FILE.search(norm)
        if m:
            attempts.setdefault((m["run"], int(m["attempt"])), set()).add(int(m["local"]))
    if not attempts or len({run for run, _ in attempts}) != 1:
        return None
    local = attempts[max(attempts, key=lambda k: k[1])]
    return len(local) if local == set(range(len(local))) else None


#: A file of a torchrun ``--log-dir`` tree: its run folder, attempt and local rank.
_LOGDIR_FILE = lazy_regex.compile(
    r"(?P<run>(?:^|/)[^/]*)/attempt_(?P<attempt>\d+)/(?P<local>\d+)/(?:stdout|stderr|error)\.(?:log|json)$"
)


def _ray_train_rank(body: str, ray_train: bool) -> int | None:
    """The world rank a Ray actor's line ``body`` (after its ``(Actor pid=N)`` prefix) names
    for its own process (:data:`_RAY_TRAIN_RANK`): Ray Train's process-group line on any
    actor; a ``world_rank=K`` / ``[Worker:K]`` tag in the line's first 160 characters only on a
    ``RayTrainWorker`` (``ray_train``), whose worker index is its world rank."""
    if "rank" not in body and not (ray_train and "orker" in body):
        return None
    m = _RAY_TRAIN_RANK.search(body[:160] if ray_train else body)
    if m is None:
        return None
    if m.group("pg") is not None:
        return int(m.group("pg"))
    if not ray_train:
        return None
    return int(m.group("wr") or m.group("wk"))


def parse_time(text: str) -> float | None:
    """Seconds (in a fixed year) of the first glog/ISO/torchelastic timestamp in ``text``."""
    if ":" not in text:
        return None
    head = text[:160]
    m = _TS_ISO.search(head) or _TS_GLOG.search(head)
    if not m:
        return None
    import datetime as _dt  # only a log with timestamps: ~1 ms of a start that has none

    try:
        month, day = int(m.group("mo")), int(m.group("d"))
        stamp = _dt.datetime(
            2000, month, day, int(m.group("h")), int(m.group("mi")), int(m.group("s"))
        )
    except ValueError:
        return None
    frac = m.group("f")
    seconds = (stamp - _dt.datetime(2000, 1, 1)).total_seconds()
    return seconds + (int(frac) / 10 ** len(frac) if frac else 0.0)


#: Line shapes one source keeps (:class:`_Shape`); a source prints a few.
MAX_SHAPES = 4
_ASCII_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
# torch-style launcher tags ("[rank3]:", "[default3]:", "[trainer3]:") at a line start: the
# first alternative of _PREFIX, the only prefixes a shape holds.
_SHAPE_TAG = re_code.compile(r"\[([A-Za-z_][A-Za-z_-]*?)([0-9]{1,6})\]:( ?)")
_DIGITS = re_code.compile(r"[0-9]+")
# The ISO/logging-time alternative of _LOG_HEADER on its own (the header a shape holds).
_HEADER_ISO = lazy_regex.compile(
    r"""
    \[?\d{4}-\d\d-\d\d[T\ _]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?
      (?:\s*[-|]?\s*\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?)?
      (?:\s*\[[\w.]+:\d+(?::\w+)?\])?(?:\s*[-:|])?\ +
    """,
    regex_code.VERBOSE,
)


def _digit_shape(text: str) -> str:
    """A stdlib pattern for ``text`` with each run of ASCII digits free in value, fixed in
    length (``[0-9]{k}``), every other character literal."""
    out: list[str] = []
    at = 0
    for m in _DIGITS.finditer(text):
        out.append(re.escape(text[at : m.start()]))
        out.append(f"[0-9]{{{m.end() - m.start()}}}")
        at = m.end()
    out.append(re.escape(text[at:]))
    return "".join(out)


@dataclass(slots=True)
class _Shape:
    """A line layout one source repeats, learnt from one line the general path read:
    torch-style tags (``[rank3]: ``, ``[default0]:[rank12]:``, or none), then a logging
    timestamp header (``2026-11-29 09:04:28,866 - ``), then a message that starts with an
    ASCII lower-case letter and whose first word (up to the first space) holds no ``-``.

    ``regex`` (stdlib) matches a line of this layout up to its message: group ``i`` (1-based)
    is the number of the ``i``-th tag (``kinds[i-1]``: ``True`` for ``rank``, a global rank;
    ``False`` for any other tag, a local rank), group ``ts`` the timestamp's text, which starts
    the body (the line after its tags).

    Why such a line tags exactly as the general path does: the tags are _PREFIX's first
    alternative whatever their (1-6) digits; every pattern the general path tries on the rest
    of the header (_LEADING_STAMP, _PREFIX, _LOG_HEADER, _TS_ISO's match at the body's start)
    tells digits apart only as digits, except _TS_ISO's year (held to 19xx/20xx here), so a
    header with the same characters and the same digit-run lengths takes the same path; at the
    message's first character (a lower-case ASCII letter, which none of them accepts there)
    every longer attempt fails; and the message cannot start another header (_LOG_HEADER's
    alternatives need an upper-case letter, ``[``, ``(``, ``!``, a digit, or for ``svc-1 | ``
    a ``-`` before the first space). ``tests/test_ranks_shapes.py`` holds it to the general
    path on generated lines."""

    regex: re.Pattern[str]
    kinds: tuple[bool, ...]

    @staticmethod
    def learn(
        text: str, body: str, message: str, rank: int | None, local: int | None
    ) -> _Shape | None:
        """The shape of ``text`` (see the class), or ``None`` when it is not one a shape holds
        or what the general path found differs from what the shape would read."""
        body_at = len(text) - len(body)
        header_len = len(body) - len(message)
        kinds: list[bool] = []
        parts: list[str] = []
        got_rank = got_local = None
        at = 0
        while at < body_at and len(kinds) < 3:
            tm = _SHAPE_TAG.match(text, at)
            if tm is None or tm.group(1).lower() in ("e", "w", "i"):
                return None
            is_rank = tm.group(1).lower() == "rank"
            if is_rank:
                got_rank = int(tm.group(2))
            else:
                got_local = int(tm.group(2))
            kinds.append(is_rank)
            parts.append(r"\[" + re.escape(tm.group(1)) + r"([0-9]{1,6})\]:" + tm.group(3))
            at = tm.end()
        if at != body_at:
            return None
        if (got_rank, got_local) != (rank, local) or header_len <= 0:
            return None
        hm = _HEADER_ISO.match(body)
        tsm = _TS_ISO.match(body)
        if hm is None or hm.end() != header_len or tsm is None or body[:2] not in ("19", "20"):
            return None
        stamp_len = tsm.end()
        if stamp_len > header_len:
            return None
        guard = r"(?=[a-z][^ \-]*(?: |\Z))"
        header = body[:header_len]
        pattern = (
            "".join(parts)
            + "(?P<ts>(?:19|20)"
            + _digit_shape(header[2:stamp_len])
            + ")"
            + _digit_shape(header[stamp_len:])
            + guard
        )
        shape = _Shape(re.compile(pattern), tuple(kinds))
        return shape if shape.regex.match(text) else None


@dataclass(slots=True)
class ElasticFailure:
    """One entry of torchelastic's failure summary ("Root Cause (first observed failure)")."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    pid: int | None = None
    time: float | None = None
    traceback: str | None = None
    root_cause: bool = False
    line: int = 0
    path: str = ""
    #: The entry's ``error_file`` (``<N/A>``: ``None``): the worker's ``error.json`` in
    #: torchrun's log dir (``<log dir>/<run>/attempt_0/<local rank>/error.json``).
    error_file: str | None = None


#: How many runs of srun-labelled lines :class:`RankTagger` keeps (``label_spans``).
MAX_LABEL_SPANS = 100_000


@dataclass(slots=True)
class Tagged:
    """What :meth:`RankTagger.tag` learnt of one line."""

    text: str
    rank: int | None
    local_rank: int | None
    host: str | None
    pid: int | None
    time: float | None


@dataclass
class RankTagger:
    """Per-source state for rank attribution. Feed lines in order with :meth:`tag`.

    ``path_rank`` / ``path_rank_is_local`` come from :func:`rank_from_path`.
    ``actor_rank`` maps a Ray actor / vLLM worker, keyed ``(ip or None, pid)`` from its
    ``(Name pid=N, ip=X)`` prefix, to the global rank it showed once (``rank=N`` in the
    prefix or a ``[rankN]:`` tag after it), for its later lines that show none.
    """

    path: str = ""
    path_rank: int | None = None
    path_rank_is_local: bool = False
    local_to_global: dict[tuple[str | None, int], int] = field(default_factory=dict)
    pid_rank: dict[tuple[str | None, int], int] = field(default_factory=dict)
    world_size: int | None = None
    #: The last line that printed a world size: ``(1-based line, its value, the world size
    #: known before it)``, read by the scanner to see a job of another size begin.
    world_line: tuple[int, int, int | None] | None = None
    hosts: dict[int, str] = field(default_factory=dict)
    elastic: list[ElasticFailure] = field(default_factory=list)
    _summary: bool = False
    _summary_root: bool = False
    _summary_noise: int = 0
    _summary_item_line: int | None = None
    #: The 1-based line of the failure summary's latest entry field (``traceback : ...``), 0
    #: before any: the summary is the agent's last words (rootrank.scan ``_after_close``).
    summary_field_line: int = 0
    _spawn_proc: int | None = None
    _spawn_left: int = 0
    _spawn_exc: bool = False
    _spawn_gap: bool = False
    #: the rank of a traceback logged as one record after an SGLang header, and the lines
    #: it may still hold (_tag_general)
    _record_rank: int | None = None
    _record_left: int = 0
    #: the global rank of an open composer output block (:data:`_COMPOSER_BLOCK`)
    _block_rank: int | None = None
    #: the source's own path rank, before a ``tail`` file header (:data:`_FILE_HEADER`)
    #: replaced it with its file's
    _own_path_rank: tuple[int | None, bool] | None = None
    _last_time: dict[int | None, float] = field(default_factory=dict)
    #: The latest timestamp on any line of this source so far (s).
    _latest_time: float | None = None
    #: The global rank an application's own tag gave lines of each launcher local rank
    #: (:meth:`_learn_app_rank`), and the local ranks whose lines named two different ranks.
    _app_locals: dict[tuple[str | None, int], int] = field(default_factory=dict)
    _app_conflicts: set[tuple[str | None, int]] = field(default_factory=set)
    actor_rank: dict[tuple[str | None, int], int] = field(default_factory=dict)
    #: The numbers seen per user tag form (:data:`_USER_TAG`, :meth:`user_tag_rank`).
    user_tags: dict[str, set[int]] = field(default_factory=dict)
    _shapes: list[_Shape] = field(default_factory=list)
    #: a collector's constant prefix of each stream of this source (:data:`_COLLECTOR_PREFIX`)
    #: mapped to the host it names (its first token), at most :data:`MAX_COLLECTOR_KEYS`
    _collector_keys: dict[str, str | None] = field(default_factory=dict)
    #: The node names a wrapper's bracketed labels gave (:data:`_BRACKET_LABEL`, ``[node0] ``):
    #: names the wrapper chose for the nodes, not their host names (torchelastic's summary
    #: names the same node by its host name: :func:`node_count`).
    label_hosts: set[str] = field(default_factory=set)
    _stamp_cache: dict[str, float | None] = field(default_factory=dict)
    _learn_budget: int = 64
    #: torchrun's local rank of a worker pid, keyed ``(host or None, pid)``, from the agent's
    #: failed-worker line (:meth:`pid_local_rank`).
    pid_local: dict[tuple[str | None, int], int] = field(default_factory=dict)
    #: srun tasks (``srun --label``'s ``N:``) that are torchrun agents: a task whose output
    #: holds the agent's failed-worker line. Such a label is the agent's task id (one per
    #: node), not a global rank (:meth:`label_only`).
    srun_agent_tasks: set[int] = field(default_factory=set)
    #: Host labels this source's lines began with (``node-a01: ``, pdsh or a site wrapper),
    #: as peeled: the same label before an indented line (``node-a02:   rank      : 2``,
    #: torchrun's failure table under that wrapper) is peeled too (:meth:`_known_host`).
    _line_hosts: set[str] = field(default_factory=set)
    #: ``[task, first line, last line]`` runs of lines whose rank came only from the srun
    #: label (at most :data:`MAX_LABEL_SPANS`; consecutive lines of one task are one run).
    label_spans: list[list[int]] = field(default_factory=list)
    #: Ranks some line showed by other evidence than an srun label.
    ranks_not_label: set[int] = field(default_factory=set)
    #: Whether the line being tagged got its rank only from the source's path
    #: (:attr:`path_rank`): its own tag, if any, is then peeled and wins (:meth:`_finish`).
    _rank_from_path: bool = False

    def label_only(self, task: int, line: int) -> bool:
        """Whether line ``line`` (1-based) got its rank ``task`` only from an srun label."""
        return any(t == task and a <= line <= b for t, a, b in self.label_spans)

    def rank_of_pid(self, host: str | None, pid: int) -> int | None:
        """The global rank process ``pid`` on ``host`` showed on its own lines: an NCCL
        ``comm ... rank R`` line of that pid, else a Ray actor's rank (:meth:`actor_rank_of`);
        ``None`` when no line of that process named one."""
        rank = self.pid_rank.get((host, pid))
        return rank if rank is not None else self.actor_rank_of(host, pid)

    def actor_rank_of(self, host: str | None, pid: int) -> int | None:
        """The rank a Ray actor / vLLM worker of process ``pid`` showed on its own prefixed
        lines (``(RayTrainWorker pid=1942, ip=10.0.0.1) ... [rank=0, world_size=4]``), for a
        line that names that process by pid only (Ray's ``Worker PID: 1942`` report of its
        death). The IP, when both lines give one, must agree; a line with no IP takes the one
        actor of that pid, and none when actors of several hosts share the pid."""
        rank = self.actor_rank.get((host, pid))
        if rank is not None or not self.actor_rank:
            return rank
        ranks = {
            r for (ip, p), r in self.actor_rank.items() if p == pid and (host is None or ip is None)
        }
        return ranks.pop() if len(ranks) == 1 else None

    def pid_local_rank(self, host: str | None, pid: int) -> int | None:
        """The local rank torchrun's agent gave worker ``pid`` on ``host`` ("failed
        (exitcode: -11) local_rank: 0 (pid: 157)"), or ``None``. The agent's line carries no
        host, so a pid seen on a host also matches the agent's host-less entry. Only a local
        rank: whether it is the global one is for the analysis to prove (one node)."""
        local = self.pid_local.get((host, pid))
        return local if local is not None else self.pid_local.get((None, pid))

    def _known_host(self, body: str) -> str | None:
        """The host label of :attr:`_line_hosts` that ``body`` starts with, followed by
        ``": "`` and more white space (an indented line under a per-line host prefix: the
        prefix adds ``"host: "`` before the line as written), or ``None``. A label not seen
        before is not peeled this way: ``name1:   value`` is a message's field otherwise."""
        if not self._line_hosts:
            return None
        head, sep, rest = body.partition(": ")
        if sep and head in self._line_hosts and rest[:1] in (" ", "\t"):
            return head
        return None

    def tag(self, text: str, number: int) -> Tagged:
        """Peel prefixes off ``text`` and attribute it. ``number`` is the 1-based line.

        A line of a shape this source printed before (see :class:`_Shape`) is read with one
        precompiled match; any other line takes the general path, which may learn its shape."""
        for shape in self._shapes:
            fm = shape.regex.match(text)
            if fm is not None:
                return self._tag_shaped(text, number, shape, fm)
        return self._tag_general(text, number)

    def _collector_prefix(self, body: str) -> tuple[str | None, str] | None:
        """``(host, rest)`` when ``body`` starts with a collector's prefix (see
        :data:`_COLLECTOR_PREFIX`): one this source's lines showed before a launcher's rank
        prefix (the stream's constant prefix, peeled from every line of that stream), or one
        this line shows there; else ``None``. A prefix the existing rules read (pdsh's
        ``node01: [rank3]:``, a srun label) is left to them, and so is a line whose
        ``[rankN]:`` is not behind name tokens (a message quoting it, ``RuntimeError:
        [rank1]: ...``): a user's own ``worker_1 | loss`` has no launcher prefix after it,
        so it keeps its meaning (its user tag)."""
        for key, host in self._collector_keys.items():
            if body.startswith(key):
                return host, body[len(key) :]
        if body[:1] == "[":
            bm = _BRACKET_LABEL.match(body)
            label = _label_host(bm) if bm is not None else None
            if bm is None or label is None:
                return None
            if len(self._collector_keys) < MAX_COLLECTOR_KEYS:
                self._collector_keys[bm.group("key")] = label
                self.label_hosts.add(label)
            return label, body[bm.end() :]
        # the first launcher tag: torchrun's --tee "[defaultN]:" stands before torch's own
        # "[rankN]:" ("finetune/0 [default2]:[rank2]: ...", a NeMo-Run task's lines), so the
        # collector's prefix ends at whichever comes first
        found = [
            i
            for i in (
                body.find("[rank", 1, MAX_COLLECTOR_PREFIX),
                body.find("[default", 1, MAX_COLLECTOR_PREFIX),
            )
            if i >= 0
        ]
        at = min(found) if found else -1
        if at < 0 or body[at - 1] not in " :|" or _PREFIX.match(body):
            return None
        m = _COLLECTOR_PREFIX.match(body)
        if m is None or m.end() != at:
            return None
        key = m.group("key")
        tokens = _NAME_TOKEN.findall(key)
        if any(t.endswith(_NOT_COLLECTOR_ENDS) for t in tokens):
            return None
        name = m.group("name")
        host = (
            name
            if any(c.isdigit() or c in "-." for c in name) and name.lower() not in _NOT_HOSTS
            else None
        )
        if host is not None and len(self._collector_keys) < MAX_COLLECTOR_KEYS:
            # a stream's constant prefix names its host, pod or service; words alone
            # ("Epoch 3 [rank1]: ...", a user's own print) are peeled from this line only
            self._collector_keys[key] = host
        return host, body[len(key) :]

    def _tag_shaped(self, text: str, number: int, shape: _Shape, fm: re.Match[str]) -> Tagged:
        """:meth:`tag` for a line that ``shape`` matched (``fm``): the prefixes' ranks and the
        header's end come from the match, the timestamp from a cache keyed by its text; the
        rest is the general path's."""
        rank: int | None = None
        local: int | None = None
        for i, is_rank in enumerate(shape.kinds, 1):
            if is_rank:
                rank = int(fm.group(i))
            else:
                local = int(fm.group(i))
        stamp = fm.group("ts")
        cache = self._stamp_cache
        if stamp in cache:
            time = cache[stamp]
        else:
            if len(cache) > 4096:
                cache.clear()
            time = cache[stamp] = parse_time(stamp)
        body = text[fm.start("ts") :]
        rank, local, host, pid = self._attribute(body, number, rank, local, None, None, None, None)
        message = text[fm.end() :]
        return self._finish(message, number, rank, local, host, pid, time)

    def _tag_general(self, text: str, number: int) -> Tagged:
        """:meth:`tag` for any line (the reference the shaped path is held to)."""
        rank: int | None = None
        local: int | None = None
        host: str | None = None
        body = text
        lead_time: float | None = None
        det_rank: int | None = None
        if body[:2] == "[2" and "|| " in body[:120] and (dm := _DETERMINED_PREFIX.match(body)):
            lead_time = parse_time(dm.group("ts"))
            det_rank = int(dm.group("rank")) if dm.group("rank") is not None else None
            body = body[dm.end() :]
        if (
            body[2:3] == ":"
            or (body[:1] == "[" and (body[3:4] == ":" or body[5:6] == "-"))
            or (body[4:5] == "-" and body[:1].isdigit())
        ):
            stamp_at, dated = _stamp_end(body)
        else:
            stamp_at = 0  # the line cannot start with a stamp (most lines: a few indexings)
        if stamp_at:
            # a wrapper's stamp in front of everything (``ts '[%H:%M:%S]'``, an awk
            # strftime filter, a date loop before torchrun's prefix): peeled so the
            # launcher's prefix after it (``[rank2]:``), the user's rank tag and the
            # traceback's frames are read as on an unstamped line; a dated stamp gives the
            # line's time
            if dated:
                lead_time = parse_time(body[:stamp_at])
            body = body[stamp_at:]
        if body[:5] == "[pod/":
            km = _KUBECTL_PREFIX.match(body)
            if km:
                host = km.group("pod")
                body = body[km.end() :]
        elif " | " in body[:80] and body[:1].isalnum() and (cm := _COMPOSE_PREFIX.match(body)):
            host = cm.group("name")
            body = body[cm.end() :]
        elif body[:1].isalpha() or (body[:1] == "[" and "] " in body[:66]):
            peeled = self._collector_prefix(body)
            if peeled is not None:
                host, body = peeled
        if body[:2].isdigit():
            # a collector's timestamp in front of everything (kubectl logs --timestamps)
            lm = _LEADING_STAMP.match(body)
            if lm:
                lead_time = parse_time(lm.group("ts"))
                body = body[lm.end() :]
        elif body.lstrip(" ")[:1] == "|":
            pm = _PIPE_STAMP.match(body)
            if pm:
                lead_time = parse_time(pm.group("ts"))
                body = body[pm.end() :]
        slurm_task: int | None = None  # srun --label's task id on this line
        from_label = False  # the rank so far is that label
        actor_key: tuple[str | None, int] | None = None
        actor_ip: str | None = None
        actor_rank: int | None = None
        ray_train = False  # the actor is a Ray Train worker (_RAY_TRAIN_RANK)
        # srun --label right-aligns its task ids to the widest one (" 2: " among "12: "): the
        # padding is the label's, so it is peeled with it (only at the line's start)
        pad = _SRUN_PADDED.match(body)
        if pad is not None:
            body = body[pad.end() :]
        # Peel launcher prefixes (up to a few stacked ones).
        for _ in range(5):
            if body[:1] == "(":
                am = _ACTOR.match(body)
                if am:
                    if am.group("apid") is not None:
                        actor_ip = am.group("aip") or actor_ip
                        actor_key = (am.group("aip"), int(am.group("apid")))
                        if am.group("arank") is not None:
                            actor_rank = int(am.group("arank"))
                        elif am.group("actor"):
                            tm = _ACTOR_TP.fullmatch(am.group("actor"))
                            if tm:
                                actor_rank = int(tm.group("tp"))
                            ray_train = am.group("actor") == "RayTrainWorker"
                    else:
                        actor_ip = am.group("rip") or actor_ip
                    body = body[am.end() :]
                    continue
            m = _PREFIX.match(body)
            if not m:
                known = self._known_host(body) if host is None and rank is None else None
                if known is None:
                    break
                host = known
                body = body[len(known) + 2 :]
                continue
            if m.group("tag") is not None:
                tag = m.group("tag")
                n = int(m.group("tagn"))
                if tag.lower() == "rank":
                    rank = n
                    from_label = False
                elif tag.lower() in ("e", "w", "i"):  # a glog header, not a prefix
                    break
                else:
                    local = n
            elif m.group("mpirank") is not None:
                rank = int(m.group("mpirank"))
            elif m.group("stream") is not None:
                pass  # a stream tag (accelerate launch): no rank, just peel it
            elif m.group("blank") is not None:
                # a pdsh host or srun task label emptied before a torchrun prefix (a paste
                # whose host names were removed): no rank of its own, just peel it
                pass
            elif m.group("slurm") is not None:
                if rank is not None or local is not None:
                    break
                rank = int(m.group("slurm"))
                slurm_task = rank
                from_label = True
            else:
                h = m.group("host") or m.group("hostip")
                if (
                    h.lower() in _NOT_HOSTS
                    or h.endswith(("Error", "Exception", "Warning"))
                    # a traceback's last line: "psycopg2.errors.UniqueViolation: ..."
                    or exception_path(h)
                    or h.endswith(_SCRIPT_SUFFIXES)
                    or _RANK_WORD.fullmatch(h)
                ):
                    break
                if host is not None:
                    break
                host = h
                if m.start() == 0 and len(self._line_hosts) < 64:
                    self._line_hosts.add(h)
            body = body[m.end() :]
        if from_label and body.startswith("slurmstepd"):
            # slurmstepd (the node's step daemon, not the task) writes its cancellation into
            # the step's output, which srun labels with the stream's task id (" 0: slurmstepd:
            # error: *** STEP ... CANCELLED ***"): the label names no rank that failed
            rank, slurm_task, from_label = None, None, False
        if from_label and slurm_task in self.srun_agent_tasks:
            # a task that ran torchrun's agent (seen on its earlier lines): a line that only
            # its label ranks is the agent's (its failure table, ChildFailedError), not a rank's
            rank = None
        if actor_key is not None and actor_rank is None and rank is None:
            actor_rank = _ray_train_rank(body, ray_train)
        sglang = _SGLANG_HEADER.match(body) if body[:1] == "[" and "TP" in body[:48] else None
        if (
            sglang is not None
            and rank is None
            and not sglang.group("other")
            and "PP" not in sglang.group("after")
            and "DP" not in sglang.group("after")
        ):
            rank = int(sglang.group("tp"))
        if rank is None and det_rank is not None:
            rank = det_rank
        peeled_rank, peeled_local = rank, local
        rank, local, host, pid = self._attribute(
            body, number, rank, local, host, actor_key, actor_rank, actor_ip, slurm_task, from_label
        )
        message = body[sglang.end() :] if sglang is not None else strip_log_header(body)
        if sglang is not None and rank is not None and message.endswith(_TRACEBACK_HEAD):
            # logger.error(f"Scheduler hit an exception: {traceback}"): one record, its
            # header on the first line only; the traceback's lines below are this rank's
            self._record_rank, self._record_left = rank, MAX_RECORD_LINES
        time = parse_time(body) if ":" in body else None
        if time is None:
            time = lead_time
        if (
            lead_time is None
            and actor_key is None
            and actor_ip is None
            and self._learn_budget > 0
            and len(self._shapes) < MAX_SHAPES
            and body[:1] in "12"
            and message[:1] in _ASCII_LOWER
        ):
            self._learn(text, body, message, peeled_rank, peeled_local)
        return self._finish(message, number, rank, local, host, pid, time, slurm_task, from_label)

    def _attribute(
        self,
        body: str,
        number: int,
        rank: int | None,
        local: int | None,
        host: str | None,
        actor_key: tuple[str | None, int] | None,
        actor_rank: int | None,
        actor_ip: str | None,
        slurm_task: int | None = None,
        from_label: bool = False,
    ) -> tuple[int | None, int | None, str | None, int | None]:
        """The evidence in ``body`` (the line after its launcher prefixes) and this source's
        state: returns ``(rank, local_rank, host, pid)`` given what the prefixes named
        (``slurm_task``: srun ``--label``'s task id on this line; ``from_label``: the rank so
        far is that label)."""
        pid: int | None = None
        self._rank_from_path = False
        # A Ray actor / vLLM worker: its rank tag, else the rank it showed before.
        if actor_key is not None:
            if rank is None and actor_rank is not None:
                rank = actor_rank
            if rank is not None:
                self.actor_rank[actor_key] = rank
            else:
                rank = self.actor_rank.get(actor_key)
            if pid is None:
                pid = actor_key[1]
        # Continuation lines of a stacked prefix carry only the local tag.
        if local is not None:
            key = (host, local)
            if rank is not None:
                self.local_to_global[key] = rank
            else:
                rank = self.local_to_global.get(key)
        # Evidence inside the message.
        if "NCCL" in body and ":" in body:
            nm = _NCCL_HEADER.match(body)
            if nm:
                host = host or nm.group("host")
                pid = int(nm.group("pid"))
                cm = _NCCL_COMM.search(body) or None
                if cm:
                    self.pid_rank[(host, pid)] = int(cm.group("rank"))
                    self.world_size = self.world_size or int(cm.group("nranks"))
                if rank is None:
                    rank = self.pid_rank.get((host, pid))
        if body[:1] == "[" and pid is None:
            um = _UCS_BANNER.match(body)
            if um:
                host = host or um.group("host")
                pid = int(um.group("pid"))
                if rank is None:
                    rank = self.pid_rank.get((host, pid))
        if pid is None and actor_key is None and ("Worker PID: " in body or "ray::" in body):
            rm = _RAY_DEAD_PID.search(body)
            if rm:
                pid = int(rm.group("pid") or rm.group("tpid"))
                host = host or rm.group("ip") or rm.group("tip")
                if rank is None:
                    rank = self.actor_rank_of(host, pid)
        if "local_rank: " in body and "(pid: " in body:
            fm = _AGENT_FAILED_PID.search(body)
            if fm:
                self.pid_local[(host, int(fm.group("pid")))] = int(fm.group("local"))
                if slurm_task is not None and rank == slurm_task and from_label:
                    # srun started torchrun's agent as this task (srun ... torchrun): the
                    # label is the agent's task id, one per node, and the worker it names is
                    # known by its local rank only; neither is a global rank
                    self.srun_agent_tasks.add(slurm_task)
                    rank = None
        if (
            slurm_task is not None
            and from_label
            and rank == slurm_task
            and "torch/distributed/" in body
            and AGENT_SOURCE.search(body)
        ):
            # torchrun's agent logs as this srun task (``1: W1201 ... torch/distributed/run.py:793]``,
            # ``.../elastic/multiprocessing/api.py:897] Sending process ...``): the label is
            # the agent's task id, one per node, not a rank
            self.srun_agent_tasks.add(slurm_task)
            rank = None
        if "Rank " in body:
            im = _INLINE_RANK.search(body)
            if im:
                pg = im.group("pg")
                name = im.group("name1") or im.group("name2") or ""
                default_pg = pg is None or pg == "0" or "default_pg" in name
                if default_pg and rank is None:
                    rank = int(im.group("rank"))
        if host is None and actor_ip is not None:
            host = actor_ip
        if "world" in body.lower() or "WORLD" in body or "MEMBER: " in body or "I am " in body:
            wm = _WORLD.search(body) or _MEMBER_WORLD.search(body)
            if wm is None and (om := _MEMBER_OF.search(body)) and int(om["r"]) < int(om["n"]):
                wm = om
            if wm:
                n = int(wm.group("n"))
                self.world_line = (number, n, self.world_size)
                self.world_size = max(self.world_size or 0, n)
        # A traceback logged as one record after a rank's logger header: its lines carry no
        # header of their own (see _tag_general), up to its exception line.
        if self._record_rank is not None:
            if rank is None and body.strip():
                rank = self._record_rank
                self._record_left -= 1
                if _is_exception_line(body) or self._record_left <= 0:
                    self._record_rank = None
            else:
                self._record_rank = None
        # mp.spawn: the traceback after the banner belongs to that process, up to the
        # first blank line after its exception line, unless Python's chain line follows
        # it ("The above exception was the direct cause of the following exception:"):
        # the banner's text is the process's whole traceback.format_exc(), chain included.
        if body.startswith("-- Process "):
            sm = _SPAWN.match(body)
            if sm:
                self._spawn_proc = int(sm.group("proc"))
                self._spawn_left = 400
                self._spawn_exc = False
                self._spawn_gap = False
        elif self._spawn_proc is not None:
            stripped = body.strip()
            if self._spawn_gap and stripped:
                if _CHAIN_LINE.match(stripped):
                    self._spawn_gap = self._spawn_exc = False
                else:
                    self._spawn_proc = None  # the process's traceback ended at the blank
            if self._spawn_proc is not None:
                if rank is None:
                    rank = self._spawn_proc
                self._spawn_left -= 1
                if _is_exception_line(body):
                    self._spawn_exc = True
                elif self._spawn_exc and not stripped:
                    self._spawn_gap = True
                if self._spawn_left <= 0:
                    self._spawn_proc = None
        if body[:10] == "----------":
            bm = _COMPOSER_BLOCK.match(body)
            if bm:
                opened = bm.group("edge") == "Begin"
                self._block_rank = int(bm.group("rank")) if opened else None
                if rank is None:
                    rank = int(bm.group("rank"))
        elif self._block_rank is not None and rank is None:
            rank = self._block_rank
        if body[:4] == "==> ":
            self._file_header(body)
        if self._track_summary(body, number) and rank is None:
            rank = self.summary_rank(number)
        if rank is None and self.path_rank is not None:
            self._rank_from_path = True
            if self.path_rank_is_local:
                rank = self.local_to_global.get((host, self.path_rank), self.path_rank)
                local = self.path_rank if local is None else local
            else:
                rank = self.path_rank
        return rank, local, host, pid

    def _learn_app_rank(self, host: str | None, local: int, rank: int) -> None:
        """A line of launcher local rank ``local`` (``[default1]:`` of ``torchrun --tee``)
        whose own message tags it with global rank ``rank`` (a logger's ``INFO [rank 1]``):
        that process's lines with no tag of their own (its traceback, which carries only
        ``[default1]:``) are ``rank``'s too (:meth:`_finish` reads them so). Two different
        ranks seen for one local rank (a message that names another rank) unlearn it."""
        key = (host, local)
        if self._app_locals.get(key, rank) != rank:
            self._app_conflicts.add(key)
        self._app_locals.setdefault(key, rank)

    def _file_header(self, body: str) -> None:
        """A ``tail``/``head`` file header (``==> path <==``): the lines after it, up to the
        next header, are that file's, so the rank its path names (:func:`rank_from_path`: a
        ``--log-dir`` tree's ``attempt_0/3/stderr.log`` is local rank 3) is theirs, as if
        the file had been read on its own; a path that names none gives the source's own
        back."""
        m = _FILE_HEADER.match(body)
        if m is None:
            return
        if self._own_path_rank is None:
            self._own_path_rank = (self.path_rank, self.path_rank_is_local)
        rank, local = rank_from_path(m.group("path"))
        if rank is None:
            rank, local = self._own_path_rank
        self.path_rank, self.path_rank_is_local = rank, local

    def _finish(
        self,
        message: str,
        number: int,
        rank: int | None,
        local: int | None,
        host: str | None,
        pid: int | None,
        time: float | None,
        slurm_task: int | None = None,
        from_label: bool = False,
    ) -> Tagged:
        """An application's own rank tag at the message start, then the record (and which
        ranks came only from an srun label: :attr:`label_spans`)."""
        # a rank only the file's name gave (rank3.log, slurm-%j-%t.out) yields to the line's
        # own tag, which is peeled like any other prefix ("[rank3] Traceback ...")
        own_tag = False  # a rank the application's own tag gives (below)
        if rank is None or self._rank_from_path:
            if message[:5].lower() in ("[rank", "rank ", "rank="):
                am = _APP_RANK.match(message)
                if am:
                    rank, own_tag = int(am.group("n") or am.group("m")), True
                    # the tag and the one space after it go; the message's own indentation
                    # stays (a traceback's "  File ..." lines under "[rank2] ")
                    message = message[am.end() :]
                    if am[0].endswith(":") and message[:1] == " ":
                        message = message[1:]
            if not own_tag and (message[:1] in _USER_TAG_FIRST or " | " in message[:48]):
                um = _USER_TAG.match(message)
                if um:
                    form, n = _user_tag(um)
                    self._see_user_tag(form, n)
                    if self.user_tag_rank(form, n):
                        rank, own_tag = n, True
                        message = message[um.end() :]
        if rank is not None and local is not None and own_tag:
            self._learn_app_rank(host, local, rank)
        elif rank is None and local is not None and self._app_locals:
            key = (host, local)
            if key not in self._app_conflicts:
                rank = self._app_locals.get(key)
        if time is not None:
            self._last_time[rank] = time
            if self._latest_time is None or time > self._latest_time:
                self._latest_time = time
        if rank is not None and host is not None:
            self.hosts.setdefault(rank, host)
        if rank is not None:
            if from_label and rank == slurm_task:
                spans = self.label_spans
                if spans and spans[-1][0] == rank and spans[-1][2] >= number - 1:
                    spans[-1][2] = number
                elif len(spans) < MAX_LABEL_SPANS:
                    spans.append([rank, number, number])
            else:
                self.ranks_not_label.add(rank)
        return Tagged(message, rank, local, host, pid, time)

    def _learn(
        self, text: str, body: str, message: str, rank: int | None, local: int | None
    ) -> None:
        """Learn the shape of ``text`` (already read by the general path: ``body`` after its
        prefixes, ``message`` after its header; ``rank``/``local`` what its prefixes named) when
        it is one :class:`_Shape` can hold; each attempt that fails spends the budget."""
        shape = _Shape.learn(text, body, message, rank, local)
        if shape is None:
            self._learn_budget -= 1
        else:
            self._shapes.insert(0, shape)

    def learn_stacked(self, text: str) -> set[int]:
        """Learn local -> global rank from every stacked ``[defaultN]:[rankM]:`` prefix in
        ``text`` (a block of lines, optionally ``host: ``-prefixed), so that lines which show
        only ``[defaultN]:`` get rank M without each stacked line being read on its own.
        Returns the global ranks seen."""
        if "]:[rank" not in text:
            return set()
        seen: set[int] = set()
        first = _STACKED.match(text)
        found = [first.groups()] if first else []
        found += _STACKED_AFTER_NL.findall(text)
        # in the order printed (the first mapping of a local tag holds), never a set's order:
        # that varies with PYTHONHASHSEED when two nodes' [default0] meet in one file
        for host, local, rank in dict.fromkeys(found):
            self.local_to_global.setdefault((host or None, int(local)), int(rank))
            seen.add(int(rank))
        return seen

    def learn_collector_labels(self, text: str) -> None:
        """Learn the wrapper labels (:data:`_BRACKET_LABEL`) at the line starts of ``text`` (a
        block of lines) as their streams' constant prefixes, so a stream's lines before its
        first such line in the block (a rank's start-up prints) are peeled too. Reads at most
        :data:`MAX_LABEL_SWEEP` labels."""
        first = _BRACKET_LABEL.match(text)
        found = [first] if first else []
        for i, m in enumerate(_BRACKET_LABEL_AFTER_NL.finditer(text)):
            if i >= MAX_LABEL_SWEEP:
                break
            found.append(m)
        for m in found:
            key = m.group("key")
            if key in self._collector_keys or len(self._collector_keys) >= MAX_COLLECTOR_KEYS:
                continue
            host = _label_host(m)
            if host is not None:
                self._collector_keys[key] = host
                self.label_hosts.add(host)

    def _see_user_tag(self, form: str, n: int) -> None:
        """Count number ``n`` of user tag ``form`` (:data:`_USER_TAG`)."""
        seen = self.user_tags.setdefault(form, set())
        if len(seen) < MAX_USER_TAG_NUMBERS:
            seen.add(n)

    def user_tag_rank(self, form: str, n: int) -> bool:
        """Whether number ``n`` of a user's own tag ``form`` (``[r3]``, ``rank3:``, ``[GPU 3]``,
        ``[worker-3]``) is read as the line's rank. Only when the log shows the form is a rank
        numbering: at least two distinct numbers, every one below the world size when the log
        printed one, else dense from 0 (the highest below twice their count: ranks 0-3, not a
        retry 12 and a retry 250); a GPU index only while the log shows one host (on several
        nodes it is the local rank: with a world size printed, its indices must reach it, as
        a worker index's must, a DataLoader's workers being no ranks). One
        number alone (a log of rank 0's output only, a tag
        that names something else) is no rank: such a line stays on no rank."""
        seen = self.user_tags.get(form)
        if seen is None or len(seen) < 2 or n not in seen:
            return False
        top = max(seen)
        if self.world_size is not None:
            if top >= self.world_size:
                return False
            if form in ("gpu", "worker") and top + 1 < self.world_size:
                # a node's GPU indices, or a DataLoader's worker indices, in a job of more
                # ranks than they count
                return False
        elif top >= 2 * len(seen):
            return False
        return form != "gpu" or len(set(self.hosts.values())) <= 1

    def learn_user_tags(self, text: str) -> None:
        """Count the user tags (:data:`_USER_TAG`) at the line starts of ``text`` (a block of
        lines), so a form's first lines are read as ranks too once the block shows its
        numbering (:meth:`user_tag_rank`); tags after a logger header are counted as their
        lines are tagged."""
        first = _USER_TAG.match(text)
        found = [first] if first else []
        found += _USER_TAG_AFTER_NL.finditer(text)
        for m in found:
            self._see_user_tag(*_user_tag(m))

    def learn_actor_ranks(self, text: str) -> set[int]:
        """Learn the rank of each Ray actor whose prefixed line in ``text`` (a block of lines)
        names it (:func:`_ray_train_rank`: Ray Train's process-group line, a RayTrainWorker's
        ``[Worker:K]``/``world_rank=K``), so that a line naming that process by pid only (Ray's
        ``Worker PID: N`` death report, read by :meth:`tag`) gets its rank, although such
        actor lines are mostly not gated (nothing on them is an error). Returns the ranks seen."""
        if "pid=" not in text or ("RayTrainWorker" not in text and ", world_size=" not in text):
            return set()
        seen: set[int] = set()
        for m in _ACTOR_LINE.finditer(text):
            line = strip_ansi(m.group(0))
            at = line.find("(")
            am = _ACTOR.match(line, at) if at >= 0 else None
            if am is None or am.group("apid") is None:
                continue
            rank = _ray_train_rank(line[am.end() :], am.group("actor") == "RayTrainWorker")
            if rank is not None:
                self.actor_rank.setdefault((am.group("aip"), int(am.group("apid"))), rank)
                seen.add(rank)
        return seen

    def following(self) -> bool:
        """``True`` while a torchelastic summary, an ``mp.spawn`` traceback or a composer
        output block is open."""
        return self._summary or self._spawn_proc is not None or self._block_rank is not None

    def latest_time(self) -> float | None:
        """The latest timestamp (s) on any line of this source seen so far, or ``None``."""
        return self._latest_time

    def last_time(self, rank: int | None) -> float | None:
        """A lower bound (s) for an untimed line of ``rank``: the latest timestamp seen so far
        on a line of ``rank``, raised to the latest one on any line of this source before it
        (the stream is written in time order: a traceback printed after another rank's
        18:39:14 line happened after 18:39:14, whatever its own rank last stamped minutes
        earlier). ``None`` when ``rank`` printed no timestamp."""
        own = self._last_time.get(rank)
        if own is None or self._latest_time is None:
            return own
        return max(own, self._latest_time)

    def _track_summary(self, body: str, number: int) -> bool:
        """Follow torchelastic's failure summary; ``True`` when ``body`` is one of an
        entry's field lines (``rank :``, ``exitcode :``, ``traceback :``...)."""
        if not self._summary:
            if body.startswith(("Failures:", "Root Cause")) and _SUMMARY_START.match(body):
                self._summary = True
                self._summary_root = body.startswith("Root Cause")
                self._summary_item_line = None
                return False
            if not self._open_cut_summary(body, number):
                return False
        if _SUMMARY_ITEM.match(body):
            self.elastic.append(
                ElasticFailure(root_cause=self._summary_root, line=number, path=self.path)
            )
            self._summary_noise = 0
            return False
        if self._quoted_traceback_line(body):
            return True
        fm = _SUMMARY_FIELD.match(body)
        if fm:
            self._summary_noise = 0
            self.summary_field_line = number
        elif self.elastic and self._glued_entry(body):
            return True
        if fm and self.elastic:
            item = self.elastic[-1]
            key, value = fm.group("key"), fm.group("value").strip()
            attr = _ENTRY_FIELD_ATTR.get(key)
            if attr is not None and getattr(item, attr) is not None:
                # A second "time"/"host"/"rank" without an "[N]:" header between them (a paste
                # that lost the header line) starts the next entry.
                item = ElasticFailure(root_cause=self._summary_root, line=number, path=self.path)
                self.elastic.append(item)
            if key == "time":
                item.time = parse_time(value)
            elif key == "host":
                item.host = value or None
            elif key == "rank":
                rm = _SUMMARY_RANK.match(value)
                if rm:
                    item.rank = int(rm.group("rank"))
                    if rm.group("local") is not None:
                        item.local_rank = int(rm.group("local"))
                    if item.host and item.rank is not None and item.rank >= 0:
                        self.hosts.setdefault(item.rank, item.host)
            elif key == "exitcode":
                em = _SUMMARY_EXIT.match(value)
                if em:
                    item.exitcode = int(em.group("code"))
                    if em.group("pid"):
                        item.pid = int(em.group("pid"))
            elif key == "traceback":
                item.traceback = value
            elif key == "error_file" and value and value != "<N/A>":
                item.error_file = value
            return True
        stripped = body.strip()
        if _SUMMARY_START.match(body):
            self._summary_root = body.startswith("Root Cause")
            return False
        if (
            stripped.startswith(("=====", "-----"))
            or stripped.replace(" ", "_").startswith("<NO_OTHER_FAILURES>")
            or stripped in _SUMMARY_KEYS  # a copied table's header row, one key per line
            or not stripped
        ):
            if stripped.startswith("====") and self.elastic and self.elastic[-1].rank is not None:
                self._summary = False
            return False
        # Other processes keep printing while the agent writes the summary: a few foreign
        # lines inside it do not end it; a run of them does.
        self._summary_noise += 1
        if self._summary_noise > MAX_SUMMARY_NOISE:
            self._summary = False
            self._summary_noise = 0
        return False

    def _quoted_traceback_line(self, body: str) -> bool:
        """``True`` when ``body`` continues the traceback that the open entry's
        ``traceback :`` field quotes: the rank's own error file (``error.json``'s
        ``py_callstack``, written by ``@record``) is printed with every newline replaced by
        a newline and two spaces (``ProcessFailure`` formatting in
        torch/distributed/elastic/multiprocessing/errors/__init__.py,
        ``_format_failure``), so each of its lines is indented, down to the exception line
        at two spaces; a blank line of the paste is kept. The summary's closing ``====``
        rule (not indented) ends it. Such a line is that entry's rank's own output: its
        frames, its exception and its message's tail (a cut paste included)."""
        if not self.elastic or self.elastic[-1].traceback is None:
            return False
        if body.startswith("    ") or (
            body.startswith("  ")
            and not _SUMMARY_FIELD.match(body)
            and not body.lstrip().startswith("[")
        ):
            self._summary_noise = 0
            return True
        return not body.strip()

    def _glued_entry(self, body: str) -> bool:
        """Record an entry whose rank and exitcode fields share one line (a summary copied
        from a rendered table or retyped: ``rank2 (local rank: 2)exitcode: -9 (pid: 36071)``)
        on the last entry opened; ``True`` when ``body`` was one. A field already set is kept
        (the glued line only fills what the entry lacks)."""
        gm = _SUMMARY_GLUED.match(body)
        if gm is None:
            return False
        item = self.elastic[-1]
        self._summary_noise = 0
        if item.rank is None:
            item.rank = int(gm.group("rank"))
            item.local_rank = int(gm.group("local"))
        if item.exitcode is None:
            item.exitcode = int(gm.group("code"))
            if gm.group("pid"):
                item.pid = int(gm.group("pid"))
        if item.host and item.rank >= 0:
            self.hosts.setdefault(item.rank, item.host)
        return True

    def _open_cut_summary(self, body: str, number: int) -> bool:
        """Open a torchelastic summary whose ``Failures:`` header is not in the log (a
        pasted fragment that starts inside it). An entry header ``[N]:`` followed on the
        next line by an entry field, or a lone ``rank : R (local_rank: L)`` field, opens
        it as a ``Failures:`` section (``root_cause`` false). Returns ``True`` when the
        summary is now open and ``body`` is a field line to record.

        In a diagnosis the scanner's gate passes the ``local_rank: `` line but not the
        ``[N]:`` or ``time`` lines before it, so a cut entry opens on its ``rank`` field and
        its time stays unknown (:func:`rootrank.analysis.initiator.elastic_rank` bounds it by its
        summary's root-cause entry)."""
        if body[:1] in _NO_SUMMARY_START:  # none of the three patterns can match
            self._summary_item_line = None
            return False
        if _SUMMARY_ITEM.match(body):
            self._summary_item_line = number
            return False
        item_line, self._summary_item_line = self._summary_item_line, None
        after_item = (
            item_line is not None and item_line == number - 1 and _SUMMARY_FIELD.match(body)
        )
        if not after_item and not _SUMMARY_RANK_FIELD.match(body):
            return False
        self._summary = True
        self._summary_root = False
        self._summary_noise = 0
        self.elastic.append(
            ElasticFailure(root_cause=False, line=item_line or number, path=self.path)
        )
        return True

    def summary_rank(self, number: int) -> int | None:
        """The rank of the summary entry that a line inside a failure summary belongs to."""
        if self._summary and self.elastic and self.elastic[-1].rank is not None:
            rank = self.elastic[-1].rank
            return rank if rank >= 0 else None
        return None


_EXC_LINE = lazy_regex.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Exit|Interrupt|Failed|Unsupported|Warning)\b"
)


def _is_exception_line(body: str) -> bool:
    return bool(_EXC_LINE.match(body))
