"""Standard-library modules a ``rootrank`` start imports without needing them, loaded on first
use instead.

Two modules are imported at every start only because another standard module imports them at
its top, for a path a diagnosis does not take (CPU, Python 3.11, a 2-core machine):

- ``inspect`` (with ``ast``, ``dis``, ``tokenize``, ``linecache``: ~8 ms), imported by
  ``dataclasses``, which calls ``inspect.signature`` only to write a docstring for a class
  that has none (every rootrank dataclass has one);
- ``ipaddress`` (~3 ms), imported by ``urllib.parse`` (itself imported by ``pathlib``),
  which calls it only to check a bracketed host in a URL.

:func:`defer` puts a stand-in module under such a name in :data:`sys.modules` before those
importers run; ``import inspect`` then binds the stand-in, and the first attribute read from it
(``inspect.signature``, ``from inspect import ...``) imports the real module and reads the
attribute from there. Code that never reads one never pays for it; code that does gets the
real module's attribute (the real module then stands in :data:`sys.modules`).
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from types import ModuleType

#: The modules :mod:`rootrank` defers (see the module's docstring for why each).
DEFERRED = ("inspect", "ipaddress")


class _Deferred(ModuleType):
    """A stand-in for the module of its name: reading any attribute it does not hold imports
    the real module (once) and returns the real module's attribute."""

    def __getattr__(self, attr: str) -> object:
        name = self.__name__
        real = sys.modules.get(name)
        if real is None or isinstance(real, _Deferred):
            sys.modules.pop(name, None)
            __import__(name)
            real = sys.modules[name]
        return getattr(real, attr)


def defer(*names: str) -> list[str]:
    """Put a stand-in for each top-level module of ``names`` that is not imported yet in
    :data:`sys.modules`. Returns the names deferred (those already imported, and those the
    path finder does not find, are left alone).

    The stand-in holds the real module's spec as its ``__spec__``, which is what the import
    system reads of a module it finds in :data:`sys.modules` (``_initializing``, unset), so
    ``import name`` binds it without loading anything, and
    :func:`importlib.util.find_spec` answers for it as for the real module."""
    done = []
    for name in names:
        if name in sys.modules:
            continue
        spec = PathFinder.find_spec(name)
        if spec is None:
            continue
        stub = _Deferred(name)
        del stub.__doc__  # read through to the real module's
        stub.__spec__ = spec
        sys.modules[name] = stub
        done.append(name)
    return done
