"""The server's settings, read from ``initializationOptions`` and
``workspace/didChangeConfiguration``.

Accepted shapes (the extension sends the first; Neovim users often write the second)::

    {"signatureFolders": [...], "mask": true, "documentGlobs": [...]}
    {"rootrank": {"signatureFolders": [...], "mask": true, "documentGlobs": [...]}}

Unknown keys are ignored; a key of the wrong type keeps its previous value and is
reported in ``Settings.problems``.

``initializationOptions`` may also say which of the server's client-side commands the
client implements (:func:`client_commands`); that is the client's, not a setting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from .documents import DEFAULT_GLOBS


@dataclass(frozen=True, slots=True)
class Settings:
    """What the client can set.

    Attributes:
        signature_folders: extra signature folders (a team's own), absolute or relative
            to the first workspace folder; ``~`` is expanded.
        mask: mask personal data (user names, hosts, IPs) in results; on by default.
        document_globs: file-name globs of the documents that are diagnosed (an empty
            list sent by the client means :data:`DEFAULT_GLOBS`).
        problems: messages about values that were ignored.
    """

    signature_folders: tuple[str, ...] = ()
    mask: bool = True
    document_globs: tuple[str, ...] = DEFAULT_GLOBS
    problems: tuple[str, ...] = field(default=(), compare=False)

    def updated(self, raw: Any, root: str | None = None) -> Settings:
        """A copy with the values found in ``raw`` (either accepted shape) applied.

        ``root`` is the directory that relative signature folders are resolved against.
        """
        if isinstance(raw, dict) and isinstance(raw.get("rootrank"), dict):
            raw = raw["rootrank"]
        if not isinstance(raw, dict):
            return replace(self, problems=())
        problems: list[str] = []
        new = replace(self, problems=())
        folders = raw.get("signatureFolders", raw.get("extraSignatureFolders"))
        if folders is not None:
            if isinstance(folders, list) and all(isinstance(f, str) for f in folders):
                new = replace(new, signature_folders=tuple(_resolve(f, root) for f in folders))
            else:
                problems.append("rootrank.signatureFolders must be a list of folder paths")
        if "mask" in raw:
            if isinstance(raw["mask"], bool):
                new = replace(new, mask=raw["mask"])
            else:
                problems.append("rootrank.mask must be true or false")
        globs = raw.get("documentGlobs")
        if globs is not None:
            if isinstance(globs, list) and not globs:
                new = replace(new, document_globs=DEFAULT_GLOBS)  # an unset list means the defaults
            elif isinstance(globs, list) and all(isinstance(g, str) and g for g in globs):
                new = replace(new, document_globs=tuple(globs))
            else:
                problems.append("rootrank.documentGlobs must be a list of glob strings")
        return replace(new, problems=tuple(problems))


def _resolve(folder: str, root: str | None) -> str:
    path = os.path.expanduser(os.path.expandvars(folder))
    if not os.path.isabs(path) and root:
        path = os.path.join(root, path)
    return os.path.normpath(path)


def client_commands(raw: Any) -> frozenset[str]:
    """The command ids a client says it implements itself, from ``initializationOptions``
    (``{"clientCommands": [...]}``, also inside ``{"rootrank": {...}}``); empty when absent
    or not a list (a generic LSP client sends none).

    LSP has no capability for "I implement command X": a ``Command`` in a code action is run
    by the client if it knows the id, else sent back to the server as
    ``workspace/executeCommand``. The VS Code extension registers
    ``rootrank.copyVerifyCommand``, ``rootrank.runVerifyCommand`` and ``rootrank.openEntry``
    and lists them here (``extension/src/clientCommands.ts``).
    """
    if isinstance(raw, dict) and isinstance(raw.get("rootrank"), dict):
        raw = raw["rootrank"]
    listed = raw.get("clientCommands") if isinstance(raw, dict) else None
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(c for c in listed if isinstance(c, str))
