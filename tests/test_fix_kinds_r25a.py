"""Kinds of miss the held-out r25a set showed (issues #8 and #15):

- an exception saying the dataset could not be opened (Python's ENOENT, a native reader's
  ``Could not open file``, h5py's missing object), raised on every rank while the loader is
  built, before any training step, is the data's location or format against the job's
  configuration (config-error), not the code line that opened it: the fix names the path (as
  the host sees it through the launch's container mount) or the field and the printed option
  that asks for it, and no rank is named (the launcher's first exit is a race). A real run:
  ``tests/r25a/shards_train.py`` (torch 2.13 CPU, gloo, ``torchrun --nproc-per-node=3``);
  the srun/h5py log is written here in their real formats with values of our own. One
  record's file missing mid-run under ``__getitem__`` stays a bad record (data-error): a real
  run of ``tests/r25a/sample_miss.py``;
- when interleaved output splits ``FileNotFoundError`` from its ``[Errno 2] No such file or
  directory: '<path>'`` text, the path is read from the Errno text;
- a bare ``assert`` on the arguments object inside their validation (``validate_args``) is a
  config error naming the option, read at the raising frame, though every frame is the
  user's checkout (a real run: ``tests/r25a/argcheck``);
- a library's own check raised under the user's code whose message names a parameter to set
  ("total_steps", "max_steps has to be specified") says to set that parameter, with the value
  the run printed (a real run: ``tests/r25a/sched``);
- an nvidia-smi table under another host's ``host: `` label is the same sweep, not a restart;
- an exception with no message (a bare ``raise NotImplementedError``) is read by the
  function that raised it, named with its file and line (a real run: ``tests/r25a/dispatch``).
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths, diagnose_text

HERE = Path(__file__).parent / "r25a"


def _diagnose(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_dataset_index_missing_on_every_rank_is_a_config_error_naming_the_option():
    d = _diagnose(HERE / "shards-missing-index.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "dataset-open-failed"
    assert root.failure_class == "config-error"
    assert d.initiator.rank is None
    text = (HERE / "shards-missing-index.log").read_text().splitlines()
    assert "FileNotFoundError" in text[root.evidence[0].line - 1]
    steps = " ".join(root.fix.steps)
    assert '"/srv/corpora/wiki_shards/train.idx"' in steps
    assert "set shard_root to the folder that holds it" in steps
    assert root.verify.startswith("ls -l /srv/corpora/wiki_shards/train.idx")


def _srun_h5py(field: str, option: str) -> str:
    """Two srun tasks (``-l``: ``N: `` prefixes) in a container whose data folder is mounted,
    both failing on the same missing HDF5 object while building the dataset."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/opt/app/fit.py", line 90, in <module>',
        "    main()",
        '  File "/opt/app/fit.py", line 61, in main',
        "    ds = Shards(args.shard_dir)",
        '  File "/opt/app/shards.py", line 22, in __init__',
        f'    self.extra = [h["{field}"][:] for h in self.handles]',
        '  File "/opt/app/shards.py", line 22, in <listcomp>',
        f'    self.extra = [h["{field}"][:] for h in self.handles]',
        '  File "h5py/_objects.pyx", line 54, in h5py._objects.with_phil.wrapper',
        '  File "h5py/_objects.pyx", line 55, in h5py._objects.with_phil.wrapper',
        '  File "/usr/lib/python3/dist-packages/h5py/_hl/group.py", line 357, in __getitem__',
        "    oid = h5o.open(self.id, self._e(name), lapl=self._lapl)",
        '  File "h5py/_objects.pyx", line 54, in h5py._objects.with_phil.wrapper',
        '  File "h5py/_objects.pyx", line 55, in h5py._objects.with_phil.wrapper',
        '  File "h5py/h5o.pyx", line 190, in h5py.h5o.open',
        f"KeyError: \"Unable to open object (object '{field}' doesn't exist)\"",
    ]
    lines = [
        "+ srun -l --ntasks=2 --container-image=/img/fit.sqsh"
        " --container-mounts=/scratch/team/h5_shards_v1:/shards python fit.py --shard_dir /shards",
        f"0: Namespace(shard_dir='/shards', {option}=True, batch_size=16)",
    ]
    for task in (1, 0):
        lines += [f"{task}: {x}" for x in frames]
    lines.append("srun: error: n07: tasks 0-1: Exited with exit code 1")
    return "\n".join(lines) + "\n"


def test_missing_hdf5_field_names_the_option_that_asks_for_it_and_the_mounted_folder():
    d = diagnose_text(_srun_h5py("span_starts", "span_masking"), "job.log", mask=False)
    root = d.root_cause
    assert root is not None
    assert root.signature == "dataset-open-failed"
    assert root.failure_class == "config-error"
    assert d.initiator.rank is None
    assert root.evidence[0].line == 19
    steps = " ".join(root.fix.steps)
    assert "Turn span_masking=True off for these files" in steps
    assert '"/scratch/team/h5_shards_v1"' in steps
    assert "'/scratch/team/h5_shards_v1/*'" in root.verify
    assert "'span_starts' in f" in root.verify


def _dali_missing(mounted: bool) -> str:
    """Two unprefixed processes (srun without -l) whose native reader cannot open its record
    file, under a launch line that mounts the data folder (or does not)."""
    mount = " --container-mounts=/nfs/img/recs:/data" if mounted else ""
    tb = [
        "Traceback (most recent call last):",
        '  File "/opt/cls/train.py", line 40, in <module>',
        "    fit(args)",
        '  File "/opt/cls/pipe.py", line 77, in build_iterator',
        "    pipe.build()",
        '  File "/usr/lib/python3/dist-packages/nvidia/dali/pipeline.py", line 564, in build',
        "    self._pipe.Build(self._names_and_devices)",
        'RuntimeError: [/opt/dali/dali/util/std_file.cc:29] Assert on "fp_ != nullptr" failed:'
        " Could not open file /data/val_256.rec: No such file or directory",
    ]
    lines = [f"+ srun --ntasks=2{mount} ./run.sh", *tb, *tb]
    lines.append("srun: error: n02: tasks 0-1: Exited with exit code 1")
    return "\n".join(lines) + "\n"


def test_native_reader_cannot_open_file_maps_the_path_through_the_mount():
    d = diagnose_text(_dali_missing(True), "job.log", mask=False)
    root = d.root_cause
    assert root is not None and root.signature == "dataset-open-failed"
    assert root.evidence[0].line == 9
    assert d.initiator.rank is None
    assert 'Put the file at "/nfs/img/recs/val_256.rec"' in root.fix.steps[0]
    assert root.verify.startswith("ls -l /nfs/img/recs/val_256.rec")
    plain = diagnose_text(_dali_missing(False), "job.log", mask=False).root_cause
    assert plain is not None and plain.signature == "dataset-open-failed"
    assert 'Make the file "/data/val_256.rec" exist' in plain.fix.steps[0]


def test_one_records_file_missing_mid_run_stays_a_bad_record():
    d = _diagnose(HERE / "one-sample-missing.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "dataset-sample-unreadable"
    assert root.failure_class == "data-error"
    assert d.initiator.rank == 1


def test_the_same_open_error_after_training_steps_is_not_a_start_up_failure():
    lines = [
        "[rank0]: step 1 loss 2.0",
        "[rank1]: step 1 loss 2.0",
        "[rank0]: step 2 loss 1.9",
        "[rank1]: step 2 loss 1.9",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/home/u/t.py", line 30, in <module>',
        "[rank1]:     main()",
        '[rank1]:   File "/home/u/t.py", line 22, in main',
        "[rank1]:     evaluate(open(args.eval_file).read())",
        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/data/eval.jsonl'",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature != "dataset-open-failed"


def test_path_split_from_its_exception_line_by_interleaving_is_read_from_the_errno_text():
    tb = [
        "Traceback (most recent call last):",
        '  File "/srv/det/train.py", line 12, in <module>',
        "    ds = build(cfg)",
        '  File "/srv/det/data.py", line 30, in build',
        "    cache = torch.load(cfg.cache)",
    ]
    lines = [
        "python -m torch.distributed.run --standalone --nproc_per_node=2 train.py",
        *tb,
        *tb,
        "FileNotFoundError",
        "FileNotFoundError: [Errno 2] No such file or directory: '/cache/boxes_train.bin'[Errno 2]"
        " No such file or directory: '/cache/boxes_train.bin'",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1"
        " (pid: 88) of binary: /usr/bin/python",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    root = d.root_cause
    assert root is not None and root.signature == "dataset-open-failed"
    assert '"/cache/boxes_train.bin"' in root.fix.steps[0]
    assert d.initiator.rank is None


# -- a bare assert on the arguments inside their validation -------------------------------


def test_bare_assert_on_arguments_in_their_validation_is_a_config_error_naming_the_option():
    """A real run of ``tests/r25a/argcheck/pretrain.py --use-cpu-offload --pin-memory``
    (torchrun, 2 ranks): ``validate_args`` asserts ``not args.pin_memory`` under
    ``if args.use_cpu_offload``; every frame is the user's checkout."""
    d = _diagnose(HERE / "arg-assert.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "library-argument-check-failed"
    assert root.failure_class == "config-error"
    assert root.evidence[0].line == 13
    assert d.initiator.rank is None
    step = root.fix.steps[0]
    assert "Change --pin-memory (--pin_memory) on the launch command" in step
    assert "`assert not args.pin_memory` in validate_args (arguments.py:16)" in step


def test_an_assert_on_computed_values_in_the_training_code_stays_the_users_exception():
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/home/u/proj/train.py", line 40, in <module>',
        "[rank0]:     main()",
        '[rank0]:   File "/home/u/proj/train.py", line 31, in train_step',
        "[rank0]:     assert logits.shape[-1] == args.vocab_size",
        "[rank0]: AssertionError",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"


# -- a library's check naming the parameter to set ----------------------------------------


def test_a_library_check_naming_a_parameter_says_to_set_it_with_its_printed_value():
    """A real run of ``tests/r25a/sched/train_sched.py`` (torchrun, 2 ranks): torch's
    OneCycleLR refuses to start without ``total_steps``; the user's frame only built it."""
    d = _diagnose(HERE / "sched-total-steps.log")
    root = d.root_cause
    assert root is not None
    assert root.signature == "library-argument-check-failed"
    assert root.failure_class == "config-error"
    assert root.evidence[0].line == 17
    assert d.initiator.rank is None
    step = root.fix.steps[0]
    assert "Set total_steps in the run's training arguments or config" in step
    assert "(this run printed total_steps=None on line 5)" in step
    assert "total_steps set" in root.verify


def test_the_users_own_raise_naming_a_parameter_stays_the_users_exception():
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/home/u/proj/train.py", line 40, in <module>',
        "[rank0]:     main()",
        '[rank0]:   File "/home/u/proj/train.py", line 12, in main',
        '[rank0]:     raise ValueError("warmup_steps has to be specified")',
        "[rank0]: ValueError: warmup_steps has to be specified",
    ]
    d = diagnose_text("\n".join(lines) + "\n", "job.log", mask=False)
    assert d.root_cause is not None
    assert d.root_cause.signature != "library-argument-check-failed"


# -- a parallel shell's sweep of nvidia-smi over many hosts --------------------------------

_TABLE = [
    "Mon Mar  3 09:12:0{s} 2025       ",
    "+---------------------------------------------------------------------------------------+",
    "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15    CUDA Version: 12.4     |",
    "|-----------------------------------------+----------------------+----------------------+",
    "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
    "|=========================================+======================+======================|",
    "|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |                    0 |",
    "| N/A   31C    P0             62W /  400W |       0MiB /  81920MiB |      0%      Default |",
    "+-----------------------------------------+----------------------+----------------------+",
]


def _sweep(lost: dict[str, str]) -> str:
    """``pdsh -w gpu-r[01-04] nvidia-smi`` output: each host's table under its ``host: ``
    label, a lost GPU's line after the table of the hosts in ``lost`` (host: bus id)."""
    lines: list[str] = []
    for i, host in enumerate(("gpu-r01", "gpu-r02", "gpu-r03", "gpu-r04")):
        lines += [f"{host}: {x.format(s=i)}" for x in _TABLE]
        if host in lost:
            lines.append(
                f"{host}: Unable to determine the device handle for GPU{lost[host]}: Unknown Error"
            )
    return "\n".join(lines) + "\n"


def test_one_nvidia_smi_table_per_host_is_one_sweep_not_restarts_of_a_job():
    d = diagnose_text(
        _sweep({"gpu-r02": "0000:8A:00.0", "gpu-r04": "0000:4C:00.0"}), "sweep.log", mask=False
    )
    root = d.root_cause
    assert root is not None
    assert root.failure_class == "gpu-hardware-xid-ecc"
    assert [e.line for e in root.evidence] == [21, 42]
    assert not any("runs of the job" in line for line in d.reasoning)


# -- an exception with no message is read by the function that raised it -------------------


def test_a_bare_raise_is_read_by_its_raising_function():
    """A real run of ``tests/r25a/dispatch/score_train.py`` (torchrun, 2 ranks): a score
    dispatcher's ``else: raise NotImplementedError`` for a data source it has no branch for."""
    d = _diagnose(HERE / "bare-raise.log")
    root = d.root_cause
    assert root is not None
    assert root.failure_class == "user-code-exception"
    assert root.evidence[0].line == 15
    assert root.fix.variant is not None and root.fix.variant.id == "bare-raise"
    step = root.fix.steps[0]
    assert (
        "Add a branch (or register an implementation) in dispatch/score_train.py:12"
        " (in compute_score) for the value this run passed"
    ) in step
    assert "(`raise NotImplementedError`)" in step
