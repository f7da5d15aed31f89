"""The same log gives the same diagnosis whatever PYTHONHASHSEED is: two nodes' ``[default0]``
streams in one file (``--tee 3`` of two agents, one after the other) map local rank 0 to the
first global rank printed with it, not to whichever a set's order gave (round 19: the
heldout r19d/03 progress changed run to run)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

LOG = """\
[default0]:node0 rank 0/4 step 10 loss 1.2643
[default1]:node0 rank 1/4 step 10 loss 1.2799
[default0]:[rank0]: Traceback (most recent call last):
[default0]:[rank0]:   File "/home/user/proj/train.py", line 46, in <module>
[default0]:[rank0]:     os.makedirs(ckpt)
[default0]:[rank0]: FileExistsError: [Errno 17] File exists: '/shared/ckpt/step_00030'
[default0]:node1 rank 2/4 step 10 loss 1.3759
[default1]:node1 rank 3/4 step 10 loss 1.2306
[default0]:[rank2]: Traceback (most recent call last):
[default0]:[rank2]:   File "/home/user/proj/train.py", line 46, in <module>
[default0]:[rank2]:     os.makedirs(ckpt)
[default0]:[rank2]: FileExistsError: [Errno 17] File exists: '/shared/ckpt/step_00030'
"""

PROBE = """
import json, sys
from rootrank.engine import diagnose_paths
d = diagnose_paths([sys.argv[1]]).to_dict()
print(json.dumps(d["progress"], sort_keys=True))
"""


def test_the_diagnosis_does_not_depend_on_the_hash_seed(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG, encoding="utf-8")
    outs = set()
    for seed in ("0", "1", "2", "3", "5", "7"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT / "server")}
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, str(log)], env=env, capture_output=True, check=True
        )
        outs.add(proc.stdout)
    assert len(outs) == 1
    assert b'"rank": 0' in outs.pop()
