"""Find the jobs of a log archive, in a stable order, without reading any log.

What one job is (each is diagnosed as ``rootrank diagnose`` would, on the same paths):

- a **torchrun ``--log-dir`` run**: a folder holding ``attempt_<k>`` folders
  (``<log_dir>/<run_id>/attempt_0/<local_rank>/stdout.log``); it is passed as the folder, so the
  newest attempt is diagnosed and the others are named in the warnings, as ``diagnose`` does;
- a **SLURM job**: the ``slurm-<jobid>.out`` / ``slurm-<jobid>-<task>.out`` files of one folder
  with the same job id (array tasks ``slurm-<jobid>_<k>`` are separate jobs);
- a **folder of logs**: the other log files directly in one folder (one folder per job:
  ``archive/job-17/rank0.log``, ``rank1.log``); subfolders are jobs of their own;
- a **file** named on the command line (``rootrank triage logs/*.log``: one job per file).

Log files are named as ``rootrank diagnose`` reads folders (``*.log``, ``*.out``, ``*.err``,
``*.txt``, ``error.json``), also compressed (``.gz``, ``.zst``, ``.xz``). Folders whose name
starts with a dot are skipped (a ``--cache`` folder kept inside the archive). Symbolic links to
folders are not followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rootrank import re_code
from rootrank.engine import LOG_NAMES, LOG_SUFFIXES
from rootrank.ingest import TAR_MESSAGE, InputError, is_tar_header, open_log, strip_compression
from rootrank.runs import run_key, unrelated_names

#: torchrun's restart folders: <log_dir>/<run_id>/attempt_<k>/<local_rank>/stdout.log
_ATTEMPT = re_code.compile(r"^attempt_\d{1,6}$")


@dataclass(frozen=True, slots=True)
class Job:
    """One job of the archive.

    Attributes:
        index: 0-based position in the archive's stable order (sorted paths).
        id: how reports name the job: the path under the archive root, starting with the
            root's own name (``archive/2026-11-30/slurm-1234``); raw, masked by the worker.
        kind: ``"torchrun"``, ``"slurm"``, ``"folder"`` or ``"file"``.
        paths: what ``rootrank diagnose`` is given for this job (a torchrun run folder, or files).
        files: every log file of the job as ``(path, size in bytes, mtime in ns)``.
    """

    index: int
    id: str
    kind: str
    paths: tuple[str, ...]
    files: tuple[tuple[str, int, int], ...]

    @property
    def bytes(self) -> int:
        """Total size of the job's log files on disk (compressed size for compressed logs)."""
        return sum(size for _, size, _ in self.files)

    @property
    def mtime(self) -> float:
        """Newest modification time of the job's files, seconds since the epoch (0.0 if none)."""
        return max((m for _, _, m in self.files), default=0) / 1e9


def is_log_name(name: str) -> bool:
    """Whether a file name is one ``rootrank diagnose`` reads in a folder (compressed or not)."""
    low = strip_compression(name.lower())
    return low.endswith(LOG_SUFFIXES) or low in LOG_NAMES


def _stat(path: str) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (path, st.st_size, st.st_mtime_ns)


def _tree_files(folder: str) -> list[tuple[str, int, int]]:
    out = []
    for dirpath, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            if is_log_name(name):
                st = _stat(os.path.join(dirpath, name))
                if st:
                    out.append(st)
    return out


def _folder_jobs(
    root: str, label: str, notes: list[str]
) -> Iterator[tuple[str, str, tuple[str, ...], list[tuple[str, int, int]]]]:
    """``(id, kind, paths, files)`` of every job under the folder ``root``, in sorted order."""

    def unreadable(exc: OSError) -> None:
        notes.append(f"skipped the folder {exc.filename} ({exc.strerror or exc})")

    for dirpath, dirs, names in os.walk(root, followlinks=False, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(dirpath, root)
        base = label if rel == "." else os.path.join(label, rel)
        if any(_ATTEMPT.match(d) for d in dirs):
            files = _tree_files(dirpath)
            dirs[:] = []  # the whole tree is this run
            if files:
                yield base, "torchrun", (dirpath,), files
            continue
        slurm: dict[str, list[tuple[str, int, int]]] = {}
        loose: list[tuple[str, int, int]] = []
        for name in sorted(names):
            if not is_log_name(name):
                continue
            st = _stat(os.path.join(dirpath, name))
            if st is None:
                continue
            key = run_key(os.path.join(dirpath, name))
            if key is not None and key.kind == "slurm":
                slurm.setdefault(key.name, []).append(st)
            else:
                loose.append(st)
        if loose:
            paths = [p for p, _, _ in loose]
            if note := unrelated_names(paths, base):
                notes.append(f"{base}: {note}")
            yield base, "folder", tuple(paths), loose
        for job_id in sorted(slurm, key=_slurm_order):
            files = slurm[job_id]
            yield (
                os.path.join(base, f"slurm-{job_id}"),
                "slurm",
                tuple(p for p, _, _ in files),
                files,
            )


def _slurm_order(job_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in job_id.split("_"))


def _is_tar(path: str) -> bool:
    """Whether the file ``path`` is a tar archive (plain or compressed: ``jobs.tar.gz``,
    ``.tgz``), read from its first header block (:func:`rootrank.ingest.is_tar_header`). A
    folder, a pipe (whose data a read would take), or a file that cannot be read or
    decompressed, is not one here (its job's reading says what is wrong). Never raises."""
    if not os.path.isfile(path):
        return False
    try:
        with open_log(path) as fh:
            return is_tar_header(fh.read(512))
    except (InputError, OSError, EOFError, ValueError):
        return False


def discover(
    paths: Iterable[str], *, since: float | None = None, notes: list[str] | None = None
) -> Iterator[Job]:
    """The jobs under ``paths`` (files and folders), in a stable order, lazily.

    ``since`` (seconds since the epoch) keeps only jobs with a file modified at or after it.
    Sentences about what was skipped are appended to ``notes``.

    Raises:
        InputError: a path does not exist or cannot be read, or is a tar archive (read as one
            log, its members' jobs would make one wrong job) (raised before any job is yielded).
    """
    if notes is None:
        notes = []
    roots = list(paths)
    for p in roots:
        if not os.path.exists(p):
            raise InputError(f"{p}: no such file or folder")
        if not os.access(p, os.R_OK):
            raise InputError(f"{p}: permission denied")
        if _is_tar(p):
            raise InputError(f"{p}: {TAR_MESSAGE}")
    index = 0
    loose_files: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for root in roots:
        label = os.path.basename(os.path.normpath(os.path.abspath(root))) or root
        if os.path.isdir(root):
            for job_id, kind, job_paths, files in _folder_jobs(root, label, notes):
                if since is not None and max(m for _, _, m in files) / 1e9 < since:
                    continue
                yield Job(index, job_id, kind, job_paths, tuple(files))
                index += 1
            continue
        st = _stat(root)
        if st is None:
            raise InputError(f"{root}: not a regular file or folder")
        key = run_key(root)
        if key is not None and key.kind == "slurm":  # slurm-12-0.out slurm-12-1.out: one job
            group = (os.path.dirname(os.path.abspath(root)), key.name)
            if group not in loose_files:
                loose_files[group] = []
            loose_files[group].append(st)
            continue
        if since is None or st[2] / 1e9 >= since:
            yield Job(index, root, "file", (root,), (st,))
            index += 1
    for (folder, job_id), files in loose_files.items():
        if since is not None and max(m for _, _, m in files) / 1e9 < since:
            continue
        name = os.path.join(os.path.basename(folder), f"slurm-{job_id}")
        yield Job(index, name, "slurm", tuple(p for p, _, _ in files), tuple(files))
        index += 1


def count(paths: Iterable[str], *, since: float | None = None) -> tuple[int, int]:
    """``(jobs, bytes)`` that :func:`discover` would yield (a first pass for progress)."""
    n = total = 0
    for job in discover(paths, since=since):
        n += 1
        total += job.bytes
    return n, total
