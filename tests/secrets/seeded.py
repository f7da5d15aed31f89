"""A seeded corpus of real-looking failed-training logs carrying planted secrets.

Nothing secret-looking is stored in the repository: every token is assembled at test time from
a prefix split into fragments and a random body drawn from ``random.Random(seed)``, so secret
scanners (GitHub push protection, gitleaks, detect-secrets) see no literal to flag.

The secrets sit where they really appear in training logs:

- an environment dump at job start (``printenv`` in a SLURM batch script, a launcher's env print);
- the launch command line (``torchrun ... --hub_token X``, DeepSpeed's ``cmd = ...``);
- configuration prints (a Python ``dict`` repr, ``TrainingArguments(...)``, a ``.netrc`` cat,
  a service-account JSON with a PEM private key);
- URLs (git remotes with credentials, presigned S3 URLs, database URLs, a 401 error's URL);
- the failure itself: traceback frames under a home folder, NCCL lines with host prefixes and
  IPs, the torchelastic ``ChildFailedError`` table with the host name, an exception message
  that carries a URL with a token.

Each :class:`SeededLog` lists what it planted (:class:`Planted`) and what the engine must still
diagnose (``failure_class``, ``initiating_rank``), so a test can check both "zero leaks" and
"the diagnosis is unchanged by masking".
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass, field

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"
URLSAFE = string.ascii_letters + string.digits + "-_"


def _j(*parts: str) -> str:
    """Join prefix fragments (kept apart in the source so no token literal exists)."""
    return "".join(parts)


@dataclass(frozen=True)
class Planted:
    """One secret or personal detail put into a log.

    Attributes:
        kind: what it is (``hf-token``, ``aws-secret-key``, ``email``, ``hostname``...).
        value: the exact text planted; it must never appear in masked output.
        where: the kind of place it sits in (``env``, ``cmdline``, ``config``, ``url``...).
        shown: ``True`` when the engine is expected to show the line (evidence, host, path),
            so an unmasked run must reveal it: proof the leak test looks at the right text.
    """

    kind: str
    value: str
    where: str
    shown: bool = False


@dataclass
class SeededLog:
    """A log with planted secrets and the diagnosis it must still produce."""

    name: str
    text: str
    planted: list[Planted] = field(default_factory=list)
    failure_class: str = ""
    initiating_rank: int | None = None


class _Secrets:
    """Random secrets of every kind, reproducible from the seed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def s(self, alphabet: str, n: int) -> str:
        # At least one digit, one upper and one lower where the alphabet has them, like real keys.
        classes = [k for k in (str.isdigit, str.isupper, str.islower) if any(map(k, alphabet))]
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if n < 12 or all(any(map(k, out)) for k in classes):
                return out

    def all(self) -> dict[str, str]:
        s = self.s
        jwt_header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        jwt_claims = (
            base64.urlsafe_b64encode(json.dumps({"sub": s(ALNUM, 12), "exp": 1900000000}).encode())
            .decode()
            .rstrip("=")
        )
        pem_body = "\n".join(s(B64, 64) for _ in range(6))
        return {
            "hf-token": _j("h", "f_") + s(ALNUM, 34),
            "hf-token-cli": _j("h", "f_") + s(ALNUM, 34),
            "hf-org-token": _j("api", "_org_") + s(ALNUM, 34),
            "openai-project-key": _j("s", "k-", "pro", "j-") + s(URLSAFE, 48),
            "openai-legacy-key": _j("s", "k-") + s(ALNUM, 48),
            "anthropic-key": _j("s", "k-", "ant-", "api03-") + s(URLSAFE, 60),
            "github-pat-classic": _j("gh", "p_") + s(ALNUM, 36),
            "github-oauth-in-url": _j("gh", "o_") + s(ALNUM, 36),
            "github-pat-fine-grained": _j("github", "_pat_") + s(ALNUM, 22) + "_" + s(ALNUM, 59),
            "gitlab-pat": _j("gl", "pat-") + s(URLSAFE, 20),
            "aws-access-key-id": _j("AK", "IA") + s(string.ascii_uppercase + string.digits, 16),
            "aws-secret-key": s(B64, 40),
            "aws-session-token": _j("FwoG", "ZXIvYXdzE") + s(B64, 180),
            "aws-key-id-in-url": _j("AS", "IA") + s(string.ascii_uppercase + string.digits, 16),
            "s3-presign-signature": s(HEX, 64),
            "wandb-key-env": s(HEX, 40),
            "wandb-key-cli": s(HEX, 40),
            "wandb-key-netrc": s(HEX, 40),
            "slack-bot-token": _j("xo", "xb-")
            + s(string.digits, 12)
            + "-"
            + s(string.digits, 13)
            + "-"
            + s(ALNUM, 24),
            "slack-webhook": _j(
                "T",
                s(string.ascii_uppercase + string.digits, 8),
                "/B",
                s(string.ascii_uppercase + string.digits, 10),
                "/",
                s(ALNUM, 24),
            ),
            "google-api-key": _j("AI", "za") + s(URLSAFE, 35),
            "google-oauth-token": _j("ya", "29.") + s(URLSAFE, 120),
            "jwt": f"{jwt_header}.{jwt_claims}.{s(URLSAFE, 43)}",
            "private-key-body": pem_body,
            "password-cmdline": s(ALNUM + "!#%^", 16),
            "db-url-password": s(ALNUM, 18),
            "url-query-token": s(ALNUM, 32),
            "config-secret": s(ALNUM, 32),
            "comet-api-key": s(ALNUM, 25),
            "kaggle-key": s(HEX, 32),
            "mlflow-password": s(ALNUM, 14),
            "neptune-token": base64.b64encode(
                json.dumps(
                    {"api_address": "https://app.neptune.ai", "api_key": s(HEX, 36)}
                ).encode()
            ).decode(),
            "replicate-token": _j("r", "8_") + s(ALNUM, 37),
            "databricks-token": _j("da", "pi") + s(HEX, 32),
            "stripe-key": _j("sk", "_live_") + s(ALNUM, 24),
            "sendgrid-key": _j("S", "G.") + s(URLSAFE, 22) + "." + s(URLSAFE, 43),
            "npm-token": _j("np", "m_") + s(ALNUM, 36),
            "pypi-token": _j("py", "pi-", "AgEIcHlwaS5vcmc") + s(URLSAFE, 60),
            "telegram-bot-token": s(string.digits, 10) + _j(":A", "A") + s(URLSAFE, 33),
            "azure-account-key": s(B64, 86) + "==",
            "bearer-token": s(URLSAFE, 40),
            "groq-key": _j("gs", "k_") + s(ALNUM, 52),
            "xai-key": _j("xa", "i-") + s(ALNUM, 80),
            "nvidia-api-key": _j("nva", "pi-") + s(URLSAFE, 64),
            "docker-auth": base64.b64encode(("$oauthtoken:" + s(ALNUM, 40)).encode()).decode(),
            "kaggle-json-key": s(HEX, 32),
            "redis-url-password": s(ALNUM, 20),
            "wandb-key-spaced": s(HEX, 40),
        }


USERS = ("alice", "bkowalski", "chenwei", "dpatel", "emartin")
HOST_STEMS = ("gpu-node", "dgx", "a100-", "trn", "compute-h100-")
DOMAINS = ("cluster.local", "hpc.internal", "ec2.internal", "corp.lan")


def build(seed: int = 0) -> list[SeededLog]:
    """The seeded corpus for ``seed``: four logs (a torchrun OOM with NCCL collateral, an
    NCCL network failure across two hosts, a 401 from the Hub in a single process, a job that
    prints its YAML/INI/TOML configuration and dies of OOM with NCCL collateral naming a
    short host), together carrying every kind in :func:`kinds`."""
    rng = random.Random(seed)
    sec = _Secrets(rng).all()
    user = rng.choice(USERS)
    email = f"{user}.{rng.choice(('smith', 'ng', 'ruiz'))}@{rng.choice(('example.com', 'uni-example.edu'))}"
    stem = rng.choice(HOST_STEMS)
    n1, n2 = rng.randrange(1, 40), rng.randrange(41, 90)
    host1, host2 = f"{stem}{n1:02d}", f"{stem}{n2:02d}"
    domain = rng.choice(DOMAINS)
    fqdn1 = f"{host1}.{domain}"
    ip1 = f"10.{rng.randrange(1, 250)}.{rng.randrange(0, 250)}.{rng.randrange(2, 250)}"
    ip2 = f"10.{rng.randrange(1, 250)}.{rng.randrange(0, 250)}.{rng.randrange(2, 250)}"
    home = f"/home/{user}"
    short1, short2 = (
        f"gpu-node-{rng.randrange(100, 500):03d}",
        f"{stem.rstrip('-')}-{rng.randrange(500, 999)}",
    )
    return [
        _oom_log(sec, user, email, host1, host2, fqdn1, ip1, home),
        _network_log(sec, host1, host2, ip1, ip2, home, user),
        _hub_log(sec, home, user, email),
        _config_dump_log(rng, home, user, short1, short2),
    ]


def kinds(corpus: list[SeededLog]) -> set[str]:
    """Every kind planted across ``corpus``."""
    return {p.kind for log in corpus for p in log.planted}


def _oom_log(
    sec: dict[str, str],
    user: str,
    email: str,
    host1: str,
    host2: str,
    fqdn1: str,
    ip1: str,
    home: str,
) -> SeededLog:
    planted: list[Planted] = []

    def put(kind: str, where: str, value: str | None = None, shown: bool = False) -> str:
        v = sec[kind] if value is None else value
        planted.append(Planted(kind, v, where, shown))
        return v

    pem = sec["private-key-body"]
    env = [
        "SLURM_JOB_ID=4412873",
        f"SLURM_JOB_NODELIST={host1[:-2]}[{host1[-2:]},{host2[-2:]}]",
        f"SLURMD_NODENAME={put('hostname', 'env', host1)}",
        f"USER={put('username', 'env', user)}",
        f"HOME={home}",
        f"MASTER_ADDR={put('fqdn', 'env', fqdn1)}",
        "MASTER_PORT=29500",
        f"HF_TOKEN={put('hf-token', 'env')}",
        f"HUGGING_FACE_HUB_TOKEN={put('hf-org-token', 'env')}",
        f"OPENAI_API_KEY={put('openai-project-key', 'env')}",
        f"ANTHROPIC_API_KEY={put('anthropic-key', 'env')}",
        f"GITHUB_TOKEN={put('github-pat-classic', 'env')}",
        f"GH_FINE_GRAINED={put('github-pat-fine-grained', 'env')}",
        f"AWS_ACCESS_KEY_ID={put('aws-access-key-id', 'env')}",
        f"AWS_SECRET_ACCESS_KEY={put('aws-secret-key', 'env')}",
        f"AWS_SESSION_TOKEN={put('aws-session-token', 'env')}",
        f"WANDB_API_KEY={put('wandb-key-env', 'env')}",
        f"SLACK_BOT_TOKEN={put('slack-bot-token', 'env')}",
        f"GOOGLE_API_KEY={put('google-api-key', 'env')}",
        f"COMET_API_KEY={put('comet-api-key', 'env')}",
        f"KAGGLE_KEY={put('kaggle-key', 'env')}",
        f"MLFLOW_TRACKING_PASSWORD={put('mlflow-password', 'env')}",
        f"NEPTUNE_API_TOKEN={put('neptune-token', 'env')}",
        f"REPLICATE_API_TOKEN={put('replicate-token', 'env')}",
        f"DATABRICKS_TOKEN={put('databricks-token', 'env')}",
        f"STRIPE_SECRET_KEY={put('stripe-key', 'env')}",
        f"SENDGRID_API_KEY={put('sendgrid-key', 'env')}",
        f"NPM_TOKEN={put('npm-token', 'env')}",
        f"TWINE_PASSWORD={put('pypi-token', 'env')}",
        f"TELEGRAM_BOT_TOKEN={put('telegram-bot-token', 'env')}",
        (
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=ckpts;"
            f"AccountKey={put('azure-account-key', 'env')};EndpointSuffix=core.windows.net"
        ),
        f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{put('slack-webhook', 'env')}",
        f"GIT_AUTHOR_EMAIL={put('email', 'env', email)}",
    ]
    cmd = (
        f"+ torchrun --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint {fqdn1}:29500 "
        f"{home}/llm/train.py --hub_token {put('hf-token-cli', 'cmdline')} "
        f"--wandb_key {put('wandb-key-cli', 'cmdline')} --db-password {put('password-cmdline', 'cmdline')} "
        "--per_device_train_batch_size 16"
    )
    config = (
        "{'model_name': 'meta-llama/Llama-2-7b-hf', 'lr': 0.0002, "
        f"'api_key': '{put('openai-legacy-key', 'config')}', 'secret': '{put('config-secret', 'config')}', "
        "'seq_len': 4096}"
    )
    sa_json = json.dumps(
        {
            "type": "service_account",
            "private_key_id": "0" * 8,
            "private_key": "-----BEGIN PRIVATE KEY-----\n" + pem + "\n-----END PRIVATE KEY-----\n",
            "client_email": f"trainer@proj-{user}.iam.gserviceaccount.com",
        }
    )
    for line in pem.split("\n"):
        planted.append(Planted("private-key", line, "config"))
    netrc = f"machine api.wandb.ai login user password {put('wandb-key-netrc', 'config')}"
    # Files and commands users print before a run, where secrets sit with no "KEY=" before them.
    dotfiles = [
        f"+ docker login nvcr.io -u '$oauthtoken' -p {put('nvidia-api-key', 'cmdline')}",
        f"+ cat {home}/.docker/config.json",
        '{"auths": {"nvcr.io": {"auth": "' + put("docker-auth", "config") + '"}}}',
        f"+ cat {home}/.kaggle/kaggle.json",
        '{"username":"' + user + '","key":"' + put("kaggle-json-key", "config") + '"}',
        "+ env | sort | column -t -s=",
        f"WANDB_API_KEY              {put('wandb-key-spaced', 'env')}",
        f"RAY_REDIS_ADDRESS=redis://:{put('redis-url-password', 'url')}@{ip1}:6379",
        f'    client = Groq("{put("groq-key", "traceback")}")',
        f'    grok = XAI("{put("xai-key", "traceback")}", timeout=30)',
    ]
    urls = [
        f"Cloning into 'llm'... https://x-access-token:{put('github-oauth-in-url', 'url')}@github.com/org/llm.git",
        f"remote: https://oauth2:{put('gitlab-pat', 'url')}@gitlab.corp.example.com/ml/llm.git",
        (
            f"Downloading https://ckpts.s3.amazonaws.com/llama/step1000.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Credential={put('aws-key-id-in-url', 'url')}%2F20240101%2Fus-east-1%2Fs3%2Faws4_request"
            f"&X-Amz-Date=20240101T000000Z&X-Amz-Expires=3600&X-Amz-Signature={put('s3-presign-signature', 'url')}"
        ),
        f"mlflow: tracking URI postgresql://mlflow:{put('db-url-password', 'url')}@db01.{fqdn1.split('.', 1)[1]}:5432/mlflow",
        f'DEBUG:urllib3.connectionpool:https://api.example-registry.io:443 "GET /v1/models?token={put("url-query-token", "url")} HTTP/1.1" 200 512',
        f"DEBUG:http.client: header: Authorization: Bearer {put('jwt', 'header')}",
        f"DEBUG:google.auth: Authorization: Bearer {put('google-oauth-token', 'header')}",
        f"DEBUG:client: sending Authorization: Bearer {put('bearer-token', 'header')}",
    ]
    r = 2  # the initiating rank: CUDA OOM on rank 2, the others time out in the watchdog
    nccl = [
        f"{put('hostname', 'nccl-prefix', host1, shown=True)}:41873:41873 [0] NCCL INFO Bootstrap : Using ib0:{put('ip', 'nccl', ip1)}<0>",
        f"{host1}:41873:41873 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:{ip1}<0>",
        f"{host1}:41873:41873 [0] NCCL INFO cudaDriverVersion 12020",
        "NCCL version 2.18.5+cuda12.1",
    ]
    trace = [
        f"[rank{r}]: Traceback (most recent call last):",
        f'[rank{r}]:   File "{put("home-path-user", "traceback", home, shown=True)}/llm/train.py", line 212, in <module>',
        f"[rank{r}]:     main()",
        f'[rank{r}]:   File "{home}/llm/train.py", line 188, in main',
        f"[rank{r}]:     loss = model(**batch).loss",
        f'[rank{r}]:   File "{home}/.conda/envs/llm/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1518, in _wrapped_call_impl',
        f"[rank{r}]:     return self._call_impl(*args, **kwargs)",
        (
            f"[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {r} has a total "
            "capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has "
            "77.93 GiB memory in use. Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.10 GiB is "
            "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
            "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        ),
    ]
    watchdog = [
        f"[rank{k}]:[E1129 10:{k + 10}:01.123456 41873 ProcessGroupNCCL.cpp:616] [Rank {k}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum=5121, OpType=ALLREDUCE, NumelIn=131076096, "
        f"NumelOut=131076096, Timeout(ms)=600000) ran for 600034 milliseconds before timing out."
        for k in (0, 1, 3)
    ]
    elastic = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        f"{home}/llm/train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-11-29_10:12:01",
        f"  host      : {put('fqdn', 'elastic', fqdn1, shown=True)}",
        f"  rank      : {r} (local_rank: {r})",
        "  exitcode  : 1 (pid: 41875)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    lines = [
        "+ printenv",
        *env,
        cmd,
        config,
        f"+ cat {home}/.netrc",
        netrc,
        *dotfiles,
        f"+ cat {home}/sa.json",
        sa_json,
        *urls,
        *nccl,
        "{'loss': 1.9821, 'learning_rate': 0.0002, 'epoch': 0.12}",
        *trace,
        *watchdog,
        *elastic,
    ]
    return SeededLog("oom-with-secrets.log", "\n".join(lines) + "\n", planted, "cuda-oom", r)


def _network_log(
    sec: dict[str, str], host1: str, host2: str, ip1: str, ip2: str, home: str, user: str
) -> SeededLog:
    planted = [
        Planted("hostname", host2, "nccl-prefix", shown=True),
        Planted("ip", ip2, "nccl"),
        Planted("hostname", host1, "nccl-prefix"),
        Planted("ip", ip1, "nccl", shown=True),
    ]
    lines = [
        f"{host1}: [2024-11-29 10:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {{'{host1}': [0, 1], '{host2}': [0, 1]}}",
        f"{host2}:2201:2201 [1] NCCL INFO Bootstrap : Using eth0:{ip2}<0>",
        f"{host2}:2201:2260 [1] NCCL INFO NET/Socket : Using [0]eth0:{ip2}<0>",
        f"{host2}:2201:2260 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {ip1}<45421> failed : Connection refused",
        f"{host2}:2201:2260 [1] NCCL INFO misc/socket.cc:565 -> 2",
        f"{host2}:2201:2260 [1] NCCL INFO transport/net_socket.cc:339 -> 2",
        "[rank3]: Traceback (most recent call last):",
        f'[rank3]:   File "{home}/proj/train.py", line 40, in <module>',
        "[rank3]:     dist.all_reduce(t)",
        (
            "[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3"
        ),
        (
            "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely."
        ),
        "[rank3]: Last error:",
        f"[rank3]: socketStartConnect: Connect to {ip1}<45421> failed : Connection refused",
    ]
    # rank 3's connection to a peer that refused it: one end of a broken link, and the peer
    # is named by address only, so no rank (rootrank.analysis.initiator.socket_connect_failure)
    return SeededLog(
        "nccl-network-with-hosts.log",
        "\n".join(lines) + "\n",
        planted,
        "network-fabric-error",
        None,
    )


def _hub_log(sec: dict[str, str], home: str, user: str, email: str) -> SeededLog:
    token = _j("h", "f_") + "".join(random.Random(user).choice(ALNUM) for _ in range(34))
    planted = [
        Planted("hf-token-in-error-url", token, "exception", shown=True),
        Planted("home-path-user", home, "traceback"),
        Planted("email", email, "exception"),
    ]
    lines = [
        "Traceback (most recent call last):",
        f'  File "{home}/proj/finetune.py", line 12, in <module>',
        "    model = AutoModel.from_pretrained(name, token=args.token)",
        f'  File "{home}/.local/lib/python3.11/site-packages/huggingface_hub/utils/_http.py", line 406, in hf_raise_for_status',
        "    raise _format(RepositoryNotFoundError, message, response) from e",
        "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-abc)",
        f"Repository Not Found for url: https://huggingface.co/api/models/org/private?token={token}.",
        f"Please make sure you specified the correct `repo_id` and that {email} has access.",
        "Invalid username or password.",
    ]
    return SeededLog(
        "hub-401-with-token.log", "\n".join(lines) + "\n", planted, "config-error", None
    )


def _config_dump_log(
    rng: random.Random, home: str, user: str, short1: str, short2: str
) -> SeededLog:
    """A job that cats its configuration files (YAML, INI, TOML: secrets with no ``KEY=`` and
    values that are plain words or hold spaces and punctuation), is launched with the user's
    name as a bare word (``--user alice``, ``user alice``), and fails: CUDA OOM on rank 1
    while rank 0's NCCL reports the peer by its short, dotless host name."""
    sec = _Secrets(rng)
    words = ("orchid", "lantern", "quartz", "meadow", "falcon", "harbor", "cobalt")
    planted = [
        Planted("yaml-api-key", sec.s(ALNUM, 28), "config"),
        Planted(
            "yaml-password-words",
            f"{rng.choice(words)} {rng.choice(words)} {rng.randrange(10, 99)}&x",
            "config",
        ),
        Planted("yaml-token-word", rng.choice(words) + rng.choice(words), "config"),
        Planted("ini-password", sec.s(ALNUM + "!%^&;,", 14), "config"),
        Planted("toml-secret", sec.s(ALNUM, 30), "config"),
        Planted("toml-client-secret", rng.choice(words) + "-" + rng.choice(words), "config"),
        Planted("username", user, "cmdline"),
        Planted("home-path-user", home, "traceback", shown=True),
        Planted("short-hostname", short1, "launcher"),
        Planted("short-hostname-peer", short2, "nccl", shown=True),
    ]
    v = {p.kind: p.value for p in planted}
    lines = [
        f"+ cat {home}/configs/train.yaml",
        "model:",
        "  name: meta-llama/Llama-2-7b-hf",
        "  max_tokens: 4096",
        "wandb:",
        "  project: llm-sft",
        f"  api_key: {v['yaml-api-key']}",
        "storage:",
        f"  password: {v['yaml-password-words']}",
        f'  - token: "{v["yaml-token-word"]}"',
        f"+ cat {home}/.config/mlflow.ini",
        "[mlflow]",
        f"username = {user}",
        f"password = {v['ini-password']}",
        "+ cat secrets.toml",
        "[hub]",
        f'secret_key = "{v["toml-secret"]}"',
        f"client_secret = '{v['toml-client-secret']}'  # rotated monthly",
        f"+ srun --user {user} --nodes 2 torchrun --nproc_per_node 2 {home}/llm/train.py",
        f"launching as user {user} on {short1}",
        "[rank1]: Traceback (most recent call last):",
        f'[rank1]:   File "{home}/llm/train.py", line 88, in <module>',
        "[rank1]:     loss = model(**batch).loss",
        (
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total "
            "capacity of 39.39 GiB of which 512.00 MiB is free. Of the allocated memory 36.10 GiB is allocated by "
            "PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated."
        ),
        (
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3"
        ),
        "[rank0]: Last error:",
        f"[rank0]: socketProgress: Connection closed by remote peer {short2}<41764>",
    ]
    return SeededLog(
        "config-dump-with-secrets.log", "\n".join(lines) + "\n", planted, "cuda-oom", 1
    )
