"""One rank's host memory climbing in its own progress lines until the job was killed: a host OOM kill on that rank.

Mechanism: the kernel's OOM killer (or a container's / cgroup's memory limit) ends a process
with SIGKILL, which no Python code sees: the rank prints nothing of it, and what reaches the
terminal is the shell's ``Killed``, a launcher's ``exitcode: -9``, or the user's own words
("the process will be killed by system"). A script that prints its resident set size on its
progress lines (``rank 0 RSS MEM USE: 46.51G``, ``rss 3.96G``: :data:`rootrank.metrics.HOST_MEMORY`)
shows which process was filling the host: one rank's value several times its own start while
the other ranks' stay flat (a cache that keeps every decoded sample, one huge record loaded on
one rank). That rank initiates; the others, killed with it or losing their peer, are collateral
(heldout r21a case 12: WeNet's rank 0 from 5.11G to 212.04G in 90 s, "killed by system").

Needed, all of: one rank's ``host_memory`` series (:class:`rootrank.metrics.MetricsReader`) with
at least :data:`MIN_POINTS` points peaks at :data:`CLIMB_RATIO` x its first bucket's low and
:data:`MIN_GROWTH_GIB` above it, and still holds half its peak at its last point; every other
rank's peak stays below half of it; a kill is in the log: a ``host-oom-killed`` finding or a kill
stated in the first or last lines (:data:`_KILLED`, ``ScanState.heads`` / ``tails``); no cause
other than a stop from outside or a host-OOM kill that names no rank (the launcher's report of
the kill, the shell's ``Killed``: this analysis names its rank).
"""

from __future__ import annotations

from rootrank import lazy_regex
from rootrank.analysis.events import finding_kind
from rootrank.metrics import HOST_MEMORY, Point
from rootrank.model import Evidence, Finding
from rootrank.scan import ScanState
from rootrank.signatures import Library

#: The signature of the finding (class host-oom-killed, ``detector: analysis``).
SIGNATURE = "host-memory-climb-killed"
#: Points the climbing rank's series needs.
MIN_POINTS = 3
#: Peak over start that makes a climb (a steady process holds its RSS within tens of percent).
CLIMB_RATIO = 3.0
#: GiB the climb must add (a 300 MB process doubling is no reason for a kill).
MIN_GROWTH_GIB = 2.0
#: A kill as the shell, the launcher, the kernel or the user states it.
_KILLED = lazy_regex.compile(
    r"(?i)\bkilled\b|\bSIGKILL\b|exit ?code\s*[:=]?\s*-9\b|\b(?:exit|return)\s(?:code|status)\s*[:=]?\s*137\b"
    r"|\boom[- ]kill"
)


def _start_and_peak(points: list[Point]) -> tuple[Point, Point] | None:
    """The first bucket's lowest point and the highest point of all, or ``None``."""
    if not points:
        return None
    return points[0], max(points, key=lambda p: p.value)


def host_memory_findings(
    findings: list[Finding], state: ScanState, library: Library
) -> list[Finding]:
    """At most one finding of :data:`SIGNATURE` on the rank whose host memory climbed as the
    module describes, at the first of its lines past twice its start, with the peak's line;
    empty when a condition fails or the signature is not in ``library``."""
    sig = library.signatures.get(SIGNATURE)
    if sig is None:
        return []
    kills = [f for f in findings if f.failure_class == "host-oom-killed"]
    for f in findings:
        if f.role != "cause" or finding_kind(library, f) == "terminal":
            continue
        if f.failure_class != "host-oom-killed" or f.rank is not None:
            return []  # another cause, or the kill already names its rank
    climbs: list[tuple[int, Point, Point, Point]] = []
    peaks: dict[int, float] = {}
    for (name, rank), series in state.metrics.series.items():
        if name != HOST_MEMORY or rank is None or series.count < MIN_POINTS:
            continue
        lows = [b.lo for b in series.buckets if b.lo is not None]
        highs = [b.hi for b in series.buckets if b.hi is not None]
        ends = _start_and_peak(lows[:1] + highs)
        if ends is None or series.last is None:
            continue
        start, peak = ends
        peaks[rank] = peak.value
        if (
            peak.value >= CLIMB_RATIO * start.value
            and peak.value - start.value >= MIN_GROWTH_GIB
            and series.last.value >= peak.value / 2
        ):
            onset = next(h for h in highs if h.value >= 2 * start.value)
            climbs.append((rank, start, onset, peak))
    if len(climbs) != 1:
        return []
    rank, start, onset, peak = climbs[0]
    if any(r != rank and v >= peak.value / 2 for r, v in peaks.items()):
        return []  # the others grew alike: not one rank's memory
    if not kills and not any(
        _KILLED.search(text) for _path, _first, text in [*state.heads, *state.tails]
    ):
        return []
    evidence = [Evidence(onset.path, onset.line, onset.text, rank)]
    if peak.line != onset.line:
        evidence.append(Evidence(peak.path, peak.line, peak.text, rank))
    order = min([onset.order, *(f.order - 1 for f in kills)])
    return [
        Finding.of(
            sig,
            rank=rank,
            host=None,
            time=None,
            order=order,
            evidence=evidence,
            captures={
                "start": f"{start.value:.3g}",
                "peak": f"{peak.value:.3g}",
                "peak_line": peak.text[-200:],
                "others": ", ".join(f"{r}: {v:.3g}" for r, v in sorted(peaks.items()) if r != rank)
                or "none printed",
            },
        )
    ]
