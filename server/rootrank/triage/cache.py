"""``--cache DIR``: a nightly run over a growing archive reads only the new or changed jobs.

Opt-in: nothing is written anywhere without ``--cache``. In ``DIR``:

- ``jobs/<hash>.json``, one per job: the job's files as ``[path, size in bytes, mtime in ns,
  BLAKE2b of the bytes]`` and the worker's result (masked as the output is, so the cache never
  holds more than the output would show);
- ``host-key`` (mode 0600): the host key, so a host keeps its pseudonym from night to night.

A job is taken from the cache when its files have the same paths, sizes and modification
times as recorded; when only the modification times differ (a copy, ``touch``), the files'
content hashes decide. The entry's name also covers what the result depends on besides the
files: the rootrank version, the signature files' contents and the masking mode, so a new
signature or release re-diagnoses everything once.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rootrank import __version__
from rootrank.ingest import InputError
from rootrank.signatures import builtin_dir
from rootrank.triage.discover import Job
from rootrank.triage.hosts import KEY_BYTES, new_key
from rootrank.triage.work import content_hash


def library_fingerprint(extra: tuple[str, ...]) -> str:
    """SHA-256 (hex) over the built-in and extra signature files' names and bytes."""
    h = hashlib.sha256()
    for root in (str(builtin_dir()), *extra):
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                if name.endswith((".yaml", ".yml")):
                    p = os.path.join(dirpath, name)
                    h.update(os.path.relpath(p, root).encode() + b"\0")
                    with open(p, "rb") as fh:
                        h.update(fh.read())
    return h.hexdigest()


class Cache:
    """The job cache in ``folder`` for one run's settings.

    Raises:
        InputError: ``folder`` cannot be created or written.
    """

    def __init__(self, folder: str, *, mask: str, signatures: tuple[str, ...]) -> None:
        self.folder = Path(folder)
        try:
            (self.folder / "jobs").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"--cache {folder}: cannot be created ({exc.strerror or exc})"
            ) from None
        if not os.access(self.folder / "jobs", os.W_OK):
            raise InputError(f"--cache {folder}: not writable")
        self.mask = mask
        self.settings = f"{__version__}\0{mask}\0{library_fingerprint(signatures)}"
        self.hits = 0
        self.stored = 0

    def host_key(self) -> bytes:
        """The cache's host key, created (random, mode 0600) on first use.

        Raises:
            InputError: the key file exists with the wrong size or cannot be written.
        """
        path = self.folder / "host-key"
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = new_key()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
            return key
        if len(key) != KEY_BYTES:
            raise InputError(
                f"{path}: not a rootrank host key ({len(key)} bytes, expected {KEY_BYTES})"
            )
        return key

    def _entry(self, job: Job) -> Path:
        ident = json.dumps([self.settings, job.kind, list(job.paths)])
        return self.folder / "jobs" / (hashlib.sha256(ident.encode()).hexdigest()[:40] + ".json")

    def lookup(self, job: Job) -> dict[str, Any] | None:
        """The cached result of ``job`` (its ``index`` set to this run's), or ``None``."""
        try:
            entry = json.loads(self._entry(job).read_text(encoding="utf-8"))
            files = [tuple(f) for f in entry["files"]]
            result = entry["result"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if [tuple(f[:3]) for f in files] != list(job.files):
            if [(p, s) for p, s, _, _ in files] != [(p, s) for p, s, _ in job.files]:
                return None
            try:  # only the modification times differ: the content decides
                if [content_hash(p) for p, _, _ in job.files] != [f[3] for f in files]:
                    return None
            except OSError:
                return None
            self._write(job, [h for *_, h in files], result)
        self.hits += 1
        result["job"]["index"] = job.index
        result["record"]["index"] = job.index
        return result

    def store(self, job: Job, result: dict[str, Any]) -> None:
        """Keep ``result`` (with its ``hashes``) for ``job``; a result without hashes (a file
        that could not be read) or with an error is not kept."""
        hashes = result.get("hashes")
        if result.get("error") or not hashes or len(hashes) != len(job.files):
            return
        self._write(job, hashes, {k: v for k, v in result.items() if k != "hashes"})
        self.stored += 1

    def _write(self, job: Job, hashes: list[str], result: dict[str, Any]) -> None:
        entry = {
            "files": [[p, s, m, h] for (p, s, m), h in zip(job.files, hashes, strict=True)],
            "result": result,
        }
        target = self._entry(job)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, separators=(",", ":"))
            os.replace(tmp, target)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
