"""The one-line fix of a report's first lines: the first fix step cut to what this job must do.

A fix step (:attr:`rootrank.model.Fix.steps`, its first entry) opens with where the cause is
(``train.py:57 (in main), where rank 2 raised ValueError:``, or a config key), explains the
mechanism, then says what to change. The verdict's ``Fix:`` line keeps the location, the
step's first sentence when it states the cause, and its first action sentence (one that
starts with a verb in the imperative, "Lower ...", "Pass ...", "Drain ..."), up to about
:data:`LIMIT` characters; the whole step stays in the report's fix list. A sentence that
only repeats the exception's message ("The exception says: ...") is left out when an action
follows. A sentence that opens with its condition and ends in its action (``If it prints X, ...:
restore it``) is turned to lead with the action, the condition after it; an action word
inside a backticked command (``import x; print(x)``) is no action. A headline never ends in
a ``:`` that announces a list the line does not hold. A step with no action sentence is cut
at a sentence end instead; whatever is still
longer than :data:`LIMIT` + :data:`SLACK` characters (one long action sentence) is cut at a word
boundary with ``…``.
"""

from __future__ import annotations

from rootrank import lazy_regex

#: The headline's length budget (characters, after ``Fix: ``).
LIMIT = 300
#: The location lead a fix step opens with (rootrank.entry.frames.location_step,
#: setting_step): ``file:line (in func), where ...:`` or ``config, key "name" (...):``.
_LEAD = lazy_regex.compile(
    r"^(?:\S+:\d+(?: \(in [^)]*\))?, where [^:]{0,160}:|\S+, key \"[^\"]+\" \([^)]*\):"
    r"|the DeepSpeed config's \"[^\"]+\" \([^)]*\):"
    # rootrank.entry.frames.waiting_step: the line where the others waited for a silent rank
    r"|\S+:\d+: [^\n]{0,200}?\(it printed no traceback\): look at what rank \d+ did before it\.)\s"
)
#: A sentence end: ``.``, ``!`` or ``?`` then a space and a capital, a quote or a backtick
#: (not ``e.g.`` or a version ``2.1.``, whose next word is lower case or a digit).
_SENTENCE_END = lazy_regex.compile(r"(?<=[.!?])\s+(?=[A-Z\"`(])")
#: Sentences that only restate the exception's message (the message is in the report's
#: evidence lines already).
_RESTATES = ("The exception says", "The message says")
#: The verbs an action sentence starts with (the imperatives the library's fix steps use).
ACTION_VERBS = frozenset(
    """Add Align Assign Call Cast Change Check Convert Copy Create Decide Delete Disable Do
    Downgrade Drain Drop Enable Ensure Exclude Export Find Fix Free Give Guard Increase
    Install Keep Kill Launch Load Lower Make Match Move Offload Pad Pass Pin Point Put Raise
    Read Reduce Reinstall Remove Rename Repair Replace Rerun Restart Resubmit Resume Return
    Run Save Set Shard Skip Split Start Stop Take Turn Unpack Update Upgrade Use Wait Wrap
    Request Shorten Submit Report
    Allow Apply Avoid Bootstrap Clear Compare Confirm Dump Get Inspect Lengthen Look Open Print
    Rebuild Record Relaunch Restore Retry Shut Tell Unset""".split()
)
#: Where an over-long action sentence may be cut: its first clause ends there.
_CLAUSE_END = lazy_regex.compile(r";\s")
#: An action inside a sentence: after a colon or semicolon, or ``, then`` (``...: fix the
#: input it names``, ``find it with X, then reinstall it``); its verb must be one of
#: :data:`ACTION_VERBS`.
_ACTION_CLAUSE = lazy_regex.compile(r"(?:[:;]\s+|,\s+then\s+)(?P<verb>[a-z]+)\b")
#: A sentence that opens with its condition (``If it prints a path ..., restore it``).
_CONDITION = lazy_regex.compile(r"^(?:If|When|Unless|Once|Where)\b")
#: The message a restating sentence quotes: ``"..."``, from its first ``"`` to its last, so a
#: message that quotes a name of its own (``"... constraint "runs_pkey""``) stays whole.
_QUOTE = lazy_regex.compile(r"\"[^\n]+\"")
#: Where a sentence of alternatives may be cut when its first clause is still too long: the
#: first option is kept (``Either pass X (...), or make Y`` -> ``Pass X (...).``).
_ALTERNATIVE = lazy_regex.compile(r",\s+or\s")
#: The last ``": "`` of a sentence: what follows explains what precedes it.
_LAST_COLON = lazy_regex.compile(r".*:\s(?=\S)")


def _sentences(text: str) -> list[str]:
    """``text``'s sentences; a sentence end inside a quote (an odd number of ``"`` before
    it: a quoted message of several sentences, CUDA's OOM text) does not end one."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if out and out[-1].count('"') % 2:
            out[-1] = f"{out[-1]} {piece.strip()}"
        elif piece.strip():
            out.append(piece.strip())
    return [s for s in out if s]


def _is_action(sentence: str) -> bool:
    words = sentence.lstrip('`"(').split(" ", 2)
    if words[0] == "Either" and len(words) > 1:  # "Either pass X, or make Y."
        words = [words[1].capitalize()]
    return words[0].rstrip(",:") in ACTION_VERBS


def _clause(sentence: str, room: int) -> str:
    """``sentence`` cut at its first clause end (``;`` outside parentheses and outside a
    backticked command: ``for p in ...; do ...; done`` is one), else before its second
    alternative (``, or``), when it is longer than ``room``."""
    if len(sentence) <= room:
        return sentence
    for rx in (_CLAUSE_END, _ALTERNATIVE):
        for m in rx.finditer(sentence):
            head = sentence[: m.start()]
            if (
                m.start() > 20
                and head.count("(") == head.count(")")  # not inside parentheses
                and head.count("`") % 2 == 0  # nor inside a command
            ):
                if head.startswith("Either "):  # the first alternative alone
                    head = head[7:8].upper() + head[8:]
                return head.rstrip(",") + "."
    return sentence


def _contexts(sentences: list[str], action: str) -> list[str]:
    """What may stand before ``action`` to say the cause, best first: for an action on "the
    message", the sentence that quotes it; the sentence before ``action`` (not one that
    only restates the message), and that sentence's last explanation after a colon."""
    at = sentences.index(action)
    out = []
    if "the message" in action:
        # "Fix what the message names": the message's own words are what it acts on
        out += [s for s in sentences[:at] if s.startswith(_RESTATES)][:1]
    before = sentences[at - 1] if at > 0 else None
    if before is None or before.startswith(_RESTATES):
        return out
    out.append(before)
    m = _LAST_COLON.match(before)
    if m is not None:
        tail = before[m.end() :]
        out.append(tail[:1].upper() + tail[1:])
    return out


#: How far past :data:`LIMIT` a headline may run before it is cut (a sentence that ends a
#: few characters later reads better whole).
SLACK = 40


def _cap(text: str, limit: int) -> str:
    """``text`` when it is at most ``limit`` + :data:`SLACK` characters, else cut at the last
    word boundary before ``limit`` with ``…`` (the whole step is in the report's fix list)."""
    if len(text) <= limit + SLACK:
        return text
    cut = text[:limit]
    at = max(cut.rfind(", "), cut.rfind(" "))
    return (cut[:at] if at > limit // 2 else cut).rstrip(" ,;:(") + "…"


def headline(step: str, limit: int = LIMIT) -> str:
    """The one-line fix for ``step`` (see :func:`_headline`), at most ``limit`` +
    :data:`SLACK` characters: longer, it is cut at a word boundary with ``…``. A headline
    that would end in ``:`` (a list announced that the line does not hold) ends at the clause
    before it (:func:`_no_dangling_colon`)."""
    return _cap(_no_dangling_colon(_headline(step, limit)), limit)


#: The clause a headline's dangling ``:`` closes: after the last ``: `` or ``, `` before it.
_LAST_CLAUSE = lazy_regex.compile(r"(?:[:;,]\s)(?=[^:;,]*:$)")


def _no_dangling_colon(text: str) -> str:
    """``text`` without a trailing ``:`` (``Read X: it decides which it is, and one check tells
    each apart:``): cut at the clause before it (outside parentheses and commands), or the
    colon made a full stop when no clause is left to cut. Other text is returned as it is."""
    if not text.endswith(":"):
        return text
    for m in reversed(list(_LAST_CLAUSE.finditer(text))):
        head = text[: m.start()]
        if len(head) > 20 and head.count("(") == head.count(")") and head.count("`") % 2 == 0:
            return head.rstrip(" ,;:") + "."
    return text[:-1].rstrip() + "."


def _headline(step: str, limit: int = LIMIT) -> str:
    """The one-line fix for ``step`` (a fix step's text): ``step`` itself when it fits in
    ``limit`` characters, else its location lead, the sentence before its first action
    sentence (:data:`ACTION_VERBS`) when it says the cause and fits (else its last part
    after a colon, else nothing; never a :data:`_RESTATES` sentence), and that action
    sentence, cut at its first ``;`` when too long; with no action sentence, the lead and
    the sentences that fit. Never empty for a non-empty step."""
    step = step.strip()
    if len(step) <= limit:
        return step
    m = _LEAD.match(step)
    lead = m[0].strip() + " " if m else ""
    body = step[len(m[0]) :] if m else step
    sentences = _sentences(body)
    if not sentences:
        return step
    action = next((s for s in sentences if _is_action(s)), None)
    if action is not None:
        short = _clause(action, limit - len(lead))
        for context in _contexts(sentences, action):
            if len(lead) + len(context) + 1 + len(short) <= limit:
                return f"{lead}{context} {short}"
        return f"{lead}{short}"
    for sentence in sentences:
        inner = next(
            (
                m
                for m in _ACTION_CLAUSE.finditer(sentence)
                if m["verb"].capitalize() in ACTION_VERBS
                # (not a word of a backticked command: ``import x; print(x)``)
                and sentence[: m.start()].count("`") % 2 == 0
            ),
            None,
        )
        if inner is None:
            continue
        what = sentence[inner.start("verb") :]
        what = what[:1].upper() + what[1:]
        said = _QUOTE.search(sentence[: inner.start()]) if sentence.startswith(_RESTATES) else None
        if said is not None:
            # the message's own words, then what to do about them
            short = _clause(what, limit - len(lead) - len(said[0]) - 2)
            if len(lead) + len(said[0]) + len(short) + 2 <= limit:
                return f"{lead}{said[0]}. {short}"
        if _CONDITION.match(sentence):
            # "If X, Y: do Z." -> "Do Z, if X, Y.": the action first, its condition after it
            cond = sentence[: inner.start()].rstrip(" :;,")
            turned = f"{what.rstrip('.')}, {cond[:1].lower()}{cond[1:]}."
            if len(lead) + len(turned) <= limit:
                return f"{lead}{turned}"
            short = _clause(what, limit - len(lead))
            if len(lead) + len(short) <= limit:
                return f"{lead}{short}"
        whole = _clause(sentence, limit - len(lead))
        if (
            said is None
            and not sentence.startswith(_RESTATES)
            and len(lead) + len(whole) <= limit
            and len(whole) > inner.start("verb")  # the cut kept the action
        ):
            return f"{lead}{whole}"  # the condition or cause before the action, with it
        short = _clause(what, limit - len(lead))
        if len(lead) + len(short) <= limit:
            return f"{lead}{short}"
        break
    out = lead
    for s in sentences:
        if out != lead and len(out) + len(s) > limit:
            break
        out += ("" if out == lead else " ") + s
    return out.strip()
