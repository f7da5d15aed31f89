"""Fleet triage: every job of a log archive diagnosed, and the hosts that keep starting failures.

``rootrank triage PATH...`` finds the jobs of an archive (:mod:`.discover`), diagnoses each one
exactly as ``rootrank diagnose`` would on Dask workers (:mod:`.work`, :mod:`.run`), folds the
small per-job records into one summary (:mod:`.summary`) and shows it as a text table, JSON
Lines, Markdown or a self-contained HTML report (:mod:`.render`). Hosts keep one pseudonym
across the whole archive (:mod:`.hosts`); ``--cache DIR`` skips unchanged jobs (:mod:`.cache`).

Dask is an optional dependency (``pip install '.[fleet]'`` in the clone); only :mod:`.run` imports it.
"""
