"""The rank whose collective call site differs from every other rank's is the initiator,
before torchrun's "first observed failure" (trial r15b, finding 6).

Ranks 0 and 1 time out in the world all_reduce at train.py:31; rank 3 waits in its subgroup's
all_reduce at train.py:30 (it built its groups in another order); rank 2 shows nothing. The
fix text compared the call sites and named rank 3 as the odd one, while the headline named
rank 0 from torchelastic's summary (the first to time out). The log is written here in the
shape torch 2.x gloo and torchrun print (tests/data/gloo-odd-call-site-elastic-rank0.log)."""

from __future__ import annotations

from conftest import ROOT

from rootrank.engine import diagnose_paths
from rootrank.report import to_text

LOG = ROOT / "tests" / "data" / "gloo-odd-call-site-elastic-rank0.log"


def test_the_headline_and_the_fix_name_the_same_odd_rank():
    d = diagnose_paths([str(LOG)], mask=False)
    assert d.initiating_rank == 3
    assert d.initiator.strategy == "odd_call_site"
    rc = d.root_cause
    # the odd call site is the fault itself: the ranks issued different collectives
    # (rootrank.analysis.callsite_desync), not a wait with no deeper cause
    assert rc is not None and rc.failure_class == "collective-desync" and rc.rank == 3
    assert rc.signature == "call-site-divergence"
    text = to_text(d)
    first = text.splitlines()[0]
    assert first.startswith(
        "Root cause: A collective timed out while one rank waited at another call site"
    ) and first.endswith("caused by rank 3, host gpu-node-7")
    assert rc.fix.steps[0].startswith(
        "train.py:30: rank 3 calls all_reduce here while ranks 0 and 1 call all_reduce at train.py:31"
    )
    assert "Initiating rank: 3 on gpu-node-7" in text
    assert "names rank 0, which was a victim" in text


def test_two_call_sites_of_two_ranks_each_name_no_odd_rank(tmp_path):
    # ranks 0 and 1 at line 31, rank 3 at line 30 and rank 2 (added) also at 30: no odd one
    text = LOG.read_text()
    rank3 = [line for line in text.splitlines() if line.startswith("[rank3]:")]
    extra = "\n".join(line.replace("[rank3]:", "[rank2]:", 1) for line in rank3)
    log = tmp_path / "two-and-two.log"
    log.write_text(text.replace("W1203 10:00:17.200000", extra + "\nW1203 10:00:17.200000", 1))
    d = diagnose_paths([str(log)], mask=False)
    assert d.initiator.strategy != "odd_call_site"
