"""A verify that runs without the job's launch, for a log that shows none.

A verify built on a stand-in launch (``torchrun --nproc-per-node=gpu <train.py>``, ``<your
launch command>``) cannot be run as given when the log never shows how the job was started:
the user has to rebuild the command first. The failure class's own check
(:func:`rootrank.taxonomy.class_check`: a versions print, a device or memory query, the
installed packages the traceback runs through) runs as it is, on the machine, and shows
the cause or that the fix took."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rootrank import lazy_regex
from rootrank.taxonomy import class_check

if TYPE_CHECKING:
    from rootrank.entry.commands import Launch

#: A stand-in for the job's launch left in a verify (the script, the whole command).
_LAUNCH_BLANK = lazy_regex.compile(r"<(?:train\.py|train|your launch command|script)>")
#: Any blank the user has to fill (``<module that defines it>``, ``<checkpoint file>``).
_BLANK = lazy_regex.compile(r"<[A-Za-z][^<>\n]{0,60}>")
#: An installed package's top-level directory in a traceback frame's path.
_PACKAGE_DIR = lazy_regex.compile(r"[/\\](?:site|dist)-packages[/\\](?P<p>[A-Za-z_][\w]*)[/\\]")
#: A setting the verify's command makes before its launch (``NCCL_NET_GDR_LEVEL=LOC``): the
#: fix itself, which the class's check would drop; the debug switches are not.
_SETTING = lazy_regex.compile(
    r"(?:^|\s)(?!NCCL_DEBUG(?:_SUBSYS)?=|TORCH_DISTRIBUTED_DEBUG=)[A-Z][A-Z0-9_]*=\S"
)
#: A field a verify's template fills from the log (``{seqnum}``, ``{iteration}``).
_FIELD = lazy_regex.compile(r"\{[a-z_]+\}")
#: The most packages a check names.
MAX_PACKAGES = 6


def traceback_packages(files: Iterable[str]) -> list[str]:
    """The installed packages (top-level directories under ``site-packages`` /
    ``dist-packages``) the frames' ``files`` run through, innermost last, each once, at most
    :data:`MAX_PACKAGES` (the innermost kept)."""
    found: list[str] = []
    for path in files:
        m = _PACKAGE_DIR.search(path)
        if m is not None and m["p"] not in found:
            found.append(m["p"])
    return found[-MAX_PACKAGES:]


def _blanks(command: str) -> int:
    """How many blanks (:data:`_BLANK`) the command part of a verify (before its ``  #``
    comment) holds."""
    return len(_BLANK.findall(command.partition("  # ")[0]))


def standalone_verify(
    verify: str, template: str, launch: Launch, failure_class: str, packages: list[str]
) -> str:
    """``verify``, or the class's standalone check when the check has fewer blanks to fill
    than ``verify``'s command and either

    - the check names the packages the traceback runs through (``{packages}``, filled from
      ``packages``: it needs no blank), or
    - ``verify`` is a bare stand-in for a launch the log does not show: it holds a launch
      blank (:data:`_LAUNCH_BLANK`), the log shows no launch command, framework entry or
      launcher (:class:`~rootrank.entry.commands.Launch`: ``command``, ``entry``,
      ``launcher`` unless assumed), its command makes no setting of the fix
      (:data:`_SETTING`) and its ``template`` fills no field from the log (:data:`_FIELD`):
      such a verify says nothing the check does not.

    ``verify`` when the class has no check."""
    check = class_check(failure_class)
    if "{packages}" in check:
        check = check.replace("{packages}", " ".join(packages)) if packages else ""
        if check and _blanks(verify) > _blanks(check):
            return check
        return verify
    command = verify.partition("  # ")[0]
    bare = (
        launch.command is None
        and launch.entry is None
        and (launch.launcher is None or launch.launcher_assumed)
        and _LAUNCH_BLANK.search(command) is not None
        and _SETTING.search(command) is None
        and _FIELD.search(template) is None
    )
    if check and bare and _blanks(verify) > _blanks(check):
        return check
    return verify
