"""The pip command that adds one of rootrank's optional extras (``lsp``, ``live``, ``fleet``).

rootrank is installed from its clone, not from PyPI, so ``pip install 'rootrank[fleet]'``
would look for a package of that name on an index (and install whatever someone published
under it). The command names the folder pip recorded when rootrank was installed
(``direct_url.json``, PEP 610), and the interpreter running now, so it adds the extra to this
environment; without that record it shows a ``<the rootrank clone>`` blank.
"""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse


def source_folder() -> str | None:
    """The local folder rootrank was installed from (``pip install .`` or ``-e .``), from
    its dist-info's ``direct_url.json``; ``None`` when pip recorded none (a wheel from an
    index, a copy on ``PYTHONPATH``) or the record is not a ``file://`` URL."""
    try:
        raw = metadata.distribution("rootrank").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    try:
        url = urlparse(str(json.loads(raw).get("url", "")))
    except (ValueError, AttributeError):
        return None
    return unquote(url.path) if url.scheme == "file" and url.path else None


def install_hint(extra: str) -> str:
    """``python -m pip install '<folder>[extra]'`` for this interpreter, e.g.
    ``/opt/venv/bin/python -m pip install '/home/<user>/rootrank[fleet]'``."""
    folder = source_folder() or "<the rootrank clone>"
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(f'{folder}[{extra}]')}"
