"""Unit tests of the ``quickfix`` field: parsing, and the edits it makes in launch scripts
and training code (the examples proposed for cuda-oom and divergent-model signatures)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rootrank.lsp.actions import find_edit, frame_files, quickfixes, workspace_files
from rootrank.lsp.documents import DocumentStore
from rootrank.lsp.positions import UTF16

EXPANDABLE = {
    "title": "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch script",
    "files": ["**/*.sh", "**/*.sbatch"],
    "find": r"^(?P<indent>\s*)(?P<launch>(?:torchrun|python -m torch\.distributed\.run|accelerate launch|deepspeed)\b.*)$",
    "replace": r"\g<indent>PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \g<launch>",
    "skip_if": "expandable_segments",
}
SEED = {
    "title": "Seed every rank the same before building the model",
    "find": r"^(?P<indent>[ \t]*)(?P<stmt>model\s*=\s*(?!DDP\b|DistributedDataParallel\b|FSDP\b)[\w.]+\(.*)$",
    "replace": r"\g<indent>torch.manual_seed({seed})  # same initial weights on every rank\n\g<indent>\g<stmt>",
    "skip_if": r"manual_seed\(",
}


def signature(quickfix: object) -> SimpleNamespace:
    return SimpleNamespace(data={"quickfix": quickfix}, path="team/memory/x.yaml")


def apply(path: Path, edit) -> str:  # type: ignore[no-untyped-def]
    lines = path.read_text().splitlines(keepends=True)
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = (
        line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    )
    return "".join(lines)


def test_quickfix_entries_are_validated() -> None:
    fixes, problems = quickfixes(
        signature([EXPANDABLE, {"title": "no find"}, {**SEED, "find": "("}])
    )  # type: ignore[arg-type]
    assert [f.title for f in fixes] == [EXPANDABLE["title"]]
    assert problems[0] == "team/memory/x.yaml: quickfix[1].find: missing"
    assert problems[1].startswith("team/memory/x.yaml: quickfix[2]: ")


def test_launch_script_gets_expandable_segments(tmp_path: Path) -> None:
    script = tmp_path / "scripts" / "train.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/bash\nset -e\n  torchrun --nproc-per-node=8 train.py --bs 16\n")
    (fix,), _ = quickfixes(signature(EXPANDABLE))  # type: ignore[arg-type]
    found = find_edit(fix, {}, workspace_files([str(tmp_path)]), DocumentStore(), UTF16)
    assert found is not None
    path, edit = found
    assert path == str(script)
    assert apply(script, edit) == (
        "#!/bin/bash\nset -e\n  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc-per-node=8 train.py --bs 16\n"
    )
    script.write_text(apply(script, edit))
    assert find_edit(fix, {}, [str(script)], DocumentStore(), UTF16) is None  # already applied


def test_seed_goes_before_model_construction(tmp_path: Path) -> None:
    train = tmp_path / "train.py"
    train.write_text("def main():\n    model = Net(cfg).cuda()\n    model = DDP(model)\n")
    (fix,), _ = quickfixes(signature(SEED))  # type: ignore[arg-type]
    found = find_edit(fix, {"seed": 1234}, [str(train)], DocumentStore(), UTF16)
    assert found is not None
    assert apply(train, found[1]) == (
        "def main():\n    torch.manual_seed(1234)  # same initial weights on every rank\n"
        "    model = Net(cfg).cuda()\n    model = DDP(model)\n"
    )


def test_frames_map_user_files_by_path_suffix(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    train = tmp_path / "proj" / "train.py"
    train.write_text("x = 1\n")
    (tmp_path / "distributed.py").write_text("# a user file with a library's name\n")
    files = workspace_files([str(tmp_path)])
    frames = [
        {"file": "/home/user/proj/train.py", "line": 7, "user": True},
        {
            "file": "/opt/conda/lib/python3.11/site-packages/torch/nn/parallel/distributed.py",
            "line": 1639,
            "user": False,
        },
    ]
    assert frame_files(frames, [str(tmp_path)], files) == [(str(train), 7)]


def test_the_readme_names_every_signature_that_has_a_quick_fix_edit() -> None:
    """The README tells a generic LSP editor's user which quick-fix edits exist (round-12
    trial, item 7: it promised "quick fixes" while only two signatures have one)."""
    import re

    from rootrank.engine import default_library

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    lsp_part = readme[readme.index("- **Any LSP editor**") : readme.index("## Real PyTorch")]
    with_edit = sorted(s.id for s in default_library().signatures.values() if "quickfix" in s.data)
    assert with_edit == ["cuda-oom", "ddp-unused-parameters"]
    said = re.search(r"A quick-fix \*edit\* exists for (\d+) signatures", lsp_part)
    assert said is not None and int(said[1]) == len(with_edit)
    for sig_id in with_edit:
        assert f"`{sig_id}`" in lsp_part
    assert "workspace" in lsp_part and "clientCommands" in lsp_part
