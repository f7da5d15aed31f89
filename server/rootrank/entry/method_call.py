"""The method call a traceback's raising frame was reached by (``d.collate([1, 2])``).

A bare ``raise NotImplementedError`` in a method is how a base class marks a method every
subclass must implement (Python's documentation of ``NotImplementedError``: "In user defined
base classes, abstract methods should raise this exception when they require derived classes
to override the method"). When the frame one up quotes a call of that very method on an
object (``<expr>.<func>(``), the object's class inherited the base's placeholder: the fix is
to implement the method in that subclass, not to add a branch to a dispatcher.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rootrank import regex_code

if TYPE_CHECKING:
    from rootrank.tracebacks import Frame


def method_call(frames: Sequence[Frame], masker: Any = None) -> dict[str, str]:
    """``{"method": func, "method_call": code, "method_call_at": "file:line"}`` when the
    innermost frame of ``frames`` (a traceback's, outermost first) is a function ``func``
    and the frame above it quotes a call ``<name>.<func>(`` (a method called on an object);
    else ``{}``. ``masker`` (a :class:`rootrank.mask.Masker` or ``None``) masks the code and
    the path as the report shows them. Raises nothing."""
    if len(frames) < 2:
        return {}
    last, caller = frames[-1], frames[-2]
    func = last.func or ""
    code = caller.code or ""
    if not func.isidentifier() or not code:
        return {}
    if regex_code.search(r"[\w\])]\." + func + r"\s*\(", code) is None:
        return {}
    at = f"{caller.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{caller.line}"
    if masker is not None:
        code, at = masker.text(code), masker.text(at)
    return {"method": func, "method_call": code, "method_call_at": at}
