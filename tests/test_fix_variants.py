"""Fix variants chosen by evidence (issue 15): every variant of every signature has a log
under tests/fix_variants/<signature>/<variant>.log that selects it (the default included),
and the loader refuses a wrong ``when``.

The logs are written from what torch, NCCL, the kernel and the launchers print; two are
real captures (torch 2.13 CPU/gloo): ``timeout-call-site-divergence/rank-branch.log``
(torchrun, rank 1 broadcasts from its own branch while ranks 0 and 2 all-reduce) and
``env-rendezvous-var-missing/mp-spawn.log`` (a script calling mp.spawn without MASTER_ADDR).
A fixture with a ``.command`` file beside it is the output of that command, diagnosed as
``rootrank run -- <command>`` diagnoses it (``user-code-exception/one-process``: a real
``python3`` run of a script that raises JSONDecodeError).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths
from rootrank.model import FixVariant
from rootrank.signatures import SignatureError, load_signature

ROOT_SIGS = Path(__file__).resolve().parents[1] / "signatures"
HERE = Path(__file__).resolve().parent / "fix_variants"
FIXTURES = sorted(HERE.glob("*/*.log"))


def _variants(library):
    return {
        s.id: [v["id"] for v in s.fix["variants"]]
        for s in library.signatures.values()
        if "variants" in s.fix
    }


def test_every_variant_and_every_default_has_a_fixture(library):
    variants = _variants(library)
    assert len(variants) >= 10
    have = {(p.parent.name, p.stem) for p in FIXTURES}
    want = {(sig, vid) for sig, ids in variants.items() for vid in ids}
    assert want - have == set(), "variants with no fixture"
    assert have - want == set(), "fixtures of variants that do not exist"


def _diagnose(path: Path):
    """The diagnosis of a fixture: ``rootrank diagnose`` of the log, or, when a
    ``<variant>.command`` file stands beside it, what ``rootrank run -- <that command>`` makes
    of the same output (the run face knows the command it started: LaunchFacts.ran)."""
    command = path.with_suffix(".command")
    if not command.exists():
        return diagnose_paths([str(path)])
    from rootrank.live.feed import LiveScan
    from rootrank.live.tracker import ProgressTracker

    scan = LiveScan(ProgressTracker(None), command=command.read_text().strip())
    scan.feed(scan.open("<command output>"), path.read_bytes().splitlines())
    return scan.finish()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_fixture_selects_its_variant(path, library):
    diag = _diagnose(path)
    rc = diag.root_cause
    assert rc is not None and rc.signature == path.parent.name
    chosen = rc.fix.variant
    assert chosen is not None and chosen.id == path.stem
    variant = next(
        v for v in library.signatures[rc.signature].fix["variants"] if v["id"] == path.stem
    )
    if "when" in variant:
        assert "general fix" not in chosen.why and chosen.why
    else:
        assert chosen.why == "no other variant's condition holds: the general fix"
    # the variant's own steps are the fix (after the user's location, when the log shows it)
    first = variant["steps"][0].split("{", 1)[0][:40]
    assert any(first in step for step in rc.fix.steps[:2])


def test_why_names_the_evidence():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "first-collectives.log")])
    assert d.root_cause.fix.variant == FixVariant(
        id="first-collectives", why="the log gives seqnum 1"
    )
    d = diagnose_paths([str(HERE / "env-rendezvous-var-missing" / "mpirun.log")])
    assert d.root_cause.fix.variant == FixVariant(
        id="mpirun", why="the job was launched with mpirun"
    )
    # an mpirun job is not told to use torchrun (its script reads OMPI_COMM_WORLD_RANK)
    assert not any("Launch with torchrun" in s for s in d.root_cause.fix.steps)
    assert "torchrun" not in " ".join(d.root_cause.fix.code.values())
    assert "Keep mpirun" in d.root_cause.fix.steps[-1]


def test_the_fix_quotes_the_message_that_says_what_to_change():
    d = diagnose_paths([str(HERE / "env-rendezvous-var-missing" / "general.log")])
    message = (
        "Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR "
        "expected, but not set"
    )
    assert any(f'The message says: "{message}"' in s for s in d.root_cause.fix.steps)
    d = diagnose_paths([str(HERE / "accelerate-config-error" / "mixed-precision-device.log")])
    step = next(s for s in d.root_cause.fix.steps if "The message says" in s)
    assert "The message says: \"fp16 mixed precision requires a GPU (not 'mps').\"" in step
    assert "this run is on mps" in step


def test_hardware_xid_gets_drain_the_node_not_kernel_debugging():
    # The driver names the earlier hardware Xid: the hardware signature reads the line, and its
    # fix is about the node, not about debugging a kernel.
    xid = ROOT_SIGS / "hardware" / "xid-caused-by-previous-xid.positive.log"
    d = diagnose_paths([str(xid)])
    fix = " ".join(d.root_cause.fix.steps)
    assert d.root_cause.failure_class == "gpu-hardware-xid-ecc"
    assert "Drain the node" in fix and "CUDA_LAUNCH_BLOCKING" not in fix
    assert d.root_cause.verify.startswith("dcgmi diag -r 3")


def test_shm_open_errno_selects_the_permission_fix(tmp_path):
    # NCCL <= 2.18 prints shm_open's errno on its own WARN line (SYSCHECKVAL in shm.h) and
    # the "Error while creating shared memory segment" line after it carries none: the
    # errno line decides, so the fix is the mode, not a list of size and mode checks.
    log = tmp_path / "shm-open.log"
    log.write_text(
        "gpu02:811:902 [1] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
        "gpu02:811:902 [1] NCCL INFO include/shm.h:41 -> 2\n"
        "gpu02:811:902 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment"
        " nccl-shm-recv-0a1b2c3d4e5f6071-0-1-0 (size 4460544)\n",
        encoding="utf-8",
    )
    rc = diagnose_paths([str(log)]).root_cause
    assert rc.signature == "nccl-shm-no-space"
    assert rc.fix.variant is not None and rc.fix.variant.id == "permission"
    assert '"Permission denied"' in rc.fix.steps[0] and "chmod 1777" in rc.fix.steps[0]
    assert rc.verify.startswith("stat -c %a /dev/shm")


def _write(tmp_path: Path, variants: str) -> Path:
    src = (
        Path(__file__).resolve().parents[1]
        / "signatures"
        / "collective"
        / "gloo-size-mismatch.yaml"
    )
    text = src.read_text(encoding="utf-8")
    head, rest = text.split("\nfix:\n", 1)
    tail = rest[rest.index("\nconfirm:") :]
    folder = tmp_path / "collective"
    folder.mkdir(exist_ok=True)
    out = folder / "gloo-size-mismatch.yaml"
    out.write_text(head + "\nfix:\n  variants:\n" + variants + tail, encoding="utf-8")
    return out


GOOD_DEFAULT = '    - id: general\n      steps: ["do the general thing"]\n'


def test_a_valid_variant_list_loads_and_the_default_fills_fix_steps(tmp_path):
    sig = load_signature(
        _write(
            tmp_path,
            (
                "    - id: mpi\n      when: {launcher: [mpirun], captures: {size: '^\\d+$'}}\n      steps: [\"use -x\"]\n"
                + GOOD_DEFAULT
            ),
        )
    )
    assert [v["id"] for v in sig.fix["variants"]] == ["mpi", "general"]
    assert sig.fix["steps"] == ["do the general thing"]


@pytest.mark.parametrize(
    ("variants", "field", "problem"),
    [
        (
            "    - id: a\n      when: {colour: red}\n      steps: [x]\n" + GOOD_DEFAULT,
            "fix.variants[0].when",
            "colour: unknown condition",
        ),
        (
            "    - id: a\n      when: {launcher: [slurm]}\n      steps: [x]\n" + GOOD_DEFAULT,
            "fix.variants[0].when",
            "'slurm' is not one of",
        ),
        (
            "    - id: a\n      when: {message: '(unclosed'}\n      steps: [x]\n" + GOOD_DEFAULT,
            "fix.variants[0].when",
            "does not compile",
        ),
        (
            "    - id: a\n      when: {call_sites_differ: 'yes'}\n      steps: [x]\n"
            + GOOD_DEFAULT,
            "fix.variants[0].when",
            "must be bool",
        ),
        (
            "    - id: a\n      steps: [x]\n" + GOOD_DEFAULT,
            "fix.variants[0].when",
            "non-empty mapping",
        ),
        (
            "    - id: a\n      when: {user_frame: true}\n      steps: [x]\n    - id: b\n      when: {user_frame: false}\n      steps: [y]\n",
            "fix.variants[1].when",
            "the last variant is the default",
        ),
        (GOOD_DEFAULT, "fix.variants", "at least two variants"),
        (
            "    - id: general\n      when: {user_frame: true}\n      steps: [x]\n" + GOOD_DEFAULT,
            "fix.variants[1].id",
            "unique",
        ),
        (
            "    - id: a\n      when: {user_frame: true}\n      stepz: [x]\n" + GOOD_DEFAULT,
            "fix.variants[0].stepz",
            "unknown key",
        ),
        (
            "    - id: a\n      when: {user_frame: true}\n      title: ''\n      steps: [x]\n"
            + GOOD_DEFAULT,
            "fix.variants[0].title",
            "non-empty text",
        ),
    ],
)
def test_a_wrong_variant_is_refused_naming_the_field(tmp_path, variants, field, problem):
    with pytest.raises(SignatureError) as err:
        load_signature(_write(tmp_path, variants))
    assert err.value.field == field
    assert problem in err.value.problem


def test_an_assert_on_the_world_size_is_quoted_and_verified_under_the_launch():
    path = HERE / "user-code-exception" / "assert-world-size.log"
    rc = diagnose_paths([str(path)]).root_cause
    assert rc.user_frame is not None and (rc.user_frame.file, rc.user_frame.line) == (
        "/home/user/lm/pretrain.py",
        96,
    )
    assert rc.fix.steps[0].startswith(
        "pretrain.py:96 (in main), where rank 1 raised AssertionError: "
        '`assert cfg.global_batch_size % (cfg.micro_batch_size * world_size) == 0, "global batch must split evenly"`'
        " is false for this launch"
    )
    # one process would make world_size 1 and pass trivially: the verify relaunches
    assert rc.verify.startswith("torchrun --nproc-per-node=gpu pretrain.py  #")


def test_a_bare_assert_quotes_its_condition_not_the_exception_name():
    rc = diagnose_paths([str(HERE / "user-code-exception" / "assertion.log")]).root_cause
    assert (
        "`assert cfg.warmup_steps < cfg.max_steps` is false for this run's values"
        in rc.fix.steps[0]
    )
    assert '"AssertionError"' not in rc.fix.steps[0]


# -- variants chosen by what the analysis found (initiator, the odd rank's op) ------------


def test_the_odd_rank_and_its_op_are_named_not_uneven_batches():
    d = diagnose_paths([str(HERE / "fingerprint-desync" / "rank-branch.log")])
    rc = d.root_cause
    assert d.initiating_rank == 5
    assert rc.fix.variant.id == "rank-branch"
    assert rc.fix.variant.why.endswith(
        "the initiating rank runs REDUCE while the others run ALLGATHER"
    )
    assert rc.fix.steps[0].startswith(
        "Rank 5 runs REDUCE while the others run ALLGATHER at SeqNum 57"
    )
    text = " ".join(rc.fix.steps) + " ".join(rc.fix.code.values())
    assert "drop_last" not in text and "Join" not in text
    # a rank that reached a BARRIER early had fewer batches: the uneven-inputs fix
    d = diagnose_paths([str(HERE / "fingerprint-desync" / "general.log")])
    assert d.initiating_rank == 1 and d.root_cause.fix.variant.id == "general"
    assert "drop_last=True" in d.root_cause.fix.steps[0]


def test_a_rank_the_engine_named_is_named_in_the_first_step():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "rank-never-joined.log")])
    rc = d.root_cause
    assert d.initiating_rank == 0 and rc.fix.variant.id == "rank-never-joined"
    assert rc.fix.steps[0].startswith(
        "Rank 0 is the rank the others waited for in ALLREDUCE SeqNum 20483 (rank 0 is the one known"
    )
    assert not any("Find the rank" in s for s in rc.fix.steps)


def test_a_short_timeout_is_the_fix_not_an_investigation():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "short-timeout.log")])
    rc = d.root_cause
    assert rc.fix.variant.id == "short-timeout"
    assert rc.fix.steps[0].startswith(
        "The process-group timeout is only 90000 ms: work rank 0 does"
    )


def test_vllm_gets_vllm_advice_and_no_training_launcher():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "vllm.log")])
    rc = d.root_cause
    assert "vllm" in d.stack and rc.fix.variant.id == "vllm"
    assert "NCCL_P2P_DISABLE=1" in rc.fix.steps[0]
    text = " ".join(rc.fix.steps) + " ".join(rc.fix.code.values()) + rc.verify
    assert "torchrun" not in text and "ddp_timeout" not in text and "tokeniz" not in text


def test_a_hang_with_no_rank_named_gets_the_decision_between_rank_and_link():
    d = diagnose_paths([str(HERE / "nccl-watchdog-timeout" / "no-rank-named.log")])
    rc = d.root_cause
    assert d.initiating_rank is None and rc.fix.variant.id == "no-rank-named"
    assert rc.fix.variant.why == (
        "the rank analysis ended at victims_only; the log does not show which rank stopped first"
    )
    assert "inside the same NCCL kernel, the link stalled" in rc.fix.steps[1]


def test_horovod_one_rank_alone_on_an_op_is_named_without_pytorch_code():
    d = diagnose_paths([str(HERE / "horovod-stall" / "one-rank-other-op.log")])
    rc = d.root_cause
    assert rc.fix.variant.id == "one-rank-other-op"
    assert rc.fix.steps[0].startswith("Rank 2 alone submitted HorovodAllreduce_accuracy_Mean_0")
    assert rc.fix.code == {} and "DistributedSampler" not in " ".join(rc.fix.steps)


@pytest.mark.parametrize(
    "when, problem",
    [
        ({"initiator": ["missing_reporters"]}, "initiator: 'missing_reporters' is not one of"),
        ({"initiator_known": "yes"}, "initiator_known: must be bool"),
        ({"odd_op": "("}, "odd_op: regex does not compile"),
    ],
)
def test_analysis_conditions_are_checked_at_load(when, problem):
    from rootrank.entry.variants import check_when

    assert check_when(when).startswith(problem)
    assert check_when({"initiator": ["missing_reporter", "odd_value_out"]}) is None


def test_two_ranks_on_two_ops_with_no_odd_rank_known_name_both():
    # a real run (torch 2.13 CPU, gloo, TORCH_DISTRIBUTED_DEBUG=DETAIL, torchrun 2 processes;
    # the script is tests/data/r18a/branch_on_value.py.txt): rank 1 broadcasts a Float [4]
    # on a value only it has above the threshold, rank 0 all-reduces the same tensor
    d = diagnose_paths([str(HERE / "fingerprint-desync" / "branch-on-a-value.log")])
    rc = d.root_cause
    assert d.initiating_rank is None
    assert rc.fix.variant.id == "branch-on-a-value"
    assert rc.fix.variant.why.startswith("the ranks run different collectives")
    assert rc.fix.steps[0].startswith("branch_on_value.py:13: rank 0 calls all_reduce here")
    assert rc.fix.steps[1].startswith(
        "Rank 0 runs ALLREDUCE while rank 1 runs BROADCAST at SeqNum 3"
    )
    assert "drop_last" not in " ".join(rc.fix.steps)


def test_gloo_and_fsdp_timeouts_name_the_rank_the_analysis_found():
    d = diagnose_paths(
        [str(HERE / "gloo-collective-timeout" / "rank-stopped-at-its-last-line.log")]
    )
    assert d.initiating_rank == 0 and d.root_cause.fix.variant.id == "rank-stopped-at-its-last-line"
    # the other ranks' one call site opens the step: rank 0 printed no traceback of its own
    assert d.root_cause.fix.steps[0].startswith(
        "run_ddp.py:143: ranks 1 and 2 stopped in all_reduce here; rank 0 never reached this"
        " line (it printed no traceback): look at what rank 0 did before it. Rank 0 is the"
        " rank the others waited for"
    )
    d = diagnose_paths([str(HERE / "fsdp-collective-watchdog-timeout" / "rank-never-joined.log")])
    assert d.initiating_rank == 2 and d.root_cause.fix.variant.id == "rank-never-joined"
    assert d.root_cause.fix.steps[0].startswith(
        "Rank 2 is the rank the others waited for in the FSDP _ALLGATHER_BASE (SeqNum 20911;"
    )


def test_a_gradient_bucket_of_another_size_is_not_told_to_pad():
    d = diagnose_paths([str(HERE / "fingerprint-shape-mismatch" / "gradient-bucket.log")])
    rc = d.root_cause
    assert rc.fix.variant.id == "gradient-bucket"
    assert rc.fix.steps[0].startswith(
        "The ALLREDUCE of SeqNum 4402 is a flat gradient bucket (26214400 elements on rank 1, 18350080 on rank 3)"
    )
    assert "all_gather" not in " ".join(rc.fix.code.values())
    d = diagnose_paths([str(HERE / "fingerprint-shape-mismatch" / "general.log")])
    assert d.root_cause.fix.variant.id == "general"
    assert "Pad variable-size tensors" in " ".join(d.root_cause.fix.steps)


def test_a_variant_title_is_the_headline_and_the_text_below_agrees(tmp_path):
    """A Windows NCCL log: the Windows variant's title is the headline, and the initiating
    rank's sentence and the collateral of the same signature say it the same way (the
    signature's "CPU build, CPU-only node" title appears nowhere); a Linux log keeps it."""
    from rootrank.report import to_text

    win = HERE / "nccl-backend-without-gpu" / "windows.log"
    text = win.read_text()
    two = tmp_path / "two-ranks.log"  # both ranks print it: one is the other's collateral
    two.write_text("".join(f"[rank{r}]:{line}\n" for r in (0, 1) for line in text.splitlines()[2:]))
    windows = "The NCCL backend was requested on Windows, where PyTorch has no NCCL (use gloo, or Linux / WSL2)"
    for path in (win, two):
        d = diagnose_paths([str(path)])
        assert d.root_cause.title == windows
        out = to_text(d)
        assert out.splitlines()[0] == f"Root cause: {windows}"
        assert "CPU build, CPU-only node" not in out
    assert [g.title for g in d.collateral if g.signature == "nccl-backend-without-gpu"] == [windows]
    linux = diagnose_paths([str(HERE / "nccl-backend-without-gpu" / "general.log")])
    assert linux.root_cause.title.endswith("(CPU build, CPU-only node)")


def test_a_missing_file_on_one_rank_claims_no_start_up_failure_of_every_rank(tmp_path):
    """Trial r15b, finding 7: one rank's FileNotFoundError on a path that is no data sample
    said "every rank reads the same setting, so every rank fails the same way at start-up"
    while the other ranks had not failed. That sentence needs several ranks raising it on the
    same path (the every-rank variant); one rank gets the fix that covers both a setting and
    a file reached later, and a verification that does not say "past start-up"."""
    log = tmp_path / "one-rank.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/det/train.py", line 77, in <module>\n'
        "[rank1]:     ann = json.load(open(cfg.ann_file))\n"
        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/data/coco/ann.json'\n"
    )
    rc = diagnose_paths([str(log)]).root_cause
    assert rc is not None and rc.rank == 1
    assert rc.fix.variant is not None and rc.fix.variant.id == "missing-file"
    fix = " ".join(rc.fix.steps)
    assert "every rank fails the same way" not in fix
    assert "'/data/coco/ann.json'" in fix
    assert "a file the job reaches as it runs" in fix
    assert "past start-up" not in rc.verify
    every = diagnose_paths([str(HERE / "user-code-exception" / "missing-file-every-rank.log")])
    assert every.root_cause is not None
    assert "every rank fails the same way at start-up" in " ".join(every.root_cause.fix.steps)


def test_a_message_wrapped_onto_an_indented_line_is_read_whole(tmp_path):
    """Trial r15b, finding 7: the exception message's quoted path went to the next, indented
    line (a formatter's hanging indent); the fix quoted "[Errno 2] No such file or directory:"
    and chose the generic variant. The joined message is the capture, with the space the wrap
    took, and its data sample's suffix chooses the missing-sample fix."""
    log = tmp_path / "wrapped.log"
    log.write_text(
        "[rank3]: FileNotFoundError: [Errno 2] No such file or directory:\n"
        "         '/scratch/occ/once/000424/010135_cam09.npz'\n"
        "[rank3]: RuntimeError: Failed to load dataset sample: ...\n"
        "srun: error: node7: task 3: Exited with exit code 1\n"
    )
    rc = diagnose_paths([str(log)], mask=False).root_cause
    assert rc is not None and rc.rank == 3
    assert rc.captures["message"] == (
        "[Errno 2] No such file or directory: '/scratch/occ/once/000424/010135_cam09.npz'"
    )
    assert rc.fix.variant is not None and rc.fix.variant.id == "missing-data-sample"
    assert "'/scratch/occ/once/000424/010135_cam09.npz'" in rc.fix.steps[0]
