"""Build hook (hatchling): the signature library's built form goes into every build.

``rootrank/library.json`` is what rootrank reads at start instead of parsing ~310 YAML files
(:mod:`rootrank.library_file`). A wheel gets it next to the package's code; an editable
install (``pip install -e .``, as ``scripts/test-all.sh`` runs) gets it written to
``server/rootrank/library.json`` in the checkout (ignored by git), since that is the folder
the install imports from. A wrong signature file fails the build with its problem.

``rootrank/dataclass_code.bin``, ``rootrank/regex_code.bin`` and ``rootrank/re_code.bin``
(:mod:`rootrank.built_code`): the methods ``dataclasses`` writes for rootrank's classes,
compiled, and rootrank's ``regex`` and ``re`` patterns, parsed, once here instead of at every
start; made by the interpreter that runs the build, and ignored by any other (rootrank then
compiles them).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class LibraryFileHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        sys.path.insert(0, str(root / "server"))
        try:
            from rootrank import built_code, library_file
        finally:
            sys.path.pop(0)
        signatures = root / "signatures"
        if version == "editable":
            out = root / "server" / "rootrank" / "library.json"
            library_file.write(signatures, out)
            built_code.build(out.parent)
            return
        self._tmp = tempfile.mkdtemp(prefix="rootrank-build-")
        out = Path(self._tmp) / "library.json"
        library_file.write(signatures, out)
        build_data["force_include"][str(out)] = "rootrank/library.json"
        built_code.build(Path(self._tmp))
        for name in ("dataclass_code.bin", "regex_code.bin", "re_code.bin"):
            build_data["force_include"][str(Path(self._tmp) / name)] = f"rootrank/{name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
