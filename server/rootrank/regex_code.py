"""rootrank's patterns parsed when the package is built, not at every start.

The ``regex`` module parses and compiles a pattern in Python (``regex._main._compile``: parse,
optimise, emit the matcher's code as a list of ints) and only then builds the native pattern
object (``regex._regex.compile``); the Python part is ~0.1-1.2 ms a pattern (its flags are
``enum.IntFlag``\\ s, ~8,000 ``Flag.__and__`` calls on a start), ~10-15 ms of the ~40
patterns a ``rootrank diagnose`` start compiles (CPU, Python 3.11, regex 2026.11).

The package build (``hatch_build.py``, ``python -m rootrank.library_file``) imports every
rootrank module and loads the built-in library, compiles each module-level pattern
(:mod:`rootrank.lazy_regex`) and each signature's pattern once, keeps the arguments
``regex._main._compile`` passed to ``regex._regex.compile`` for it, and writes them to
:data:`BUILT` (``marshal``, one entry per ``(pattern, flags)``, tagged with the native
module's code format and a CRC of the ``regex`` parser's two source files: :func:`_tag`).
:func:`compile` builds a pattern found there from its stored arguments, the same call with
the same values as ``regex.compile`` makes, so the same pattern; any other pattern, a file
built with another ``regex``, ``regex.DEFAULT_VERSION`` changed by a program, or no file, goes
through ``regex.compile``. Patterns whose code depends on the locale (``LOCALE``) are not stored.
(``regex`` lists a character set's members in set order, which differs from one process to
the next: the stored code is one of the orders any run may compile, the same set.)
Nothing is written at run time.

A start whose patterns are all stored never imports the ``regex`` package: its Python layer
(the parser, ``enum`` flags, ~100 classes: ~9 ms of a start, CPU) is not needed to build a
stored pattern. :func:`_native` loads the native module alone, under its own name
``regex._regex`` (the package, when something imports it later, uses that same module); the
flags rootrank names are the plain integers here (:data:`IGNORECASE`, :data:`VERBOSE`: ``regex``
reads them as integers; ``tests/test_regex_code.py`` holds them equal to ``regex``'s); and the
module-level functions (:func:`search`, :func:`sub`...) are ``regex``'s, their pattern made by
:func:`compile`. A pattern not stored (a team's signature, a pattern made from a log's words)
imports ``regex`` then (:func:`_regex`).
"""

from __future__ import annotations

import marshal
import sys
import zlib
from pathlib import Path
from typing import Any

from rootrank.built_code import read_table

#: ``regex``'s flags rootrank uses, as the integers they are (naming one imports nothing).
IGNORECASE = 0x2
LOCALE = 0x4
VERBOSE = 0x40
#: ``regex.DEFAULT_VERSION`` as the package sets it on import (a program may change it after).
VERSION0 = 0x2000

#: The built file, next to this module (ignored by git).
BUILT = Path(__file__).with_name("regex_code.bin")

#: ``(pattern, flags)`` -> the marshalled arguments of ``_regex.compile``; loaded on first use.
_table: dict[tuple[str, int], bytes] | None = None

#: ``regex``'s native module (:func:`_native`) and its package folder, once found.
_native_module: Any = None
_folder: Path | None = None


def _regex() -> Any:
    """The ``regex`` package, imported now if it was not (a pattern :data:`BUILT` does not
    hold needs its parser)."""
    import regex  # its Python layer, only for a pattern not stored: see the module's docstring

    return regex


def _native() -> Any:
    """``regex``'s native module (``regex._regex``, whose ``compile`` builds a pattern from
    parsed code), loaded without running the ``regex`` package when that is not imported
    yet, and registered as ``regex._regex`` in ``sys.modules`` so that the package uses this
    same module when it is. Any failure to find it that way imports the package."""
    global _native_module, _folder
    if _native_module is not None:
        return _native_module
    import importlib.machinery
    import importlib.util

    module = sys.modules.get("regex._regex")
    spec = importlib.util.find_spec("regex")  # finds the package's folder, runs nothing
    if spec is not None and spec.submodule_search_locations:
        _folder = Path(list(spec.submodule_search_locations)[0])
    if module is None and _folder is not None:
        finder = importlib.machinery.FileFinder(
            str(_folder),
            (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        )
        native_spec = finder.find_spec("regex._regex")
        if native_spec is not None and native_spec.loader is not None:
            module = importlib.util.module_from_spec(native_spec)
            native_spec.loader.exec_module(module)
            module = sys.modules.setdefault("regex._regex", module)
    if module is None or _folder is None:
        module = _regex()._regex
        _folder = Path(_regex().__file__).parent
    _native_module = module
    return module


def _tag() -> tuple[int, int]:
    """What the stored arguments depend on: the native module's code format
    (``regex._regex.MAGIC``) and the Python parser that made them (a CRC-32 of the
    package's ``_main.py`` and ``_regex_core.py``: what ``regex.__version__`` names, read
    without importing it). Files that cannot be read give a tag no table holds."""
    magic = int(_native().MAGIC)
    assert _folder is not None  # set by _native()
    crc = 0
    try:
        for name in ("_main.py", "_regex_core.py"):
            crc = zlib.crc32((_folder / name).read_bytes(), crc)
    except OSError:
        return magic, -1
    return magic, crc


def load(path: Path = BUILT) -> dict[tuple[str, int], bytes]:
    """The stored entries, or ``{}`` when ``path`` is missing, unreadable or built with
    another ``regex``."""
    return read_table(path, _tag())


def _default_version() -> int:
    """``regex.DEFAULT_VERSION`` now: :data:`VERSION0` until the package is imported (its
    import sets that, and only a program that imported it can change it)."""
    package = sys.modules.get("regex")
    default = getattr(package, "DEFAULT_VERSION", VERSION0)
    return int(default)


def compile(pattern: str, flags: int = 0) -> Any:
    """``regex.compile(pattern, flags)``: from the stored arguments when the build stored
    this pattern (and ``regex.DEFAULT_VERSION`` is still :data:`VERSION0`, as at the build),
    else compiled by ``regex``."""
    global _table
    table = _table
    if table is None:
        table = _table = load()
    stored = table.get((pattern, int(flags)))
    if stored is None or _default_version() != VERSION0:
        return _regex().compile(pattern, flags)
    return _native().compile(*marshal.loads(stored))


#: Stored patterns the functions below made, by ``(pattern, flags)`` (at most the table's
#: size; a pattern not stored is cached by ``regex`` itself, as its own functions do).
_made: dict[tuple[str, int], Any] = {}


def _pattern(pattern: str, flags: int) -> Any:
    """The compiled ``pattern``, made once per process when stored, else ``regex.compile``'s
    (its own bounded cache)."""
    key = (pattern, int(flags))
    made = _made.get(key)
    if made is None:
        made = compile(pattern, flags)
        if _table and key in _table:
            _made[key] = made
    return made


def search(pattern: str, string: str, flags: int = 0) -> Any:
    """``regex.search(pattern, string, flags)``, the pattern made by :func:`compile`."""
    return _pattern(pattern, flags).search(string)


def match(pattern: str, string: str, flags: int = 0) -> Any:
    """``regex.match(pattern, string, flags)``, the pattern made by :func:`compile`."""
    return _pattern(pattern, flags).match(string)


def fullmatch(pattern: str, string: str, flags: int = 0) -> Any:
    """``regex.fullmatch(pattern, string, flags)``, the pattern made by :func:`compile`."""
    return _pattern(pattern, flags).fullmatch(string)


def findall(pattern: str, string: str, flags: int = 0) -> list[Any]:
    """``regex.findall(pattern, string, flags)``, the pattern made by :func:`compile`."""
    found: list[Any] = _pattern(pattern, flags).findall(string)
    return found


def split(pattern: str, string: str, maxsplit: int = 0, flags: int = 0) -> list[Any]:
    """``regex.split(pattern, string, maxsplit, flags)``, the pattern made by :func:`compile`."""
    parts: list[Any] = _pattern(pattern, flags).split(string, maxsplit)
    return parts


def sub(pattern: str, repl: Any, string: str, count: int = 0, flags: int = 0) -> str:
    """``regex.sub(pattern, repl, string, count, flags)``, the pattern made by
    :func:`compile`."""
    out: str = _pattern(pattern, flags).sub(repl, string, count)
    return out


def escape(text: str) -> str:
    """``regex.escape(text)`` (imports ``regex``: only patterns made from data use it)."""
    escaped: str = _regex().escape(text)
    return escaped


def __getattr__(name: str) -> Any:
    # ``regex_code.error`` is ``regex.error``, looked up (and ``regex`` imported) only when an
    # ``except regex_code.error`` clause meets an exception: a stored pattern never raises it.
    if name == "error":
        return _regex().error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _plain(value: Any) -> Any:
    """``value`` with every ``int`` subclass (``regex.RegexFlag``) as a plain ``int``, so that
    ``marshal`` takes it (``_regex.compile`` reads them as integers either way)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (list, tuple, frozenset)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    raise TypeError(f"cannot store {type(value).__name__}")


def arguments(pattern: str, flags: int = 0) -> tuple[Any, ...] | None:
    """The arguments ``regex`` passes to ``_regex.compile`` for ``pattern`` (its own compile,
    uncached), or ``None`` for a locale-dependent pattern."""
    _main: Any = _regex()._main

    seen: list[tuple[Any, ...]] = []
    native = _native()
    real = native.compile

    def spy(*args: Any) -> Any:
        seen.append(args)
        return real(*args)

    native.compile = spy
    try:
        _main._compile(pattern, flags, False, {}, False)
    finally:
        native.compile = real
    (args,) = seen
    if args[1] & LOCALE:
        return None
    return _plain(args)


def sources() -> list[tuple[str, int]]:
    """Every module-level pattern of rootrank, every built-in signature's pattern and every
    pattern of its fix variants' conditions, as ``(pattern, flags)``, first seen first."""
    from rootrank import dataclass_code, lazy_regex
    from rootrank.entry.variants import when_patterns
    from rootrank.signatures import load_library

    dataclass_code.import_all()
    found = [lazy.__dict__["_source"] for lazy in lazy_regex._made]
    for sig in load_library().signatures.values():
        for pat in sig.patterns:
            found.append((pat.source, IGNORECASE if pat.ignorecase else 0))
        for variant in sig.fix.get("variants") or ():
            found.extend(when_patterns(variant.get("when") or {}))
    return list(dict.fromkeys((p, int(f)) for p, f in found))


def write(out: Path = BUILT) -> int:
    """Record every pattern of :func:`sources` and write ``out`` whole. Returns how many
    patterns are stored."""
    table = {}
    for pattern, flags in sources():
        args = arguments(pattern, flags)
        if args is not None:
            table[(pattern, flags)] = marshal.dumps(args)
    from rootrank.built_code import write_table

    return write_table(out, _tag(), table)
