"""A job a framework's own CLI started is verified with that CLI (issue 15, round 18):
ms-swift's ``swift sft`` runs torchrun on ``swift/cli/sft.py`` itself, with ``NPROC_PER_NODE``
processes (swift/cli/main.py), so a rerun of that file under a bare torchrun has none of the
run's arguments; xtuner's ``xtuner train`` and axolotl's ``axolotl.cli.train`` the same.

The traceback is written as torchrun's ``[rankN]:`` prefix and the frames of an ms-swift
install print them (``swift/cli/sft.py`` line 20 calls ``sft_main``; accelerate's FSDP plugin
raises "Could not find the transformer layer class ... in the model." when a class named in
``fsdp_transformer_layer_cls_to_wrap`` is not in the model: accelerate/utils/dataclasses.py).
"""

from __future__ import annotations

from rootrank.engine import diagnose_text
from rootrank.frameworks import framework_entry

SWIFT_WRAP = "".join(
    f"[rank{r}]: {line}\n"
    for r in (0, 1)
    for line in (
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/site-packages/swift/cli/sft.py", line 20, in <module>',
        "    sft_main()",
        '  File "/usr/local/lib/python3.12/site-packages/swift/pipelines/train/sft.py", line 354,'
        " in sft_main",
        "    return SwiftSft(args).main()",
        '  File "/usr/local/lib/python3.12/site-packages/accelerate/utils/dataclasses.py",'
        " line 1742, in <lambda>",
        "    raise ValueError(",
        "ValueError: Could not find the transformer layer class Qwen2AudioEncoderLayer in the"
        " model.",
    )
) + (
    "E1203 10:02:11.512000 7781 torch/distributed/elastic/multiprocessing/api.py:882] failed"
    " (exitcode: 1) local_rank: 0 (pid: 7790) of binary: /usr/bin/python3\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "/usr/local/lib/python3.12/site-packages/swift/cli/sft.py FAILED\n"
)


def test_a_swift_job_is_verified_with_swift_sft_not_a_torchrun_of_its_cli_file():
    rc = diagnose_text(SWIFT_WRAP).root_cause
    assert rc.signature == "fsdp-wrap-layer-class-not-found"
    assert rc.verify.startswith("NPROC_PER_NODE=<gpus> swift sft <your arguments>")
    assert "torchrun" not in rc.verify


def test_framework_clis_by_their_entry_files():
    site = "/opt/conda/lib/python3.10/site-packages"
    assert framework_entry([f"{site}/swift/cli/rlhf.py"], 4) == (
        "NPROC_PER_NODE=4 swift rlhf <your arguments>"
    )
    assert framework_entry([f"{site}/swift/cli/_megatron/sft.py"], None) == (
        "NPROC_PER_NODE=<gpus> megatron sft <your arguments>"
    )
    assert framework_entry([f"{site}/xtuner/tools/train.py"], 8) == (
        "NPROC_PER_NODE=8 xtuner train <your config>"
    )
    assert framework_entry(["/workspace/axolotl/src/axolotl/cli/train.py"], 2) == (
        "accelerate launch -m axolotl.cli.train <your config.yml>"
    )
    # the CLI's dispatcher names no command; a user's own swift/ folder is not ms-swift's CLI
    assert framework_entry([f"{site}/swift/cli/main.py"], 2) is None
    assert framework_entry(["/home/u/proj/swift/model.py"], 2) is None
