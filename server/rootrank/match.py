"""Matching signature patterns against cleaned lines: cheap literals before any regex.

Patterns are grouped by their literal. For each line, one Aho-Corasick pass finds which
literals it contains; a regex runs only on lines that contain its literal, with the ``regex``
module's ``timeout`` so a pathological line can never hang the caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import ahocorasick_rs

from rootrank.ingest import Block
from rootrank.signatures import Library, Pattern, Signature

#: Seconds one regex may spend on one line before it is abandoned (and reported).
REGEX_TIMEOUT_S = 0.05

#: Distinct lines whose hits are remembered (then the memory is dropped and refilled).
MATCH_CACHE = 4096

#: Lines longer than this (characters) are matched in windows around the signature literals
#: they hold (:meth:`Matcher.match`), not whole: a regex never runs over megabytes.
MAX_MATCH_CHARS = 16384
#: Characters of a window before its literal (a pattern's text ahead of its literal).
WINDOW_BEFORE = 4096


@dataclass(slots=True)
class Hit:
    """One pattern matched on one line: ``span`` is the 0-based [start, end) in the text."""

    signature: Signature
    span: tuple[int, int]
    captures: dict[str, str]
    matched: str


@dataclass
class Matcher:
    """All patterns of a library, ready to run on lines. Build with :meth:`from_library`."""

    sensitive: list[tuple[str, list[tuple[Pattern, Signature]]]]
    insensitive: list[tuple[str, list[tuple[Pattern, Signature]]]]
    timeouts: dict[str, int] = field(default_factory=dict)
    gate: Gate | None = None
    _cache: dict[str, list[Hit]] = field(default_factory=dict)
    # One automaton per group over its literals (lower-case for the insensitive group): which
    # literals a line holds, found in one pass instead of one substring search per literal.
    _finders: list[ahocorasick_rs.AhoCorasick | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._finders = [
            ahocorasick_rs.AhoCorasick([lit for lit, _ in group])
            if group and all(lit for lit, _ in group)
            else None
            for group in (self.sensitive, self.insensitive)
        ]

    @classmethod
    def from_library(cls, library: Library) -> Matcher:
        by_literal: dict[tuple[str, bool], list[tuple[Pattern, Signature]]] = {}
        for sig in library.signatures.values():
            for pattern in sig.patterns:
                by_literal.setdefault((pattern.literal, pattern.ignorecase), []).append(
                    (pattern, sig)
                )
        sensitive = [(lit, pats) for (lit, ic), pats in by_literal.items() if not ic]
        insensitive = [(lit, pats) for (lit, ic), pats in by_literal.items() if ic]
        matcher = cls(sensitive=sensitive, insensitive=insensitive)
        matcher.gate = Gate(matcher.literals())
        return matcher

    def literals(self) -> list[str]:
        """Every literal (case-sensitive ones as written, insensitive ones lower-case)."""
        return [lit for lit, _ in self.sensitive] + [lit for lit, _ in self.insensitive]

    def match(self, text: str) -> list[Hit]:
        """Every signature that matches ``text`` (at most one hit per signature).

        Results are remembered for the last :data:`MATCH_CACHE` distinct lines: a log that
        repeats one failure line a million times costs one regex pass, not a million."""
        if len(text) > MAX_MATCH_CHARS:
            return self._match_long(text)
        cached = self._cache.get(text)
        if cached is None:
            cached = list(self._match(text))
            if len(self._cache) >= MATCH_CACHE:
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def _match_long(self, text: str) -> list[Hit]:
        """:meth:`match` for a line longer than :data:`MAX_MATCH_CHARS`: each place a literal
        occurs opens a window of at most :data:`MAX_MATCH_CHARS` characters, from
        :data:`WINDOW_BEFORE` before it; overlapping windows merge. Spans are in ``text``
        (0-based). Not cached (such lines rarely repeat)."""
        starts: list[int] = []
        for group, haystack, finder in (
            (self.sensitive, text, self._finders[0]),
            (self.insensitive, text.lower(), self._finders[1]),
        ):
            if not group:
                continue
            if finder is None:
                starts.extend(i for lit, _ in group if lit for i in _all_at(haystack, lit))
            else:
                starts.extend(
                    m[1] for m in finder.find_matches_as_indexes(haystack, overlapping=True)
                )
        windows: list[tuple[int, int]] = []
        for pos in sorted(set(starts)):
            lo = max(0, pos - WINDOW_BEFORE)
            hi = min(len(text), lo + MAX_MATCH_CHARS)
            if windows and lo <= windows[-1][1] and pos < windows[-1][1] - WINDOW_BEFORE:
                continue  # this literal already sits well inside the last window
            windows.append((lo, hi))
        hits: dict[str, Hit] = {}
        for lo, hi in windows:
            for hit in self._match(text[lo:hi]):
                if hit.signature.id not in hits:
                    hit.span = (hit.span[0] + lo, hit.span[1] + lo)
                    hits[hit.signature.id] = hit
        return list(hits.values())

    def _match(self, text: str) -> Iterator[Hit]:
        seen: set[str] = set()
        groups = [(self.sensitive, text, self._finders[0])]
        if self.insensitive:
            groups.append((self.insensitive, text.lower(), self._finders[1]))
        for by_literal, haystack, finder in groups:
            if finder is None:  # an empty literal somewhere: check each one
                present = [i for i, (literal, _) in enumerate(by_literal) if literal in haystack]
            else:  # library order kept: the first pattern of a signature that matches wins
                present = sorted(
                    {m[0] for m in finder.find_matches_as_indexes(haystack, overlapping=True)}
                )
            for i in present:
                _, patterns = by_literal[i]
                for pattern, sig in patterns:
                    if sig.id in seen:
                        continue
                    hit = self._run(pattern, sig, text)
                    if hit is not None:
                        seen.add(sig.id)
                        yield hit

    def _run(self, pattern: Pattern, sig: Signature, text: str) -> Hit | None:
        try:
            m = pattern.regex.search(text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            self.timeouts[sig.id] = self.timeouts.get(sig.id, 0) + 1
            return None
        if m is None:
            return None
        captures = {k: v for k, v in m.groupdict().items() if v is not None}
        return Hit(sig, m.span(), captures, m.group(0))


#: Lines that change rank/traceback state must reach the scanner even when no signature
#: literal is on them (lower-case, as the gate searches the lower-cased text).
STATE_WORDS = (
    "traceback (most recent call last)",  # a traceback starts; the scanner then follows it
    "the above exception was the direct cause",
    "during handling of the above exception",
    "exception ignored",  # Python ignored the exception that follows
    " nranks ",  # NCCL "[ncclCommInitRank |ncclCommSplit ]comm 0x.. rank R nranks N ...": (host, pid) -> rank
    "init complete comm",
    "failures:",  # torchelastic failure summary
    "root cause (first observed failure)",
    "-- process ",  # mp.spawn banner
    "| nvidia-smi ",  # a job script's nvidia-smi header: the script (re)starts (scan._JOB_HEADER)
    "----------begin global rank",  # composer's launcher prints a crashed rank's output
    "composer.cli.launcher",  # composer's launcher (rootrank.scan._LAUNCHER_SIGNS)
    "$ composer ",
    "# composer ",
    # a shell prompt typing the job's command: a framework's script or CLI, with the
    # variables before it (rootrank.scan._ENTRY_COMMAND: NGPU=8 ./run_train.sh)
    " ./",
    "bash ",
    "-cli ",
    "forcefully terminating all other processes",  # Lightning's launcher saw a rank die
    "world_size",
    "world size",
    "global_rank: ",  # Lightning/Fabric's "GLOBAL_RANK: 0, MEMBER: 1/4" (ranks._MEMBER_WORLD)
    # a rank's own start-up line placing it in the job: "I am worker 2 of 8" (ranks._MEMBER_OF)
    "i am worker ",
    "i am rank ",
    "i am process ",
    "xception has occurred",  # a debugger's exception header (VS Code / debugpy)
    ".py failed",  # torchelastic summary title: names the entry script
    " failed\n",  # its title for a ``-m`` launch ("pkg.server FAILED"): names the entry module
    "accelerate launch",
    "omp_num_threads environment variable",  # a launcher starts (a new run in an appended log)
    "deepspeed --",  # other launchers' command lines (the entry script)
    "mpirun ",  # an MPI launch line ("mpirun -np 4 python train.py"), printed or echoed
    "mpiexec ",
    # HPE Cray PALS mpiexec's own report of a rank's end ("<host>: rank 3 died from signal 6",
    # "... exited with code 1"): the launcher's banner (rootrank.scan._LAUNCHER_SIGNS)
    "died from signal ",
    "exited with code ",
    "horovodrun ",
    "srun ",  # a Slurm step's command line ("srun --ntasks=4 python train.py ...")
    # DeepSpeed's launcher prints each worker's argv (rootrank.scan.deepspeed_command)
    "spawned with command",
    "sigkill_handler",
    "terminate called after throwing",  # a C++ exception aborted the process; what() follows
    "==> ",  # tail/head's file header: the lines after it are that file's (ranks.RankTagger)
    # the job's layout (one node or several): launcher flags, agent config and its workers
    "nnodes",
    "max_nodes",
    "num_nodes",
    "group_world_size",
    "group_rank",
    "node_rank",
    "node-rank",
    "--standalone",
    "nproc",
    "`--num_processes` was set",  # accelerate's defaults report (rootrank.scan._NPROC)
    # a launch script's worker count and output filter (rootrank.scan.LaunchFacts)
    "ngpu",
    "gpus_per_node",
    "num_gpus=",
    "local-ranks-filter",
    "local_ranks_filter",
    "log_rank=",
    "torchrun",
    # a shell prompt (or ``set -x``'s "+ ") typing ``python script.py``: the job's own launch
    # command, which a rerun types again (rootrank.scan._COMMAND)
    "$ python",
    "# python",
    "+ python",
    "> python",
    # ... after variables (``$ CUDA_VISIBLE_DEVICES=0,1 python x.py``): a word of its own
    " python ",
    " python3 ",
    # a framework's own CLI typed at a prompt (rootrank.launchers.FRAMEWORK_CLI)
    "$ nemo ",
    "$ swift ",
    "$ megatron ",
    "$ tune run",
    "$ xtuner ",
    "$ oumi ",
    " nemo llm ",
    " swift sft",
    " swift rlhf",
    " swift pt ",
    "cmd line: ",  # UCX's start-up record of the process's command (rootrank.scan._UCX_CMD)
    "torch.distributed.run",
    "torch.distributed.launch",
    "master_addr",
    "master-addr",
    "rdzv_endpoint",
    "rdzv-endpoint",
    # the rendezvous port and whole endpoints (rootrank.scan._ENDPOINT, _MASTER_PORT)
    "master_port",
    "master-port",
    "init_method",
    "dist_url",
    "dist-url",
    "dist_init_addr",
    "dist-init-addr",
    "serverargs(",  # SGLang's server arguments at start-up (rootrank.scan._SERVER_ARGS)
    "closing signal",
    # a framework's announcement of where it saves (rootrank.scan._SAVE_TARGET)
    "saving checkpoint",
    "saving model checkpoint",
    "local_rank: ",
    "parallel size",
    "killing subprocess",  # DeepSpeed's launcher names the job's workers (LaunchFacts.worker_pids)
    "terminating process",  # mp.spawn's parent names its other processes (LaunchFacts.spawn_kill_pids)
    # a launcher's or trainer's report that training ended normally (rootrank.scan.RUN_END_REPORT)
    "worker group successfully finished",
    "` stopped: `max_",
    "training complete",  # torchtitan's "Training completed", a script's "training complete"
    "training finished",
    "training is ",
    "training done",
    "finished training",
    "done training",
    "exits successfully.",
    "[after training is done]",
    "_parallel_size=",  # an inference engine's layout (rootrank.scan._ENGINE_PARALLEL)
    # launchers that are not training scripts (rootrank.entry.commands): nccl-tests'
    # *_perf binaries and their header, vLLM's server commands
    "_perf",
    "# nthread ",
    "vllm serve",
    "vllm.entrypoints",
    # ProcessGroupNCCL's C++ log records: a terminal may wrap one inside the words a
    # signature looks for; the scanner joins its tail (rootrank.scan, PendingMessage)
    "processgroupnccl.cpp:",
    # a traceback frame: read even when the paste cut the "Traceback" header above it
    'file "',
    # dynamo's message names the user's traced frames after it (rootrank.tracebacks.FROM_USER_CODE)
    "from user code:",
    # faulthandler's dump of the crashing thread: its frames follow (rootrank.tracebacks)
    "current thread 0x",
    # ... or, when the signal hit a native thread, every Python thread after "Fatal Python
    # error:" (rootrank.tracebacks._FAULT_THREAD)
    "thread 0x",
    # faulthandler.dump_traceback_later's watchdog: "Timeout (0:00:12)!" then every thread's
    # stack (rootrank.tracebacks._FAULT_TIMEOUT)
    "timeout (",
)


class Gate:
    """A multi-literal search (Aho-Corasick, the Rust ``aho-corasick`` crate through
    ``ahocorasick_rs``) over a block's lower-cased bytes, that finds the lines worth the
    per-line path: every line a signature could match (its literal, case-folded) and every
    line that changes rank or traceback state.

    Built once per :class:`Matcher`; :meth:`line_starts` costs one native pass over the block.
    """

    def __init__(
        self, literals: list[str] | tuple[str, ...], state_words: tuple[str, ...] = STATE_WORDS
    ) -> None:
        # ASCII-only lower-casing, as bytes.lower() does for the block: "Убито" stays "Убито".
        words = {lit.encode("utf-8").lower() for lit in literals} | {
            w.encode("utf-8") for w in state_words
        }
        self.automaton = ahocorasick_rs.BytesAhoCorasick(sorted(words))

    def line_starts(self, block: Block) -> Iterator[int]:
        """Offsets in ``block.text`` (0-based, ascending, no repeats) where a line holding a
        gate word starts. The search runs on the block's lower-cased UTF-8 bytes; byte
        offsets become text offsets by decoding only the bytes between gated lines (the
        same for an ASCII block)."""
        data = block.lower_bytes
        ascii_only = data.isascii()
        line_end = -1
        byte_pos = char_pos = 0
        for _, start, end in self.automaton.find_matches_as_indexes(data):
            if start <= line_end:
                continue
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", end)
            if line_end == -1:
                line_end = len(data)
            if ascii_only:
                yield line_start
            else:
                char_pos += len(data[byte_pos:line_start].decode("utf-8", errors="replace"))
                byte_pos = line_start
                yield char_pos


def _all_at(haystack: str, needle: str) -> Iterator[int]:
    """Every 0-based offset of ``needle`` in ``haystack``."""
    i = haystack.find(needle)
    while i != -1:
        yield i
        i = haystack.find(needle, i + 1)
