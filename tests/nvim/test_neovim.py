"""A second, independent client: Neovim's built-in LSP client, headless (``nvim``,
Debian package ``neovim``), drives the server and reports what it received."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "lsp" / "fixtures"

pytestmark = pytest.mark.skipif(
    shutil.which("nvim") is None, reason="nvim is not installed (apt-get install neovim)"
)


def run_neovim(tmp_path: Path, log: Path, **extra: str) -> dict:
    """Run ``diagnose.lua`` in headless Neovim on ``log``; returns the JSON it printed."""
    env = {
        **os.environ,
        "ROOTRANK_LOG": str(log),
        "ROOTRANK_PYTHON": sys.executable,
        "ROOTRANK_SIGNATURES": str(FIXTURES / "signatures"),
        "HOME": str(tmp_path),  # no user config, no shada in the real home
        **extra,
    }
    run = subprocess.run(
        [
            "nvim",
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-c",
            f"luafile {HERE / 'diagnose.lua'}",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, (run.stdout, run.stderr)
    result: dict = json.loads(lines[-1])
    return result


def test_neovim_receives_the_root_cause(tmp_path: Path) -> None:
    log = tmp_path / "ddp-unused-rank2.log"
    log.write_text((FIXTURES / "workspace" / "logs" / "ddp-unused-rank2.log").read_text())
    result = run_neovim(tmp_path, log)
    print(json.dumps(result["diagnostics"], indent=1))
    assert result["received"] is True
    errors = [d for d in result["diagnostics"] if d["severity"] == 1]
    assert [(d["line"], d["col"], d["end_col"], d["code"], d["source"]) for d in errors] == [
        (12, 23, 107, "ddp-unused-parameters", "rootrank")
    ]
    infos = sorted((d["line"], d["code"]) for d in result["diagnostics"] if d["severity"] == 3)
    # One collateral diagnostic for the watchdog timeouts of ranks 0, 1 and 3, on the first.
    assert infos == [(14, "nccl-watchdog-timeout")]
    assert "#### What happened" in result["hover"] and "rank **2**" in result["hover"]


FIX = "Pass find_unused_parameters=True to DistributedDataParallel"


def test_neovim_lists_only_actions_it_can_carry_out(tmp_path: Path) -> None:
    """Neovim 0.7/0.8 implement none of the extension's commands and cannot show a document
    (``window/showDocument``): on the root cause it is offered the edit of train.py alone,
    not "copy/run the verification command" or "open the entry", which did nothing there."""
    workspace = tmp_path / "proj"
    shutil.copytree(FIXTURES / "workspace", workspace)
    log = workspace / "logs" / "ddp-unused-rank2.log"
    result = run_neovim(tmp_path, log, ROOTRANK_ROOT=str(workspace))
    assert result["actions"] == [{"title": FIX, "command": None, "edit": True}]


def test_neovim_gets_a_command_it_lists_as_its_own(tmp_path: Path) -> None:
    """A Neovim user who implements ``rootrank.copyVerifyCommand`` (docs/neovim.md) and lists
    it in ``init_options.clientCommands`` is offered that action too."""
    workspace = tmp_path / "proj"
    shutil.copytree(FIXTURES / "workspace", workspace)
    log = workspace / "logs" / "ddp-unused-rank2.log"
    result = run_neovim(
        tmp_path,
        log,
        ROOTRANK_ROOT=str(workspace),
        ROOTRANK_CLIENT_COMMANDS="rootrank.copyVerifyCommand",
    )
    assert [(a["title"], a["command"], a["edit"]) for a in result["actions"]] == [
        (FIX, None, True),
        (
            "Copy the verification command (ddp-unused-parameters)",
            "rootrank.copyVerifyCommand",
            False,
        ),
    ]
