"""Python tracebacks in logs: frames, the exception, and chains.

A :class:`TracebackReader` is fed the cleaned lines of one stream (one rank of one source)
in order. It recognises:

- ``Traceback (most recent call last):`` and the DataLoader's ``Original Traceback (most
  recent call last):``;
- frames ``File "path", line N, in func`` (and the code / ``^^^^`` lines under them);
- the exception line ``pkg.mod.SomeError: message`` and its continuation lines;
- chains: "The above exception was the direct cause of the following exception:" and
  "During handling of the above exception, another exception occurred:"; the first
  exception of a chain is the deepest cause.

A frame is the user's code unless its path is inside ``site-packages``/``dist-packages``,
the standard library, or a ``torch``/``<frozen ...>`` path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

_START = regex.compile(r"^\s*(?:Original )?Traceback \(most recent call last\):\s*$")
_FRAME = regex.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_EXC = regex.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failed|Unsupported|Warning|Timeout|Fault|Iteration|Stop\w*)?)(?::\s?(?P<msg>.*))?$"
)
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception:"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred:"

_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen", "/torch/", "\\torch\\")


def is_user_frame(path: str) -> bool:
    """``True`` when a frame's file is the user's code, not a library's or Python's."""
    return not any(marker in path for marker in _LIBRARY_MARKERS)


def collective_call(frames: list[Frame]) -> str | None:
    """The collective a traceback was waiting in, from its frames: the function called in
    ``torch/distributed/distributed_c10d.py`` (``all_reduce``, ``barrier``, ...), or
    ``backward`` when it waited in autograd (DDP all-reduces gradients during backward).
    ``None`` when the traceback shows neither."""
    for frame in reversed(frames):
        path = frame.file.replace("\\", "/")
        if path.endswith("distributed/distributed_c10d.py") and frame.func and not frame.func.startswith("_"):
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

    @property
    def user_frame(self) -> Frame | None:
        """The innermost frame in the user's code, if any."""
        for frame in reversed(self.frames):
            if frame.user:
                return frame
        return None


class TracebackReader:
    """Stateful reader for one stream; :meth:`feed` returns an exception when one ends."""

    __slots__ = ("_chain_index", "_chain_next", "_frames", "_ignored", "_ignored_next", "_in_tb", "code_line")

    def __init__(self) -> None:
        self._frames: list[Frame] = []
        self._in_tb = False
        self._chain_next: str | None = None
        self._chain_index = 0
        self._ignored = False
        self._ignored_next = False
        #: ``True`` when the last line fed was source code quoted under a frame (its text
        #: is the program's, not a message: ``raise ValueError("CUDA out of memory")``).
        self.code_line = False

    @property
    def open(self) -> bool:
        """``True`` while a traceback is being read (its next lines are needed)."""
        return self._in_tb

    def feed(self, text: str, number: int) -> PyException | None:
        """Feed one cleaned line (``number`` 1-based); returns the exception it completes."""
        self.code_line = False
        if not self._in_tb:
            if "Traceback" in text and _START.match(text):
                self._in_tb = True
                self._frames = []
                self._ignored = self._ignored_next
                self._ignored_next = False
                return None
            stripped = text.strip()
            # Python prints exceptions it ignores (in __del__, atexit, threads at exit)
            # after "Exception ignored in: <obj>": they did not end the process.
            self._ignored_next = stripped.startswith("Exception ignored")
            if stripped == _CHAIN_CAUSE:
                self._chain_next = "cause"
            elif stripped == _CHAIN_CONTEXT:
                self._chain_next = "context"
            elif stripped and not stripped.startswith("[") and self._chain_next is None:
                self._chain_index = 0
            return None
        if 'File "' in text:
            fm = _FRAME.match(text)
            if fm:
                file = fm.group("file")
                self._frames.append(Frame(file, int(fm.group("line")), (fm.group("func") or "").strip(), is_user_frame(file)))
                return None
        if not text.strip() or text[:1].isspace():
            # code lines, carets, blank separators inside the traceback
            self.code_line = bool(self._frames) and bool(text.strip())
            if len(self._frames) > 200:
                del self._frames[:100]
            return None
        em = _EXC.match(text.strip())
        if not em:
            # A non-indented line that is not an exception: the traceback was cut.
            self._reset_tb()
            return None
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
        )
        self._chain_index = index
        self._chain_next = None
        self._reset_tb()
        return exc

    def _reset_tb(self) -> None:
        self._in_tb = False
        self._frames = []
