"""The methods ``dataclasses`` writes for rootrank's classes, compiled when the package is built.

Up to Python 3.12 the ``dataclasses`` module writes each class's ``__init__``, ``__repr__``,
``__eq__`` (and, for a frozen class, ``__setattr__``, ``__delattr__``, ``__hash__``) as source
text and compiles it with ``exec`` when the class is defined, i.e. on every import: a
``rootrank diagnose`` start defines 62 dataclasses, ~230 compiles, ~20-25 ms of a ~145 ms
start (CPU, Python 3.11, measured with a clock around ``dataclasses._process_class``).

The package build (:mod:`rootrank.built_code`, run by ``hatch_build.py`` and by ``python -m
rootrank.library_file``) imports every rootrank module, keeps each text ``dataclasses`` compiles, and writes
the code objects, keyed by their exact text, to :data:`BUILT` (``marshal``; tagged with the
interpreter's bytecode magic number and optimisation level). :func:`install` (run when the
``rootrank`` package is imported) gives ``dataclasses`` an ``exec`` that runs the stored code
of a text found there and compiles any other text as before. The stored code is what ``exec``
compiles from that text (same file name ``<string>``, no inherited ``__future__`` flags, as
``dataclasses`` has none), so every class gets the same methods; a file built by another
Python, a missing or unreadable one, or a class changed since the build only costs the
compile. Nothing is written at run time.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from rootrank.built_code import read_table

#: The built file, next to this module (ignored by git).
BUILT = Path(__file__).with_name("dataclass_code.bin")


def _tag() -> tuple[bytes, int]:
    """What the stored code depends on: the bytecode magic number and ``-O`` level."""
    import importlib.util

    return importlib.util.MAGIC_NUMBER, sys.flags.optimize


def _compile(text: str) -> CodeType:
    """``text`` compiled as ``exec(text)`` in ``dataclasses`` compiles it."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def load(path: Path = BUILT) -> dict[str, CodeType]:
    """The stored code by text, or ``{}`` when ``path`` is missing, unreadable or built by
    another interpreter."""
    return read_table(path, _tag())


def install(path: Path = BUILT) -> int:
    """Make ``dataclasses`` run the stored code of the texts in ``path`` (once per process).
    Returns how many texts are stored (0: nothing changed)."""
    if getattr(dataclasses, "exec", None) is not None:  # installed already (or someone else's)
        return 0
    table = load(path)
    if not table:
        return 0
    run = builtins.exec
    lookup = table.get

    def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        run(lookup(source, source) if type(source) is str else source, globals, locals)

    dataclasses.exec = _exec  # type: ignore[attr-defined]  # shadows the builtin there only
    return len(table)


def import_all() -> None:
    """Import every rootrank module (a module whose optional dependencies are missing is
    skipped; ``__main__`` modules are not run)."""
    import importlib
    import pkgutil

    import rootrank

    for mod in pkgutil.walk_packages(rootrank.__path__, "rootrank."):
        if mod.name.endswith(".__main__") or mod.name in sys.modules:
            continue
        try:
            importlib.import_module(mod.name)
        except ImportError:
            continue


def record() -> dict[str, CodeType]:
    """Import every rootrank module and return the code of each text ``dataclasses`` compiled
    (only modules not imported yet define their classes now)."""
    seen: dict[str, CodeType] = {}
    run = builtins.exec

    def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            seen[source] = _compile(source)
        run(source, globals, locals)

    previous = dataclasses.__dict__.get("exec")
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    try:
        import_all()
    finally:
        if previous is None:
            del dataclasses.exec  # type: ignore[attr-defined]
        else:
            dataclasses.exec = previous  # type: ignore[attr-defined]
    return seen


def write(out: Path = BUILT) -> int:
    """Record (in this process, which must not have imported rootrank's other modules yet)
    and write ``out`` whole. Returns the number of texts."""
    table = record()
    from rootrank.built_code import write_table

    return write_table(out, _tag(), table)
