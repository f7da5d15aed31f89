"""Held-out r25d kinds (the set's MISSES.md), each on fixtures written or captured for it
(tests/r25d, tests/fix_variants; the scripts beside the logs as ``*.txt``):

- the launcher's record of the first failure it observed names one local rank, and that
  rank's traceback is the only one in the log: that rank is the first observed failure, a
  set-up error included (a real torchrun run, cut where a user's paste ends);
- an OOM whose quoted source line is an optimizer's update (Adam's moments, ``optimizer.step()``)
  happened in the optimizer's step, also when the paste kept that line without its frame header;
- a c10d rendezvous whose launch printed its endpoint as a host with no port (a real torchrun
  run: its agent's config table) is told to give the port, with the host from the log.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.engine import diagnose_paths

HERE = Path(__file__).parent / "r25d"
VARIANTS = Path(__file__).parent / "fix_variants"


def _diag(path: Path):
    return diagnose_paths([str(path)], mask=False)


def test_a_set_up_error_on_the_launchers_sole_failure_record_names_that_rank():
    # before: no rank ("every rank runs the same set-up")
    d = _diag(HERE / "setup_error_sole_launcher_record.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "dependency-version-mismatch"
    assert rc.evidence[0].line == 13
    assert d.initiating_rank == 0
    assert d.initiator is not None
    assert "first failure it observed names rank 0 alone (exit code 1)" in d.initiator.why


def test_the_same_set_up_error_without_the_launchers_record_names_no_rank():
    d = _diag(HERE / "setup_error_no_launcher_record.log")
    assert d.root_cause is not None
    assert d.root_cause.failure_class == "dependency-version-mismatch"
    assert d.initiating_rank is None


def test_an_oom_on_a_quoted_optimizer_update_line_is_the_optimizer_step():
    for name, line in (("optimizer-step-quoted", 3), ("optimizer-step-raised", 8)):
        d = _diag(VARIANTS / "cuda-oom" / f"{name}.log")
        rc = d.root_cause
        assert rc is not None and rc.failure_class == "cuda-oom"
        assert rc.evidence[0].line == line
        assert d.initiating_rank is None
        assert rc.fix.variant is not None and rc.fix.variant.id == name
        fix = " ".join(rc.fix.steps)
        assert "in the optimizer's step" in fix
        assert "move to stage 3" in fix
        assert not fix.startswith("Reduce")


def test_a_rendezvous_endpoint_without_a_port_gets_the_port_from_the_log():
    d = _diag(VARIANTS / "elastic-rendezvous-error" / "endpoint-without-port.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "rendezvous-failure"
    assert rc.evidence[0].line == 63
    assert d.initiating_rank is None
    assert rc.fix.variant is not None and rc.fix.variant.id == "endpoint-without-port"
    assert "--rdzv_endpoint=localhost:29400" in " ".join(rc.fix.steps)
    assert rc.verify.startswith("nc -zv localhost 29400")


def test_a_rendezvous_endpoint_with_its_port_keeps_the_general_fix():
    d = _diag(VARIANTS / "elastic-rendezvous-error" / "general.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "rendezvous-failure"
    assert rc.fix.variant is not None and rc.fix.variant.id == "general"
    assert "with no port" not in " ".join(rc.fix.steps)


def test_a_retyped_nccl_reason_is_read_as_the_reason_it_misspells():
    # before: the generic DistBackendError wrapper (the exact reason pattern missed it)
    d = _diag(HERE / "nccl_reason_retyped.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl-unhandled-cuda-error"
    assert rc.failure_class == "nccl-system-error"
    assert rc.evidence[0].line == 2
    assert d.initiating_rank is None


def test_an_unread_system_error_between_hosts_leads_with_the_hosts_network():
    d = _diag(VARIANTS / "nccl-unhandled-system-error" / "between-hosts.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "nccl-system-error"
    assert rc.evidence[0].line == 10
    assert rc.fix.variant is not None and rc.fix.variant.id == "between-hosts"
    assert "--network=host" in rc.fix.steps[0] and "NCCL_SOCKET_IFNAME" in rc.fix.steps[0]
    assert rc.verify.startswith("ip -4 -br addr")


def test_a_sighup_under_nohup_is_not_told_to_use_nohup():
    # a real run: torchrun started under nohup in the background, then sent SIGHUP (what a
    # closing session sends): the agent's own handler still stops the workers
    d = _diag(HERE / "nohup_torchrun_sighup.log")
    rc = d.root_cause
    assert rc is not None and rc.signature == "agent-received-signal"
    assert rc.failure_class == "preemption-sigterm"
    assert rc.evidence[0].line == 5
    assert d.initiating_rank is None
    assert rc.fix.variant is not None and rc.fix.variant.id == "sighup"
    fix = " ".join(rc.fix.steps)
    assert "nohup alone does not protect it" in fix and "setsid" in fix
    assert "`nohup ... &`" not in fix
    assert rc.verify.startswith("ps -eo pid,sid,tty,args")


def test_an_ibv_modify_qp_timeout_gets_the_path_to_the_peer_not_memlock():
    d = _diag(VARIANTS / "ib-verbs-call-failed" / "modify-qp-timeout.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "network-fabric-error"
    assert rc.fix.variant is not None and rc.fix.variant.id == "modify-qp-timeout"
    first = rc.fix.steps[0]
    assert "NCCL_CROSS_NIC=0" in first and "memlock" not in first
    assert rc.verify.startswith("mpirun -np <ranks> -H <hosts> -x NCCL_CROSS_NIC=0 ")
    # another verb keeps the general fix
    d = _diag(VARIANTS / "ib-verbs-call-failed" / "general.log")
    assert d.root_cause.fix.variant.id == "general"
    assert d.root_cause.evidence[0].line == 3


def test_a_nan_from_a_steady_loss_leads_with_the_number_range_not_the_learning_rate():
    d = _diag(VARIANTS / "loss-or-grad-nan" / "steady-before-nan.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "nan-or-fp16-overflow"
    assert rc.evidence[0].line == 2
    assert rc.fix.variant is not None and rc.fix.variant.id == "steady-before-nan"
    assert rc.fix.variant.why == "the last loss logged before it was finite (1.9312, line 1)"
    first = rc.fix.steps[0]
    assert "bfloat16" in first and "does not stop a one-step overflow" in first
    assert rc.verify.startswith('python -c "import torch; print(torch.cuda.is_bf16_supported())"')
    # no loss logged before the NaN: nothing tells, the general checklist
    d = _diag(VARIANTS / "loss-or-grad-nan" / "general.log")
    assert d.root_cause.fix.variant.id == "general"
    assert d.root_cause.evidence[0].line == 3


def test_neighbouring_sizes_in_a_multi_process_batch_point_at_the_split_not_padding():
    # a real torchrun run (tests/r25d/sample_by_length.py.txt): 4 samples per length over 3
    # processes, one rank's slice runs over into the next length
    d = _diag(VARIANTS / "collate-unequal-size" / "length-group-split-across-ranks.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "data-error"
    assert rc.evidence[0].line == 31
    assert d.initiating_rank == 1
    assert rc.fix.variant is not None and rc.fix.variant.id == "length-group-split-across-ranks"
    assert "multiple of the process count" in rc.fix.steps[0]
    # the verify is the launch the log shows (bash -x's trace of it)
    assert rc.verify.startswith("torchrun --nproc-per-node=3 sample_by_length.py  #")
    d = _diag(VARIANTS / "collate-unequal-size" / "general.log")
    assert d.root_cause.fix.variant.id == "general"


def test_with_no_launch_in_the_log_the_verify_is_the_classes_standalone_check():
    # an OOM paste with no launch command: the memory query runs as it is, no <train.py>
    d = _diag(VARIANTS / "cuda-oom" / "optimizer-step-quoted.log")
    verify = d.root_cause.verify
    assert verify.startswith("nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv")
    assert "<" not in verify.partition("  # ")[0]
    # a launch rebuilt from the traceback (torchrun's <module> frame names the script) stays
    d = _diag(VARIANTS / "cuda-oom" / "optimizer-step.log")
    assert d.root_cause.verify.startswith("torchrun --nproc-per-node=gpu pretrain.py  #")


def test_a_version_mismatch_verify_names_the_packages_the_traceback_runs_through():
    d = _diag(HERE / "setup_error_sole_launcher_record.log")
    assert d.root_cause.verify.startswith(
        "python -m pip show tuner | grep -E '^(Name|Version|Requires):'"
    )


def test_a_launch_typed_after_a_zsh_prompt_glyph_is_the_verifys_command():
    # oh-my-zsh's prompt ends in its own glyphs, not "$": the script the user ran is still the
    # launch the rerun types
    d = _diag(HERE / "zsh_prompt_launch_oom.log")
    rc = d.root_cause
    assert rc is not None and rc.failure_class == "cuda-oom"
    assert rc.evidence[0].line == 2
    assert d.initiating_rank == 2
    assert "bash scripts/train_ddp.sh  #" in rc.verify
