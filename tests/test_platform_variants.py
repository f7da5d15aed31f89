"""Platform and version variants of the least-covered failure classes.

Each case is a fragment written here in the shape PyTorch really prints it on that platform or
release: Apple MPS (``Placeholder storage ...``, ``Passed CPU tensor to MPS op``, float64 /
int64 / missing-op refusals), Windows (``[WinError 112]``, ``[WinError 5]``, ``[WinError 32]``),
PyTorch 0.x/1.0 allocator wordings, the PyTorch 2.x shared-memory allocation failure, and a
shared-memory open that failed with EMFILE. The message texts come from the upstream sources
named in the signatures' comments (aten/src/ATen/native/mps/OperationUtils.mm, MPSFallback.mm,
c10/core/MapAllocator.cpp, c10/core/CPUAllocator.cpp, aten/src/TH/THGeneral.cpp).

Every case asserts the diagnosed signature, failure class and the 1-based line of the root
cause's first evidence; the near-misses assert that the named signature is NOT found.
"""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text

CASES = [
    # (id, text, signature, failure_class, evidence line (1-based))
    (
        "mps-placeholder-storage-hf-generate",
        "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.61s/it]\n"
        "Using device: mps\n"
        "Traceback (most recent call last):\n"
        '  File "/Users/user/chat/run.py", line 31, in <module>\n'
        "    out = model.generate(input_ids, max_new_tokens=32)\n"
        '  File "/Users/user/.venv/lib/python3.11/site-packages/torch/nn/functional.py", line 2264, in embedding\n'
        "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
        "RuntimeError: Placeholder storage has not been allocated on MPS device!\n",
        "device-mismatch",
        "device-mismatch",
        8,
    ),
    (
        "mps-passed-cpu-tensor-lightning",
        "GPU available: True (mps), used: True\n"
        "TPU available: False, using: 0 TPU cores\n"
        "  | Name  | Type   | Params\n"
        "Epoch 0:   0%|          | 0/782 [00:00<?, ?it/s]\n"
        "Traceback (most recent call last):\n"
        '  File "/Users/user/proj/train.py", line 54, in <module>\n'
        "    trainer.fit(model, dm)\n"
        "RuntimeError: Passed CPU tensor to MPS op\n",
        "device-mismatch",
        "device-mismatch",
        8,
    ),
    (
        "mps-missing-op-no-fallback",
        "Traceback (most recent call last):\n"
        '  File "/Users/user/seg/train.py", line 120, in train_one_epoch\n'
        '    logits = F.interpolate(logits, size=target.shape[-2:], mode="bicubic", antialias=True)\n'
        "NotImplementedError: The operator 'aten::_upsample_bicubic2d_aa.out' is not currently implemented "
        "for the MPS device. If you want this op to be added in priority during the prototype phase of this "
        "feature, please comment on https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you "
        "can set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this "
        "op. WARNING: this will be slower than running natively on MPS.\n",
        "mps-unsupported-op",
        "unsupported-shape-or-dtype",
        4,
    ),
    (
        "mps-cumsum-int64-old-macos",
        '  File "/Users/user/.venv/lib/python3.10/site-packages/transformers/models/gpt_neox/modeling_gpt_neox.py", line 662, in forward\n'
        "    position_ids = attention_mask.long().cumsum(-1) - 1\n"
        "RuntimeError: MPS does not support cumsum op with int64 input. Support has been added in macOS 13.3\n",
        "mps-unsupported-op",
        "unsupported-shape-or-dtype",
        3,
    ),
    (
        "mps-float64-conversion",
        "Using MPS device\n"
        "Epoch 1/25 train loss 2.31\n"
        '  File "tiny_imagenet.py", line 47, in train_model\n'
        "    epoch_acc = running_corrects.double() / dataset_sizes[phase]\n"
        "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
        "Please use float32 instead.\n",
        "mps-unsupported-op",
        "unsupported-shape-or-dtype",
        5,
    ),
    (
        "shm-open-emfile-is-fd-exhaustion",
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.8/multiprocessing/queues.py", line 239, in _feed\n'
        '  File "/usr/local/lib/python3.8/dist-packages/torch/multiprocessing/reductions.py", line 322, in reduce_storage\n'
        "RuntimeError: unable to open shared memory object </torch_30997_2076642173> in read-write mode: Too many open files (24)\n",
        "too-many-open-files",
        "too-many-open-files",
        4,
    ),
    (
        "shm-allocate-pytorch2-wording",
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1284, in _get_data\n'
        "[rank0]:     success, data = self._try_get_data()\n"
        "[rank0]: RuntimeError: unable to allocate shared memory(shm) for file </torch_5361_1855279478_0>: Success (0)\n",
        "dataloader-shm-insufficient",
        "dataloader-worker-killed-or-shm",
        4,
    ),
    (
        "shm-open-enospc-stays-shm",
        "RuntimeError: unable to open shared memory object </torch_18692_1954506624> in read-write mode: "
        "No space left on device (28)\n",
        "dataloader-shm-insufficient",
        "dataloader-worker-killed-or-shm",
        1,
    ),
    (
        "windows-disk-full-winerror-112",
        "Saving model checkpoint to D:\\runs\\sft\\checkpoint-3000\n"
        "Traceback (most recent call last):\n"
        '  File "D:\\runs\\train.py", line 88, in <module>\n'
        "    trainer.train()\n"
        '  File "C:\\Users\\user\\miniconda3\\lib\\site-packages\\torch\\serialization.py", line 653, in save\n'
        "    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)\n"
        "OSError: [WinError 112] There is not enough space on the disk\n",
        "disk-full",
        "disk-full",
        7,
    ),
    (
        "windows-access-denied-checkpoint-rotation",
        "Deleting older checkpoint [D:\\out\\checkpoint-500] due to args.save_total_limit\n"
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\user\\miniconda3\\lib\\shutil.py", line 617, in _rmtree_unsafe\n'
        "    os.unlink(fullname)\n"
        "PermissionError: [WinError 5] Access is denied: 'D:\\\\out\\\\checkpoint-500\\\\optimizer.pt'\n",
        "permission-denied",
        "filesystem-permission",
        5,
    ),
    (
        "windows-sharing-violation-tmp-checkpoint",
        "Model weights saved in D:/proj/model_save/sft\\tmp-checkpoint-5000\\model.safetensors\n"
        '  File "C:\\Users\\user\\proj\\.venv\\lib\\site-packages\\transformers\\trainer.py", line 2483, in _save_checkpoint\n'
        "    os.rename(staging_output_dir, output_dir)\n"
        "PermissionError: [WinError 32] The process cannot access the file because it is being used by another "
        "process: 'D:/proj/model_save/sft\\\\tmp-checkpoint-5000'\n",
        "permission-denied",
        "filesystem-permission",
        4,
    ),
    (
        "bare-errno-13-from-zip-reader",
        '  File "D:\\\\sdenv\\\\lib\\\\site-packages\\\\torch\\\\serialization.py", line 997, in load_tensor\n'
        "    storage = zip_file.get_storage_from_record(name, numel, torch._UntypedStorage).storage()._untyped()\n"
        "PermissionError: [Errno 13] Permission denied\n",
        "permission-denied",
        "filesystem-permission",
        3,
    ),
    (
        "windows-pagefile-rust-mmap-wording",
        "Loading checkpoint shards:  50%|#####     | 1/2 [00:41<00:41, 41.2s/it]\n"
        "Exception: The paging file is too small for this operation to complete. (os error 1455)\n",
        "windows-pagefile-too-small",
        "cpu-oom",
        2,
    ),
    (
        "windows-dll-winerror-126",
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\user\\proj\\train.py", line 1, in <module>\n'
        "    import torch\n"
        '  File "C:\\Users\\user\\miniconda3\\lib\\site-packages\\torch\\__init__.py", line 148, in <module>\n'
        "    raise err\n"
        "OSError: [WinError 126] The specified module could not be found. Error loading "
        '"C:\\Users\\user\\miniconda3\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.\n',
        "shared-library-missing",
        "dependency-version-mismatch",
        6,
    ),
    (
        "macos-dlopen-symbol-not-found",
        "Traceback (most recent call last):\n"
        '  File "/Users/user/proj/train.py", line 3, in <module>\n'
        "    from torchvision.io import read_image\n"
        "ImportError: dlopen(/Users/user/.venv/lib/python3.11/site-packages/torchvision/image.so, 0x0006): "
        "Symbol not found: __ZN3c1017RegisterOperatorsD1Ev\n",
        "undefined-symbol",
        "dependency-version-mismatch",
        4,
    ),
    (
        "compile-python-too-new",
        '  File "/opt/conda/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", line 593, in check_if_dynamo_supported\n'
        '    raise RuntimeError("Python 3.12+ not yet supported for torch.compile")\n'
        "RuntimeError: Python 3.12+ not yet supported for torch.compile\n",
        "compile-platform-unsupported",
        "compile-dynamo-error",
        3,
    ),
    (
        "compile-dynamo-python-312-torch-2-2",
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/user/gpt/train.py", line 210, in <module>\n'
        "[rank1]:     model = torch.compile(model)\n"
        "[rank1]: RuntimeError: Dynamo is not supported on Python 3.12+\n",
        "compile-platform-unsupported",
        "compile-dynamo-error",
        4,
    ),
    (
        "capitalised-expected-scalar-type",
        '  File "/home/user/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 114, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
        "RuntimeError: Expected scalar type BFloat16 but found Float\n",
        "dtype-mismatch",
        "dtype-mismatch",
        3,
    ),
    (
        "cpu-oom-pytorch-1-0-posix-memalign",
        ">>> x = torch.empty(10**12)\n"
        "Traceback (most recent call last):\n"
        '  File "<stdin>", line 1, in <module>\n'
        "RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment, nbytes) == 0. 12 vs 0\n",
        "cpu-alloc-failed",
        "cpu-oom",
        4,
    ),
    (
        "cpu-oom-pytorch-0-4-th-allocator",
        '  File "/home/user/envs/torch/lib/python3.6/site-packages/torch/nn/modules/conv.py", line 301, in forward\n'
        "    self.padding, self.dilation, self.groups)\n"
        "RuntimeError: $ Torch: not enough memory: you tried to allocate 12GB. Buy new RAM! at "
        "/pytorch/aten/src/TH/THGeneral.cpp:201\n",
        "cpu-alloc-failed",
        "cpu-oom",
        3,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_platform_variant_is_diagnosed(case):
    _id, text, signature, failure_class, line = case
    rc = diagnose_text(text, mask=False).to_dict()["root_cause"]
    assert rc is not None, _id
    assert rc["signature"] == signature
    assert rc["failure_class"] == failure_class
    assert rc["evidence"][0]["line"] == line


NEAR_MISSES = [
    # (id, text, signature that must NOT be found)
    (
        "mps-fallback-userwarning-is-healthy",
        "/Users/user/.venv/lib/python3.11/site-packages/torch/nn/functional.py:4840: UserWarning: The operator "
        "'aten::col2im' is not currently supported on the MPS backend and will fall back to run on the CPU. "
        "This may have performance implications. (Triggered internally at "
        "/Users/runner/work/pytorch/pytorch/pytorch/aten/src/ATen/mps/MPSFallback.mm:13.)\n"
        "Epoch 3: 100%|██████████| 782/782 [02:11<00:00,  5.95it/s, loss=0.211]\n",
        "mps-unsupported-op",
    ),
    (
        "mps-placeholder-in-a-code-comment",
        '    no_cuda=True  # avoids the "RuntimeError: Placeholder storage has not been allocated on MPS device!"\n',
        "device-mismatch",
    ),
    (
        "errno-13-word-in-ssh-banner",
        "user@node01: Permission denied (publickey).\n"
        "retrying with the key from ~/.ssh/id_ed25519 ... connected\n",
        "permission-denied",
    ),
    (
        "compile-guard-message",
        "compile: skipped (Windows not yet supported for torch.compile in this torch; running eager)\n",
        "compile-platform-unsupported",
    ),
    (
        "torchvision-image-extension-warning",
        "/Users/user/.venv/lib/python3.11/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image "
        "Python extension: 'dlopen(/Users/user/.venv/lib/python3.11/site-packages/torchvision/image.so, 0x0006): "
        "Symbol not found: __ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality from "
        "`torchvision.io`, you can ignore this warning.\n",
        "undefined-symbol",
    ),
    (
        "disk-space-check-message",
        "disk check: 412G free on /scratch (there is not enough space on the disk only below 50G)\n",
        "disk-full",
    ),
]


@pytest.mark.parametrize("case", NEAR_MISSES, ids=[c[0] for c in NEAR_MISSES])
def test_near_miss_is_not_claimed(case):
    _id, text, signature = case
    diag = diagnose_text(text, mask=False).to_dict()
    found = {f["signature"] for f in diag["findings"]}
    assert signature not in found, (_id, found)


@pytest.mark.parametrize(
    ("text", "signature", "failure_class"),
    [
        (
            "Epoch 1:  43%|####      | 300/700 [01:38<02:11, 3.06it/s]Killed\n",
            "worker-sigkill-exit",
            "host-oom-killed",
        ),
        (
            "$ python train.py &\n[1]+  Killed                  python train.py\n",
            "worker-sigkill-exit",
            "host-oom-killed",
        ),
        ("zsh: killed     python train.py --bs 64\n", "worker-sigkill-exit", "host-oom-killed"),
        (
            "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)\n",
            "worker-sigkill-exit",
            "host-oom-killed",
        ),
        (
            "ValueError: `FlatParameter` requires uniform dtype but got torch.float32 and torch.bfloat16\n",
            "fsdp-flat-param-uniformity",
            "fsdp-state-dict-or-wrapping-error",
        ),
    ],
    ids=["tqdm-glued", "job-control", "zsh", "pycharm-137", "fsdp-torch2.0-dtype"],
)
def test_shell_and_ide_kill_messages_and_the_torch_2_0_fsdp_wording(text, signature, failure_class):
    rc = diagnose_text(text, mask=False).root_cause
    assert rc is not None and (rc.signature, rc.failure_class) == (signature, failure_class)
    assert rc.evidence[0].line == len(text.splitlines())


@pytest.mark.parametrize("text", ["Process Killed by user\n", "[rank: 1] Killed\n", "OOM Killed\n"])
def test_killed_in_prose_is_not_a_sigkill(text):
    d = diagnose_text(text, mask=False).to_dict()
    assert not any(f["signature"] == "worker-sigkill-exit" for f in d["findings"])
