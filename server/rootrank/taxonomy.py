"""The failure classes: ``signatures/taxonomy.json`` (in a wheel, ``rootrank/signatures/``).

Every signature names one class (``failure_class``) and every root cause carries one; the
slugs are exact and never renamed or removed (labelled cases and reports refer to them).
The file is data, read with :func:`json.loads`::

    {"schema": "rootrank.taxonomy/1", "about": str,
     "kinds": [{"kind": "[a-z0-9-]+", "host": bool, "description": str}, ...],
     "classes": [{"slug": "[a-z0-9-]+", "description": str, "kind": str,
                  "process_group": bool, "check": str}, ...]}

A class's ``kind`` says where such failures come from (``hardware``, ``job-resources``,
``software``...); a kind with ``"host": true`` is the machine's doing, so ``rootrank triage``
counts those failures against the host that initiated them (:func:`host_kinds`). ``kinds``
and ``kind`` may be left out (a file written before them): every class is then
``software``, which counts against no host. ``process_group: true`` (default false) marks a
class only a job of several processes can have (a rendezvous, its port, a collective, a process
group's transport): :func:`process_group_classes`. ``check`` (optional) is a command that
checks the class's cause or fix without the job's launch (:func:`class_check`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rootrank import re_code

SCHEMA = "rootrank.taxonomy/1"
_SLUG = re_code.compile(r"^[a-z0-9][a-z0-9-]*$")


class TaxonomyError(ValueError):
    """The taxonomy file is missing or malformed. ``str(e)`` names the file and the problem."""


#: The kind of a class that names none (and of ``unclassified`` or a team's own class).
DEFAULT_KIND = "software"


@dataclass(frozen=True, slots=True)
class FailureClass:
    """One failure class: its slug (``cuda-oom``), a one-sentence description, its kind
    (a :class:`Kind`'s name) and whether only a job of several processes can have it."""

    slug: str
    description: str
    kind: str = DEFAULT_KIND
    process_group: bool = False
    #: A command that checks this class's cause or fix without the job's own launch (a
    #: versions print, a device or memory query), for a log that shows no launch command;
    #: it may name ``{packages}`` (the installed packages the traceback runs through). ``""``
    #: when the class has none.
    check: str = ""


@dataclass(frozen=True, slots=True)
class Kind:
    """Where failures of some classes come from: ``host`` says whether they are the
    machine's doing (counted against the host that initiated them by ``rootrank triage``)."""

    name: str
    host: bool
    description: str


@dataclass(frozen=True, slots=True)
class Taxonomy:
    """The classes by slug and the kinds by name, each in file order."""

    classes: dict[str, FailureClass]
    kinds: dict[str, Kind]


def taxonomy_path() -> Path:
    """``rootrank/signatures/taxonomy.json`` in a wheel, else ``<repo>/signatures/taxonomy.json``."""
    here = Path(__file__).resolve().parent
    packaged = here / "signatures" / "taxonomy.json"
    return packaged if packaged.is_file() else here.parents[1] / "signatures" / "taxonomy.json"


def load_taxonomy(path: Path | None = None) -> dict[str, FailureClass]:
    """The failure classes by slug, in file order (see :func:`load_full`)."""
    return load_full(path).classes


def load_full(path: Path | None = None) -> Taxonomy:
    """The failure classes by slug and their kinds by name, in file order.

    Raises:
        TaxonomyError: the file cannot be read, is not JSON of the shape above, repeats a
            slug or a kind, a class names a kind the file does not list, or its
            ``process_group`` is not a boolean.
    """
    p = path or taxonomy_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaxonomyError(f"{p}: cannot be read: {exc}") from None
    if (
        not isinstance(data, dict)
        or data.get("schema") != SCHEMA
        or not isinstance(data.get("classes"), list)
    ):
        raise TaxonomyError(f'{p}: must be {{"schema": "{SCHEMA}", "classes": [...]}}')
    kinds = _load_kinds(p, data.get("kinds", []))
    classes: dict[str, FailureClass] = {}
    for i, item in enumerate(data["classes"]):
        slug = item.get("slug") if isinstance(item, dict) else None
        description = item.get("description") if isinstance(item, dict) else None
        if not isinstance(slug, str) or not _SLUG.match(slug):
            raise TaxonomyError(f"{p}: classes[{i}].slug: must be [a-z0-9-]+")
        if not isinstance(description, str) or not description.strip():
            raise TaxonomyError(f"{p}: classes[{i}].description: must be non-empty text")
        if slug in classes:
            raise TaxonomyError(f"{p}: classes[{i}].slug: {slug!r} appears twice")
        kind = item.get("kind", DEFAULT_KIND)
        if kind != DEFAULT_KIND and kind not in kinds:
            raise TaxonomyError(f"{p}: classes[{i}].kind: {kind!r} is not one of the kinds")
        process_group = item.get("process_group", False)
        if not isinstance(process_group, bool):
            raise TaxonomyError(f"{p}: classes[{i}].process_group: must be true or false")
        check = item.get("check", "")
        if not isinstance(check, str):
            raise TaxonomyError(f"{p}: classes[{i}].check: must be text")
        classes[slug] = FailureClass(slug, description.strip(), kind, process_group, check.strip())
    return Taxonomy(classes, kinds)


def _load_kinds(p: Path, raw: object) -> dict[str, Kind]:
    """The ``kinds`` list, validated field by field."""
    if not isinstance(raw, list):
        raise TaxonomyError(f"{p}: kinds: must be a list")
    kinds: dict[str, Kind] = {}
    for i, item in enumerate(raw):
        name = item.get("kind") if isinstance(item, dict) else None
        if not isinstance(name, str) or not _SLUG.match(name):
            raise TaxonomyError(f"{p}: kinds[{i}].kind: must be [a-z0-9-]+")
        if name in kinds:
            raise TaxonomyError(f"{p}: kinds[{i}].kind: {name!r} appears twice")
        host = item.get("host")
        if not isinstance(host, bool):
            raise TaxonomyError(f"{p}: kinds[{i}].host: must be true or false")
        description = item.get("description")
        if not isinstance(description, str) or not description.strip():
            raise TaxonomyError(f"{p}: kinds[{i}].description: must be non-empty text")
        kinds[name] = Kind(name, host, description.strip())
    return kinds


@cache
def _builtin() -> Taxonomy:
    return load_full()


def failure_classes() -> dict[str, FailureClass]:
    """The built-in taxonomy's classes, read once per process (see :func:`load_full`)."""
    return _builtin().classes


def kinds() -> dict[str, Kind]:
    """The built-in taxonomy's kinds by name, in file order."""
    return _builtin().kinds


def host_kinds() -> frozenset[str]:
    """The kinds whose failures are the machine's doing (``"host": true``)."""
    return frozenset(k.name for k in kinds().values() if k.host)


def process_group_classes() -> frozenset[str]:
    """The classes only a job of several processes can have (``"process_group": true``):
    a log fragment that shows one of them is not a one-process run."""
    return frozenset(c.slug for c in failure_classes().values() if c.process_group)


def kind_of(slug: str | None) -> str:
    """The kind of a class; :data:`DEFAULT_KIND` for ``None``, ``unclassified`` or a slug
    the taxonomy does not hold (a team's own class)."""
    found = failure_classes().get(slug or "")
    return found.kind if found else DEFAULT_KIND


def class_check(slug: str | None) -> str:
    """The class's standalone check command (``check``), ``""`` when it has none."""
    found = failure_classes().get(slug or "")
    return found.check if found else ""


def describe(slug: str) -> str:
    """The description of a class, or ``""`` for a slug the taxonomy does not hold
    (``unclassified``, a team's own class)."""
    found = failure_classes().get(slug)
    return found.description if found else ""


_PAGE_HEAD = """\
# Failure classes

Every root cause that rootrank reports carries one `failure_class` from this list, and every
signature names one. Signatures are finer than classes (many signatures map to one class).
The list is data: [`signatures/taxonomy.json`](../signatures/taxonomy.json) (read by
`rootrank.taxonomy`, the signature check, the reports and the language server); this page is
generated from it with `python -m rootrank.taxonomy > docs/failure-classes.md`
(`tests/test_taxonomy.py` fails when they differ). Add a class when a real failure fits none
of these; never rename or remove one, because labelled cases and reports refer to them.

"""


_KINDS_HEAD = """
## Kinds

Each class has a kind: where such failures come from. `rootrank triage` counts a host's
failures of the kinds marked *host* against it ([triage.md](triage.md)); the others would
have failed on any machine (a user's CUDA OOM, an exception in the training script).

"""


def markdown_page() -> str:
    """``docs/failure-classes.md``: an introduction, the taxonomy as a Markdown table, and
    the kinds with their classes."""
    rows = ["| failure_class | what it means |", "| --- | --- |"]
    rows.extend(f"| `{c.slug}` | {c.description} |" for c in failure_classes().values())
    kind_rows = ["| kind | host | what it means | classes |", "| --- | --- | --- | --- |"]
    for kind in kinds().values():
        members = ", ".join(
            f"`{c.slug}`" for c in failure_classes().values() if c.kind == kind.name
        )
        host = "host" if kind.host else ""
        kind_rows.append(f"| `{kind.name}` | {host} | {kind.description} | {members} |")
    return _PAGE_HEAD + "\n".join(rows) + "\n" + _KINDS_HEAD + "\n".join(kind_rows) + "\n"


if __name__ == "__main__":
    print(markdown_page(), end="")
