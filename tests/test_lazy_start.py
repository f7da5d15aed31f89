"""A ``rootrank diagnose`` start loads only what the log needs: the standard-library modules a
tiny log does not use (:data:`rootrank.deferred_stdlib.DEFERRED`, ``ast``) and the analysis
modules only some logs reach are not imported by a 3-line OOM log's diagnosis, which is
still the diagnosis; a deferred module, once read, is the real one."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from rootrank import deferred_stdlib

SERVER = Path(__file__).resolve().parents[1] / "server"

#: Imported by a tiny log's start before round 24; now imported by the code that needs them
#: (a Python literal to parse, a phase, p2p peers or rank lines to compare, a SeqNum spread,
#: a stalled job, stack dumps, a signature's YAML verify line).
LAZY = (
    "ast",
    "rootrank.analysis.cut_lines",
    "rootrank.analysis.oddline",
    "rootrank.analysis.outlived",
    "rootrank.analysis.spread",
    "rootrank.analysis.stamped_stall",
    "rootrank.collective_names",
    "rootrank.verify_check",
)

_TINY_LOG = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "train.py", line 3, in <module>\n'
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


def test_a_tiny_log_does_not_import_the_lazy_modules(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(_TINY_LOG, encoding="utf-8")
    code = (
        "import sys\n"
        "from rootrank import cli\n"
        f"sys.argv = ['rootrank', 'diagnose', {str(log)!r}, '--format', 'json']\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        f"loaded = sorted(m for m in {LAZY!r} if m in sys.modules)\n"
        "kinds = [type(sys.modules[m]).__name__ for m in ('inspect', 'ipaddress')]\n"
        "print(loaded, kinds, file=sys.stderr)\n"
    )
    out = _fresh(code)
    assert '"failure_class": "cuda-oom"' in out.stdout, out.stderr
    assert '"rank": 0' in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[] ['_Deferred', '_Deferred']"


def test_a_deferred_module_reads_as_the_real_one() -> None:
    """``import``, ``from ... import`` and attribute reads through the stand-in give the real
    module's objects, and ``dataclasses`` still writes the docstring of a class without one
    (it needs ``inspect.signature``; with rootrank's stored methods it names the annotations
    as ``dataclasses``' own code does, so only its start is compared)."""
    code = (
        "import sys\n"
        "import rootrank\n"
        "import importlib.util, inspect, ipaddress\n"
        "stub = type(inspect).__name__\n"
        "assert importlib.util.find_spec('inspect').origin.endswith('inspect.py')\n"
        "assert type(sys.modules['inspect']).__name__ == '_Deferred'\n"
        "from inspect import signature\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class P:\n    x: int\n"
        "real = sys.modules['inspect']\n"
        "print(stub, type(real).__name__, signature is real.signature, P.__doc__[:5],\n"
        "      str(ipaddress.ip_address('10.0.0.1')), file=sys.stderr)\n"
    )
    out = _fresh(code)
    assert out.stderr.strip().splitlines()[-1] == "_Deferred module True P(x:  10.0.0.1", out.stderr


def test_defer_leaves_an_imported_module_alone() -> None:
    assert deferred_stdlib.defer("dataclasses") == []
    assert sys.modules["dataclasses"] is dataclasses


def test_every_rootrank_dataclass_has_a_docstring() -> None:
    """``dataclasses`` loads ``inspect`` for a class without one (to write it)."""
    import importlib
    import pkgutil

    import rootrank

    bare = []
    for info in pkgutil.walk_packages(rootrank.__path__, "rootrank."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == info.name
                and (value.__doc__ or "").startswith(value.__name__ + "(")
            ):
                bare.append(f"{info.name}.{value.__name__}")
    assert bare == []
