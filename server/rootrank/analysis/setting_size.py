"""A failed allocation whose size is a setting the log prints, times a dtype's width.

Mechanism: some buffers are sized by configuration, not by the batch: DeepSpeed's ZeRO
allocates ``reduce_bucket_size`` elements for its gradient reduction bucket
(deepspeed/runtime/zero/stage_1_and_2.py ``buf_1 = torch.empty(int(self.reduce_bucket_size),
dtype=...)``), ``allgather_bucket_size`` for its all-gather, ZeRO-3
``stage3_prefetch_bucket_size`` for prefetched parameters. DeepSpeed prints its whole
configuration at start-up (``"reduce_bucket_size": 5.000000e+09``, ``reduce_bucket_size=5000000000``),
so when ``Tried to allocate X`` equals such a value times 2 bytes (fp16/bf16) or 4 (fp32),
the allocation is that buffer: lowering that setting shrinks it, the micro-batch does not.
The names to try come from the fix variant's ``when`` (data, in the signature).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank import lazy_regex, regex_code

#: ``Tried to allocate 9.31 GiB`` (CUDA's caching allocator, sizes to two decimals).
REQUEST = lazy_regex.compile(r"Tried to allocate (?P<num>\d+(?:\.\d+)?) ?(?P<unit>[KMGT]?i?B)\b")
#: The allocator's units, in bytes.
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
#: Bytes per element of the dtypes a bucket is made in (fp16/bf16, fp32).
WIDTHS = (2, 4)
#: ``<name>": 5.000000e+09`` or ``<name>=5000000000`` (a JSON dump or a key=value line); the
#: name pattern is put before it.
_VALUE = r"""["']?\s*[:=]\s*(?P<value>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\b"""


def requested(texts: Iterable[str]) -> tuple[float, str] | None:
    """``(number, unit)`` of the first ``Tried to allocate`` in ``texts``, or ``None``."""
    for text in texts:
        m = REQUEST.search(text)
        if m is not None and m["unit"] in UNITS:
            return float(m["num"]), m["unit"]
    return None


def setting_pattern(names: str) -> str:
    """The pattern of a setting whose name matches the regex ``names``, with its value."""
    return rf"(?P<name>{names}){_VALUE}"


def setting_sized(
    names: str, texts: Iterable[str], lines: Iterable[str]
) -> tuple[str, str, int] | None:
    """``(setting, value as printed, bytes per element)`` of the first setting whose name
    matches the regex ``names`` in ``lines`` (the log's text) and whose value times a width
    of :data:`WIDTHS`, in the request's unit rounded to two decimals, is the request the
    OOM message in ``texts`` names; ``None`` when there is no request or no such setting."""
    req = requested(texts)
    if req is None:
        return None
    num, unit = req
    pattern = setting_pattern(names)
    for text in lines:
        for m in regex_code.compile(pattern, 0).finditer(text):
            value = float(m["value"])
            for width in WIDTHS:
                if abs(round(value * width / UNITS[unit], 2) - num) <= 0.011:
                    return m["name"], m["value"], width
    return None
