"""Values read from an exception's own message: the two numbers of a divisibility check (``global batch 25 not divisible by
world size 3``), and what would make it hold.

An ``assert a % b == 0, f"... {a} ... not divisible by ... {b}"`` names both values in its
message: the fix is then arithmetic on them, not "log the values": the nearest multiples of
``b`` around ``a`` (change the size) and the counts near ``b`` that divide ``a`` (change the
number of processes or the split). And the path an OSError quotes (:func:`missing_path`),
for a check command that names it.
"""

from __future__ import annotations

import re

from rootrank import re_code

#: ``<n> ... not divisible by ... <d>`` / ``... is not a multiple of ...``: the first number
#: before the words and the first after them, each at most a short phrase away (a setting's
#: name: "global batch", "world size").
_NOT_DIVISIBLE = re_code.compile(
    r"(?<![\w.])(?P<n>\d{1,9})(?![\w.])[^\d\n]{0,60}?\b(?:is |are )?not (?:evenly )?"
    r"(?:divisible by|a multiple of)\b[^\d\n]{0,60}?(?<![\w.])(?P<d>\d{1,7})(?![\w.])",
    re.IGNORECASE,
)
#: Counts listed that divide the value (the nearest to the divisor first).
MAX_COUNTS = 2


def divisible_values(message: str) -> dict[str, str]:
    """``{"div_n", "div_d", "div_lower", "div_upper", "div_counts"}`` (strings) read from
    ``message`` (an exception's message) when it says ``<n> ... not divisible by ... <d>``
    with ``n`` not a multiple of ``d`` (``d`` >= 2): ``div_lower`` / ``div_upper`` the
    multiples of ``d`` either side of ``n`` (``div_lower`` at least ``d``), ``div_counts``
    the divisors of ``n`` nearest ``d`` other than ``n`` itself (``"1 or 5"``). Else ``{}``.
    Raises nothing."""
    m = _NOT_DIVISIBLE.search(message)
    if m is None:
        return {}
    n, d = int(m["n"]), int(m["d"])
    if d < 2 or n < 1 or n % d == 0:
        return {}
    lower = max(n // d * d, d)
    upper = (n // d + 1) * d
    divisors = [k for k in range(1, min(n, 4 * d + 8) + 1) if n % k == 0 and k != n]
    near = sorted(divisors, key=lambda k: (abs(k - d), k))[:MAX_COUNTS]
    counts = " or ".join(str(k) for k in sorted(near)) if near else "1"
    return {
        "div_n": str(n),
        "div_d": str(d),
        "div_lower": str(lower),
        "div_upper": str(upper),
        "div_counts": counts,
    }


#: The path an ``OSError`` subclass quotes after its errno text (``[Errno 2] No such file or
#: directory: '/data/x.json'``, ``[Errno 21] Is a directory: 'out'``; CPython's
#: ``OSError.__str__``: ``[Errno N] strerror: 'filename'``).
_ERRNO_PATH = re_code.compile(r"\[Errno \d+\] [^:\n]{1,60}: '(?P<path>[^'\n]{1,300})'")


def missing_path(message: str) -> dict[str, str]:
    """``{"missing_path": path}`` when ``message`` (an exception's message) is an
    ``OSError``'s ``[Errno N] text: 'path'``, else ``{}``: a check command can then name
    the path itself. Raises nothing."""
    m = _ERRNO_PATH.search(message)
    return {"missing_path": m["path"]} if m else {}
