"""The masker: placeholders, false positives, pseudonyms, idempotence, and zero leaks on a
seeded corpus of logs carrying 40+ kinds of secrets, in every output format.

The secrets are generated at test time by ``tests/secrets/seeded.py`` (no literal in the repo).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import random
import re
import string
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from rootrank import mask as mask_mod
from rootrank import report, report_sarif
from rootrank.engine import diagnose_text
from rootrank.mask import MAX_TEXT, WITHHELD, Masker


def _load_seeded():
    path = Path(__file__).parent / "secrets" / "seeded.py"
    spec = importlib.util.spec_from_file_location("rootrank_tests_seeded", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


seeded = _load_seeded()

# Secret-shaped strings are assembled here too, from a prefix in pieces and a body drawn from a
# seeded generator, so no token literal (nor a high-entropy string) sits in this file.
_RNG = random.Random(20261129)


def _body(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


HF = "h" + "f_" + _body(34)
GHP = "gh" + "p_" + _body(36)
AKIA = "AK" + "IA" + _body(16, string.ascii_uppercase + string.digits)
SK = "s" + "k-proj-" + _body(40)
SLACK = "xo" + "xb-" + _body(12, string.digits) + "-" + _body(13, string.digits) + "-" + _body(24)
GOOGLE = "AI" + "za" + _body(35)
AWS_SECRET = _body(40, string.ascii_letters + string.digits + "/+")
WANDB = _body(40, "0123456789abcdef")
PASSWORD = _body(12)

# -- placeholders ----------------------------------------------------------------------------

PLACEHOLDERS = [
    (f"HF_TOKEN={HF}", "HF_TOKEN=hf_***"),
    (f"export GITHUB_TOKEN={GHP}", "export GITHUB_TOKEN=ghp_***"),
    (f"AWS_ACCESS_KEY_ID={AKIA}", "AWS_ACCESS_KEY_ID=AKIA***"),
    (f"client = OpenAI(api_key='{SK}')", "client = OpenAI(api_key='sk-***')"),
    (f"slack: {SLACK} posted", "slack: xoxb-*** posted"),
    (f"key={GOOGLE}&q=1", "key=AIza***&q=1"),
    (
        f"aws_secret_access_key = {AWS_SECRET}",
        "aws_secret_access_key = ***",
    ),
    (f"WANDB_API_KEY={WANDB}", "WANDB_API_KEY=***"),
    ("db password=hunter2 retry", "db password=*** retry"),
    ('{"password": "correct horse battery"}', '{"password": "***"}'),
    (f"--api-key {PASSWORD} --lr 1e-4", "--api-key *** --lr 1e-4"),
    (
        f"git clone https://bob:{PASSWORD}@gitlab.example.com/x.git",
        "git clone https://***:***@host-1/x.git",
    ),
    (f"Authorization: Bearer {PASSWORD}.{PASSWORD}", "Authorization: Bearer ***"),
    ("-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----***"),
    ("mail alice.smith@example.com now", "mail <email> now"),
    ('File "/home/alice/proj/train.py", line 3', 'File "/home/<user>/proj/train.py", line 3'),
    (r"C:\Users\alice\proj\train.py", r"C:\Users\<user>\proj\train.py"),
    ("USER=alice", "USER=<user>"),
    ("  host      : node03.cluster.local", "  host      : host-1"),
    (
        "node01:2143:2561 [1] NCCL INFO Channel 00/02",
        "host-1:2143:2561 [1] NCCL INFO Channel 00/02",
    ),
    ("MASTER_ADDR=10.0.0.12", "MASTER_ADDR=ip-1"),
    (
        "srun: error: gpu-n17: task 3: Exited with exit code 1",
        "srun: error: host-1: task 3: Exited with exit code 1",
    ),
    ("connect to [node02.hpc.internal]:29500 (errno: 110", "connect to [host-1]:29500 (errno: 110"),
    ("SLURM_NODELIST=node[01-03]", "SLURM_NODELIST=host-1,host-2,host-3"),
    ("Using [0]ib0:fe80::1ff:fe23:4567:890a<0>", "Using [0]ib0:ip-1<0>"),
    # configuration dumps: the whole value goes, words, spaces and punctuation included
    ("  password: orchid lantern 42&x", "  password: ***"),
    ("[rank0]: db_password: letmein", "[rank0]: db_password: ***"),
    ('  - token: "meadowfalcon"', '  - token: "***"'),
    (f"password = {PASSWORD}!%;,", "password = ***"),
    (f'secret_key = "{PASSWORD}"', 'secret_key = "***"'),
    ("client_secret = 'harbor-cobalt'  # rotated", "client_secret = '***'  # rotated"),
    # short, dotless machine names where NCCL and launchers name a machine
    (
        "[rank0]: socketProgress: Connection closed by remote peer gpu-node-018<41764>",
        "[rank0]: socketProgress: Connection closed by remote peer host-1<41764>",
    ),
    ("launching as user root on gpu-node-018", "launching as user root on host-1"),
    ("node dgx-a100-07 is down", "node host-1 is down"),
]


@pytest.mark.parametrize(("raw", "masked"), PLACEHOLDERS, ids=[p[1][:40] for p in PLACEHOLDERS])
def test_placeholder(raw: str, masked: str) -> None:
    assert Masker().text(raw) == masked


# -- what must stay: diagnosis text, hashes, pointers, versions, public links ----------------

UNCHANGED = [
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    ),
    (
        "[rank3]:[E1129 12:34:56.789 ProcessGroupNCCL.cpp:1970] [PG 0 Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, Timeout(ms)=600000)"
    ),
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "tensor([0.1234, -5.6789e-03], device='cuda:1') ptr=0x7f3a2c001234",
    "RuntimeError: c10::Error at::cuda::blas threading.local() 12:34:56",
    "cuDNN version 8.9.2.26 nvidia-cudnn-cu12==8.9.2.26 NCCL version 2.18.5+cuda12.1",
    "MASTER_ADDR=localhost MASTER_PORT=29500 tcp://127.0.0.1:29500 [::]:29500",
    "pad_token=<pad> eos_token='</s>' use_auth_token=True max_tokens=2048 token=None",
    "ValueError: Invalid token: expired",
    'FATAL:  password authentication failed for user "postgres"',
    '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1518',
    "socket.cpp:1019 file_store.py:42 cuda:0 mlx5_0:1/IB",
    "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
    "sorted(items, key=lambda x: x[1])",
    "git@github.com:pytorch/pytorch.git",
    "pip install --user torch",
    "loading weights on cuda-12 then cast to fp16 via eth0 on aarch64 from llama-2-7b at step3",
    "  max_tokens: 4096",
    "  pad_token: <pad>",
    "  password: null",
    "  token: ${HF_TOKEN}",
    "key: layers.0.weight",
]


@pytest.mark.parametrize("line", UNCHANGED, ids=[u[:40] for u in UNCHANGED])
def test_not_a_secret(line: str) -> None:
    assert Masker().text(line) == line


# -- pseudonyms ------------------------------------------------------------------------------


def test_hosts_are_stable_within_one_masker_and_independent_across() -> None:
    m = Masker()
    a = m.text("node07:1:1 [0] NCCL INFO init")
    b = m.text("  host      : node07.cluster.local")
    c = m.text("srun: error: node09: task 1: Exited")
    assert a.startswith("host-1:") and b.endswith("host-1") and "host-2" in c
    assert m.host("node07") == "host-1" and m.host("NODE07") == "host-1"
    assert m.host("10.1.2.3") == "ip-1" and m.host("10.1.2.3") == "ip-1"
    # a later bare mention of a learned host is masked too
    assert m.text("rank 3 on node09 died") == "rank 3 on host-2 died"
    assert Masker().host("node09") == "host-1"  # a new report numbers from 1


def test_kept_hosts() -> None:
    m = Masker()
    for name in ("localhost", "127.0.0.1", "0.0.0.0", "pytorch.org", "host-4", "ip-2", ""):
        assert m.host(name) == name


def test_machine_fqdns_in_prose_are_hosts_file_names_are_not() -> None:
    m = Masker()
    line = "[rank1]: torch.OutOfMemoryError: CUDA out of memory on gpu-node-17.cluster.example.com"
    assert m.text(line) == "[rank1]: torch.OutOfMemoryError: CUDA out of memory on host-1"
    assert m.text("a100-03.hpc.uni-x.de:29500 refused") == "host-2:29500 refused"
    for kept in (
        "loading config-v2.model.json",
        "model-00001-of-00002.safetensors.index.json",
        "torch-2.1.0.dist-info",
        "libcudnn8.so.8",
        "https://download.pytorch.org/whl/cu121",
        "s3.us-east-1.amazonaws.com",
        "python3.10/site-packages",
    ):
        assert m.text(kept) == kept


def test_an_exception_by_its_module_path_is_no_host_at_a_lines_start() -> None:
    """A traceback's last line names the exception by its module, which may hold a digit
    (sqlite3, h5py, bz2, mpi4py): it is no ``host: `` prefix; a host written with capitals
    whose last part is no exception name is still masked."""
    m = Masker()
    for kept in (
        "sqlite3.OperationalError: database is locked",
        "[default2]:sqlite3.OperationalError: database is locked",
        "h5py.OSError: Unable to open file",
        "mpi4py.MPI.Exception: MPI_ERR_TRUNCATE",
        "bz2.BZ2Error: invalid data stream",
    ):
        assert m.text(kept) == kept
    assert m.text("Node03.Cluster.Local: NCCL WARN x") == "host-1: NCCL WARN x"
    assert m.text("gpu-node-7: NCCL WARN x") == "host-2: NCCL WARN x"


def test_mapping_never_leaves() -> None:
    m = Masker()
    m.host("secret-node-01")
    assert "secret-node" not in repr(m)
    with pytest.raises(TypeError):
        pickle.dumps(m)
    assert not [
        a
        for a in dir(m)
        if not a.startswith("_")
        and a not in ("enabled", "host", "mac", "text", "lines", "json", "learn", "sources")
    ]


def test_json_masks_hosts_by_key() -> None:
    m = Masker()
    out = m.json(
        {
            "host": "gpu7",
            "ranks": {"hosts": {"0": "gpu7", "1": "gpu8"}},
            "evidence": [{"text": "gpu7:1:1 [0] NCCL WARN x", "path": "/home/bob/r0.log"}],
        }
    )
    assert out == {
        "host": "host-1",
        "ranks": {"hosts": {"0": "host-1", "1": "host-2"}},
        "evidence": [{"text": "host-1:1:1 [0] NCCL WARN x", "path": "/home/<user>/r0.log"}],
    }


# -- switches and limits ---------------------------------------------------------------------


def test_disabled_is_identity() -> None:
    m = Masker(enabled=False)
    line = f"HF_TOKEN={HF} host : node01 /home/alice"
    assert m.text(line) == line and m.host("node01") == "node01"
    assert m.json({"host": "node01"}) == {"host": "node01"}


def test_idempotent_on_placeholders_and_corpus() -> None:
    m = Masker()
    for raw, _ in PLACEHOLDERS:
        once = m.text(raw)
        assert m.text(once) == once
        assert Masker().text(once) == once
    for log in seeded.build(3):
        for line in log.text.splitlines():
            once = m.text(line)
            assert m.text(once) == once, line


def test_timeout_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mask_mod, "TIMEOUT_S", 1e-9)
    line = "x=1 " * 5000 + f"HF_TOKEN={HF}"
    assert Masker().text(line) == WITHHELD


def test_long_text_is_cut_and_still_masked() -> None:
    line = f"HF_TOKEN={HF} " + "a" * (MAX_TEXT * 3)
    out = Masker().text(line)
    assert out.startswith("HF_TOKEN=hf_***") and HF not in out
    assert out.endswith(f"[{len(line) - MAX_TEXT} characters not shown]")


# -- the seeded corpus: zero leaks -----------------------------------------------------------


def _leaks(output: str, planted) -> list[str]:
    found = []
    for p in planted:
        if p.kind == "username":
            if re.search(rf"(?<![\w]){re.escape(p.value)}(?![\w])", output):
                found.append(p.kind)
        elif p.value in output:
            found.append(p.kind)
    return found


def test_corpus_has_30_kinds() -> None:
    kinds = seeded.kinds(seeded.build(0))
    assert len(kinds) >= 30, sorted(kinds)
    places = {p.where for log in seeded.build(0) for p in log.planted}
    assert {"env", "cmdline", "config", "url", "traceback", "nccl-prefix", "exception"} <= places


@pytest.mark.parametrize("seed", range(20))
def test_masker_leaks_nothing_line_by_line(seed: int) -> None:
    for log in seeded.build(seed):
        m = Masker()
        out = "\n".join(m.text(line) for line in log.text.splitlines())
        assert _leaks(out, log.planted) == [], log.name
        m2 = Masker()
        whole = m2.text(log.text)  # a multi-line message masks the same way
        assert _leaks(whole, log.planted) == [], log.name


@pytest.mark.parametrize("index", range(4))
def test_engine_outputs_leak_nothing_and_diagnosis_is_unchanged(index: int) -> None:
    log = seeded.build(7)[index]
    raw = diagnose_text(log.text, log.name, mask=False)
    masked = diagnose_text(log.text, log.name, mask=True)
    # the diagnosis does not depend on masking
    assert masked.root_cause is not None and raw.root_cause is not None
    assert masked.root_cause.failure_class == raw.root_cause.failure_class == log.failure_class
    assert masked.initiating_rank == raw.initiating_rank == log.initiating_rank
    assert [e.line for e in masked.root_cause.evidence] == [e.line for e in raw.root_cause.evidence]
    assert [f.signature for f in masked.findings] == [f.signature for f in raw.findings]
    shown = [p for p in log.planted if p.shown]
    assert shown, "each seeded log puts a secret on a line the engine shows"
    raw_json = report.to_json(raw)
    # unmasked, the shown secrets are there: the leak check below looks at the right text
    assert set(_leaks(raw_json, shown)) == {p.kind for p in shown}
    outputs = [
        ("json", report.to_json(masked)),
        ("text", report.to_text(masked, color=False)),
        ("markdown", report.to_markdown(masked)),
    ]
    outputs.append(("sarif", report_sarif.to_sarif(masked)))
    outputs.append(("github", report_sarif.to_github(masked)))
    for name, out in outputs:
        assert _leaks(out, log.planted) == [], name


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_cli_leaks_nothing(tmp_path: Path, fmt: str) -> None:
    logs = seeded.build(11)
    paths = []
    for log in logs:
        p = tmp_path / log.name
        p.write_text(log.text, encoding="utf-8")
        paths.append(str(p))
    planted = [p for log in logs for p in log.planted]
    for path, log in zip(paths, logs, strict=True):
        masked = run_cli("diagnose", path, "--format", fmt)
        assert masked.returncode == 0, masked.stderr
        out = masked.stdout.decode("utf-8")
        assert _leaks(out, planted) == [], (log.name, fmt)
        assert log.failure_class in out
        if fmt == "json":
            assert json.loads(out)["initiating_rank"] == log.initiating_rank
    raw = run_cli("diagnose", paths[0], "--format", "json", "--no-mask")
    shown = [p for p in logs[0].planted if p.shown]
    assert set(_leaks(raw.stdout.decode("utf-8"), shown)) == {p.kind for p in shown}


def test_language_server_outputs_leak_nothing(tmp_path: Path) -> None:
    """Diagnostics, hover on every evidence line, and ``rootrank.diagnose`` of the seeded
    logs, over real stdio: no planted secret in any message the server sends."""
    import subprocess

    from test_no_network import _Client

    logs = seeded.build(5)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rootrank", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    client = _Client(proc)
    try:
        client.request(
            "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
        )
        client.send({"method": "initialized", "params": {}})
        for log in logs:
            path = tmp_path / log.name
            path.write_text(log.text, encoding="utf-8")
            uri = path.as_uri()
            client.send(
                {
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": uri,
                            "languageId": "log",
                            "version": 1,
                            "text": log.text,
                        }
                    },
                }
            )
            deadline = time.time() + 120
            published = None
            while published is None and time.time() < deadline:
                client.answer_server_requests()
                with client.cond:
                    client.cond.wait(0.5)
                    published = next(
                        (
                            m
                            for m in client.messages
                            if m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri
                            and m["params"]["diagnostics"]
                        ),
                        None,
                    )
            assert published is not None, f"no diagnostics for {log.name}"
            lines = sorted(
                {d["range"]["start"]["line"] for d in published["params"]["diagnostics"]}
            )
            for line in lines:
                client.request(
                    "textDocument/hover",
                    {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}},
                )
            result = client.request(
                "workspace/executeCommand",
                {
                    "command": "rootrank.diagnose",
                    "arguments": [{"text": log.text, "name": log.name}],
                },
            )
            assert result["root_cause"]["failure_class"] == log.failure_class
        client.request("shutdown", None)
        client.send({"method": "exit"})
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    sent = json.dumps(client.messages, ensure_ascii=False)
    planted = [p for log in logs for p in log.planted]
    assert _leaks(sent, planted) == []
    hovers = [
        m
        for m in client.messages
        if isinstance(m.get("result"), dict) and "contents" in m["result"]
    ]
    assert hovers, "hover answered on the evidence lines"


def test_a_user_name_learned_from_a_home_path_is_masked_after_words_that_name_a_user() -> None:
    masker = Masker()
    assert (
        masker.text('File "/home/alice/llm/train.py", line 3')
        == 'File "/home/<user>/llm/train.py", line 3'
    )
    assert (
        masker.text("+ srun --user alice -u alice python")
        == "+ srun --user <user> -u <user> python"
    )
    assert masker.text("launching as user alice; owner: alice; USER=alice") == (
        "launching as user <user>; owner: <user>; USER=<user>"
    )
    # only where a word names a user: the same letters elsewhere are not a user name
    assert masker.text("alice-in-wonderland dataset") == "alice-in-wonderland dataset"
    # and a name never learned stays after "user" (it may be a word: "user code")
    assert Masker().text("the user code raised") == "the user code raised"


def test_a_secret_inside_another_key_value_is_masked():
    from rootrank.mask import Masker

    masker = Masker()
    out = masker.text("mylib.Weird: token=abc123secretvalue")
    assert "abc123secretvalue" not in out
    assert out == "mylib.Weird: token=***"
    assert masker.text(out) == out


def test_a_host_named_in_passing_reads_the_same_as_where_the_launcher_names_it() -> None:
    text = (
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on gpunode17\n"
        "MASTER_ADDR=gpunode17\n"
        "[rank0]:[E1129 10:12:01.554000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    d = diagnose_text(text, "run.log").to_dict()
    shown = json.dumps(d)
    assert "gpunode17" not in shown
    assert d["root_cause"]["evidence"][0]["text"].endswith("on host-1")
    assert d["findings"][0]["evidence"][0]["text"] == d["root_cause"]["evidence"][0]["text"]


def test_hosts_named_by_failed_name_lookups_are_masked_everywhere() -> None:
    """nslookup's "can't resolve 'X'", bind's "server can't find X:", Python's gaierror with
    the name quoted: the host is masked in the line and in the verify command built from it."""
    from rootrank.engine import diagnose_text
    from rootrank.report import to_text

    text = (
        "nslookup: can't resolve 'trainjob-acme-master-0': Name does not resolve\n"
        "** server can't find gpu-box-17: NXDOMAIN\n"
        "socket.gaierror: [Errno -2] Name or service not known while resolving 'worker-7f9c-acme'\n"
    )
    diag = diagnose_text(text, "dns.log")
    out = json.dumps(diag.to_dict()) + to_text(diag)
    for host in ("trainjob-acme-master-0", "gpu-box-17", "worker-7f9c-acme"):
        assert host not in out
    assert "getent hosts host-1" in to_text(diag)
    assert "host-1: masked names; use the real ones" in to_text(diag)


def test_a_node_key_with_a_machine_name_is_a_host() -> None:
    """Megatron's NaN check prints "... Device: 5, node: <hostname>": that name is masked
    (it leaked from a fleet archive); an index ("node: 0") or a graph node ("node: linear")
    after the same key is not a machine."""
    m = Masker()
    line = "AssertionError: Rank 5: found NaN in local grad norm. Device: 5, node: gpu-node-017"
    out = m.text(line)
    assert "gpu-node-017" not in out and out.endswith("node: " + m.host("gpu-node-017"))
    for kept in ("node: 0", "node: linear", "node=3"):
        assert m.text(kept) == kept
