"""Python tracebacks in logs: frames, the exception, and chains.

A :class:`TracebackReader` is fed the cleaned lines of one stream (one rank of one source)
in order. It recognises:

- ``Traceback (most recent call last):`` and the DataLoader's ``Original Traceback (most
  recent call last):``;
- frames ``File "path", line N, in func`` (and the code / ``^^^^`` lines under them), also
  when a terminal's fixed-width wrap cut the frame line in two;
- the exception line ``pkg.mod.SomeError: message`` and its continuation lines;
- chains: "The above exception was the direct cause of the following exception:" and
  "During handling of the above exception, another exception occurred:"; the first
  exception of a chain is the deepest cause;
- IPython/Jupyter tracebacks: a ``KeyError      Traceback (most recent call last)`` header,
  frames ``Cell In[3], line 5`` / ``File /path/mod.py:12, in func(...)`` / (IPython 7)
  ``<ipython-input-3-...> in <module>`` and ``/path/mod.py in func(...)``, code lines marked
  ``---->``, then the usual ``KeyError: 'a'`` (IPython's ``ultratb``);
- faulthandler's dump of the crashing thread (``Fatal Python error: Aborted`` /
  ``Segmentation fault``, then ``Current thread 0x... (most recent call first):`` and frames
  ``File "path", line N in func``, innermost first): its frames, in traceback order, for
  the user's location only (:meth:`TracebackReader.take_fault_stack`; no exception is made);
- Rich tracebacks (``rich.traceback``, used by Typer, Accelerate and others): a rounded
  panel titled ``Traceback (most recent call last)`` whose lines are ``│ ... │``, frames
  ``/path/file.py:118 in main`` (a long path folded onto the next panel line at the panel's
  width), the current code line marked ``❱ 118 │ ...``; the exception line follows the
  panel's bottom edge ``╰──...╯`` (rich/traceback.py, ``Traceback._render_stack``);
- C++ aborts: ``terminate called after throwing an instance of 'c10::Error'`` and the
  ``  what():  ...`` line under it (libstdc++'s verbose terminate handler);
- debugger pastes: VS Code's exception widget ``Exception has occurred: KeyError`` (or
  ``User-unhandled exception has occurred: ...``; ``exceptionId`` is the type's
  ``__qualname__``, possibly followed by debugpy's ``(note: full exception trace is shown but
  execution is paused at: ...)``), the message on the next line(s), then debugpy's
  ``File "..."`` frames and, in newer debugpy, a final ``module.Type: message`` line. When
  that final line is missing, the exception is made from the header (type) and the lines
  after it (message), at the header's line.

A frame is the user's code unless its path is inside ``site-packages``/``dist-packages``,
the standard library, a ``torch``/``<frozen ...>`` path, one of DeepSpeed's subpackages
(an editable or vendored copy), or a launcher's console script
(``.../bin/torchrun``, ``bin/deepspeed``, ``bin/accelerate``: pip's entry-point wrappers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rootrank import lazy_regex, regex_code

if TYPE_CHECKING:  # the type only: rootrank.regex_code builds patterns without the package
    import regex

_START = lazy_regex.compile(r"^\s*(?:Original )?Traceback \(most recent call last\):\s*$")
#: A logging record's level word (Python logging's ``ERROR:root:``/``%(levelname)s``, loguru's
#: ``| ERROR |``, ``[ERROR]``): in a traceback header's physical line before ``Traceback``, or
#: in the record line right above it, the traceback is a logging handler's output
#: (:attr:`PyException.logged`).
_RECORD_LEVEL = lazy_regex.compile(r"(?<![\w.-])(?:ERROR|CRITICAL|FATAL|EXCEPTION)(?![\w.-])")
#: The level words of :data:`_RECORD_LEVEL`, looked for before the regex is run.
_LEVEL_WORDS = ("ERROR", "CRITICAL", "FATAL", "EXCEPTION")
#: Characters of a physical line's head searched for a record's level: a worker prefix
#: (``(ActorName pid=N, ip=X) ``), a date and a logger name fit in it; a word deeper in the
#: line is the message's, not the record's level.
RECORD_LEVEL_AT = 160
_FRAME = lazy_regex.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$'
)
_EXC = lazy_regex.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Unsupported|Warning|Timeout|Fault|Iteration|Stop\w*)?)(?::\s?(?P<msg>.*))?$"
)
# The type of an exception line that a paste shifted right: a dotted name or an exception
# class's suffix, so that a message's indented "Hint: ..." or "Explanation: ..." (a Dynamo
# graph-break message under a cut traceback) is not read as one.
_SHIFTED_TYPE = lazy_regex.compile(
    r"(?:\.|(?:Error|Exception|Exit|Interrupt|Failed|Unsupported|Warning|Timeout|Fault|Iteration)$)"
)


#: How many lines of another writer (:func:`_logger_word`) a traceback passes over after its
#: last frame before it counts as cut.
MAX_FOREIGN = 3


def _logger_word(type_name: str) -> bool:
    """Whether ``type_name`` (what :data:`_EXC` read as an exception type) is one undotted
    word in all capitals or all lower case (``INFO``, ``WARNING``, ``wandb``, ``tqdm``): a
    log level or a library's prefix on a line another writer put inside the traceback, not
    a class. Python's exception classes are CamelCase (``KeyError``, ``OSError``); the
    lower-case ones are qualified by their module (``socket.gaierror``, ``socket.timeout``),
    as the interpreter prints them."""
    return "." not in type_name and (type_name.isupper() or type_name.islower())


def _shifted_exception(stripped: str) -> bool:
    """``True`` when ``stripped`` (an indented line of a traceback, indented no deeper than
    its frames) reads as an exception line of a paste shifted right."""
    em = _EXC.match(stripped)
    return em is not None and _SHIFTED_TYPE.search(em.group("type")) is not None


# VS Code's exception widget title ('Exception has occurred: {0}' with debugpy's exceptionId).
_DEBUGGER = lazy_regex.compile(
    r"^\s*(?:User-unhandled e|E)xception has occurred: (?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)"
    r"(?:\s+\(note: full exception trace is shown but execution is paused at: [^)]*\))?\s*$"
)
# IPython's ultratb header: the type, padding, then "Traceback (most recent call last)".
_IPY_START = lazy_regex.compile(
    r"^(?!Original\b)(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s+Traceback \(most recent call last\)\s*$"
)
_IPY_FRAME = lazy_regex.compile(
    r"^(?:Cell (?P<cell>In ?\[\d*\]), line (?P<cline>\d+)(?:, in (?P<cfunc>.+?))?"
    r"|Input (?P<input>In ?\[\d*\]), in (?P<ifunc>.+?)"
    r"|File (?P<file>\S.*?):(?P<line>\d+)(?:, in (?P<func>.+?))?"
    r"|(?P<old><ipython-input-[\w-]+>|(?:/|~|[A-Za-z]:\\)\S*?\.py) in (?P<ofunc>[^\s(]+).*?)\s*$"
)
# The current line of a frame ("----> 5 x = d[k]", "---> 12 raise ...": the arrow shortens
# as the line number grows) and IPython's "[... skipping hidden 1 frame]".
_IPY_CODE = lazy_regex.compile(r"^(?:-{1,8}>\s|\[\.\.\. skipping)")
# rich.traceback's panel: its top edge with the title, a panel line (the body between the
# box's vertical bars), a frame inside it ("path:line in func", rich's Traceback._render_stack),
# the current line of a frame ("❱ 118 │ code", indent guides "│" after the number) and the
# bottom edge that closes the panel.
_RICH_START = lazy_regex.compile(r"^\s*╭─+ Traceback \(most recent call last\) ─+╮\s*$")
_RICH_BODY = lazy_regex.compile(r"^\s*│ ?(?P<body>.*?)\s*│\s*$")
_RICH_FRAME = lazy_regex.compile(r"^(?P<file>\S.*?):(?P<line>\d+) in (?P<func>\S+)$")
_RICH_CODE = lazy_regex.compile(r"^❱ \d+ (?P<code>.*)$")
_RICH_END = lazy_regex.compile(r"^\s*╰─+╯\s*$")
#: Characters of a path folded at the panel's width: its first part holds no blank.
_RICH_PATH_START = ("/", "~", "\\", ".")
# libstdc++'s verbose terminate handler: the C++ exception that ended the process and, on the
# next line, its what() text (c10::Error, std::runtime_error, gloo::EnforceNotMet...).
_TERMINATE = lazy_regex.compile(
    r"^\s*terminate called after throwing an instance of '(?P<type>[^']{1,200})'\s*$"
)
_WHAT = lazy_regex.compile(r"^\s*what\(\):\s+(?P<msg>.*)$")
# faulthandler (Python/traceback.c, dump_traceback / write_thread_id): the crashing thread's
# header, then one line a frame, innermost first, "  File \"f.py\", line 12 in func" (no
# comma before "in"); other threads are headed "Thread 0x..." and are not the crash's.
_FAULT_START = lazy_regex.compile(
    r"^\s*Current thread 0x[0-9a-fA-F]+(?: \[[^\]]*\])? \(most recent call first\):\s*$"
)
# When the fatal signal hit a thread Python does not run (NCCL's or a library's own native
# thread), faulthandler has no current thread: after "Fatal Python error: <signal>" it dumps
# every Python thread headed "Thread 0x..." (faulthandler_dump_traceback ->
# _Py_DumpTracebackThreads). Those stacks show what the process was doing in Python when it
# died (the main thread in a barrier); read them only right after that header.
_FAULT_FATAL = lazy_regex.compile(r"^\s*Fatal Python error: ")
# faulthandler.dump_traceback_later(timeout)'s watchdog thread (Modules/faulthandler.c
# faulthandler_thread: "Timeout (H:MM:SS)!" or "Timeout (H:MM:SS.ffffff)!", then every Python
# thread's stack headed "Thread 0x..."): the process sat in those stacks for the whole timeout.
# Its stacks are read like the ones dumped after a fatal error.
_FAULT_TIMEOUT = lazy_regex.compile(r"^\s*Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$")
_FAULT_THREAD = lazy_regex.compile(
    r"^\s*Thread 0x[0-9a-fA-F]+(?: \[[^\]]*\])? \(most recent call first\):\s*$"
)
#: Lines after "Fatal Python error:" (or after a thread's stack) within which a "Thread 0x..."
#: header still belongs to that dump.
FAULT_THREAD_GAP = 4
_FAULT_FRAME = lazy_regex.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)\s*$'
)
#: Frames of one faulthandler stack kept (it prints at most 100).
MAX_FAULT_FRAMES = 100
# An exception line printed with no traceback above it (a paste that starts at the error, a
# logger that prints ``f"{type(e).__name__}: {e}"``, a task's stderr cut by the launcher):
# at the start of the line (after a rank/task prefix), a dotted type ending in Error or
# Exception or one of Python's other built-in exception names, then ": " and a message.
# Stricter than :data:`_EXC` (which only reads lines inside a traceback): ``Error: x`` and
# ``INFO: x`` are not Python exceptions.
_BARE_EXC = lazy_regex.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*Error|[A-Z]\w*Exception|Exception"
    r"|KeyboardInterrupt|SystemExit|StopIteration|GeneratorExit))"
    r": (?P<msg>\S.*)$"
)
# A C++ frame of c10's "Exception raised from ... (most recent call first):" list past its
# first (frame #0): the error message is printed above that list.
_MID_TRACE = lazy_regex.compile(r"^(?:\[[^\]\n]{1,40}\]:?\s?)?\s*frame #[1-9]\d*: ")


def bare_exception(text: str) -> bool:
    """Whether ``text`` (a cleaned line) is a Python exception line on its own
    (``pkg.SomeError: message`` with no traceback open: :data:`_BARE_EXC`), as a paste cut
    above its frames prints it."""
    if "Error: " not in text and "xception: " not in text and "Exit: " not in text:
        return False
    return _BARE_EXC.match(text.rstrip()) is not None


def starts_mid_trace(text: str) -> bool:
    """Whether ``text`` (a log's first non-blank line, a rank prefix allowed) is inside a C++
    frame list (``frame #5: ...``): the paste starts below a trace whose error message (printed
    above the frames) it cut. A Python frame is not: its exception line follows it and is read."""
    return _MID_TRACE.match(text) is not None


#: Message lines after a debugger header that are read before giving up on frames.
MAX_HEADER_MESSAGE_LINES = 8

_CHAIN_CAUSE = "The above exception was the direct cause of the following exception:"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred:"
#: The two lines Python prints between the exceptions of a chain (cause, context).
CHAIN_MARKERS = frozenset({_CHAIN_CAUSE, _CHAIN_CONTEXT})

_LIBRARY_MARKERS = (
    "site-packages",
    "dist-packages",
    "/lib/python",
    "\\lib\\python",
    "\\Lib\\",  # a Windows Python's standard library (...\\Python311\\Lib\\multiprocessing\\...)
    "<frozen",
    "<string>",  # code made by exec (a dataclass's generated __init__): no file to open
    "/torch/",
    "\\torch\\",
    # DeepSpeed's own subpackages wherever the package sits: a clone installed with ``pip
    # install -e`` or a copy vendored into the user's tree (``proj/_deepspeed_ref/deepspeed/
    # runtime/zero/stage3.py``) is still the library's code, not the user's
    "/deepspeed/runtime/",
    "/deepspeed/ops/",
    "/deepspeed/comm/",
    "/deepspeed/utils/",
    "/deepspeed/launcher/",
    "/deepspeed/accelerator/",
    "/deepspeed/module_inject/",
    "/deepspeed/inference/",
    # the same for Megatron-Core and Megatron-Bridge, which are run from a clone
    # (``Megatron-LM/megatron/core/...``, ``Megatron-Bridge/src/megatron/bridge/...``): the
    # user's code is the recipe or pretrain script that imports them
    "/megatron/core/",
    "/megatron/bridge/",
    # training frameworks run from a checkout (``LLaMA-Factory/src/llamafactory/data/
    # loader.py``, ``pip install -e .`` of transformers or accelerate): their package's own
    # tree is the framework's code; the user's is the config or the script that calls it
    "/llamafactory/",
    "/pytorch_lightning/",
    "/lightning_fabric/",
    "/src/lightning/",
    "/src/transformers/",
    "/src/accelerate/",
    "/src/peft/",
    "/trl/trainer/",
    "/src/axolotl/",
    "/swift/llm/",
    # ms-swift's other subpackages, from a clone under the user's home too
    # (``~/env/ms-swift/swift/ray/base.py``, its Ray decorator's wrapper: r23c case 12)
    "/swift/ray/",
    "/swift/trainers/",
    "/swift/cli/",
    "/swift/megatron/",
    "/swift/plugin/",
    "/swift/tuners/",
    "/swift/utils/",
    "/swift/pipelines/",
    "/verl/trainer/",
    "/verl/workers/",
    "/nemo/collections/",
    # NeMo 2.0's own trainer, I/O and core packages (NGC containers run NeMo from a checkout
    # at /opt/NeMo: ``/opt/NeMo/nemo/lightning/io/pl.py``), and Megatron-LM's training loop
    # (``megatron/training/training.py``): the framework's code, not the user's recipe
    # (held-out r20a case 06)
    "/nemo/lightning/",
    # NeMo's example scripts, run from the checkout the container ships
    # (``/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py``): NeMo's code,
    # configured by the user's overrides, not the user's own file (r23c case 07)
    "/NeMo/examples/",
    "/nemo/core/",
    "/nemo/utils/",
    "/megatron/training/",
    "/torchtune/",
    "/mmengine/",
    # serving and RL frameworks run from a checkout or a container's source tree
    # (``/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py``, ``vllm/vllm/
    # worker/...``, ``OpenRLHF/openrlhf/trainer/...``): a ValueError the framework raises from its
    # own health check (SGLang's barrier after weight loading) is the framework's, not the user's
    # (held-out r22c cases 09, 11, 12)
    "/sglang/srt/",
    "/vllm/engine/",
    "/vllm/worker/",
    "/vllm/executor/",
    "/vllm/distributed/",
    "/vllm/model_executor/",
    "/vllm/v1/",
    "/verl/single_controller/",
    "/verl/utils/",
    "/openrlhf/trainer/",
    "/openrlhf/models/",
    "/openrlhf/utils/",
    # Inductor's generated kernels (``/tmp/torchinductor_root/ab/cab....py``): written by
    # torch.compile, no line of the user's
    "/torchinductor_",
)


# pip's console-script wrappers (``/venv/bin/torchrun``, line 8, in <module>; any package's
# ``bin/openllm``): a file in bin/ or Scripts/ with no ``.py`` suffix only imports the
# package's ``main``, it is never the user's code.
_LAUNCHER_SCRIPT = lazy_regex.compile(r"[/\\](?:bin|Scripts)[/\\](?![^/\\]*\.py$)[^/\\]+$")
# A Cython module's frame (``src/netCDF4/_netCDF4.pyx``, line 2158): the relative path is
# where the installed package's extension was compiled, never a file of the user's tree.
_COMPILED_SOURCE = lazy_regex.compile(r"^(?![/\\~]|[A-Za-z]:)[^\n]*\.(?:pyx|pxd|pxi)$")


#: Dynamo's marker before the frames of the user's code it was tracing when it failed
#: (torch/_dynamo/exc.py, ``format_error_msg_verbose`` / ``augment_exc_message``: "from user
#: code:" then the ``File "...", line N, in f`` lines of the traced stack, innermost last).
FROM_USER_CODE = "from user code:"


def traced_user_frame(text: str) -> Frame | None:
    """The frame a line after :data:`FROM_USER_CODE` names (``File "x.py", line 20, in
    forward``), when it is in the user's code (:func:`is_user_frame`); ``None`` otherwise."""
    fm = _FRAME.match(text)
    if fm is None or not is_user_frame(fm["file"]):
        return None
    func = (fm["func"] or "").split(",", 1)[0].strip()
    return Frame(fm["file"], int(fm["line"]), func, True)


def is_user_frame(path: str) -> bool:
    """``True`` when a frame's file is the user's code, not a library's, Python's or a
    launcher's console script (or a compiled extension's relative ``.pyx`` path)."""
    return (
        not any(marker in path for marker in _LIBRARY_MARKERS)
        and not _LAUNCHER_SCRIPT.search(path)
        and not _COMPILED_SOURCE.search(path)
    )


def collective_call(frames: list[Frame]) -> str | None:
    """The collective a traceback was waiting in, from its frames: the function called in
    ``torch/distributed/distributed_c10d.py`` (``all_reduce``, ``barrier``, ...), or
    ``backward`` when it waited in autograd (DDP all-reduces gradients during backward).
    ``None`` when the traceback shows neither."""
    for frame in reversed(frames):
        path = frame.file.replace("\\", "/")
        if (
            path.endswith("distributed/distributed_c10d.py")
            and frame.func
            and not frame.func.startswith("_")
        ):
            return frame.func
    for frame in reversed(frames):
        path = frame.file.replace("\\", "/")
        if frame.func == "backward" or path.endswith("torch/autograd/__init__.py"):
            return "backward"
    return None


@dataclass(slots=True)
class Frame:
    """One traceback frame; ``line`` is the 1-based line in ``file``."""

    file: str
    line: int
    func: str
    user: bool
    #: The source line the traceback quotes under the frame (stripped), ``""`` if none.
    code: str = ""


@dataclass(slots=True)
class PyException:
    """An exception printed in a log.

    ``log_line`` is the 1-based line of the exception line in the log; ``chain_index`` is
    its position in its chain (0 = the deepest cause); ``chained`` is ``"cause"``,
    ``"context"`` or ``None`` for how it follows the previous one.
    """

    type: str
    message: str
    log_line: int
    frames: list[Frame] = field(default_factory=list)
    chain_index: int = 0
    chained: str | None = None
    ignored: bool = False  # printed after "Exception ignored in: ..." (a __del__ etc.)
    #: ``"ipython"`` for an IPython/Jupyter traceback, ``"debugger"`` for one made from a
    #: debugger's ``Exception has occurred: T`` header (no exception line in the paste),
    #: ``"terminate"`` for a C++ exception that aborted the process (``terminate called after
    #: throwing an instance of 'T'`` then ``what():  message``, at the ``what()`` line);
    #: ``"bare"`` for an exception line with no traceback above it (no frames);
    #: ``None`` for a plain Python traceback.
    header: str | None = None
    #: For ``header == "debugger"``: the header's physical line (evidence columns index it).
    line_text: str = ""
    #: The user's frame a compiler names in the message after the exception line, under
    #: ``from user code:`` (torch._dynamo's exceptions: the innermost line of the user's code
    #: it could not trace, deeper than any frame of the traceback above the exception line,
    #: which ends in dynamo's own call). ``None`` when the message names none.
    traced_frame: Frame | None = None
    #: The thread whose uncaught exception this is, not the process's: the name from
    #: ``threading.excepthook``'s header ``Exception in thread <name>:`` right above the
    #: traceback (Lib/threading.py, ``excepthook``), or ``""`` when the traceback starts in
    #: ``threading.py``'s ``_bootstrap_inner`` with no header read. ``None`` for the main
    #: thread's (or a frame-less) exception. Such an exception ends that thread only: the
    #: process goes on (:attr:`thread_died`).
    thread: str | None = None
    #: Whether a logging handler printed this traceback: its ``Traceback (most recent call
    #: last):`` header's physical line carries a record's level before it (a formatter that
    #: puts the level and time on the record's first line: ``logger.error(format_exc())``,
    #: ``ERROR:<time>:Traceback ...``), or the line right above the header is an error
    #: record (``logger.exception("msg")`` / ``exc_info=True``: the message, then the
    #: traceback). A chain's later parts take their first part's. Read by
    #: rootrank.analysis.logged_handled.
    logged: bool = False

    @property
    def thread_died(self) -> bool:
        """Whether this exception ended a thread of its process, not the process: the
        header named a thread, or the traceback's outermost frame is a thread's bootstrap
        (``threading.py``'s ``_bootstrap_inner``, where an uncaught exception of a
        ``Thread``'s target goes to ``threading.excepthook``)."""
        if self.thread is not None:
            return True
        return bool(self.frames) and (
            self.frames[0].file.replace("\\", "/").endswith("/threading.py")
            and self.frames[0].func == "_bootstrap_inner"
        )

    @property
    def user_frame(self) -> Frame | None:
        """The innermost frame in the user's code, if any."""
        for frame in reversed(self.frames):
            if frame.user:
                return frame
        return None


def _error_record(raw: str) -> bool:
    """Whether the physical line ``raw`` is a logging record of an error level (its level
    word within its first :data:`RECORD_LEVEL_AT` characters)."""
    head = raw[:RECORD_LEVEL_AT]
    if not any(word in head for word in _LEVEL_WORDS):
        return False  # most lines: no level word at all, no regex run
    return _RECORD_LEVEL.search(head) is not None


def _logged_header(raw: str, record_before: bool) -> bool:
    """Whether a ``Traceback (most recent call last):`` header (physical line ``raw``) was
    printed by a logging handler: a record's level stands before ``Traceback`` on its line,
    or the line above it was an error record (``record_before``)."""
    if record_before:
        return True
    head = raw[: raw.rfind("Traceback")]
    return _RECORD_LEVEL.search(head[-RECORD_LEVEL_AT:]) is not None


class TracebackReader:
    """Stateful reader for one stream; :meth:`feed` returns an exception when one ends.

    Call :meth:`finish` after the stream's last line: a debugger paste's exception that had
    no exception line is only complete then. :meth:`take_header_message` hands over the
    type and message lines of a debugger header once its message has ended, so the caller
    can match ``"Type: message"`` as if it were an exception line.
    """

    __slots__ = (
        "_chain_index",
        "_chain_next",
        "_frames",
        "_header",
        "_header_done",
        "_header_line",
        "_header_msg",
        "_header_raw",
        "_header_reading",
        "_header_ready",
        "_header_type",
        "_ignored",
        "_ignored_next",
        "_thread",
        "_thread_next",
        "_in_tb",
        "_interleaved",
        "_logged",
        "_record_before",
        "_left_open",
        "_mode",
        "_frame_indent",
        "_partial_frame",
        "_rich_fold",
        "_rich_closed",
        "_terminate",
        "_fault",
        "_fault_line",
        "_fault_ready",
        "_fault_fatal_at",
        "_fault_other",
        "_fault_held",
        "_foreign",
        "code_line",
        "started",
    )

    def __init__(self) -> None:
        self._frames: list[Frame] = []
        # another writer's log lines passed over since the last frame (:func:`_logger_word`)
        self._foreign = 0
        self._in_tb = False
        self._interleaved = False
        # the traceback being read was printed by a logging handler (PyException.logged),
        # and whether the last line out of a traceback was an error record
        self._logged = False
        self._record_before = False
        self._left_open = False  # the line being fed ended a traceback with no exception line
        self._mode = "python"  # or "ipython", "debugger"
        # A frame line cut by a terminal's fixed-width wrap ('  File "x.py", line 12, i'),
        # waiting for its tail on the next line ('n load').
        self._partial_frame: str | None = None
        # A rich panel's frame path folded at the panel's width, waiting for its tail, and
        # whether the panel's bottom edge was read (its exception line comes next).
        self._rich_fold = ""
        self._rich_closed = False
        #: The indentation of the last frame line (``File "..."``), in characters.
        self._frame_indent = 2
        # "terminate called after throwing an instance of 'T'": T, waiting for its what() line.
        self._terminate: str | None = None
        # faulthandler's stack being read (innermost first), the line of its header, and
        # the last one read whole, waiting for take_fault_stack: (header line, frames).
        self._fault: list[Frame] | None = None
        self._fault_line = 0
        self._fault_ready: tuple[int, list[Frame]] | None = None
        # the line of the last "Fatal Python error:" (or of the last line of a thread stack
        # dumped after it) while no "Current thread" header came: 0 when none is open
        self._fault_fatal_at = 0
        # the stack being read is a "Thread 0x..." one (not the current thread's), and the one
        # such stack kept until its dump ends with no "Current thread" (the last one that
        # shows user code: faulthandler lists the newest thread first, the main thread last)
        self._fault_other = False
        self._fault_held: tuple[int, list[Frame]] | None = None
        self._chain_next: str | None = None
        self._chain_index = 0
        self._ignored = False
        self._ignored_next = False
        # threading.excepthook's "Exception in thread <name>:" before the next traceback
        self._thread: str | None = None
        self._thread_next: str | None = None
        # Debugger header state: its type, line, raw text, message lines (1-based number, text).
        self._header: bool = False
        self._header_type = ""
        self._header_line = 0
        self._header_raw = ""
        self._header_msg: list[tuple[int, str]] = []
        self._header_reading = False  # still reading the message lines under the header
        self._header_done = False  # an exception line of the header's type was seen
        self._header_ready: tuple[str, int, str, list[tuple[int, str]]] | None = None
        #: ``True`` when the last line fed was source code quoted under a frame (its text
        #: is the program's, not a message: ``raise ValueError("CUDA out of memory")``).
        self.code_line = False
        #: The 1-based line where the traceback being read began (its last ``Traceback``
        #: header, or its first frame when the paste cut the header); 0 before any.
        self.started = 0

    @property
    def open(self) -> bool:
        """``True`` while a traceback is being read, or a C++ abort's ``what()`` line is
        awaited (its next lines are needed)."""
        return self._in_tb or self._terminate is not None

    @property
    def awaits_what(self) -> bool:
        """``True`` after a ``terminate called after throwing`` line, until the next line."""
        return self._terminate is not None

    def take_header_message(self) -> tuple[str, int, str, list[tuple[int, str]]] | None:
        """The debugger header whose message just ended, once: ``(type, header line (1-based),
        header raw text, [(line (1-based), message text), ...])``; ``None`` otherwise."""
        ready, self._header_ready = self._header_ready, None
        return ready

    def take_fault_stack(self, *, end: bool = False) -> tuple[int, list[Frame]] | None:
        """The faulthandler stack that just ended, once: ``(line of its "Current thread"
        header (1-based), frames in traceback order, innermost last)``; ``None`` otherwise.
        ``end``: the stream ended, so a stack still being read is complete."""
        if end and self._fault is not None:
            self._end_fault()
        if end and self._fault_ready is None and self._fault_held is not None:
            self._fault_ready, self._fault_held = self._fault_held, None
        ready, self._fault_ready = self._fault_ready, None
        return ready

    def _end_fault(self) -> None:
        frames, self._fault = self._fault, None
        if not frames:
            return
        stack = (self._fault_line, frames[::-1])
        if not self._fault_other:
            self._fault_ready = stack
        elif self._fault_held is None or any(f.user for f in frames):
            self._fault_held = stack

    def _feed_fault(self, text: str, number: int) -> bool:
        """Whether ``text`` belongs to a faulthandler stack (its header or a frame)."""
        if (
            self._fault_held is not None
            and self._fault is None
            and number - self._fault_fatal_at > FAULT_THREAD_GAP
        ):
            # the dump of "Thread 0x..." stacks ended with no "Current thread": its kept stack
            if self._fault_ready is None:
                self._fault_ready, self._fault_held = self._fault_held, None
            self._fault_fatal_at = 0
        if self._fault is not None:
            fm = _FAULT_FRAME.match(text)
            if fm and len(self._fault) < MAX_FAULT_FRAMES:
                path = fm.group("file")
                self._fault.append(
                    Frame(path, int(fm.group("line")), fm.group("func"), is_user_frame(path))
                )
                return True
            self._end_fault()
            if self._fault_fatal_at:
                self._fault_fatal_at = number  # the dump's next thread may follow
        if "most recent call first" in text and _FAULT_START.match(text):
            self._fault = []
            self._fault_line = number
            self._fault_fatal_at = 0
            self._fault_other = False
            self._fault_held = None  # the crashing thread is known: the others are not read
            return True
        if (
            self._fault_fatal_at
            and number - self._fault_fatal_at <= FAULT_THREAD_GAP
            and "most recent call first" in text
            and _FAULT_THREAD.match(text)
        ):
            self._fault = []
            self._fault_line = number
            self._fault_other = True
            return True
        if ("Fatal Python error" in text and _FAULT_FATAL.match(text)) or (
            "Timeout (" in text and _FAULT_TIMEOUT.match(text)
        ):
            if self._fault_held is not None and self._fault_ready is None:
                # a new dump (another process's watchdog, each rank's "Timeout (...)!" one
                # after the other): the dump before it ended, its kept stack is complete
                self._fault_ready, self._fault_held = self._fault_held, None
            self._fault_fatal_at = number
        return False

    def feed(self, text: str, number: int, raw: str | None = None) -> PyException | None:
        """Feed one cleaned line (``number`` 1-based; ``raw`` the physical line, kept for a
        debugger header's evidence); returns the exception it completes."""
        self.code_line = False
        self._left_open = False
        if not self._in_tb and self._feed_fault(text, number):
            return None
        if self._in_tb:
            done, exc = self._feed_tb(text, number)
            if done:
                return exc
            # The line ended the traceback without being part of it: it may start another.
            if exc is not None:
                self._start(text, number, raw)
                return exc
        terminate, self._terminate = self._terminate, None
        if terminate is not None and "what():" in text:
            wm = _WHAT.match(text)
            if wm:
                return PyException(
                    type=terminate,
                    message=wm.group("msg").strip(),
                    log_line=number,
                    header="terminate",
                )
        if "terminate called after throwing" in text:
            tm = _TERMINATE.match(text)
            if tm:
                self._terminate = tm.group("type")
                return None
        after_ignored = self._ignored_next
        record_before = self._record_before
        self._start(text, number, raw)
        if not self._in_tb and 'File "' in text:
            fm = _FRAME.match(text)
            if fm:
                # a header the cleaning left behind a record's prefix ("ERROR:<time>:Traceback
                # (most recent call last):") does not match as one: the record was a handler's
                self._logged = record_before
                # a frame with no "Traceback" header above it: an excerpt that cut the
                # traceback's head (a paste joined from two parts); its frames still belong
                # to the exception line that ends it. Without ", in <func>" it is where
                # Python could not compile a file: a SyntaxError (IndentationError, TabError)
                # of the main script is printed with no header, as that location, the source
                # line, a caret and the exception line (traceback.format_exception_only)
                self._begin("python", number)
                self._feed_tb(text, number)
                return None
        if not self._in_tb and ("Error: " in text or "xception: " in text or "Exit: " in text):
            return self._bare(text, number, after_ignored)
        return None

    def _bare(self, text: str, number: int, ignored: bool) -> PyException | None:
        """An exception line outside any traceback (:data:`_BARE_EXC`), as an exception with
        no frames (``header="bare"``); ``None`` for any other line. One printed right after
        "Exception ignored in: ..." did not end the process (``ignored``)."""
        bm = _BARE_EXC.match(text.rstrip())
        if not bm:
            return None
        return PyException(
            type=bm.group("type"),
            message=bm.group("msg").strip(),
            log_line=number,
            ignored=ignored,
            header="bare",
        )

    def cut_frames(self) -> list[Frame]:
        """The frames of a plain Python traceback still open (the stream ended before its
        exception line: a paste cut short); ``[]`` otherwise, and when it began while
        another was open (interleaved stacks). Call before :meth:`finish`."""
        if not self._in_tb or self._mode != "python" or self._interleaved:
            return []
        return list(self._frames)

    def finish(self) -> PyException | None:
        """End of the stream: the exception of a debugger header still open, if any."""
        exc = self._end_header() if self._in_tb and self._mode == "debugger" else None
        self._reset_tb()
        return exc

    def _start(self, text: str, number: int, raw: str | None) -> None:
        """Out of a traceback: does ``text`` start one (or a chain)?"""
        if "Traceback" in text:
            if _START.match(text):
                chained = self._chain_next is not None
                self._logged = (self._logged and chained) or (
                    raw is not None and _logged_header(raw, self._record_before)
                )
                self._record_before = False
                self._begin("python", number)
                return
            im = _IPY_START.match(text)
            if im:
                self._begin("ipython", number)
                return
            if "╭" in text and _RICH_START.match(text):
                self._begin("rich", number)
                return
        if "xception has occurred" in text:
            dm = _DEBUGGER.match(text)
            if dm:
                self._begin("debugger", number)
                self._header = True
                self._header_type = dm.group("type")
                self._header_line = number
                self._header_raw = raw if raw is not None else text
                self._header_msg = []
                self._header_reading = True
                self._header_done = False
                return
        stripped = text.strip()
        if stripped and stripped not in (_CHAIN_CAUSE, _CHAIN_CONTEXT):
            self._record_before = raw is not None and _error_record(raw)
        # Python prints exceptions it ignores (in __del__, atexit, threads at exit)
        # after "Exception ignored in: <obj>": they did not end the process.
        self._ignored_next = stripped.startswith("Exception ignored")
        self._thread_next = (
            stripped[20:-1]
            if stripped.startswith("Exception in thread ") and stripped.endswith(":")
            else None
        )
        if stripped == _CHAIN_CAUSE:
            self._chain_next = "cause"
        elif stripped == _CHAIN_CONTEXT:
            self._chain_next = "context"
        elif stripped and not stripped.startswith(("[", "-----")) and self._chain_next is None:
            self._chain_index = 0

    def _begin(self, mode: str, number: int) -> None:
        self.started = number
        # A header while another traceback is still open: several processes' stacks are
        # interleaved, and which frames are whose cannot be told.
        self._interleaved = self._in_tb or self._left_open
        self._in_tb = True
        self._mode = mode
        self._frames = []
        self._header = False
        self._ignored = self._ignored_next
        self._ignored_next = False
        # a chained traceback's next part is the same thread's (its header came once, first)
        self._thread = self._thread_next if self._chain_next is None else self._thread
        self._thread_next = None

    def _feed_tb(self, text: str, number: int) -> tuple[bool, PyException | None]:
        """One line inside a traceback. Returns ``(consumed, exception)``: ``consumed`` is
        false when the line is not part of the traceback (which it ended)."""
        if self._mode == "rich" and not self._rich_closed:
            return self._feed_rich(text)
        if self._mode == "debugger" and self._header_reading:
            stripped = text.strip()
            if (
                stripped
                and not text[:1].isspace()
                and len(self._header_msg) < MAX_HEADER_MESSAGE_LINES
                and (not self._header_msg or continues_message(text))
            ):
                self._header_msg.append((number, stripped))
                return True, None
            self._header_reading = False
            self._header_ready = (
                self._header_type,
                self._header_line,
                self._header_raw,
                list(self._header_msg),
            )
        partial, self._partial_frame = self._partial_frame, None
        if partial is not None and text.strip() and not text[:1].isspace():
            tail = text.rstrip()
            fm = _FRAME.match(partial + tail) or _FRAME.match(partial.rstrip() + tail)
            if fm and fm.group("func"):  # the tail of a wrapped frame line
                if self._frames and partial.rstrip().endswith(f"line {self._frames[-1].line}"):
                    self._frames.pop()  # "line 11" + "9, in f" was read as line 11
                file = fm.group("file")
                self._frames.append(
                    Frame(
                        file, int(fm.group("line")), fm.group("func").strip(), is_user_frame(file)
                    )
                )
                return True, None
        if 'File "' in text:
            fm = _FRAME.match(text)
            if fm:
                self._frame_indent = len(text) - len(text.lstrip())
                file = fm.group("file")
                self._frames.append(
                    Frame(
                        file,
                        int(fm.group("line")),
                        (fm.group("func") or "").strip(),
                        is_user_frame(file),
                    )
                )
                if not fm.group("func"):  # Python always prints ", in <func>": maybe cut
                    self._partial_frame = text
                self._foreign = 0
                return True, None
            if text.lstrip().startswith('File "'):
                self._partial_frame = text
        indent = len(text) - len(text.lstrip())
        shifted_exception = (
            indent > 0
            and self._frames
            and indent <= self._frame_indent
            and _shifted_exception(text.strip())
        )
        if (not text.strip() or text[:1].isspace()) and not shifted_exception:
            # code lines, carets, blank separators inside the traceback (an exception line
            # indented no deeper than the frames is the exception of a paste shifted right).
            # Python prints a frame's source line (and its carets) deeper than the frame
            # line; an indented line no deeper is no code but a message line of a paste cut
            # inside the traceback (torchelastic's summary quoting an error file: the
            # exception's message tail, "Developer debug context: ..."), read as a message.
            self.code_line = (
                bool(self._frames) and bool(text.strip()) and indent > self._frame_indent
            )
            if self.code_line and not self._frames[-1].code and set(text.strip()) - set("^~ "):
                self._frames[-1].code = text.strip()[:200]  # not the carets under it
            if len(self._frames) > 200:
                del self._frames[:100]
            return True, None
        if self._mode == "ipython":
            if text[:1] in "-[" and _IPY_CODE.match(text):
                self.code_line = True
                return True, None
            fm = _IPY_FRAME.match(text)
            if fm and not _EXC.match(text.strip()):
                self._frames.append(_ipython_frame(fm))
                return True, None
        stripped = text.strip()
        if self._mode == "debugger" and stripped in (_CHAIN_CAUSE, _CHAIN_CONTEXT):
            # debugpy's stack text chains exceptions without "Traceback" lines.
            self._chain_next = "cause" if stripped == _CHAIN_CAUSE else "context"
            return True, None
        em = _EXC.match(stripped)
        if em and _logger_word(em.group("type")):
            # "INFO: saving checkpoint", "wandb: Syncing run": another writer's line printed
            # while this traceback was written; up to MAX_FOREIGN of them after its last frame
            # are passed over, and the traceback goes on to its exception line
            if self._mode == "python" and self._frames and self._foreign < MAX_FOREIGN:
                self._foreign += 1
                return True, None
            em = None
        if not em:
            # A non-indented line that is not an exception: the traceback ended or was cut.
            exc = self._end_header() if self._mode == "debugger" else None
            self._left_open = self._mode == "python"  # read by _begin if this line starts one
            self._reset_tb()
            return False, exc
        chained = self._chain_next
        index = self._chain_index + 1 if chained else 0
        exc = PyException(
            type=em.group("type"),
            message=(em.group("msg") or "").strip(),
            log_line=number,
            frames=self._frames,
            chain_index=index,
            chained=chained,
            ignored=self._ignored,
            header=self._mode if self._mode == "ipython" else None,
            thread=self._thread,
            logged=self._logged and self._mode == "python",
        )
        self._chain_index = index
        self._chain_next = None
        if self._mode == "debugger":
            if exc.type.rsplit(".", 1)[-1] == self._header_type.rsplit(".", 1)[-1]:
                self._header_done = True
                self._reset_tb()
            else:  # an earlier exception of a chain: its successor's frames follow directly
                self._frames = []
            return True, exc
        self._reset_tb()
        return True, exc

    def _feed_rich(self, text: str) -> tuple[bool, PyException | None]:
        """One line of a rich panel (``_mode == "rich"`` until its bottom edge): frames and
        their current code line are kept, everything else in the panel (blank lines, other
        code lines, a ``locals`` panel) is consumed. A line that is neither a panel line nor
        its bottom edge ends the traceback (a paste cut inside the panel)."""
        if "╰" in text and _RICH_END.match(text):
            self._rich_closed = True  # the exception line follows (read as Python's)
            self._rich_fold = ""
            return True, None
        bm = _RICH_BODY.match(text) if "│" in text else None
        if bm is None:
            self._left_open = True
            self._reset_tb()
            return False, None
        body = bm.group("body")
        fold, self._rich_fold = self._rich_fold, ""
        if fold:
            fm = _RICH_FRAME.match(fold + body)
            if fm:
                self._rich_frame(fm)
                return True, None
        fm = _RICH_FRAME.match(body)
        if fm and " " not in fm.group("file"):
            self._rich_frame(fm)
            return True, None
        cm = _RICH_CODE.match(body) if body[:1] == "❱" else None
        if cm and self._frames and not self._frames[-1].code:
            self.code_line = True
            self._frames[-1].code = cm.group("code").lstrip("│ ").strip()[:200]
            return True, None
        if body.startswith(_RICH_PATH_START) and " " not in body:
            self._rich_fold = body  # a path cut at the panel's width: its tail is next
        return True, None

    def _rich_frame(self, fm: regex.Match[str]) -> None:
        file = fm.group("file")
        self._frames.append(
            Frame(file, int(fm.group("line")), fm.group("func"), is_user_frame(file))
        )

    def _end_header(self) -> PyException | None:
        """The exception of a debugger header whose paste had no exception line of its type."""
        if self._header_reading:
            self._header_reading = False
            self._header_ready = (
                self._header_type,
                self._header_line,
                self._header_raw,
                list(self._header_msg),
            )
        if not self._header or self._header_done:
            return None
        self._header = False
        chained = self._chain_next
        index = self._chain_index + 1 if chained else 0
        self._chain_index = index
        self._chain_next = None
        return PyException(
            type=self._header_type,
            message=" ".join(t for _, t in self._header_msg),
            log_line=self._header_line,
            frames=self._frames,
            chain_index=index,
            chained=chained,
            ignored=self._ignored,
            header="debugger",
            line_text=self._header_raw,
        )

    def _reset_tb(self) -> None:
        self._foreign = 0
        self._partial_frame = None
        self._rich_fold = ""
        self._rich_closed = False
        self._in_tb = False
        self._mode = "python"
        self._frames = []
        self._header = False


def _ipython_frame(fm: regex.Match[str]) -> Frame:
    """A :class:`Frame` from an IPython frame line (a notebook cell is the user's code)."""
    if fm.group("cell") is not None:
        return Frame(
            f"Cell {fm.group('cell')}",
            int(fm.group("cline")),
            (fm.group("cfunc") or "").strip(),
            True,
        )
    if fm.group("input") is not None:
        return Frame(f"Input {fm.group('input')}", 0, fm.group("ifunc").strip(), True)
    if fm.group("file") is not None:
        file = fm.group("file")
        return Frame(
            file, int(fm.group("line")), (fm.group("func") or "").strip(), is_user_frame(file)
        )
    old = fm.group("old")
    return Frame(old, 0, fm.group("ofunc"), old.startswith("<ipython-input") or is_user_frame(old))


#: Modules of PyTorch's exception classes (their ``__module__`` in torch 2.x), for names a
#: debugger prints bare: debugpy's ``exceptionId`` is the ``__qualname__`` only, while
#: tracebacks (and signatures) name ``torch._dynamo.exc.Unsupported``. ``OutOfMemoryError``
#: is ``torch.OutOfMemoryError`` from 2.5 and ``torch.cuda.OutOfMemoryError`` before.
TORCH_EXCEPTION_MODULES: dict[str, tuple[str, ...]] = {
    "OutOfMemoryError": ("torch", "torch.cuda"),
    **{
        name: ("torch.distributed",)
        for name in ("DistError", "DistBackendError", "DistNetworkError", "DistStoreError")
    },
    **{
        name: ("torch._dynamo.exc",)
        for name in (
            "BackendCompilerFailed",
            "Unsupported",
            "UserError",
            "TorchRuntimeError",
            "InternalTorchDynamoError",
            "UncapturedHigherOrderOpError",
            "FailOnRecompileLimitHit",
        )
    },
    **{
        name: ("torch._inductor.exc",)
        for name in (
            "InductorError",
            "LoweringException",
            "CppCompileError",
            "CUDACompileError",
            "MissingOperatorWithoutDecomp",
            "MissingOperatorWithDecomp",
        )
    },
    "ChildFailedError": ("torch.distributed.elastic.multiprocessing.errors",),
    "ProcessRaisedException": ("torch.multiprocessing.spawn",),
    "ProcessExitedException": ("torch.multiprocessing.spawn",),
    **{
        name: ("torch.distributed.elastic.rendezvous.api",)
        for name in (
            "RendezvousError",
            "RendezvousClosedError",
            "RendezvousTimeoutError",
            "RendezvousConnectionError",
            "RendezvousStateError",
        )
    },
}


def qualified_names(exc_type: str) -> list[str]:
    """``exc_type`` as printed, then with the module a traceback would print for it when
    it is a bare PyTorch exception name (see :data:`TORCH_EXCEPTION_MODULES`)."""
    if "." in exc_type:
        return [exc_type]
    return [
        exc_type,
        *(f"{module}.{exc_type}" for module in TORCH_EXCEPTION_MODULES.get(exc_type, ())),
    ]


_CONTINUATION_STOP = lazy_regex.compile(
    r"""^(?:
        \s*File\ "                                                        # a frame
      | \s*(?:Original\ )?Traceback\b | .*\bTraceback\ \(most\ recent\ call\ last\)
      | The\ above\ exception | During\ handling\ of | Exception\ ignored
      | (?:User-unhandled\ e|E)xception\ has\ occurred
      | (?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failed)\b   # another exception/warning
      | \[                                                                # [W ...] [rank3]: [2024-...]
      | [IWEF]\d{4}\ \d\d:                                                # glog
      | (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|NOTICE)\b            # logging levels
      | terminate\ called | \s*what\(\): | Exception\ raised\ from | frame\ \#\d
      | [=\-*#~_+]{4,} | \$\  | >>>\  | \(\S+\)\ \S+@
    )""",
    regex_code.VERBOSE,
)


def continues_message(text: str) -> bool:
    """``True`` when ``text`` (a cleaned line with launcher prefixes and logger headers
    removed) can be the continuation of the exception message on the line before it: a
    hard-wrapped message (a terminal copy or a pasted issue) or a message of several lines.

    It is not when it is blank, indented as a frame, or starts anything with structure of
    its own: a traceback, a frame, a chain sentence, another exception or warning, a log
    record (``[...]`` tags, glog, ``INFO``...), C++ abort output, a ruler or a shell prompt.
    The caller also requires the line to follow the exception's line directly, on the same
    rank (or on no rank: a wrapped tail carries no launcher prefix) and with no timestamp.
    """
    if not text.strip():
        return False
    return _CONTINUATION_STOP.match(text) is None
