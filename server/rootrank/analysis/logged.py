"""A rank that logged why it stops, then exited with a code of its own (``sys.exit(1)``).

A script that checks its input on every rank often ends the rank that finds a problem with
a logged reason and an exit, not an exception: ``log.error("rank 3: shard train-00003 has 3
labels outside [0, 10) ...; refusing to train")`` then ``sys.exit(1)``. No traceback is
printed; torchrun then reports only ``exitcode : 1`` for that rank with "To enable traceback
see ..." and stops the others (SIGTERM). What the launcher says (a failed child) only
followed: the logged line is the cause, in the rank's own words, and the class is what those
words name (the data, the configuration), not "a worker failed" with advice to rerun for
output the log already holds (round 18b case 07).

Needed, all of: no finding of the log is a cause (only launcher reports, signals, peers'
symptoms); a rank the launcher's failure summary gives a positive exit code (a code the
program chose: ``-N``/``128+N`` are signals, another reading's), with no exception and no cut
traceback of its own; and before the summary, a line of that rank (its launcher prefix or its
own ``rank N`` in the line, naming no other rank) logged at level ``ERROR``, ``CRITICAL`` or
``FATAL``: its last such line is taken. Read from the sources' kept heads and tails
(``ScanState.heads``/``tails``): the scan's gate does not choose such lines.
"""

from __future__ import annotations

import re

from rootrank import lazy_regex, re_code
from rootrank.analysis.events import order_before_next
from rootrank.analysis.prepare import finding_at
from rootrank.model import Evidence, Finding
from rootrank.ranks import RankTagger, strip_wrapper_stamp
from rootrank.scan import ScanState
from rootrank.signatures import Library, Signature

#: The signature of a logged reason that names the data (class data-error).
DATA_SIGNATURE = "logged-data-check-failed"
#: The signature of a logged reason that names a setting (class config-error).
CONFIG_SIGNATURE = "logged-config-check-failed"
#: The signature of any other logged reason before a rank's own exit.
REASON_SIGNATURE = "logged-reason-before-exit"

#: A logging record's level word near the line's start: Python logging (``2026-12-04
#: 19:07:59,456 ERROR cls: ...``, ``ERROR:root:...``), loguru (``| ERROR    |``), glog-style
#: bracketed levels (``[ERROR]``). Group ``at`` ends the header: what follows is the reason.
_LEVEL = re_code.compile(r"(?<![\w.-])(?:ERROR|CRITICAL|FATAL)(?![\w.-])")
#: How far into the line (after launcher prefixes) the level may stand: a header, not a word
#: of a message.
MAX_LEVEL_AT = 80
#: A rank's own mention in its line: ``rank 3:``, ``[rank 3]``, ``rank=3``, ``RANK3``.
_RANK_WORD = re_code.compile(r"(?i)(?<![\w-])rank[ _:=#]{0,2}(\d{1,6})(?![\d.])")
#: Words of a reason about the data the rank read (labels, samples, records, shards, token ids).
_DATA_WORDS = lazy_regex.compile(
    r"(?i)\b(?:labels?|targets?|samples?|records?|rows?|shards?|datasets?|data\s?files?|"
    r"token[\s_-]?ids?|images?|examples?|annotations?|corrupt(?:ed)?|checksums?)\b"
)
#: Words of a reason about a setting (an argument, an option, an environment variable).
_CONFIG_WORDS = lazy_regex.compile(
    r"(?i)\b(?:config(?:uration)?|settings?|arguments?|options?|flags?|hyper-?parameters?|"
    r"env(?:ironment)?\s?var(?:iable)?s?|must be set|is not set|world[\s_]size)\b"
)
#: The launcher's own exceptions (torchrun's agent, mp.spawn's parent): raised because a worker
#: failed, and printed by the launcher, whichever rank a line near them was tagged with.
LAUNCHER_EXCEPTIONS = ("ChildFailedError", "ProcessRaisedException", "ProcessExitedException")
#: Characters of the reason kept in the captures.
MAX_REASON = 300


def logged_exit_reasons(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """Findings of the logged reasons of ranks that ended themselves (see the module): one per
    such rank, of :data:`DATA_SIGNATURE`, :data:`CONFIG_SIGNATURE` or
    :data:`REASON_SIGNATURE` by the reason's words; captures ``reason`` (the message after the
    logger's header), ``level`` and ``exitcode``. Empty when any finding is a cause, a
    signature is missing, or no rank fits."""
    sigs: dict[str, Signature] = {}
    for name in (DATA_SIGNATURE, CONFIG_SIGNATURE, REASON_SIGNATURE):
        sig = library.signatures.get(name)
        if sig is None:
            return []
        sigs[name] = sig
    if any(f.role == "cause" for f in findings):
        return []
    raised = {
        x.rank for x in state.exceptions if not x.exc.type.endswith(LAUNCHER_EXCEPTIONS)
    } | set(state.cut_traceback_ranks)
    exits: dict[int, tuple[int, str, int]] = {}  # rank -> (exit code, summary path, line)
    for e in state.elastic:
        if e.rank is None or e.exitcode is None or not 0 < e.exitcode < 128 or e.rank in raised:
            continue
        if e.rank not in exits:
            exits[e.rank] = (e.exitcode, e.path, e.line)
    if not exits:
        return []
    out: list[Finding] = []
    for rank, (code, path, before) in sorted(exits.items()):
        got = _last_logged_error(state, rank, path, before)
        if got is None:
            continue
        line, raw, level, reason = got
        sig_id = (
            DATA_SIGNATURE
            if _DATA_WORDS.search(reason)
            else CONFIG_SIGNATURE
            if _CONFIG_WORDS.search(reason)
            else REASON_SIGNATURE
        )
        sig = sigs[sig_id]
        col = raw.find(reason)
        out.append(
            finding_at(
                sig,
                Evidence(
                    path=path,
                    line=line,
                    text=raw,
                    rank=rank,
                    column_start=col if col >= 0 else None,
                    column_end=col + len(reason) if col >= 0 else None,
                ),
                {
                    "reason": reason[:MAX_REASON],
                    "level": level,
                    "exitcode": str(code),
                    "reason_line": str(line),
                },
                rank=rank,
                order=order_before_next(findings, path, line),
            )
        )
    return out


def _last_logged_error(
    state: ScanState, rank: int, path: str, before: int
) -> tuple[int, str, str, str] | None:
    """``(1-based line, raw line, level, reason)`` of the last line of ``path`` before line
    ``before`` that ``rank`` logged at an error level (see the module), from the kept heads and
    tails; ``None`` when there is none."""
    best: tuple[int, str, str, str] | None = None
    seen: set[int] = set()
    for src, first, text in (*state.heads, *state.tails):
        if src != path:
            continue
        tagger = RankTagger(path=path)
        for i, raw in enumerate(text.split("\n")):
            number = first + i
            if number >= before:
                break
            if number in seen or (
                "ERROR" not in raw and "CRITICAL" not in raw and "FATAL" not in raw
            ):
                continue
            seen.add(number)
            tagged = tagger.tag(raw, number)
            body = strip_wrapper_stamp(raw)
            lm = _LEVEL.search(body, 0, MAX_LEVEL_AT)
            if lm is None:
                continue
            reason = body[lm.end() :].lstrip(" :|-]")
            # a logger's name after the level ("ERROR cls: ..."): the reason follows it
            nm = re.match(r"[\w.]{1,60}: ", reason)
            if nm is not None and not _RANK_WORD.match(reason):
                reason = reason[nm.end() :]
            named = {int(m.group(1)) for m in _RANK_WORD.finditer(body)}
            if tagged.rank is not None:
                named.add(tagged.rank)
            if named != {rank}:
                continue  # another rank's line, one about several ranks, or no rank's
            if best is None or number > best[0]:
                best = (number, raw.strip(), lm.group(0), reason.strip())
    return best
