"""Module-level patterns compiled on first use, not at import.

The ``regex`` module parses a pattern in Python: compiling the engine's ~150 module-level
patterns at import took ~130 ms of every ``rootrank`` start (measured with ``python -X
importtime``; masking alone ~84 ms), while a short log uses a few dozen of them. A module
writes ``_X = lazy_regex.compile(r"...")`` instead of ``regex.compile``: the object answers
``search``, ``match``, ``sub``... exactly as the compiled ``regex.Pattern`` does, because it
is that pattern's methods, fetched once on the first use and kept on the instance (later
calls cost one attribute lookup, as on the pattern itself). The pattern is made by
:func:`rootrank.regex_code.compile` (parsed when the package was built, where it was).

:func:`compile_all` compiles every pattern made so far (the eager path of the equivalence
test, ``tests/test_startup_equivalence.py``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

from rootrank import regex_code

if TYPE_CHECKING:  # the type only: importing ``regex`` is what rootrank.regex_code avoids
    import regex

#: The attributes copied from the compiled pattern on first use (any other one is forwarded).
_COPIED = (
    "search",
    "match",
    "fullmatch",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "splititer",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)

_made: list[LazyPattern] = []
_lock = threading.Lock()


class LazyPattern:
    """A ``regex`` pattern compiled on its first use (see the module's docstring).

    Raises on first use whatever ``regex.compile`` raises (``regex.error``): the engine's
    patterns are compiled by the test suite, so that is a bug, never a user's error.
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.__dict__["_source"] = (pattern, flags)

    def compiled(self) -> Any:
        """The compiled ``regex.Pattern`` (compiled now if it was not yet)."""
        done = self.__dict__.get("_compiled")
        if done is None:
            pattern, flags = self.__dict__["_source"]
            done = regex_code.compile(pattern, flags)
            for name in _COPIED:
                self.__dict__[name] = getattr(done, name)
            self.__dict__["_compiled"] = done
        return done

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes not yet on the instance: the first use, or a rarely used
        # attribute of the pattern. Dunder lookups (copy, pickle probes) are not forwarded.
        if name.startswith("__") or "_source" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        pattern, flags = self.__dict__["_source"]
        return f"lazy_regex.compile({pattern!r}, {flags})"


def compile(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """A pattern compiled on first use, typed as the ``regex.Pattern`` it stands for (it has
    the same methods and attributes)."""
    lazy = LazyPattern(pattern, flags)
    with _lock:
        _made.append(lazy)
    return cast("regex.Pattern[str]", lazy)


def compile_all() -> int:
    """Compile every pattern made so far (returns how many there are)."""
    with _lock:
        made = list(_made)
    for lazy in made:
        lazy.compiled()
    return len(made)


def compiled_count() -> int:
    """How many of the patterns made so far have been compiled (for tests and benches)."""
    with _lock:
        return sum("_compiled" in lazy.__dict__ for lazy in _made)
