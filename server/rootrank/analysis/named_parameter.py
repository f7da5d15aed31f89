"""A library's check whose message names a parameter to set is a config error: set it.

Mechanism: a framework checks the settings it was given before it starts (Hugging Face's
``Trainer.__init__``: "The train_dataset does not implement __len__, max_steps has to be
specified"; "please set <name>"; "<name> is required") and raises from its own code with the
parameter's name in the message. The user's code above it only built the settings object
and handed it over, so the fix is the named parameter in the training arguments or config,
not the user's line the traceback passes through; a printed ``<name>=<value>`` (an
arguments dump) shows the value the run had.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.scan import ScanState
from rootrank.tracebacks import Frame

#: A message that asks for a parameter to be given a value (group ``name``: a snake_case
#: identifier, or ``--name``): "<name> has to be specified", "<name> must be set", "please set
#: <name>", "you must specify <name>", torch's OneCycleLR "You must define either total_steps OR
#: ...", "<name> is required".
NAMED_PARAMETER = lazy_regex.compile(
    r"(?i)(?:^|[\s,.;:(`'\"])(?:--)?(?P<name>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)[`'\"]?\s+"
    r"(?:has|have|needs?|must|should)\s+(?:to\s+)?be\s+(?:specified|set|given|provided|passed|defined)"
    r"|(?:please|you\s+(?:must|need\s+to|have\s+to|should))\s+(?:set|specify|provide|pass|define)\s+(?:either\s+)?"
    r"[`'\"]?(?:--)?(?P<name2>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
    r"|(?:^|[\s,.;:(`'\"])(?:--)?(?P<name3>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)[`'\"]?\s+is\s+required"
)
#: Most characters of the log's start searched for the printed value.
_SEARCH_CHARS = 1 << 20


def named_parameter(frames: list[Frame], message: str, state: ScanState) -> dict[str, str] | None:
    """``{"parameter": <name>, "printed": <sentence or "">}`` when the innermost of ``frames``
    is a library's (not the user's) and ``message`` asks for a parameter by name
    (:data:`NAMED_PARAMETER`); ``printed`` quotes the log's ``<name>=<value>`` line when the
    run printed its settings (``max_steps=-1,``). ``None`` otherwise."""
    if not frames or frames[-1].user:
        return None
    m = NAMED_PARAMETER.search(message)
    if m is None:
        return None
    name = m.group("name") or m.group("name2") or m.group("name3")
    return {"parameter": name, "printed": _printed(state, name)}


def _printed(state: ScanState, name: str) -> str:
    """`` (this run printed name=value on line N)`` for the first line of the log's start
    that sets ``name`` (``name=value`` or ``"name": value``), else ``""``."""
    rx = lazy_regex.compile(
        r"(?m)^[^\n]{0,200}?(?<![\w-])['\"]?" + name + r"['\"]?\s*[=:]\s*(?P<value>[^\s,)}]{1,60})"
    )
    for _src, first, text in state.heads:
        m = rx.search(text[:_SEARCH_CHARS])
        if m is not None and "Error" not in m.group(0):
            line = first + text.count("\n", 0, m.start())
            return f" (this run printed {name}={m.group('value')} on line {line})"
    return ""
