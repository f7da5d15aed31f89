"""Fleet triage: jobs found in an archive, each diagnosed as `rootrank diagnose` does, on a real
Dask cluster (a LocalCluster, and `dask scheduler` / `dask worker` processes on localhost),
hosts pseudonymised across the archive, the summary as an order-free reduction, the reports,
the cache, --since and Ctrl-C."""

from __future__ import annotations

import calendar
import gzip
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from rootrank import report
from rootrank.engine import diagnose_paths
from rootrank.mask import Masker
from rootrank.triage.discover import discover
from rootrank.triage.hosts import ArchiveMasker, new_key, pseudonym
from rootrank.triage.summary import Summary
from rootrank.triage.work import Options, diagnose_job

distributed = pytest.importorskip(
    "distributed", reason="rootrank triage needs Dask: pip install '.[fleet]'"
)

BAD = "gpu-node-042"
ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT / "server") + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """40 jobs from bench/fleet_gen.py (every layout, compressed files, a planted bad host)."""
    out = tmp_path_factory.mktemp("fleet") / "archive"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fleet_gen.py"),
            str(out),
            "--jobs",
            "40",
            "--big",
            "0",
            "--planted",
            "6",
            "--hosts",
            "50",
        ],
        capture_output=True,
        env=ENV,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    truth = json.loads(Path(str(out) + ".truth.json").read_text())
    return out, truth


def _triage(*args, timeout=300):
    proc = subprocess.run(
        [sys.executable, "-m", "rootrank", "triage", *args],
        capture_output=True,
        env=ENV,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def _jsonl(proc):
    lines = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    return lines[:-1], lines[-1]["summary"]


# --- finding the jobs --------------------------------------------------------------------


def test_jobs_are_found_by_layout_in_a_stable_order(tmp_path):
    a = tmp_path / "arch"
    (a / "d1" / "run-7" / "attempt_0" / "0").mkdir(parents=True)
    (a / "d1" / "run-7" / "attempt_1" / "0").mkdir(parents=True)
    (a / "d1" / "job-3").mkdir(parents=True)
    (a / ".cache").mkdir()
    for p in [
        "d1/run-7/attempt_0/0/stderr.log",
        "d1/run-7/attempt_1/0/stderr.log",
        "d1/job-3/rank0.log",
        "d1/job-3/rank1.log.gz",
        "d1/slurm-12-0.out",
        "d1/slurm-12-1.out.zst",
        "d1/slurm-9.out",
        "d1/slurm-12_3.out",
        "d1/notes.md",
        ".cache/x.log",
    ]:
        (a / p).write_bytes(b"step 1\n")
    jobs = list(discover([str(a)]))
    got = [
        (j.index, j.id, j.kind, [os.path.relpath(p, a) for p in j.paths], len(j.files))
        for j in jobs
    ]
    assert got == [
        (0, "arch/d1/slurm-9", "slurm", ["d1/slurm-9.out"], 1),
        (1, "arch/d1/slurm-12", "slurm", ["d1/slurm-12-0.out", "d1/slurm-12-1.out.zst"], 2),
        (2, "arch/d1/slurm-12_3", "slurm", ["d1/slurm-12_3.out"], 1),
        (3, "arch/d1/job-3", "folder", ["d1/job-3/rank0.log", "d1/job-3/rank1.log.gz"], 2),
        (4, "arch/d1/run-7", "torchrun", ["d1/run-7"], 2),
    ]
    # files named on the command line: one job each, SLURM tasks of one job grouped
    named = list(
        discover(
            [
                str(a / "d1/slurm-12-0.out"),
                str(a / "d1/slurm-12-1.out.zst"),
                str(a / "d1/job-3/rank0.log"),
            ]
        )
    )
    assert [(j.id, j.kind, len(j.paths)) for j in named] == [
        (str(a / "d1/job-3/rank0.log"), "file", 1),
        ("d1/slurm-12", "slurm", 2),
    ]
    # --since: only jobs with a file modified since then
    old = time.time() - 10 * 86400
    for p in (a / "d1").rglob("*"):
        if p.is_file() and "slurm-9" not in p.name:
            os.utime(p, (old, old))
    assert [j.id for j in discover([str(a)], since=time.time() - 86400)] == ["arch/d1/slurm-9"]


# --- hosts -------------------------------------------------------------------------------


def test_a_host_has_one_pseudonym_across_jobs_and_single_reports_are_unchanged():
    key = new_key()
    m1, m2 = ArchiveMasker(key), ArchiveMasker(key)
    a = m1.text("NCCL WARN connect to gpu-node-042.cluster.local failed; MASTER_ADDR=gpu-node-007")
    b = m2.text("host : gpu-node-042")
    p042 = pseudonym(key, "gpu-node-042")
    assert re.fullmatch(r"host-\d{12}", p042)
    assert p042 in a and p042 in b and "gpu-node" not in a + b
    assert m2.host("GPU-NODE-042") == p042 and m2.host("10.1.2.3") == pseudonym(
        key, "10.1.2.3", "ip"
    )
    assert ArchiveMasker(new_key()).host("gpu-node-042") != p042  # the key is per run
    assert m1.host("localhost") == "localhost"
    single = Masker()  # rootrank diagnose: numbered within one report, as before
    assert (
        single.text("host : gpu-node-042") == "host : host-1"
        and single.host("gpu-node-007") == "host-2"
    )
    assert m1.host("gpu-node-007") == pseudonym(key, "gpu-node-007") != p042


# --- the summary -------------------------------------------------------------------------


def test_the_summary_is_the_same_in_any_order_and_partition(archive):
    out, truth = archive
    opts = Options(mask="keep-hosts", full=False)
    records = [diagnose_job(j, opts)["record"] for j in discover([str(out)])]
    assert len(records) == 40
    whole = Summary()
    for r in records:
        whole.add(r)
    rng = random.Random(3)
    for _ in range(3):
        shuffled = records[:]
        rng.shuffle(shuffled)
        parts = [Summary() for _ in range(4)]
        for i, r in enumerate(shuffled):
            parts[i % 4].add(r)
        merged = parts[0]
        for p in parts[1:]:
            merged.merge(p)
        assert merged.to_dict() == whole.to_dict()
    s = whole.to_dict()
    assert s["jobs"] == 40 and s["failed"] + s["healthy"] + s["unclassified"] + s["errors"] == 40
    by_status = {
        st: {int(r["id"].rsplit("-", 1)[1]) for r in records if r["status"] == st}
        for st in ("healthy", "unclassified")
    }
    assert set(truth["healthy_jobs"]) <= by_status["healthy"]  # a written-healthy run is healthy
    assert (
        set(truth["unclassified_jobs"]) == by_status["unclassified"]
    )  # RecipeNotFound, for review
    assert (
        s["healthy"] == len(by_status["healthy"])
        and s["unclassified"] == len(truth["unclassified_jobs"]) > 0
    )
    assert {(u["text"], u["rank"], u["host"] is not None) for u in s["unclassified_jobs"]} == {
        ("recipes.registry.RecipeNotFound: llama-70b-sft-v3", 3, True)
    }
    assert sum(c["jobs"] for c in s["classes"]) == s["failed"]
    top = s["hosts"][0]
    assert top["host"] == BAD and top["jobs"] == len(truth["planted_jobs"]) == 6
    assert top["jobs"] > s["hosts"][1]["jobs"]
    assert set(top["kinds"]) <= {"hardware", "network", "host-memory", "host-storage"}
    assert top["host_caused"] == top["jobs"]  # every planted failure is the host's doing
    assert sorted(int(j.rsplit("-", 1)[1]) for j in top["job_ids"]) == sorted(truth["planted_jobs"])
    assert top["evidence"] and all(e["line"] >= 1 for e in top["evidence"])
    assert [d["day"] for d in s["days"]] == sorted(d["day"] for d in s["days"])


# --- Dask: local cluster == existing cluster == rootrank diagnose --------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dask_cluster():
    """A scheduler and two workers started with the `dask` commands, on localhost."""
    port = _free_port()
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    sched = subprocess.Popen(
        [*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            f"tcp://127.0.0.1:{port}",
            "--nworkers",
            "2",
            "--nthreads",
            "1",
            "--no-dashboard",
            "--host",
            "127.0.0.1",
        ],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"tcp://127.0.0.1:{port}"
    try:
        with distributed.Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in (worker, sched):
            p.terminate()
        for p in (worker, sched):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_cluster_results_equal_local_results_equal_diagnose(archive, dask_cluster):
    out, truth = archive
    local = _triage(str(out), "--format", "json", "--no-mask", "--workers", "2", "-q")
    remote = _triage(str(out), "--format", "json", "--no-mask", "--scheduler", dask_cluster, "-q")
    assert local.stdout == remote.stdout
    jobs, summary = _jsonl(local)
    assert [j["job"]["index"] for j in jobs] == list(range(40))
    assert summary["jobs"] == 40 and summary["hosts"][0]["host"] == BAD
    for j in jobs:
        want = json.loads(report.to_json(diagnose_paths(j["job"]["paths"], mask=False)))
        assert j["diagnosis"] == want, j["job"]["id"]
    # the same through the command a user types, for a few jobs of each layout
    for kind in ("slurm", "torchrun", "folder"):
        j = next(j for j in jobs if j["job"]["kind"] == kind)
        proc = run_cli("diagnose", *j["job"]["paths"], "--format", "json", "--no-mask")
        assert json.loads(proc.stdout) == j["diagnosis"]
    planted = [j for j in jobs if int(j["job"]["id"].rsplit("-", 1)[1]) in truth["planted_jobs"]]
    assert len(planted) == 6 and all(j["diagnosis"]["initiating_host"] == BAD for j in planted)


def _canonical(obj):
    """Host pseudonyms renamed in order of first appearance (host-1 and host-0123... alike)."""
    text = json.dumps(obj)
    names: dict[str, str] = {}
    return re.sub(
        r"\b(host|ip)-\d+\b", lambda m: names.setdefault(m[0], f"{m[1]}#{len(names)}"), text
    )


def test_masked_results_are_diagnose_with_archive_wide_pseudonyms(archive):
    out, truth = archive
    proc = _triage(str(out), "--format", "json", "--workers", "2", "-q")
    text = proc.stdout.decode()
    assert "gpu-node-" not in text  # no raw host left a worker
    jobs, summary = _jsonl(proc)
    top = summary["hosts"][0]["host"]
    assert re.fullmatch(r"host-\d{12}", top) and summary["hosts"][0]["jobs"] == 6
    for j in jobs:
        assert all(os.path.exists(p) for p in j["job"]["paths"])  # /tmp paths name no user
        want = json.loads(report.to_json(diagnose_paths(j["job"]["paths"], mask=True)))
        assert _canonical(j["diagnosis"]) == _canonical(want), j["job"]["id"]
    planted = [j for j in jobs if int(j["job"]["id"].rsplit("-", 1)[1]) in truth["planted_jobs"]]
    assert {j["diagnosis"]["initiating_host"] for j in planted} == {top}


def test_no_raw_secret_leaves_a_worker(tmp_path):
    job = tmp_path / "arch" / "job-1"
    job.mkdir(parents=True)
    token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA"
    (job / "train.log").write_text(
        f"export HF_TOKEN={token}\nuser alice.smith@example.com\n"
        "gpu-node-042:4002:4002 [2] NCCL INFO comm 0x5d1 rank 2 nranks 4 cudaDev 2 busId 3b000 - Init COMPLETE\n"
        + (ROOT / "examples" / "multi-rank-hang.log").read_text()
    )
    for flag in ((), ("--keep-hosts",)):
        proc = _triage(str(tmp_path / "arch"), "--format", "json", "--workers", "1", "-q", *flag)
        text = proc.stdout.decode()
        assert token not in text and "alice.smith@example.com" not in text
        assert ("gpu-node-042" in text) == bool(flag)
        jobs, summary = _jsonl(proc)
        assert jobs[0]["diagnosis"]["root_cause"]["failure_class"] == "collective-desync"
        host = jobs[0]["diagnosis"]["initiating_host"]
        assert host == "gpu-node-042" if flag else re.fullmatch(r"host-\d{12}", host)
        assert summary["hosts"][0]["host"] == host


# --- reports, cache, --since, Ctrl-C ------------------------------------------------------


def test_reports_text_markdown_and_offline_html(archive):
    out, truth = archive
    text = _triage(str(out), "--keep-hosts", "--workers", "2", "-q").stdout.decode()
    rows = text.split("Hosts that initiated failures")[1].splitlines()
    assert rows[2].split()[0] == BAD and rows[2].split()[1] == str(len(truth["planted_jobs"]))
    assert "Failure classes" in text and "By day" in text
    md = _triage(
        str(out), "--keep-hosts", "--format", "markdown", "--workers", "2", "-q"
    ).stdout.decode()
    first_row = next(
        line for line in md.splitlines() if line.startswith("| ") and "host |" not in line
    )
    assert first_row.startswith(f"| {BAD} | 6 |")
    page = _triage(
        str(out), "--keep-hosts", "--format", "html", "--workers", "2", "-q"
    ).stdout.decode()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2
    assert "<script" not in page and not re.search(r"\b(src|href)\s*=", page) and "url(" not in page
    first_cell = re.search(r"<tr><td><b>([^<]+)</b></td><td class=n>(\d+)</td>", page)
    assert first_cell.groups() == (BAD, "6")


def test_the_text_report_says_what_the_host_table_leaves_out(archive):
    """Under the host table: how many failed jobs named no host (they are not in it), and,
    with pseudonyms, how to see the real names; the healthy jobs are named (trial r16)."""
    out, truth = archive
    _, s = _jsonl(_triage(str(out), "--format", "json", "--workers", "2", "-q"))
    assert len(s["healthy_jobs"]) == s["healthy"] >= len(truth["healthy_jobs"])
    text = _triage(str(out), "--workers", "2", "-q").stdout.decode()
    assert (
        "  Host names are pseudonyms, one per machine across the archive: --keep-hosts shows"
        " the real names" in text
    )
    assert s["failed_without_host"] > 0  # fleet_gen writes jobs whose failure names no host
    assert (
        f"  {s['failed_without_host']} of {s['failed']} failed jobs named no initiating host"
        " and are not in this table" in text
    )
    healthy = text.split(f"Healthy jobs ({s['healthy']})\n", 1)[1].splitlines()[0]
    assert healthy.strip().split(", ") == s["healthy_jobs"]
    kept = _triage(str(out), "--keep-hosts", "--workers", "2", "-q").stdout.decode()
    assert "Host names are pseudonyms" not in kept


def _tree(folder):
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in Path(folder).rglob("*"))


def test_cache_reads_only_new_or_changed_jobs_and_nothing_is_written_without_it(archive, tmp_path):
    out, _ = archive
    arch = tmp_path / "arch"
    shutil.copytree(out, arch)
    before = _tree(arch)
    cwd_before = sorted(os.listdir(ROOT))
    _triage(str(arch), "--workers", "1", "-q")
    assert _tree(arch) == before and sorted(os.listdir(ROOT)) == cwd_before  # nothing written
    cache = tmp_path / "cache"

    def triage_with_cache() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "rootrank", "triage", str(arch), "--format", "json"]
            + ["--cache", str(cache), "--workers", "2"],
            capture_output=True,
            env=ENV,
            timeout=300,
            check=False,
        )

    first = triage_with_cache()
    assert first.returncode == 0 and "worker(s), 0 from the cache" in first.stderr.decode()
    assert (cache / "host-key").stat().st_mode & 0o777 == 0o600
    second = triage_with_cache()
    assert second.stdout == first.stdout  # same pseudonyms: the key is kept in the cache
    assert "worker(s), 40 from the cache" in second.stderr.decode()
    # touched (same bytes): still from the cache; changed: diagnosed again
    jobs, _ = _jsonl(first)
    touched = next(j for j in jobs if j["job"]["kind"] == "slurm" and len(j["job"]["paths"]) == 1)
    changed = next(j for j in jobs if j["job"]["kind"] == "folder")
    os.utime(touched["job"]["paths"][0], None)
    path = Path(changed["job"]["paths"][0])
    data = path.read_bytes()
    extra = b"[rank0]: step 99999 loss 0.1\n"
    path.write_bytes(
        gzip.compress(gzip.decompress(data) + extra) if path.suffix == ".gz" else data + extra
    )
    third = subprocess.run(
        [
            sys.executable,
            "-m",
            "rootrank",
            "triage",
            str(arch),
            "--format",
            "json",
            "--cache",
            str(cache),
            "--workers",
            "2",
        ],
        capture_output=True,
        env=ENV,
        timeout=300,
        check=False,
    )
    assert "worker(s), 39 from the cache" in third.stderr.decode()
    new_jobs, _ = _jsonl(third)
    again = next(j for j in new_jobs if j["job"]["id"] == changed["job"]["id"])
    assert again["diagnosis"]["lines_read"] == changed["diagnosis"]["lines_read"] + 1


def test_since_keeps_the_jobs_written_since_a_date(archive):
    out, _ = archive
    proc = _triage(
        str(out),
        "--since",
        "2026-11-16",
        "--format",
        "json",
        "--workers",
        "1",
        "-q",
        "--keep-hosts",
    )
    jobs, summary = _jsonl(proc)
    since = calendar.timegm((2026, 11, 16, 0, 0, 0))
    expected = [j for j in discover([str(out)]) if j.mtime >= since]
    assert 0 < len(jobs) == len(expected) == summary["jobs"] < 40
    assert [j["job"]["id"] for j in jobs] == [j.id for j in expected]
    # the filter reads file times, the report's dates are the logs' (trial r16 finding 11)
    assert proc.stderr.decode().splitlines()[-1] == (
        "rootrank: note: --since 2026-11-16 kept the jobs with a file modified then or later"
        " (file times, UTC); the dates in the report are the failures' dates in the logs,"
        " which can be earlier"
    )
    proc = run_cli("triage", str(out), "--since", "16/11/2026")
    assert proc.returncode == 2 and b"is not a date" in proc.stderr


def test_ctrl_c_stops_cleanly_with_the_jobs_done(tmp_path):
    arch = tmp_path / "arch"
    src = (ROOT / "examples" / "multi-rank-hang.log").read_bytes()
    for i in range(400):
        d = arch / f"job-{i:03d}"
        d.mkdir(parents=True)
        (d / "train.log").write_bytes(src)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rootrank",
            "triage",
            str(arch),
            "--format",
            "json",
            "--workers",
            "1",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        start_new_session=True,
    )
    first = proc.stdout.readline()  # the first job is done: the cluster is up and working
    assert json.loads(first)["job"]["index"] == 0
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    rest = proc.stdout.read()  # the same buffered reader: communicate() would skip its buffer
    err = proc.stderr.read()
    proc.wait(timeout=120)
    lines = [json.loads(x) for x in (first + rest).decode().splitlines()]
    summary = lines[-1]["summary"]
    assert proc.returncode == 130, err.decode()
    assert summary["interrupted"] is True and summary["jobs_found"] == 400
    assert 1 <= summary["jobs"] == len(lines) - 1 < 400
    assert summary["failed"] == summary["jobs"]
    assert b"interrupted: the report covers" in err and b"Traceback" not in err, err.decode()


def test_no_logs_is_an_input_error_and_nothing_new_since_a_date_is_an_empty_report(
    tmp_path, archive
):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.md").write_text("not a log")
    proc = run_cli("triage", str(tmp_path / "empty"))
    assert proc.returncode == 2 and proc.stderr.decode().startswith(
        f"rootrank: {tmp_path / 'empty'}: no log files"
    )
    out, _ = archive
    proc = run_cli("triage", str(out), "--since", "2030-01-01", "--format", "json", "-q")
    assert proc.returncode == 0
    summary = json.loads(proc.stdout)["summary"]
    assert summary["jobs"] == 0 and summary["jobs_found"] == 0 and summary["hosts"] == []


def test_triage_needs_no_network_beyond_loopback(archive):
    """In a fresh network namespace (no interface but loopback) the report is the same: the
    local cluster talks over 127.0.0.1 only and nothing is fetched."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2)")
    out, _ = archive
    args = [
        "-m",
        "rootrank",
        "triage",
        str(out),
        "--keep-hosts",
        "--workers",
        "1",
        "-q",
        "--format",
        "json",
    ]
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {probe.stderr.decode().strip()}")
    script = "ip link set lo up && exec " + " ".join(f"'{a}'" for a in [sys.executable, *args])
    isolated = subprocess.run(
        ["unshare", "-n", "sh", "-c", script],
        capture_output=True,
        env=ENV,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert isolated.returncode == 0, isolated.stderr.decode()
    normal = _triage(*args[3:])
    assert isolated.stdout == normal.stdout
    _, summary = _jsonl(normal)
    assert summary["jobs"] == 40 and summary["hosts"][0]["host"] == BAD


def test_dask_shutdown_noise_is_silenced_and_levels_are_restored(caplog):
    """A 'Stream is closed' error logged while the local cluster stops is not shown; the
    levels Dask's config set (a child with its own level too) come back afterwards."""
    from rootrank.triage.run import _quiet_shutdown

    child = logging.getLogger("distributed.client")
    child.setLevel(logging.WARNING)
    caplog.set_level(logging.DEBUG)
    with _quiet_shutdown():
        child.error("Stream is closed")
        logging.getLogger("tornado.application").error("Stream is closed")
        logging.getLogger("rootrank.other").error("kept")
    assert [r.getMessage() for r in caplog.records] == ["kept"]
    assert child.level == logging.WARNING
    child.error("after")
    assert [r.getMessage() for r in caplog.records] == ["kept", "after"]


DASHBOARD_PROBE = """
import json, urllib.error, urllib.request
import psutil
from rootrank.triage.run import dask_client


def main():
    with dask_client(None, 1) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        codes = {}
        for path in ("/", "/status", "/health", "/json/counts.json", "/info/main/workers.html"):
            try:
                codes[path] = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).status
            except urllib.error.HTTPError as exc:
                codes[path] = exc.code
        me = psutil.Process()
        listening = sorted(
            {c.laddr.ip for p in (me, *me.children(recursive=True))
             for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
        )
        print(json.dumps({"port": port, "codes": codes, "listening": listening}))


if __name__ == "__main__":
    main()
"""


def test_the_local_cluster_serves_no_dashboard_and_warns_of_no_taken_port(tmp_path):
    """docs/triage.md: "no dashboard". Dask's scheduler opens an HTTP server whatever it is
    told (dashboard_address=None means port 8787, and a taken 8787 printed a UserWarning on
    the user's terminal: round-13 trial item 5). With 8787 taken: no warning on stderr, the
    HTTP servers listen on 127.0.0.1 only, on another port, and serve nothing (404)."""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:
        pass  # taken already: the case to test
    try:
        probe = tmp_path / "probe.py"
        probe.write_text(DASHBOARD_PROBE)
        done = subprocess.run(
            [sys.executable, "-W", "default", str(probe)],
            capture_output=True,
            env=ENV,
            timeout=300,
            check=False,
            cwd=tmp_path,
        )
    finally:
        holder.close()
    assert done.returncode == 0, done.stderr.decode()
    assert b"already in use" not in done.stderr and b"UserWarning" not in done.stderr
    got = json.loads(done.stdout)
    assert got["port"] != 8787
    assert set(got["codes"].values()) == {404}
    assert got["listening"] == ["127.0.0.1"]


def test_the_host_note_counts_the_jobs_that_named_only_localhost():
    """New-user trial r18 finding 5: jobs whose diagnosis named ``localhost`` were counted
    among those naming no host without a word; the note says how many named only it."""
    from rootrank.triage.render import _host_notes
    from rootrank.triage.summary import Summary

    def rec(index: int, host: str | None) -> dict:
        return {
            "index": index, "id": f"job{index}", "bytes": 10, "status": "failed",
            "time": 1.0e9, "time_source": "log", "hosts": [host] if host else [],
            "failure_class": "cuda-oom", "signature": "cuda-oom", "title": "CUDA OOM",
            "host": host, "evidence": None, "rank": 0, "exception": None,
        }  # fmt: skip

    s = Summary()
    for i, host in enumerate(["node01", "localhost", None, "localhost"]):
        s.add(rec(i, host))
    d = s.to_dict()
    assert (d["failed"], d["failed_without_host"], d["failed_local_host"]) == (4, 3, 2)
    assert [h["host"] for h in d["hosts"]] == ["node01"]
    assert _host_notes(d)[0] == (
        "  3 of 4 failed jobs named no initiating host (2 named only localhost, which is no one"
        " machine) and are not in this table (their classes are below)"
    )
