"""Start the bundled rootrank language server with the libraries shipped in the .vsix.

The extension runs ``python -I rootrank_server.py``: isolated mode (``-I``) ignores
``PYTHONPATH`` and the user's site-packages, so the pinned copies in ``libs/`` next to
this file are the ones imported, whatever the user's environment holds. Child engine
processes get ``libs/`` through ``PYTHONPATH`` (set here). ``libs/`` has
the pure-Python dependencies installed for Python 3.10 plus the extension modules of
``regex`` and ``ahocorasick_rs`` for each supported CPython (``manifest.json`` lists them). stdout is the LSP channel:
this file prints nothing; a problem goes to stderr and exit code 3.
"""

from __future__ import annotations

import json
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(HERE, "libs")


def main() -> None:
    """Put ``libs/`` first on ``sys.path`` and run ``python -m rootrank.server``."""
    if sys.version_info < (3, 10):
        sys.stderr.write(
            "rootrank: Python %d.%d is too old; 3.10 or newer is needed.\n" % sys.version_info[:2]
        )
        raise SystemExit(3)
    sys.path.insert(0, LIBS)
    # The server starts engine processes with ``sys.executable -m rootrank.lsp.worker``: they
    # find the same libraries through PYTHONPATH, skip the user's site-packages, and (3.11+)
    # do not put the working directory on sys.path (the extension also starts us in our own
    # folder, so on 3.10 the working directory is this bundle, not the user's workspace).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [LIBS, *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    os.environ["PYTHONNOUSERSITE"] = "1"
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        import ahocorasick_rs  # noqa: F401  (the compiled dependencies)
        import regex  # noqa: F401
    except ImportError as error:
        try:
            with open(os.path.join(HERE, "manifest.json"), encoding="utf-8") as handle:
                manifest = json.load(handle)
        except OSError:
            manifest = {}
        sys.stderr.write(
            "rootrank: this build carries its compiled modules (regex, ahocorasick_rs) for Python %s on %s, "
            "not for Python %d.%d on this machine (%s). Set rootrank.interpreter to one of those "
            "Pythons, or install the .vsix built for this platform.\n"
            % (
                ", ".join(manifest.get("pythons", [])) or "?",
                manifest.get("target", "?"),
                sys.version_info[0],
                sys.version_info[1],
                error,
            )
        )
        raise SystemExit(3) from None
    runpy.run_module("rootrank.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
