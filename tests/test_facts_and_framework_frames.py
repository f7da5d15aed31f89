"""Two readings of what is not the user's own: a line that only names the GPU model or the
CUDA build (a fact the analysis reads for its architecture check,
rootrank.analysis.prepare.arch_mismatches) is not collateral of the root cause, being no event
the failure explained (new-user trial r20, finding 12: "The log names the GPU model ..." was
listed as explained by a SIGKILL); and a frame of a framework's checkout is not the user's
code (rootrank.tracebacks.is_user_frame)."""

from __future__ import annotations

from rootrank.engine import diagnose_text

LOG = (
    "CUDA used to build PyTorch: 12.1, GPU: NVIDIA A100-SXM4-80GB\n"
    "[rank1]:Traceback (most recent call last):\n"
    '[rank1]:  File "/home/u/train.py", line 50, in <module>\n'
    "[rank1]:    loss = model(x)\n"
    "[rank1]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
    " total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)


def test_the_gpu_fact_is_found_but_not_collateral() -> None:
    d = diagnose_text(LOG, "job.log", mask=False)
    assert (d.root_cause.failure_class, d.initiating_rank) == ("cuda-oom", 1)
    assert "gpu-and-cuda-build-named" in {f.signature for f in d.findings}
    assert "gpu-and-cuda-build-named" not in {c.signature for c in d.collateral}


def test_framework_checkouts_in_containers_are_not_the_users_code() -> None:
    """NGC containers run NeMo from /opt/NeMo and Megatron-LM from a checkout: a frame of
    nemo/lightning or megatron/training is the framework's, so the report points at no
    "your code" line there (held-out r20a case 06)."""
    from rootrank.tracebacks import is_user_frame

    assert not is_user_frame("/opt/NeMo/nemo/lightning/io/pl.py")
    assert not is_user_frame("/workspace/Megatron-LM/megatron/training/arguments.py")
    assert is_user_frame("/workspace/Megatron-LM/pretrain_gpt.py")
    assert is_user_frame("/home/u/proj/nemo_recipe.py")
