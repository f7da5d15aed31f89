"""A host a signature captures by name (``host``, ``node``, ``store``) is masked everywhere,
even when no other line shows it in a shape the masker knows a host by (Megatron core's
"Rank 2, node gpu-07, device 2, iteration 118: Unexpected result nan")."""

from __future__ import annotations

import json

from conftest import run_cli

from rootrank.engine import diagnose_text

MEGATRON = "\n".join(
    [
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/w/pretrain_gpt.py", line 10, in <module>',
        "[rank2]:     train()",
        "[rank2]: RuntimeError: Rank 2, node gpu-07, device 2, iteration 118: Unexpected result"
        " nan (message='found NaN in local grad norm for bucket #0 in backward pass before"
        " data-parallel communication collective')",
    ]
)


def test_a_captured_node_name_is_masked_in_every_field():
    d = diagnose_text(MEGATRON, "train.log")
    assert d.root_cause is not None and d.root_cause.failure_class == "nan-or-fp16-overflow"
    assert d.initiating_rank == 2
    out = d.to_dict()
    del out["root_cause"]["symptoms"]  # the library's own example lines, not the log's
    assert "gpu-07" not in json.dumps(out)
    assert "device 2 of host-1" in " ".join(d.root_cause.fix.steps)


def test_unmasked_it_is_shown_and_a_gpu_node_number_is_not_a_host(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(MEGATRON + "\n")
    proc = run_cli("diagnose", str(log), "--no-mask")
    assert proc.returncode == 0 and b"device 2 of gpu-07" in proc.stdout
    rocm = "Memory access fault by GPU node-3 (Agent handle: 0x55d1c2) on address 0x7f00. Reason: Page not present or supervisor privilege.\n"
    d = diagnose_text(rocm, "train.log")
    assert d.root_cause is not None and "node-3" in json.dumps(d.to_dict())
