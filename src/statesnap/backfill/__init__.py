"""``statesnap backfill``: from the artifacts a CI run left to issue-ready reproductions.

Artifacts (statesnap records, pytest console logs, JUnit XML, pytest-replay files) become
order-only records (:mod:`.orderrecord`); every failing test is replayed in its worker's order
on a Dask cluster (:mod:`.engine`, :mod:`.tasks`), classified and minimised with the same
verifier the plugin uses (:mod:`.victim`), and each finding is written as a Markdown file
(:mod:`.markdown`).  Finished replays are journaled in OUTDIR (:mod:`.journal`), so an
interrupted backfill resumes without running them again.
"""
