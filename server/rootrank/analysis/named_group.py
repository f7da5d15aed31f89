"""The process group a timed-out collective ran on, when a library named it.

Mechanism: ProcessGroupNCCL prefixes its watchdog lines with the group's id and description:
``[PG ID 3 PG GUID 7(mesh_cp) Rank 1] Watchdog caught collective operation timeout``. The
default group is ``default_pg``, and a group made by ``dist.new_group()`` without a
``group_desc`` is ``undefined``; any other description was given by the code that created
the group: a parallel library's own groups (DeviceMesh names each dimension's group
``mesh_<dim>``; sequence-, context-, expert- or pipeline-parallel groups of a training or
inference library). A hang on such a group is inside that library's communication schedule
(its all-to-all or all-gather of a sequence-parallel attention, an expert dispatch), not in
the user's data loop: the user's sampler advice does not apply, the group's owner does.

Needed: a finding of class ``collective-timeout`` whose evidence holds the prefix with a
description other than :data:`UNNAMED`. The finding gets the ``pg_desc`` capture (read by
the fix variants' ``when: captures``); its signature, rank and lines stay as they were.
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.model import Finding
from rootrank.signatures import Library

#: Descriptions no library chose: the default group and new_group() without group_desc.
UNNAMED = frozenset({"default_pg", "undefined", ""})
#: ProcessGroupNCCL's log prefix naming the group: ``[PG ID 3 PG GUID 7(mesh_cp) Rank 1]``.
_PG_PREFIX = lazy_regex.compile(r"\[PG(?: ID)? \d+ PG GUID \d+\((?P<desc>[^)\s]{1,80})\)")
#: The class whose findings are read.
HANG_CLASS = "collective-timeout"


def named_group_captures(findings: list[Finding], library: Library) -> list[Finding]:
    """``findings`` with each collective-timeout finding whose evidence names a group some
    code described (see the module docstring) given that description as ``pg_desc``."""
    out: list[Finding] = []
    for f in findings:
        desc = None
        if f.failure_class == HANG_CLASS and "pg_desc" not in f.captures:
            for e in f.evidence:
                m = _PG_PREFIX.search(e.text)
                if m is not None and m["desc"] not in UNNAMED:
                    desc = m["desc"]
                    break
        sig = library.signatures.get(f.signature) if desc is not None else None
        out.append(f if sig is None else f.recast(sig, {**f.captures, "pg_desc": str(desc)}))
    return out
