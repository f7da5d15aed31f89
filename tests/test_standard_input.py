"""Standard input as users feed it: a compressed log (`gzip -c train.log | rootrank diagnose -`,
`kubectl logs job/x | gzip | ...`) is recognised by its magic bytes and diagnosed as the file;
file names instead of a log (`ls logs/ | rootrank diagnose -`) get one stderr line and exit 2."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import subprocess
import sys

import pytest
from conftest import ROOT, PipePieces, run_cli

from rootrank.engine import names_instead_of_log, stdin_log
from rootrank.ingest import InputError, decompressed, read_blocks

EXAMPLE = ROOT / "examples" / "multi-rank-hang.log"


def _compress(suffix: str, data: bytes) -> bytes:
    if suffix == "gz":
        return gzip.compress(data)
    if suffix == "xz":
        return lzma.compress(data)
    zstandard = pytest.importorskip("zstandard", reason="pip install '.[fleet]' for zstd")
    return zstandard.ZstdCompressor().compress(data)


def _diagnosis(proc: subprocess.CompletedProcess[bytes]) -> dict:
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    d.pop("sources")
    return json.loads(json.dumps(d).replace(str(EXAMPLE.relative_to(ROOT)), "<stdin>"))


@pytest.mark.parametrize("suffix", ["gz", "xz", "zst"])
def test_a_compressed_log_on_stdin_is_diagnosed_as_the_file(suffix):
    packed = _compress(suffix, EXAMPLE.read_bytes())
    proc = run_cli("diagnose", "-", "--format", "json", stdin=packed)
    got = _diagnosis(proc)
    assert got["root_cause"]["signature"] == "timeout-call-site-divergence"
    assert got["initiating_rank"] == 2
    assert got["root_cause"]["evidence"][0]["line"] == 19
    assert got["root_cause"]["evidence"][0]["path"] == "<stdin>"
    assert got["lines_read"] == 109
    assert proc.stderr == b""
    want = _diagnosis(run_cli("diagnose", str(EXAMPLE.relative_to(ROOT)), "--format", "json"))
    assert got == want


def test_a_compressed_log_on_stdin_in_the_text_report():
    proc = run_cli("diagnose", "-", stdin=gzip.compress(EXAMPLE.read_bytes()))
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.decode().splitlines()[:2]
    assert first[0].startswith("Root cause: Ranks timed out waiting in different collectives")
    assert first[1].endswith("<stdin>:19")


@pytest.mark.parametrize("first", [1, 3, 5])
def test_a_magic_number_cut_by_the_pipes_first_write_is_still_read(first):
    plain = EXAMPLE.read_bytes()
    for packed in (gzip.compress(plain), lzma.compress(plain)):
        pipe = io.BufferedReader(PipePieces([packed[:first], packed[first:]]))
        assert decompressed(pipe).read() == plain
    # and a plain log cut the same way loses no byte
    pipe = io.BufferedReader(PipePieces([plain[:first], plain[first:]]))
    assert decompressed(pipe).read() == plain


def test_stdin_redirected_from_a_compressed_file(tmp_path):
    # `rootrank diagnose - < train.log.gz`: a seekable stdin
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    with packed.open("rb") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "rootrank", "diagnose", "-", "--format", "json"],
            stdin=fh,
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
    d = _diagnosis(proc)
    assert d["initiating_rank"] == 2 and d["root_cause"]["evidence"][0]["line"] == 19
    # a stdin already read into (a shell's `read` took a line): the log starts where it stands
    stream = io.BufferedReader(io.BytesIO(b"ignored line\n" + packed.read_bytes()))  # type: ignore[arg-type]
    stream.readline()
    text = b"".join(b.text.encode() + b"\n" for b in read_blocks(decompressed(stream)))
    assert text == EXAMPLE.read_bytes()


def test_corrupt_compressed_stdin_is_one_line_and_exit_2():
    proc = run_cli("diagnose", "-", stdin=b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("rootrank: ") and "corrupt gzip data" in err
    assert err.count("\n") == 1


# --- file names instead of a log ----------------------------------------------------------


def _logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_bytes(EXAMPLE.read_bytes())
    (logs / "rank1.log").write_bytes(b"[rank1]: step 1 loss 0.5\n")
    return logs


@pytest.mark.parametrize(
    ("typed", "stdin", "advice"),
    [
        ("echo logs/", b"logs/\n", "(rootrank diagnose logs/)"),
        ("echo logs", b"logs\n", "(rootrank diagnose logs)"),
        ("ls logs/", b"rank0.log\nrank1.log\n", "(rootrank diagnose FOLDER/)"),
        (
            "find logs -name '*.log'",
            b"logs/rank0.log\nlogs/rank1.log\n",
            "(rootrank diagnose logs/rank0.log logs/rank1.log)",
        ),
    ],
)
def test_file_names_on_stdin_say_paths_go_as_arguments(tmp_path, typed, stdin, advice):
    _logs(tmp_path)
    proc = run_cli("diagnose", "-", stdin=stdin, cwd=tmp_path)
    assert proc.returncode == 2, typed
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1
    assert err.startswith("rootrank: standard input holds file names (")
    assert "not a log: give the paths as arguments" in err and err.rstrip().endswith(advice)


def test_file_names_on_stdin_beside_a_readable_log_are_a_warning(tmp_path):
    _logs(tmp_path)
    proc = run_cli(
        "diagnose", "-", "logs/rank0.log", "--format", "json", stdin=b"logs/\n", cwd=tmp_path
    )
    assert proc.returncode == 0
    d = json.loads(proc.stdout)
    assert d["initiating_rank"] == 2 and d["root_cause"]["evidence"][0]["line"] == 19
    assert d["warnings"][-1].startswith("not read: standard input holds file names (logs/)")
    assert proc.stderr.decode().count("\n") == 1


def test_a_log_whose_first_write_is_a_path_is_still_a_log(tmp_path):
    # `PYTHONUNBUFFERED=1 python train.py | rootrank diagnose -`: the first write is one line
    logs = _logs(tmp_path)
    r, w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootrank", "diagnose", "-", "--format", "json"],
        stdin=r,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "server")),
    )
    os.close(r)
    os.write(w, b"logs/rank0.log\n")
    import time

    time.sleep(0.5)
    os.write(w, (logs / "rank0.log").read_bytes())
    os.close(w)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    d = json.loads(out)
    assert d["initiating_rank"] == 2
    assert d["root_cause"]["evidence"][0]["line"] == 20  # one line after the path
    assert d["lines_read"] == 110


@pytest.mark.parametrize(
    "text",
    [
        b"Killed\n",
        b"hello\n",
        b"Segmentation fault (core dumped)\n",
        b"[rank0]: train.log\n",
        b"step 1 loss 0.5\nrank0.log\n",
        b"loss=0.5\n",
        b"",
    ],
)
def test_short_log_text_is_not_file_names(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    assert names_instead_of_log(text) == []


def test_names_are_read_whole_and_given_back_when_more_follows():
    stream = io.BufferedReader(PipePieces([b"rank0.log\n", b"[rank0]: RuntimeError: boom\n"]))
    out = stdin_log(stream)  # type: ignore[arg-type]
    assert out.read() == b"rank0.log\n[rank0]: RuntimeError: boom\n"
    with pytest.raises(InputError, match=r"file names \(rank0.log rank1.log\)"):
        stdin_log(io.BufferedReader(PipePieces([b"rank0.log\n", b"rank1.log\n"])))  # type: ignore[arg-type]
