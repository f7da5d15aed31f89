"""Report text that says each thing once: the rank the others waited for is concluded once
(the reason in parentheses is only the reason), and the fix heading with its variant's
reason reads as one clause ("Fix (for this log, because ...):")."""

from __future__ import annotations

import json
import re

from conftest import ROOT, run_cli

LOG = ROOT / "tests" / "fix_variants" / "gloo-collective-timeout" / "rank-never-joined.log"


def test_the_rank_the_others_waited_for_is_said_once():
    proc = run_cli("diagnose", str(LOG))
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    headline = out.splitlines()[2]
    # (the one-line fix: the location lead and the action, rootrank.headline)
    assert headline == (
        "Fix: run_ddp.py:143: ranks 1 and 2 stopped in all_reduce here; rank 0 never reached"
        " this line (it printed no traceback): look at what rank 0 did before it. Move it out of"
        " the collective path, or raise the timeout for that phase (init_process_group(...,"
        " timeout=timedelta(...)))."
    )
    assert out.count("rank 0 is the one known rank that did not report it") == 1  # the step
    assert "so it is the rank the others waited for" not in out
    assert "  Rank 0 is the one known rank that did not report it. [missing_reporter]" in out
    assert "Fix (for this log, because the analysis names the initiating rank):" in out
    assert "Fix: (for this log:" not in out


def test_markdown_says_why_the_fix_was_chosen_as_one_sentence():
    proc = run_cli("diagnose", str(LOG), "--format", "markdown")
    out = proc.stdout.decode()
    assert "_Chosen for this log because the analysis names the initiating rank._" in out
    assert out.count("waited for") == 1  # the fix's first step (the headline is cut to its action)


def test_markdown_escapes_the_log_outside_code_spans(tmp_path):
    """Log text in Markdown prose shows as written: ``(in <module>)`` is not an HTML tag that
    vanishes, a log's ``<script>`` stays text; code spans (the verify) are left as they are."""
    log = tmp_path / "t.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/x/train.py", line 3, in <module>\n'
        "[rank1]:     f()\n"
        "[rank1]: ValueError: bad <img src=x onerror=alert(1)> </script><script>alert(2)</script>\n"
    )
    out = run_cli("diagnose", str(log), "--format", "markdown").stdout.decode()
    fix = next(x for x in out.splitlines() if x.startswith("- **Fix:**"))
    assert "(in &lt;module&gt;)" in fix
    assert "&lt;img src=x onerror=alert(1)&gt; &lt;/script&gt;&lt;script&gt;" in fix
    prose = re.sub(r"```.*?```", "", out, flags=re.S)  # a fenced block shows its text as is
    assert "<script>" not in prose and "<img" not in prose
    verify = next(x for x in out.splitlines() if x.startswith("- **Verify:**"))
    assert "`torchrun --nproc-per-node=gpu " in verify  # inside a code span: kept


def test_a_store_connect_error_names_no_host_for_the_reporter_and_its_fix_follows_the_errno(
    tmp_path,
):
    """The address in "failed to connect to [A]:P" is the store's (MASTER_ADDR), not the
    reporting rank's host; errno 113 (no route) is a closed network path, not a name to
    resolve."""
    log = tmp_path / "v.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/x/train.py", line 3, in <module>\n'
        "[rank1]:     f()\n"
        "[rank1]: torch.distributed.DistNetworkError: The client socket has failed to connect"
        " to [10.1.2.3]:29500 (errno: 113 - No route to host).\n"
    )
    out = json.loads(run_cli("diagnose", str(log), "--no-mask", "--format", "json").stdout)
    rc = out["root_cause"]
    assert rc["host"] is None and out["initiating_host"] is None
    assert rc["fix"]["variant"]["id"] == "unreachable"
    assert "Open TCP port 29500" in rc["fix"]["steps"][0] and "getent" not in rc["fix"]["steps"][0]
    assert rc["verify"].startswith("nc -zv 10.1.2.3 29500")
