"""Masking of personal details in any script, and of an IPv6 GID glued to the word before it
(NCCL's IB WARN line prints ``remoteGids`` and the address with no space between them)."""

from __future__ import annotations

import pytest

from rootrank.engine import diagnose_text
from rootrank.mask import Masker


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        (
            "at /home/jörg/project/train_bad_data.py:16",
            "at /home/<user>/project/train_bad_data.py:16",
        ),
        (
            'File "/home/ユーザー/proj/train.py", line 3',
            'File "/home/<user>/proj/train.py", line 3',
        ),
        ("/Users/zoë/run.py", "/Users/<user>/run.py"),
        ("USER=jörg", "USER=<user>"),
        ("master jörg@müller.de", "master <email>"),
        ("host gpu-ünï.example.com", "host host-1"),
        ("host gpu-uni.example.com", "host host-1"),
        ("ssh jörg@node05", "ssh <user>@host-1"),
        ("on gpu-ünï-07 failed", "on host-1 failed"),
        (
            "localGid fe80::526b:4b03:a5:2d1e remoteGidsfe80::526b:4b03:a5:2d1f",
            "localGid ip-1 remoteGidsip-2",
        ),
        ("Using [0]ib0:fe80::526b:4b03:a5:2d1e<0>", "Using [0]ib0:ip-1<0>"),
        # never an address: C++ scopes and a time, also when glued to a word
        (
            "std::deed c10::Error at::cuda Tensor::add 12:34:56",
            "std::deed c10::Error at::cuda Tensor::add 12:34:56",
        ),
    ],
)
def test_unicode_and_glued_cases(raw: str, masked: str) -> None:
    assert Masker().text(raw) == masked


def test_the_same_user_is_masked_wherever_it_appears_later() -> None:
    m = Masker()
    assert m.text("/home/jörg/a.py") == "/home/<user>/a.py"
    assert "jörg" not in m.text("--user jörg")


def test_diagnosis_shows_no_non_ascii_secret() -> None:
    log = (
        "[rank0]: torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "1/2 clients joined. master jörg@müller.de host gpu-ünï.example.com\n"
        "[rank1]: NCCL WARN NET/IB : Got completion from peer 10.1.2.3<51234> with status=12 opcode=0 "
        "len=0 vendor err 129 (Recv) localGid fe80::526b:4b03:a5:2d1e remoteGidsfe80::526b:4b03:a5:2d1f\n"
        '[rank0]:   File "/home/jörg/project/train.py", line 16, in <module>\n'
    )
    result = diagnose_text(log)
    shown = str(result.to_dict())
    assert result.to_dict()["root_cause"] is not None
    for secret in ("jörg", "müller", "ünï", "fe80", "526b", "10.1.2.3"):
        assert secret not in shown
    for placeholder in ("<email>", "host host-", "remoteGidsip-"):
        assert placeholder in shown  # the lines are shown, masked
