"""The pip command for an optional extra names the folder rootrank was installed from
(PEP 610 ``direct_url.json``), never a ``rootrank[...]`` name an index would resolve."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from rootrank import extras


class _Dist:
    def __init__(self, record: str | None):
        self.record = record

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.record


@pytest.mark.parametrize(
    ("record", "folder"),
    [
        (
            json.dumps({"url": "file:///home/ana/src/root%20rank", "dir_info": {}}),
            "/home/ana/src/root rank",
        ),
        (json.dumps({"url": "file:///work/rr", "dir_info": {"editable": True}}), "/work/rr"),
        (
            json.dumps({"url": "https://example.org/rootrank-0.1.0.tar.gz", "archive_info": {}}),
            None,
        ),
        (None, None),
        ("not json", None),
    ],
)
def test_the_hint_names_the_install_folder(monkeypatch, record, folder):
    monkeypatch.setattr(extras.metadata, "distribution", lambda name: _Dist(record))
    assert extras.source_folder() == folder
    want = f"{folder or '<the rootrank clone>'}[fleet]"
    assert extras.install_hint("fleet") == (
        f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(want)}"
    )
    assert "'rootrank[" not in extras.install_hint("fleet")
