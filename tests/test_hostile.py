"""Hostile and broken input through the real CLI (``python -m rootrank diagnose``).

Every case gives either a correct diagnosis (exit 0, the right class, rank and line) or one
clear error line on stderr with the documented exit code (2: usage or input error; 1: nothing
found), never a Python traceback. The peak memory of each run is read from the kernel
(``ru_maxrss`` of the child) and must stay under :data:`MEMORY_BOUND_MB`, the bound stated in
``bench/memory_bound.py``.
"""

from __future__ import annotations

import codecs
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

#: Peak resident memory allowed for one ``rootrank diagnose`` run, in MiB (interpreter and
#: library included); see ``bench/memory_bound.py`` for the measured values.
MEMORY_BOUND_MB = 256

OOM = (ROOT / "signatures" / "memory" / "cuda-oom.positive.log").read_text(encoding="utf-8")
OOM_LINE = 9  # the "torch.OutOfMemoryError" line of the fixture (1-based)
OOM_RANK = 5


def _diagnose(
    *args: str, stdin: bytes | None = None, timeout: float = 600
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """Run the CLI in a child; returns the process and its peak memory in MiB.

    The child is started through a tiny wrapper that reports its own ``ru_maxrss`` so the
    figure belongs to this run only (RUSAGE_CHILDREN would keep the maximum of all runs)."""
    wrapper = (
        "import resource, runpy, sys\n"
        "sys.argv = ['rootrank', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('rootrank', run_name='__main__')\n"
        "finally:\n"
        "    sys.stderr.write('\\n@@maxrss=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    # Linux keeps a process's RSS high-water mark across exec, and a forked child starts
    # from its parent's: a child forked straight from this (large) pytest process would
    # report pytest's size. /bin/sh forks the real child from its own small image instead.
    done = subprocess.run(
        ["/bin/sh", "-c", '"$@"; exit $?', "sh", sys.executable, "-c", wrapper, "diagnose", *args],
        input=stdin,
        capture_output=True,
        check=False,
        timeout=timeout,
        cwd=ROOT,
    )
    err = done.stderr.decode("utf-8", "replace")
    body, _, tail = err.rpartition("\n@@maxrss=")
    peak_kb = int(tail.strip() or 0)
    done.stderr = body.encode()
    return done, peak_kb / 1024


def _error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    lines = [ln for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got: {lines!r}"
    assert "Traceback" not in lines[0]
    assert lines[0].startswith("rootrank: ")
    return lines[0]


def _oom_result(done: subprocess.CompletedProcess[bytes], line: int = OOM_LINE) -> dict:
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr
    diag = json.loads(done.stdout)
    rc = diag["root_cause"]
    assert rc["failure_class"] == "cuda-oom"
    assert diag["initiating_rank"] == OOM_RANK
    assert rc["evidence"][0]["line"] == line
    return diag


# -- encodings and bytes -----------------------------------------------------------------------


def test_binary_file_is_refused_in_one_line(tmp_path: Path) -> None:
    p = tmp_path / "model.bin"
    p.write_bytes(bytes(range(256)) * 64 + b"\x7fELF\x02\x01" * 100)
    done, peak = _diagnose(str(p))
    assert done.returncode == 2
    assert "binary" in _error_line(done) and str(p) in _error_line(done)
    assert peak < MEMORY_BOUND_MB


def test_binary_on_stdin_is_refused_in_one_line() -> None:
    done, _ = _diagnose("-", stdin=os.urandom(64 * 1024))
    assert done.returncode == 2 and "binary" in _error_line(done)


def test_nul_bytes_and_invalid_utf8_still_diagnose(tmp_path: Path) -> None:
    lines = OOM.splitlines(keepends=True)
    lines[1] = "step 4119 loss \udcff\udcfe 2.31\n"  # lone surrogates -> invalid UTF-8 bytes
    raw = "".join(lines).encode("utf-8", "surrogateescape")
    raw = raw.replace(b"loss", b"lo\x00ss", 1) + b"\x00" * 4096 + b"\n"  # a crash's zero block
    p = tmp_path / "broken.log"
    p.write_bytes(raw)
    done, peak = _diagnose(str(p), "--format", "json")
    _oom_result(done)
    assert peak < MEMORY_BOUND_MB


@pytest.mark.parametrize("bom", [True, False], ids=["utf16le-bom", "utf16le-no-bom"])
def test_powershell_utf16_log(tmp_path: Path, bom: bool) -> None:
    # PowerShell 5's ">" writes UTF-16LE with a BOM and CRLF line ends.
    body = OOM.replace("\n", "\r\n").encode("utf-16-le")
    p = tmp_path / "ps.log"
    p.write_bytes((codecs.BOM_UTF16_LE if bom else b"") + body)
    done, _ = _diagnose(str(p), "--format", "json")
    _oom_result(done)


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-be"], ids=["utf32le-bom", "utf32be-bom"])
def test_utf32_log_with_a_bom_is_decoded_not_called_healthy(tmp_path: Path, codec: str) -> None:
    # iconv -t utf-32 writes a BOM, FF FE 00 00 (little-endian): it begins with UTF-16LE's
    # mark, and read as UTF-16 every character became itself plus a NUL: nothing matched and
    # the failing run was called healthy (exit 1).
    body = OOM.encode(codec)
    if codec == "utf-32-be":
        body = codecs.BOM_UTF32_BE + body
    p = tmp_path / "u32.log"
    p.write_bytes(body)
    done, _ = _diagnose(str(p), "--format", "json")
    diag = _oom_result(done)
    assert diag["lines_read"] == OOM.count("\n")


@pytest.mark.parametrize("mark", [codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE], ids=["ff-fe", "fe-ff"])
def test_utf16_mark_before_utf8_text_is_read_as_utf8(tmp_path: Path, mark: bytes) -> None:
    # A UTF-16 byte-order mark followed by ordinary UTF-8 text (a tool wrote the mark, then
    # UTF-8; or two files were glued): the content, not the mark, decides. Read as UTF-16 it
    # would be one line of garbage and "no known failure".
    p = tmp_path / "bom16-utf8.log"
    p.write_bytes(mark + OOM.replace("loss", "loss · ü").encode("utf-8"))
    done, _ = _diagnose(str(p), "--format", "json")
    diag = _oom_result(done)
    assert diag["lines_read"] == OOM.count("\n")


def test_crlf_keeps_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "crlf.log"
    p.write_bytes(OOM.replace("\n", "\r\n").encode())
    done, _ = _diagnose(str(p), "--format", "json")
    diag = _oom_result(done)
    assert not diag["root_cause"]["evidence"][0]["text"].endswith("\r")


def test_empty_file_is_an_input_error_not_a_healthy_run(tmp_path: Path) -> None:
    # 0 bytes (an empty `kubectl logs`, a job that never started) says nothing: not exit 1
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    done, _ = _diagnose(str(p), "--format", "json")
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"empty.log: empty input (0 bytes read)" in done.stderr


# -- size ----------------------------------------------------------------------------------------


def test_200mb_single_line_then_the_failure(tmp_path: Path) -> None:
    p = tmp_path / "huge-line.log"
    with open(p, "wb") as fh:
        chunk = b"x" * (1 << 20)
        fh.writelines(chunk for _ in range(200))
        fh.write(b"\n" + OOM.encode())
    start = time.perf_counter()
    done, peak = _diagnose(str(p), "--format", "json")
    elapsed = time.perf_counter() - start
    _oom_result(done, line=OOM_LINE + 1)
    assert peak < MEMORY_BOUND_MB, f"{peak:.0f} MiB"
    assert elapsed < 120, f"{elapsed:.0f} s"


def test_ten_million_short_lines(tmp_path: Path) -> None:
    p = tmp_path / "many.log"
    with open(p, "wb") as fh:
        block = b"".join(b"step %d loss 2.31\n" % i for i in range(100_000))
        fh.writelines(block for _ in range(100))
        fh.write(OOM.encode())
    done, peak = _diagnose(str(p), "--format", "json", timeout=1800)
    _oom_result(done, line=10_000_000 + OOM_LINE)
    assert peak < MEMORY_BOUND_MB, f"{peak:.0f} MiB"


# -- the file system -------------------------------------------------------------------------


def test_folder_of_10000_files(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for i in range(9_999):
        (d / f"worker-{i:05d}.log").write_text(f"step {i} loss 2.31\n")
    (d / "worker-99999.log").write_text(OOM)
    done, peak = _diagnose(str(d), "--format", "json")
    diag = _oom_result(done)
    assert diag["root_cause"]["evidence"][0]["path"].endswith("worker-99999.log")
    assert peak < MEMORY_BOUND_MB
    (d / "one-too-many.log").write_text("x\n")
    done, _ = _diagnose(str(d))
    assert done.returncode == 2 and "more than 10000 files" in _error_line(done)


def test_symlink_loop_is_one_error_line(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.symlink_to(b)
    b.symlink_to(a)
    done, _ = _diagnose(str(a))
    assert done.returncode == 2
    line = _error_line(done)
    assert str(a) in line and "symbolic links" in line


def test_folder_with_a_symlink_loop_still_diagnoses(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "rank5.log").write_text(OOM)
    (d / "loop").symlink_to(d, target_is_directory=True)
    (d / "x.log").symlink_to(d / "y.log")
    (d / "y.log").symlink_to(d / "x.log")
    done, _ = _diagnose(str(d), "--format", "json")
    _oom_result(done)


def test_missing_file_is_one_error_line(tmp_path: Path) -> None:
    done, _ = _diagnose(str(tmp_path / "nope.log"))
    assert done.returncode == 2 and "no such file" in _error_line(done)


def test_named_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "live.log"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as fh:
            for line in OOM.splitlines(keepends=True):
                fh.write(line.encode())
                fh.flush()

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    done, _ = _diagnose(str(fifo), "--format", "json", timeout=120)
    t.join(timeout=10)
    _oom_result(done)


def test_file_that_shrinks_while_read(tmp_path: Path) -> None:
    p = tmp_path / "rotating.log"
    filler = b"step 1 loss 2.31 " * 4 + b"\n"
    with open(p, "wb") as fh:
        fh.write(OOM.encode())
        fh.writelines(filler for _ in range(2_000_000))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootrank", "diagnose", str(p), "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    time.sleep(1.5)
    with open(p, "r+b") as fh:  # logrotate's copytruncate
        fh.truncate(len(OOM.encode()) // 2)
    out, err = proc.communicate(timeout=300)
    assert b"Traceback" not in err
    if proc.returncode == 0:  # read the head before the cut: a correct diagnosis
        diag = json.loads(out)
        assert diag["root_cause"]["failure_class"] == "cuda-oom"
    else:  # or it met the cut: one clear line
        assert proc.returncode in (1, 2)
        lines = [ln for ln in err.decode().splitlines() if ln.strip()]
        assert len(lines) <= 1


def test_device_file_is_refused_in_one_line() -> None:
    # An endless character device (``open_log`` promises: "not a regular file or pipe").
    done, _ = _diagnose("/dev/zero", timeout=60)
    assert done.returncode == 2
    assert "/dev/zero" in _error_line(done)


def test_peak_memory_of_a_plain_run_is_within_bound(tmp_path: Path) -> None:
    p = tmp_path / "oom.log"
    p.write_text(OOM)
    done, peak = _diagnose(str(p), "--format", "json")
    _oom_result(done)
    assert peak < MEMORY_BOUND_MB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0
