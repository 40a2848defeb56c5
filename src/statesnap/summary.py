"""The summary JSON (``--statesnap-json``): a contract other tools read.

``format`` is bumped on every incompatible change.  History:

- 1: ``tests`` (nodeid, worker, index, outcome, leaks) and ``findings``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from statesnap import __version__
from statesnap.findings import Finding
from statesnap.leaks import resolve_leaks
from statesnap.record import Record, write_atomic

SUMMARY_FORMAT = 1


def build_summary(records: Sequence[Record], findings: Iterable[Finding]) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    for record in records:
        leaks = resolve_leaks(record.tests)
        for t in record.tests:
            tests.append({
                "nodeid": t.nodeid,
                "worker": t.worker,
                "index": t.index,
                "outcome": t.outcome,
                "leaks": [
                    {"probe": c.probe, "key": c.key, "change": c.change,
                     "before": c.before, "after": c.after,
                     **({"phase": c.phase} if c.phase else {}),
                     **({"fixture": c.fixture, "scope": c.scope} if c.fixture else {})}
                    for c in leaks.get(t.index, [])
                ],
            })
    return {
        "format": SUMMARY_FORMAT,
        "statesnap_version": __version__,
        "records": [str(r.path) for r in records],
        "tests": tests,
        "findings": [f.to_summary() for f in findings],
    }


def write_summary(path: Path, records: Sequence[Record], findings: Iterable[Finding]) -> None:
    """Write the summary atomically; missing parent directories are created (CI artifact
    folders), as for the report."""
    text = json.dumps(build_summary(records, findings), indent=2, ensure_ascii=False, default=repr)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text + "\n")
