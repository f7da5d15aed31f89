"""The analysis's first stage is a registry of named steps read in order
(:mod:`rootrank.analysis.prepare_steps`): every step is named once, says what it adds and how,
and the run of them is what :func:`rootrank.analysis.prepare.prepare` does."""

from __future__ import annotations

from pathlib import Path

from rootrank.analysis.prepare import prepare
from rootrank.analysis.prepare_steps import CONTEXT_STEPS, STEPS, Draft
from rootrank.engine import default_library, matcher_for
from rootrank.ingest import text_blocks
from rootrank.scan import Scanner

ROOT = Path(__file__).resolve().parents[1]


def test_every_step_is_named_once_and_documented() -> None:
    names = [name for name, _ in (*STEPS, *CONTEXT_STEPS)]
    assert len(names) == len(set(names))
    for name, step in (*STEPS, *CONTEXT_STEPS):
        assert name.isidentifier() and name == name.lower(), name
        assert step.__doc__ and len(step.__doc__.split()) >= 8, name


def test_the_steps_run_in_order_are_what_prepare_builds() -> None:
    """A real failure's fixture: the draft after the steps holds the findings ``prepare``
    gives, in log order, and the set-asides start empty before their step."""
    log = ROOT / "signatures" / "collective" / "collective-after-run-end.positive.log"
    library = default_library()
    scanner = Scanner(matcher_for(library))
    scanner.scan_source(log.name, text_blocks(log.read_text(encoding="utf-8")))
    state = scanner.state
    ctx = prepare(state, library)
    draft = Draft(state, library)
    assert draft.findings == [] and draft.completed is None
    for _name, step in STEPS:
        step(draft)
    assert [f.signature for f in draft.findings] == [f.signature for f in ctx.findings]
    assert "collective-after-run-end" in [f.signature for f in draft.findings]
    orders = [f.order for f in draft.findings]
    assert orders == sorted(orders)
