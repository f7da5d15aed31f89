"""The launch option a framework's refusal names (for ``library-argument-check-failed``).

Mechanism: a framework that refuses a feature for this model or setup
(``ValueError: Template `x` does not support padding free or packing``, ``... does not
support sequence parallel``) often raises from its own set-up code (a ``_prepare_*`` step of
its pipeline), not from a settings check of an arguments module
(rootrank.analysis.prepare._settings_check reads those). When no frame of the traceback is
the user's (the entry script is the framework's own CLI) and the message names, in words, an
option the job was started with (``--padding_free true`` -> "padding free"), the value came
from that command line: the option is what to change, not code the user wrote.

An option is matched by its words only when it has two words or more (``padding_free``,
``sequence-parallel-size``): a one-word option (``--model``, ``--template``, ``--dataset``)
names a thing every message of that framework may mention. The longest option the message
names wins (``--padding_free`` over ``--padding``).
"""

from __future__ import annotations

from rootrank import lazy_regex

#: One ``--option value`` (or ``--option=value``) of a printed command; the value is the next
#: word when it does not start another option (a switch has none).
_OPTION = lazy_regex.compile(
    r"(?:^|\s)--(?P<name>[A-Za-z][\w-]{2,60})(?:[= ](?P<value>(?!--)[^\s`'\"]{1,200}))?"
)
#: A word of a message or an option's name (``_`` and ``-`` separate words).
_WORD = lazy_regex.compile(r"[A-Za-z0-9]+")

#: The fewest words an option's name needs to be matched in a message (see the module).
MIN_WORDS = 2


def named_option(message: str, command: str | None) -> tuple[str, str] | None:
    """``(option, value)`` of the option of ``command`` (a printed launch command, or
    ``None``) whose words ``message`` names in order (the module's docstring), whether the
    message writes them apart, with ``_`` or with ``-``: ``("--padding_free", "true")``; the
    value is ``""`` for a switch. ``None`` when ``command`` is ``None`` or no option of two or
    more words is named."""
    if not command or not message:
        return None
    said = [w.lower() for w in _WORD.findall(message)]
    best: tuple[str, str] | None = None
    size = 0
    for m in _OPTION.finditer(command):
        name = m.group("name")
        words = [w.lower() for w in _WORD.findall(name)]
        if len(words) < MIN_WORDS or len(name) <= size:
            continue
        n = len(words)
        if any(said[i : i + n] == words for i in range(len(said) - n + 1)):
            best = (f"--{name}", m.group("value") or "")
            size = len(name)
    return best
