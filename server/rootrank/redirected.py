"""The per-rank files of a torchrun launch whose workers wrote to files, found beside the
terminal log the user gave.

``torchrun --redirects 3 --log-dir DIR`` (``-r``; a value per local rank, ``0:3,1:0``, too)
sends each worker's stdout and stderr to ``DIR/<run_id>/attempt_<k>/<local_rank>/{stdout,
stderr}.log`` (torch.distributed.elastic.multiprocessing, https://pytorch.org/docs/stable/
elastic/run.html) and prints only its own lines on the terminal: the failure summary, whose
``Root Cause`` is whichever worker the agent saw exit first, and no rank's own error. A
terminal log of such a launch holds none of the evidence of which rank failed first; the
files do. :func:`rank_log_folder` finds them: ``DIR`` as the command names it, next to the
terminal log, else a folder under the log's own (a copy under another name) that holds the
``attempt_<k>/<n>/`` layout. With ``--tee`` the terminal shows the same lines: no files then.
"""

from __future__ import annotations

import os

from rootrank import lazy_regex

#: ``--redirects 3``/``-r 3``/``--redirects=0:3,1:0``: some stream of some worker to a file.
_REDIRECTS = lazy_regex.compile(r"(?:^|\s)(?:--redirects|-r)(?:=|\s+)(?:[123]\b|\d{1,4}:)")
_TEE = lazy_regex.compile(r"(?:^|\s)(?:--tee|-t)(?:=|\s+)(?:[123]\b|\d{1,4}:)")
_LOG_DIR = lazy_regex.compile(r"(?:^|\s)--log[-_]dir(?:=|\s+)(?P<dir>[^\s;|&>]{1,512})")
_ATTEMPT = lazy_regex.compile(r"^attempt_\d{1,6}$")
#: How deep under the terminal log's folder the search looks, and how many folders it opens.
MAX_DEPTH = 3
MAX_FOLDERS = 200
#: The files torchrun writes per worker.
RANK_FILES = ("stderr.log", "stdout.log")


def redirected(command: str | None) -> bool:
    """Whether the torchrun ``command`` sends workers' output to files only (``--redirects``
    with no ``--tee``)."""
    return (
        command is not None
        and _REDIRECTS.search(command) is not None
        and _TEE.search(command) is None
    )


def _holds_attempts(folder: str) -> bool:
    """Whether ``folder`` is a ``--log-dir`` (or one run of it): an ``attempt_<k>`` folder at
    most two levels down whose numbered subfolder holds a worker's file."""
    for root in (folder, *_subfolders(folder)):
        for name in _subnames(root):
            if _ATTEMPT.match(name):
                attempt = os.path.join(root, name)
                for rank in _subnames(attempt):
                    if rank.isdigit() and any(
                        os.path.isfile(os.path.join(attempt, rank, f)) for f in RANK_FILES
                    ):
                        return True
    return False


def _subnames(folder: str) -> list[str]:
    """The names of ``folder``'s subfolders, sorted; ``[]`` when it cannot be read."""
    try:
        with os.scandir(folder or ".") as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _subfolders(folder: str) -> list[str]:
    return [os.path.join(folder, n) for n in _subnames(folder)]


def rank_log_folder(log_path: str, command: str | None) -> str | None:
    """The folder of the per-rank files of the launch ``command`` (:func:`redirected`), whose
    terminal output is the file ``log_path``: the ``--log-dir`` it names, relative to the
    file's folder, when it holds the layout; else the first folder (sorted by path, at most
    :data:`MAX_DEPTH` levels and :data:`MAX_FOLDERS` folders under the file's) that holds it.
    ``None`` when the command redirects nothing or no such folder is found. Never raises."""
    if not redirected(command) or log_path == "-":
        return None
    assert command is not None
    # relative as the user typed the log's path: the files found are named the same way
    # (the report names them as the sources; nothing depends on where the checkout lives)
    here = os.path.dirname(log_path)
    named = _LOG_DIR.search(command)
    if named is not None:
        folder = os.path.join(here, os.path.expanduser(named["dir"]))
        if os.path.isdir(folder or ".") and _holds_attempts(folder):
            return folder
    queue, opened = [(here, 0)], 0
    while queue and opened < MAX_FOLDERS:
        folder, depth = queue.pop(0)
        opened += 1
        if folder != here and _holds_attempts(folder):
            return folder
        if depth < MAX_DEPTH:
            queue.extend((sub, depth + 1) for sub in _subfolders(folder))
    return None
