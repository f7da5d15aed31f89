"""A SyntaxError is a source file Python could not parse: the fix names the file and the
verify compiles it (it was the bad-data-record advice of a plain exception)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

LOG = Path(__file__).parent / "fix_variants" / "user-code-exception" / "syntax-error.log"


def test_a_syntax_error_gets_a_compile_check_of_the_file_it_names():
    out = json.loads(run_cli("diagnose", str(LOG), "--no-mask", "--format", "json").stdout)
    rc = out["root_cause"]
    assert rc["fix"]["variant"]["id"] == "syntax-error"
    assert (rc["user_frame"]["file"], rc["user_frame"]["line"]) == (
        "/home/u/lab/lab/models/mixer.py",
        88,
    )
    assert "invalid character '（' (U+FF08)" in rc["fix"]["steps"][0]
    assert "repair it, or validate and skip such records" not in " ".join(rc["fix"]["steps"])
    assert rc["verify"].startswith("python -m py_compile /home/u/lab/lab/models/mixer.py  #")
