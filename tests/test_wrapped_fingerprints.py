"""Old-style collective fingerprints (torch 1.10-1.12, TORCH_DISTRIBUTED_DEBUG=DETAIL: each
rank raises "Rank N is running inconsistent collective: CollectiveFingerPrint(...)" with its
own fingerprint and no diff), as a terminal copy wraps them at a fixed width, in the middle
of a field. The wrapped field is read from the joined message (rootrank.scan), each rank's
fingerprint stays that rank's, and comparing them gives the class: the same op with other
shapes is a shape mismatch (signature fingerprint-shape-divergence), another op a desync."""

from __future__ import annotations

from rootrank.engine import diagnose_text

WIDTH = 150  # the terminal's width after the first wrap


def _wrapped(rank: int, op: str, shape: str) -> str:
    line = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank "
        f"{rank} is running inconsistent collective: CollectiveFingerPrint(OpType={op}, "
        f"TensorShape=[{shape}], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float"
        " (default), device=cuda, layout=Strided (default), requires_grad=false (default),"
        " pinned_memory=false (default), memory_format=(nullopt))"
    )
    cut = line.index("TensorShape") + len("TensorShape")  # the wrap falls inside the field
    rest = line[cut:]
    return (
        "\n".join([line[:cut], *(rest[i : i + WIDTH] for i in range(0, len(rest), WIDTH))]) + "\n"
    )


def test_a_shape_cut_by_the_wrap_is_read_and_two_shapes_are_a_shape_mismatch():
    text = _wrapped(0, "ALLGATHER", "41, 256, 8") + _wrapped(1, "ALLGATHER", "40, 256, 8")
    assert "TensorShape\n=[" in text  # the wrap falls inside the field, as in the real paste
    d = diagnose_text(text, mask=False)
    unspecified = {
        f.rank: f.captures for f in d.findings if f.signature == "collective-mismatch-unspecified"
    }
    assert unspecified[0]["shape"] == "41, 256, 8" and unspecified[1]["shape"] == "40, 256, 8"
    assert d.root_cause.signature == "fingerprint-shape-divergence"
    assert d.root_cause.failure_class == "collective-shape-mismatch"
    assert d.root_cause.evidence[0].line == 1
    assert d.initiating_rank is None  # two ranks, two shapes: nothing says which is off


def test_two_ops_are_a_desync_whatever_the_shapes():
    text = _wrapped(0, "ALLGATHER", "41, 256, 8") + _wrapped(1, "BROADCAST", "40, 256, 8")
    d = diagnose_text(text, mask=False)
    assert d.root_cause.failure_class == "collective-desync"
    assert "fingerprint-shape-divergence" not in {f.signature for f in d.findings}
