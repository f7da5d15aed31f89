"""Host names across an archive: one pseudonym per machine for the whole archive, or raw.

``rootrank diagnose`` numbers hosts within one report (``host-1`` is the lowest rank's host);
across thousands of jobs that numbering would give one machine a different name in every job,
and the host table could not rank machines. Here a worker's masker names a host by a keyed
hash instead: ``host-`` followed by 12 digits of HMAC-SHA256(key, host name), so ``node07`` is
the same ``host-…`` in every job of the run, on every worker, and no worker needs to talk to
another. The key is random per run (or kept in a ``--cache`` folder, so a nightly run keeps
its names); without it nobody can test a guessed host name against a pseudonym.

A host and its fully qualified name (``node07`` and ``node07.cluster.local``) share one
pseudonym, as in a single report; IP addresses become ``ip-`` followed by 12 digits. With
``--keep-hosts`` hosts and IPs stay raw while secrets, e-mail addresses and user names are
still masked.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from rootrank import re_code
from rootrank.mask import Masker

#: Bytes of a host key (HMAC-SHA256 key).
KEY_BYTES = 32
#: Digits of a pseudonym: 10^12 values, so 10,000 hosts collide with probability ~5e-5.
DIGITS = 12
_COUNTER = re_code.compile(r"(?:host|ip)-\d+")


def new_key() -> bytes:
    """A random host key for one run (``os.urandom``)."""
    return os.urandom(KEY_BYTES)


def pseudonym(key: bytes, name: str, kind: str = "host") -> str:
    """The archive-wide pseudonym of a host (``kind="host"``) or IP address (``"ip"``):
    ``host-`` + :data:`DIGITS` digits of HMAC-SHA256(``key``, ``name`` lower-cased)."""
    digest = hmac.new(key, name.strip().lower().rstrip(".").encode(), hashlib.sha256).digest()
    return f"{kind}-{int.from_bytes(digest[:8], 'big') % 10**DIGITS:0{DIGITS}d}"


class ArchiveMasker(Masker):
    """A :class:`rootrank.mask.Masker` whose host pseudonyms hold across an archive.

    Everything else (secrets, e-mail addresses, user names, which strings are hosts) is the
    single-report masker's own behaviour; only the name handed out for a new host changes.
    Like its base, it cannot be pickled: it is built inside the worker, from the key.
    """

    __slots__ = ("_archive", "_key")

    def __init__(self, key: bytes, enabled: bool = True) -> None:
        super().__init__(enabled=enabled)
        self._key = key
        self._archive: dict[str, str] = {}  # this masker's host-N -> archive pseudonym

    def host(self, name: str) -> str:
        """The archive-wide pseudonym of ``name`` (see :meth:`rootrank.mask.Masker.host`
        for what is kept unchanged)."""
        out = super().host(name)
        if not self.enabled or out == name or out == name.strip():
            return out
        if out in self._archive:
            return self._archive[out]
        if not _COUNTER.fullmatch(out):  # "[host-…]" from an IPv6 literal, already mapped
            return out
        key = name.strip().lower().rstrip(".")
        kind = "ip" if out.startswith("ip-") else "host"
        short = key.split(".", 1)[0]
        canonical = key if kind == "ip" or short.isdigit() else short
        self._archive[out] = pseudonym(self._key, canonical, kind)
        return self._archive[out]


class RawHostMasker(Masker):
    """A masker that keeps host names and IP addresses raw (``--keep-hosts``) and masks
    everything else a single report masks."""

    __slots__ = ()

    def host(self, name: str) -> str:
        """``name`` unchanged."""
        return name
