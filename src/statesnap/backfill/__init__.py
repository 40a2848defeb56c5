"""``statesnap backfill``: from the artifacts a CI run left to issue-ready reproductions.

Artifacts → order-only records → replays on a Dask cluster, verified as the plugin verifies →
one Markdown file per finding; finished replays are journaled so a backfill resumes.  See
docs/ARCHITECTURE.md ("Backfill").
"""
