"""Ranks whose error line the log cuts before its message.

Mechanism: PyTorch's C++ logging (glog/c10 ``LOG(ERROR)``) starts each line with a header
``[E1006 15:30:20.630285740 ProcessGroupNCCL.cpp:1562]`` (severity letter, date, time, source
file and line), then the component's own tag (``[PG ID 0 PG GUID 0(default_pg) Rank 2]``) and
the message; torchrun's ``--tee``/``[rankN]:`` prefix puts the rank in front. A paste (an
issue's code block cut at a length, a ``head``) can end such a line inside its header or
tag: the rank printed an error at that moment, its message is what the paste lost. Such a
rank is not silent: "the one rank that did not report it" may not name it
(:func:`rootrank.analysis.initiator.missing_reporter`).

Read from the first and last lines of each source the scan keeps
(:attr:`rootrank.scan.ScanState.heads`, :attr:`rootrank.scan.ScanState.tails`).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.scan import ScanState

#: An error-severity C++ log line with a rank prefix whose message is missing: the header
#: ends unclosed (``[rank6]:[E419 10:42:28.88 ProcessGroupNCCL.cpp``), or is closed and is
#: followed by nothing or by an unclosed tag (``... ProcessGroupNCCL.cpp:1562] [PG ID 0 PG``).
#: Group ``rank``.
_CUT_ERROR = lazy_regex.compile(
    r"^\[rank(?P<rank>\d{1,6})\]:\[E(?:\d{4} )?[^\]\n]*(?:\](?:\s*\[[^\]\n]*)?)?\s*$"
)


def cut_error_ranks(state: ScanState) -> set[int]:
    """The ranks with an error-severity C++ log line cut before its message (see the module
    docstring), in the kept first and last lines of each source; empty when none is."""
    ranks: set[int] = set()
    for _path, _first, text in (*state.heads, *state.tails):
        if "]:[E" not in text:
            continue
        for line in text.splitlines():
            if line.startswith("[rank") and (m := _CUT_ERROR.match(line.rstrip())):
                ranks.add(int(m.group("rank")))
    return ranks
