"""Code actions name only commands the client can carry out (pytest-lsp over real stdio).

A command in a code action is run by the client when it knows the id, otherwise sent back to
the server as ``workspace/executeCommand``. ``rootrank.copyVerifyCommand``,
``rootrank.runVerifyCommand`` and ``rootrank.openEntry`` exist only in the VS Code extension,
so another editor (Neovim, Emacs) would list actions that do nothing. The same root-cause
diagnostic is asked for its actions by a generic client (Neovim's recorded capabilities, no
``clientCommands``) and by the VS Code client (its capabilities plus the ``clientCommands``
the extension sends, read from ``extension/src/clientCommands.ts``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from lsp_client import (
    EXTENSION_COMMANDS,
    FIXTURES,
    LOG,
    command_of,
    copy_workspace,
    extension_client_commands,
    open_document,
    started,
    wait_for_diagnostics,
)
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from rootrank.lsp.actions import CLIENT_COMMANDS

OPTIONS = {"signatureFolders": [str(FIXTURES / "signatures")]}
ROOT_LINE = 12  # 0-based line of "RuntimeError: Expected to have finished reduction ..."
WATCHDOG_LINE = 14  # rank 0's first watchdog line (collateral)
FIX_TITLE = "Pass find_unused_parameters=True to DistributedDataParallel"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_workspace(tmp_path)


async def actions_on(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction | types.Command]:
    return list(
        await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        or []
    )


async def root_and_collateral_actions(
    workspace: Path, options: dict[str, object], capabilities: types.ClientCapabilities
) -> tuple[list[types.CodeAction | types.Command], list[types.CodeAction | types.Command]]:
    """The actions offered on the root cause's and on rank 0's collateral diagnostic."""
    async with started(workspace, options, client_capabilities=capabilities) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        watchdog = next(d for d in diagnostics if d.range.start.line == WATCHDOG_LINE)
        assert root.range.start.line == ROOT_LINE
        return await actions_on(client, uri, root), await actions_on(client, uri, watchdog)


def commands(actions: list[types.CodeAction | types.Command]) -> list[str]:
    return [command_of(a)[0] for a in actions if getattr(a, "edit", None) is None]


def edits(actions: list[types.CodeAction | types.Command]) -> list[str]:
    return [a.title for a in actions if getattr(a, "edit", None) is not None]


def test_the_extension_lists_exactly_the_client_side_commands() -> None:
    """The ids the extension sends are the ones the server holds back (one list each side)."""
    assert set(extension_client_commands()) == CLIENT_COMMANDS
    assert len(extension_client_commands()) == 3
    # and activate() registers each of them (by the constants of clientCommands.ts)
    extension = (EXTENSION_COMMANDS.parent / "extension.ts").read_text(encoding="utf-8")
    for name in ("COPY_VERIFY", "RUN_VERIFY", "OPEN_ENTRY"):
        assert re.search(rf"registerCommand\({name},", extension), name


async def test_generic_client_gets_only_actions_it_can_run(workspace: Path) -> None:
    """Neovim 0.11 (window/showDocument supported, no clientCommands): the edit and the
    server's own "go to the first error", nothing that only VS Code implements."""
    root, collateral = await root_and_collateral_actions(
        workspace, OPTIONS, client_capabilities("neovim@v0.11.0")
    )
    assert edits(root) == [FIX_TITLE]
    assert commands(root) == []
    assert [(command_of(a)[0], a.title) for a in collateral] == [
        ("rootrank.showLocation", "Go to rank 2's first error")
    ]
    (target_uri, target_range) = command_of(collateral[0])[1]
    assert target_uri.endswith("/logs/" + LOG) and target_range["start"]["line"] == ROOT_LINE


async def test_client_without_show_document_gets_only_edits(workspace: Path) -> None:
    """Neovim 0.8 (Debian 12 ships 0.7; neither supports window/showDocument): the
    jump would do nothing either, so only the quick-fix edit remains."""
    root, collateral = await root_and_collateral_actions(
        workspace, OPTIONS, client_capabilities("neovim@v0.8.0")
    )
    assert edits(root) == [FIX_TITLE]
    assert commands(root) == [] and collateral == []


async def test_vscode_client_gets_its_commands(workspace: Path) -> None:
    """VS Code with the extension's clientCommands: the edit, copy/run the verification
    command and open the entry on the root cause; the jump on the collateral line."""
    options = {**OPTIONS, "clientCommands": extension_client_commands()}
    root, collateral = await root_and_collateral_actions(
        workspace, options, client_capabilities("visual-studio-code")
    )
    assert edits(root) == [FIX_TITLE]
    assert commands(root) == [
        "rootrank.copyVerifyCommand",
        "rootrank.runVerifyCommand",
        "rootrank.openEntry",
    ]
    by_command = {command_of(a)[0]: command_of(a)[1] for a in root}
    assert by_command["rootrank.openEntry"] == ["ddp-unused-parameters"]
    assert by_command["rootrank.copyVerifyCommand"][0].startswith(
        "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun"
    )
    assert commands(collateral) == [
        "rootrank.copyVerifyCommand",
        "rootrank.runVerifyCommand",
        "rootrank.openEntry",
        "rootrank.showLocation",
    ]


async def test_nested_settings_shape_and_unknown_ids(workspace: Path) -> None:
    """The ``{"rootrank": {...}}`` shape Neovim users write is read too; an id the server
    does not name in actions changes nothing."""
    options = {"rootrank": {**OPTIONS, "clientCommands": ["rootrank.openEntry", "editor.foo"]}}
    root, _ = await root_and_collateral_actions(
        workspace, options, client_capabilities("neovim@v0.11.0")
    )
    assert commands(root) == ["rootrank.openEntry"]


async def test_a_verify_with_blanks_is_typed_not_run(workspace: Path, tmp_path: Path) -> None:
    """A verification command with a blank the log cannot fill (here the entry's
    ``--max-steps <failing step + 10>``): the action titles say it is to be filled in
    (new-user trial r20 finding 7: "Run" would have run a ``<blank>`` as a shell redirect).
    The process count is no blank: the log does not say how many GPUs, so torchrun's own
    ``--nproc-per-node=gpu`` stands in."""
    folder = tmp_path / "signatures"
    shutil.copytree(FIXTURES / "signatures", folder)
    entry = folder / "parallel" / "ddp-unused-parameters.yaml"
    text = entry.read_text(encoding="utf-8")
    entry.write_text(
        text.replace(" train.py  # no", " train.py --max-steps <failing step + 10>  # no"),
        encoding="utf-8",
    )
    options = {"signatureFolders": [str(folder)], "clientCommands": extension_client_commands()}
    root, _ = await root_and_collateral_actions(
        workspace, options, client_capabilities("visual-studio-code")
    )
    titles = {command_of(a)[0]: a.title for a in root if a.command is not None}
    assert titles["rootrank.copyVerifyCommand"] == (
        "Copy the verification command (ddp-unused-parameters; fill in <failing step + 10>)"
    )
    assert titles["rootrank.runVerifyCommand"] == (
        "Type the verification command into a terminal (fill in <failing step + 10>, then run it)"
    )
