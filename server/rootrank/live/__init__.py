"""Live watching: ``rootrank run -- CMD`` and ``rootrank watch PATH...``.

Modules, each named for what it does:

- :mod:`~rootrank.live.lines`: bytes as they arrive -> whole lines (and the last ``\\r`` frame
  of a progress bar still being drawn);
- :mod:`~rootrank.live.steps`: the rank of a line, and its step read by :mod:`rootrank.progress`;
- :mod:`~rootrank.live.tracker`: per-rank progress, stall and straggler detection;
- :mod:`~rootrank.live.feed`: the engine's own :class:`~rootrank.scan.Scanner` fed block by
  block as lines arrive (one pass, never re-reading the log), and diagnoses taken mid-stream;
- :mod:`~rootrank.live.stacks`: every rank's Python stack through py-spy (``--on-stall dump``);
- :mod:`~rootrank.live.events`: the events (stall, straggler, failure, exit) as text or JSON lines;
- :mod:`~rootrank.live.monitor`: the loop that ties them together;
- :mod:`~rootrank.live.runner` (``rootrank run``) and :mod:`~rootrank.live.watch` (``rootrank watch``).
"""
