"""What the editor shows first: the hover and the root-cause diagnostic lead with the
verdict (root cause, initiating rank and host, one-line fix, verification command), and no
``rank None`` / ``rank ?`` / raw ``{placeholder}`` reaches a hover or a diagnostic."""

from __future__ import annotations

import re

from conftest import ROOT

from rootrank.engine import diagnose_paths
from rootrank.lsp.diagnostics import FindingAt, build_analysis
from rootrank.lsp.documents import LogDocument
from rootrank.lsp.hover import hover_markdown

SAMPLE = ROOT / "extension" / "samples" / "torchrun-8gpu-oom.log"
RAW = re.compile(r"\{[A-Za-z_]\w*\}|rank None|rank \?|\bNone\b")


def _diagnosis(library):
    return diagnose_paths([str(SAMPLE)], library=library).to_dict()


def test_root_hover_starts_with_the_verdict(library):
    d = _diagnosis(library)
    text = hover_markdown(FindingAt("root", d["root_cause"]), d, library)
    lines = text.splitlines()
    assert lines[0] == "### CUDA out of memory in the caching allocator"
    assert re.match(
        r"\*\*Root cause\*\* \(confidence 0\.\d\d\) — rank \*\*5\*\*, host \*\*host-1\*\*", lines[2]
    )
    # The fix names the user's own line, then the variant the log selects (fragmentation).
    assert (
        lines[4].startswith("**Fix:** model.py:")
        and "where rank 5 raised OutOfMemoryError" in lines[4]
    )
    assert "expandable_segments:True" in lines[4]
    assert lines[6:8] == ["#### Verify", "```sh"]
    assert lines[8].startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun")
    # Details after the rule; the command is shown once.
    assert text.index("---") > text.index("#### Verify") and text.count(lines[8]) == 1
    assert "#### What happened" in text and not RAW.search(text)


def test_collateral_hover_leads_with_the_root_cause(library):
    d = _diagnosis(library)
    rankless = next(f for f in d["findings"] if f["rank"] is None)
    text = hover_markdown(FindingAt("collateral", rankless), d, library)
    lines = text.splitlines()
    assert lines[2].startswith("**Collateral**: explained by the root cause `cuda-oom` on rank 5")
    assert (
        lines[4]
        == "**Root cause:** CUDA out of memory in the caching allocator — rank **5**, host **host-1**"
    )
    assert not RAW.search(text.split("---", 1)[0])


def test_diagnostics_lead_with_the_verdict_and_never_say_rank_none(library):
    d = _diagnosis(library)
    text = SAMPLE.read_text()
    doc = LogDocument(
        uri=SAMPLE.as_uri(), language_id="log", version=1, lines=text.splitlines(keepends=True)
    )
    analysis = build_analysis(SAMPLE.as_uri(), doc, d, library, "utf-16")
    root = analysis.diagnostics[0]
    first, fix, verify = root.message.splitlines()
    assert first == "Root cause: CUDA out of memory in the caching allocator (rank 5, host host-1)"
    assert fix.startswith("Fix: model.py:") and "expandable_segments:True" in fix
    assert verify.startswith("Verify: PYTORCH_CUDA_ALLOC_CONF=")
    messages = [root.message] + [r.message for r in root.related_information or []]
    messages += [c.message for c in analysis.diagnostics[1:]]
    assert not [m for m in messages if RAW.search(m)]
    # The rankless torchrun-agent line reads without a rank prefix.
    assert any(m.startswith("The torchrun agent stopped the remaining workers") for m in messages)


def test_root_hover_entry_names_the_logs_own_script(library, tmp_path):
    # The hover of the root-cause line is found through the finding of the same signature and
    # rank; its entry (fix steps, code, confirm) must be the one the engine rendered for this
    # log, as the CLI and the report view show it, not the library's `python train.py`
    # (trial r14, finding 4).
    log = tmp_path / "h.log"
    log.write_text(
        "[rank0]: step 3 loss 1.2034\n"
        "[rank1]: step 3 loss 1.1987\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/project/finetune_lm.py", line 41, in <module>\n'
        "[rank1]:     main()\n"
        '[rank1]:   File "/home/user/project/finetune_lm.py", line 16, in main\n'
        '[rank1]:     raise ValueError(f"corrupt record in shard-{rank:05d}.jsonl")\n'
        "[rank1]: ValueError: corrupt record in shard-00001.jsonl line 29: expected 16 features\n",
        encoding="utf-8",
    )
    d = diagnose_paths([str(log)], library=library).to_dict()
    assert d["root_cause"]["signature"] == "user-code-exception"
    text = log.read_text()
    doc = LogDocument(
        uri=log.as_uri(), language_id="log", version=1, lines=text.splitlines(keepends=True)
    )
    analysis = build_analysis(log.as_uri(), doc, d, library, "utf-16")
    at = analysis.by_line[7][0]  # the ValueError line (0-based 7)
    assert at.kind == "root"
    hover = hover_markdown(at, d, library)
    details = hover.split("#### Fix", 1)[1]
    assert details.splitlines()[1].startswith(
        "1. finetune_lm.py:16 (in main), where rank 1 raised ValueError:"
    )
    assert "python -m pdb -c continue finetune_lm.py\n" in details  # no option it may not take
    assert "(python -X faulthandler finetune_lm.py)" in details
    assert "train.py" not in hover


def test_a_reporting_rank_is_not_shown_as_the_answer(library, tmp_path):
    # Every rank that printed the watchdog line was a victim: the engine names no initiating
    # rank (initiating_rank null, strategy victims_only). The diagnostic, the related lines
    # and the hover said "(rank 0)" / "rank **0**" from the root finding's line, which the
    # report view then showed as "Initiating rank: rank 0" (trial r15, finding 2).
    log = tmp_path / "victims.log"
    log.write_text(
        "".join(
            f"[rank{r}]:[E1203 10:26:14.{r}51829071 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog"
            " caught collective operation timeout: WorkNCCL(SeqNum=3011, OpType=ALLREDUCE,"
            " NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before"
            " timing out.\n"
            for r in (0, 1, 4, 5)
        ),
        encoding="utf-8",
    )
    d = diagnose_paths([str(log)], library=library).to_dict()
    assert d["initiating_rank"] is None and d["initiator"]["strategy"] == "victims_only"
    assert d["root_cause"]["rank"] == 0
    text = log.read_text()
    doc = LogDocument(
        uri=log.as_uri(), language_id="log", version=1, lines=text.splitlines(keepends=True)
    )
    analysis = build_analysis(log.as_uri(), doc, d, library, "utf-16")
    root = analysis.diagnostics[0]
    assert root.message.splitlines()[0] == (
        "Root cause: NCCL watchdog caught a collective operation timeout (reported on rank 0)"
    )
    collateral = [c.message for c in analysis.diagnostics[1:]]
    # One diagnostic for the signature's three collateral ranks, one line each.
    assert collateral == [
        "NCCL watchdog caught a collective operation timeout on 3 ranks (1, 4, 5): collateral of"
        " NCCL watchdog caught a collective operation timeout reported on rank 0"
    ]
    hover = hover_markdown(analysis.by_line[0][0], d, library).splitlines()
    assert re.match(
        r"\*\*Root cause\*\* \(confidence 0\.\d\d\) — reported on rank \*\*0\*\*", hover[2]
    )
    side = hover_markdown(analysis.by_line[1][0], d, library).splitlines()
    assert side[2].startswith(
        "**Collateral**: explained by the root cause `nccl-watchdog-timeout` reported on rank 0"
    )
    assert side[4] == (
        "**Root cause:** NCCL watchdog caught a collective operation timeout — reported on rank **0**"
    )


def test_collateral_is_one_diagnostic_per_signature_listing_its_ranks(library, tmp_path):
    # Issue 11: a 256-rank job whose 255 survivors time out publishes one collateral
    # diagnostic, not 255; its related information names the root cause, then each rank's
    # first watchdog line in rank order. The survivors print in descending rank order, so
    # the diagnostic sits on the earliest line (rank 255's), not on the lowest rank's.
    world = 256
    lines = [f"[rank{r}]: step 0 loss 6.9081 lr 1.0e-04\n" for r in range(world)]
    lines += [
        "[rank2]: Traceback (most recent call last):\n",
        '[rank2]:   File "/home/user/proj/train.py", line 16, in main\n',
        "[rank2]:     out = model(batch)\n",
        "[rank2]: RuntimeError: Expected to have finished reduction in the prior iteration"
        " before starting a new one. This error indicates that your module has parameters that"
        " were not used in producing loss.\n",
    ]
    survivors = [r for r in reversed(range(world)) if r != 2]
    lines += [
        f"[rank{r}]:[E1130 08:24:03.402000 {91830 + r} ProcessGroupNCCL.cpp:632] [Rank {r}]"
        " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=118, OpType=ALLREDUCE,"
        " NumelIn=2359296, NumelOut=2359296, Timeout(ms)=600000) ran for 600087 milliseconds"
        " before timing out.\n"
        for r in survivors
    ]
    log = tmp_path / "train.log"
    log.write_text("".join(lines), encoding="utf-8")
    d = diagnose_paths([str(log)], library=library).to_dict()
    assert d["root_cause"]["signature"] == "ddp-unused-parameters"
    assert d["initiating_rank"] == 2
    doc = LogDocument(
        uri=log.as_uri(), language_id="log", version=1, lines=log.read_text().splitlines(True)
    )
    analysis = build_analysis(log.as_uri(), doc, d, library, "utf-16")
    root, *collateral = analysis.diagnostics
    (watchdog,) = [c for c in collateral if c.code == "nccl-watchdog-timeout"]
    first_watchdog = world + 4  # 0-based editor line of rank 255's timeout
    assert watchdog.range.start.line == first_watchdog
    assert watchdog.message.startswith(
        "NCCL watchdog caught a collective operation timeout on 255 ranks (0, 1, 3-255):"
    )
    assert watchdog.data == {
        "signature": "nccl-watchdog-timeout",
        "rank": 255,
        "ranks": sorted(survivors),
        "kind": "collateral",
    }
    back, *per_rank = watchdog.related_information or []
    assert back.location.range == root.range and back.message.startswith("root cause: ")
    assert [(r.location.range.start.line, r.message.split(":")[0]) for r in per_rank] == [
        (first_watchdog + survivors.index(r), f"rank {r}") for r in sorted(survivors)
    ]
    # The root cause lists the group once, at that line.
    assert [(r.location.range.start.line, r.message) for r in root.related_information or []] == [
        (
            first_watchdog,
            "255 ranks (0, 1, 3-255): NCCL watchdog caught a collective operation timeout in"
            " ALLREDUCE SeqNum 118 (collateral)",
        )
    ]
    # Every rank's line still has its finding, for the hover.
    assert all(
        any(at.kind == "collateral" for at in analysis.by_line[first_watchdog + i])
        for i in range(len(survivors))
    )
