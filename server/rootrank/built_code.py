"""The package's code built ahead of its use: two files next to the modules, ignored by git.

- ``dataclass_code.bin`` (:mod:`rootrank.dataclass_code`): the methods ``dataclasses`` writes
  for rootrank's classes, compiled;
- ``regex_code.bin`` (:mod:`rootrank.regex_code`): rootrank's patterns, parsed;
- ``re_code.bin`` (:mod:`rootrank.re_code`): its standard-library patterns, compiled.

All are built by ``hatch_build.py`` (into the wheel, or into ``server/rootrank/`` for an
editable install) and by ``python -m rootrank.library_file`` (after the signature library),
from a fresh interpreter (:func:`build`), and read only by the interpreter and ``regex``
version that built them: with any other, or without them, rootrank compiles as it did (the
same classes and patterns, a slower start). Nothing is written at run time.
"""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path
from typing import Any

#: Where the files go by default (this package's folder).
FOLDER = Path(__file__).resolve().parent

_MAIN = "import sys; from rootrank import built_code; built_code.main(sys.argv[1:])"


def read_table(path: Path, tag: tuple[Any, ...]) -> dict[Any, Any]:
    """The table stored in ``path`` (marshal of ``(tag, table)``), or ``{}`` when ``path`` is
    missing or unreadable, or was built with another ``tag`` (another interpreter or
    ``regex`` version). Never raises."""
    try:
        stored_tag, table = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if tuple(stored_tag) != tag or not isinstance(table, dict):
        return {}
    return table


def write_table(out: Path, tag: tuple[Any, ...], table: dict[Any, Any]) -> int:
    """Write ``table`` with its ``tag`` to ``out`` whole (marshal of ``(tag, table)``, through
    a temporary file beside it, so a reader never sees half a file); returns ``len(table)``.
    Raises OSError."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(marshal.dumps((tag, table)))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(table)


def build(folder: Path = FOLDER) -> str:
    """Write the files into ``folder`` from a fresh interpreter (this one's executable, this
    package first on its path); returns its report (one line a file). Raises OSError,
    subprocess.CalledProcessError (its ``stderr`` says why)."""
    import subprocess  # (only a build starts an interpreter: not on rootrank's start path)

    server = str(FOLDER.parent)
    path = os.pathsep.join(filter(None, [server, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, str(folder)],
        env={**os.environ, "PYTHONPATH": path},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def main(argv: list[str]) -> None:
    """Write the files into the folder ``argv[0]`` (default :data:`FOLDER`). Run in an
    interpreter that has imported nothing of rootrank but the package and this module: the
    dataclasses are recorded as their modules are first imported."""
    from rootrank import dataclass_code

    folder = Path(argv[0]) if argv else FOLDER
    out = folder / "dataclass_code.bin"
    print(f"{out}: {dataclass_code.write(out)} compiled dataclass methods")

    from rootrank import regex_code

    out = folder / "regex_code.bin"
    print(f"{out}: {regex_code.write(out)} parsed patterns")

    from rootrank import re_code

    out = folder / "re_code.bin"
    print(f"{out}: {re_code.write(out)} compiled standard-library patterns")
