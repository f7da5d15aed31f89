"""Bug-report paste shapes: fragments as people paste them into issues.

Each case is a fragment written here in the shape the tool really prints (ComfyUI's
``!!! Exception during processing !!!`` prefix, IPython's bare exception class, vLLM
``ERROR ... [core.py:N]`` prefixes, a traceback cut at either end, markdown that ate
``__init__`` underscores) and asserts the diagnosed signature, failure class and the
1-based line of the root cause's first evidence. Warning-only pastes must not be claimed.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text

CASES = [
    # (id, text, signature, failure_class, evidence line (1-based)[, initiating rank])
    (
        "comfyui-prefix-flash-attn",
        "got prompt\n"
        "!!! Exception during processing !!! FlashAttention only supports Ampere GPUs or newer.\n"
        "Exception raised from mha_fwd at C:\\a\\flash-attention\\csrc\\flash_attn\\flash_api.cpp:370 (most recent call first):\n"
        "00007FFF76662C24 c10.dll!c10::Error::Error [<unknown file> @ <unknown line number>]\n",
        "flash-attention-unsupported",
        "unsupported-shape-or-dtype",
        2,
    ),
    (
        "ipython-xformers-fp32",
        "---------------------------------------------------------------------------\n"
        "NotImplementedError                       Traceback (most recent call last)\n"
        "Cell In[7], line 2\n"
        "      1 pipe.enable_xformers_memory_efficient_attention()\n"
        "----> 2 image = pipe(prompt).images[0]\n"
        "\n"
        "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
        "     query       : shape=(1, 2, 1, 40) (torch.float32)\n"
        "`flshattF@0.0.0` is not supported because:\n"
        "    dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})\n",
        "xformers-no-operator",
        "unsupported-shape-or-dtype",
        7,
    ),
    (
        "xformers-wheel-mismatch-beats-no-operator",
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.3.0+cu121 with CUDA 1201 (you have 2.1.2+cu121)\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/infer.py", line 12, in <module>\n'
        "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
        "`cutlassF` is not supported because:\n"
        "    operator wasn't built - see `python -m xformers.info` for more info\n",
        "xformers-built-for-other-torch",
        "dependency-version-mismatch",
        1,
    ),
    (
        "tokenizers-enum-no-exception-prefix-windows",
        '  File "C:\\Users\\user\\AppData\\Roaming\\Python\\Python310\\site-packages\\transformers\\tokenization_utils_fast.py", line 111, in __init__\n'
        "    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)\n"
        "data did not match any variant of untagged enum PyPreTokenizerTypeWrapper at line 951 column 3\n",
        "tokenizers-json-unparseable",
        "dependency-version-mismatch",
        3,
    ),
    (
        "markdown-ate-dunder-peft-config",
        "Relevant logs:\n"
        '  File "H:\\webui\\env\\lib\\site-packages\\peft\\utils\\config.py", line 114, in from_pretrained\n'
        "    config = cls(**kwargs)\n"
        "TypeError: LoraConfig.init() got an unexpected keyword argument 'use_dora'\n",
        "config-class-unexpected-kwarg",
        "dependency-version-mismatch",
        4,
    ),
    (
        "bitsandbytes-old-wording",
        "CUDA SETUP: Loading binary /opt/venv/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so...\n"
        "CUDA SETUP: Something unexpected happened. Please compile from source:\n"
        "CUDA SETUP: Setup Failed!\n"
        "Traceback (most recent call last):\n"
        '  File "/work/finetune.py", line 5, in <module>\n'
        "    import bitsandbytes as bnb\n"
        "RuntimeError: CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix your environment!\n",
        "bitsandbytes-cuda-setup-failed",
        "dependency-version-mismatch",
        3,
    ),
    (
        "vllm-enginecore-triton-launcher-gcc",
        "ERROR 07-01 10:11:12 [core.py:586] EngineCore failed to start.\n"
        "ERROR 07-01 10:11:12 [core.py:586]     raise CalledProcessError(retcode, cmd)\n"
        "ERROR 07-01 10:11:12 [core.py:586] torch._inductor.exc.InductorError: CalledProcessError: Command "
        "'['/usr/bin/cc', '/tmp/tmpa1b2c3/main.c', '-O3', '-shared', '-fPIC', '-lcuda']' returned non-zero exit status 1.\n",
        "triton-launcher-build-failed",
        "compile-dynamo-error",
        3,
    ),
    (
        "blackwell-arch-then-triton-failed-cut",
        "'sm_120' is not a recognized processor for this target (ignoring processor)\n"
        "'sm_120' is not a recognized processor for this target (ignoring processor)\n"
        "E0305 20:23:38.890000 755 site-packages/torch/_inductor/runtime/triton_heuristics.py:533] Triton compilation failed: triton_poi_fu\n",
        "triton-arch-not-recognized",
        "compile-dynamo-error",
        1,
    ),
    (
        "weights-only-header-wraps-cuda-error",
        "UnpicklingError: Weights only load failed. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a trusted source.\n"
        " Please file an issue with the following so that we can make `weights_only=True` compatible with your use case: WeightsUnpickler error: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n",
        "no-cuda-gpus",
        "gpu-unavailable",
        2,
    ),
    (
        "weights-only-header-cut-before-detail",
        "---> 12 model.load_state_dict(torch.load(path))\n"
        "\n"
        "UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only if you trust the source of the checkpoint.\n",
        "weights-only-load-failed",
        "checkpoint-load-mismatch",
        3,
    ),
    (
        "transformers-gated-repo-wrapper",
        "OSError: You are trying to access a gated repo.\n"
        "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-3.1-8B.\n"
        "401 Client Error. (Request ID: Root=1-0000)\n",
        "hf-hub-download-failed",
        "config-error",
        1,
    ),
    (
        "fa2-toggled-but-not-installed",
        '  File "/opt/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 1587, in _flash_attn_2_can_dispatch\n'
        "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn seems to be not installed. Please refer to the documentation.\n",
        "module-not-found",
        "dependency-version-mismatch",
        2,
    ),
    (
        "zero-offload-client-optimizer",
        "deepspeed.runtime.zero.utils.ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer (<class 'torch.optim.adamw.AdamW'>) which in most cases will yield poor performance.\n",
        "deepspeed-config-error",
        "config-error",
        1,
    ),
    (
        "accelerate-fp16-on-mps",
        "  0%|          | 0/120 [00:00<?, ?it/s]\n"
        "ValueError: fp16 mixed precision requires a GPU (not 'mps').\n",
        "accelerate-config-error",
        "config-error",
        2,
    ),
    (
        "oom-paste-cut-at-start-old-tail",
        "I get this after 3 epochs:\n"
        "3.35 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n",
        "cuda-oom",
        "cuda-oom",
        2,
    ),
    (
        "oom-paste-cut-at-start-new-tail",
        "is free. Including non-PyTorch memory, this process has 14.59 GiB memory in use. Of the allocated memory 14.39 GiB is allocated by PyTorch, and 61.74 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
        "cuda-oom",
        "cuda-oom",
        1,
    ),
    (
        "xpu-allocator-oom",
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 192.00 MiB. GPU 3 has a total capacity of 31.89 GiB of which 13.22 GiB is free.\n",
        "cuda-oom",
        "cuda-oom",
        1,
    ),
    (
        "pytorch-0.4-cuda-runtime-error-2",
        '  File "train.py", line 118, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingAllocator.cpp:510\n",
        "cuda-oom",
        "cuda-oom",
        3,
    ),
    (
        "trainer-purely-quantized-model",
        '[rank1]:   File "/opt/venv/lib/python3.10/site-packages/transformers/trainer.py", line 515, in __init__\n'
        "[rank1]:     raise ValueError(\n"
        "[rank1]: ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters on top of the quantized model to correctly perform fine-tuning.\n",
        # A set-up error every rank hits the same way, with no other rank in the paste:
        # rank 1's copy does not show that rank 1 was first (no initiating rank).
        "peft-tokenizer-config-error",
        "config-error",
        3,
        None,
    ),
    (
        "bnb-quantization-without-gpu",
        "RuntimeError: No GPU found. A GPU is needed for quantization.\n",
        "no-cuda-gpus",
        "gpu-unavailable",
        1,
    ),
    (
        "datasets-cast-error-multiline",
        "Generating train split: 0 examples [00:00, ? examples/s]\n"
        "datasets.table.CastError: Couldn't cast\n"
        "prompt: string\n"
        "to\n"
        "{'text': Value(dtype='string', id=None)}\n"
        "because column names don't match\n",
        "data-decode-error",
        "data-error",
        2,
    ),
    (
        "triton-compilation-failed-alone",
        "E0610 08:00:01.000000 91 torch/_inductor/runtime/triton_heuristics.py:539] Triton compilation failed: triton_red_fused_sum_3\n"
        "E0610 08:00:01.000000 91 torch/_inductor/runtime/triton_heuristics.py:539] def triton_red_fused_sum_3(in_ptr0, out_ptr0, xnumel, rnumel):\n",
        "inductor-or-triton-error",
        "compile-dynamo-error",
        1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_paste_shape_is_diagnosed(case):
    _id, text, signature, failure_class, line = case[:5]
    rank = case[5] if len(case) > 5 else None  # a "[rankN]:" prefix names the rank
    d = diagnose_text(text, name="paste.log").to_dict()
    rc = d["root_cause"]
    assert rc is not None, _id
    assert rc["signature"] == signature
    assert rc["failure_class"] == failure_class
    assert rc["evidence"][0]["line"] == line
    assert d["initiating_rank"] == rank


WARNING_ONLY = [
    (
        "xformers-warning-run-continues",
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.4.1+cu121 with CUDA 1201 (you have 2.5.1+cu124)\n"
        "  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n"
        "{'loss': 0.8121, 'epoch': 1.0}\n"
        "Training completed. Saving model to out/\n",
        "xformers-built-for-other-torch",
    ),
    (
        "sm-arch-warning-compile-ok",
        "'sm_90a' is not a recognized processor for this target (ignoring processor)\n"
        "step 100 | loss 3.21 | 140 ms/it\n"
        "done\n",
        "triton-arch-not-recognized",
    ),
]


@pytest.mark.parametrize("case", WARNING_ONLY, ids=[c[0] for c in WARNING_ONLY])
def test_warning_only_paste_is_not_claimed(case):
    _id, text, signature = case
    d = diagnose_text(text, name="paste.log").to_dict()
    assert d["root_cause"] is None
    # the warning is recorded (so the report can mention it) but not promoted to a cause
    assert [f["signature"] for f in d["findings"]] == [signature]


def test_non_config_class_kwarg_error_is_not_this_signature():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 40, in <module>\n'
        "TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategyy'\n"
    )
    d = diagnose_text(text, name="paste.log").to_dict()
    assert all(f["signature"] != "config-class-unexpected-kwarg" for f in d["findings"])
