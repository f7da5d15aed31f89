"""Masking: secrets and personal details are replaced before any text leaves the engine.

Every string the engine shows, returns or writes (evidence lines, messages, paths, hosts) goes
through one :class:`Masker` per diagnosis. It runs on the bounded set of lines that are shown
(evidence, reasoning, report fields), never on every log line, so the cost is a few regex passes
per shown line (see ``tests/test_mask.py`` for the measured rate).

Placeholders (chosen so a reader still sees *what* was there, and so that masking masked text
changes nothing):

=================================  ============================================================
what                               becomes
=================================  ============================================================
token with a known prefix          the prefix and ``***``: ``hf_***``, ``sk-***``, ``ghp_***``,
                                   ``github_pat_***``, ``AKIA***``, ``xoxb-***``, ``AIza***``,
                                   ``glpat-***``, ``pypi-***``, ``npm_***``, ``eyJ***`` (JWT)...
``key=value`` for a secret key     ``HF_TOKEN=***``, ``"password": "***"``, ``--api-key ***``
private key block                  ``-----BEGIN RSA PRIVATE KEY-----***``
``Authorization: Bearer x``        ``Authorization: Bearer ***``
credentials in a URL               ``https://***:***@host-1/...`` (user and password both go)
e-mail address                     ``<email>``
user name in a home path           ``/home/<user>/...``, ``/home2/<user>/``, ``/Users/<user>/``,
                                   ``/users/<user>/`` (also under ``/mnt/nfs/``), ``C:\\Users\\<user>\\``
user name under an HPC root        ``/scratch/<user>/``, ``/lustre/orion/p1/scratch/<user>/``,
                                   ``/work/<user>``, ``/data/<user>``, ``/fsx/<user>``,
                                   ``/checkpoint/<user>``, ``/project/<group>/<user>``
                                   (see below)
``USER=alice`` and the like        ``USER=<user>``
host name                          ``host-1``, ``host-2``... stable within one Masker
IPv4 / IPv6 address                ``ip-1``, ``ip-2``... stable within one Masker
MAC (hardware) address             ``mac-1``, ``mac-2``... stable within one Masker
SLURM node list ``node[01-04]``    the expanded hosts' pseudonyms: ``host-1,host-2,...``
a line whose masking timed out     ``<line withheld: masking timed out>`` (fails closed)
text past 16 KiB in one string     cut, ending ``…[N characters not shown]``
=================================  ============================================================

HPC storage roots (``/scratch``, ``/pscratch``, ``/lustre``, ``/gpfs``, ``/work``,
``/data``, AWS FSx's ``/fsx``, the ``/checkpoint`` of FAIR-style clusters, CSCS's ``/capstor`` and
``/iopsstor``, ``/nfs``, with a number as in ``/scratch1``, or under ``/mnt``; and ``/media``, where
udisks mounts ``/media/<user>/<disk>`` and a disk mounted by hand holds users' folders,
``/media/SSD/<user>``) hold one folder per user as
``/home`` does; the user's folder is the first one under the root (under ``/lustre/<fs>``
and ``/gpfs/<fs>``: under the file system's name), or the one after ``scratch``,
``users``... (``/lustre/orion/csc123/scratch/<user>``), stepping over group numbers and
NERSC's ``sd/d``. A folder with a common name stays (``/data/imagenet/``,
``/work/projects/``, ``/scratch/shared/``: :data:`NOT_USER_DIRS`), and so does upper case
(``/data/ImageNet``), and so does a folder under ``/data`` that directly holds a data
record file (``/data/prefs/shard-02.jsonl``: a data set's folder, :func:`_dataset_folder`)
unless the log names it as a user's elsewhere. A project folder in the user's place (``/gpfs/alpine/csc123/x``) is
masked like a user's: it names an allocation; under ``projects/<project>/`` (also at the
root: ``/project/<group>/``, ``/proj/<group>/``) the next folder is a member's and is masked
too. A path after a Windows drive letter (``D:/proj/model_save``) is no HPC root. JSC's ``/p/home/jusers/<user>`` is a home path. ``/root/...`` is kept: ``root`` is the
superuser's account, no person's name, and the path says where the job ran.

Kept on purpose: ``localhost``, loopback and unspecified addresses (``127.0.0.1``,
``0.0.0.0``, ``::1``; a wrong ``MASTER_ADDR=localhost`` *is* a diagnosis), the broadcast and
zero MAC addresses (``ff:ff:ff:ff:ff:ff``, ``00:00:00:00:00:00``), public
documentation hosts (``pytorch.org``, ``github.com``...), hex hashes, commit ids, pointers,
tensor values and version numbers (they are not secrets, and error text needs them).

Why patterns of our own and not ``detect-secrets`` (Yelp, PyPI): its scanner reports secret
*values* per file line rather than spans to replace; its catch-all high-entropy plugins flag
every commit id, ``sha256:`` digest and pointer in a training log (measured: a NCCL line
with a commit id gave 6 "secrets"), while it has no detector for Hugging Face, Weights &
Biases or Google API keys; it also pulls in ``requests``. The token formats below are the ones
the issuers document (Hugging Face ``hf_``, OpenAI ``sk-``/``sk-proj-``, GitHub's 2021 token
formats ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and ``github_pat_``, AWS ``AKIA``/``ASIA``
key ids, Slack ``xox[abprs]-``, Google ``AIza`` + 35, RFC 7519 JWTs, RFC 7468 PEM blocks), with
the same rule set gitleaks and detect-secrets use for the keyword (``password=``) cases.

The host mapping lives only in the instance: it is never returned, serialised, logged or
written, and a Masker refuses to be pickled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import ahocorasick_rs

from rootrank import lazy_regex, re_code, regex_code
from rootrank.exc_name import exception_path

#: Seconds one masking pass over one string may take before the string is withheld.
TIMEOUT_S = 0.5

#: The most hosts a SLURM node list is expanded to (``node[1-100000]`` is not expanded).
MAX_NODELIST = 256

#: Longer strings are cut here before masking (the cut is marked); shown text is never this
#: long, and the cut bounds the masking time of a hostile 200 MB line.
MAX_TEXT = 16 * 1024

WITHHELD = "<line withheld: masking timed out>"
EMAIL = "<email>"
USER = "<user>"
STARS = "***"

#: Hosts that are not personal and are themselves a diagnosis (``MASTER_ADDR=localhost``).
KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "0.0.0.0", "::1", "::"})

#: Public hosts that error messages link to; never pseudonymised (subdomains included).
PUBLIC_DOMAINS = (
    "pytorch.org",
    "github.com",
    "githubusercontent.com",
    "huggingface.co",
    "hf.co",
    "nvidia.com",
    "python.org",
    "pypi.org",
    "wandb.ai",
    "readthedocs.io",
    "readthedocs.org",
    "deepspeed.ai",
    "microsoft.com",
    "google.com",
    "googleapis.com",
    "tensorflow.org",
    "anaconda.org",
    "conda.io",
    "kaggle.com",
    "openai.com",
    "stackoverflow.com",
    "slack.com",
    "amazon.com",
    "amazonaws.com",
    "docker.io",
    "docker.com",
    "ubuntu.com",
    "debian.org",
    # project documentation sites on GitHub Pages that errors link to (torch.compile's
    # graph-break site, NVIDIA's library docs); a user's own *.github.io stays a host
    "meta-pytorch.github.io",
    "pytorch.github.io",
    "nvidia.github.io",
)

#: Domain suffixes that only name machines inside a site; such a name is a host anywhere.
_INTERNAL_NAMES = (
    "local",
    "internal",
    "lan",
    "localdomain",
    "cluster",
    "corp",
    "intranet",
    "intra",
    "priv",
    "private",
    "svc",
)
_INTERNAL_SUFFIX = "(?:" + "|".join(_INTERNAL_NAMES) + ")"
_INTERNAL_DOTTED = tuple("." + name for name in _INTERNAL_NAMES)

_PSEUDONYM_BODY = r"(?:host|ip|mac)-\d+"
_PSEUDONYM = lazy_regex.compile(_PSEUDONYM_BODY)
_PSEUDONYM_WORD = lazy_regex.compile(r"\b" + _PSEUDONYM_BODY + r"\b")
_IPV4_FULL = lazy_regex.compile(
    r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
)

# --- secrets -------------------------------------------------------------------------------

# Known token formats: (regex, number of leading characters to keep as the visible prefix is
# given by the named group "p"). The bodies are bounded ({n,400}) so no pattern can run away.
_TOKEN = lazy_regex.compile(
    r"(?<![\w-])(?:"
    r"(?P<p>hf_)[A-Za-z0-9]{20,200}"  # Hugging Face user access token
    r"|(?P<p>api_org_)[A-Za-z0-9]{20,200}"  # Hugging Face org token (legacy)
    r"|(?P<p>sk-)(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{20,300}"  # OpenAI / Anthropic
    r"|(?P<p>(?:sk|rk|pk)_(?:live|test)_)[A-Za-z0-9]{16,200}"  # Stripe
    r"|(?P<p>gh[pousr]_)[A-Za-z0-9]{30,255}"  # GitHub tokens
    r"|(?P<p>github_pat_)[A-Za-z0-9_]{22,255}"  # GitHub fine-grained PAT
    r"|(?P<p>glpat-)[A-Za-z0-9_-]{20,100}"  # GitLab PAT
    r"|(?P<p>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA))[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS ids
    r"|(?P<p>xox[abposr]-)[A-Za-z0-9-]{10,250}"  # Slack tokens
    r"|(?P<p>xapp-)[A-Za-z0-9-]{10,250}"  # Slack app-level token
    r"|(?P<p>AIza)[A-Za-z0-9_-]{35}"  # Google API key
    r"|(?P<p>ya29\.)[A-Za-z0-9_-]{20,2000}"  # Google OAuth access token
    r"|(?P<p>eyJ)[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{0,2000}"  # JWT
    r"|(?P<p>pypi-)AgE[A-Za-z0-9_-]{40,400}"  # PyPI upload token
    r"|(?P<p>npm_)[A-Za-z0-9]{36}"  # npm token
    r"|(?P<p>r8_)[A-Za-z0-9]{30,60}"  # Replicate
    r"|(?P<p>gsk_)[A-Za-z0-9]{40,80}"  # Groq
    r"|(?P<p>xai-)[A-Za-z0-9]{40,120}"  # xAI
    r"|(?P<p>nvapi-)[A-Za-z0-9_-]{40,100}"  # NVIDIA NGC / build.nvidia.com
    r"|(?P<p>dapi)[a-f0-9]{32}(?:-\d)?"  # Databricks
    r"|(?P<p>SG\.)[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,60}"  # SendGrid
    r"|(?P<p>key-)[a-f0-9]{32}"  # Mailgun
    r"|(?P<p>SK)[0-9a-f]{32}(?![0-9a-f])"  # Twilio API key sid
    r"|(?P<p>\d{8,10}:AA)[A-Za-z0-9_-]{33}"  # Telegram bot
    r"|(?P<p>hooks\.slack\.com/services/)[A-Za-z0-9/]{20,120}"  # Slack webhook
    r"|(?P<p>discord(?:app)?\.com/api/webhooks/)[0-9]{10,20}/[A-Za-z0-9_-]{20,100}"
    r")"
)

# What every _TOKEN match contains, one per alternative, as written there (case-sensitive): a
# string holding none of them cannot match, so the pattern is neither compiled nor run for it.
_TOKEN_LITERALS = (
    "hf_",
    "api_org_",
    "sk-",
    "_live_",
    "_test_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "ANPA",
    "ANVA",
    "AIPA",
    "xox",
    "xapp-",
    "AIza",
    "ya29.",
    "eyJ",
    "pypi-",
    "npm_",
    "r8_",
    "gsk_",
    "xai-",
    "nvapi-",
    "dapi",
    "SG.",
    "key-",
    "SK",
    ":AA",
    "hooks.slack.com/services/",
    "discord",
)

_PEM_BEGIN = lazy_regex.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = lazy_regex.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")

# A line (or quoted value) that is only a long run of base64 with upper, lower and digits: a
# PEM body line, a kubeconfig certificate, a service-account key. Never diagnosis text.
_BASE64_LINE = lazy_regex.compile(
    r"^\s*(?=[A-Za-z0-9+/]{0,200}[A-Z])(?=[A-Za-z0-9+/]{0,200}[a-z])(?=[A-Za-z0-9+/]{0,200}\d)"
    r"[A-Za-z0-9+/]{40,200}={0,2}\s*$"
)

_AUTH_HEADER = lazy_regex.compile(
    r"(?i)(?P<p>\b(?:authorization|proxy-authorization)['\"]?[ \t]{0,8}[:=][ \t]{0,8}['\"]?"
    r"(?:(?:bearer|basic|token|digest)[ \t]{1,8})?"
    r"|\bbearer[ \t]{1,8}(?=[A-Za-z0-9._~+/=-]{0,4000}[\d._~+/=-]))"
    r"(?P<v>[A-Za-z0-9._~+/=-]{8,4000})"
)

# A secret-named key and its value: env dumps (HF_TOKEN=...), config prints ('api_key': '...',
# password: ...), INI (aws_secret_access_key = ...), JSON ("private_key": "...").
_SECRET_WORD = (
    r"(?:token|secret|passw(?:or)?d|pwd|passphrase|credentials?|private[_-]?key(?:[_-]?id)?"
    r"|[a-z0-9][_-]?key|(?<![a-z0-9])key|(?<![a-z0-9])auth|world_info|connection[_-]?string)"
)
_SECRET_HINTS = (
    "token",
    "secret",
    "pass",
    "pwd",
    "key",
    "credential",
    "world_info",
    "connection",
    "auth",
)
_SECRET_NAME = lazy_regex.compile(r"(?i)" + _SECRET_WORD + r"$")
# The key is any name (checked against _SECRET_NAME in the callback, which keeps the pattern
# linear: one greedy run per word, no lazy prefix tried against every secret word).
_KEYWORD = lazy_regex.compile(
    r"(?<![\w.-])(?P<k>[A-Za-z0-9_.-]{1,80}+)"
    r"(?P<sep>['\"]?\s{0,8}(?P<op>=|:)\s{0,8})"
    r"(?:(?P<q>['\"])(?P<qv>[^'\"\n]{1,4000})(?P=q)|(?P<v>[^\s'\",;&)}\]]{1,4000}))"
)
# Command-line flags: --token X, --hf_token=X, --wandb-key X, --password X.
_FLAG = lazy_regex.compile(
    r"(?P<k>(?<![\w-])--?[A-Za-z0-9_-]{1,60}+)(?P<sep>[ =])"
    r"(?P<v>[^\s'\"]{1,4000})"
)
# A key-value line of a configuration dump (YAML ``password: x``, INI ``password = x``, TOML
# ``secret_key = "x"``), possibly behind a launcher's prefix ("[rank0]: ", "3: ", "node01: ")
# and a YAML list dash: everything after the separator is the value, spaces and punctuation
# included ("password: Tr0ub4dor&3 x"), and a plain lower-case word counts (a dump holds no
# prose). The key is checked against _SECRET_NAME in the callback.
_CONFIG_LINE = lazy_regex.compile(
    r"^(?P<pre>(?:\[[^\]\n]{1,60}\](?:<\w{1,10}>)?:?[ \t]{0,4}|\d{1,6}:[ \t]{1,4}"
    r"|[A-Za-z][\w.-]{0,62}\d[\w.-]{0,20}:[ \t]{1,4}){0,3}[ \t]{0,40}(?:-[ \t]{1,8})?)"
    r"(?P<kq>['\"]?)(?P<k>[A-Za-z_][A-Za-z0-9_.-]{0,80}+)(?P=kq)"
    r"(?P<sep>[ \t]{0,8}(?::[ \t]{1,8}|:$|=[ \t]{0,8}))"
    r"(?P<v>[^\n]{1,4000}?)(?P<tail>[ \t]{1,8}#[^\n]{0,400})?[ \t]{0,40}$"
)
# Bare URL query parameters that carry signatures: ?sig=..., &X-Amz-Signature=..., &code=...
_QUERY = lazy_regex.compile(
    r"(?i)(?P<k>[?&](?:sig|signature|x-amz-signature|x-amz-credential|x-goog-signature"
    r"|x-goog-credential|code|key|access_token|refresh_token|client_secret))=(?P<v>[^&\s#'\"]{1,4000})"
)
# ~/.netrc as printed: "machine api.wandb.ai login user password KEY"; "wandb login KEY".
_NETRC = lazy_regex.compile(
    r"(?i)\b(?P<k>(?:password|passwd)\s{1,8})(?P<v>[^\s]{4,4000})|"
    r"\b(?P<k>wandb\s{1,4}login\s{1,4}(?:--relogin\s{1,4})?)(?P<v>[A-Za-z0-9_-]{20,200})"
)

_URL_CREDS = lazy_regex.compile(
    r"(?P<s>\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)"
    r"(?:(?P<u>[^\s/@:?#]{1,400})(?::(?P<pw>[^\s/@]{0,400}))?|(?P<u>):(?P<pw>[^\s/@]{1,400}))@"
)
# A secret-named environment variable printed with a space instead of "=" ("WANDB_API_KEY
# 0123..."), as `set`/`declare -x`-style dumps and some loggers print it: only an upper-case
# name and a value with a digit in it, so prose ("the API_KEY is missing") never matches.
_SPACED = lazy_regex.compile(
    r"\b(?P<k>[A-Z][A-Z0-9_]{0,60}(?:KEY|TOKEN|SECRET|PASSWORD))(?P<sep>[ \t]{1,40})"
    r"(?P<v>(?=[A-Za-z0-9_+/=.-]{0,4000}\d)(?=[A-Za-z0-9_+/=.-]{0,4000}[A-Za-z])"
    r"[A-Za-z0-9_+/=.-]{16,4000})(?![^\s])"
)

# What a bare "key"/"auth" must hold to be a secret (kaggle.json's "key", a Docker config's
# "auth"): one run of 16+ token characters with a letter and a digit, no dots or spaces.
_TOKEN_CHARS = lazy_regex.compile(r"[A-Za-z0-9_+/=-]{16,4000}")


def _token_like(value: str) -> bool:
    return (
        bool(_TOKEN_CHARS.fullmatch(value))
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


# Values that are never secrets: literals, numbers, placeholders, code (a call or an index).
_NOT_SECRET = lazy_regex.compile(
    r"(?i)(?:true|false|none|null|nil|undefined|yes|no|on|off|lambda|self|cls|required"
    r"|optional|\*+|<[^>]{0,80}>|\$\{?[A-Za-z_]\w{0,80}\}?|-?\d{1,40}(?:\.\d{1,40})?"
    r"|[A-Za-z_]{1,40}(?:\.[A-Za-z_]{1,40}){1,4})"  # code: args.token, self.api_key
)

# Key names that end like a secret's but hold none (sorting, caching, dict and tokenizer keys).
_NOT_SECRET_KEY = lazy_regex.compile(
    r"(?i)(?:^|[_.-])(?:sort|cache|primary|foreign|dict|hot|mon|lookup|group|partition|routing|shard|layer"
    r"|param|state|metric|input|output|label|hash|map|sub|pad|bos|eos|unk|sep|cls|mask"
    r"|special|start|end|max|min|num|n|next|prev|first|last)[_-]?(?:key|token)$"
)

# --- personal details ------------------------------------------------------------------------

# Names in any script: \p{L} (letters) and \p{N} (digits) of the regex module, so "jörg@müller.de",
# "/home/ユーザー/" and "gpu-ünï.example.com" are masked as their ASCII spellings are.
_EMAIL = lazy_regex.compile(
    r"(?<![\w.+-])[\p{L}\p{N}][\p{L}\p{N}._%+-]{0,63}@"
    r"(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.){1,8}\p{L}{2,24}(?![\w-])"
)
_HOME = lazy_regex.compile(
    r"(?P<p>(?<![\w.])(?:/(?:[\w.-]{1,40}/){0,3}?(?:home\d{0,2}/(?:jusers|users|userexternal)|home\d{0,2}|[Uu]sers|userexternal|homes|u)/"
    r"|[A-Za-z]:(?:\\\\|\\)(?:Users|Documents and Settings)(?:\\\\|\\)))"
    r"(?P<u>[\p{L}\p{N}\ufffd._-]{1,64})(?=[/\\:\s'\"),\]]|$)"
    r"|(?P<p>(?<![\w./])~)(?P<u>\p{L}[\p{L}\p{N}._-]{0,63})(?=/)"
)
# HPC storage roots where each user has a folder, as home folders are: /scratch/dave,
# /scratch1/01234/dave (TACC), /pscratch/sd/d/dave (NERSC), /scratch/users/dave (Stanford),
# /scratch/gpfs/dave (Princeton), /lustre/orion/csc123/scratch/dave (OLCF), /lustre/fs1/dave,
# /gpfs/alpine/proj/scratch/dave, /work/dave, /data/dave; optionally under /mnt. Only at the
# start of a path (not /home/<user>/data/x, a folder inside a user's own tree; not after a
# Windows drive letter, D:/proj/model_save). Which
# component is the user's is decided in Masker._hpc_path (see HPC_SKIP and NOT_USER_DIRS).
_HPC_PATH = lazy_regex.compile(
    r"(?<![\w.~/<>-])(?<!(?:^|[\s'\"=(])[A-Za-z]:)(?P<root>/(?:mnt/)?(?P<kind>scratch|pscratch|lustre|gpfs|work|data|fsx|checkpoint|capstor|iopsstor|nfs|afs|disks|media|projects?|proj)\d{0,2}/)"
    r"(?P<rest>(?:[\p{L}\p{N}._-]{1,64}/){0,4}[\p{L}\p{N}._-]{1,64})"
    r"(?=[/\\:\s'\"),\]]|$)"
)
_HPC_ROOTS = (
    "/scratch",
    "/pscratch",
    "/lustre",
    "/gpfs",
    "/work",
    "/data",
    "/fsx",
    "/checkpoint",
    "/capstor",
    "/iopsstor",
    "/nfs",
    "/afs",
    "/disks",
    "/media",
    "/project",
    "/proj",
)
#: Components under an HPC root that lead to the users' folders rather than name one: the
#: user is the next component ("scratch/dave", "users/dave", "sd/d/dave").
HPC_SKIP = frozenset(
    {
        "scratch",
        "pscratch",
        "users",
        "user",
        "people",
        "members",
        "home",
        "homes",
        "u",
        "gpfs",
        "lustre",
        "sd",
        "fs",
        "nobackup",
        "persistent",
        "personal",
        "individual",
        "cscs",
    }
)
#: Folder names that are no user's, though they stand where a user's folder would: common
#: words, shared areas, data sets and models. Never masked (nor learned as a user name).
NOT_USER_DIRS = frozenset(
    """
    root nobody admin admins system sys shared share public common global local group groups
    project projects proj prj team teams lab labs org research department dept tmp temp
    scratch work data datasets dataset db corpora corpus raw processed cache caches hub hf
    huggingface transformers torch pytorch models model weights checkpoints checkpoint ckpt
    ckpts pretrained outputs output out results runs run logs log experiments experiment exp
    exps jobs job src code repo repos git software sw apps app opt bin lib env envs venv
    venvs conda miniconda miniconda3 anaconda anaconda3 containers container images image
    singularity apptainer docker backup backups archive archives train training val valid
    validation test tests eval evaluation inference benchmark benchmarks bench ml ai nlp
    vision llm llms imagenet coco cifar mnist wikitext pile openwebtext laion tokenizers
    tokenizer wandb mlflow tensorboard slurm nvme ssd fast slow dev prod staging main
    default all misc other others tools utils shm mnt fs1 fs2 ceph nfs
    pretrain pretraining finetune finetuning sft rlhf dpo ppo grpo cls seg det lm mlm clm
    audio speech video videos text texts tab tabular img imgs labels annotations shards
    tfrecords webdataset parquet jsonl csv tokens tokenized vocab embeddings features samples
    examples demo demos notebooks scripts configs config third_party aten megatron deepspeed
    accelerate fsdp ddp nccl cuda triton vllm llama gpt bert vit resnet mistral qwen gemma
    clips frames audioset librispeech commonvoice laion400m c4 redpajama fineweb dolma
    """.split()
)
#: Folders that hold one folder per project (an allocation), in which each member has a folder:
#: ``/gpfs/projects/<project>/<user>/`` (BSC, CINECA, Jülich-style layouts).
_PROJECT_AREAS = frozenset({"projects", "project", "proj", "prj", "projappl"})
_LOGIN = lazy_regex.compile(r"[\p{Ll}\p{Lo}_][\p{Ll}\p{Lo}\p{N}._-]{2,31}")


#: File types of data records (a data set's shards, samples, indexes), compressed or not.
DATA_RECORD_SUFFIXES = frozenset(
    """
    jsonl json parquet arrow feather csv tsv npz npy tfrecord tfrecords tar h5 hdf5 idx bin
    mds lance zarr msgpack pkl flac wav mp3 ogg mp4 jpg jpeg png webp tif tiff txt
    """.split()
)
_COMPRESSION_SUFFIXES = ("gz", "zst", "bz2", "xz", "lz4")


def _dataset_folder(parts: list[str], k: int) -> bool:
    """Whether ``parts[k]``, a folder under ``/data`` that looks like a login name, is
    rather a data set's folder: the path's file is a data record directly inside it
    (``/data/prefs/shard-02.jsonl``, ``/data/coco17/val/000139.jpg`` is not: one more
    folder). ``/data`` is the shared root of data sets on most machines as much as a users'
    root on some, and a data set named by a word (``prefs``, ``tulu``) has a login's shape; a
    user's own tree holds code, checkpoints and folders (``/data/dave/ckpt/last.pt``), which
    stay masked. A name the log shows as a user's elsewhere (a home path, ``USER=``) is
    masked whatever the path (:meth:`Masker._hpc_path`). Trial r15b, finding 9: the fix
    quoted ``/data/<user>/shard-02.jsonl``, a path that does not exist."""
    if k != len(parts) - 2:
        return False
    name = parts[-1].lower().rsplit(".", 2)
    if len(name) < 2:
        return False
    suffix = name[-1]
    if suffix in _COMPRESSION_SUFFIXES and len(name) == 3:
        suffix = name[-2]
    return suffix in DATA_RECORD_SUFFIXES


def _hpc_user_index(kind: str, parts: list[str], last_is_dir: bool) -> int | None:
    """Which of the components under an HPC root (``parts``, from ``/scratch/`` on) is a
    user's folder, or ``None``. Under ``/lustre`` and ``/gpfs`` the first component is the
    file system's name; a component after a :data:`HPC_SKIP` word (``scratch``, ``users``)
    is preferred within the first four; numbers (a group id), one-letter components
    (NERSC's ``sd/d``) and :data:`HPC_SKIP` words are stepped over. The
    component found must look like a login name (3 to 32 characters, starting with a
    lower-case letter or ``_``, no upper case) and be no :data:`NOT_USER_DIRS` word."""
    start = 1 if kind in ("lustre", "gpfs", "disks") else 0
    if kind == "media" and parts and not _looks_like_login(parts[0]):
        # udisks mounts a removable or extra disk at /media/<user>/<label>; a disk mounted by
        # hand is /media/<label>/ (SSD, data2), with the users' folders under it
        start = 1
    for j in range(min(len(parts), 4) - 1, start - 1, -1):
        if parts[j].lower() in HPC_SKIP:
            start = j + 1
            break
    for k in range(start, len(parts)):
        name = parts[k]
        if name.lower() in HPC_SKIP or name.isdigit() or len(name) == 1:
            continue
        is_dir = k < len(parts) - 1 or last_is_dir
        if not (is_dir or "." not in name) or not _looks_like_login(name):
            return None
        return k
    return None


def _looks_like_login(name: str) -> bool:
    """Whether ``name`` (one path component) has a login name's shape and is no
    :data:`NOT_USER_DIRS` word: 3 to 32 characters, a lower-case letter or ``_`` first, no
    upper case (the check :func:`_hpc_user_index` makes of the component it returns)."""
    return name.lower() not in NOT_USER_DIRS and bool(_LOGIN.fullmatch(name))


_USER_VAR = lazy_regex.compile(
    r"(?P<p>\b(?:USER|LOGNAME|USERNAME|SUDO_USER|SLURM_JOB_USER|PBS_O_LOGNAME|"
    r"JUPYTERHUB_USER|(?i:user_?name|login))['\"]?\s{0,4}[=:]\s{0,4}['\"]?"
    r"|(?i:\blogged in as):?\s{1,4})(?P<u>[\p{L}\p{N}._-]{1,64})"
)

# A word or key that names a user, before the name: "user alice", "--user alice", "-u alice",
# "owner: alice", "login=alice". Used only with the names learned from home paths and user
# variables (a bare word after "user" is often not a name: "user code", "pip install --user").
_USER_WORD = (
    r"(?i:(?<![\w-])(?:--?)?(?:user(?:[_-]?name)?|login|owner|account|u)(?:['\"]?[ \t]{0,4}[=:][ \t]{0,4}['\"]?"
    r"|[ \t]{1,4}['\"]?))"
)

# --- hosts ------------------------------------------------------------------------------------

_HOSTNAME = r"[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,62})(?:\.[\p{L}\p{N}-]{1,63}){0,8}"
_NAME_WITH_DIGIT = r"\p{L}[\p{L}\p{N}-]{0,62}\d[\p{L}\p{N}-]{0,20}(?:\.[\p{L}\p{N}-]{1,63}){0,8}"

# Words with a number that are not machines, though they follow "on"/"to"/"from": devices,
# dtypes, architectures, encodings, interfaces, models, versions, loop counters.
_NOT_MACHINE = (
    r"(?i:(?:cuda|cu|sm|gpu|cpu|xpu|mps|npu|hpu|tpu|device|dev|rank|local[_-]?rank|step|epoch|iter|layer|block"
    r"|stage|tp|pp|dp|ep|fp|bf|int|uint|float|bfloat|tf|e[45]m[23]|x86|x64|amd|arm|aarch|win|utf|latin|base|sha"
    r"|md|ipv|eth|ib|mlx|enp|ens|eno|bond|veth|wlan|hsn|nvme|sd|python|py|torch|nccl|rocm|cudnn|gcc|glibc|ubuntu"
    r"|version|v|gpt|llama|opt|t5|bert|resnet|vit|phi|qwen|mistral|gemma|bloom|falcon|mixtral|yi|deepseek"
    r"|top|batch|seq|len|port|line|page|chapter|section|figure|table|issue|pr|pep)[-_]?\d)"
)

# The cheap test of "host_word" below, in the stdlib's ``re`` (compiled in a fraction of a
# millisecond, where the ``regex`` module parses host_word in ~2.5 ms, and most lines with a digit
# fail it: "Tried to allocate 2.00 GiB"): a word character, 1-4 blanks, an optional quote or
# parenthesis, a letter, then non-blank characters up to a digit. Every match of host_word holds
# one: its word ends in a letter (a word character), the name's letters, numbers and dashes
# are non-blank, and its first letter (\p{L}) and its digit (\d) are ASCII ones or any
# non-ASCII character: the ``regex`` module's Unicode tables may be newer than the stdlib's
# (a Kawi digit, Unicode 15, is \d there and not in Python 3.11's \d).
# Both are written as negated ASCII ranges: the stdlib compiles [0-9\x80-\U0010ffff] in ~10 ms
# (a charset over every code point), [^\x00-/:-\x7f] (the same characters) in ~0.2 ms.
_NEAR_HOST_WORD = re_code.compile(r"\w[ \t]{1,4}['\"(]?[^\x00-@\[-`{-\x7f]\S*?[^\x00-/:-\x7f]")

# More cheap tests in the stdlib's ``re``, each a shape every match of its rule below has, so
# the rule's pattern is compiled and run only on a line that has it (most lines of a report do
# not: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"). A name's
# characters (\p{L}, \p{N}, "-", ".") are neither blanks nor the punctuation the shapes
# stop at, and a digit (\d) is an ASCII digit or any non-ASCII character, so the ``regex``
# module's Unicode tables and the stdlib's never need to agree.
_DIGIT_OR_WIDE = r"[^\x00-/:-\x7f]"  # an ASCII digit or any non-ASCII character
# Their repeats are bounded as the names' are (labels of 63 characters or fewer), so a long
# line is searched in linear time.
# host_prefix: a name holding a digit at the line's start, then ": ".
_NEAR_HOST_PREFIX = re_code.compile(rf"[^\s:]{{0,63}}{_DIGIT_OR_WIDE}[^\s:]{{0,532}}: ")
# host_port: a name's last character, ":", then the port's first two digits.
_NEAR_HOST_PORT = re_code.compile(rf"[^\s:]:{_DIGIT_OR_WIDE}{{2}}")
# host_fqdn_digit: a digit in the first label, one label or more after it, then the last
# label's first two letters.
_NEAR_FQDN_DIGIT = re_code.compile(
    rf"{_DIGIT_OR_WIDE}[^\s.]{{0,20}}(?:\.[^\s.]{{1,63}}){{1,7}}\.[^\s.]{{2}}"
)
# host_c10d's "(name, port)": "(", a name, ", ", the port's first digit.
_NEAR_C10D = re_code.compile(rf"\([^\s,]{{1,575}}, {_DIGIT_OR_WIDE}")

# Where host names stand in logs: (name, cheap test on the line, pattern whose group "h" is the
# host). The cheap test skips a pattern on lines that cannot match it.
_HOST_RULES: list[tuple[str, Callable[[str], bool], Any]] = [
    # NCCL: "node01:12345:12345 [0] NCCL INFO ..."
    (
        "host_nccl",
        lambda s: " [" in s,
        lazy_regex.compile(r"(?<![\w.:-])(?P<h>" + _HOSTNAME + r"):\d{1,10}:\d{1,10} \[\d{1,4}\]"),
    ),
    # torchelastic ChildFailedError table / key-value prints: "host : node03.cluster.local"
    (
        "host_key",
        lambda s: any(w in s.lower() for w in ("host", "node", "addr", "endpoint")),
        lazy_regex.compile(
            r"(?i:\b(?:host|hostname|host_name|nodename|node_name|master_addr|master-addr|"
            r"SLURMD_NODENAME|SLURM_SUBMIT_HOST|SLURM_LAUNCH_NODE_IPADDR|SLURM_TOPOLOGY_ADDR|"
            r"local_addr|rdzv_endpoint|rdzv-endpoint|rendezvous_endpoint|endpoint)\b)"
            r"['\"]?\s{0,12}[:=]\s{0,12}['\"]?(?P<h>" + _HOSTNAME + r")(?![\w-])"
        ),
    ),
    # "node: gpu-node-017" (Megatron's NaN check: "... Device: 5, node: <hostname>"), a name
    # with a digit only ("node: 0" is an index, "node: linear" a graph node)
    (
        "host_node_key",
        lambda s: "node" in s.lower(),
        lazy_regex.compile(
            r"(?i:\bnode\b)['\"]?\s{0,12}[:=]\s{0,12}['\"]?(?P<h>"
            + _NAME_WITH_DIGIT
            + r")(?![\w-])"
        ),
    ),
    # launcher flags: "--master_addr node01", "--rdzv-endpoint=node01:29500"
    (
        "host_flag",
        lambda s: (
            "--" in s
            and (not s.isascii() or any(w in s.lower() for w in ("master", "rdzv", "host")))
        ),
        lazy_regex.compile(
            r"(?i:--(?:master[_-]addr|rdzv[_-]endpoint|hostname|host))[ =](?P<h>" + _HOSTNAME + r")"
            r"(?![\w-])"
        ),
    ),
    # SLURM: "srun: error: node03: task 3: Exited", "*** STEP 12.0 ON node01 CANCELLED AT"
    (
        "host_slurm",
        lambda s: "srun" in s or "CANCELLED" in s,
        lazy_regex.compile(
            r"\bsrun: error: (?P<h>" + _HOSTNAME + r"): task"
            r"|\b(?:STEP|JOB) [\d.]{1,20} ON (?P<h>" + _HOSTNAME + r") CANCELLED"
        ),
    ),
    # ssh: "connect to host node05 port 22"
    (
        "host_ssh",
        lambda s: "host " in s,
        lazy_regex.compile(r"\bhost (?P<h>" + _HOSTNAME + r") port\b"),
    ),
    # c10d: "(node01, 29500)", "[node02.cluster.local]:29500"
    (
        "host_c10d",
        lambda s: "]:" in s or (", " in s and _NEAR_C10D.search(s) is not None),
        lazy_regex.compile(
            r"\((?P<h>" + _HOSTNAME + r"), \d{1,5}\)|\[(?P<h>" + _HOSTNAME + r")\]:\d{1,5}"
        ),
    ),
    # DeepSpeed's WORLD INFO DICT / hostfile dicts: {'node01': [0, 1], 'node02': [0, 1]}
    (
        "host_dict",
        lambda s: "': [" in s or '": [' in s,
        lazy_regex.compile(r"(?<=['\"])(?P<h>" + _NAME_WITH_DIGIT + r")(?=['\"]:\s?\[)"),
    ),
    # a URL's host: tcp://node01:29500, http://mlflow.corp.example.com/...
    (
        "host_url",
        lambda s: "://" in s,
        lazy_regex.compile(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?:\*{3}(?::\*{3})?@)?(?P<h>" + _HOSTNAME + r")"
            r"(?=[:/?#\s'\")\]]|$)"
        ),
    ),
    # pdsh / DeepSpeed prefix at the start: "node01: [2024-..."; hostfile "node01 slots=8"
    (
        "host_prefix",
        lambda s: "slots=" in s or (": " in s[:80] and _NEAR_HOST_PREFIX.match(s) is not None),
        lazy_regex.compile(
            r"^(?P<h>" + _NAME_WITH_DIGIT + r"): |^(?P<h>" + _HOSTNAME + r") slots=\d"
        ),
    ),
    # name lookups that failed: nslookup's "can't resolve 'trainjob-master-0'" and "** server
    # can't find node07: NXDOMAIN", curl's "Could not resolve host: node07", Python's
    # socket.gaierror with the name quoted after it
    (
        "host_lookup",
        lambda s: "resolve" in s or "can't find" in s or "gaierror" in s,
        lazy_regex.compile(
            r"can't resolve '(?P<h>" + _HOSTNAME + r")'"
            r"|server can't find (?P<h>" + _HOSTNAME + r"):"
            r"|[Cc]ould not resolve host:? '?(?P<h>" + _HOSTNAME + r")"
            r"|gaierror\b[^'\n]{0,200}'(?P<h>" + _HOSTNAME + r")'"
        ),
    ),
    # NCCL's socket peers: "remote peer gpu-node-018<41764>", "Connect to node07<45421>"
    (
        "host_angle_port",
        lambda s: "<" in s,
        lazy_regex.compile(r"(?<![\w./:-])(?P<h>" + _NAME_WITH_DIGIT + r")<\d{1,5}>"),
    ),
    # a short machine name after a word that places something on a machine: "on gpu-node-018",
    # "from node07", "node dgx-a100-07", "worker trn-12" (a dash or a trailing number run, so
    # "on cuda0" or "to step3" are never hosts; see _not_a_host)
    (
        "host_word",
        lambda s: _NEAR_HOST_WORD.search(s) is not None,
        lazy_regex.compile(
            r"(?i:\b(?:on|from|to|at|node|host|machine|server|worker|peer|via))[ \t]{1,4}['\"(]?"
            r"(?!"
            + _NOT_MACHINE
            + r")(?P<h>\p{L}[\p{L}\p{N}]{0,30}(?:-[\p{L}\p{N}]{1,30}){0,6}-?\d{1,6})(?![\w.-]|:\d|\.\w)"
        ),
    ),
    # a dotted name (three labels or more) after a word that names a machine: "host
    # gpu-uni.example.com", "node a.b.c" (no digit needed: the word says it is a machine)
    (
        "host_word_fqdn",
        lambda s: "." in s and any(w in s.lower() for w in ("host", "node", "machine", "server")),
        lazy_regex.compile(
            r"(?i:\b(?:host|hostname|node|machine|server))[ \t]{1,4}['\"(]?"
            r"(?P<f>[\p{L}\p{N}][\p{L}\p{N}-]{0,62}(?:\.[\p{L}\p{N}-]{1,63}){1,7}\.\p{L}{2,24})"
            r"(?![\w(-]|\.[\p{L}\p{N}])"
        ),
    ),
    # a name with a digit and a port: "node02:29500" (not file.cpp:123, not cuda:0)
    (
        "host_port",
        lambda s: ":" in s and _NEAR_HOST_PORT.search(s) is not None,
        lazy_regex.compile(r"(?<![\w./:-])(?P<h>" + _NAME_WITH_DIGIT + r"):\d{2,5}(?![\d.\w])"),
    ),
    # any FQDN whose first label carries a digit, as machine names do: gpu-node-17.cluster.
    # example.com, a100-03.hpc.uni-x.de (three labels or more, an alphabetic last label that is
    # not a file extension, public documentation domains kept)
    (
        "host_fqdn_digit",
        lambda s: "." in s and _NEAR_FQDN_DIGIT.search(s) is not None,
        lazy_regex.compile(
            r"(?<![\w.@/\\-])(?P<f>\p{L}[\p{L}\p{N}-]{0,62}(?<=\d[\p{L}\p{N}-]{0,20})"
            r"(?:\.[\p{L}\p{N}-]{1,63}){1,7}\.\p{L}{2,24})(?![\w(-]|\.[\p{L}\p{N}])"
        ),
    ),
    # a site-internal FQDN anywhere: node03.cluster.local, ip-10-0-1-5.ec2.internal
    (
        "host_fqdn",
        lambda s: any(suffix in s for suffix in _INTERNAL_DOTTED),
        lazy_regex.compile(
            r"(?<![\w.@-])(?P<f>[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63}){0,8}\."
            + _INTERNAL_SUFFIX
            + r")(?![\w(-]|\.[A-Za-z0-9])"
        ),
    ),
]
# "ssh bob@node05", "alice@gpu-3:~$": a user at a machine (an e-mail needs a dotted domain).
_USER_AT_HOST = lazy_regex.compile(
    r"(?<![\w.+-])(?P<u>[\p{L}_][\p{L}\p{N}._-]{0,31})@(?P<h>\p{L}[\p{L}\p{N}-]{0,62})"
    r"(?![\w.-])"
)
_NODELIST = lazy_regex.compile(
    r"(?P<p>\b(?:SLURM_(?:JOB_|STEP_)?NODELIST|SLURM_NODELIST|NODELIST)\s{0,4}[=:]\s{0,4})"
    r"(?P<v>[A-Za-z0-9.,\[\]-]{1,4000})"
)
_NODELIST_ITEM = lazy_regex.compile(
    r"(?P<base>[A-Za-z0-9.-]{0,64})(?:\[(?P<r>[0-9,-]{1,400})\])?(?:,|$)"
)
_SOURCE_EXT = lazy_regex.compile(
    r"(?i)\.(?:py|pyx|cpp|cc|cxx|c|h|hpp|cu|cuh|so|js|ts|rs|go|java|log|out|err|txt|json|ya?ml|toml|cfg|ini|sh|md|csv|jsonl"
    r"|pt|pth|bin|ckpt|safetensors|index|html?|gz|tgz|tar|zip|parquet|arrow|npy|npz|pkl|whl|lock|png|jpe?g|onnx|engine)$"
)  # "file.ext:NN" is a file and a line, not a host and a port

_IPV4 = lazy_regex.compile(
    r"(?<![\w.]|==|(?i:\b(?:version|ver|v|cudnn|cuda|nccl|driver|torch|python|tensorrt|trt))"
    r"[\s:=_-]{0,3})"
    r"(?P<ip>(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})"
    r"(?![\w]|\.\d|\+)"
)
# IPv6: a free-standing run of hex digits and colons (possessive: linear), kept only when
# ipaddress parses it, it has a "::" or eight groups, and at least three hex digits, so C++
# scopes (c10::Error, at::cuda) and times (12:34:56) never match. Group "g": an address glued to
# the word before it, after a letter that is no hex digit (NCCL's IB WARN prints
# "remoteGidsfe80::526b:4b03:a5:2d1e"): a first group of four hex digits ("ib0:fe80::..." is an
# interface and an address), three colons and eight hex digits or more.
_IPV6 = lazy_regex.compile(
    r"(?<![\w.])(?P<ip>[0-9A-Fa-f:]{2,39}+)(?![\w:]|\.\d)"
    r"|(?<=[G-Zg-z])(?P<g>[0-9A-Fa-f]{4}:[0-9A-Fa-f:]{2,35}+)(?![\w:]|\.\d)"
)

# A MAC address: EUI-48 as ``ip link``/``ifconfig``/NCCL's and the NICs' kernel messages print
# it (``link/ether 0c:42:a1:5e:77:10``, ``HWaddr ...``), or Windows' ``0C-42-A1-5E-77-10``; or
# the 20-byte IPoIB hardware address (``link/infiniband 80:00:10:29:fe:80:...``: it holds the
# port GUID). Both name one machine's card as an IP names the machine. Only a whole run of
# two-digit hex groups of exactly that length matches: a longer colon run (a hex dump, an
# 8-group IPv6 address, a fingerprint) and a shorter one (a time 12:34:56) never do, nor do
# 4-digit groups (IPv6, PCI bus ids ``0000:3b:00.0``) or ``0x`` pointers.
_MAC = lazy_regex.compile(
    r"(?<![\w:.-])(?P<mac>[0-9A-Fa-f]{2}(?P<sep>[:-])[0-9A-Fa-f]{2}(?:(?P=sep)[0-9A-Fa-f]{2}){4}"
    r"(?:(?P=sep)[0-9A-Fa-f]{2}){14}+|[0-9A-Fa-f]{2}(?P<sep2>[:-])[0-9A-Fa-f]{2}"
    r"(?:(?P=sep2)[0-9A-Fa-f]{2}){4})(?![\w:-]|\.\w)"
)

# _MAC's cheap test (stdlib ``re``): six hex pairs joined by one separator, which every match
# of either of its alternatives holds (ASCII only in both modules: no case folding).
_NEAR_MAC = re_code.compile(r"[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}")

_HAS_DIGIT_DOT = lazy_regex.compile(r"\d\.\d{1,3}\.\d")

#: Every pattern the masker uses, by name: the regex-safety test checks each one.
PATTERNS: dict[str, Any] = {
    "token": _TOKEN,
    "pem_begin": _PEM_BEGIN,
    "pem_end": _PEM_END,
    "base64_line": _BASE64_LINE,
    "auth_header": _AUTH_HEADER,
    "keyword": _KEYWORD,
    "flag": _FLAG,
    "query": _QUERY,
    "netrc": _NETRC,
    "url_creds": _URL_CREDS,
    "spaced": _SPACED,
    "token_chars": _TOKEN_CHARS,
    "email": _EMAIL,
    "home": _HOME,
    "hpc_path": _HPC_PATH,
    "user_var": _USER_VAR,
    "user_at_host": _USER_AT_HOST,
    "config_line": _CONFIG_LINE,
    "nodelist": _NODELIST,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "mac": _MAC,
    **{name: pattern for name, _test, pattern in _HOST_RULES},
}


def _mask_pem(s: str) -> str:
    """Replace everything from each ``-----BEGIN ... PRIVATE KEY-----`` marker through its END
    marker (or, with no END, through the end of ``s``: fail closed) by the marker and ``***``."""
    out: list[str] = []
    pos = 0
    while True:
        begin = _PEM_BEGIN.search(s, pos, timeout=TIMEOUT_S)
        if begin is None:
            out.append(s[pos:])
            return "".join(out)
        out.append(s[pos : begin.end()] + STARS)
        if s.startswith(STARS, begin.end()):  # already masked: keep what follows
            pos = begin.end() + len(STARS)
            continue
        end = _PEM_END.search(s, begin.end(), timeout=TIMEOUT_S)
        if end is None:
            return "".join(out)
        pos = end.end()


def _email(m: Any) -> str:
    local, _, domain = m[0].partition("@")
    if local == "git" and _public(domain):  # git@github.com:org/repo is a public remote
        return m[0]
    return EMAIL


def _public(name: str) -> bool:
    low = name.lower().rstrip(".")
    return any(low == d or low.endswith("." + d) for d in PUBLIC_DOMAINS)


def pseudonyms_in(text: str) -> list[str]:
    """The host and IP pseudonyms (``host-2``, ``ip-1``) the masking put into ``text``,
    sorted and each once: a command quoting one must have the real name put back."""
    return sorted({m.group(0) for m in _PSEUDONYM_WORD.finditer(text)})


def _masked_already(value: str) -> bool:
    return STARS in value or value.startswith("<") or bool(_PSEUDONYM.fullmatch(value))


#: The most user names :func:`learn_users` keeps from one scan (a log naming more folders
#: than this is no one person's; the shown lines' own paths are still masked where they stand).
MAX_LEARNED_USERS = 64

# Where a user's folder may stand in a line (the literals _HOME and _HPC_PATH need).
_USER_DIR_LITERALS = (
    "/home",
    "/Users/",
    "/users/",
    "/homes/",
    "/u/",
    "/userexternal/",
    "~",
    "Users\\",
    *_HPC_ROOTS,
)


#: The literals of :data:`_USER_DIR_LITERALS` lower-cased, in one automaton over a block's
#: lower-cased bytes (:attr:`rootrank.ingest.Block.lower_bytes`): which of them a block may hold
#: in one native pass (~1 GB/s), where a ``str.find`` per literal reads the block 12 times
#: (~190 MB/s in all). Index i is literal i.
_USER_DIR_WORDS = ahocorasick_rs.BytesAhoCorasick(
    [lit.lower().encode("ascii") for lit in _USER_DIR_LITERALS]
)


def learn_users(text: str, into: set[str], lower: bytes | None = None) -> None:
    """Add to ``into`` the user names the folders in ``text`` (one block of whole lines)
    name: ``/home/<name>/``, ``/Users/<name>/``, ``C:\\Users\\<name>\\`` and the HPC
    user folders (``/scratch/<name>/``, the rules of :data:`HPC_SKIP` and
    :data:`NOT_USER_DIRS`), the same names :meth:`Masker.text` learns from a shown line. Only
    the lines holding one of those folders' literals are read; at most
    :data:`MAX_LEARNED_USERS` names are kept; a line whose matching times out adds nothing.
    The scan calls it on every line of the inputs, so a name is masked on every shown line
    (:meth:`Masker.learn`), whether or not the line it came from is shown.

    ``lower`` (optional): ``text``'s UTF-8 bytes with ASCII letters lower-cased (the scan's
    :attr:`rootrank.ingest.Block.lower_bytes`). Then only the literals whose lower-cased form
    is in ``lower`` are searched in ``text``: the result is the same, since every literal is
    ASCII, and an ASCII character of ``text`` is the same byte of its encoding (lower-cased
    in ``lower``), so a literal absent from ``lower`` is absent from ``text``."""
    literals: tuple[str, ...] = _USER_DIR_LITERALS
    if lower is not None:
        present = {
            i for i, _, _ in _USER_DIR_WORDS.find_matches_as_indexes(lower, overlapping=True)
        }
        literals = tuple(lit for i, lit in enumerate(_USER_DIR_LITERALS) if i in present)
    # Each path is read once per block: a traceback repeats its frames' folders thousands of
    # times, and one regex pass per path costs more than the scan of its line.
    seen: set[str] = set()
    for lit in literals:
        i = text.find(lit)
        while i != -1 and len(into) < MAX_LEARNED_USERS:
            line_start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            if end == -1:
                end = len(text)
            start = max(text.rfind(c, line_start, i) for c in _PATH_STOPS) + 1
            stop = _PATH_END.search(text, i, end)
            path = text[max(start, line_start) : stop.start() if stop else end]
            if path not in seen:
                seen.add(path)
                m = Masker()
                try:
                    m._sub(_HOME, m._home, path)
                    m._sub(_HPC_PATH, m._hpc_path, path)
                except TimeoutError:
                    pass
                into.update(m._users)
            i = text.find(lit, stop.end() if stop else end)


# Where a path in a log line begins (after one of these) and ends (at one of these).
_PATH_STOPS = (" ", "\t", '"', "'", "(", "=", ",")
_PATH_END = lazy_regex.compile(r"[\s'\"(),=]")


# A URL, up to the end of the character before the match: a learned name inside one (a
# documentation link's ".../notes/cuda.html") is a path of that site, no user's folder.
_IN_URL = lazy_regex.compile(r"[A-Za-z][\w+.-]{0,15}://[^\s'\"<>()]*$")


class Masker:
    """Masks secrets and personal details in text shown to a user, one diagnosis at a time.

    Args:
        enabled: ``False`` (``--no-mask``, the ``rootrank.mask`` setting) makes every method
            return its input unchanged.

    The instance holds the host and IP pseudonyms it has handed out, so that the same host is
    ``host-1`` in every line of one report; use one Masker per report. The mapping is private:
    there is no accessor, ``repr`` does not show it, and pickling raises ``TypeError``.
    Not thread-safe: share one instance between threads only under a lock.
    """

    __slots__ = (
        "_gated",
        "_host_count",
        "_ip_count",
        "_known",
        "_mac_count",
        "_names",
        "_source_paths",
        "_sources",
        "_users",
        "enabled",
    )

    def __init__(self, enabled: bool = True, *, gated: bool = True) -> None:
        self.enabled = enabled
        # gated=False runs every pattern on every string, even where a cheap test on the
        # string shows it cannot match (the tests compare the two: same output).
        self._gated = gated
        self._names: dict[str, str] = {}  # real host/IP (lower-case) -> pseudonym
        self._host_count = 0
        self._ip_count = 0
        self._mac_count = 0
        self._users: set[str] = set()
        self._known: Any = None  # compiled alternation of known host names, rebuilt lazily
        self._sources: set[str] = set()  # the inputs' own names (lower-case): never hosts
        # the inputs' paths as given, longest first: shown as typed (never masked)
        self._source_paths: list[str] = []

    def __repr__(self) -> str:
        return f"Masker(enabled={self.enabled})"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a Masker holds a private host mapping and cannot be serialised")

    # -- hosts ----------------------------------------------------------------------------

    def host(self, name: str) -> str:
        """The pseudonym of a host name or IP address: ``host-1``, ``host-2``... for names and
        ``ip-1``, ``ip-2``... for addresses, numbered in order of first sight and stable for the
        life of this instance (case-insensitive; ``node01`` and ``NODE01`` are one host).

        ``localhost``, loopback/unspecified addresses, public hosts (``github.com``...) and
        strings that are already pseudonyms or placeholders come back unchanged, as does
        everything when the masker is disabled. An empty name returns ``""``.
        """
        if not self.enabled or not name:
            return name
        key = name.strip().lower().rstrip(".")
        if not key or key in KEEP_HOSTS or _masked_already(key) or _public(key):
            return name
        if key in self._names:
            return self._names[key]
        if key.startswith("[") and key.endswith("]"):
            return "[" + self.host(name.strip()[1:-1]) + "]"
        if _IPV4_FULL.fullmatch(key) or (
            ":" in key and regex_code.fullmatch(r"[0-9a-f:]{2,45}", key)
        ):
            if key.startswith(("127.", "0.0.0.0")):
                return name
            self._ip_count += 1
            pseudonym = f"ip-{self._ip_count}"
        else:
            short = key.split(".", 1)[0]
            if "." in key and short in self._names and not short.isdigit():
                # node03.cluster.local and node03 are one machine: share the pseudonym.
                pseudonym = self._names[short]
            else:
                self._host_count += 1
                pseudonym = f"host-{self._host_count}"
                while pseudonym in self._names.values():  # a real host literally named host-N
                    self._host_count += 1
                    pseudonym = f"host-{self._host_count}"
                if "." in key and not short.isdigit():
                    self._names.setdefault(short, pseudonym)
        self._names[key] = pseudonym
        self._known = None
        return pseudonym

    def mac(self, address: str) -> str:
        """The pseudonym of a MAC (or IPoIB hardware) address: ``mac-1``, ``mac-2``... in order
        of first sight, stable for the life of this instance whatever the case and separator
        (``0C-42-A1-...`` and ``0c:42:a1:...`` are one card). The broadcast and all-zero
        addresses come back unchanged (they name no card), as does everything when disabled."""
        if not self.enabled:
            return address
        key = address.lower().replace("-", ":")
        if set(key) <= {"f", ":"} or set(key) <= {"0", ":"}:
            return address
        pseudonym = self._names.get(key)
        if pseudonym is None:
            self._mac_count += 1
            pseudonym = self._names[key] = f"mac-{self._mac_count}"
        return pseudonym

    def _mac(self, m: Any) -> str:
        text = m["mac"]
        if m["sep2"] == "-" and not any(c.isalpha() for c in text):
            return text  # dashes and decimal digits only: a date-time (24-11-29-12-30-45)
        return self.mac(text)

    def _known_pattern(self) -> Any:
        # Host names learned earlier (with a digit, a dot or a dash, so "gpu" never becomes a
        # host everywhere) are replaced wherever they stand alone; longest first.
        if self._known is None:
            names = sorted(
                (
                    n
                    for n in self._names
                    if not _IPV4_FULL.fullmatch(n)
                    and ":" not in n
                    and len(n) >= 3
                    and regex_code.search(r"[\d.-]", n)
                ),
                key=len,
                reverse=True,
            )
            if names:
                alt = "|".join(regex_code.escape(n) for n in names)
                self._known = regex_code.compile(
                    r"(?i)(?<![\w.-])(?:" + alt + r")(?![\w-]|\.[A-Za-z0-9])"
                )
            else:
                self._known = False
        return self._known

    # -- text -----------------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Mask one line or message (it may hold newlines). Idempotent: masking masked text
        returns it unchanged; never un-masks. Returns ``s`` unchanged when disabled.

        If any pattern takes longer than :data:`TIMEOUT_S` on ``s`` (a hostile line), the whole
        string is replaced by :data:`WITHHELD`: masking fails closed, never open.
        """
        if not self.enabled or not s:
            return s
        if len(s) > MAX_TEXT:
            s = s[:MAX_TEXT] + f" …[{len(s) - MAX_TEXT} characters not shown]"
        try:
            return self._outside_sources(s)
        except TimeoutError:
            return WITHHELD

    def _outside_sources(self, s: str) -> str:
        """:meth:`_text` on ``s`` but the inputs' own paths in it (:meth:`sources`), which
        stay as the user typed them."""
        for path in self._source_paths:
            if path in s:
                return path.join(self._outside_sources(part) for part in s.split(path))
        return self._text(s)

    def lines(self, items: Iterable[str]) -> list[str]:
        """:meth:`text` over several strings, sharing this instance's pseudonyms."""
        return [self.text(s) for s in items]

    def json(self, obj: Any) -> Any:
        """A copy of a JSON-ready value with every string masked; values under the keys
        ``host``, ``initiating_host``, ``hostname`` and the values of ``hosts`` mappings are
        treated as host names (:meth:`host`). Keys are masked like text, except plain
        identifiers. Returns ``obj`` itself when disabled."""
        if not self.enabled:
            return obj
        return self._json(obj, None)

    def _json(self, obj: Any, key: str | None) -> Any:
        if isinstance(obj, str):
            if key in ("host", "initiating_host", "hostname", "hosts") and " " not in obj:
                return self.host(obj)
            return self.text(obj)
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                nk = k if not isinstance(k, str) or k.isidentifier() else self.text(k)
                child_key = "hosts" if key == "hosts" else (k if isinstance(k, str) else None)
                out[nk] = self._json(v, child_key)
            return out
        if isinstance(obj, (list, tuple)):
            return [self._json(v, key) for v in obj]
        return obj

    def _sub(self, pattern: Any, repl: Callable[[Any], str], s: str) -> str:
        return pattern.sub(repl, s, timeout=TIMEOUT_S)

    def _text(self, s: str) -> str:
        # 1. Secrets. Order matters: whole blocks, then known formats, then keyword values,
        #    so "HF_TOKEN=hf_abc" keeps its shape as "HF_TOKEN=hf_***".
        if "PRIVATE KEY" in s:
            s = _mask_pem(s)
        if "\n" in s:
            s = "\n".join(self._line_secrets(part) for part in s.split("\n"))
        else:
            s = self._line_secrets(s)
        # 2. Personal details.
        if "@" in s:
            s = self._sub(_EMAIL, _email, s)
        if (
            "home" in s
            or "sers" in s
            or "~" in s
            or "/u/" in s
            or "userexternal" in s
            or "Documents and" in s
        ):
            s = self._sub(_HOME, self._home, s)
        if not self._gated or any(root in s for root in _HPC_ROOTS):
            s = self._sub(_HPC_PATH, self._hpc_path, s)
        low = s.lower()
        if "logged in as" in low or (
            ("=" in s or ":" in s)  # _USER_VAR's first alternative: a key, then "=" or ":"
            and ("user" in low or "logname" in low or "login" in low)
        ):
            s = self._sub(_USER_VAR, self._user_var, s)
        if self._users:
            s = self._user_paths(s)
            s = self._user_words(s)
        # 3. Hosts and addresses; hardware addresses first (a host rule reads "host:port").
        if not self._gated or (
            (s.count(":") >= 5 or s.count("-") >= 5) and _NEAR_MAC.search(s) is not None
        ):
            s = self._sub(_MAC, self._mac, s)
        if "@" in s:
            s = self._sub(_USER_AT_HOST, self._user_at_host, s)
        if "NODELIST" in s or not self._gated:
            s = self._sub(_NODELIST, self._nodelist, s)
        for _name, may_match, pattern in _HOST_RULES:
            if may_match(s) or not self._gated:
                s = self._sub(pattern, self._host_ctx, s)
        known = self._known_pattern()
        if known:
            s = known.sub(lambda m: self.host(m[0]), s, timeout=TIMEOUT_S)
        if "." in s and _HAS_DIGIT_DOT.search(s):
            s = self._sub(_IPV4, lambda m: self.host(m["ip"]), s)
        if "::" in s or s.count(":") >= 7:
            s = self._sub(_IPV6, self._ipv6, s)
        return s

    def _line_secrets(self, s: str) -> str:
        # Each pattern runs (and is compiled, on first use) only where a cheap test shows it
        # can match: what every match must contain. A case-insensitive pattern's test holds
        # for ASCII text only (Unicode case folding: "İ" matches "i"), so other text runs it.
        gated = self._gated
        if not gated or any(lit in s for lit in _TOKEN_LITERALS):
            s = self._sub(_TOKEN, lambda m: m["p"] + STARS, s)
        # _BASE64_LINE matches one word of 40+ characters between spaces.
        if (
            not gated or (len(s) >= 40 and len(words := s.split()) == 1 and len(words[0]) >= 40)
        ) and _BASE64_LINE.match(s, timeout=TIMEOUT_S):
            return "<base64>"
        if not gated or ("://" in s and "@" in s):
            s = self._sub(_URL_CREDS, self._url_creds, s)
        if not gated or not s.isascii() or "bearer" in (low := s.lower()) or "authorization" in low:
            s = self._sub(_AUTH_HEADER, lambda m: m["p"] + STARS, s)
        low = s.lower()
        if any(w in low for w in _SECRET_HINTS) and (":" in s or "=" in s):
            s = self._sub(_CONFIG_LINE, self._config_line, s)
        if any(w in low for w in _SECRET_HINTS):
            s = self._sub(_KEYWORD, self._keyword, s)
        if "-" in s and any(w in low for w in _SECRET_HINTS):
            s = self._sub(_FLAG, self._flag, s)
        if "=" in s:
            s = self._sub(_QUERY, lambda m: m["k"] + "=" + STARS, s)
        if "pass" in low or "login" in low:
            s = self._sub(_NETRC, self._netrc, s)
        if any(w in s for w in ("KEY", "TOKEN", "SECRET", "PASSWORD")):
            s = self._sub(_SPACED, lambda m: m["k"] + m["sep"] + STARS, s)
        return s

    # -- replacement callbacks ----------------------------------------------------------------

    @staticmethod
    def _url_creds(m: Any) -> str:
        if m["u"] == STARS and (m["pw"] is None or m["pw"] == STARS):
            return m[0]
        return m["s"] + STARS + (":" + STARS if m["pw"] is not None else "") + "@"

    @staticmethod
    def _keyword(m: Any) -> str:
        if not _SECRET_NAME.search(m["k"]) or _NOT_SECRET_KEY.search(m["k"]):
            # Not a secret's key, but its value may hold one ("Error: token=abc"): the match
            # consumed it, so look inside the value too.
            group = "qv" if m["q"] else "v"
            start, end = m.span(group)
            inner = (
                _KEYWORD.sub(Masker._keyword, m[group], timeout=TIMEOUT_S)
                if "=" in m[group] or ":" in m[group]
                else m[group]
            )
            return m.string[m.start() : start] + inner + m.string[end : m.end()]
        if m["q"]:
            value = m["qv"]
            if _masked_already(value) or _NOT_SECRET.fullmatch(value.strip()):
                return m[0]
            if m["k"].lower() in ("key", "auth") and not _token_like(value):
                return m[0]
            return m["k"] + m["sep"] + m["q"] + STARS + m["q"]
        value = m["v"]
        if m["k"].lower() in ("key", "auth") and not _token_like(value):
            return m[0]  # a state-dict or mapping key ("key: layers.0.weight"), not a secret
        end = m.end()
        rest = m.string[end : end + 1]
        if _masked_already(value) or _NOT_SECRET.fullmatch(value) or rest in ("(", "["):
            return m[0]
        if "(" in value or "[" in value:  # code: token = tokenizer(x), key=os.environ["X"]
            return m[0]
        if m["op"] == ":" and regex_code.fullmatch(r"[a-z]{1,20}\.?", value):
            return m[0]  # prose: "Invalid token: expired"
        return m["k"] + m["sep"] + STARS

    @staticmethod
    def _config_line(m: Any) -> str:
        key = m["k"]
        if not _SECRET_NAME.search(key) or _NOT_SECRET_KEY.search(key):
            return m[0]
        value = m["v"].strip()
        bare = value.strip("'\"")
        if (
            not bare
            or value in ("|", ">", "|-", ">-", "{", "[")  # a YAML block or a nested mapping
            or _masked_already(bare)
            or _NOT_SECRET.fullmatch(bare)
        ):
            return m[0]
        if key.lower() in ("key", "auth") and not _token_like(bare):
            return m[0]  # a mapping's "key: layers.0.weight", not a secret
        quote = (
            value[0] if value[0] in "'\"" and value.endswith(value[0]) and len(value) > 1 else ""
        )
        return (
            m["pre"]
            + m["kq"]
            + key
            + m["kq"]
            + m["sep"]
            + quote
            + STARS
            + quote
            + (m["tail"] or "")
        )

    @staticmethod
    def _flag(m: Any) -> str:
        if not _SECRET_NAME.search(m["k"]) or _NOT_SECRET_KEY.search(m["k"].lstrip("-")):
            return m[0]
        value = m["v"]
        if _masked_already(value) or _NOT_SECRET.fullmatch(value) or value.startswith("-"):
            return m[0]
        return m["k"] + m["sep"] + STARS

    @staticmethod
    def _netrc(m: Any) -> str:
        value = m["v"]
        if _masked_already(value) or _NOT_SECRET.fullmatch(value):
            return m[0]
        if m["k"].lower().startswith("pass") and regex_code.fullmatch(r"[a-z]{1,20}[.,:]?", value):
            return m[0]  # prose: "password authentication failed"
        return m["k"] + STARS

    def _home(self, m: Any) -> str:
        user = m["u"]
        if user in (USER.strip("<>"),) or user.startswith("<") or user in (".", ".."):
            return m[0]
        if m["p"] == "~" and not user:
            return m[0]
        if user.lower() in ("shared", "public", "default", "all users"):
            return m[0]
        self._users.add(user)
        return m["p"] + USER

    def _hpc_path(self, m: Any) -> str:
        parts = m["rest"].split("/")
        k = _hpc_user_index(m["kind"], parts, m.string[m.end() : m.end() + 1] == "/")
        if k is None:
            return m[0]
        if m["kind"] == "data" and _dataset_folder(parts, k) and parts[k] not in self._users:
            return m[0]
        self._users.add(parts[k])
        parts[k] = USER
        after = k + 1
        in_area = parts[k - 1].lower() if k >= 1 else m["kind"]
        if (
            in_area in _PROJECT_AREAS
            and after < len(parts) - 1
            and parts[after].lower() not in NOT_USER_DIRS
            and _LOGIN.fullmatch(parts[after])
        ):
            # /gpfs/projects/<project>/<user>/, /project/<group>/<user>/: a project area's
            # folders are its members'
            self._users.add(parts[after])
            parts[after] = USER
        return m["root"] + "/".join(parts)

    def _user_var(self, m: Any) -> str:
        user = m["u"]
        if user in ("root", USER.strip("<>")) or _NOT_SECRET.fullmatch(user):
            return m[0]
        self._users.add(user)
        return m["p"] + USER

    def learn(self, users: Iterable[str]) -> None:
        """Mask these user names (from :func:`learn_users`) wherever a user's name stands in
        the text this instance masks from now on, as if a shown line's path had named them."""
        self._users.update(users)

    def _user_paths(self, s: str) -> str:
        # A user name learned from a home path is also masked where it is a path component
        # elsewhere (/scratch/alice/run1, /gpfs/data/alice).
        names = [u for u in self._users if len(u) >= 3 and u not in ("user", "root")]
        if not names:
            return s
        alt = "|".join(regex_code.escape(u) for u in sorted(names, key=len, reverse=True))
        pat = regex_code.compile(r"(?<=[/\\])(?:" + alt + r")(?=[/\\:\s'\")]|$)")
        return pat.sub(
            lambda m: m[0] if _IN_URL.search(s, 0, m.start()) else USER, s, timeout=TIMEOUT_S
        )

    def _user_words(self, s: str) -> str:
        # A user name learned from a home path or a user variable, where a word or key names
        # a user: "user alice", "--user alice", "owner: alice".
        names = [u for u in self._users if len(u) >= 2 and u not in ("user", "root")]
        if not names:
            return s
        alt = "|".join(regex_code.escape(u) for u in sorted(names, key=len, reverse=True))
        pat = regex_code.compile(r"(?P<p>" + _USER_WORD + r")(?:" + alt + r")(?![\w-])")
        return pat.sub(lambda m: m["p"] + USER, s, timeout=TIMEOUT_S)

    def sources(self, names: Iterable[str]) -> None:
        """Remember the inputs' own names (the report's ``sources``: ``Untitled-1``,
        ``worker-1``, ``logs/x``) and their last path parts. rootrank writes a location as
        ``<source>:<line>``, which the host-and-port rule would read as ``node02:29500``:
        an extensionless name with a digit (every VS Code untitled editor) became ``host-2:14``
        in the reasoning while the header kept it (trial r15, finding 3). The user gave these
        names: each folder of a path is no host (``exp2/u.log`` is not ``host-1/u.log``), and
        a path itself is written as typed wherever it appears (``/work/alice/run/x.log:82``
        stays, where the HPC-root rule would write ``/work/<user>/...``: new-user trial r21
        finding 10). The log's own paths are masked as before."""
        for name in names:
            low = name.lower()
            self._sources.add(low)
            # each folder of the path too: ``exp2/u.log`` names a folder, not a host ``exp2``
            self._sources.update(p for p in low.replace("\\", "/").split("/") if p)
            if "/" in name or "\\" in name:
                self._source_paths.append(name)
        self._source_paths.sort(key=len, reverse=True)

    def _host_ctx(self, m: Any) -> str:
        groups = m.re.groupindex
        fqdn = m.captures("f") if "f" in groups else []
        if fqdn:
            # "node03.cluster.local" or "gpu7.local", not "threading.local": three labels or
            # a digit in the first one.
            name = fqdn[-1]
            if name.count(".") < 2 and not any(c.isdigit() for c in name.split(".")[0]):
                return m[0]
        for name in ("h", "f"):
            if name not in groups:
                continue
            spans = m.spans(name)
            caps = m.captures(name)
            if not caps:
                continue
            host = caps[-1]
            start, end = spans[-1]
            if self._not_a_host(host) or host.lower() in self._sources:
                return m[0]
            if m.string.startswith(": ", end) and exception_path(host):
                # a traceback's last line, "psycopg2.errors.UniqueViolation: <message>": the
                # exception's dotted type, whatever its last part (:mod:`rootrank.exc_name`)
                return m[0]
            rel_s, rel_e = start - m.start(), end - m.start()
            return m[0][:rel_s] + self.host(host) + m[0][rel_e:]
        return m[0]

    @staticmethod
    def _not_a_host(name: str) -> bool:
        low = name.lower()
        return (
            _masked_already(low)
            or low in KEEP_HOSTS
            or low.isdigit()
            or _public(low)
            or bool(_SOURCE_EXT.search(low))
            or bool(regex_code.fullmatch(r"rank\d+|cuda\d*|gpu\d*|step\d+|epoch\d+|v\d[\w.]*", low))
            or low in ("none", "null", "true", "false", "unknown", "localhost")
            or bool(regex_code.fullmatch(r"(?:\d+\.)+\d+", low))
            and not _IPV4_FULL.fullmatch(low)
        )

    def _ipv6(self, m: Any) -> str:
        text = m["ip"]
        if text is None:  # glued to the word before it
            text = m["g"]
            if text.count(":") < 3 or sum(c != ":" for c in text) < 8:
                return text
        if ("::" not in text and text.count(":") != 7) or sum(c != ":" for c in text) < 3:
            return text
        if "::" not in text and all(len(g) == 2 for g in text.split(":")):
            # eight 2-digit groups are the bytes of a hex dump (an address written whole
            # whose first group is 00xx is in the reserved ::/8)
            return text
        import ipaddress  # on first use: most shown lines hold no IPv6 address

        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            return text
        return self.host(text)

    def _user_at_host(self, m: Any) -> str:
        host = m["h"]
        if self._not_a_host(host) or m["u"] in ("git",):
            return m[0]
        return USER + "@" + self.host(host)

    def _nodelist(self, m: Any) -> str:
        value = m["v"]
        if _masked_already(value):
            return m[0]
        hosts: list[str] = []
        for item in _NODELIST_ITEM.finditer(value, timeout=TIMEOUT_S):
            base, ranges = item["base"], item["r"]
            if not base and not ranges:
                continue
            if ranges is None:
                hosts.append(base)
                continue
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                if not lo.isdigit() or (hi and not hi.isdigit()):
                    continue
                width = len(lo)
                a, b = int(lo), int(hi) if hi else int(lo)
                if b - a > MAX_NODELIST or len(hosts) > MAX_NODELIST:
                    return m["p"] + "<nodelist>"
                hosts.extend(f"{base}{i:0{width}d}" for i in range(a, b + 1))
        if not hosts or len(hosts) > MAX_NODELIST:
            return m["p"] + "<nodelist>"
        return m["p"] + ",".join(self.host(h) for h in hosts)
