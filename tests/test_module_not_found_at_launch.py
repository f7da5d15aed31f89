"""A command whose interpreter lacks a package fails before any line of the job runs, and says
so in runpy's words (CPython Lib/runpy.py: ``_get_module_details`` raises, and
``_run_module_as_main`` exits with ``"%s: %s" % (sys.executable, exc)``): the cause is named
(module-not-found, the interpreter-at-launch fix), not "nothing names a cause"."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

from rootrank.engine import diagnose_text

RUNPY_SPEC = (
    "/opt/conda/envs/base/bin/python3.11: Error while finding module specification for"
    " 'torch.distributed.run' (ModuleNotFoundError: No module named 'torch')\n"
)
RUNPY_NONE = "/usr/bin/python3: No module named deepspeed.launcher\n"


def test_a_module_the_interpreter_cannot_find_for_python_m_is_named():
    d = diagnose_text(RUNPY_SPEC, "launch.log", mask=False)
    root = d.root_cause
    assert root is not None and root.signature == "module-not-found"
    assert root.failure_class == "dependency-version-mismatch"
    assert root.evidence[0].line == 1
    assert root.fix.variant is not None and root.fix.variant.id == "interpreter-at-launch"
    assert root.fix.steps[0].startswith(
        "/opt/conda/envs/base/bin/python3.11 could not import torch when the command started"
    )
    assert root.verify.startswith('/opt/conda/envs/base/bin/python3.11 -c "import torch"')
    assert d.initiating_rank is None


def test_runpys_plain_no_module_named_is_named_too():
    d = diagnose_text(RUNPY_NONE, "launch.log", mask=False)
    root = d.root_cause
    assert root is not None and root.signature == "module-not-found"
    assert root.fix.variant is not None and root.fix.variant.id == "interpreter-at-launch"
    assert root.verify.startswith('/usr/bin/python3 -c "import deepspeed.launcher"')


def test_python_m_of_a_file_name_is_a_typo_not_a_missing_package():
    # `python -m train.py`: runpy imports train, then finds no submodule "py" in it
    text = (
        "/usr/bin/python3: Error while finding module specification for 'train.py'"
        " (ModuleNotFoundError: No module named 'train.py'; 'train' is not a package)."
        " Try using 'train' instead of 'train.py' as the module name.\n"
    )
    d = diagnose_text(text, "launch.log", mask=False)
    assert d.root_cause is None  # no package to install: not module-not-found's fix


def test_run_names_the_missing_package_of_a_python_m_launch(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "run", "--", sys.executable, "-m"]
        + ["rootrank_no_such_pkg.run", "train.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "nothing in its output names a cause" not in err
    assert (
        "Root cause: A required Python package is not installed in the environment the job runs in"
        in err
    )
    assert "could not import rootrank_no_such_pkg when the command started" in err
