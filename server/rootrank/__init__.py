"""rootrank: find the root cause and the initiating rank of a failed multi-GPU training run.

The engine reads logs locally and never opens a network connection. Entry points:
:func:`rootrank.engine.diagnose_paths`, :func:`rootrank.engine.diagnose_text` and the
``rootrank`` command (:mod:`rootrank.cli`).
"""

__version__ = "0.1.0"

from rootrank import deferred_stdlib as _deferred_stdlib

_deferred_stdlib.defer(*_deferred_stdlib.DEFERRED)  # before dataclasses and pathlib import them

from rootrank import dataclass_code as _dataclass_code  # noqa: E402

_dataclass_code.install()  # before any module defines a dataclass: see rootrank.dataclass_code
