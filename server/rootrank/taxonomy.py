"""The failure classes: ``signatures/taxonomy.json`` (in a wheel, ``rootrank/signatures/``).

Every signature names one class (``failure_class``) and every root cause carries one; the
slugs are exact and never renamed or removed (labelled cases and reports refer to them).
The file is data, read with :func:`json.loads`::

    {"schema": "rootrank.taxonomy/1", "about": str,
     "classes": [{"slug": "[a-z0-9-]+", "description": str}, ...]}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SCHEMA = "rootrank.taxonomy/1"
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class TaxonomyError(ValueError):
    """The taxonomy file is missing or malformed. ``str(e)`` names the file and the problem."""


@dataclass(frozen=True, slots=True)
class FailureClass:
    """One failure class: its slug (``cuda-oom``) and a one-sentence description."""

    slug: str
    description: str


def taxonomy_path() -> Path:
    """``rootrank/signatures/taxonomy.json`` in a wheel, else ``<repo>/signatures/taxonomy.json``."""
    here = Path(__file__).resolve().parent
    packaged = here / "signatures" / "taxonomy.json"
    return packaged if packaged.is_file() else here.parents[1] / "signatures" / "taxonomy.json"


def load_taxonomy(path: Path | None = None) -> dict[str, FailureClass]:
    """The failure classes by slug, in file order.

    Raises:
        TaxonomyError: the file cannot be read, is not JSON of the shape above, or repeats
            a slug.
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
        classes[slug] = FailureClass(slug, description.strip())
    return classes


@cache
def failure_classes() -> dict[str, FailureClass]:
    """The built-in taxonomy, read once per process (see :func:`load_taxonomy`)."""
    return load_taxonomy()


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


def markdown_page() -> str:
    """``docs/failure-classes.md``: an introduction and the taxonomy as a Markdown table."""
    rows = ["| failure_class | what it means |", "| --- | --- |"]
    rows.extend(f"| `{c.slug}` | {c.description} |" for c in failure_classes().values())
    return _PAGE_HEAD + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_page(), end="")
