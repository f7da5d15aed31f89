"""The failure library: loading and validating signature files.

A signature is one YAML file ``signatures/<category>/<id>.yaml`` (the file name is
the id, the folder is the category). Files are parsed with ``yaml.safe_load`` (no
code execution) and every field is checked here; a wrong file raises
:class:`SignatureError` naming the file and the field. Fixtures sit beside each
signature: ``<id>.positive.log`` and ``<id>.near-miss.log``, plus wording variants
``<id>.positive-2.log``, ``<id>.near-miss-2.log``... (see ``fixture`` below).

The schema (all keys required unless marked optional)::

    id: str                      # == file stem, [a-z0-9-]+
    title: str
    failure_class: str           # a slug from signatures/taxonomy.json (rootrank.taxonomy)
    category: str                # == the folder name
    severity: error | warning
    role: cause | symptom        # symptom: usually collateral (watchdog timeout, SIGTERM...)
    specificity: int 0..100      # which signature reads a line (or one message) when
                                 # several match it; it never decides between causes
    kind: cause | symptom | terminal | hardware   # optional, default = role: terminal
                                 # events end the story (time limit, preemption, the
                                 # agent's kill, MPI abort) and an earlier fault explains
                                 # them; hardware events explain the GPU errors after them
    explained_by: [str]          # optional: what may explain this finding (a kind, a
                                 # failure class, a signature id, or `peer`: a fault on
                                 # another rank; `restart`: a fault of an attempt before
                                 # a torchrun restart; `retry`: an exception of an
                                 # appended earlier attempt on the same rank (a retry
                                 # that tolerated it); `what`: the message on the
                                 # what(): line a C++ abort printed under it), read by
                                 # rootrank.analysis.rules
    tags: [str]
    affects: [str]               # pytorch, nccl, cuda, deepspeed, hf, megatron, vllm, ...
    patterns:                    # at least one
      - literal: str             # a substring every matching line contains (case-sensitive,
                                 # or lower-case when ignorecase) -- checked before the regex
        regex: str               # `regex` module syntax, matched with search() on the cleaned
                                 # line; named groups are captures (rank, seqnum, optype, numel,
                                 # size, port, device, ...)
        ignorecase: bool         # optional, default false
    min_count: int               # optional, default 1: lines needed before it is a finding
    implied_rank: {rank: int, reason: str}  # optional: the rank this failure happens on by
                                 # design when the log names none (the TCPStore server
                                 # that fails to bind is hosted by rank 0)
    quickfix:                    # optional: one edit (or a list) the editor can apply
      - title: str               #   the code action's title
        find: str                #   regex searched on each source line (first match edited)
        replace: str             #   Match.expand template; {capture}/{rank}/{host} filled first
        files: [glob]            #   optional, workspace-relative, default ["**/*.py"]
        skip_if: str             #   optional regex: a file matching it already has the fix
    inferred:                    # optional: a finding made by comparing other findings
      from: [str]                # signature ids whose findings are compared across ranks
      differs: str               # the capture that differs on one rank (optype, numel...)
                                 # (with `inferred`, `patterns` may be an empty list)
    entry: {summary: str, mechanism: str, symptoms: [{text: str, meaning: str}]}
    fix: {steps: [str], code: {pytorch|hf|deepspeed|megatron|vllm: str}}  # code optional
                                 # optional fix.variants: [{id, when, title?, summary?,
                                 # mechanism?, steps, code?, confirm?, verify?,
                                 # sites_after?}], the default last with no when;
                                 # steps/code then default to the default variant's; a
                                 # variant's title names the failure in the headline, its
                                 # summary/mechanism replace the entry's; sites_after: true
                                 # puts the ranks' differing call sites after its first step
                                 # (they follow from what it names) (rootrank.entry.variants);
                                 # verify_quoted: true keeps its verify as rendered (it
                                 # quotes the command the log shows, not a stand-in to fit)
    confirm: [str]
    verify: str
    references: [str]            # URLs of the docs/issues that establish the facts
    related: [str]               # other signature ids (optional; unknown ids are not shown)
    fixture: {initiating_rank: int|null, line: int}   # what the positive fixture must give
      # or a list of cases, one per positive log beside the signature (wording variants):
      # - {case: positive, initiating_rank: int|null, line: int}     # <id>.positive.log
      # - {case: positive-2, initiating_rank: int|null, line: int}   # <id>.positive-2.log
      # near-miss logs need no entry: every <id>.near-miss*.log must yield no finding of it
    detector: metrics | progress | analysis  # optional, instead of `patterns`: found by the
                                 # training-curve detectors (rootrank.metrics; the id is the
                                 # onset's kind), by the causal analysis from the progress model
                                 # (a stall) or from what the log states (analysis)

Templates in ``fix``/``verify`` may use ``{name}`` for any capture, ``{rank}`` and
``{host}``; a missing value renders as ``<name>``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rootrank import lazy_regex, regex_code
from rootrank.frameworks import STACK_NAMES
from rootrank.taxonomy import failure_classes

STACKS = STACK_NAMES  # rootrank.frameworks: the stacks a log is recognised as

#: Limits that keep a hostile signature folder from hurting the engine.
MAX_SIGNATURE_FILES = 2000
MAX_FILE_BYTES = 256 * 1024
MAX_PATTERN_CHARS = 2000


def _read_yaml(p: Path) -> Any:
    """The data of the signature file ``p``, parsed by libyaml's safe loader when PyYAML was
    built with it, else the pure-Python one: both build only plain data (no Python objects,
    no code). PyYAML is imported here, not at start (the built-in library is read from its
    built JSON form, :mod:`rootrank.library_file`).

    Raises:
        SignatureError: the file is too large, cannot be read or is not valid YAML.
    """
    import yaml

    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise SignatureError(p, "(file)", f"larger than {MAX_FILE_BYTES} bytes")
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(p.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - safe loader
    except (OSError, UnicodeDecodeError) as exc:
        raise SignatureError(p, "(file)", f"cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise SignatureError(p, "(file)", f"is not valid YAML: {exc}".replace("\n", " ")) from None


_ID = lazy_regex.compile(r"^[a-z0-9][a-z0-9-]*$")


#: Who finds a signature that has no patterns: the training-curve detectors
#: (:mod:`rootrank.metrics`), the causal analysis from progress (:mod:`rootrank.analysis.stall`),
#: or the causal analysis from findings and exceptions the log states
#: (``analysis``: :func:`rootrank.analysis.prepare.zero_count_divisions`).
DETECTORS = ("metrics", "progress", "analysis")


_DECODING = threading.Lock()


class SignatureError(ValueError):
    """A signature file is wrong. ``str(e)`` is ``"<file>: <field>: <what is wrong>"``."""

    def __init__(self, path: str | os.PathLike[str], field_name: str, problem: str) -> None:
        self.path = str(path)
        self.field = field_name
        self.problem = problem
        super().__init__(f"{self.path}: {field_name}: {problem}")


class Pattern:
    """One way a signature shows in a log line: a cheap literal and the regex behind it.

    ``regex`` is compiled on first use (most patterns never see a line that holds their
    literal, and compiling ~200 patterns would cost half a second at every start);
    :func:`load_signature` with ``eager=True`` compiles at load to validate.
    """

    __slots__ = ("literal", "source", "ignorecase", "_compiled")

    def __init__(
        self, literal: str, source: str, ignorecase: bool = False, compiled: Any = None
    ) -> None:
        self.literal = literal
        self.source = source
        self.ignorecase = ignorecase
        self._compiled = compiled

    @property
    def regex(self) -> Any:
        """The compiled ``regex.Pattern``."""
        if self._compiled is None:
            flags = regex_code.IGNORECASE if self.ignorecase else 0
            self._compiled = regex_code.compile(self.source, flags)  # parsed at build time
        return self._compiled

    def __repr__(self) -> str:
        return f"Pattern(literal={self.literal!r}, source={self.source!r})"


@dataclass(frozen=True, slots=True)
class Signature:
    """One failure pattern with its entry. Built only by :func:`load_signature`."""

    id: str
    title: str
    failure_class: str
    category: str
    severity: str
    role: str
    specificity: int
    tags: tuple[str, ...]
    affects: tuple[str, ...]
    patterns: tuple[Pattern, ...]
    min_count: int
    entry: dict[str, Any]
    fix: dict[str, Any]
    confirm: tuple[str, ...]
    verify: str
    references: tuple[str, ...]
    related: tuple[str, ...]
    fixture: dict[str, Any]
    path: str
    inferred: dict[str, Any] | None = None
    detector: str | None = None
    implied_rank: int | None = None
    implied_rank_reason: str = ""
    explained_by: tuple[str, ...] = ()
    data: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)
    #: What the finding is in the causal story (see KINDS); defaults to ``role``.
    kind: str = ""
    #: Every positive fixture case: ``{"case": "positive-2", "initiating_rank", "line"}``.
    fixtures: tuple[dict[str, Any], ...] = ()
    #: A signature read from the library's built form (:mod:`rootrank.library_file`) keeps
    #: ``data`` as its JSON text here (``str``, or its UTF-8 bytes: a ``memoryview`` of the
    #: built file), and ``data``, ``entry`` and ``fix`` (its mappings) are decoded on first
    #: use: a report shows the entries of a few signatures, not 300.
    _body: str | memoryview = field(default="", init=False, repr=False, compare=False)

    if not TYPE_CHECKING:  # (mypy still checks every other attribute name)

        def __getattr__(self, name: str) -> Any:
            # Reached only for an unset slot: data, entry or fix of a built signature.
            if name not in ("data", "entry", "fix"):
                raise AttributeError(name)
            with _DECODING:
                try:
                    return object.__getattribute__(self, name)  # another thread decoded it
                except AttributeError:
                    pass
                body = object.__getattribute__(self, "_body")
                data = json.loads(body if type(body) is str else str(body, "utf-8"))
                object.__setattr__(self, "entry", data["entry"])
                object.__setattr__(self, "fix", data["fix"])
                object.__setattr__(self, "data", data)
                return object.__getattribute__(self, name)

    def to_entry(self) -> dict[str, Any]:
        """The signature as a JSON-ready entry (what ``rootrank.signature`` returns)."""
        return {
            "id": self.id,
            "title": self.title,
            "failure_class": self.failure_class,
            "category": self.category,
            "severity": self.severity,
            "role": self.role,
            "tags": list(self.tags),
            "affects": list(self.affects),
            "entry": self.entry,
            "fix": self.fix,
            "confirm": list(self.confirm),
            "verify": self.verify,
            "references": list(self.references),
            "related": list(self.related),
            "patterns": [p.source for p in self.patterns],
        }


def _need(d: dict[str, Any], key: str, typ: type | tuple[type, ...], path: Path) -> Any:
    if key not in d:
        raise SignatureError(path, key, "missing")
    value = d[key]
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is int):
        name = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise SignatureError(path, key, f"must be {name}, got {type(value).__name__}")
    if isinstance(value, str) and not value.strip():
        raise SignatureError(path, key, "must not be empty")
    return value


def _str_list(d: dict[str, Any], key: str, path: Path, *, required: bool = True) -> tuple[str, ...]:
    if key not in d and not required:
        return ()
    items = _need(d, key, list, path)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise SignatureError(path, f"{key}[{i}]", "must be a non-empty string")
    return tuple(items)


def _compile_pattern(raw: Any, where: str, path: Path, eager: bool) -> Pattern:
    if not isinstance(raw, dict):
        raise SignatureError(path, where, "must be a mapping with literal and regex")
    literal = _need(raw, "literal", str, path)
    source = _need(raw, "regex", str, path)
    ignorecase = raw.get("ignorecase", False)
    if not isinstance(ignorecase, bool):
        raise SignatureError(path, f"{where}.ignorecase", "must be true or false")
    if len(source) > MAX_PATTERN_CHARS:
        raise SignatureError(path, f"{where}.regex", f"longer than {MAX_PATTERN_CHARS} characters")
    compiled = None
    if eager:
        try:
            compiled = regex_code.compile(source, regex_code.IGNORECASE if ignorecase else 0)
        except regex_code.error as exc:
            raise SignatureError(path, f"{where}.regex", f"does not compile: {exc}") from None
    lit = literal.lower() if ignorecase else literal
    # The literal is a pre-filter: every line the regex matches must contain it.
    probe = regex_code.sub(r"\\(.)", r"\1", lit)
    if ignorecase and literal != literal.lower():
        raise SignatureError(path, f"{where}.literal", "must be lower-case when ignorecase")
    if not probe:
        raise SignatureError(path, f"{where}.literal", "must not be empty")
    if compiled is not None:
        # A pattern from a team's folder is probed for catastrophic backtracking before it
        # is accepted (the built-in ones are probed by the test suite).
        from rootrank.regex_safety import check

        problem = check(compiled, lit, budget_s=0.05, length=4096)
        if problem:
            raise SignatureError(path, f"{where}.regex", problem)
    return Pattern(lit, source, ignorecase, compiled)


def _check_quickfix(raw: Any, path: Path) -> None:
    if raw is None:
        return
    items = raw if isinstance(raw, list) else [raw]
    for i, item in enumerate(items):
        where = f"quickfix[{i}]"
        if not isinstance(item, dict):
            raise SignatureError(path, where, "must be a mapping with title, find and replace")
        for key in ("title", "find", "replace"):
            _need(item, key, str, path)
        for key in ("find", "skip_if"):
            if key in item:
                try:
                    regex_code.compile(item[key])
                except (regex_code.error, TypeError) as exc:
                    raise SignatureError(
                        path, f"{where}.{key}", f"does not compile: {exc}"
                    ) from None
        files = item.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise SignatureError(path, f"{where}.files", "must be a list of globs")


def _check_variants(fix: dict[str, Any], path: Path) -> None:
    """Validate ``fix.variants`` (see :mod:`rootrank.entry.variants`): a list of ``{id,
    when, title?, steps, code?, confirm?, verify?, sites_after?, verify_quoted?}`` with unique ids, every ``when`` valid, the last
    one the default (no ``when``). The default's ``steps``/``code`` become ``fix.steps`` /
    ``fix.code`` when those are not written (readers that know no variants see the default).
    """
    from rootrank.entry.variants import check_when

    variants = fix["variants"]
    if not isinstance(variants, list) or len(variants) < 2:
        raise SignatureError(
            path, "fix.variants", "must be a list of at least two variants (the default last)"
        )
    seen: set[str] = set()
    for i, v in enumerate(variants):
        where = f"fix.variants[{i}]"
        if not isinstance(v, dict):
            raise SignatureError(path, where, "must be a mapping with id, when and steps")
        unknown = set(v) - {
            "id",
            "when",
            "title",
            "summary",
            "mechanism",
            "steps",
            "code",
            "confirm",
            "verify",
            "sites_after",
            "verify_quoted",
        }
        if unknown:
            raise SignatureError(path, f"{where}.{sorted(unknown)[0]}", "unknown key")
        vid = v.get("id")
        if not isinstance(vid, str) or not _ID.match(vid) or vid in seen:
            raise SignatureError(path, f"{where}.id", "must be a unique [a-z0-9-] id")
        seen.add(vid)
        _str_list(v, "steps", path)
        if "confirm" in v:
            _str_list(v, "confirm", path)
        if "verify" in v and (not isinstance(v["verify"], str) or not v["verify"].strip()):
            raise SignatureError(path, f"{where}.verify", "must be non-empty text")
        for key in ("title", "summary", "mechanism"):
            if key in v and (not isinstance(v[key], str) or not v[key].strip()):
                raise SignatureError(path, f"{where}.{key}", "must be non-empty text")
        for flag in ("sites_after", "verify_quoted"):
            if flag in v and not isinstance(v[flag], bool):
                raise SignatureError(path, f"{where}.{flag}", "must be true or false")
        from rootrank.verify_check import cannot_fail  # loading YAML only, not the built library

        if "verify" in v and (why := cannot_fail(v["verify"])):
            raise SignatureError(path, f"{where}.verify", f"cannot fail: {why}")
        code = v.get("code", {})
        if not isinstance(code, dict) or any(
            k not in STACKS or not isinstance(c, str) for k, c in code.items()
        ):
            raise SignatureError(
                path, f"{where}.code", f"must map a stack ({', '.join(STACKS)}) to code"
            )
        last = i == len(variants) - 1
        if last and "when" in v:
            raise SignatureError(
                path, f"{where}.when", "the last variant is the default: it has no when"
            )
        if not last:
            problem = check_when(v.get("when"))
            if problem:
                raise SignatureError(path, f"{where}.when", problem)
    fix.setdefault("steps", list(variants[-1]["steps"]))
    if "code" in variants[-1]:
        fix.setdefault("code", dict(variants[-1]["code"]))


class SignatureProblems(SignatureError):
    """Several fields of one signature file are wrong: ``problems`` lists each (in the
    file's field order); ``str(e)`` is the first one plus how many more."""

    def __init__(self, problems: list[SignatureError]) -> None:
        first = problems[0]
        super().__init__(first.path, first.field, first.problem)
        self.problems = problems
        if len(problems) > 1:
            self.args = (f"{first} (and {len(problems) - 1} more problem(s) in this file)",)


class _Collector:
    """Runs independent field checks and keeps every :class:`SignatureError` they raise."""

    def __init__(self) -> None:
        self.problems: list[SignatureError] = []

    @contextmanager
    def field(self) -> Iterator[None]:
        try:
            yield
        except SignatureProblems as exc:
            self.problems.extend(exc.problems)
        except SignatureError as exc:
            self.problems.append(exc)


def load_signature(path: str | os.PathLike[str], *, eager: bool = True) -> Signature:
    """Load and validate one signature file (``eager``: compile its regexes now, so a bad
    one is reported at load; the built-in library is compiled lazily, and its tests
    compile every pattern). Every field is checked, so one call reports every problem.

    Raises:
        SignatureError: naming the file and the field that is wrong: a
            :class:`SignatureProblems` (listing them all) when fields are wrong, a plain
            one when the file itself cannot be read or parsed.
    """
    p = Path(path)
    data = _read_yaml(p)
    if not isinstance(data, dict):
        raise SignatureError(p, "(file)", "must be a YAML mapping")

    check = _Collector()
    sig_id = category = failure_class = severity = role = title = verify = ""
    specificity, min_count = 0, 1
    raw_patterns: list[Any] = []
    patterns: tuple[Pattern, ...] = ()
    inferred: dict[str, Any] | None = None
    implied_rank: int | None = None
    implied_reason = ""
    entry: dict[str, Any] = {}
    fix: dict[str, Any] = {}
    fixture: dict[str, Any] = {}
    tags: tuple[str, ...] = ()
    affects: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    explained_by: tuple[str, ...] = ()
    detector: str | None = None
    fixtures: tuple[dict[str, Any], ...] = ()
    kind = ""

    with check.field():
        if "id" not in data:  # the file name is the id, written in the file too
            raise SignatureError(p, "id", f"missing: write `id: {p.stem}` (the file name)")
        sig_id = _need(data, "id", str, p)
        if sig_id != p.stem or not _ID.match(sig_id):
            raise SignatureError(p, "id", f"must equal the file name {p.stem!r} and be [a-z0-9-]")
    with check.field():
        title = _need(data, "title", str, p)
    with check.field():
        if "category" not in data:  # the folder is the category
            raise SignatureError(
                p, "category", f"missing: write `category: {p.parent.name}` (the folder name)"
            )
        category = _need(data, "category", str, p)
        if category != p.parent.name:
            raise SignatureError(p, "category", f"must equal the folder name {p.parent.name!r}")
    with check.field():
        failure_class = _need(data, "failure_class", str, p)
        if failure_class not in TAXONOMY:
            raise SignatureError(
                p, "failure_class", f"{failure_class!r} is not in signatures/taxonomy.json"
            )
    with check.field():
        severity = _need(data, "severity", str, p)
        if severity not in ("error", "warning"):
            raise SignatureError(p, "severity", "must be error or warning")
    with check.field():
        role = _need(data, "role", str, p)
        if role not in ("cause", "symptom"):
            raise SignatureError(p, "role", "must be cause or symptom")
    with check.field():
        specificity = _need(data, "specificity", int, p)
        if not 0 <= specificity <= 100:
            raise SignatureError(p, "specificity", "must be 0..100")
    with check.field():
        tags = _str_list(data, "tags", p)
    with check.field():
        affects = _str_list(data, "affects", p)
    with check.field():
        explained_by = _str_list(data, "explained_by", p, required=False)
    with check.field():
        # Onsets of the training curves and stalls have no patterns: a detector finds them.
        detector = data.get("detector")
        if detector is not None and detector not in DETECTORS:
            raise SignatureError(p, "detector", f"must be one of {', '.join(DETECTORS)}")
        if detector is not None and data.get("patterns"):
            raise SignatureError(p, "patterns", f"must be absent with detector: {detector}")
    with check.field():
        raw_patterns = [] if data.get("detector") is not None else _need(data, "patterns", list, p)
    with check.field():
        raw_inferred = data.get("inferred")
        if raw_inferred is not None:
            if not isinstance(raw_inferred, dict):
                raise SignatureError(p, "inferred", "must be a mapping with from and differs")
            sources = _str_list(raw_inferred, "from", p)
            if not sources:
                raise SignatureError(p, "inferred.from", "must name at least one signature id")
            _need(raw_inferred, "differs", str, p)
            inferred = {"from": sources, "differs": raw_inferred["differs"]}
    with check.field():
        implied = data.get("implied_rank")
        if implied is not None:
            if not isinstance(implied, dict):
                raise SignatureError(p, "implied_rank", "must be a mapping with rank and reason")
            implied_rank = _need(implied, "rank", int, p)
            implied_reason = _need(implied, "reason", str, p)
    with check.field():
        _check_quickfix(data.get("quickfix"), p)
    with check.field():
        if not raw_patterns and inferred is None and "patterns" in data:
            raise SignatureError(p, "patterns", "must have at least one pattern")
    compiled: list[Pattern] = []
    for i, raw in enumerate(raw_patterns):
        with check.field():
            compiled.append(_compile_pattern(raw, f"patterns[{i}]", p, eager))
    patterns = tuple(compiled)
    with check.field():
        min_count = data.get("min_count", 1)
        if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            raise SignatureError(p, "min_count", "must be an integer >= 1")

    with check.field():
        entry = _need(data, "entry", dict, p)
    for key in ("summary", "mechanism"):
        with check.field():
            if isinstance(data.get("entry"), dict):
                _need(entry, key, str, p)
    with check.field():
        symptoms = entry.get("symptoms", [])
        if not isinstance(symptoms, list) or not all(
            isinstance(s, dict)
            and isinstance(s.get("text"), str)
            and isinstance(s.get("meaning"), str)
            for s in symptoms
        ):
            raise SignatureError(p, "entry.symptoms", "must be a list of {text, meaning}")
    with check.field():
        fix = _need(data, "fix", dict, p)
    with check.field():
        if isinstance(data.get("fix"), dict) and "variants" in fix:
            _check_variants(fix, p)  # fills fix.steps/code from the default variant
    with check.field():
        if isinstance(data.get("fix"), dict):
            _str_list(fix, "steps", p)
    with check.field():
        code = fix.get("code", {})
        if not isinstance(code, dict):
            raise SignatureError(p, "fix.code", "must be a mapping of stack to code")
    for stack, snippet in code.items() if isinstance(code, dict) else ():
        with check.field():
            if stack not in STACKS:
                raise SignatureError(
                    p, f"fix.code.{stack}", f"stack must be one of {', '.join(STACKS)}"
                )
            if not isinstance(snippet, str) or not snippet.strip():
                raise SignatureError(p, f"fix.code.{stack}", "must be non-empty text")
    with check.field():
        confirm = _str_list(data, "confirm", p)
    with check.field():
        verify = _need(data, "verify", str, p)
        from rootrank.verify_check import cannot_fail  # loading YAML only, not the built library

        if why := cannot_fail(verify):  # a verify that exits 0 whatever happened proves nothing
            raise SignatureError(p, "verify", f"cannot fail: {why}")
    with check.field():
        references = _str_list(data, "references", p)
        if not references:
            raise SignatureError(p, "references", "must name at least one doc or issue")
    for i, ref in enumerate(references):
        with check.field():
            if not ref.startswith("https://"):
                raise SignatureError(p, f"references[{i}]", "must be an https:// URL")
    with check.field():
        related = _str_list(data, "related", p, required=False)
    with check.field():
        fixtures = _fixture_cases(data, p)
        fixture = fixtures[0]
    with check.field():
        kind = _kind(data, role if role in ("cause", "symptom") else "cause", p)
    if check.problems:
        raise SignatureProblems(check.problems)

    return Signature(
        id=sig_id,
        title=title,
        failure_class=failure_class,
        category=category,
        severity=severity,
        role=role,
        specificity=specificity,
        tags=tags,
        affects=affects,
        patterns=patterns,
        min_count=min_count,
        entry=entry,
        fix=fix,
        confirm=confirm,
        verify=verify,
        references=references,
        related=related,
        fixture=fixture,
        path=str(p),
        inferred=inferred,
        detector=detector,
        implied_rank=implied_rank,
        implied_rank_reason=implied_reason,
        explained_by=explained_by,
        data=data,
        kind=kind,
        fixtures=fixtures,
    )


# -- Library v2: fixture cases and kind ---------------------------------------------------------

#: ``kind`` values: ``cause``/``symptom`` (as ``role``), ``terminal`` (the end of the story: a
#: time limit, a preemption, the agent's SIGKILL, an MPI abort banner, restarts exhausted;
#: an earlier fault explains it) and ``hardware`` (a device or fabric fault: an Xid, ECC, a
#: GPU off the bus; it explains the CUDA/NCCL errors that follow).
KINDS = ("cause", "symptom", "terminal", "hardware")
_CASE = lazy_regex.compile(r"^positive(?:-[a-z0-9][a-z0-9-]*)?$")


def _kind(data: dict[str, Any], role: str, path: Path) -> str:
    """``kind`` from the file, else ``role``. Raises SignatureError on an unknown value."""
    kind = data.get("kind", role)
    if kind not in KINDS:
        raise SignatureError(path, "kind", f"must be one of {', '.join(KINDS)}")
    return kind


def _fixture_cases(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], ...]:
    """The positive fixture cases: ``fixture`` as one mapping (the case ``positive``) or a
    list of mappings each naming its ``case`` (the log ``<id>.<case>.log``), every one with
    ``initiating_rank`` (int or null) and ``line`` (1-based). Raises SignatureError."""
    raw = data.get("fixture")
    if raw is None:
        raise SignatureError(path, "fixture", "missing")
    items = [dict(raw, case=raw.get("case", "positive"))] if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not items:
        raise SignatureError(path, "fixture", "must be a mapping or a non-empty list of cases")
    seen: set[str] = set()
    cases = []
    for i, case in enumerate(items):
        where = "fixture" if isinstance(raw, dict) else f"fixture[{i}]"
        if not isinstance(case, dict):
            raise SignatureError(path, where, "must be a mapping with case, initiating_rank, line")
        name = case.get("case")
        if not isinstance(name, str) or not _CASE.match(name) or name in seen:
            raise SignatureError(path, f"{where}.case", "must be a unique positive[-suffix] name")
        seen.add(name)
        if "initiating_rank" not in case or not (
            case["initiating_rank"] is None
            or (
                isinstance(case["initiating_rank"], int)
                and not isinstance(case["initiating_rank"], bool)
            )
        ):
            raise SignatureError(path, f"{where}.initiating_rank", "must be an integer or null")
        line = case.get("line")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise SignatureError(path, f"{where}.line", "must be a 1-based line number")
        cases.append({"case": name, "initiating_rank": case["initiating_rank"], "line": line})
    return tuple(cases)


def builtin_dir() -> Path:
    """The bundled library: ``rootrank/signatures`` in a wheel, else ``<repo>/signatures``."""
    here = Path(__file__).resolve().parent
    packaged = here / "signatures"
    if packaged.is_dir():
        return packaged
    return here.parents[1] / "signatures"


#: The slugs of the failure classes (``signatures/taxonomy.json``, see :mod:`rootrank.taxonomy`).
TAXONOMY: frozenset[str] = frozenset(failure_classes())


@dataclass(slots=True)
class Library:
    """A loaded set of signatures, by id, with the problems met while loading."""

    signatures: dict[str, Signature]
    problems: list[SignatureError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.signatures)

    def get(self, sig_id: str) -> Signature | None:
        return self.signatures.get(sig_id)


def load_library(
    extra_dirs: list[str | os.PathLike[str]] | None = None, *, strict: bool = False
) -> Library:
    """Load the built-in signatures and any extra folders (a team's own signatures).

    A bad file in an extra folder is skipped and recorded in ``Library.problems``; the
    rest still load. A folder with more than ``MAX_SIGNATURE_FILES`` files is refused
    whole (one problem). An extra signature with the id of a built-in one replaces it.

    Raises:
        SignatureError: with ``strict=True``, on the first bad file (the built-in library
            is always loaded strictly: a broken built-in file is a bug).
    """
    from rootrank.library_file import load_builtin

    lib = Library(signatures={})
    load_builtin(lib)  # the built JSON form when current, else the YAML files (same records)
    for extra in extra_dirs or []:
        _load_dir(Path(extra), lib, strict=strict, eager=True)
    return lib


def _load_dir(root: Path, lib: Library, *, strict: bool, eager: bool = True) -> None:
    if not root.is_dir():
        err = SignatureError(root, "(folder)", "is not a folder")
        if strict:
            raise err
        lib.problems.append(err)
        return
    files: list[Path] = []
    for dirpath, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            if name.endswith((".yaml", ".yml")):
                files.append(Path(dirpath) / name)
                if len(files) > MAX_SIGNATURE_FILES:
                    err = SignatureError(
                        root, "(folder)", f"more than {MAX_SIGNATURE_FILES} signature files"
                    )
                    if strict:
                        raise err
                    lib.problems.append(err)
                    return
    seen: dict[str, str] = {}
    for f in sorted(files):
        try:
            sig = load_signature(f, eager=eager)
        except SignatureError as err:
            if strict:
                raise
            lib.problems.extend(err.problems if isinstance(err, SignatureProblems) else [err])
            continue
        if sig.id in seen:
            duplicate = SignatureError(f, "id", f"duplicate of {seen[sig.id]}")
            if strict:
                raise duplicate
            lib.problems.append(duplicate)
            continue
        seen[sig.id] = str(f)
        lib.signatures[sig.id] = sig
