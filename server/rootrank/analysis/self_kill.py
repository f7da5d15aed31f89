"""A worker's SIGTERM that its own watchdog sent to its own pid, while one rank was retrying an input.

torchrun's ``failed (exitcode: -15) local_rank: N (pid: P)`` names the first worker it found
dead. When the agent sent no closing signal to ``P`` and that worker's last printed line names
``P`` itself next to a signal or a kill (``watchdog: no step for 5.3s ..., sending SIGTERM to
pid P``), the sender is the script's own watchdog: a thread that ends its process when the
training loop stops advancing. That kill is no cause (no stop from outside, no kill of a
child's group: :mod:`rootrank.analysis.own_kill`); the question is why the loop stopped. In
data parallelism every rank's loop waits in the same collective for the slowest rank, so the
loops of all ranks stop together when one rank does not reach it, and the watchdog fires on
whichever rank runs one, not on the one that stalled. The rank whose own last lines, up to the
kill, repeat one warning that it is retrying or waiting for an input item (``shard
part-0003.bin missing ..., retry 4 of 8 after 4.0s``) was elsewhere: it is the initiator, and
the input it could not get is the cause (heldout r24c case 08: one rank backing off on a data
chunk that was not there, a straggler killer on another rank terminating its own pid).

Needed, all of: the agent sent closing signals, not to the dead worker's pid; the worker's
last line (:func:`rootrank.analysis.own_kill._last_line`) holds that pid and a signal or kill
word; exactly one rank's kept lines (:func:`rootrank.ranklines.rank_lines`) before that line
end in at least :data:`MIN_RETRIES` lines of one shape (digits taken out) with a retry word
and an input word (:data:`_RETRY`, :data:`_INPUT`). Otherwise the finding is left as it was.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.own_kill import replace_unsignalled
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library, Signature

#: The signature of the finding (class data-error, ``detector: analysis``).
SIGNATURE = "watchdog-killed-while-rank-retried-input"
#: Lines of one shape that make a retry run.
MIN_RETRIES = 2
#: Characters of a quoted line.
MAX_QUOTE = 200
#: A kill or signal word on the worker's last line.
_KILL = lazy_regex.compile(r"(?i)\bSIG(?:TERM|KILL|INT|HUP)\b|\bkill\w*|\bterminat\w*")
#: A line that retries or waits: ``retry 2 of 8``, ``retrying in 2s``, ``attempt 3/7``,
#: ``not available yet``, ``backing off``, ``waiting for``.
_RETRY = lazy_regex.compile(
    r"(?i)\bretr(?:y|ying|ies|ied)\b|\battempt \d+ ?(?:/|of)|\bnot (?:available|ready|there) yet\b"
    r"|\bback(?:ing)?[ -]?off\b|\bwaiting for\b"
)
#: An input item the line names: a data word or a file name.
_INPUT = lazy_regex.compile(
    r"(?i)\b(?:shard|chunk|file|sample|record|batch|dataset|data|part)s?\b|[\w-]+\.[A-Za-z]\w{0,7}\b"
)
_DIGITS = lazy_regex.compile(r"\d+(?:\.\d+)?")


def self_kills(findings: list[Finding], state: ScanState, library: Library) -> list[Finding]:
    """``findings`` with a :data:`~rootrank.analysis.own_kill.OUTSIDE_SIGNATURE` finding
    replaced by one of :data:`SIGNATURE` on the retrying rank (its first retry line and the
    kill line as evidence; captures ``rank``, ``warning``, ``killer_line``, ``killed_rank``,
    ``pid``) when the module's conditions hold (the worker the agent did not signal:
    :func:`rootrank.analysis.own_kill.replace_unsignalled`); unchanged otherwise or when the
    signature is not in ``library``."""
    return replace_unsignalled(findings, state, library, SIGNATURE, _made)


def _made(
    sig: Signature, f: Finding, state: ScanState, killed: int, last: tuple[str, int, str]
) -> Finding | None:
    """The :data:`SIGNATURE` finding ``f`` (a
    :data:`~rootrank.analysis.own_kill.OUTSIDE_SIGNATURE` finding whose worker, rank
    ``killed``, printed ``last`` as its last line: ``(path, 1-based line, text)``) becomes,
    or ``None`` when a condition of the module fails."""
    pid = f.captures.get("pid", "")
    if not _KILL.search(last[2]) or pid not in _DIGITS.findall(last[2]):
        return None
    retrier = _retrying_rank(state, last[0], last[1])
    if retrier is None:
        return None
    rank, (path, number, text) = retrier
    return Finding.of(
        sig,
        rank=rank,
        host=state.hosts.get(rank),
        time=None,
        order=f.order,
        evidence=[Evidence(path=path, line=number, text=text, rank=rank), *f.evidence[:1]],
        captures={
            **f.captures,
            "rank": str(rank),
            "warning": text[:MAX_QUOTE],
            "killer_line": last[2][:MAX_QUOTE],
            "killed_rank": str(killed),
        },
    )


def _retrying_rank(
    state: ScanState, path: str, before: int
) -> tuple[int, tuple[str, int, str]] | None:
    """The one rank whose kept lines in ``path`` before line ``before`` (1-based) end in a
    retry run (see the module), with its first line of that run ``(path, line, text)``;
    ``None`` when no rank or more than one does."""
    from rootrank.ranklines import rank_lines  # reads the heads only when asked

    lines, _full, _failed = rank_lines(state)
    found: list[tuple[int, tuple[str, int, str]]] = []
    for who, kept in lines.items():
        if who[0] is None:
            continue
        mine = sorted(
            (ln for ln in kept if ln.path == path and ln.line < before), key=lambda x: x.line
        )
        if len(mine) < MIN_RETRIES:
            continue
        shape = _DIGITS.sub("#", mine[-1].text)
        run = 0
        for ln in reversed(mine):
            if _DIGITS.sub("#", ln.text) != shape:
                break
            run += 1
        text = mine[-1].text
        if run >= MIN_RETRIES and _RETRY.search(text) and _INPUT.search(_RETRY.sub(" ", text)):
            first = mine[-run]
            found.append((who[0], (first.path, first.line, first.text.strip())))
    return found[0] if len(found) == 1 else None
