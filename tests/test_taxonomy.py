"""The failure classes live in the repository (``signatures/taxonomy.json``): the loader's
checks, the generated docs page, the reports that show a class's description, and (when the
team's shared copy is beside the clone) that both lists agree slug for slug."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from rootrank.signatures import TAXONOMY, SignatureError, load_signature
from rootrank.taxonomy import TaxonomyError, describe, failure_classes, load_taxonomy, markdown_page

SHARED_TAXONOMY = ROOT.parent / "shared" / "taxonomy.md"


def test_the_repository_holds_every_class_with_a_description():
    classes = failure_classes()
    assert len(classes) == 42  # the 41 shared classes and straggler-or-slowdown
    assert set(classes) == TAXONOMY
    assert (
        describe("cuda-oom")
        == 'the GPU caching allocator could not allocate ("CUDA out of memory")'
    )
    assert describe("unclassified") == ""
    # every class states its kind (a class added without one would count against no host)
    raw = json.loads((ROOT / "signatures" / "taxonomy.json").read_text(encoding="utf-8"))
    assert all("kind" in c for c in raw["classes"])


@pytest.mark.skipif(
    not SHARED_TAXONOMY.is_file(), reason="../shared/taxonomy.md not beside the clone"
)
def test_in_step_with_the_shared_taxonomy():
    rows = re.findall(r"^\| ([a-z0-9-]+) \| (.+) \|$", SHARED_TAXONOMY.read_text(), re.M)
    shared = {slug: text for slug, text in rows if slug not in ("failure_class", "---")}
    ours = {c.slug: c.description for c in failure_classes().values()}
    # Every shared class, with its words; the repository may add classes the shared list has
    # not taken yet (add, never rename or remove).
    assert {slug: ours.get(slug) for slug in shared} == shared


def test_docs_page_is_generated_from_the_data():
    page = (ROOT / "docs" / "failure-classes.md").read_text(encoding="utf-8")
    assert page == markdown_page(), "run: python -m rootrank.taxonomy > docs/failure-classes.md"
    assert (
        '| `disk-full` | "No space left on device" while writing checkpoints, logs or caches |'
        in page
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "cannot be read"),
        ('{"schema": "other/1", "classes": []}', "must be"),
        (
            '{"schema": "rootrank.taxonomy/1", "classes": [{"slug": "Bad Slug", "description": "x"}]}',
            "classes[0].slug: must be [a-z0-9-]+",
        ),
        (
            '{"schema": "rootrank.taxonomy/1", "classes": [{"slug": "a", "description": " "}]}',
            "classes[0].description: must be non-empty text",
        ),
        (
            '{"schema": "rootrank.taxonomy/1", "classes": [{"slug": "a", "description": "x"},'
            ' {"slug": "a", "description": "y"}]}',
            "classes[1].slug: 'a' appears twice",
        ),
        (
            '{"schema": "rootrank.taxonomy/1", "kinds": [],'
            ' "classes": [{"slug": "a", "description": "x", "kind": "hardware"}]}',
            "classes[0].kind: 'hardware' is not one of the kinds",
        ),
        (
            '{"schema": "rootrank.taxonomy/1", "kinds": [{"kind": "hardware", "host": "yes",'
            ' "description": "x"}], "classes": []}',
            "kinds[0].host: must be true or false",
        ),
        (
            '{"schema": "rootrank.taxonomy/1",'
            ' "classes": [{"slug": "a", "description": "x", "process_group": 1}]}',
            "classes[0].process_group: must be true or false",
        ),
    ],
)
def test_a_malformed_taxonomy_is_refused_with_the_problem(
    tmp_path: Path, content: str, problem: str
):
    path = tmp_path / "taxonomy.json"
    path.write_text(content)
    with pytest.raises(TaxonomyError) as err:
        load_taxonomy(path)
    assert str(err.value).startswith(f"{path}: ")
    assert problem in str(err.value)


def test_a_signature_with_a_class_outside_the_taxonomy_is_refused(tmp_path: Path):
    src = ROOT / "signatures" / "memory" / "cuda-oom.yaml"
    folder = tmp_path / "memory"
    folder.mkdir()
    text = src.read_text().replace("failure_class: cuda-oom", "failure_class: gpu-too-small")
    (folder / "cuda-oom.yaml").write_text(text)
    with pytest.raises(SignatureError) as err:
        load_signature(folder / "cuda-oom.yaml")
    assert err.value.field == "failure_class"
    assert "'gpu-too-small' is not in signatures/taxonomy.json" in str(err.value)


def test_reports_name_the_class_and_say_what_it_means():
    text = run_cli("diagnose", "examples/multi-rank-hang.log").stdout.decode()
    assert (
        "  collective-desync: ranks issued different collectives, or in a different order" in text
    )
    md = run_cli("diagnose", "examples/multi-rank-hang.log", "--format", "markdown").stdout.decode()
    assert "*collective-desync*: ranks issued different collectives" in md


def test_the_classes_only_several_processes_can_have_are_data():
    """``"process_group": true`` in the taxonomy marks the classes a one-process run cannot
    have (rootrank.entry.commands reads them to tell a fragment of a launched job from a
    ``python`` run); an OOM or a user exception is not among them."""
    from rootrank.taxonomy import process_group_classes

    several = process_group_classes()
    assert {
        "port-in-use",
        "rendezvous-failure",
        "collective-timeout",
        "nccl-system-error",
    } <= several
    assert not several & {"cuda-oom", "user-code-exception", "host-oom-killed"}
