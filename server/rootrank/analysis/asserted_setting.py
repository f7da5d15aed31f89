"""A bare ``assert`` on the job's settings inside a settings-check function is a config error.

Mechanism: frameworks check the options they were started with in a function of an arguments
module or a ``validate*``/``check*``/``__post_init__`` function
(:data:`rootrank.analysis.prepare.ARGUMENT_CHECK_FRAME`, :data:`~rootrank.analysis.prepare.ARGUMENT_CHECK_FUNC`),
often with a bare ``assert`` on the parsed arguments (Megatron-LM's ``validate_args``:
``assert not args.<flag>`` under ``if args.<other>:``, two flags that do not go together).
The traceback quotes that statement, and the ``AssertionError`` has no message. A framework
run from a checkout has its frames read as the user's, yet the condition tests attributes of
the arguments object, not values the user's code computed: the values came from the command
line or the config, so the fix is an option of the launch, and the place to read is the
raising frame (the check), not the entry script's first frame.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.tracebacks import Frame

#: An ``assert`` whose condition reads attributes of a settings object: ``args.bf16``,
#: ``config.tp_size``, ``self.args.seq_len``, ``cfg.model.dim`` (group ``cond``).
_ASSERT_ON_SETTINGS = lazy_regex.compile(
    r"^assert\s+(?P<cond>.*?\b(?:args|config|cfg|conf|opts|options|hparams|settings)\.\w.*)$"
)
#: One attribute the condition reads (group ``name``): the last name of a dotted access on a
#: settings object.
_ATTRIBUTE = lazy_regex.compile(
    r"\b(?:args|config|cfg|conf|opts|options|hparams|settings)\.(?:\w+\.)*?(?P<name>[A-Za-z_]\w*)\b(?!\s*\()"
)


def asserted_settings(frames: list[Frame]) -> dict[str, str] | None:
    """``{"asserted": <the assert statement>, "options": "--a, --b"}`` when the innermost of
    ``frames`` quotes an ``assert`` on a settings object's attributes (:data:`_ASSERT_ON_SETTINGS`),
    each attribute written as the command-line option of that name; ``None`` otherwise (no
    frame, no quoted code, an assert on computed values)."""
    if not frames:
        return None
    code = frames[-1].code.strip()
    m = _ASSERT_ON_SETTINGS.match(code)
    if m is None:
        return None
    names: list[str] = []
    for a in _ATTRIBUTE.finditer(m.group("cond").split(",", 1)[0]):
        if a.group("name") not in names:
            names.append(a.group("name"))
    if not names:
        return None
    return {"asserted": code, "options": ", ".join(_flag(n) for n in names)}


def _flag(name: str) -> str:
    """The command-line option of the attribute ``name``: argparse stores ``--pin-memory`` as
    ``pin_memory``, while other parsers (HfArgumentParser) keep the underscores, so a name with
    an underscore gets both spellings."""
    if "_" not in name:
        return f"--{name}"
    return f"--{name.replace('_', '-')} (--{name})"
