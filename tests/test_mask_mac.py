"""MAC (hardware) addresses are masked like IPs (``mac-N``, stable within one report) in every
shown field; IPv6 addresses, pointers, PCI bus ids, times and hex dumps are not mangled.

The lines are written as the tools print them: iproute2's ``ip link`` (``link/ether ADDR brd
ff:ff:ff:ff:ff:ff``, ``link/infiniband`` with IPoIB's 20-byte address), net-tools'
``ifconfig`` (``ether ADDR  txqueuelen 1000  (Ethernet)``, older ``HWaddr ADDR``), Windows'
``ipconfig /all`` (``Physical Address. . . . : 0C-42-A1-...``), NCCL's socket/IB lines."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from rootrank import report, report_sarif
from rootrank.engine import diagnose_text
from rootrank.mask import Masker

MAC = "0c:42:a1:5e:77:10"
MAC2 = "b8:ce:f6:0a:12:9e"

MASKED = [
    (
        f"    link/ether {MAC} brd ff:ff:ff:ff:ff:ff",
        "    link/ether mac-1 brd ff:ff:ff:ff:ff:ff",
    ),
    (
        f"        ether {MAC.upper()}  txqueuelen 1000  (Ethernet)",
        "        ether mac-1  txqueuelen 1000  (Ethernet)",
    ),
    (f"eth0      Link encap:Ethernet  HWaddr {MAC}", "eth0      Link encap:Ethernet  HWaddr mac-1"),
    (
        "   Physical Address. . . . . . . . . : 0C-42-A1-5E-77-10",
        "   Physical Address. . . . . . . . . : mac-1",
    ),
    (
        "    link/infiniband 80:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:5e:77:10 brd "
        "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff",
        "    link/infiniband mac-1 brd mac-2",
    ),
    (f"hwaddr={MAC}, peer={MAC2}.", "hwaddr=mac-1, peer=mac-2."),
    (
        f"node14:9921:9990 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.14<0> {MAC}",
        "host-1:9921:9990 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:ip-1<0> mac-1",
    ),
]


@pytest.mark.parametrize(("raw", "masked"), MASKED, ids=[m[1][:40] for m in MASKED])
def test_a_mac_address_is_masked(raw: str, masked: str) -> None:
    m = Masker()
    assert m.text(raw) == masked
    assert m.text(masked) == masked  # idempotent


NOT_MACS = [
    # IPv6 is an IP (ip-N), never a MAC, and no piece of it becomes one
    ("Using [0]ib0:fe80::1ff:fe23:4567:890a<0>", "Using [0]ib0:ip-1<0>"),
    ("peer 2001:db8:85a3:0:0:8a2e:370:7334 port 29500", "peer ip-1 port 29500"),
    ("gid fe80::e42:a1ff:fe5e:7710 and fe:80::12:34:56:78", "gid ip-1 and ip-2"),
    # hex dumps, pointers, PCI bus ids, times, GUIDs, date-stamped folders stay as they are
    ("ptr=0x7f3a2c001234 addr 0x00007f3a2c000000", None),
    ("bytes 00:11:22:33:44:55:66:77 crc de:ad:be:ef", None),
    ("payload 00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff", None),
    ("dump 00 11 22 33 44 55 66 77", None),
    ("Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus. 00000000:3B:00.0", None),
    ("[E1129 12:34:56.789 ProcessGroupNCCL.cpp:1970] at 12:34:56", None),
    ("node_guid: 0c42:a103:005e:7710", None),
    ("saving to outputs/24-11-29-12-30-45/ckpt-100", None),
    ("brd ff:ff:ff:ff:ff:ff and 00:00:00:00:00:00", None),
    ("RuntimeError: c10::Error at::cuda::blas", None),
]


@pytest.mark.parametrize(("line", "masked"), NOT_MACS, ids=[n[0][:40] for n in NOT_MACS])
def test_near_misses_are_not_masked_as_macs(line: str, masked: str | None) -> None:
    got = Masker().text(line)
    assert got == (line if masked is None else masked)
    assert "mac-" not in got


def test_mac_pseudonyms_are_stable_within_a_masker_and_fresh_across() -> None:
    m = Masker()
    assert m.text(f"a {MAC} b {MAC2}") == "a mac-1 b mac-2"
    # the same card in another case and separator is the same pseudonym
    assert m.text("again 0C-42-A1-5E-77-10 and " + MAC2.upper()) == "again mac-1 and mac-2"
    assert m.text("host node03 at 10.0.0.3") == "host host-1 at ip-1"  # own counters
    assert Masker().text(MAC2) == "mac-1"
    assert Masker(enabled=False).text(MAC) == MAC


LOG = f"""\
[rank1]: 2: ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4092 qdisc mq state UP mode DEFAULT
[rank1]:     link/ether {MAC} brd ff:ff:ff:ff:ff:ff
[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/train.py", line 88, in <module>
[rank1]:     setup_rdma(args.iface)
[rank1]:   File "/workspace/train.py", line 41, in setup_rdma
[rank1]:     raise RuntimeError(f"interface {{iface}} ({{mac}}) has no RDMA device bound")
[rank1]: RuntimeError: interface ib0 ({MAC}) has no RDMA device bound
"""


def _leaks(s: str) -> bool:
    low = s.lower()
    return MAC in low or MAC.replace(":", "-") in low


def test_a_mac_is_masked_in_every_field_and_output_format() -> None:
    raw = diagnose_text(LOG, "train.log", mask=False)
    assert raw.unclassified and _leaks(json.dumps(raw.to_dict()))  # the MAC is shown...
    diag = diagnose_text(LOG, "train.log")
    assert diag.unclassified is not None and diag.unclassified.rank == 1
    assert diag.unclassified.evidence[0].line == 8
    assert diag.unclassified.evidence[0].text.endswith(
        "interface ib0 (mac-1) has no RDMA device bound"
    )
    outputs = {
        "json": report.to_json(diag),
        "text": report.to_text(diag, color=False, all_stacks=True),
        "markdown": report.to_markdown(diag),
        "sarif": report_sarif.to_sarif(diag),
        "github": report_sarif.to_github(diag),
    }
    for fmt, out in outputs.items():
        assert not _leaks(out), fmt  # ...and masked in every format
    assert "RuntimeError: interface ib0 (mac-1) has no RDMA device bound" in outputs["text"]


def test_the_cli_masks_a_mac_and_no_mask_shows_it(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text(LOG)
    masked = run_cli("diagnose", str(log))
    assert masked.returncode == 3  # an unclassified failure
    assert not _leaks(masked.stdout.decode())
    assert "Unclassified failure on rank 1: RuntimeError: interface ib0 (mac-1)" in (
        masked.stdout.decode()
    )
    shown = run_cli("diagnose", str(log), "--no-mask")
    assert f"({MAC})" in shown.stdout.decode()
