"""The start-up's cheaper paths give what the paths they replaced gave (issue 11).

- Masking's cheap tests (``rootrank.mask``: ``_HOST_RULES``, ``_NEAR_MAC``, the user variable)
  only skip a pattern on a string it cannot match: on generated strings built from the pieces
  host names, ports, MAC addresses and user variables are made of, every string a rule's
  pattern matches passes the rule's test, and the gated masker masks as the ungated one.
- ``ranks.parse_time`` counts a timestamp's seconds without ``datetime``: the values
  ``(datetime(2000, month, day, ...) - datetime(2000, 1, 1)).total_seconds()`` gave, and
  ``None`` for every date ``datetime`` refused.
"""

from __future__ import annotations

import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank import mask, ranks
from rootrank.mask import Masker

#: Pieces that make host names, ports, dotted names, MAC addresses, launcher flags and user
#: variables, with the characters the cheap tests stop at (blanks, ":", ".", ",", "(").
_PIECES = [
    "node",
    "gpu-node-",
    "07",
    "3",
    "a",
    "x1",
    "é",
    "٣",  # an Arabic-Indic digit (\d in both modules)
    "𑽑",  # a Kawi digit (Unicode 15: \d in the regex module's tables, maybe not the stdlib's)
    ".",
    ".cluster",
    ".local",
    ".com",
    ".de",
    ":",
    ": ",
    ":29500",
    ":22",
    ", ",
    "(",
    ")",
    "[",
    "]:",
    " ",
    "\t",
    "-",
    "--",
    "--master_addr",
    "--rdzv-endpoint=",
    "--host ",
    "MASTER",
    "=",
    "aa",
    "0f",
    "B7",
    "USER",
    "user",
    "username",
    "LOGNAME",
    "logged in as ",
    "login",
    "slots=8",
    "'",
    '"',
]

_TEXT = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14).map("".join)


def _mac_like() -> st.SearchStrategy[str]:
    pair = st.sampled_from(["00", "1a", "B7", "fF", "9c"])
    return st.tuples(
        st.sampled_from(["", "eth0 ", "x", ":"]),
        st.lists(pair, min_size=5, max_size=8),
        st.sampled_from([":", "-"]),
        st.sampled_from(["", " up", ":", "-x"]),
    ).map(lambda t: t[0] + t[2].join(t[1]) + t[3])


@settings(max_examples=3000, deadline=None)
@given(_TEXT)
def test_a_host_rule_whose_pattern_matches_passes_its_cheap_test(text: str) -> None:
    for name, may_match, pattern in mask._HOST_RULES:
        if pattern.search(text) is not None:
            assert may_match(text), (name, text)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_mac_like(), _TEXT))
def test_a_mac_address_passes_the_mac_test(text: str) -> None:
    if mask._MAC.search(text) is not None:
        assert mask._NEAR_MAC.search(text) is not None, text
        assert text.count(":") >= 5 or text.count("-") >= 5


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_TEXT, _mac_like()))
def test_gated_masking_masks_as_ungated_masking(text: str) -> None:
    assert Masker().text(text) == Masker(gated=False).text(text)


def test_the_cheap_tests_skip_the_lines_of_a_tiny_oom_report() -> None:
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    passed = [name for name, may_match, _ in mask._HOST_RULES if may_match(line)]
    assert passed == []
    command = "for p in $(pgrep -f train.py); do py-spy dump --pid $p; done"
    assert mask._NEAR_MAC.search(command) is None
    hosts = {name: may_match for name, may_match, _ in mask._HOST_RULES}
    assert not hosts["host_flag"](command)
    assert hosts["host_prefix"]("node07: [2024-01-01] x")
    assert hosts["host_port"]("connect to node02:29500")
    assert hosts["host_fqdn_digit"]("on gpu-node-17.cluster.example.com")
    assert hosts["host_c10d"]("(node01, 29500)")
    assert Masker().text("connect to node02:29500") == Masker(gated=False).text(
        "connect to node02:29500"
    )


def _datetime_seconds(month: int, day: int, hour: int, minute: int, second: int) -> float | None:
    try:
        stamp = datetime.datetime(2000, month, day, hour, minute, second)
    except ValueError:
        return None
    return (stamp - datetime.datetime(2000, 1, 1)).total_seconds()


def test_parse_time_counts_seconds_as_datetime_did() -> None:
    checked = 0
    for month in range(0, 14):
        for day in range(0, 33):
            for hour, minute, second in (
                (0, 0, 0),
                (23, 59, 59),
                (24, 0, 0),
                (7, 60, 1),
                (1, 2, 60),
            ):
                want = _datetime_seconds(month, day, hour, minute, second)
                iso = f"2024-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d},250 x"
                glog = f"I{month:02d}{day:02d} {hour:02d}:{minute:02d}:{second:02d}.5 123 a.cc:1] x"
                got_iso, got_glog = ranks.parse_time(iso), ranks.parse_time(glog)
                if want is None:
                    assert got_iso is None and got_glog is None, iso
                else:
                    assert got_iso == want + 0.25 and got_glog == want + 0.5, iso
                checked += 1
    assert checked == 14 * 33 * 5
    assert ranks.parse_time("2024-02-29 00:00:01 x") == 59 * 86400 + 1.0
    assert ranks.parse_time("2024-02-30 00:00:01 x") is None
