"""Code actions for rootrank diagnostics, including quick fixes from a signature's
``quickfix`` field.

The ``quickfix`` field (optional, proposed for the signature schema) is one mapping or a
list of them::

    quickfix:
      title: "Pass find_unused_parameters=True to DistributedDataParallel"
      find: 'DistributedDataParallel\\((?P<args>.*)\\)'   # regex (``regex`` module), per line
      replace: 'DistributedDataParallel(\\g<args>, find_unused_parameters=True)'
      files: ["**/*.py"]          # optional, workspace-relative globs; default ["**/*.py"]
      skip_if: 'find_unused_parameters\\s*=\\s*True'   # optional: the fix is already there

``replace`` is a ``Match.expand`` template (``\\g<name>``, ``\\g<0>``, ``\\n``) whose
``{capture}`` placeholders (``{rank}``, ``{host}``, the finding's captures) are filled
first. Files are searched in this order: the files the root cause's traceback frames
(``root_cause.frames``) point at, when they map into a workspace folder; then the other
workspace files matching ``files``. The first line that matches gives the one edit. A
file outside every workspace folder is never edited (paths are resolved with
``os.path.realpath`` before the check).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
from lsprotocol import types
from pygls.uris import from_fs_path

from rootrank.entry.frames import IN_NOTEBOOK
from rootrank.report import unfilled_placeholders
from rootrank.signatures import Library, Signature

from .diagnostics import SOURCE, Analysis
from .documents import DocumentStore, split_lines, strip_break
from .hover import render_template, template_values, verify_command
from .positions import to_client_units

#: Client-side commands the server can name in code actions; only a client that implements
#: them (the VS Code extension, ``extension/src/clientCommands.ts``) runs them, so they are
#: offered only to a client that lists them in ``initializationOptions.clientCommands``
#: (the server never runs a verification command itself).
COPY_VERIFY = "rootrank.copyVerifyCommand"
RUN_VERIFY = "rootrank.runVerifyCommand"
OPEN_ENTRY = "rootrank.openEntry"
CLIENT_COMMANDS = frozenset({COPY_VERIFY, RUN_VERIFY, OPEN_ENTRY})
#: Server-side command: asks the client to show a location (``window/showDocument``).
SHOW_LOCATION = "rootrank.showLocation"

_SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    "site-packages",
}
MAX_FILES = 5000
MAX_FILE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class QuickFix:
    """One validated ``quickfix`` entry of a signature."""

    title: str
    find: Any  # compiled regex
    replace: str
    files: tuple[str, ...]
    skip_if: Any | None


def quickfixes(signature: Signature) -> tuple[list[QuickFix], list[str]]:
    """The signature's ``quickfix`` entries, and problems (``"<file>: quickfix[i].<field>: ..."``)."""
    raw = signature.data.get("quickfix")
    if raw is None:
        return [], []
    items = raw if isinstance(raw, list) else [raw]
    fixes: list[QuickFix] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        where = f"{signature.path}: quickfix[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be a mapping")
            continue
        try:
            title = item["title"]
            find = regex.compile(item["find"])
            replace = item["replace"]
            files = tuple(item.get("files") or ("**/*.py",))
            skip_if = regex.compile(item["skip_if"]) if item.get("skip_if") else None
        except KeyError as exc:
            problems.append(f"{where}.{exc.args[0]}: missing")
            continue
        except (regex.error, TypeError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        if not all(isinstance(v, str) for v in (title, replace, *files)):
            problems.append(f"{where}: title, replace and files must be text")
            continue
        fixes.append(QuickFix(title, find, replace, files, skip_if))
    return fixes, problems


def usable_commands(
    client_commands: frozenset[str], capabilities: types.ClientCapabilities | None
) -> frozenset[str]:
    """The commands a code action may carry for this client: an action whose command the
    client cannot carry out does nothing when chosen (Neovim sends a command it does not
    know to the server as ``workspace/executeCommand``, which answers that it has no such
    command), so it is not offered.

    ``client_commands`` are the ids the client said it implements
    (``initializationOptions.clientCommands``, see :func:`.settings.client_commands`); only
    those of :data:`CLIENT_COMMANDS` count. :data:`SHOW_LOCATION` is the server's own command
    but works through ``window/showDocument``, so it needs the client capability
    ``window.showDocument.support`` (LSP 3.16; VS Code and Neovim 0.9+ send it, Neovim
    0.7/0.8 and Emacs 29.1 do not, per the capabilities pytest-lsp records of each). Edits
    (``WorkspaceEdit``) need no command and are always offered.
    """
    usable = set(client_commands & CLIENT_COMMANDS)
    window = capabilities.window if capabilities is not None else None
    if window is not None and window.show_document is not None and window.show_document.support:
        usable.add(SHOW_LOCATION)
    return frozenset(usable)


def _matches(relative: str, globs: tuple[str, ...]) -> bool:
    for glob in globs:
        if fnmatch.fnmatchcase(relative, glob):
            return True
        if glob.startswith("**/") and fnmatch.fnmatchcase(relative, glob[3:]):
            return True
    return False


def _inside(path: str, roots: list[str]) -> str | None:
    """The root that ``path`` (resolved) lies in, or ``None``."""
    real = os.path.realpath(path)
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


def workspace_files(roots: list[str]) -> list[str]:
    """Files under the workspace folders (bounded by :data:`MAX_FILES`; tool and VCS
    folders skipped; symbolic links not followed)."""
    found: list[str] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                found.append(os.path.join(dirpath, name))
                if len(found) >= MAX_FILES:
                    return found
    return found


def frame_files(
    frames: list[dict[str, Any]], roots: list[str], files: list[str]
) -> list[tuple[str, int]]:
    """Map the user's traceback frames (innermost first) onto workspace files:
    ``(path, 1-based line)``. ``frames`` are the engine's ``root_cause.frames``
    (``{file, line, func, user}``, outermost first, as Python prints them).

    A frame path that exists inside a workspace folder is used as is; otherwise (a log
    from another machine) the longest path suffix that names a workspace file wins.
    """
    mapped: list[tuple[str, int]] = []
    for frame in reversed(frames):
        if frame.get("user") is False:  # a library or Python frame: never the user's file
            continue
        file = str(frame.get("file") or "")
        line = int(frame.get("line") or 1)
        if not file:
            continue
        if os.path.isabs(file) and os.path.isfile(file) and _inside(file, roots):
            mapped.append((os.path.realpath(file), line))
            continue
        parts = Path(file.replace("\\", "/")).parts
        for start in range(len(parts)):
            suffix = os.sep + os.path.join(*parts[start:])
            hit = next((f for f in files if f.endswith(suffix)), None)
            if hit:
                mapped.append((os.path.realpath(hit), line))
                break
    return mapped


def _source_lines(path: str, documents: DocumentStore) -> list[str] | None:
    document = documents.get(from_fs_path(path) or "")
    if document is not None:
        return document.lines
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        return split_lines(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def find_edit(
    fix: QuickFix,
    values: dict[str, Any],
    candidates: list[str],
    documents: DocumentStore,
    encoding: str,
) -> tuple[str, types.TextEdit] | None:
    """The first edit ``fix`` makes in ``candidates`` (already checked to be inside the
    workspace), as ``(path, TextEdit)``, or ``None`` when its text is found nowhere."""
    template = render_template(fix.replace, values)
    for path in candidates:
        lines = _source_lines(path, documents)
        if lines is None:
            continue
        if fix.skip_if is not None and any(fix.skip_if.search(line) for line in lines):
            continue
        for number, line in enumerate(lines):
            content = strip_break(line)
            match = fix.find.search(content)
            if match is None:
                continue
            try:
                new_text = match.expand(template)
            except (regex.error, IndexError):
                return None
            edit = types.TextEdit(
                range=types.Range(
                    start=types.Position(
                        line=number, character=to_client_units(content, match.start(), encoding)
                    ),
                    end=types.Position(
                        line=number, character=to_client_units(content, match.end(), encoding)
                    ),
                ),
                new_text=new_text,
            )
            return path, edit
    return None


def code_actions(
    params: types.CodeActionParams,
    analysis: Analysis | None,
    library: Library,
    documents: DocumentStore,
    roots: list[str],
    encoding: str,
    commands: frozenset[str],
) -> list[types.CodeAction]:
    """The actions for the rootrank diagnostics in ``params.context`` (others are ignored)
    that ``analysis`` published (same code and range): a diagnostic of an older version of
    the document (the client still shows it after an edit) names a finding the current
    text may no longer hold, so it gets no action.

    ``commands`` are the commands this client can carry out (:func:`usable_commands`): an
    action naming any other command is left out; quick-fix edits are always offered. A
    verification command with unfilled blanks (``<gpus>``) is offered to copy and to type into
    a terminal, its titles naming the blanks to fill in."""
    actions: list[types.CodeAction] = []
    published = analysis.diagnostics if analysis is not None else []
    ours = [
        d
        for d in params.context.diagnostics
        if d.source == SOURCE
        and d.code is not None
        and any(p.code == d.code and p.range == d.range for p in published)
    ]
    if not ours or analysis is None:
        return actions
    diagnosis = analysis.diagnosis
    root = diagnosis.get("root_cause") or {}
    roots = [os.path.realpath(r) for r in roots if os.path.isdir(r)]
    files: list[str] | None = None
    for diagnostic in ours:
        signature = library.get(str(diagnostic.code))
        if signature is None:
            continue
        finding = _finding_for(diagnostic, analysis)
        is_root = finding is root
        if is_root and roots:
            if files is None:
                files = workspace_files(roots)
            actions += _fix_actions(
                diagnostic,
                signature,
                finding,
                diagnosis,
                documents,
                roots,
                files,
                encoding,
                show_location=SHOW_LOCATION in commands,
            )
        verify = verify_command(signature, finding, diagnosis)
        offered: list[tuple[str, str, list[Any]]] = [
            (f"Copy the verification command ({signature.id})", COPY_VERIFY, [verify]),
            ("Run the verification command in a terminal", RUN_VERIFY, [verify]),
            (f"Open the full entry: {signature.title}", OPEN_ENTRY, [signature.id]),
        ]
        blanks = unfilled_placeholders(verify)
        if verify.startswith(IN_NOTEBOOK):  # steps in a notebook, no shell command
            offered = [o for o in offered if o[1] != RUN_VERIFY]
        elif blanks:
            # blanks the log does not fill (``<train.py>`` run as it is would be a shell redirect:
            # new-user trial r20 finding 7): the extension's command types the line into a
            # terminal without running it (extension/src/actions.ts), and the titles say so
            fill = ", ".join(blanks)
            offered[0] = (
                f"Copy the verification command ({signature.id}; fill in {fill})",
                COPY_VERIFY,
                [verify],
            )
            offered[1] = (
                f"Type the verification command into a terminal (fill in {fill}, then run it)",
                RUN_VERIFY,
                [verify],
            )
        first = analysis.first_error
        if first is not None and first != diagnostic.range:
            rank = diagnosis.get("initiating_rank")
            label = (
                f"Go to rank {rank}'s first error" if rank is not None else "Go to the first error"
            )
            offered.append((label, SHOW_LOCATION, [analysis.uri, first]))
        actions += [
            _command_action(title, command, arguments, diagnostic)
            for title, command, arguments in offered
            if command in commands
        ]
    return actions


def _finding_for(diagnostic: types.Diagnostic, analysis: Analysis) -> dict[str, Any]:
    root = analysis.diagnosis.get("root_cause") or {}
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    if data.get("kind") == "root" or (
        not data and diagnostic.severity == types.DiagnosticSeverity.Error
    ):
        return root
    for entries in analysis.by_line.values():
        for at in entries:
            if at.finding.get("signature") == diagnostic.code and (
                not data or at.finding.get("rank") == data.get("rank")
            ):
                return at.finding
    return root


def _command_action(
    title: str, command: str, arguments: list[Any], diagnostic: types.Diagnostic
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        command=types.Command(title=title, command=command, arguments=arguments),
    )


def _fix_actions(
    diagnostic: types.Diagnostic,
    signature: Signature,
    finding: dict[str, Any],
    diagnosis: dict[str, Any],
    documents: DocumentStore,
    roots: list[str],
    files: list[str],
    encoding: str,
    *,
    show_location: bool,
) -> list[types.CodeAction]:
    """The signature's quick-fix edits found in the workspace; when none is found, "Open the
    frame" of the innermost user frame (a :data:`SHOW_LOCATION` command: only when
    ``show_location``, the client can show a document)."""
    fixes, _problems = quickfixes(signature)
    frames = [f for f in finding.get("frames") or [] if isinstance(f, dict)]
    framed = frame_files(frames, roots, files)
    actions: list[types.CodeAction] = []
    values = template_values(finding, diagnosis)
    for fix in fixes:
        ordered: list[str] = []
        for path, _line in framed:
            root = _inside(path, roots)
            if (
                root
                and _matches(os.path.relpath(path, root).replace(os.sep, "/"), fix.files)
                and path not in ordered
            ):
                ordered.append(path)
        for path in files:
            root = _inside(path, roots)
            if root and _matches(os.path.relpath(path, root).replace(os.sep, "/"), fix.files):
                real = os.path.realpath(path)
                if real not in ordered and _inside(real, roots):
                    ordered.append(real)
        found = find_edit(fix, values, ordered, documents, encoding)
        if found is None:
            continue
        path, edit = found
        uri = from_fs_path(path) or path
        actions.append(
            types.CodeAction(
                title=fix.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=True,
                edit=types.WorkspaceEdit(changes={uri: [edit]}),
            )
        )
    if not actions and framed and show_location:
        path, line = framed[0]
        name = os.path.relpath(path, _inside(path, roots) or os.path.dirname(path))
        location = types.Range(
            start=types.Position(line=max(0, line - 1), character=0),
            end=types.Position(line=max(0, line - 1), character=0),
        )
        actions.append(
            _command_action(
                f"Open the frame {name}:{line}",
                SHOW_LOCATION,
                [from_fs_path(path), location],
                diagnostic,
            )
        )
    return actions
