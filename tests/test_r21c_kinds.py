"""The kinds of miss heldout-r21a showed, each on text written here in the tools' real shape
(DeepSpeed's per-node launcher, a DataLoader worker's re-raised exception):

A. DeepSpeed's ``sigkill_handler`` line (``{cmd} exits with return code = {code}``) quotes
   ``cmd``, the loop variable of its spawn loop, so the argv of the LAST worker it started,
   whichever failed: its ``--local_rank`` names no rank; only the code is the failed one's;
B. a file-access exception raised under a dataset's ``__getitem__`` (or a DataLoader
   worker's fetch) that quotes one sample's path is a bad record of the data (data-error);
   a name whose UTF-8 was read as Latin-1 gets the encoding fix, with the name repaired;
C. two or more processes of one launch failing to bind the store's port in their own env://
   rendezvous (which only rank 0's process hosts) each took rank 0: the fix is the rank the
   script reads, not another port, and no rank is named;
D. FlashAttention-2 asked for on GPUs the log shows as older than Ampere: stop requesting
   it (sdpa / eager), not "install flash-attn";
E. a CUDA OOM whose request is a printed DeepSpeed bucket size times the dtype's width:
   lower that setting, not the micro-batch.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.sample_load import repaired_name
from rootrank.engine import diagnose_text

SIGS = Path(__file__).resolve().parents[1] / "signatures" / "data"
LAUNCH = SIGS.parent / "launch"

# -- A ------------------------------------------------------------------------------------


def _deepspeed_launch(local_rank_quoted: int, code: int) -> str:
    """Four workers started by DeepSpeed's launcher, one unprefixed traceback, then the
    launcher's kill lines and its exit line quoting ``--local_rank=<local_rank_quoted>``."""
    lines = [
        "[2026-12-01 10:00:00,100] [INFO] [launch.py:146:main] WORLD INFO DICT: {'localhost': [0, 1, 2, 3]}",
        "[2026-12-01 10:00:00,100] [INFO] [launch.py:152:main] nnodes=1, num_local_procs=4, node_rank=0",
        "Traceback (most recent call last):",
        '  File "/home/u/proj/train.py", line 88, in <module>',
        "    main()",
        '  File "/home/u/proj/train.py", line 71, in main',
        "    loss = compute(batch)",
        "ValueError: expected a non-empty batch",
        "[2026-12-01 12:10:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 7001",
        "[2026-12-01 12:10:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 7002",
        "[2026-12-01 12:10:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 7003",
        "[2026-12-01 12:10:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 7004",
        "[2026-12-01 12:10:01,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u',"
        f" 'train.py', '--local_rank={local_rank_quoted}', '--deepspeed', 'ds.json'] exits with"
        f" return code = {code}",
    ]
    return "\n".join(lines) + "\n"


def test_deepspeed_exit_line_names_no_rank_for_an_unprefixed_exception():
    d = diagnose_text(_deepspeed_launch(3, 1), "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.evidence[0].line == 8
    assert d.initiator.rank is None


def test_deepspeed_exit_line_of_a_signal_names_no_rank():
    d = diagnose_text(_deepspeed_launch(3, -9), "job.log", mask=False)
    assert d.root_cause is not None
    assert d.initiator.rank is None
    # the worker-SIGKILL reading of that line is the root; it carries no rank either
    assert d.root_cause.rank is None
    assert all(not g.ranks for g in d.collateral if "exits with return code" in g.evidence[0].text)


# -- B ------------------------------------------------------------------------------------


def test_repaired_name_reads_utf8_decoded_as_latin1():
    assert repaired_name("/data/img/joaqu\u00c3\\xadn.jpg") == "/data/img/joaquín.jpg"
    # a lead byte the index lower-cased
    assert repaired_name("/data/img/joaqu\u00e3\\xadn.jpg") == "/data/img/joaquín.jpg"
    assert repaired_name("/data/img/caf\u00c3\u00a9.png") == "/data/img/café.png"
    assert repaired_name("/data/img/café.png") is None
    assert repaired_name("/data/img/0001.png") is None


def test_worker_sample_with_garbled_name_is_data_error_with_encoding_fix():
    text = (SIGS / "dataset-sample-unreadable.positive.log").read_text()
    d = diagnose_text(text, "run.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "data-error"
    assert rc.signature == "dataset-sample-unreadable"
    assert d.initiator.rank == 1
    assert rc.evidence[0].line == 37
    assert rc.fix.variant.id == "garbled-encoding"
    assert "joaquín-sorolla_garden.jpg" in rc.fix.steps[0]
    assert "grep -F 'joaquín-sorolla_garden.jpg'" in rc.verify


def _getitem_in_process(path: str) -> str:
    """Rank 2's traceback: its dataset's ``__getitem__`` (no worker processes) opens ``path``."""
    p = "[rank2]:"
    return (
        "\n".join(
            [
                f"{p} Traceback (most recent call last):",
                f'{p}   File "/home/u/proj/train.py", line 120, in <module>',
                f"{p}     main()",
                f'{p}   File "/home/u/proj/train.py", line 101, in main',
                f"{p}     for batch in loader:",
                f'{p}   File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 733, in __next__',
                f"{p}     data = self._next_data()",
                f'{p}   File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch',
                f"{p}     data = [self.dataset[idx] for idx in possibly_batched_index]",
                f'{p}   File "/home/u/proj/data.py", line 40, in __getitem__',
                f"{p}     img = Image.open(os.path.join(self.root, rec['file']))",
                f'{p}   File "/usr/lib/python3/dist-packages/PIL/Image.py", line 3431, in open',
                f'{p}     fp = builtins.open(filename, "rb")',
                f"{p} FileNotFoundError: [Errno 2] No such file or directory: '{path}'",
            ]
        )
        + "\n"
    )


def test_sample_missing_in_process_is_data_error_on_its_rank():
    d = diagnose_text(_getitem_in_process("/data/coco/train/000000123.jpg"), "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "data-error"
    assert d.initiator.rank == 2
    assert rc.evidence[0].line == 14
    assert rc.fix.variant.id == "general"
    assert "000000123.jpg" in rc.fix.steps[0]


def test_config_file_missing_outside_a_dataset_stays_generic():
    text = (SIGS / "dataset-sample-unreadable.near-miss.log").read_text()
    d = diagnose_text(text, "run.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class != "data-error"


# -- C ------------------------------------------------------------------------------------


def test_several_processes_binding_the_store_port_each_took_rank_zero():
    text = (LAUNCH / "port-in-use.positive-2.log").read_text()
    d = diagnose_text(text, "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "port-in-use"
    assert rc.evidence[0].line == 42
    assert rc.fix.variant.id == "every-process-rank-zero"
    assert "RANK, LOCAL_RANK and WORLD_SIZE" in rc.fix.steps[0]
    assert d.initiator.rank is None
    assert "2 processes each failed to bind" in d.initiator.why


def test_one_process_binding_the_port_keeps_the_free_port_fix():
    text = (LAUNCH / "port-in-use.positive.log").read_text()
    d = diagnose_text(text, "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant.id != "every-process-rank-zero"
    assert d.initiator.rank == 0


# -- D ------------------------------------------------------------------------------------


def _smi_then_fa2(gpu: str) -> str:
    """nvidia-smi's table naming ``gpu`` twice, then transformers' ImportError for
    attn_implementation="flash_attention_2" without flash-attn, on two ranks."""
    lines = [
        "+-----------------------------------------------------------------------------+",
        "| NVIDIA-SMI 525.85.12    Driver Version: 525.85.12    CUDA Version: 12.0     |",
        "|-------------------------------+----------------------+----------------------+",
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "|===============================+======================+======================|",
        f"|   0  {gpu:<24}On  | 00000000:1B:00.0 Off |                    0 |",
        f"|   1  {gpu:<24}On  | 00000000:1C:00.0 Off |                    0 |",
        "+-------------------------------+----------------------+----------------------+",
    ]
    for r in (0, 1):
        p = f"[rank{r}]:"
        lines += [
            f"{p} Traceback (most recent call last):",
            f'{p}   File "/home/u/proj/finetune.py", line 30, in <module>',
            f'{p}     model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="flash_attention_2")',
            f'{p}   File "/opt/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 2489, in _flash_attn_2_can_dispatch',
            f'{p}     raise ImportError(f"{{preface}} the package flash_attn seems to be not installed. {{install_message}}")',
            f"{p} ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following"
            " error: the package flash_attn seems to be not installed. Please refer to the documentation of"
            " https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.",
        ]
    return "\n".join(lines) + "\n"


def test_fa2_on_v100_is_fixed_by_not_requesting_it():
    d = diagnose_text(_smi_then_fa2("Tesla V100-SXM2-32GB"), "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "dependency-version-mismatch"
    assert rc.fix.variant.id == "flash-attn-pre-ampere"
    assert (
        'attn_implementation="sdpa"' in rc.fix.steps[0]
        or 'attn_implementation="sdpa"' in rc.fix.steps[0]
    )
    assert "get_device_capability" in rc.verify


def test_fa2_missing_on_a100_still_installs_it():
    d = diagnose_text(_smi_then_fa2("NVIDIA A100-SXM4-80GB"), "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant.id != "flash-attn-pre-ampere"


# -- E ------------------------------------------------------------------------------------


def _zero_bucket_oom(bucket: str, request: str) -> str:
    """DeepSpeed's config dump (its ``reduce_bucket_size``), then one rank's OOM in ZeRO's
    reduce-bucket allocation asking for ``request``."""
    p = "[rank1]:"
    lines = [
        "[2026-12-01 10:00:01,000] [INFO] [config.py:1003:print]   json = {",
        '    "train_micro_batch_size_per_gpu": 1, ',
        '    "fp16": {',
        '        "enabled": true',
        "    }, ",
        '    "zero_optimization": {',
        '        "stage": 1, ',
        f'        "reduce_bucket_size": {bucket}, ',
        '        "allgather_bucket_size": 5.000000e+08',
        "    }",
        "}",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/home/u/proj/train.py", line 52, in <module>',
        f"{p}     engine.backward(loss)",
        f'{p}   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/zero/stage_1_and_2.py", line 2048, in backward_prologue',
        f"{p}     buf_1 = torch.empty(int(self.reduce_bucket_size),",
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {request}. GPU 1 has a total"
        " capacity of 31.74 GiB of which 3.64 GiB is free. Including non-PyTorch memory, this process has"
        " 28.09 GiB memory in use. Of the allocated memory 27.10 GiB is allocated by PyTorch, and 12.50 MiB"
        " is reserved by PyTorch but unallocated.",
    ]
    return "\n".join(lines) + "\n"


def test_oom_the_size_of_the_reduce_bucket_lowers_the_bucket():
    d = diagnose_text(_zero_bucket_oom("2.000000e+09", "3.73 GiB"), "job.log", mask=False)
    rc = d.root_cause
    assert rc is not None
    assert rc.failure_class == "cuda-oom"
    assert rc.evidence[0].line == 17
    assert rc.fix.variant.id == "config-sized-buffer"
    assert "reduce_bucket_size = 2.000000e+09 elements x 2 bytes" in rc.fix.steps[0]


def test_oom_of_another_size_is_not_the_bucket():
    d = diagnose_text(_zero_bucket_oom("2.000000e+09", "1.20 GiB"), "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.fix.variant.id != "config-sized-buffer"
