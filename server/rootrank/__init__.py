"""rootrank: find the root cause and the initiating rank of a failed multi-GPU training run.

The engine reads logs locally and never opens a network connection. Entry points:
:func:`rootrank.engine.diagnose_paths`, :func:`rootrank.engine.diagnose_text` and the
``rootrank`` command (:mod:`rootrank.cli`).
"""

__version__ = "0.1.0"

from rootrank import dataclass_code as _dataclass_code

_dataclass_code.install()  # before any module defines a dataclass: see rootrank.dataclass_code
