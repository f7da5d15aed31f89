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
:data:`BUILT` (``marshal``, one entry per ``(pattern, flags)``, tagged with the ``regex``
version and its ``DEFAULT_VERSION``). :func:`compile` builds a pattern found there from its
stored arguments, the same call with the same values as ``regex.compile`` makes, so the same
pattern; any other pattern, a file built with another ``regex``, or no file, goes through
``regex.compile``. Patterns whose code depends on the locale (``LOCALE``) are not stored.
(``regex`` lists a character set's members in set order, which differs from one process to
the next: the stored code is one of the orders any run may compile, the same set.)
Nothing is written at run time.
"""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import Any, cast

import regex
from regex import _regex as _native_module

from rootrank.built_code import read_table

#: ``regex``'s native module (its ``compile`` builds a pattern from the parsed code).
_regex: Any = cast(Any, _native_module)

#: The built file, next to this module (ignored by git).
BUILT = Path(__file__).with_name("regex_code.bin")

#: ``(pattern, flags)`` -> the marshalled arguments of ``_regex.compile``; loaded on first use.
_table: dict[tuple[str, int], bytes] | None = None


def _tag() -> tuple[str, int]:
    """What the stored arguments depend on: the ``regex`` version and default version."""
    return regex.__version__, int(regex.DEFAULT_VERSION)


def load(path: Path = BUILT) -> dict[tuple[str, int], bytes]:
    """The stored entries, or ``{}`` when ``path`` is missing, unreadable or built with
    another ``regex``."""
    return read_table(path, _tag())


def compile(pattern: str, flags: int = 0) -> Any:
    """``regex.compile(pattern, flags)``: from the stored arguments when the build stored
    this pattern (and ``regex.DEFAULT_VERSION`` is still the build's), else compiled."""
    global _table
    table = _table
    if table is None:
        table = _table = load()
    stored = table.get((pattern, int(flags)))
    if stored is None or int(regex.DEFAULT_VERSION) != _tag()[1]:
        return regex.compile(pattern, flags)
    return _regex.compile(*marshal.loads(stored))


#: Patterns :func:`search` made, by ``(pattern, flags)`` (the library's conditions: a few
#: hundred at most).
_made: dict[tuple[str, int], Any] = {}


def search(pattern: str, string: str, flags: int = 0) -> Any:
    """``regex.search(pattern, string, flags)``, its pattern made once per process by
    :func:`compile` (for patterns that are data: the fix variants' conditions)."""
    made = _made.get((pattern, flags))
    if made is None:
        made = _made[(pattern, flags)] = compile(pattern, flags)
    return made.search(string)


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
    from regex import _main as _main_module

    _main: Any = _main_module

    seen: list[tuple[Any, ...]] = []
    real = _regex.compile

    def spy(*args: Any) -> Any:
        seen.append(args)
        return real(*args)

    _regex.compile = spy
    try:
        _main._compile(pattern, flags, False, {}, False)
    finally:
        _regex.compile = real
    (args,) = seen
    if args[1] & regex.LOCALE:
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
            found.append((pat.source, int(regex.IGNORECASE) if pat.ignorecase else 0))
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
