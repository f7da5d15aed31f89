"""A worker's SIGTERM that came from inside it: its own kill of a child's process group.

torchrun's ``failed (exitcode: -15) local_rank: N (pid: P)`` line names the first worker it
found dead, and a SIGTERM the agent did not send (``P`` is not in its ``Sending process P
closing signal`` lines) is read as a stop from outside (``worker-sigterm-exit``). One more
sender is inside the job: the worker itself. ``os.killpg(os.getpgid(child.pid), SIGTERM)``
on a child started without a session of its own (``subprocess.Popen`` without
``start_new_session=True``) signals the group the child inherited, which is the worker's own
(torchrun starts every worker in a new session, so the group holds that worker and its
children, no other rank); ``kill 0``, ``pkill -g`` and ``os.killpg(0, ...)`` do the same. The
worker then dies by the signal it sent its child, right after it printed that it was stopping
that child (heldout r23b case 10: ``[rank 1] prefetch still running after 5s, stopping it``).

So when the dying worker's last printed line (its launcher or own rank tag; the kept heads and
tails of the same source, before the agent's line) says it is stopping, killing or cleaning up
a process, and the agent sent closing signals to other pids but not to this one, the finding
is the worker's own kill (:data:`OWN_KILL_SIGNATURE`, a bug in the script), not an outside
stop. The signals that come from the process itself (its timer, its limits) are read by the
signal's name in :mod:`rootrank.analysis.signal_exit`.
"""

from __future__ import annotations

from collections.abc import Callable

from rootrank import lazy_regex
from rootrank.analysis.prepare import finding_from
from rootrank.model import Evidence, Finding
from rootrank.ranklines import LineOwner, last_own_line, own_lines
from rootrank.ranks import RankTagger
from rootrank.scan import ScanState
from rootrank.signatures import Library, Signature

#: The signature of a worker killed by its own process-group kill (``detector: analysis``).
OWN_KILL_SIGNATURE = "worker-killed-own-process-group"
#: The signature of a worker's SIGTERM/SIGHUP exit the agent did not send.
OUTSIDE_SIGNATURE = "worker-sigterm-exit"
#: A line that says the process is stopping something: the verb ...
_STOPPING = lazy_regex.compile(
    r"(?i)\b(?:stop(?:s|ping)?|kill(?:s|ing)?|terminat(?:e|es|ing)|shut(?:s|ting)? ?down"
    r"|clean(?:s|ing)? ?up|tear(?:s|ing)? ?down|reap(?:s|ing)?|abort(?:s|ing)?)\b"
)
#: ... and what it stops: a process, a child, a helper, or "it"/"them" after a named task.
_PROCESS_WORD = lazy_regex.compile(
    r"(?i)\b(?:child(?:ren)?|sub-?process(?:es)?|process(?:es)?|proc|pid|workers?|helpers?"
    r"|daemons?|servers?|copier|prefetch\w*|downloader|loader|group|it|them)\b"
)
#: Characters of the line kept in the captures.
MAX_LINE = 200


def own_group_kills(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with each :data:`OUTSIDE_SIGNATURE` finding replaced by one of
    :data:`OWN_KILL_SIGNATURE` (same rank, evidence and captures, plus ``last_line``: the
    worker's last printed line, and ``rank``) when the agent sent closing signals
    (``state.launch.closing_pids`` not empty) but not to that finding's ``pid``, and the
    worker's last line before the agent's (see :func:`_last_line`) says it was stopping a
    process (:data:`_STOPPING` and :data:`_PROCESS_WORD`). Unchanged when the signature is
    not in ``library``."""
    return replace_unsignalled(findings, state, library, OWN_KILL_SIGNATURE, _own_kill)


def _own_kill(
    sig: Signature, f: Finding, state: ScanState, rank: int, last: tuple[str, int, str]
) -> Finding | None:
    """The :data:`OWN_KILL_SIGNATURE` finding ``f`` becomes when the worker's last line
    ``last`` (``(path, 1-based line, text)``) says it was stopping a process, else ``None``."""
    path, number, text = last
    if not (_STOPPING.search(text) and _PROCESS_WORD.search(text)):
        return None
    return finding_from(
        sig,
        f,
        {
            **f.captures,
            "rank": str(rank),
            "last_line": text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "...",
        },
        evidence=[Evidence(path=path, line=number, text=text, rank=rank), *f.evidence[:1]],
    )


#: What :func:`replace_unsignalled` asks of a finding it may replace: ``(sig, f, state,
#: rank, last)`` (the signature, the :data:`OUTSIDE_SIGNATURE` finding, the scan's state, the
#: killed worker's rank and its last line ``(path, 1-based line, text)``) to the finding
#: that replaces ``f``, or ``None`` to keep it.
KillReader = Callable[[Signature, Finding, ScanState, int, tuple[str, int, str]], Finding | None]


def replace_unsignalled(
    findings: list[Finding], state: ScanState, library: Library, signature: str, make: KillReader
) -> list[Finding]:
    """``findings`` with each :data:`OUTSIDE_SIGNATURE` finding whose dead worker the agent
    did not signal replaced by what ``make`` gives for it (kept when it gives ``None``): the
    agent sent closing signals (``state.launch.closing_pids`` not empty) but not to the
    finding's ``pid`` capture, its worker's rank is known (the finding's, else its
    ``local_rank`` capture), it has evidence, and that worker's last line before its first
    evidence line is kept (:func:`_last_line`). Unchanged when ``signature`` is not in
    ``library`` or the agent sent no closing signal."""
    sig = library.signatures.get(signature)
    closing = state.launch.closing_pids
    if sig is None or not closing:
        return findings
    out: list[Finding] = []
    for f in findings:
        made = None
        if f.signature == OUTSIDE_SIGNATURE:
            pid = f.captures.get("pid", "")
            local = f.captures.get("local_rank", "")
            rank = f.rank if f.rank is not None else (int(local) if local.isdigit() else None)
            if pid.isdigit() and int(pid) not in closing and rank is not None and f.evidence:
                last = _last_line(state, f.evidence[0], rank)
                if last is not None:
                    made = make(sig, f, state, rank, last)
        out.append(made if made is not None else f)
    return out


def _last_line(state: ScanState, at: Evidence, rank: int) -> tuple[str, int, str] | None:
    """``(path, 1-based line, text)`` of the last line tagged with ``rank`` (its launcher
    prefix or its own ``rank N`` tag, :class:`RankTagger`) before ``at`` in ``at``'s source,
    from the scan's kept heads and tails (``ScanState.heads``/``tails``, read by
    :func:`rootrank.ranklines.last_own_line`); a traceback's lines (``[rank1]: Traceback
    ...`` and what follows) count too, so a worker that raised is not read by an earlier
    line. ``None`` when no such line is kept."""
    found = last_own_line(
        own_lines(
            (*state.heads, *state.tails),
            rank,
            _tagger_owner,
            path=at.path,
            before=at.line,
            once=True,
        )
    )
    return None if found is None else (found.path, found.line, found.text)


def _tagger_owner(path: str) -> LineOwner:
    """A :data:`rootrank.ranklines.LineOwner` for one kept text of ``path``: a fresh
    :class:`RankTagger`'s rank of each line with its text (prefixes peeled, stripped); a
    line with no text left is no one's."""
    tagger = RankTagger(path=path)

    def owner(raw: str, number: int) -> tuple[int | None, str] | None:
        tagged = tagger.tag(raw, number)
        text = tagged.text.strip()
        return (tagged.rank, text) if text else None

    return owner
