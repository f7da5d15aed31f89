"""Kinds round 24 left open (issue #8), on fixtures of our own (real torch 2.13 CPU runs
where the kind can be run): a BrokenPipeError from a local pipe (``os.pipe``/``os.write``, a
``multiprocessing`` Connection, the process's own piped stdout) is its reader's exit on the
rank that wrote, not a network peer's reset; and no rendered fix, summary or verify of any
signature's positive fixture shows a raw ``<field>`` placeholder (a field the log did not
carry reads as the words the signature gives for it, ``entry.unknown``, or its aside is
dropped)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rootrank.engine import diagnose_paths

SIGNATURES = Path(__file__).parent.parent / "signatures"


def _diag(rel: str):
    return diagnose_paths([str(SIGNATURES / rel)], mask=False)


def test_an_os_pipe_write_in_an_mp_spawn_worker_is_the_local_readers_exit_on_that_rank():
    # a real mp.spawn run: rank 2 closed the read end of its os.pipe() and then wrote to it
    # (before: connection-reset-by-peer, rank unknown, "Find the process at <peer>")
    d = _diag("process/subprocess-pipe-reader-exited.positive-2.log")
    rc = d.root_cause
    assert rc is not None
    assert rc.signature == "subprocess-pipe-reader-exited"
    assert rc.failure_class == "user-code-exception"
    assert d.initiating_rank == 2
    assert rc.evidence[0].line == 34
    assert rc.title.startswith("BrokenPipeError writing to a local pipe")
    step = rc.fix.steps[0]
    assert "spawn_pipe.py:28" in step
    assert "Find why the reader of the pipe rank 2 writes to was gone" in step
    assert "network" not in " ".join(rc.fix.steps)
    assert rc.verify.startswith("python spawn_pipe.py  # no BrokenPipeError on rank 2")


def test_a_socket_broken_pipe_is_still_a_network_peer():
    # the near-miss writes to a TCP socket whose server closed: a peer, not a local pipe
    d = _diag("process/subprocess-pipe-reader-exited.near-miss.log")
    assert d.root_cause is not None
    assert d.root_cause.signature != "subprocess-pipe-reader-exited"
    assert "local pipe" not in d.root_cause.title


_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_BLANK = re.compile(r"<([a-z_][a-z0-9_]*)>")


def _positives() -> list[Path]:
    return sorted(SIGNATURES.glob("*/*.positive*.log"))


@pytest.mark.parametrize("chunk", range(4))
def test_no_positive_fixture_renders_a_raw_field_placeholder(library, chunk):
    """A ``<field>`` whose name is one of the signature's template fields is a field the log
    did not fill, printed raw (r24 trial finding 2: "Find the process at <peer>"). Python's
    own ``<module>`` frame name is not a blank, nor are ``<rank>``/``<host>``, the blanks a
    path the user fills keeps on purpose (``logs/<run>/attempt_0/<rank>/stderr.log``)."""
    bad: list[str] = []
    logs = _positives()[chunk::4]
    for log in logs:
        d = diagnose_paths([str(log)], mask=False)
        rc = d.root_cause
        if rc is None:
            continue
        sig = library.signatures[rc.signature]
        fields = set(_FIELD.findall(json.dumps([sig.entry, sig.fix, sig.verify], default=str)))
        texts = [*rc.fix.steps, rc.verify or "", rc.summary or ""]
        for text in texts:
            for name in _BLANK.findall(text.replace("(in <module>)", "")):
                if name in fields and name not in ("rank", "host"):
                    bad.append(f"{log.name}: <{name}> in {text[:120]!r}")
    assert len(logs) > 100
    assert bad == []
