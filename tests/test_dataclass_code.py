"""The dataclass methods compiled at build time (:mod:`rootrank.dataclass_code`) are the ones
``dataclasses`` compiles at import: byte for byte the same code for every method of every
rootrank dataclass, and a start that finds the file compiles none of the ``diagnose`` path's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rootrank import built_code, dataclass_code

SERVER = Path(__file__).resolve().parents[1] / "server"

# Imports every rootrank module with ``dataclasses.exec`` as SETUP leaves it, then prints, for
# each method of each rootrank dataclass, the marshalled code's digest, and the texts compiled.
_PROBE = """
import builtins, dataclasses, hashlib, importlib, json, marshal, pkgutil, sys
compiled = []
SETUP
import rootrank
for mod in pkgutil.walk_packages(rootrank.__path__, "rootrank."):
    if not mod.name.endswith(".__main__"):
        try:
            importlib.import_module(mod.name)
        except ImportError:
            pass
methods = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith("rootrank"):
        continue
    for cls in vars(module).values():
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == name:
            for meth in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
                fn = cls.__dict__.get(meth)
                code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
                if code is not None:
                    key = f"{name}.{cls.__qualname__}.{meth}"
                    methods[key] = hashlib.sha256(marshal.dumps(code)).hexdigest()
print(json.dumps({"methods": methods, "compiled": len(compiled)}))
"""

# Counts the texts that reach the real compile (a miss of the stored table, or no table).
_COUNT = """
real = builtins.exec
def counting(source, g=None, l=None, /):
    if type(source) is str:
        compiled.append(source)
    return real(source, g, l)
builtins.exec = counting
"""


def _probe(setup: str) -> dict:
    code = _PROBE.replace("SETUP", setup)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SERVER), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def test_stored_code_is_what_exec_compiles(tmp_path: Path) -> None:
    out = tmp_path / "dataclass_code.bin"
    assert "compiled dataclass methods" in built_code.build(tmp_path)
    table = dataclass_code.load(out)
    assert len(table) > 200  # ~330 methods of ~90 classes
    for text, code in table.items():
        assert code == dataclass_code._compile(text), text[:80]
        assert code.co_filename == "<string>"


def test_classes_get_the_same_methods_with_and_without_the_file(tmp_path: Path) -> None:
    out = tmp_path / "dataclass_code.bin"
    built_code.build(tmp_path)
    # Without: dataclasses keeps the builtin exec (install() sees one set and does nothing).
    without = _probe(_COUNT + "dataclasses.exec = builtins.exec")
    # With the file built above installed before rootrank's modules are imported (in place of
    # the one ``import rootrank`` installs from the package folder: an install's build may have
    # run where an optional dependency was missing, and recorded fewer classes).
    with_file = _probe(
        _COUNT
        + "from rootrank import dataclass_code as m\ndel dataclasses.exec\n"
        + f"m.install(m.Path({str(out)!r}))"
    )
    assert len(without["methods"]) > 200
    assert with_file["methods"] == without["methods"]
    assert without["compiled"] > 200
    assert with_file["compiled"] == 0


def test_a_file_from_another_interpreter_is_ignored(tmp_path: Path) -> None:
    import marshal

    out = tmp_path / "dataclass_code.bin"
    out.write_bytes(
        marshal.dumps(((b"\x00\x00\r\n", 0), {"def f(): pass\n": compile("1", "", "exec")}))
    )
    assert dataclass_code.load(out) == {}
    out.write_bytes(b"not marshal data")
    assert dataclass_code.load(out) == {}
    assert dataclass_code.load(tmp_path / "missing.bin") == {}
