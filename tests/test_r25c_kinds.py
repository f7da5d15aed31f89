"""Held-out r25c kinds (its MISSES.md), on fixtures of our own: real torch 2.13 CPU runs
(torchrun, gloo) beside their signatures or under tests/fix_variants, and logs written in the
tools' own formats. Each test asserts the class, the initiating rank, the evidence line and the
words of the fix that name the mechanism."""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"
VARIANTS = Path(__file__).parent / "fix_variants"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_loss_target_dtype_refusal_is_dtype_mismatch_where_the_target_was_built():
    # real run: rank 1's nll_loss targets are torch.tensor of float class ids (before: a plain
    # Python exception, "do what the message says" at the loss line)
    d = _diag(SIGNATURES / "tensor/dtype-mismatch.positive-3.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "dtype-mismatch"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 16
    assert d.root_cause.fix.variant.id == "loss-target-one-rank"
    step = d.root_cause.fix.steps[0]
    assert "nll_loss(out.log_softmax(-1), targets[b:b + 8])" in step
    assert "on rank 1 only (rank 0 ran the same line" in step
    assert "dtype=torch.long" in step and "where that tensor was built" in step


def test_loss_target_dtype_on_every_rank_is_the_codes_own_cast():
    d = _diag(VARIANTS / "dtype-mismatch/loss-target.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "dtype-mismatch"
    assert d.root_cause.fix.variant.id == "loss-target"
    assert "rank 1 only" not in d.root_cause.fix.steps[0]


def test_dataloader_timeout_is_a_slow_live_worker_not_a_dead_one():
    # real run: rank 1's dataset takes 4 s on one index under DataLoader(timeout=2) (before:
    # dead-worker advice, 'killed by signal', dmesg OOM); its own signature since trial r25
    # (a live worker's slow sample: data-error, the held-out's first label, and no dmesg confirm)
    d = _diag(Path(__file__).parent / "r25c" / "dataloader-timeout-worker-timeout.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.root_cause.signature == "dataloader-timeout"
    assert not any("dmesg" in c for c in d.root_cause.confirm)
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 30
    steps = " ".join(d.root_cause.fix.steps)
    assert "timeout=2 fired on rank 1: no worker died" in steps
    assert "one sample or read slower than the timeout" in steps
    assert "__getitem__ for every index of rank 1's own data" in steps
    assert "dmesg -T" not in steps
    assert "no 'DataLoader timed out'" in d.root_cause.verify


def test_emfile_inside_a_memory_map_is_kept_maps_not_a_low_ulimit():
    # real run: rank 1 caches one np.load(mmap_mode="r") per file over 400 files under
    # ulimit -n 200 (before: raise ulimit -n 65535, a verify the hard limit may refuse)
    d = _diag(VARIANTS / "too-many-open-files/mapped-files.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "too-many-open-files"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 28
    assert d.root_cause.fix.variant.id == "mapped-files"
    steps = " ".join(d.root_cause.fix.steps)
    assert 'self.opened[k] = np.load(self.paths[k], mmap_mode="r")' in steps
    assert "keeps its own duplicated file descriptor" in steps
    assert "vm.max_map_count" in steps
    assert "ulimit" not in d.root_cause.verify


def test_emfile_general_verify_raises_the_soft_limit_only_to_the_hard_one():
    d = _diag(VARIANTS / "too-many-open-files/general.log")
    assert d.root_cause is not None
    assert d.root_cause.fix.variant is None or d.root_cause.fix.variant.id == "general"
    assert d.root_cause.verify.startswith('ulimit -n "$(ulimit -Hn)"')


def test_math_domain_error_in_a_gradient_hook_is_a_zero_norm():
    # real run: rank 1's all-zero batch gives a zero weight gradient, and a register_hook's
    # math.log10 of its norm raises inside backward() (before: "fix the input it names")
    d = _diag(VARIANTS / "user-code-exception/math-domain.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 25
    assert d.root_cause.fix.variant.id == "math-domain"
    steps = " ".join(d.root_cause.fix.steps)
    assert "it was exactly 0 on rank 1" in steps
    assert "all padding" in steps
    assert "Make monitoring code total" in steps and "register_hook" in steps


def test_verify_imports_only_names_the_script_defines_at_module_level():
    # real run: the DataLoader is built inside main() (`for n, b in enumerate(loader)`), so
    # `from train import loader` would raise ImportError: the verify is the user's own launch
    d = _diag(Path(__file__).parent / "r25c/collate-loader-local-to-main.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "data-error"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 30
    assert "import" not in d.root_cause.verify
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=2 train.py  # the same launch")


def test_module_names_are_defs_and_module_level_lines_not_function_locals():
    from rootrank.entry.commands import module_names
    from rootrank.tracebacks import Frame

    frames = [
        Frame("/job/train.py", 40, "<module>", True, "loader = build_loader(cfg)"),
        Frame("/job/train.py", 21, "build_loader", True, "return DataLoader(ds, batch_size=bs)"),
        Frame("/job/train.py", 30, "main", True, "for step, batch in enumerate(batches):"),
        Frame("/venv/site-packages/torch/utils/data/dataloader.py", 700, "__next__", False, "x"),
    ]
    names = module_names(frames)
    assert {"loader", "build_loader", "cfg", "main"} <= names
    assert "batches" not in names and "ds" not in names


def test_readers_parse_error_points_back_to_the_rank_that_wrote_the_file():
    # real run: rank 0 json.dumps a vocabulary into a file object it never closes, then the
    # barrier; ranks 1 and 2 fail to parse it at char 24571 (before: rank 1, a reader, with
    # "fix the input it names")
    d = _diag(SIGNATURES / "python/shared-file-read-before-written.positive.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shared-file-read-before-written"
    assert d.root_cause.failure_class == "user-code-exception"
    assert d.initiating_rank == 0
    assert d.root_cause.evidence[0].line == 24
    assert 5 in [e.line for e in d.root_cause.evidence]
    assert d.root_cause.captures["readers"] == "1, 2"
    assert d.root_cause.captures["block_cut"] == "24576"
    assert d.root_cause.fix.variant.id == "cut-at-block"
    steps = " ".join(d.root_cause.fix.steps)
    assert "Rank 0 wrote out/vocab.json (line 5:" in steps
    assert "did not flush or close the file before the others read it" in steps
    assert "os.replace()" in steps and "broadcast_object_list" in steps


def test_a_parse_error_no_rank_said_it_wrote_stays_the_readers_own():
    d = _diag(SIGNATURES / "python/shared-file-read-before-written.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature != "shared-file-read-before-written"


def test_block_cut_only_near_a_block_boundary():
    from rootrank.analysis.unflushed_write import BLOCK, NEAR_BLOCK

    assert BLOCK == 4096 and NEAR_BLOCK < BLOCK // 8


def test_pickle_ran_out_of_input_after_another_rank_wrote_it_names_the_writer():
    # real run: rank 1 pickle.dumps into a file object it keeps open; rank 0's pickle.load
    # reads an empty file (EOFError: Ran out of input)
    d = _diag(VARIANTS / "shared-file-read-before-written/writer-incomplete.log")
    assert d.root_cause is not None
    assert d.root_cause.signature == "shared-file-read-before-written"
    assert d.initiating_rank == 1
    assert d.root_cause.evidence[0].line == 12
    assert d.root_cause.fix.variant.id == "writer-incomplete"
    assert "Rank 1 wrote cache/splits.pkl (line 5:" in d.root_cause.fix.steps[0]


def test_a_bracketed_rank_line_carries_that_ranks_settings_not_torchruns_tag():
    from rootrank.ranklines import BRACKET_RANK_LINES
    from rootrank.scan import Settings, note_settings, odd_setting

    text = (
        "[rank1] shard kept 37/50 rows, 4 steps\n"
        "[rank0] shard kept 50/50 rows, 5 steps\n"
        "[rank2] shard kept 50/50 rows, 5 steps\n"
        '[rank2]:   File "/job/train.py", line 42, in main\n'
    )
    settings: dict[int, Settings] = {}
    for n, m in enumerate(BRACKET_RANK_LINES.finditer(text), start=1):
        note_settings(settings.setdefault(int(m["n"]), {}), m["rest"], "log", n)
    assert set(settings) == {0, 1, 2}
    assert "line" not in settings[2]  # torchrun's "[rank2]:" tag is not the rank's own words
    odd = odd_setting(settings, 1)
    assert odd is not None and odd[:3] == ("kept", "37", "50") and odd[4] == [0, 2]
