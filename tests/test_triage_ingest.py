"""Compressed logs (.gz, .xz, .zst) read by `rootrank diagnose` as the plain log is."""

from __future__ import annotations

import gzip
import json
import lzma
import os

import pytest
from conftest import ROOT, run_cli

from rootrank.engine import diagnose_paths
from rootrank.ingest import InputError, open_log

EXAMPLE = ROOT / "examples" / "multi-rank-hang.log"


def _compressors():
    out = {"gz": gzip.compress, "xz": lzma.compress}
    try:
        import zstandard

        out["zst"] = zstandard.ZstdCompressor().compress
    except ImportError:
        pass
    return out


def _comparable(d):
    d = d.to_dict()
    d.pop("sources")
    text = json.dumps(d)
    return json.loads(
        text.replace(".log.gz", ".log").replace(".log.xz", ".log").replace(".log.zst", ".log")
    )


@pytest.mark.parametrize("suffix", ["gz", "xz", "zst"])
def test_a_compressed_log_gives_the_plain_logs_diagnosis(tmp_path, suffix):
    compress = _compressors().get(suffix)
    if compress is None:
        pytest.skip("zstandard is not installed (pip install '.[fleet]')")
    plain = tmp_path / "train.log"
    plain.write_bytes(EXAMPLE.read_bytes())
    packed = tmp_path / f"train.log.{suffix}"
    packed.write_bytes(compress(EXAMPLE.read_bytes()))
    want = diagnose_paths([str(plain)], mask=False)
    got = diagnose_paths([str(packed)], mask=False)
    assert got.root_cause.signature == "timeout-call-site-divergence"
    assert got.initiating_rank == 2 and got.root_cause.evidence[0].line == 19
    assert got.lines_read == want.lines_read == 109
    assert _comparable(got) == _comparable(want)


def test_the_cli_reads_a_compressed_log_and_a_folder_of_them(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "slurm-7.out.gz").write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    for target in (tmp_path / "logs" / "slurm-7.out.gz", tmp_path / "logs"):
        proc = run_cli("diagnose", str(target), "--format", "json", "--no-mask")
        assert proc.returncode == 0, proc.stderr
        d = json.loads(proc.stdout)
        assert d["root_cause"]["failure_class"] == "collective-desync"
        assert d["sources"] == [str(tmp_path / "logs" / "slurm-7.out.gz")]


def test_a_truncated_gzip_yields_the_lines_it_holds(tmp_path):
    data = b"".join(b"[rank0]: step %d loss 0.5\n" % i for i in range(20000)) + EXAMPLE.read_bytes()
    packed = gzip.compress(data)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with open_log(cut) as fh:
        text = fh.read()
    assert 1000 < text.count(b"\n") < 20000
    assert text.startswith(b"[rank0]: step 0 loss 0.5\n")
    d = diagnose_paths([str(cut)], mask=False)
    assert d.lines_read == text.count(b"\n") + (0 if text.endswith(b"\n") else 1)


def test_corrupt_compressed_data_is_a_one_line_input_error(tmp_path):
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(64))
    with pytest.raises(InputError, match="bad.log.gz: corrupt gzip data"):
        diagnose_paths([str(bad)])
    proc = run_cli("diagnose", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("rootrank: ") and proc.stderr.count(b"\n") == 1


def test_concatenated_gzip_members_and_xz_streams_are_read_whole(tmp_path):
    # logrotate's `cat a.gz b.gz`, `xz` of an appended file: several members in one file
    first, second = b"[rank0]: step 1\n" * 500, EXAMPLE.read_bytes()
    for suffix, compress in (("gz", gzip.compress), ("xz", lzma.compress)):
        path = tmp_path / f"joined.log.{suffix}"
        path.write_bytes(compress(first) + compress(second))
        with open_log(path) as fh:
            assert fh.read() == first + second
        d = diagnose_paths([str(path)], mask=False)
        assert d.lines_read == 500 + 109
        assert d.root_cause.evidence[0].line == 500 + 19
