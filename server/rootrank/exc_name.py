"""Whether a ``name: `` at the start of a line is a Python exception, not a host label.

A traceback's last line is ``<module path>.<Class>: <message>``, and the module path may hold a
digit (``psycopg2.errors.UniqueViolation``, ``cv2.error``, ``h5py.h5f.FileIDError``,
``boto3.exceptions.S3UploadFailedError``). A parallel shell's host label has the same outer
shape (``node01: ...``, ``gpu7.cluster.local: ...``), so a line-start reader that peels host
labels (:mod:`rootrank.ranks`) and the masker's host-prefix rule (:mod:`rootrank.mask`) ask
:func:`exception_path` first.

What tells the two apart is the name's own shape, as the interpreter prints it
(``traceback.format_exception_only``: ``type.__module__ + "." + type.__qualname__``):

- every dotted part is a Python identifier (no ``-``, no part starting with a digit), while a
  host name's labels often hold ``-`` and an IP's parts are numbers;
- the last part is a class name: CamelCase (``UniqueViolation``, ``OperationalError``), or one of
  the lower-case exception classes that C extensions and the standard library name ``error``
  (``cv2.error``, ``select.error``), ``...error`` (``socket.gaierror``, ``socket.herror``) or
  ``timeout`` (``socket.timeout``). No top-level domain is CamelCase, ``error`` or ``timeout``;
- some module part is written in lower case (``psycopg2``, ``errors``, ``_exceptions``), as
  module names are, so a host written in capitals (``Node3.Corp.Local``) stays a host.
"""

from __future__ import annotations

from rootrank import re_code

#: A dotted Python name: two or more identifiers joined by dots.
_DOTTED = re_code.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
#: A class name as Python code writes one: an upper-case letter first, a lower-case one later.
_CAMEL = re_code.compile(r"_*[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*")
#: The lower-case exception class names of C extensions and the standard library.
_LOWER_CLASS = re_code.compile(r"[a-z]*error|timeout")


def exception_path(name: str) -> bool:
    """``True`` when ``name`` (the text before ``": "`` at a line's start, no blanks) reads as
    an exception's dotted type (``db2.errors.UniqueViolation``, ``cv2.error``), so the line is
    a traceback's last line and ``name`` is no host. An undotted name (``node01``) is never one:
    the caller's own rules read those. Raises nothing."""
    if _DOTTED.fullmatch(name) is None:
        return False
    *modules, last = name.split(".")
    if not any(part.lower() == part for part in modules):
        return False
    return _CAMEL.fullmatch(last) is not None or _LOWER_CLASS.fullmatch(last) is not None
