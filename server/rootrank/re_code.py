"""rootrank's standard-library (``re``) patterns compiled when the package is built.

The standard library's ``re`` parses and compiles a pattern in Python (``re._parser``,
``re._compiler``: ~0.05-1 ms a pattern, CPU, Python 3.11) and only then builds the native
pattern object with ``_sre.compile``. The ~35 module-level ``re`` patterns of the modules a
``rootrank diagnose`` start imports (rank tags, masking's cheap pre-tests, the binary sniff...)
cost ~4-5 ms of every start that way.

A module writes ``_X = re_code.compile(r"...", flags)`` instead of ``re.compile``. The package
build (:mod:`rootrank.built_code`) imports every rootrank module, keeps the arguments
``re._compiler.compile`` passes to ``_sre.compile`` for each pattern made so (:data:`_made`),
and writes them to :data:`BUILT` (``marshal``, one entry per ``(pattern, flags)``, tagged
with the interpreter's exact version and ``_sre.MAGIC``: the code depends on both). At run
time :func:`compile` builds a pattern found there from its stored arguments, the same call
with the same values as ``re.compile`` makes, so an equal pattern (``re.Pattern`` equality
compares the pattern, its flags and its code: ``tests/test_re_code.py``); any other pattern,
a file built by another interpreter, or no file, goes through ``re.compile``. Nothing is
written at run time.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # (re's native engine, no stubs)
import marshal
import re
import sys
from pathlib import Path
from typing import Any, AnyStr

from rootrank.built_code import read_table

#: The built file, next to this module (ignored by git).
BUILT = Path(__file__).with_name("re_code.bin")

#: ``(pattern, flags)`` -> the marshalled arguments of ``_sre.compile``; loaded on first use.
_table: dict[tuple[str | bytes, int], bytes] | None = None

#: Every ``(pattern, flags)`` :func:`compile` was asked for, first seen first (what the build
#: stores: the module-level patterns of every module imported).
_made: dict[tuple[str | bytes, int], None] = {}


def _tag() -> tuple[int, int]:
    """What the stored arguments depend on: the interpreter's exact version (its ``re``
    compiler and Unicode tables) and the ``_sre`` engine's magic number."""
    return sys.hexversion, int(_sre.MAGIC)


def load(path: Path = BUILT) -> dict[tuple[str | bytes, int], bytes]:
    """The stored entries, or ``{}`` when ``path`` is missing, unreadable or built by another
    interpreter."""
    return read_table(path, _tag())


def compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``: from the stored arguments when the build stored this
    pattern, else compiled."""
    global _table
    key = (pattern, int(flags))
    _made[key] = None
    table = _table
    if table is None:
        table = _table = load()
    stored = table.get(key)
    if stored is None:
        return re.compile(pattern, flags)
    made: re.Pattern[AnyStr] = _sre.compile(*marshal.loads(stored))
    return made


def arguments(pattern: str | bytes, flags: int = 0) -> tuple[Any, ...]:
    """The arguments ``re`` passes to ``_sre.compile`` for ``pattern`` (its own compile,
    uncached), as plain ``marshal``-able values."""
    from re import _compiler  # type: ignore[attr-defined]

    seen: list[tuple[Any, ...]] = []
    real = _sre.compile

    def spy(*args: Any) -> Any:
        seen.append(args)
        return real(*args)

    _sre.compile = spy
    try:
        _compiler.compile(pattern, int(flags))
    finally:
        _sre.compile = real
    (args,) = seen
    return tuple(_plain(a) for a in args)


def _plain(value: Any) -> Any:
    """``value`` with every ``int`` subclass (``re``'s named opcodes, ``re.RegexFlag``) as a
    plain ``int`` inside lists, tuples and dicts, so that ``marshal`` takes it (``_sre`` reads
    them as integers either way)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    raise TypeError(f"cannot store {type(value).__name__}")


def sources() -> list[tuple[str | bytes, int]]:
    """Every module-level ``re`` pattern of rootrank (made through :func:`compile` while every
    module is imported), first seen first."""
    from rootrank import dataclass_code

    dataclass_code.import_all()
    return list(_made)


def write(out: Path = BUILT) -> int:
    """Record every pattern of :func:`sources` and write ``out`` whole. Returns how many
    patterns are stored."""
    table = {key: marshal.dumps(arguments(*key)) for key in sources()}
    from rootrank.built_code import write_table

    return write_table(out, _tag(), table)
