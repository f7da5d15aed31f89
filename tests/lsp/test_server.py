"""End-to-end tests of the language server over real stdio (pytest-lsp)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_client import (
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
from pygls.uris import from_fs_path

from rootrank.entry.commands import UNSHOWN_LAUNCH_NOTE

SIGNATURES = str(FIXTURES / "signatures")
OPTIONS = {"signatureFolders": [SIGNATURES]}
#: What the VS Code extension sends (it also implements the client-side commands).
VSCODE_OPTIONS = {**OPTIONS, "clientCommands": extension_client_commands()}
ROOT_LINE = 12  # 0-based editor line of "RuntimeError: Expected to have finished reduction ..."
WATCHDOG_LINES = {0: 14, 1: 15, 3: 16}  # first watchdog line of each collateral rank


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the fixture workspace."""
    return copy_workspace(tmp_path)


def hover_params(uri: str, line: int) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=3),
    )


async def test_root_cause_and_collateral_diagnostics(workspace: Path) -> None:
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)

    root = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    assert len(root) == 1
    root_cause = root[0]
    assert root_cause.code == "ddp-unused-parameters"
    assert root_cause.source == "rootrank"
    # The range covers the matched text, not the line: "[rank2]: RuntimeError: " is 23 characters.
    assert root_cause.range == types.Range(
        start=types.Position(line=ROOT_LINE, character=23),
        end=types.Position(line=ROOT_LINE, character=107),
    )
    assert "rank 2" in root_cause.message and "DDP found parameters" in root_cause.message
    assert root_cause.code_description is not None
    assert (
        root_cause.code_description.href
        == "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html"
    )
    # The root cause lists each collateral group once, at its earliest line.
    watchdog = "NCCL watchdog caught a collective operation timeout"
    related = [
        (r.location.range.start.line, r.message) for r in root_cause.related_information or []
    ]
    assert related == [(14, f"3 ranks (0, 1, 3): {watchdog} in ALLREDUCE SeqNum 118 (collateral)")]

    # One Information per collateral signature, on its earliest line (rank 0's first), listing
    # the root cause, then each rank's first watchdog line (ranks 0 and 3 printed it twice).
    collateral = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Information]
    assert len(collateral) == 1 and len(diagnostics) == 2
    (group,) = collateral
    assert group.code == "nccl-watchdog-timeout"
    assert group.range.start == types.Position(line=14, character=64)  # "[Rank 0] Watchdog caught"
    assert group.message == (
        f"{watchdog} on 3 ranks (0, 1, 3) (5 lines): collateral of DDP found parameters that"
        " received no gradient on rank 2"
    )
    assert group.data == {
        "signature": "nccl-watchdog-timeout",
        "rank": 0,
        "ranks": [0, 1, 3],
        "kind": "collateral",
    }
    back, *ranks = group.related_information or []
    assert back.location.uri == uri and back.location.range == root_cause.range
    assert back.message.startswith("root cause: DDP found parameters") and "(rank 2" in back.message
    assert [
        (r.location.range.start.line, r.location.range.start.character, r.message) for r in ranks
    ] == [
        (line, 64, f"rank {rank}: {watchdog} in ALLREDUCE SeqNum 118 (collateral)")
        for rank, line in WATCHDOG_LINES.items()
    ]


async def test_nothing_found_gives_no_diagnostics(workspace: Path) -> None:
    healthy = workspace / "logs" / "healthy.log"
    healthy.write_text(
        "".join(
            f"[rank{r}]: step {s} loss {2.0 - s / 100:.4f}\n" for s in range(50) for r in range(4)
        )
    )
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, healthy)
        assert await wait_for_diagnostics(client, uri) == []
        assert await client.text_document_hover_async(hover_params(uri, 3)) is None


async def test_hover_shows_the_entry_fast(workspace: Path) -> None:
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        await wait_for_diagnostics(client, uri)
        hover = await client.text_document_hover_async(hover_params(uri, ROOT_LINE))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        text = hover.contents.value
        assert hover.contents.kind == types.MarkupKind.Markdown
        assert text.startswith("### DDP found parameters that received no gradient")
        assert "**Root cause**" in text and "rank **2**" in text
        for section in (
            "#### What happened",
            "#### Why",
            "#### Fix",
            "#### Confirm",
            "#### Verify",
        ):
            assert section in text
        assert "model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)" in text
        assert (
            "```sh\nTORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc-per-node=gpu train.py  # no 'Expected to have finished reduction' on rank 2"
            f" {UNSHOWN_LAUNCH_NOTE}\n```" in text
        )

        collateral = await client.text_document_hover_async(hover_params(uri, WATCHDOG_LINES[3]))
        assert collateral is not None
        assert (
            "**Collateral**: explained by the root cause `ddp-unused-parameters` on rank 2"
            in collateral.contents.value
        )
        assert "rank **3**" in collateral.contents.value
        assert await client.text_document_hover_async(hover_params(uri, 1)) is None

        # Served from the per-version cache: the same entry again (latency: bench/lsp_bench.py).
        again = await client.text_document_hover_async(hover_params(uri, ROOT_LINE))
        assert again is not None and again.contents.value == hover.contents.value


async def test_quick_fix_edits_the_workspace_file(workspace: Path) -> None:
    async with started(workspace, VSCODE_OPTIONS) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=root.range,
                context=types.CodeActionContext(diagnostics=[root]),
            )
        )
        assert actions
        fixes = [a for a in actions if isinstance(a, types.CodeAction) and a.edit is not None]
        assert [a.title for a in fixes] == [
            "Pass find_unused_parameters=True to DistributedDataParallel"
        ]
        assert fixes[0].is_preferred and fixes[0].kind == types.CodeActionKind.QuickFix
        commands = dict(command_of(a) for a in actions if a not in fixes)
        assert (
            "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun" in commands["rootrank.copyVerifyCommand"][0]
        )
        assert commands["rootrank.runVerifyCommand"] == commands["rootrank.copyVerifyCommand"]
        assert commands["rootrank.openEntry"] == ["ddp-unused-parameters"]

        # A diagnostic from another tool gets nothing from us.
        foreign = types.Diagnostic(range=root.range, message="x", source="flake8", code="E501")
        none = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=root.range,
                context=types.CodeActionContext(diagnostics=[foreign]),
            )
        )
        assert not none

        # The collateral diagnostics offer a jump to the initiating rank's first error.
        watchdog = next(d for d in diagnostics if d.range.start.line == WATCHDOG_LINES[0])
        collateral_actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=watchdog.range,
                context=types.CodeActionContext(diagnostics=[watchdog]),
            )
        )
        jumps = dict(command_of(a) for a in collateral_actions or [])
        target_uri, target_range = jumps["rootrank.showLocation"]
        assert target_uri == uri and target_range["start"] == {"line": ROOT_LINE, "character": 23}
        shown = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.showLocation", arguments=[target_uri, target_range]
            )
        )
        assert shown is True
        assert (
            client.shown_documents[-1].uri == uri
            and client.shown_documents[-1].selection.start.line == ROOT_LINE
        )

    ((edit_uri, edits),) = fixes[0].edit.changes.items()
    target = workspace / "train.py"
    assert edit_uri == from_fs_path(str(target))
    lines = target.read_text().splitlines(keepends=True)
    (edit,) = edits
    assert edit.range.start.line == edit.range.end.line == 12
    line = lines[12]
    lines[12] = (
        line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    )
    assert "".join(lines) == (workspace / "train.fixed.py").read_text()


async def test_show_location_answers_when_the_client_replies_null(workspace: Path) -> None:
    """A client that answers ``window/showDocument`` with ``result: null`` (a trial's
    hand-written client) still gets its ``rootrank.showLocation`` answered, ``false`` (the
    document was not shown), instead of a request left pending for ever."""
    async with started(workspace, VSCODE_OPTIONS, show_document_null=True) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        await wait_for_diagnostics(client, uri)
        target = {
            "start": {"line": ROOT_LINE, "character": 0},
            "end": {"line": ROOT_LINE, "character": 5},
        }
        shown = await asyncio.wait_for(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="rootrank.showLocation", arguments=[uri, target])
            ),
            30,
        )
        assert shown is False
        assert client.shown_documents[-1].uri == uri
        assert client.shown_documents[-1].selection.start.line == ROOT_LINE


async def test_open_the_frame_when_the_fix_text_is_missing(workspace: Path) -> None:
    """train.py without a DDP call: no edit; the innermost user frame is offered instead."""
    train = workspace / "train.py"
    train.write_text(
        train.read_text().replace(
            "    model = DDP(model, device_ids=[torch.cuda.current_device()])\n", ""
        )
    )
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=root.range,
                context=types.CodeActionContext(diagnostics=[root]),
            )
        )
    assert actions
    assert not [a for a in actions if isinstance(a, types.CodeAction) and a.edit is not None]
    titles = {command_of(a)[0]: a.title for a in actions}
    assert titles["rootrank.showLocation"] == "Open the frame train.py:16"
    (frame_uri, frame_range) = dict(command_of(a) for a in actions)["rootrank.showLocation"]
    assert frame_uri == from_fs_path(str(train)) and frame_range["start"]["line"] == 15


async def test_no_edit_outside_the_workspace(tmp_path: Path) -> None:
    """The fixture's train.py is outside this workspace: no edit, only the other actions."""
    workspace = tmp_path / "only-logs"
    workspace.mkdir()
    log = workspace / LOG
    log.write_text((FIXTURES / "workspace" / "logs" / LOG).read_text())
    async with started(workspace, VSCODE_OPTIONS) as client:
        uri = open_document(client, log)
        diagnostics = await wait_for_diagnostics(client, uri)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=root.range,
                context=types.CodeActionContext(diagnostics=[root]),
            )
        )
    assert actions
    assert not [a for a in actions if isinstance(a, types.CodeAction) and a.edit is not None]
    assert {command_of(a)[0] for a in actions} == {
        "rootrank.copyVerifyCommand",
        "rootrank.runVerifyCommand",
        "rootrank.openEntry",
    }


async def test_diagnose_command_equals_the_cli(workspace: Path) -> None:
    log = workspace / "logs" / LOG
    cli = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "rootrank",
            "diagnose",
            str(log),
            "--format",
            "json",
            "--signatures",
            SIGNATURES,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    async with started(workspace, OPTIONS) as client:
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.diagnose", arguments=[{"text": log.read_text(), "name": str(log)}]
            )
        )
        unnamed = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.diagnose", arguments=[{"text": "[rank1]: hello\n"}]
            )
        )
        entry = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.signature", arguments=["ddp-unused-parameters"]
            )
        )
        listing = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rootrank.signatures")
        )
        unknown = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.signature", arguments=["no-such-signature"]
            )
        )
    assert result == expected
    assert (
        result["schema"] == "rootrank.diagnosis/1"
        and result["root_cause"]["signature"] == "ddp-unused-parameters"
    )
    assert unnamed["root_cause"] is None and unnamed["sources"] == ["<text>"]
    assert entry["id"] == "ddp-unused-parameters" and entry["quickfix"] == [
        {"title": "Pass find_unused_parameters=True to DistributedDataParallel"}
    ]
    assert entry["verify"].startswith("TORCH_DISTRIBUTED_DEBUG=DETAIL")
    assert unknown is None
    by_id = {item["id"]: item for item in listing}
    assert by_id["ddp-unused-parameters"] == {
        "id": "ddp-unused-parameters",
        "title": "DDP found parameters that received no gradient",
        "failure_class": "ddp-unused-parameters",
        "category": "parallel",
        "keys": sorted(
            {
                "ddp",
                "reducer",
                "unused-parameters",
                "pytorch",
                "hf",
                "Expected to have finished reduction in the prior iteration",
            }
        ),
    }
    assert by_id["cuda-oom"]["failure_class"] == "cuda-oom"


async def test_bad_signature_folder_is_named_and_the_rest_loads(workspace: Path) -> None:
    async with started(
        workspace, {"signatureFolders": [str(FIXTURES / "bad-signatures")]}
    ) as client:
        uri = open_document(client, workspace / "logs" / LOG)
        diagnostics = await wait_for_diagnostics(client, uri)
        messages = list(client.messages)
    assert len(messages) == 1
    assert messages[0].type == types.MessageType.Warning
    assert "broken-oom.yaml" in messages[0].message and "failure_class" in messages[0].message
    # The good file of the same folder is in use.
    assert [d.code for d in diagnostics if d.severity == types.DiagnosticSeverity.Error] == [
        "ddp-unused-parameters"
    ]


async def test_which_documents_are_diagnosed(workspace: Path) -> None:
    text = (workspace / "logs" / LOG).read_text()
    async with started(workspace, OPTIONS) as client:
        python_uri = open_document(
            client, workspace / "train_copy.py", text=text, language_id="python"
        )
        slurm_uri = open_document(client, workspace / "slurm-4242.out", text=text)
        log_id_uri = open_document(client, workspace / "console", text=text, language_id="log")
        other_uri = open_document(client, workspace / "notes.md", text=text, language_id="markdown")
        assert (await wait_for_diagnostics(client, slurm_uri))[0].code == "ddp-unused-parameters"
        assert (await wait_for_diagnostics(client, log_id_uri))[0].code == "ddp-unused-parameters"
        await asyncio.sleep(1.0)
        assert python_uri not in client.diagnostics and other_uri not in client.diagnostics

        # The globs are a setting: *.md now counts, *.out no longer does.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"rootrank": {"documentGlobs": ["*.md"], "signatureFolders": [SIGNATURES]}}
            )
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            client.diagnostics.get(other_uri) and list(client.diagnostics.get(slurm_uri, [1])) == []
        ):
            await asyncio.sleep(0.05)
        assert client.diagnostics[other_uri][0].code == "ddp-unused-parameters"
        assert list(client.diagnostics[slurm_uri]) == []


async def test_changes_are_debounced_and_the_newest_version_wins(workspace: Path) -> None:
    log = workspace / "logs" / LOG
    text = log.read_text()
    async with started(workspace, OPTIONS) as client:
        uri = open_document(client, log, text="[rank0]: step 1 loss 2.0\n")
        await wait_for_diagnostics(client, uri, version=1)
        before = client.publish_count
        for version in range(2, 12):  # ten quick edits; only the last must be analysed
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        types.TextDocumentContentChangeWholeDocument(
                            text=text if version % 2 else "[rank0]: ok\n"
                        )
                    ],
                )
            )
        diagnostics = await wait_for_diagnostics(client, uri, version=11)
        await asyncio.sleep(0.6)
        assert client.publish_count == before + 1
        assert [d.code for d in diagnostics if d.severity == types.DiagnosticSeverity.Error] == [
            "ddp-unused-parameters"
        ]

        # An incremental edit that removes the error line clears the diagnostics.
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=12),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=ROOT_LINE, character=0),
                            end=types.Position(line=ROOT_LINE + 1, character=0),
                        ),
                        text="",
                    )
                ],
            )
        )
        after = await wait_for_diagnostics(client, uri, version=12)
        assert not [d for d in after if d.code == "ddp-unused-parameters"]


async def test_cancel_request_stops_a_long_diagnose(workspace: Path) -> None:
    # Every line holds a gate word ("world_size"), so every line takes the engine's slow
    # per-line path: seconds of work to cancel, whatever the machine.
    big = "[rank1]: step 1 loss 2.0 world_size=4 " + "x" * 64 + "\n"
    text = big * 400_000  # ~43 MB
    async with started(workspace, OPTIONS) as client:
        task = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="rootrank.diagnose", arguments=[{"text": text}])
            )
        )
        await asyncio.sleep(1.5)
        task.cancel()  # pygls' client sends $/cancelRequest
        with pytest.raises(asyncio.CancelledError):
            await task
        start = time.monotonic()
        small = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.diagnose",
                arguments=[{"text": (workspace / "logs" / LOG).read_text()}],
            )
        )
        assert small["root_cause"]["signature"] == "ddp-unused-parameters"
        assert time.monotonic() - start < 30  # a fresh engine process, not the 43 MB run


def _replace_text(client, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_requests_after_an_edit_answer_for_the_new_text(workspace: Path) -> None:
    """Round-12 trial, item 7: after the whole log was replaced with ``hello``, a code action
    on the old root-cause diagnostic still offered its quick fix. Every request answers for
    the current text: the old diagnostic gets nothing, the hover on its line is empty, and
    the diagnostics published for the new version are empty."""
    log = workspace / "logs" / LOG
    async with started(workspace, VSCODE_OPTIONS) as client:
        uri = open_document(client, log)
        diagnostics = await wait_for_diagnostics(client, uri, version=1)
        root = next(d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error)
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=root.range,
            context=types.CodeActionContext(diagnostics=[root]),
        )
        before = await client.text_document_code_action_async(params)
        assert [a.title for a in before or [] if isinstance(a, types.CodeAction) and a.edit] == [
            "Pass find_unused_parameters=True to DistributedDataParallel"
        ]

        _replace_text(client, uri, 2, "hello\n")  # asked at once, inside the debounce
        assert list(await client.text_document_code_action_async(params) or []) == []
        assert await client.text_document_hover_async(hover_params(uri, ROOT_LINE)) is None
        assert await wait_for_diagnostics(client, uri, version=2) == []
        assert list(await client.text_document_code_action_async(params) or []) == []

        # The same log again: the new version's own diagnostic gets its quick fix back.
        _replace_text(client, uri, 3, log.read_text(encoding="utf-8"))
        again = await wait_for_diagnostics(client, uri, version=3)
        new_root = next(d for d in again if d.severity == types.DiagnosticSeverity.Error)
        assert new_root.range == root.range
        after = await client.text_document_code_action_async(params)
        assert [a.title for a in after or [] if isinstance(a, types.CodeAction) and a.edit] == [
            "Pass find_unused_parameters=True to DistributedDataParallel"
        ]

        # A line added above the error moves it: the diagnostic kept from before gets nothing,
        # the one published for the new text gets the fix.
        _replace_text(client, uri, 4, "starting\n" + log.read_text(encoding="utf-8"))
        assert list(await client.text_document_code_action_async(params) or []) == []
        moved = await wait_for_diagnostics(client, uri, version=4)
        moved_root = next(d for d in moved if d.severity == types.DiagnosticSeverity.Error)
        assert moved_root.range.start.line == ROOT_LINE + 1
        on_moved = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=moved_root.range,
                context=types.CodeActionContext(diagnostics=[moved_root]),
            )
        )
        assert [a.title for a in on_moved or [] if isinstance(a, types.CodeAction) and a.edit] == [
            "Pass find_unused_parameters=True to DistributedDataParallel"
        ]


async def test_diagnose_a_selection_names_the_files_lines(workspace: Path) -> None:
    # VS Code's "Diagnose Selection" sends lines 7-15 of train.log with firstLine 7: every
    # line the diagnosis names (evidence, reasoning) must be the file's, as the whole file's
    # diagnosis names it, not the selection's own count (trial r13: "train.log:8-41:9").
    lines = [f"[rank{r}]: step 1 loss 2.0" for r in range(3)] * 3 + [
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "train.py", line 9, in <module>',
        "[rank2]:     load_batch()",
        '[rank2]:   File "train.py", line 5, in load_batch',
        "[rank2]: ValueError: corrupt record in shard 2",
        "[rank0]: [E ProcessGroupNCCL.cpp:1234] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.",
    ]
    async with started(workspace, OPTIONS) as client:
        whole = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.diagnose",
                arguments=[{"text": "\n".join(lines) + "\n", "name": "train.log"}],
            )
        )
        selected = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="rootrank.diagnose",
                arguments=[
                    {"text": "\n".join(lines[6:]) + "\n", "name": "train.log", "firstLine": 7}
                ],
            )
        )
        with pytest.raises(Exception, match="firstLine"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="rootrank.diagnose",
                    arguments=[{"text": "x\n", "name": "train.log", "firstLine": 0}],
                )
            )
    for d in (whole, selected):
        assert d["initiating_rank"] == 2
        assert [(e["path"], e["line"]) for e in d["root_cause"]["evidence"]] == [("train.log", 14)]
        assert '"A plain Python exception ended the process' in d["reasoning"][0]
        assert d["reasoning"][0].endswith("(train.log:14).")
    assert selected["sources"] == ["train.log"]
    assert [c["evidence"][0]["line"] for c in selected["collateral"]] == [15]
